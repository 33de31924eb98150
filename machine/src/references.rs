//! References of config entries: Secrets of `secretRef`s (sensitive entries, and entries of the normal
//! dogu or global config filled from a Secret), resolved to digests; ConfigMaps of `configRef`s (plain
//! config), resolved to their values.

use std::collections::{BTreeMap, BTreeSet};

use crate::observation::{ReferencedConfigMap, ReferencedSecret, SecretDigest};
use crate::problem::Problem;
use crate::secret_access::SecretAccess;
use crate::validation::EffectiveBlueprint;

/// The Secrets the effective blueprint reads values from.
pub(crate) fn referenced_secret_names(effective: &EffectiveBlueprint<'_>) -> BTreeSet<String> {
    references(effective).map(|(_, e)| e.secret_ref.expect("a reference").name.clone()).collect()
}

/// `(dogu or None for global, entry)` of every entry that is not absent, of dogu or global config.
fn present_entries<'e, 'a>(
    effective: &'e EffectiveBlueprint<'a>,
) -> impl Iterator<Item = (Option<&'a str>, &'e crate::model::ConfigEntry<'a>)> + 'e {
    let dogus = effective.config.dogus.iter().flat_map(|(dogu, entries)| entries.iter().map(move |e| (Some(*dogu), e)));
    let global = effective.config.global.iter().map(|e| (None, e));
    dogus.chain(global).filter(|(_, e)| !e.absent)
}

/// Every entry with a `secretRef`.
fn references<'e, 'a>(
    effective: &'e EffectiveBlueprint<'a>,
) -> impl Iterator<Item = (Option<&'a str>, &'e crate::model::ConfigEntry<'a>)> + 'e {
    present_entries(effective).filter(|(_, e)| e.secret_ref.is_some())
}

/// The keys of each normal config object (`None`: global config) that the effective blueprint fills
/// from a Secret (`secretRef` without `sensitive`), normalized as stored.
pub(crate) fn keys_filled_from_secrets(
    effective: &EffectiveBlueprint<'_>,
) -> BTreeMap<Option<String>, BTreeSet<String>> {
    let mut filled: BTreeMap<Option<String>, BTreeSet<String>> = BTreeMap::new();
    for (dogu, entry) in references(effective).filter(|(_, e)| !e.sensitive) {
        let key = crate::config_format::normalize_key(entry.key).unwrap_or(entry.key);
        filled.entry(dogu.map(str::to_owned)).or_default().insert(key.to_owned());
    }
    filled
}

/// The ConfigMaps the effective blueprint's `configRef`s name (dogu and global config).
pub(crate) fn referenced_config_map_names(effective: &EffectiveBlueprint<'_>) -> BTreeSet<String> {
    config_references(effective).map(|(_, _, r)| r.name.clone()).collect()
}

/// `(dogu or None for global, key, reference)` of every `configRef` of an entry that is not absent.
fn config_references<'e, 'a>(
    effective: &'e EffectiveBlueprint<'a>,
) -> impl Iterator<Item = (Option<&'a str>, &'a str, &'a crate::api::ConfigMapKeyReference)> + 'e {
    present_entries(effective).filter_map(|(dogu, e)| e.config_ref.map(|r| (dogu, e.key, r)))
}

/// Values the blueprint reads from Secrets, resolved to digests, by `(dogu or None for global, key)`.
pub(crate) type ResolvedSecrets<'a> = BTreeMap<(Option<&'a str>, &'a str), &'a SecretDigest>;

/// The values of `configRef`s by `(dogu or None for global, key)`.
pub(crate) type ResolvedConfigRefs<'a> = BTreeMap<(Option<&'a str>, &'a str), &'a str>;

/// The problems of a reconcile's references: a missing key for each reference, an object's own problem
/// (missing, unreadable) once for all references to it.
#[derive(Default)]
struct Unresolved {
    objects: BTreeSet<String>,
    problems: Vec<Problem>,
}

impl Unresolved {
    /// The value of `key` in the `kind` object `name`, whose keys `object` holds or which cannot be used
    /// for the reason it gives; `None` and the problem noted when there is no value.
    fn value<'a, V>(
        &mut self,
        kind: &str,
        name: &str,
        key: &str,
        object: Result<&'a BTreeMap<String, V>, &str>,
    ) -> Option<&'a V> {
        match object {
            Ok(keys) => {
                let value = keys.get(key);
                if value.is_none() {
                    self.problems
                        .push(Problem::new(format!("referenced key \"{key}\" in {kind} \"{name}\" does not exist")));
                }
                value
            }
            Err(why) => {
                if self.objects.insert(name.to_owned()) {
                    self.problems.push(Problem::new(format!("referenced {kind} \"{name}\" {why}")));
                }
                None
            }
        }
    }
}

/// A referenced ConfigMap's data, or why it cannot be used.
fn config_map_data(config_map: Option<&ReferencedConfigMap>) -> Result<&BTreeMap<String, String>, &'static str> {
    match config_map {
        Some(ReferencedConfigMap::Present { data }) => Ok(data),
        Some(ReferencedConfigMap::Unreadable) => Err("cannot be read: it does not fit the ConfigMap type"),
        Some(ReferencedConfigMap::HoldsSecretValues) => {
            Err("holds values copied from Secrets: reference the Secrets instead")
        }
        Some(ReferencedConfigMap::Missing) | None => Err("does not exist"),
    }
}

/// A referenced Secret's keys (digested), or why it cannot be used.
fn secret_keys(secret: Option<&ReferencedSecret>) -> Result<&BTreeMap<String, SecretDigest>, &'static str> {
    match secret {
        Some(ReferencedSecret::Present { keys, .. }) => Ok(keys),
        Some(ReferencedSecret::Unreadable) => Err("cannot be read: it does not fit the Secret type"),
        Some(ReferencedSecret::Missing) | None => Err("does not exist"),
    }
}

/// Resolves every `configRef`; the problem lists every missing ConfigMap and key at once.
pub(crate) fn resolve_config_refs<'a>(
    effective: &EffectiveBlueprint<'a>,
    config_maps: &'a BTreeMap<String, ReferencedConfigMap>,
) -> (ResolvedConfigRefs<'a>, Option<Problem>) {
    let mut resolved = ResolvedConfigRefs::new();
    let mut unresolved = Unresolved::default();
    for (dogu, key, reference) in config_references(effective) {
        let data = config_map_data(config_maps.get(&reference.name));
        if let Some(value) = unresolved.value("config map", &reference.name, &reference.key, data) {
            resolved.insert((dogu, key), value.as_str());
        }
    }
    let problem = Problem::wrap_all("could not load referenced config", unresolved.problems);
    (resolved, problem)
}

/// The Secrets the effective blueprint references that it may not read ([`crate::secret_access`]),
/// each named once with why; `None` when it may read every one (a missing Secret is not refused: it
/// is reported as missing).
pub(crate) fn refused_secrets(
    effective: &EffectiveBlueprint<'_>,
    secrets: &BTreeMap<String, ReferencedSecret>,
    access: &SecretAccess,
) -> Option<Problem> {
    let mut named = BTreeSet::new();
    let problems = references(effective)
        .filter_map(|(_, entry)| entry.secret_ref.map(|reference| reference.name.as_str()))
        .filter(|name| named.insert(*name))
        .filter_map(|name| {
            let Some(ReferencedSecret::Present { traits, .. }) = secrets.get(name) else { return None };
            let why = crate::secret_access::refusal(name, traits, access)?;
            Some(Problem::new(format!("secret \"{name}\" cannot be referenced: {why}")))
        })
        .collect();
    Problem::wrap_all("the blueprint references Secrets it may not read", problems)
}

/// Resolves every `secretRef`; the problem lists every missing Secret and key.
pub(crate) fn resolve<'a>(
    effective: &EffectiveBlueprint<'a>,
    secrets: &'a BTreeMap<String, ReferencedSecret>,
) -> (ResolvedSecrets<'a>, Option<Problem>) {
    let mut resolved = ResolvedSecrets::new();
    let mut unresolved = Unresolved::default();
    let mut only_sensitive = true;
    for (dogu, entry) in references(effective) {
        let reference = entry.secret_ref.expect("a reference");
        let keys = secret_keys(secrets.get(&reference.name));
        match unresolved.value("secret", &reference.name, &reference.key, keys) {
            Some(digest) => {
                resolved.insert((dogu, entry.key), digest);
            }
            None => only_sensitive &= entry.sensitive,
        }
    }
    let problems = unresolved.problems;
    // Upstream's words where only sensitive config is concerned (v2 knew no other secretRef).
    let problem = if only_sensitive {
        Problem::wrap_all("could not load sensitive config via references", problems)
            .map(|p| Problem::wrap("could not load referenced sensitive config", vec![p]))
    } else {
        Problem::wrap_all("could not load config from referenced secrets", problems)
    };
    (resolved, problem)
}
