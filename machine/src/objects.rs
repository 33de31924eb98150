//! The exact objects and merge patches the executor sends for dogus and components.
//!
//! Patches carry only the fields the blueprint owns and that the diff says must change; a setting the
//! blueprint removes is sent as `null`, so merge-patch semantics delete it.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value, json};

use crate::api::{self, Component, ComponentSpec, Dogu, DoguResources, DoguSpec, QuantityText, UpgradeConfig};
use crate::diff::{ComponentAction, ComponentChange, DoguAction, DoguChange};
use crate::model::installed::{ANNOTATION_BODY_SIZE, ANNOTATION_CONFIGURATION_SNIPPET, ANNOTATION_REWRITE_TARGET};
use crate::model::{ReverseProxy, TargetComponent, TargetDogu};

/// The Dogu CR that installs `target`.
/// `gateway`: no nginx-ingress annotations (the gateway does not read them).
pub(crate) fn dogu_object(target: &TargetDogu, namespace: &str, gateway: bool) -> Dogu {
    let simple = &target.name.simple;
    let version = target.version.as_ref().map(|v| v.raw().to_owned()).unwrap_or_default();
    let labels = [
        ("app", "ces".to_owned()),
        ("k8s.cloudogu.com/app", "ces".to_owned()),
        ("dogu.name", label_value(simple)),
        ("k8s.cloudogu.com/dogu.name", label_value(simple)),
        ("app.kubernetes.io/name", label_value(simple)),
        ("app.kubernetes.io/version", label_value(&version)),
        ("app.kubernetes.io/part-of", "ces".to_owned()),
        ("app.kubernetes.io/managed-by", crate::naming::FIELD_MANAGER.to_owned()),
    ];
    let annotations = if gateway { BTreeMap::new() } else { annotations(&target.reverse_proxy) };
    Dogu {
        metadata: ObjectMeta {
            name: Some(simple.clone()),
            namespace: Some(namespace.to_owned()),
            labels: Some(labels.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()),
            ..Default::default()
        },
        spec: DoguSpec {
            name: target.name.to_string(),
            version,
            resources: Some(DoguResources {
                data_volume_size: None,
                // "0" leaves the size to the dogu operator's default.
                min_data_volume_size: Some(QuantityText(
                    target.min_volume_size.map(|q| q.canonical()).unwrap_or_else(|| "0".to_owned()),
                )),
                // Set at install only: the patches below never send it (merge patches leave it).
                storage_class_name: target.storage_class.clone(),
            }),
            support_mode: Some(false),
            pause_reconciliation: Some(false),
            upgrade_config: Some(UpgradeConfig { allow_namespace_switch: Some(false), force_upgrade: Some(false) }),
            additional_ingress_annotations: (!annotations.is_empty()).then_some(annotations),
            additional_mounts: (!target.mounts.is_empty()).then(|| target.mounts.iter().map(dogu_mount).collect()),
            ..Default::default()
        },
        status: None,
    }
}

fn dogu_mount(mount: &crate::model::Mount) -> api::DoguMount {
    api::DoguMount {
        source_type: mount.source_type.clone(),
        name: mount.name.clone(),
        volume: mount.volume.clone(),
        subfolder: (!mount.subfolder.is_empty()).then(|| mount.subfolder.clone()),
    }
}

fn annotations(proxy: &ReverseProxy) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    if let Some(size) = proxy.max_body_size {
        map.insert(ANNOTATION_BODY_SIZE.to_owned(), size.canonical());
    }
    if !proxy.rewrite_target.is_empty() {
        map.insert(ANNOTATION_REWRITE_TARGET.to_owned(), proxy.rewrite_target.clone());
    }
    if !proxy.additional_config.is_empty() {
        map.insert(ANNOTATION_CONFIGURATION_SNIPPET.to_owned(), proxy.additional_config.clone());
    }
    map
}

/// The merge patch that applies a dogu's non-install/uninstall actions, and unpauses it if asked.
pub(crate) fn dogu_patch(change: &DoguChange<'_>, unpause: bool) -> Value {
    let target = change.target;
    let mut spec = Map::new();
    for action in &change.actions {
        match action {
            DoguAction::Upgrade => {
                spec.insert("version".into(), json!(target.version.as_ref().map(|v| v.raw())));
            }
            DoguAction::SwitchNamespace => {
                spec.insert("name".into(), json!(target.name.to_string()));
                spec.insert("upgradeConfig".into(), json!({"allowNamespaceSwitch": true}));
            }
            DoguAction::UpdateMinVolumeSize => {
                let size = target.min_volume_size.map(|q| q.canonical());
                spec.insert("resources".into(), json!({"minDataVolumeSize": size}));
            }
            DoguAction::UpdateReverseProxy => {
                let wanted = annotations(&target.reverse_proxy);
                let current = change.installed.map(|i| annotations(&i.reverse_proxy)).unwrap_or_default();
                let mut patch = Map::new();
                for key in current.keys().filter(|k| !wanted.contains_key(*k)) {
                    patch.insert(key.clone(), Value::Null);
                }
                for (key, value) in wanted {
                    patch.insert(key, Value::String(value));
                }
                spec.insert("additionalIngressAnnotations".into(), Value::Object(patch));
            }
            DoguAction::UpdateAdditionalMounts => {
                let mounts: Vec<api::DoguMount> = target.mounts.iter().map(dogu_mount).collect();
                let value = if mounts.is_empty() { Value::Null } else { json!(mounts) };
                spec.insert("additionalMounts".into(), value);
            }
            // Never patched: install and uninstall create and delete, downgrades are forbidden.
            DoguAction::Install | DoguAction::Uninstall | DoguAction::Downgrade => {}
        }
    }
    if unpause {
        spec.insert("pauseReconciliation".into(), Value::Bool(false));
    }
    json!({ "spec": spec })
}

/// Sets or clears `spec.pauseReconciliation`.
pub(crate) fn pause_patch(paused: bool) -> Value {
    json!({"spec": {"pauseReconciliation": paused}})
}

/// The Component CR that installs `target`.
pub(crate) fn component_object(
    target: &TargetComponent,
    deploy_config: &Map<String, Value>,
    namespace: &str,
) -> Component {
    let simple = &target.name.simple;
    let version = target.version.as_ref().map(|v| v.to_string()).unwrap_or_default();
    let labels = [
        ("k8s.cloudogu.com/component.name", label_value(simple)),
        ("k8s.cloudogu.com/component.version", label_value(&version)),
        ("app", "ces".to_owned()),
        ("k8s.cloudogu.com/app", "ces".to_owned()),
        ("component.name", label_value(simple)),
        ("app.kubernetes.io/name", label_value(simple)),
        ("app.kubernetes.io/version", label_value(&version)),
        ("app.kubernetes.io/part-of", "ces".to_owned()),
        ("app.kubernetes.io/managed-by", crate::naming::FIELD_MANAGER.to_owned()),
    ];
    Component {
        metadata: ObjectMeta {
            name: Some(simple.clone()),
            namespace: Some(namespace.to_owned()),
            labels: Some(labels.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()),
            ..Default::default()
        },
        spec: ComponentSpec {
            namespace: target.name.namespace.clone(),
            name: simple.clone(),
            version,
            deploy_namespace: deploy_config.get("deployNamespace").and_then(|v| v.as_str()).map(str::to_owned),
            values_yaml_overwrite: deploy_config.get("overwriteConfig").map(values_yaml),
            ..Default::default()
        },
        status: None,
    }
}

/// The merge patch that applies a component's upgrade and deploy-config change.
pub(crate) fn component_patch(change: &ComponentChange<'_>) -> Value {
    let mut spec = Map::new();
    for action in &change.actions {
        match action {
            ComponentAction::Upgrade => {
                spec.insert("version".into(), json!(change.target.version.as_ref().map(|v| v.to_string())));
            }
            ComponentAction::UpdateDeployConfig => {
                let config = change.expected_deploy_config();
                spec.insert("deployNamespace".into(), config.get("deployNamespace").cloned().unwrap_or(Value::Null));
                spec.insert(
                    "valuesYamlOverwrite".into(),
                    config.get("overwriteConfig").map(|v| Value::String(values_yaml(v))).unwrap_or(Value::Null),
                );
            }
            ComponentAction::Install
            | ComponentAction::Uninstall
            | ComponentAction::Downgrade
            | ComponentAction::SwitchNamespace => {}
        }
    }
    json!({ "spec": spec })
}

/// `overwriteConfig` as the YAML text the component operator merges over the chart's values.
pub(crate) fn values_yaml(values: &Value) -> String {
    serde_saphyr::to_string(values).unwrap_or_default()
}

/// A Kubernetes label value: at most 63 characters of `[A-Za-z0-9_.-]`, alphanumeric at both ends.
fn label_value(text: &str) -> String {
    let mapped: String =
        text.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect();
    let mut value: String = mapped.chars().take(63).collect();
    while value.ends_with(|c: char| !c.is_ascii_alphanumeric()) {
        value.pop();
    }
    value.trim_start_matches(|c: char| !c.is_ascii_alphanumeric()).to_owned()
}

#[cfg(test)]
mod tests {
    use super::label_value;

    #[test]
    fn label_values_are_valid() {
        assert_eq!(label_value("1.2.3+build.5"), "1.2.3_build.5");
        assert_eq!(label_value("=1.0.0-1"), "1.0.0-1");
        assert_eq!(label_value(&"a".repeat(70)).len(), 63);
        assert_eq!(label_value(""), "");
    }
}
