//! The `Blueprint` custom resource in `k8s.cloudogu.com/v3`, the version the operator reads, writes and
//! the API server stores (docs/api-versions.md), wire-compatible with upstream's CRD. The CRD also
//! serves `v2`; [`crate::conversion`] converts between the two, and `super::versions` derives v2's
//! schema from these types.
//!
//! Every string that has a grammar (dogu names, versions, quantities) stays a raw `String` here: the
//! machine parses it, so that a malformed value becomes a condition with a clear message instead of a
//! decoding failure in the shell. Optional fields are `Option` so that what the user wrote and what a
//! default filled in stay distinguishable, and so that our schema never requires more than upstream's.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use kube_core::Resource;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{compact, schema};

/// The body of a Blueprint besides `metadata` and `status`.
///
/// Upstream's CRD does not require `spec`, and the API server stores a Blueprint without one. A
/// typed root with a mandatory `spec` could not even be decoded then, and the operator could not
/// tell the user what is wrong. So the root is derived with `no_spec` and carries an optional `spec`.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "k8s.cloudogu.com",
    version = "v3",
    kind = "Blueprint",
    root = "BlueprintCrd",
    plural = "blueprints",
    singular = "blueprint",
    namespaced,
    no_spec,
    shortname = "bp",
    status = "BlueprintStatus",
    derive = "Default",
    derive = "PartialEq",
    label("app", "ces"),
    label("app.kubernetes.io/name", "k8s-blueprint-lib"),
    crates(
        kube_core = "::kube_core",
        k8s_openapi = "::k8s_openapi",
        schemars = "::schemars",
        serde = "::serde",
        serde_json = "::serde_json"
    ),
    printcolumn = r#"{"name": "Display Name", "type": "string", "jsonPath": ".spec.displayName", "description": "The display name of the blueprint"}"#,
    printcolumn = r#"{"name": "Stopped", "type": "boolean", "jsonPath": ".spec.stopped", "description": "Whether the resource is started as a dry run"}"#,
    printcolumn = r#"{"name": "Valid", "type": "string", "jsonPath": ".status.conditions[?(@.type == 'Valid')].status", "description": "Whether the resource is valid in the current state"}"#,
    printcolumn = r#"{"name": "Executable", "type": "string", "jsonPath": ".status.conditions[?(@.type == 'Executable')].status", "description": "Whether the resource is executable in the current state"}"#,
    printcolumn = r#"{"name": "Ecosystem Healthy", "type": "string", "jsonPath": ".status.conditions[?(@.type == 'EcosystemHealthy')].status", "description": "Whether the ecosystem is healthy in the current state"}"#,
    printcolumn = r#"{"name": "Completed", "type": "string", "jsonPath": ".status.conditions[?(@.type == 'Completed')].status", "description": "Whether the resource is completed in the current state"}"#,
    printcolumn = r#"{"name": "Last Apply Successful", "type": "string", "jsonPath": ".status.conditions[?(@.type == 'LastApplySucceeded')].status", "description": "Whether the last apply steps were successful"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "description": "The age of the resource"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct BlueprintBody {
    /// The wanted state of the ecosystem (required; a Blueprint without it is reported as invalid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Arc<BlueprintSpec>>,
}

/// A Blueprint object.
///
/// The derive's root type (`BlueprintCrd`) gives the CRD; this one, with the same fields and wire form,
/// is the one decoded and reconciled. The derive decodes `#[kube(no_spec)]` roots through serde's
/// `flatten`, which first buffers every unknown key (`spec` among them) as untyped content and then
/// decodes that again; and it keeps the managers' field sets. At a thousand dogus both together were
/// 5 MiB of every watch event of a Blueprint. This type decodes `spec` and `status` straight into
/// their types and skips the field sets (see `meta`). Spec and status are shared (`Arc`): the copies
/// of a Blueprint the shell makes (the reflector's of every event, the one written) share them.
///
/// A `spec` that does not fit [`BlueprintSpec`] (it passed the CRD's schema, but not our types) does
/// not fail the decoding, which would fail every list of Blueprints: it is kept as it was sent, with
/// the reason, and the machine reports the Blueprint invalid. A `status` that does not fit is dropped
/// (the next status write replaces it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Blueprint {
    pub metadata: ObjectMeta,
    pub spec: BlueprintBody,
    pub status: Option<Arc<BlueprintStatus>>,
    /// The spec as sent, when it does not fit (then `spec.spec` is `None`).
    pub undecodable_spec: Option<Arc<UndecodableSpec>>,
}

/// A spec that does not fit [`BlueprintSpec`]: its text (written back as it was, so that a journal
/// replays it) and why.
#[derive(Clone, Debug)]
pub struct UndecodableSpec {
    pub raw: Box<serde_json::value::RawValue>,
    pub problem: String,
}

impl PartialEq for UndecodableSpec {
    fn eq(&self, other: &Self) -> bool {
        self.raw.get() == other.raw.get()
    }
}

impl Blueprint {
    /// A Blueprint named `name`, labelled as the CRD's objects are.
    pub fn new(name: &str, spec: BlueprintBody) -> Self {
        let BlueprintCrd { metadata, spec, status } = BlueprintCrd::new(name, spec);
        Blueprint { metadata, spec, status: status.map(Arc::new), undecodable_spec: None }
    }

    /// The spec, if the object has one.
    pub fn blueprint_spec(&self) -> Option<&BlueprintSpec> {
        self.spec.spec.as_deref()
    }
}

impl Resource for Blueprint {
    type DynamicType = ();
    type Scope = <BlueprintCrd as Resource>::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        BlueprintCrd::kind(dt)
    }

    fn group(dt: &()) -> Cow<'_, str> {
        BlueprintCrd::group(dt)
    }

    fn version(dt: &()) -> Cow<'_, str> {
        BlueprintCrd::version(dt)
    }

    fn api_version(dt: &()) -> Cow<'_, str> {
        BlueprintCrd::api_version(dt)
    }

    fn plural(dt: &()) -> Cow<'_, str> {
        BlueprintCrd::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Blueprint {
    /// Decodes a Blueprint as the API server sends it (JSON) that does not fit this type: a `spec` that
    /// does not fit is kept as sent, with the reason; a `status` that does not fit is dropped. Fails
    /// only when even the metadata cannot be read.
    pub fn decode_lenient(json: &str) -> Result<Self, serde_json::Error> {
        use serde_json::value::RawValue;

        #[derive(Deserialize)]
        struct Wire {
            #[serde(deserialize_with = "super::meta::without_field_sets")]
            metadata: ObjectMeta,
            #[serde(default)]
            spec: Option<Box<RawValue>>,
            #[serde(default)]
            status: Option<Box<RawValue>>,
        }
        let Wire { metadata, spec, status } = serde_json::from_str(json)?;
        let (spec, undecodable_spec) = match spec.filter(|raw| raw.get() != "null") {
            None => (None, None),
            Some(raw) => match serde_json::from_str::<BlueprintSpec>(raw.get()) {
                Ok(spec) => (Some(Arc::new(spec)), None),
                Err(error) => {
                    let problem = error.to_string().lines().next().unwrap_or_default().to_owned();
                    (None, Some(Arc::new(UndecodableSpec { raw, problem })))
                }
            },
        };
        let status = status.and_then(|raw| serde_json::from_str::<BlueprintStatus>(raw.get()).ok()).map(Arc::new);
        Ok(Blueprint { metadata, spec: BlueprintBody { spec }, status, undecodable_spec })
    }
}

impl Serialize for Blueprint {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire<'a> {
            api_version: &'a str,
            kind: &'a str,
            metadata: &'a ObjectMeta,
            #[serde(skip_serializing_if = "Option::is_none")]
            spec: Option<Spec<'a>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            status: Option<&'a BlueprintStatus>,
        }
        #[derive(Serialize)]
        #[serde(untagged)]
        enum Spec<'a> {
            Typed(&'a BlueprintSpec),
            AsSent(&'a serde_json::value::RawValue),
        }
        let spec = match (&self.spec.spec, &self.undecodable_spec) {
            (Some(spec), _) => Some(Spec::Typed(spec)),
            (None, Some(undecodable)) => Some(Spec::AsSent(&undecodable.raw)),
            (None, None) => None,
        };
        Wire {
            api_version: &Self::api_version(&()),
            kind: &Self::kind(&()),
            metadata: &self.metadata,
            spec,
            status: self.status.as_deref(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Blueprint {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // `apiVersion` and `kind` are not checked, as the derive does not: the API server has.
        #[derive(Deserialize)]
        struct Wire {
            #[serde(deserialize_with = "super::meta::without_field_sets")]
            metadata: ObjectMeta,
            #[serde(default)]
            spec: Option<Arc<BlueprintSpec>>,
            #[serde(default)]
            status: Option<Arc<BlueprintStatus>>,
        }
        let Wire { metadata, spec, status } = Wire::deserialize(deserializer)?;
        Ok(Blueprint { metadata, spec: BlueprintBody { spec }, status, undecodable_spec: None })
    }
}

/// `spec` of a Blueprint.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = schema::require_blueprint_spec_fields)]
pub struct BlueprintSpec {
    /// Free text for user interfaces and the printer column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The wanted state of the ecosystem.
    // Shared: without a mask, `status.effectiveBlueprint` is the same manifest, and the controller's
    // cache holds the two as one (at 1,000 dogus about half a megabyte each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blueprint: Option<Arc<BlueprintManifest>>,
    /// Per-installation overrides of the blueprint's dogus: inline, or in a `BlueprintMask` object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blueprint_mask: Option<BlueprintMask>,
    /// Do not evaluate dogu health at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_dogu_health: Option<bool>,
    /// Do not evaluate component health at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_component_health: Option<bool>,
    /// Allow the mask to change a dogu's namespace, and the `dogu namespace switch` action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_dogu_namespace_switch: Option<bool>,
    /// Compute and publish everything, apply nothing (a dry run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<bool>,
}

/// The wanted dogus, components and configuration. The same shape is used for
/// `status.effectiveBlueprint`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlueprintManifest {
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "compact::list")]
    pub dogus: Option<Vec<BlueprintDogu>>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "compact::list")]
    pub components: Option<Vec<BlueprintComponent>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<BlueprintConfig>,
}

/// A wanted dogu.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlueprintDogu {
    /// `namespace/simpleName`, e.g. `official/postgresql`.
    pub name: String,
    /// Dogu version, e.g. `14.17-2`; required unless the dogu is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The dogu must not be installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent: Option<bool>,
    // Boxed: most dogus have none, and a wanted dogu is kept once per dogu in every copy of a manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_config: Option<Box<PlatformConfig>>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlatformConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<ResourceConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_proxy: Option<ReverseProxyConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_mounts: Option<Vec<AdditionalMount>>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceConfig {
    /// Minimum size of the dogu's data volume (a Kubernetes quantity, e.g. `5Gi`). Only grows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_volume_size: Option<String>,
    /// The storage class of the dogu's data volume: set at install, immutable. Absent: the cluster's
    /// default class; `""`: no class (a statically provisioned volume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReverseProxyConfig {
    /// Maximum request body size (a decimal-SI quantity, e.g. `100M`; `0` = unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_body_size: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite_target: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_config: Option<String>,
}

/// A ConfigMap or Secret mounted into a dogu volume.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdditionalMount {
    /// `ConfigMap` or `Secret`.
    pub source_type: String,
    /// Name of the ConfigMap or Secret.
    pub name: String,
    /// Name of a volume of the dogu (from its `dogu.json`).
    pub volume: String,
    /// Relative path inside the volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subfolder: Option<String>,
}

/// A wanted platform component.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlueprintComponent {
    /// `distributionNamespace/simpleName`, e.g. `k8s/k8s-dogu-operator`.
    pub name: String,
    /// Semantic version; required unless the component is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent: Option<bool>,
    /// Only `deployNamespace` (string) and `overwriteConfig` (any value) are meaningful.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::preserve_unknown_fields")]
    pub deploy_config: Option<serde_json::Value>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlueprintConfig {
    /// Per-dogu config, keyed by the dogu's simple name.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "compact::lists_by_key")]
    pub dogus: Option<BTreeMap<String, Vec<ConfigEntry>>>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "compact::list")]
    pub global: Option<Vec<ConfigEntry>>,
}

/// One config key: set to a value, from a key of a Secret (`secretRef`, sensitive or not) or of a
/// ConfigMap (`configRef`), or removed (`absent`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigEntry {
    /// `/`-separated key path, e.g. `logging/root`.
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sensitive: Option<bool>,
    // The references are boxed: most entries have neither, and an entry is kept once per key in every
    // copy of a manifest (152 bytes an entry unboxed, 72 boxed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<Box<SecretReference>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_ref: Option<Box<ConfigMapKeyReference>>,
}

/// A key of a ConfigMap in the operator's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema)]
pub struct ConfigMapKeyReference {
    pub name: String,
    pub key: String,
}

/// A key of a Secret in the operator's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema)]
pub struct SecretReference {
    pub name: String,
    pub key: String,
}

/// v3's mask: the manifest inline, or a reference to a `BlueprintMask` object (exactly one of them).
///
/// v2's mask (`{dogus: [...]}`, the manifest itself) is read as the manifest: it is the one field of
/// v2's spec that v3 did not just add to, and reading it keeps journals and files of v2 readable
/// (the API server and `plan` convert v2 objects first; this is for what is decoded directly). Any
/// other field, or v2's dogus beside a manifest, is refused rather than dropped.
#[derive(Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlueprintMask {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<BlueprintMaskManifest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cr_ref: Option<BlueprintMaskReference>,
}

impl<'de> Deserialize<'de> for BlueprintMask {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Wire {
            #[serde(default)]
            manifest: Option<BlueprintMaskManifest>,
            #[serde(default)]
            cr_ref: Option<BlueprintMaskReference>,
            /// v2's inline mask.
            #[serde(default)]
            dogus: Option<Vec<MaskDogu>>,
        }
        let Wire { manifest, cr_ref, dogus } = Wire::deserialize(deserializer)?;
        let manifest = match (manifest, dogus) {
            (Some(_), Some(_)) => {
                return Err(serde::de::Error::custom(
                    "blueprintMask has both manifest (v3) and dogus (v2): write the dogus into manifest",
                ));
            }
            (Some(manifest), None) => Some(manifest),
            (None, Some(dogus)) => Some(BlueprintMaskManifest { dogus: Some(dogus) }),
            (None, None) => None,
        };
        Ok(BlueprintMask { manifest, cr_ref })
    }
}

/// The overrides of a mask (inline in a Blueprint, or the spec of a `BlueprintMask` object).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlueprintMaskManifest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dogus: Option<Vec<MaskDogu>>,
}

/// A `BlueprintMask` object in the Blueprint's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct BlueprintMaskReference {
    pub name: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaskDogu {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent: Option<bool>,
}

/// `status` of a Blueprint: everything in it is computed afresh by every reconcile.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlueprintStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<Condition>,
    /// The blueprint after applying the mask.
    // Shared: a reconcile whose effective blueprint is the stored one decides the stored one, without
    // building a copy of it (`EffectiveBlueprint::to_api_reusing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective_blueprint: Option<Arc<BlueprintManifest>>,
    /// What differs between the effective blueprint and the ecosystem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_diff: Option<StateDiff>,
    /// The `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl BlueprintStatus {
    /// Whether `self` and `other` say the same, apart from when their conditions last changed and the
    /// messages of the conditions named in `messages_of`. The conditions are compared first: they are
    /// small, and the state diff and the effective blueprint can be megabytes.
    pub fn same_apart_from(&self, other: &Self, messages_of: &[&str]) -> bool {
        self.observed_generation == other.observed_generation
            && self.same_conditions_apart_from(other, messages_of)
            && self.state_diff == other.state_diff
            && self.effective_blueprint == other.effective_blueprint
    }

    /// Whether the conditions of `self` and `other` say the same, apart from when they last changed and
    /// the messages of the conditions named in `messages_of`.
    pub fn same_conditions_apart_from(&self, other: &Self, messages_of: &[&str]) -> bool {
        self.conditions.len() == other.conditions.len()
            && self.conditions.iter().zip(&other.conditions).all(|(a, b)| {
                a.type_ == b.type_
                    && a.status == b.status
                    && a.reason == b.reason
                    && a.observed_generation == b.observed_generation
                    && (a.message == b.message || messages_of.contains(&a.type_.as_str()))
            })
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateDiff {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dogu_diffs: BTreeMap<String, DoguDiff>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub component_diffs: BTreeMap<String, ComponentDiff>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dogu_config_diffs: BTreeMap<String, CombinedDoguConfigDiff>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "compact::vec")]
    pub global_config_diff: Vec<ConfigEntryDiff>,
}

impl StateDiff {
    pub fn is_empty(&self) -> bool {
        self.dogu_diffs.is_empty()
            && self.component_diffs.is_empty()
            && self.dogu_config_diffs.is_empty()
            && self.global_config_diff.is_empty()
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DoguDiff {
    pub actual: DoguDiffState,
    pub expected: DoguDiffState,
    #[serde(deserialize_with = "compact::vec")]
    pub needed_actions: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DoguDiffState {
    pub namespace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub absent: bool,
    // Boxed: a diff entry per dogu is kept in the decision and in the cached Blueprint, and these are
    // the largest fields (120 bytes inline) while most dogus set neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_config: Option<Box<ResourceConfig>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_proxy_config: Option<Box<ReverseProxyConfig>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "compact::vec")]
    pub additional_mounts: Vec<AdditionalMount>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComponentDiff {
    pub actual: ComponentDiffState,
    pub expected: ComponentDiffState,
    #[serde(deserialize_with = "compact::vec")]
    pub needed_actions: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComponentDiffState {
    pub distribution_namespace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub absent: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::preserve_unknown_fields")]
    pub deploy_config: Option<serde_json::Value>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CombinedDoguConfigDiff {
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "compact::vec")]
    pub dogu_config_diff: Vec<ConfigEntryDiff>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "compact::vec")]
    pub sensitive_dogu_config_diff: Vec<ConfigEntryDiff>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigEntryDiff {
    pub key: String,
    pub actual: ConfigValueState,
    pub expected: ConfigValueState,
    /// `set` or `remove`.
    pub needed_action: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigValueState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    pub exists: bool,
}
