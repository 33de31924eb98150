//! A Blueprint read once: parsed, statically validated and masked into its effective blueprint. The
//! shell needs it before it can observe (which dogu descriptors and which Secrets to read), and the
//! reconcile needs it again: one [`Reading`] serves both, so a reconcile parses its Blueprint once.

use std::collections::BTreeSet;

use crate::api::Blueprint;
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
    pub(crate) effective: EffectiveBlueprint<'b>,
    pub(crate) flags: Flags,
}

/// Why a Blueprint is invalid: the `Valid` condition's reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Invalid {
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

impl<'b> Reading<'b> {
    /// Reads `blueprint`: parse → static validation → effective blueprint (the mask applied).
    pub fn of(blueprint: &'b Blueprint) -> Self {
        Reading { blueprint, result: read(blueprint) }
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

    /// The Secrets a reconcile reads sensitive values from.
    pub fn referenced_secrets(&self) -> BTreeSet<String> {
        match &self.result {
            Ok(read) => references::referenced_secret_names(&read.effective),
            Err(_) => BTreeSet::new(),
        }
    }

    /// Whether this is the reading of `blueprint` (the very object, not an equal one).
    pub(crate) fn is_of(&self, blueprint: &Blueprint) -> bool {
        std::ptr::eq(self.blueprint, blueprint)
    }
}

fn read(blueprint: &Blueprint) -> Result<Read<'_>, Invalid> {
    let name = blueprint.metadata.name.as_deref().unwrap_or_default();
    let invalid = |reason, message: String| Invalid { reason, message };
    if let Some(undecodable) = &blueprint.undecodable_spec {
        return Err(invalid(
            reason::INVALID,
            format!("could not deserialize blueprint CR \"{name}\": {}", undecodable.problem),
        ));
    }
    let parsed = match ParsedBlueprint::parse(blueprint.blueprint_spec()) {
        Ok(parsed) => parsed,
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
    Ok(Read { effective, flags })
}
