//! The `Component` custom resource (`k8s.cloudogu.com/v1`), owned by the component operator.

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "k8s.cloudogu.com",
    version = "v1",
    kind = "Component",
    plural = "components",
    singular = "component",
    namespaced,
    shortname = "comp",
    status = "ComponentStatus",
    derive = "Default",
    derive = "PartialEq",
    crates(
        kube_core = "::kube_core",
        k8s_openapi = "::k8s_openapi",
        schemars = "::schemars",
        serde = "::serde",
        serde_json = "::serde_json"
    ),
    printcolumn = r#"{"name": "Spec-Version", "type": "string", "jsonPath": ".spec.version"}"#,
    printcolumn = r#"{"name": "Installed Version", "type": "string", "jsonPath": ".status.installedVersion"}"#,
    printcolumn = r#"{"name": "Health", "type": "string", "jsonPath": ".status.health"}"#,
    printcolumn = r#"{"name": "Status", "type": "string", "jsonPath": ".status.status"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ComponentSpec {
    /// Distribution namespace (the Helm repository namespace, e.g. `k8s`).
    #[serde(default)]
    pub namespace: String,
    /// Simple name, e.g. `k8s-dogu-operator`.
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
    /// Kubernetes namespace to deploy the chart into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_namespace: Option<String>,
    /// YAML merged over the chart's values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values_yaml_overwrite: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapped_values: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values_config_ref: Option<ValuesConfigRef>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ValuesConfigRef {
    pub name: String,
    pub key: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComponentStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_version: Option<String>,
    /// `""` (pending), `available`, `unavailable` or `unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_time_nanos: Option<i64>,
}

impl Component {
    /// Whether this existing object installs what `wanted` would (its qualified name and version): a
    /// create that finds it counts as done.
    pub fn installs_the_same(&self, wanted: &Component) -> bool {
        self.spec.namespace == wanted.spec.namespace && self.spec.version == wanted.spec.version
    }
}
