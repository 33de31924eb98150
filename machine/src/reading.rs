//! A Blueprint read once: parsed, statically validated and masked into its effective blueprint. The
//! shell needs it before it can observe (which dogu descriptors and which Secrets to read), and the
//! reconcile needs it again: one [`Reading`] serves both, so a reconcile parses its Blueprint once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use crate::api::{Blueprint, BlueprintManifest, BlueprintMaskObject, ConfigEntry};
use crate::conditions::reason;
use crate::model::{Flags, ParseFailure, ParsedBlueprint};
use crate::references;
use crate::validation::{EffectiveBlueprint, statics};

/// What reading a Blueprint gave: its effective blueprint and flags, or why it is invalid.
#[derive(Debug)]
pub struct Reading<'b> {
    pub(crate) blueprint: &'b Blueprint,
    pub(crate) result: Result<Read<'b>, Invalid>,
}

#[derive(Debug)]
pub(crate) struct Read<'b> {
    /// The Blueprint read: what the memos below are of.
    blueprint: &'b Blueprint,
    pub(crate) effective: EffectiveBlueprint<'b>,
    pub(crate) flags: Flags,
    /// What the status shows of the effective blueprint, and the size of the Blueprint's own metadata
    /// and spec: functions of the Blueprint alone, so worked out once per reading. The controller keeps
    /// a reading while its Blueprint is unchanged: a steady reconcile neither compares the effective
    /// blueprint with the stored one nor measures either again.
    published: OnceLock<Published>,
    own_size: OnceLock<usize>,
}

/// The effective blueprint as `status.effectiveBlueprint` shows it, and the length of its JSON (cheap
/// to clone: the manifest is shared).
#[derive(Clone, Debug)]
pub(crate) struct Published {
    pub(crate) manifest: Arc<BlueprintManifest>,
    pub(crate) size: usize,
}

impl Read<'_> {
    /// The effective blueprint for the Blueprint's status: the stored one, or else the spec's manifest
    /// (without a mask, usually the same), shared, when it is what this reading writes.
    pub(crate) fn published(&self) -> &Published {
        self.published.get_or_init(|| {
            let stored = self.blueprint.status.as_ref().and_then(|s| s.effective_blueprint.as_ref());
            let wanted = self.blueprint.spec.spec.as_ref().and_then(|s| s.blueprint.as_ref());
            let manifest = self.effective.to_api_reusing(stored.into_iter().chain(wanted));
            Published { size: crate::status_size::size(&*manifest), manifest }
        })
    }

    /// The length of the JSON of the Blueprint's metadata and spec (see `status_size`).
    pub(crate) fn own_size(&self) -> usize {
        *self.own_size.get_or_init(|| crate::status_size::own_size(self.blueprint))
    }
}

/// Why a Blueprint is invalid: the `Valid` condition's reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Invalid {
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

impl<'b> Reading<'b> {
    /// Reads `blueprint`: parse → static validation → effective blueprint (the mask applied). A mask
    /// reference is resolved among `masks`, the `BlueprintMask`s of the Blueprint's namespace.
    pub fn of(blueprint: &'b Blueprint, masks: &[Arc<BlueprintMaskObject>]) -> Self {
        Reading { blueprint, result: read(blueprint, masks) }
    }

    /// The dogu descriptors a reconcile needs: `(qualified name, version)` of every wanted dogu. Empty
    /// when the blueprint does not get as far as dynamic validation.
    pub fn wanted_descriptors(&self) -> Vec<(String, String)> {
        let Ok(read) = &self.result else { return Vec::new() };
        read.effective
            .wanted_dogus()
            .map(|d| (d.name.to_string(), d.version.as_ref().map(|v| v.raw().to_owned()).unwrap_or_default()))
            .collect()
    }

    /// The Secrets a reconcile reads values from (`secretRef`s, sensitive or not).
    pub fn referenced_secrets(&self) -> BTreeSet<String> {
        match &self.result {
            Ok(read) => references::referenced_secret_names(&read.effective),
            Err(_) => BTreeSet::new(),
        }
    }

    /// The keys of each normal config object (by dogu; `None`: global config) that the blueprint fills
    /// from a Secret: the observer shows their current values as digests only, also a copy that no
    /// annotation names yet (one written by the Go operator before a switch).
    pub fn keys_filled_from_secrets(&self) -> BTreeMap<Option<String>, BTreeSet<String>> {
        match &self.result {
            Ok(read) => references::keys_filled_from_secrets(&read.effective),
            Err(_) => BTreeMap::new(),
        }
    }

    /// The ConfigMaps a reconcile reads `configRef` values from.
    pub fn referenced_config_maps(&self) -> BTreeSet<String> {
        match &self.result {
            Ok(read) => references::referenced_config_map_names(&read.effective),
            Err(_) => BTreeSet::new(),
        }
    }

    /// Every ConfigMap the spec's `configRef`s name, whatever the mask makes of them (see
    /// [`Reading::secrets_named_in`]).
    pub fn config_maps_named_in(blueprint: &Blueprint) -> BTreeSet<String> {
        named_in(blueprint, |entry| entry.config_ref.as_ref().map(|r| r.name.as_str()))
    }

    /// Every Secret the spec's config entries name, whatever the mask makes of them: what a change of
    /// a Secret may concern (a superset of [`Reading::referenced_secrets`], which needs the mask).
    pub fn secrets_named_in(blueprint: &Blueprint) -> BTreeSet<String> {
        named_in(blueprint, |entry| entry.secret_ref.as_ref().map(|r| r.name.as_str()))
    }

    /// Whether this is the reading of `blueprint` (the very object, not an equal one).
    pub(crate) fn is_of(&self, blueprint: &Blueprint) -> bool {
        std::ptr::eq(self.blueprint, blueprint)
    }
}

/// What `name` picks of every config entry of the spec (dogu and global config).
fn named_in(blueprint: &Blueprint, name: impl Fn(&ConfigEntry) -> Option<&str>) -> BTreeSet<String> {
    let config = blueprint.blueprint_spec().and_then(|s| s.blueprint.as_ref()).and_then(|b| b.config.as_ref());
    let Some(config) = config else { return BTreeSet::new() };
    let dogu_entries = config.dogus.iter().flat_map(|dogus| dogus.values().flatten());
    dogu_entries.chain(config.global.iter().flatten()).filter_map(|entry| name(entry).map(str::to_owned)).collect()
}

fn read<'b>(blueprint: &'b Blueprint, masks: &[Arc<BlueprintMaskObject>]) -> Result<Read<'b>, Invalid> {
    let name = blueprint.metadata.name.as_deref().unwrap_or_default();
    let invalid = |reason, message: String| Invalid { reason, message };
    if let Some(undecodable) = &blueprint.undecodable_spec {
        return Err(invalid(
            reason::INVALID,
            format!("could not deserialize blueprint CR \"{name}\": {}", undecodable.problem),
        ));
    }
    if let Some(problems) = v1_problems(blueprint) {
        return Err(invalid(
            reason::INVALID,
            format!(
                "the v1 Blueprint could not be taken over as it is: {problems}; fix it in v1 (it is checked again), or write it as v3 and remove the annotation {}",
                crate::conversion::V1_FIELDS_ANNOTATION
            ),
        ));
    }
    let parsed = match ParsedBlueprint::parse(blueprint.blueprint_spec(), masks) {
        Ok(parsed) => parsed,
        Err(ParseFailure::MaskNotFound(mask)) => {
            let namespace = blueprint.metadata.namespace.as_deref().unwrap_or_default();
            return Err(invalid(
                reason::BLUEPRINT_MASK_NOT_FOUND,
                format!(
                    "spec.blueprintMask.crRef names the BlueprintMask \"{mask}\", which does not exist in namespace \"{namespace}\": create it, or change the reference"
                ),
            ));
        }
        Err(ParseFailure::MaskBoth) => {
            return Err(invalid(
                reason::INVALID,
                "spec.blueprintMask has both manifest and crRef: keep one of them".to_owned(),
            ));
        }
        Err(ParseFailure::MissingSpec) => {
            return Err(invalid(
                reason::INVALID,
                "the Blueprint has no spec.blueprint, so there is nothing to apply".to_owned(),
            ));
        }
        Err(ParseFailure::Malformed(problem)) => {
            return Err(invalid(reason::INVALID, format!("could not deserialize blueprint CR \"{name}\": {problem}")));
        }
    };
    statics::validate(&parsed).map_err(|problem| invalid(reason::INVALID, problem.to_string()))?;
    let flags = parsed.flags;
    let effective =
        EffectiveBlueprint::compute(parsed).map_err(|problem| invalid(reason::INCONSISTENT, problem.to_string()))?;
    Ok(Read { blueprint, effective, flags, published: OnceLock::new(), own_size: OnceLock::new() })
}

/// What the conversion from v1 could not take over (its annotation on a Blueprint written as v1), or
/// none. An annotation that is not ours says nothing: it is not read.
fn v1_problems(blueprint: &Blueprint) -> Option<String> {
    let text = blueprint.metadata.annotations.as_ref()?.get(crate::conversion::V1_FIELDS_ANNOTATION)?;
    let fields = crate::conversion::v1::V1Fields::read(text).ok()?;
    (!fields.problems.is_empty()).then(|| fields.problems.join("; "))
}
