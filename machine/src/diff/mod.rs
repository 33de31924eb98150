//! The state diff: what differs between the effective blueprint and the cluster, per dogu, component
//! and config key. It is an "as is" description: forbidden actions are listed too (and then make the
//! blueprint not executable).

mod actions;
mod status;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::api;
use crate::config_format;
use crate::model::{DoguPairs, Installed, InstalledComponent, InstalledDogu, TargetComponent, TargetDogu};
use crate::observation::{ConfigObservation, DebugModeObservation, Observation, SecretDigest};
use crate::problem::Problem;
use crate::validation::EffectiveBlueprint;

pub(crate) use actions::{ComponentAction, ConfigAction, DoguAction};
use actions::{component_actions, dogu_actions, expected_deploy_config};

#[derive(Clone, Debug, PartialEq)]
pub struct DoguChange<'a> {
    pub target: &'a TargetDogu,
    pub installed: Option<&'a InstalledDogu<'a>>,
    pub actions: Vec<DoguAction>,
}

impl DoguChange<'_> {
    pub fn name(&self) -> &str {
        &self.target.name.simple
    }

    pub fn has(&self, action: DoguAction) -> bool {
        self.actions.contains(&action)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ComponentChange<'a> {
    pub target: &'a TargetComponent<'a>,
    pub installed: Option<&'a InstalledComponent<'a>>,
    pub actions: Vec<ComponentAction>,
}

impl ComponentChange<'_> {
    pub fn name(&self) -> &str {
        &self.target.name.simple
    }

    /// The deploy config as it belongs on the CR: only the applied keys, without empty values.
    pub fn expected_deploy_config(&self) -> Map<String, Value> {
        expected_deploy_config(self.target)
    }
}

/// A key of the global or a dogu's normal config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigChange {
    pub key: String,
    pub action: ConfigAction,
    pub actual: Option<ConfigValueView>,
    /// The wanted value (`None` for removals).
    pub expected: Option<ConfigValueView>,
    /// Where the wanted value comes from when a Secret gives it (a `secretRef` without `sensitive`).
    pub source: Option<api::SecretReference>,
}

/// A value of the normal config as the diff may show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigValueView {
    Plain(String),
    /// A value copied from a Secret: it exists, and is never shown.
    FromSecret,
}

impl ConfigValueView {
    /// The value, where it may be shown.
    pub fn shown(&self) -> Option<&str> {
        match self {
            ConfigValueView::Plain(value) => Some(value),
            ConfigValueView::FromSecret => None,
        }
    }
}

/// A key of a dogu's sensitive config; values are never known here, only whether they match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SensitiveChange {
    pub key: String,
    pub action: ConfigAction,
    pub actual_exists: bool,
    /// Where the wanted value comes from (for `set`).
    pub source: Option<api::SecretReference>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Diff<'a> {
    /// Sorted by dogu name.
    pub dogus: Vec<DoguChange<'a>>,
    /// Sorted by component name.
    pub components: Vec<ComponentChange<'a>>,
    /// In blueprint order.
    pub global: Vec<ConfigChange>,
    pub dogu_config: BTreeMap<String, Vec<ConfigChange>>,
    pub sensitive_config: BTreeMap<String, Vec<SensitiveChange>>,
    /// The platform routes web traffic through the gateway ([`crate::naming::GATEWAY_COMPONENT`]), which reads no
    /// nginx-ingress annotations: dogus' reverse-proxy settings are not applied (docs/differences.md D49).
    pub gateway: bool,
}

/// Whether the platform routes through the gateway: the blueprint wants it, or it is installed and the
/// blueprint does not remove it.
fn routes_through_gateway(effective: &EffectiveBlueprint<'_>, installed: &Installed<'_>) -> bool {
    use crate::naming::GATEWAY_COMPONENT;
    match effective.components.iter().find(|c| c.name.simple == GATEWAY_COMPONENT) {
        Some(wanted) => !wanted.absent,
        None => installed.components.contains_key(GATEWAY_COMPONENT),
    }
}

impl<'a> Diff<'a> {
    pub fn is_empty(&self) -> bool {
        self.dogus.is_empty() && self.components.is_empty() && !self.has_config_changes()
    }

    pub fn has_config_changes(&self) -> bool {
        !self.global.is_empty() || !self.dogu_config.is_empty() || !self.sensitive_config.is_empty()
    }

    /// Whether the dogu's own config (normal or sensitive) or the global config changes.
    pub fn config_changes_for(&self, dogu: &str) -> bool {
        !self.global.is_empty() || self.dogu_config.contains_key(dogu) || self.sensitive_config.contains_key(dogu)
    }

    pub fn dogu(&self, name: &str) -> Option<&DoguChange<'a>> {
        // `compute` sorts the dogu changes by name.
        self.dogus.binary_search_by(|d| d.name().cmp(name)).ok().map(|i| &self.dogus[i])
    }

    pub fn component(&self, name: &str) -> Option<&ComponentChange<'a>> {
        self.components.iter().find(|c| c.name() == name)
    }
}

/// Computes the diff. Objects the blueprint concerns that cannot be read are returned as problems and
/// left out of the diff.
pub(crate) fn compute<'a>(
    effective: &'a EffectiveBlueprint<'a>,
    pairs: &DoguPairs<'a>,
    observation: &Observation,
    resolved: &crate::references::ResolvedSecrets<'_>,
    referenced: &crate::references::ResolvedConfigRefs<'_>,
) -> (Diff<'a>, Vec<Problem>) {
    let installed = pairs.installed();
    let mut problems = Vec::new();
    let mut diff = Diff { gateway: routes_through_gateway(effective, installed), ..Diff::default() };

    for (target, found) in pairs.all() {
        let name = &target.name.simple;
        if let Some(problem) = installed.unreadable_dogus.get(name.as_str()) {
            problems.push(problem.clone());
            continue;
        }
        let actions = dogu_actions(target, found, diff.gateway);
        if !actions.is_empty() {
            diff.dogus.push(DoguChange { target, installed: found, actions });
        }
    }
    diff.dogus.sort_by(|a, b| a.name().cmp(b.name()));

    for target in &effective.components {
        let name = &target.name.simple;
        if let Some(problem) = installed.unreadable_components.get(name.as_str()) {
            problems.push(problem.clone());
            continue;
        }
        let installed = installed.components.get(name.as_str());
        let actions = component_actions(target, installed);
        if !actions.is_empty() {
            diff.components.push(ComponentChange { target, installed, actions });
        }
    }
    diff.components.sort_by(|a, b| a.name().cmp(b.name()));

    let config = &effective.config;
    if !config.global.is_empty() {
        match readable(&observation.global_config, || "global config".into()) {
            Ok(actual) => {
                let entries = with_referenced(None, config.global.iter(), referenced);
                diff.global = value_changes(entries, actual, &observation.global_config, |key| {
                    resolved.get(&(None, key)).copied()
                });
            }
            Err(problem) => problems.push(problem),
        }
    }
    // While debug mode is active, the debug-mode operator owns the dogus' log levels (D51).
    let debugging = observation.debug_mode.as_ref().is_some_and(DebugModeObservation::active);
    // The blueprint's dogus come in name order: their config objects are found in one walk.
    let mut dogu_config = observation.dogu_configs_in_order();
    let mut sensitive_config = observation.sensitive_configs_in_order();
    for (dogu, entries) in &config.dogus {
        let dogu = *dogu;
        let left_to_debug_mode = |key: &str| debugging && key == crate::naming::LOG_LEVEL_KEY;
        let mut normal = entries.iter().filter(|e| !e.sensitive && !left_to_debug_mode(e.key)).peekable();
        if normal.peek().is_some() {
            let store = dogu_config(dogu);
            match readable(store, || format!("normal dogu config of \"{dogu}\"")) {
                Ok(actual) => {
                    let entries = with_referenced(Some(dogu), normal, referenced);
                    let changes =
                        value_changes(entries, actual, store, |key| resolved.get(&(Some(dogu), key)).copied());
                    if !changes.is_empty() {
                        diff.dogu_config.insert(dogu.to_owned(), changes);
                    }
                }
                Err(problem) => problems.push(problem),
            }
        }
        let sensitive = entries.iter().filter(|e| e.sensitive);
        if entries.iter().any(|e| e.sensitive) {
            let store = sensitive_config(dogu);
            match readable(store, || format!("sensitive dogu config of \"{dogu}\"")) {
                Ok(actual) => {
                    let mut changes = Vec::new();
                    let mut actual = actual.map(crate::model::by_name::in_order);
                    for entry in sensitive {
                        let key = config_format::normalize_key(entry.key).unwrap_or(entry.key);
                        let current = actual.as_mut().and_then(|a| a.get(key));
                        if entry.absent {
                            if current.is_some() {
                                changes.push(SensitiveChange {
                                    key: entry.key.to_owned(),
                                    action: ConfigAction::Remove,
                                    actual_exists: true,
                                    source: None,
                                });
                            }
                            continue;
                        }
                        // Unresolved references make the blueprint not executable; they are left out here.
                        let Some(wanted) = resolved.get(&(Some(dogu), entry.key)) else {
                            continue;
                        };
                        if current != Some(*wanted) {
                            changes.push(SensitiveChange {
                                key: entry.key.to_owned(),
                                action: ConfigAction::Set,
                                actual_exists: current.is_some(),
                                source: entry.secret_ref.cloned(),
                            });
                        }
                    }
                    if !changes.is_empty() {
                        diff.sensitive_config.insert(dogu.to_owned(), changes);
                    }
                }
                Err(problem) => problems.push(problem),
            }
        }
    }
    (diff, problems)
}

/// The entries with the values of their `configRef`s (`dogu`: `None` for global config); an entry
/// whose reference is unresolved is left out (the blueprint is not executable then).
fn with_referenced<'e, 'x>(
    dogu: Option<&'x str>,
    entries: impl Iterator<Item = &'e crate::model::ConfigEntry<'x>> + 'e,
    referenced: &'e crate::references::ResolvedConfigRefs<'x>,
) -> impl Iterator<Item = crate::model::ConfigEntry<'x>> + 'e
where
    'x: 'e,
{
    entries.filter_map(move |entry| match entry.config_ref {
        Some(_) if !entry.absent => {
            let value = referenced.get(&(dogu, entry.key))?;
            Some(crate::model::ConfigEntry { value: Some(value), ..*entry })
        }
        _ => Some(*entry),
    })
}

/// The entries of a config object, or why they cannot be read. A missing object is an empty config.
/// (`what` names the object only when it is needed: formatting it for every dogu was measurable.)
fn readable<V>(
    store: &ConfigObservation<V>,
    what: impl FnOnce() -> String,
) -> Result<Option<&BTreeMap<String, V>>, Problem> {
    match store {
        ConfigObservation::Missing => Ok(None),
        ConfigObservation::Present { entries, .. } => Ok(Some(entries)),
        ConfigObservation::Malformed { reason, .. } => {
            Err(Problem::new(format!("cannot read the {}: {reason}", what())))
        }
    }
}

/// The changes of a normal config object. `store` tells which keys hold values copied from a Secret
/// (their digests); `from_secret` gives the digest an entry's `secretRef` resolves to (an entry whose
/// reference is unresolved is left out: the blueprint is not executable then).
fn value_changes<'a, 'd>(
    entries: impl Iterator<Item = crate::model::ConfigEntry<'a>>,
    actual: Option<&BTreeMap<String, String>>,
    store: &ConfigObservation<String>,
    from_secret: impl Fn(&'a str) -> Option<&'d SecretDigest>,
) -> Vec<ConfigChange> {
    let mut changes = Vec::new();
    // Entries in key order are found in one walk through the object's keys, others by a search.
    let mut actual = actual.map(crate::model::by_name::in_order);
    for entry in entries {
        let key = config_format::normalize_key(entry.key).unwrap_or(entry.key);
        let hidden = store.from_secret(key);
        let plain = actual.as_mut().and_then(|a| a.get(key));
        // What the diff shows of the current value (built only for a change: this runs for every key).
        let shown = |secret_source: bool| match (plain, hidden) {
            (Some(value), None) if !secret_source => Some(ConfigValueView::Plain(value.clone())),
            (None, None) => None,
            _ => Some(ConfigValueView::FromSecret),
        };
        let change = |action, actual, expected, source| ConfigChange {
            key: entry.key.to_owned(),
            action,
            actual,
            expected,
            source,
        };
        if entry.absent {
            if plain.is_some() || hidden.is_some() {
                changes.push(change(ConfigAction::Remove, shown(false), None, None));
            }
        } else if let Some(reference) = entry.secret_ref {
            let Some(wanted) = from_secret(entry.key) else { continue };
            if hidden != Some(wanted) || store.unrecorded(key) {
                // A key the blueprint fills from a Secret may hold a copy of it that no annotation names
                // (written by the Go operator before a switch): its current value is not shown either.
                let expected = Some(ConfigValueView::FromSecret);
                changes.push(change(ConfigAction::Set, shown(true), expected, Some(reference.clone())));
            }
        } else if hidden.is_some() || !crate::text::same_option(plain.map(String::as_str), entry.value) {
            let expected = entry.value.map(|v| ConfigValueView::Plain(v.to_owned()));
            changes.push(change(ConfigAction::Set, shown(false), expected, None));
        }
    }
    changes
}
