//! What the diff can ask for, per dogu, component and config key (upstream's action names), and how
//! a dogu's or a component's actions follow from what is wanted and what is installed.

use std::fmt;

use serde_json::{Map, Value};

use crate::model::{InstalledComponent, InstalledDogu, TargetComponent, TargetDogu};

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

/// `gateway`: reverse-proxy settings are not applied (the gateway does not read them).
pub(super) fn dogu_actions(
    target: &TargetDogu,
    installed: Option<&InstalledDogu<'_>>,
    gateway: bool,
) -> Vec<DoguAction> {
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
            if !gateway && target.reverse_proxy != actual.reverse_proxy {
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

pub(super) fn component_actions(
    target: &TargetComponent<'_>,
    installed: Option<&InstalledComponent<'_>>,
) -> Vec<ComponentAction> {
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

pub(super) fn expected_deploy_config(target: &TargetComponent<'_>) -> Map<String, Value> {
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
