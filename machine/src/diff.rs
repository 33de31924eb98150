//! The state diff: what differs between the effective blueprint and the cluster, per dogu, component
//! and config key. It is an "as is" description: forbidden actions are listed too (and then make the
//! blueprint not executable).

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use crate::api;
use crate::config_format;
use crate::model::{Installed, InstalledComponent, InstalledDogu, TargetComponent, TargetDogu};
use crate::observation::{ConfigObservation, Observation, SecretDigest};
use crate::problem::Problem;
use crate::validation::EffectiveBlueprint;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DoguAction {
    Install,
    Uninstall,
    Upgrade,
    Downgrade,
    SwitchNamespace,
    UpdateMinVolumeSize,
    UpdateReverseProxy,
    UpdateAdditionalMounts,
}

impl DoguAction {
    pub fn as_str(self) -> &'static str {
        match self {
            DoguAction::Install => "install",
            DoguAction::Uninstall => "uninstall",
            DoguAction::Upgrade => "upgrade",
            DoguAction::Downgrade => "downgrade",
            DoguAction::SwitchNamespace => "dogu namespace switch",
            DoguAction::UpdateMinVolumeSize => "update resource minimum volume size",
            DoguAction::UpdateReverseProxy => "update reverse proxy",
            DoguAction::UpdateAdditionalMounts => "update additional mounts",
        }
    }
}

impl fmt::Display for DoguAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ComponentAction {
    Install,
    Uninstall,
    Upgrade,
    Downgrade,
    SwitchNamespace,
    UpdateDeployConfig,
}

impl ComponentAction {
    pub fn as_str(self) -> &'static str {
        match self {
            ComponentAction::Install => "install",
            ComponentAction::Uninstall => "uninstall",
            ComponentAction::Upgrade => "upgrade",
            ComponentAction::Downgrade => "downgrade",
            ComponentAction::SwitchNamespace => "component namespace switch",
            ComponentAction::UpdateDeployConfig => "update component package config",
        }
    }
}

impl fmt::Display for ComponentAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConfigAction {
    Set,
    Remove,
}

impl ConfigAction {
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigAction::Set => "set",
            ConfigAction::Remove => "remove",
        }
    }
}

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
    pub actual: Option<String>,
    /// The wanted value (`None` for removals).
    pub expected: Option<String>,
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

/// Sensitive values the blueprint references, resolved to digests, by `(dogu, key)`.
pub(crate) type ResolvedSecrets<'a> = BTreeMap<(&'a str, &'a str), &'a SecretDigest>;

/// Computes the diff. Objects the blueprint concerns that cannot be read are returned as problems and
/// left out of the diff.
pub(crate) fn compute<'a>(
    effective: &'a EffectiveBlueprint<'a>,
    installed: &'a Installed<'a>,
    observation: &Observation,
    resolved: &ResolvedSecrets<'_>,
) -> (Diff<'a>, Vec<Problem>) {
    let mut problems = Vec::new();
    let mut diff = Diff::default();

    for target in &effective.dogus {
        let name = &target.name.simple;
        if let Some(problem) = installed.unreadable_dogus.get(name.as_str()) {
            problems.push(problem.clone());
            continue;
        }
        let installed = installed.dogus.get(name.as_str());
        let actions = dogu_actions(target, installed);
        if !actions.is_empty() {
            diff.dogus.push(DoguChange { target, installed, actions });
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
            Ok(actual) => diff.global = value_changes(config.global.iter(), actual),
            Err(problem) => problems.push(problem),
        }
    }
    for (dogu, entries) in &config.dogus {
        let dogu = *dogu;
        let mut normal = entries.iter().filter(|e| !e.sensitive).peekable();
        if normal.peek().is_some() {
            let store = observation.dogu_configs.get(dogu).unwrap_or(&ConfigObservation::Missing);
            match readable(store, || format!("normal dogu config of \"{dogu}\"")) {
                Ok(actual) => {
                    let changes = value_changes(normal, actual);
                    if !changes.is_empty() {
                        diff.dogu_config.insert(dogu.to_owned(), changes);
                    }
                }
                Err(problem) => problems.push(problem),
            }
        }
        let sensitive = entries.iter().filter(|e| e.sensitive);
        if entries.iter().any(|e| e.sensitive) {
            let store = observation.sensitive_configs.get(dogu).unwrap_or(&ConfigObservation::Missing);
            match readable(store, || format!("sensitive dogu config of \"{dogu}\"")) {
                Ok(actual) => {
                    let mut changes = Vec::new();
                    for entry in sensitive {
                        let key = config_format::normalize_key(entry.key).unwrap_or(entry.key);
                        let current = actual.and_then(|a| a.get(key));
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
                        let Some(wanted) = resolved.get(&(dogu, entry.key)) else {
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

fn value_changes<'e, 'a: 'e>(
    entries: impl Iterator<Item = &'e crate::model::ConfigEntry<'a>>,
    actual: Option<&BTreeMap<String, String>>,
) -> Vec<ConfigChange> {
    let mut changes = Vec::new();
    for entry in entries {
        let key = config_format::normalize_key(entry.key).unwrap_or(entry.key);
        let current = actual.and_then(|a| a.get(key));
        if entry.absent {
            if let Some(current) = current {
                changes.push(ConfigChange {
                    key: entry.key.to_owned(),
                    action: ConfigAction::Remove,
                    actual: Some(current.clone()),
                    expected: None,
                });
            }
        } else if current.map(String::as_str) != entry.value {
            changes.push(ConfigChange {
                key: entry.key.to_owned(),
                action: ConfigAction::Set,
                actual: current.cloned(),
                expected: entry.value.map(str::to_owned),
            });
        }
    }
    changes
}

fn dogu_actions(target: &TargetDogu, installed: Option<&InstalledDogu<'_>>) -> Vec<DoguAction> {
    match (target.absent, installed) {
        (true, None) => vec![],
        (true, Some(_)) => vec![DoguAction::Uninstall],
        (false, None) => vec![DoguAction::Install],
        (false, Some(actual)) => {
            let mut actions = Vec::new();
            if target.name.namespace != actual.name.namespace {
                actions.push(DoguAction::SwitchNamespace);
            }
            // Volumes only grow.
            if target.min_volume_size.is_some_and(|wanted| wanted > actual.min_volume_size) {
                actions.push(DoguAction::UpdateMinVolumeSize);
            }
            if !same_mounts(&target.mounts, &actual.mounts) {
                actions.push(DoguAction::UpdateAdditionalMounts);
            }
            if target.reverse_proxy != actual.reverse_proxy {
                actions.push(DoguAction::UpdateReverseProxy);
            }
            if let Some(wanted) = &target.version {
                if wanted > &actual.version {
                    actions.push(DoguAction::Upgrade);
                } else if wanted < &actual.version {
                    actions.push(DoguAction::Downgrade);
                }
            }
            actions
        }
    }
}

/// Mount lists compare as sets of equal size.
fn same_mounts(wanted: &[crate::model::Mount], actual: &[crate::model::Mount]) -> bool {
    wanted.len() == actual.len() && wanted.iter().all(|m| actual.contains(m))
}

fn component_actions(target: &TargetComponent<'_>, installed: Option<&InstalledComponent<'_>>) -> Vec<ComponentAction> {
    match (target.absent, installed) {
        (true, None) => vec![],
        (true, Some(_)) => vec![ComponentAction::Uninstall],
        (false, None) => vec![ComponentAction::Install],
        (false, Some(actual)) => {
            let mut actions = Vec::new();
            if target.name.namespace != actual.name.namespace {
                actions.push(ComponentAction::SwitchNamespace);
            }
            if expected_deploy_config(target) != actual.deploy_config {
                actions.push(ComponentAction::UpdateDeployConfig);
            }
            if let Some(wanted) = &target.version {
                if wanted > &actual.version {
                    actions.push(ComponentAction::Upgrade);
                } else if wanted < &actual.version {
                    actions.push(ComponentAction::Downgrade);
                }
            }
            actions
        }
    }
}

fn expected_deploy_config(target: &TargetComponent<'_>) -> Map<String, Value> {
    let mut config = Map::new();
    let Some(map) = target.deploy_config_map() else {
        return config;
    };
    if let Some(namespace) = map.get("deployNamespace").filter(|v| v.as_str().is_some_and(|s| !s.is_empty())) {
        config.insert("deployNamespace".into(), namespace.clone());
    }
    if let Some(values) = map.get("overwriteConfig").filter(|v| !v.is_null()) {
        config.insert("overwriteConfig".into(), values.clone());
    }
    config
}

// ---- status representation ----

impl Diff<'_> {
    pub fn to_api(&self) -> api::StateDiff {
        api::StateDiff {
            dogu_diffs: self
                .dogus
                .iter()
                .map(|change| {
                    (
                        change.name().to_owned(),
                        api::DoguDiff {
                            actual: actual_dogu_state(change.installed),
                            expected: expected_dogu_state(change.target),
                            needed_actions: change.actions.iter().map(|a| a.as_str().to_owned()).collect(),
                        },
                    )
                })
                .collect(),
            component_diffs: self
                .components
                .iter()
                .map(|change| {
                    (
                        change.name().to_owned(),
                        api::ComponentDiff {
                            actual: actual_component_state(change.installed),
                            expected: expected_component_state(change.target),
                            needed_actions: change.actions.iter().map(|a| a.as_str().to_owned()).collect(),
                        },
                    )
                })
                .collect(),
            dogu_config_diffs: {
                let mut map: BTreeMap<String, api::CombinedDoguConfigDiff> = BTreeMap::new();
                for (dogu, changes) in &self.dogu_config {
                    map.entry(dogu.clone()).or_default().dogu_config_diff =
                        changes.iter().map(ConfigChange::to_api).collect();
                }
                for (dogu, changes) in &self.sensitive_config {
                    map.entry(dogu.clone()).or_default().sensitive_dogu_config_diff =
                        changes.iter().map(SensitiveChange::to_api).collect();
                }
                map
            },
            global_config_diff: self.global.iter().map(ConfigChange::to_api).collect(),
        }
    }
}

impl ConfigChange {
    fn to_api(&self) -> api::ConfigEntryDiff {
        api::ConfigEntryDiff {
            key: self.key.clone(),
            actual: api::ConfigValueState { value: self.actual.clone(), exists: self.actual.is_some() },
            expected: api::ConfigValueState { value: self.expected.clone(), exists: self.action == ConfigAction::Set },
            needed_action: self.action.as_str().to_owned(),
        }
    }
}

impl SensitiveChange {
    fn to_api(&self) -> api::ConfigEntryDiff {
        api::ConfigEntryDiff {
            key: self.key.clone(),
            actual: api::ConfigValueState { value: None, exists: self.actual_exists },
            expected: api::ConfigValueState { value: None, exists: self.action == ConfigAction::Set },
            needed_action: self.action.as_str().to_owned(),
        }
    }
}

fn actual_dogu_state(installed: Option<&InstalledDogu<'_>>) -> api::DoguDiffState {
    let Some(dogu) = installed else {
        return api::DoguDiffState { absent: true, ..Default::default() };
    };
    api::DoguDiffState {
        namespace: dogu.name.namespace.clone(),
        version: Some(dogu.version.raw().to_owned()),
        absent: false,
        resource_config: Some(api::ResourceConfig { min_volume_size: Some(dogu.min_volume_size.canonical()) }),
        reverse_proxy_config: (!dogu.reverse_proxy.is_empty()).then(|| dogu.reverse_proxy.to_api()),
        additional_mounts: dogu.mounts.iter().map(|m| m.to_api()).collect(),
    }
}

fn expected_dogu_state(target: &TargetDogu) -> api::DoguDiffState {
    api::DoguDiffState {
        namespace: target.name.namespace.clone(),
        version: target.version.as_ref().map(|v| v.raw().to_owned()),
        absent: target.absent,
        resource_config: target.min_volume_size.map(|q| api::ResourceConfig { min_volume_size: Some(q.canonical()) }),
        reverse_proxy_config: (!target.reverse_proxy.is_empty()).then(|| target.reverse_proxy.to_api()),
        additional_mounts: target.mounts.iter().map(|m| m.to_api()).collect(),
    }
}

fn actual_component_state(installed: Option<&InstalledComponent<'_>>) -> api::ComponentDiffState {
    let Some(component) = installed else {
        return api::ComponentDiffState { absent: true, ..Default::default() };
    };
    api::ComponentDiffState {
        distribution_namespace: component.name.namespace.clone(),
        version: Some(component.version.to_string()),
        absent: false,
        deploy_config: (!component.deploy_config.is_empty()).then(|| Value::Object(component.deploy_config.clone())),
    }
}

fn expected_component_state(target: &TargetComponent<'_>) -> api::ComponentDiffState {
    let config = expected_deploy_config(target);
    api::ComponentDiffState {
        distribution_namespace: target.name.namespace.clone(),
        version: target.version.as_ref().map(|v| v.to_string()),
        absent: target.absent,
        deploy_config: (!config.is_empty()).then_some(Value::Object(config)),
    }
}

/// Acceptance case 93 (docs/acceptance.md; amended): actions are a closed set, and every name the diff
/// can produce is one of upstream's strings. (A unit test: the action enums are the machine's own.)
#[cfg(test)]
mod action_names {
    use super::{ComponentAction, DoguAction};

    #[test]
    fn case_93_action_names_are_a_closed_set() {
        let dogu = [
            DoguAction::Install,
            DoguAction::Uninstall,
            DoguAction::Upgrade,
            DoguAction::Downgrade,
            DoguAction::SwitchNamespace,
            DoguAction::UpdateMinVolumeSize,
            DoguAction::UpdateReverseProxy,
            DoguAction::UpdateAdditionalMounts,
        ]
        .map(|a| a.as_str());
        assert_eq!(
            dogu,
            [
                "install",
                "uninstall",
                "upgrade",
                "downgrade",
                "dogu namespace switch",
                "update resource minimum volume size",
                "update reverse proxy",
                "update additional mounts"
            ]
        );
        let component = [
            ComponentAction::Install,
            ComponentAction::Uninstall,
            ComponentAction::Upgrade,
            ComponentAction::Downgrade,
            ComponentAction::SwitchNamespace,
            ComponentAction::UpdateDeployConfig,
        ]
        .map(|a| a.as_str());
        assert_eq!(
            component,
            [
                "install",
                "uninstall",
                "upgrade",
                "downgrade",
                "component namespace switch",
                "update component package config"
            ]
        );
    }
}
