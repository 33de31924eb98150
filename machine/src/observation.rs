//! What one reconcile sees: the cluster as `kubectl get` would show it, plus what the operator knows
//! about itself. Built by the shell (or by `plan` from files, or read back from a journal); never
//! contains a plaintext secret.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::{Deserialize, Serialize};

use crate::api::{Blueprint, BlueprintMaskObject, Component, Dogu};
use crate::model::DoguDescriptor;
use crate::secret_access::{SecretAccess, SecretTraits};

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    /// The time of this observation; the only clock the machine knows.
    pub now: Time,
    pub operator: OperatorFacts,
    /// The Blueprint being reconciled, as stored (metadata incl. generation, spec, previous status).
    /// The cluster's objects are shared with the cache they were observed in (`Arc`), not copied: at
    /// a thousand dogus a copy per reconcile is megabytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blueprint: Option<Arc<Blueprint>>,
    /// How many Blueprints exist in the namespace (only one is allowed).
    pub blueprint_count: usize,
    /// The names of the other Blueprints of the namespace (to name them when there is more than one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_blueprints: Vec<String>,
    /// The `BlueprintMask`s of the namespace (what `spec.blueprintMask.crRef` may name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blueprint_masks: Vec<Arc<BlueprintMaskObject>>,
    #[serde(default)]
    pub dogus: Vec<Arc<Dogu>>,
    #[serde(default)]
    pub components: Vec<Arc<Component>>,
    /// Dogu and Component CRs that exist but do not fit their types (the API server accepted them,
    /// our types do not): only their names and why. They block what concerns them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undecodable: Vec<UndecodableObject>,
    /// `global-config`. The config observations are shared (`Arc`): the operator keeps each from one
    /// reconcile to the next while its object is unchanged, and hands the same to every observation
    /// instead of a copy of its keys.
    #[serde(default)]
    pub global_config: Arc<ConfigObservation<String>>,
    /// `<dogu>-config` ConfigMaps by dogu name; a dogu without an entry has no config object.
    #[serde(default)]
    pub dogu_configs: BTreeMap<String, Arc<ConfigObservation<String>>>,
    /// `<dogu>-config` Secrets by dogu name, values as digests.
    #[serde(default)]
    pub sensitive_configs: BTreeMap<String, Arc<ConfigObservation<SecretDigest>>>,
    /// The Secrets the blueprint references, by name; a name without an entry is missing.
    #[serde(default)]
    pub referenced_secrets: BTreeMap<String, ReferencedSecret>,
    /// The ConfigMaps the blueprint's `configRef`s name, by name; a name without an entry is missing.
    /// (Plain config: their values are no secret.)
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub referenced_config_maps: BTreeMap<String, ReferencedConfigMap>,
    /// Descriptors of the dogus the blueprint wants (see [`crate::wanted_descriptors`]).
    #[serde(default)]
    pub descriptors: Vec<DescriptorEntry>,
    /// Data of the `k8s-blueprint-operator-health-config` ConfigMap; `None` when it does not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_config: Option<BTreeMap<String, String>>,
    /// The backup operator's Restores in the namespace (`restores.k8s.cloudogu.com`); empty where the
    /// backup CRDs are not installed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restores: Vec<RestoreObservation>,
    /// The debug-mode operator's `DebugMode` named `debug-mode`, if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug_mode: Option<DebugModeObservation>,
    /// A reconcile asked for by hand (the Blueprint's annotation), with the one handled last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconcile_request: Option<crate::reconcile_request::ReconcileRequest>,
}

/// What a dogu without a config object of a kind has.
static NO_CONFIG: ConfigObservation<String> = ConfigObservation::Missing;
static NO_SENSITIVE_CONFIG: ConfigObservation<SecretDigest> = ConfigObservation::Missing;

impl Observation {
    /// The normal config object of `dogu` (`Missing` without one).
    pub fn dogu_config(&self, dogu: &str) -> &ConfigObservation<String> {
        self.dogu_configs.get(dogu).map_or(&NO_CONFIG, Arc::as_ref)
    }

    /// The sensitive config object of `dogu` (`Missing` without one).
    pub fn sensitive_config(&self, dogu: &str) -> &ConfigObservation<SecretDigest> {
        self.sensitive_configs.get(dogu).map_or(&NO_SENSITIVE_CONFIG, Arc::as_ref)
    }

    /// [`Observation::dogu_config`] for dogus asked for in name order: found in one walk.
    pub(crate) fn dogu_configs_in_order<'o>(&'o self) -> impl FnMut(&str) -> &'o ConfigObservation<String> + 'o {
        configs_in_order(&self.dogu_configs, &NO_CONFIG)
    }

    /// [`Observation::sensitive_config`] for dogus asked for in name order: found in one walk.
    pub(crate) fn sensitive_configs_in_order<'o>(
        &'o self,
    ) -> impl FnMut(&str) -> &'o ConfigObservation<SecretDigest> + 'o {
        configs_in_order(&self.sensitive_configs, &NO_SENSITIVE_CONFIG)
    }
}

/// The config objects of `configs` looked up in name order (see `InOrder`), `missing` without one.
fn configs_in_order<'o, V>(
    configs: &'o BTreeMap<String, Arc<ConfigObservation<V>>>,
    missing: &'o ConfigObservation<V>,
) -> impl FnMut(&str) -> &'o ConfigObservation<V> + 'o {
    let mut configs = crate::model::by_name::in_order(configs);
    move |dogu| configs.get(dogu).map_or(missing, Arc::as_ref)
}

/// An object that exists but does not fit its type.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct UndecodableObject {
    /// `Dogu` or `Component`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    pub problem: String,
}

/// What the operator knows about itself.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct OperatorFacts {
    /// The namespace the operator works in.
    pub namespace: String,
    /// Its own component's qualified name (`OPERATOR_COMPONENT`; default, as Cloudogu's operator:
    /// `k8s/k8s-blueprint-operator`).
    pub component: String,
    /// The version of the running operator; `None` when unknown (then only the component's installed
    /// version decides whether a self-upgrade finished).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Which versions of its own component are releases of this operator (`OPERATOR_COMPONENT_VERSIONS`).
    /// Another version there is another implementation under the same component name (Cloudogu's
    /// operator is `k8s/k8s-blueprint-operator` too): installing it would replace this operator, and
    /// waiting for it to "take over" would never end. `None`: every version is this operator's
    /// (upstream's behaviour, and recordings made before the setting existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_versions: Option<semver::VersionReq>,
    /// The replacement by another implementation was allowed on purpose (`ALLOW_OPERATOR_REPLACEMENT`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_replacement: bool,
    /// Dogu dependencies the platform provides otherwise (feature flags), not required in a blueprint.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub provided_dependencies: BTreeSet<ProvidedDependency>,
    /// The operator's own Secrets and which others a blueprint may read (`SECRET_REFERENCES`).
    #[serde(default, skip_serializing_if = "SecretAccess::is_default")]
    pub secret_access: SecretAccess,
}

/// The `DebugMode` object's `status.phase`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DebugModeObservation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}

impl DebugModeObservation {
    /// Active until it has ended (`Completed` or `Failed`); a phase not set yet counts as active, as
    /// upstream counts it.
    pub fn active(&self) -> bool {
        !matches!(self.phase.as_deref(), Some("Completed" | "Failed"))
    }
}

/// What a Restore says about its progress.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RestoreObservation {
    pub name: String,
    /// `status.status` (`in progress`, `completed`, `failed`; deprecated by newer backup operators).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The status of its `Successful` condition (`Unknown` while it runs), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successful: Option<String>,
}

impl RestoreObservation {
    /// In progress by either signal: the status string older backup operators write, or the
    /// `Successful=Unknown` condition of newer ones.
    pub fn in_progress(&self) -> bool {
        self.status.as_deref() == Some("in progress") || self.successful.as_deref() == Some("Unknown")
    }
}

/// A dogu dependency that a platform provides without the dogu (upstream v3.3's feature flags).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum ProvidedDependency {
    /// Authentication by a component (auth registration): `AUTH_REGISTRATION_ENABLED`.
    Cas,
    /// Mail by a component: `DISABLE_POSTFIX_DEPENDENCY_CHECK`.
    Postfix,
}

impl ProvidedDependency {
    /// The dogu the dependency names.
    pub fn dogu(self) -> &'static str {
        match self {
            ProvidedDependency::Cas => "cas",
            ProvidedDependency::Postfix => "postfix",
        }
    }
}

impl OperatorFacts {
    pub fn new(namespace: impl Into<String>, version: Option<String>) -> Self {
        OperatorFacts {
            namespace: namespace.into(),
            component: crate::naming::OWN_COMPONENT.to_owned(),
            version,
            own_versions: None,
            allow_replacement: false,
            provided_dependencies: BTreeSet::new(),
            secret_access: SecretAccess::default(),
        }
    }
}

/// One config object (ConfigMap or Secret in the registry format), flattened to `a/b` keys.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase", tag = "state")]
pub enum ConfigObservation<V> {
    /// The object does not exist (no config at all).
    #[default]
    Missing,
    Present {
        /// The values the object shows (for a ConfigMap: every key not in `from_secrets`).
        entries: BTreeMap<String, V>,
        /// Keys of a normal config object whose values were copied from a Secret (`secretRef` without
        /// `sensitive`), digested like sensitive values: the object names them in an annotation
        /// ([`crate::keys_from_secrets::ANNOTATION`]) and their values are never observed.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        from_secrets: BTreeMap<String, SecretDigest>,
        /// Keys of `from_secrets` the annotation does not name: the blueprint fills them from a Secret
        /// and their value is a copy written before the annotation existed (by the Go operator). They
        /// are written once more, which records them.
        #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
        unrecorded: BTreeSet<String>,
        /// When the object was last written (newest `managedFields` time, else its creation time).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_updated: Option<Time>,
        /// The `resourceVersion` read; writes are conditional on it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resource_version: Option<String>,
    },
    /// The object exists but its content is not in the registry format.
    Malformed {
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_updated: Option<Time>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resource_version: Option<String>,
    },
}

impl<V> ConfigObservation<V> {
    pub fn last_updated(&self) -> Option<&Time> {
        match self {
            ConfigObservation::Missing => None,
            ConfigObservation::Present { last_updated, .. } | ConfigObservation::Malformed { last_updated, .. } => {
                last_updated.as_ref()
            }
        }
    }

    pub fn get(&self, key: &str) -> Option<&V> {
        match self {
            ConfigObservation::Present { entries, .. } => entries.get(key),
            _ => None,
        }
    }

    /// The digest of a key whose value was copied from a Secret.
    pub fn from_secret(&self, key: &str) -> Option<&SecretDigest> {
        match self {
            ConfigObservation::Present { from_secrets, .. } => from_secrets.get(key),
            _ => None,
        }
    }

    /// Whether a key's value came from a Secret without the annotation naming it.
    pub fn unrecorded(&self, key: &str) -> bool {
        matches!(self, ConfigObservation::Present { unrecorded, .. } if unrecorded.contains(key))
    }

    pub fn entries(&self) -> Option<&BTreeMap<String, V>> {
        match self {
            ConfigObservation::Present { entries, .. } => Some(entries),
            _ => None,
        }
    }

    /// What a write must be conditional on.
    pub fn base(&self) -> ObjectBase {
        match self {
            ConfigObservation::Missing => ObjectBase::Absent,
            ConfigObservation::Present { resource_version, .. }
            | ConfigObservation::Malformed { resource_version, .. } => {
                ObjectBase::Version(resource_version.clone().unwrap_or_default())
            }
        }
    }
}

/// The state a write is based on: the object was absent (create it), or had this `resourceVersion`
/// (update it only if it still has).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", tag = "kind", content = "resourceVersion")]
pub enum ObjectBase {
    Absent,
    Version(String),
}

/// A keyed digest (HMAC-SHA256 with a per-process key) of a secret value. Only equality matters to the
/// machine; the value itself never leaves the observer.
#[derive(Serialize, Deserialize, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(transparent)]
pub struct SecretDigest(pub String);

impl fmt::Debug for SecretDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "digest:{}", self.0.get(..12).unwrap_or(&self.0))
    }
}

/// A Secret the blueprint references.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum ReferencedSecret {
    Missing,
    Present {
        keys: BTreeMap<String, SecretDigest>,
        /// Whether a blueprint may read it ([`crate::secret_access`]); none recorded: an `Opaque`
        /// Secret without labels (journals written before it was observed).
        #[serde(default, skip_serializing_if = "SecretTraits::is_default")]
        traits: SecretTraits,
    },
    /// It exists but does not fit the Secret type (its content is not described: it is sensitive).
    Unreadable,
}

/// A ConfigMap a `configRef` names.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum ReferencedConfigMap {
    Missing,
    Present {
        data: BTreeMap<String, String>,
    },
    /// It exists but does not fit the ConfigMap type.
    Unreadable,
    /// A config object holding values copied from Secrets (its annotation names them): not read, so
    /// that a `configRef` cannot copy them into plain view.
    HoldsSecretValues,
}

/// The descriptor lookup for one wanted dogu in one version.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DescriptorEntry {
    /// Qualified name, e.g. `official/redmine`.
    pub name: String,
    pub version: String,
    pub lookup: DescriptorLookup,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", tag = "result")]
pub enum DescriptorLookup {
    Found {
        // Shared: the operator's descriptor cache and every observation hold the same one (a
        // 1,000-dogu blueprint looks up 1,000 descriptors each reconcile).
        descriptor: Arc<DoguDescriptor>,
    },
    /// The registry has no such dogu or version.
    NotFound,
    /// The registry could not be asked (down, credentials, timeout) or no descriptors were given.
    Unavailable { reason: String },
}
