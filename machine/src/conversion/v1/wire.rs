//! The two shapes the v1 conversion reads and writes, typed: v1 (Cloudogu's Go operator 2.x, CRD 1.1.0
//! and 1.3.0, its spec's JSON texts as k8s-blueprint-lib 1.3.0 defines them) and v3 (ours).
//!
//! Free-form values (a component's `deployConfig`) stay JSON text (`RawValue`), never decoded: the
//! conversion webhook takes any input, and a value decoded into `serde_json::Value`s takes 32 bytes a
//! number (issue 27). Unknown fields are ignored, as the Go operator ignores them; the CRDs' structural
//! schemas keep unknown fields out of stored objects anyway.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::api::{
    AdditionalMount, BlueprintConfig, BlueprintDogu, BlueprintMask, CombinedDoguConfigDiff, ConfigEntryDiff, DoguDiff,
    PlatformConfig, ResourceConfig, ReverseProxyConfig,
};

/// A free-form JSON value, as text.
pub(super) type Free = Box<RawValue>;

/// A Blueprint object of either version: its metadata's fields as text, its spec and status typed.
#[derive(Deserialize)]
pub(super) struct ObjectIn<S, T> {
    #[serde(default)]
    pub(super) metadata: Option<BTreeMap<String, Free>>,
    #[serde(default = "none")]
    pub(super) spec: Option<S>,
    #[serde(default = "none")]
    pub(super) status: Option<T>,
}

fn none<T>() -> Option<T> {
    None
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ObjectOut<'a, S, T> {
    pub(super) api_version: &'a str,
    pub(super) kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) metadata: Option<BTreeMap<String, Free>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) spec: Option<S>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) status: Option<T>,
}

// ---- v1 ----

/// v1's spec: the blueprint and its mask as JSON texts, and the flags.
#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct SpecV1 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) blueprint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) blueprint_mask: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) ignore_dogu_health: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) ignore_component_health: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) allow_dogu_namespace_switch: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) dry_run: Option<bool>,
}

/// The JSON text of v1's `spec.blueprint` (`"blueprintApi": "v2"`), and v1's `status.effectiveBlueprint`.
#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct ManifestV1 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) blueprint_api: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) dogus: Vec<DoguV1>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) components: Vec<ComponentV1>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) config: Option<ConfigV1>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct DoguV1 {
    pub(super) name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) version: Option<String>,
    /// `present`, `absent`, or empty (present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) target_state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) platform_config: Option<PlatformConfig>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct ComponentV1 {
    pub(super) name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) target_state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) deploy_config: Option<Free>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct ConfigV1 {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) dogus: BTreeMap<String, DoguConfigV1>,
    /// The Go operator always writes it, empty or not.
    #[serde(default)]
    pub(super) global: KeysV1,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct DoguConfigV1 {
    #[serde(default, skip_serializing_if = "KeysV1::is_empty")]
    pub(super) config: KeysV1,
    #[serde(default, skip_serializing_if = "KeysV1::is_empty")]
    pub(super) sensitive_config: KeysV1,
}

/// Keys set to a value, and keys removed.
#[derive(Serialize, Deserialize, Default)]
pub(super) struct KeysV1 {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) present: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) absent: Vec<String>,
}

impl KeysV1 {
    pub(super) fn is_empty(&self) -> bool {
        self.present.is_empty() && self.absent.is_empty()
    }
}

/// The JSON text of v1's `spec.blueprintMask`.
#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct MaskV1 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) blueprint_mask_api: Option<String>,
    #[serde(default)]
    pub(super) blueprint_mask_id: String,
    #[serde(default)]
    pub(super) dogus: Vec<MaskDoguV1>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct MaskDoguV1 {
    pub(super) name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) target_state: Option<String>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct StatusV1 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) phase: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) effective_blueprint: Option<ManifestV1>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) state_diff: Option<StateDiffV1>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct StateDiffV1 {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) dogu_diffs: BTreeMap<String, DoguDiffV1>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) component_diffs: BTreeMap<String, ComponentDiffV1>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) dogu_config_diffs: BTreeMap<String, CombinedDoguConfigDiff>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) global_config_diff: Vec<ConfigEntryDiff>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct DoguDiffV1 {
    pub(super) actual: DoguDiffStateV1,
    pub(super) expected: DoguDiffStateV1,
    #[serde(default)]
    pub(super) needed_actions: Vec<String>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct DoguDiffStateV1 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) version: Option<String>,
    /// `present` or `absent`.
    #[serde(default)]
    pub(super) installation_state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) resource_config: Option<ResourceConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) reverse_proxy_config: Option<ReverseProxyConfig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) additional_mounts: Vec<AdditionalMount>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct ComponentDiffV1 {
    pub(super) actual: ComponentDiffStateV1,
    pub(super) expected: ComponentDiffStateV1,
    #[serde(default)]
    pub(super) needed_actions: Vec<String>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct ComponentDiffStateV1 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) distribution_namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) version: Option<String>,
    #[serde(default)]
    pub(super) installation_state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) deploy_config: Option<Free>,
}

// ---- v3 ----

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct SpecV3 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) blueprint: Option<ManifestV3>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) blueprint_mask: Option<BlueprintMask>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) ignore_dogu_health: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) ignore_component_health: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) allow_dogu_namespace_switch: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) stopped: Option<bool>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct ManifestV3 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) dogus: Option<Vec<BlueprintDogu>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) components: Option<Vec<ComponentV3>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) config: Option<BlueprintConfig>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct ComponentV3 {
    pub(super) name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) absent: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) deploy_config: Option<Free>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct StatusV3 {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) effective_blueprint: Option<ManifestV3>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) state_diff: Option<StateDiffV3>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) observed_generation: Option<i64>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct StateDiffV3 {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) dogu_diffs: BTreeMap<String, DoguDiff>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) component_diffs: BTreeMap<String, ComponentDiffV3>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) dogu_config_diffs: BTreeMap<String, CombinedDoguConfigDiff>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) global_config_diff: Vec<ConfigEntryDiff>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct ComponentDiffV3 {
    pub(super) actual: ComponentDiffStateV3,
    pub(super) expected: ComponentDiffStateV3,
    #[serde(default)]
    pub(super) needed_actions: Vec<String>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct ComponentDiffStateV3 {
    #[serde(default)]
    pub(super) distribution_namespace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) version: Option<String>,
    #[serde(default)]
    pub(super) absent: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) deploy_config: Option<Free>,
}
