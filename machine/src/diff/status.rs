//! The diff as the Blueprint's status shows it (`status.stateDiff`).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::api;
use crate::model::{InstalledComponent, InstalledDogu, TargetComponent, TargetDogu};

use super::actions::expected_deploy_config;
use super::{ConfigAction, ConfigChange, Diff, SensitiveChange};

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
            // A value copied from a Secret exists and is never shown.
            actual: api::ConfigValueState {
                value: self.actual.as_ref().and_then(|v| v.shown()).map(str::to_owned),
                exists: self.actual.is_some(),
            },
            expected: api::ConfigValueState {
                value: self.expected.as_ref().and_then(|v| v.shown()).map(str::to_owned),
                exists: self.action == ConfigAction::Set,
            },
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
        resource_config: Some(Box::new(api::ResourceConfig {
            min_volume_size: Some(dogu.min_volume_size.canonical()),
            storage_class_name: dogu.storage_class.map(str::to_owned),
        })),
        reverse_proxy_config: (!dogu.reverse_proxy.is_empty()).then(|| Box::new(dogu.reverse_proxy.to_api())),
        additional_mounts: dogu.mounts.iter().map(|m| m.to_api()).collect(),
    }
}

fn expected_dogu_state(target: &TargetDogu) -> api::DoguDiffState {
    api::DoguDiffState {
        namespace: target.name.namespace.clone(),
        version: target.version.as_ref().map(|v| v.raw().to_owned()),
        absent: target.absent,
        resource_config: (target.min_volume_size.is_some() || target.storage_class.is_some()).then(|| {
            Box::new(api::ResourceConfig {
                min_volume_size: target.min_volume_size.map(|q| q.canonical()),
                storage_class_name: target.storage_class.clone(),
            })
        }),
        reverse_proxy_config: (!target.reverse_proxy.is_empty()).then(|| Box::new(target.reverse_proxy.to_api())),
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
