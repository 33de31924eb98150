//! The `Dogu` custom resource (`k8s.cloudogu.com/v2`), owned by the dogu operator.
//!
//! Only the fields this operator reads or writes are typed; everything else on the object is left
//! alone (we never replace a Dogu CR, we create it or send merge patches of the fields we own).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "k8s.cloudogu.com",
    version = "v2",
    kind = "Dogu",
    plural = "dogus",
    singular = "dogu",
    namespaced,
    status = "DoguStatus",
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
pub struct DoguSpec {
    /// Qualified name `namespace/simpleName`.
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<DoguResources>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub support_mode: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_reconciliation: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_config: Option<UpgradeConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_ingress_annotations: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_mounts: Option<Vec<DoguMount>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export_mode: Option<bool>,
    /// Not used by this operator; kept so that the sandbox's CRD accepts what the real one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::preserve_unknown_object")]
    pub security: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DoguResources {
    /// Deprecated by the dogu operator in favour of `minDataVolumeSize`; still read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_volume_size: Option<QuantityText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_data_volume_size: Option<QuantityText>,
    /// The storage class of the dogu's volume, set at install (the dogu operator's since k8s-dogu-lib
    /// v2.11): absent = the cluster's default class, `""` = none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_namespace_switch: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_upgrade: Option<bool>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DoguMount {
    pub source_type: String,
    pub name: String,
    pub volume: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subfolder: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DoguStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_version: Option<String>,
    /// `""` (pending), `available`, `unavailable` or `unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<String>,
    /// When the dogu was last (re)started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<Condition>,
}

/// A Kubernetes quantity as written on an object: the API server accepts an integer or a string.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuantityText(pub String);

impl Serialize for QuantityText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for QuantityText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum IntOrString {
            Int(i64),
            Float(f64),
            String(String),
        }
        Ok(QuantityText(match IntOrString::deserialize(d)? {
            IntOrString::Int(i) => i.to_string(),
            IntOrString::Float(f) => f.to_string(),
            IntOrString::String(s) => s,
        }))
    }
}

impl JsonSchema for QuantityText {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Quantity".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schema::quantity(generator)
    }
}

impl Dogu {
    /// Whether this existing object installs what `wanted` would (its qualified name and version): a
    /// create that finds it counts as done.
    pub fn installs_the_same(&self, wanted: &Dogu) -> bool {
        self.spec.name == wanted.spec.name && self.spec.version == wanted.spec.version
    }
}
