//! The names, labels and selectors of the objects the operator shares with the rest of the platform
//! (the dogu operator, the config registry, the component operator, kubectl users), in one place, so
//! that the machine, the shell and the sandbox cannot disagree about them.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

/// The field manager of every write, and the `app.kubernetes.io/managed-by` of the objects created.
pub const FIELD_MANAGER: &str = "k8s-blueprint-operator";

/// Whether a `managedFields` entry is the operator's write of an object's status.
pub fn own_status_write(entry: &ManagedFieldsEntry) -> bool {
    entry.manager.as_deref() == Some(FIELD_MANAGER) && entry.subresource.as_deref() == Some("status")
}

/// The newest of an object's `managedFields` entries that have a time; of entries of the same second,
/// another writer's before the operator's status write (so that a status edited by hand in the second
/// of the operator's write counts as the newer, D54, D58).
pub fn newest_write(entries: &[ManagedFieldsEntry]) -> Option<&ManagedFieldsEntry> {
    entries
        .iter()
        .filter(|entry| entry.time.is_some())
        .max_by(|a, b| a.time.cmp(&b.time).then_with(|| own_status_write(b).cmp(&own_status_write(a))))
}

/// The operator's own component, as a blueprint names it.
pub const OWN_COMPONENT: &str = "k8s/k8s-blueprint-operator";
/// The component that serves a CES platform's web traffic since the gateway release (Cloudogu's
/// operator requires it from v3.0 on); it reads no nginx-ingress annotations.
pub const GATEWAY_COMPONENT: &str = "k8s-ces-gateway";
/// The dogu config key of a dogu's log level (which the debug-mode operator changes while it is active).
pub const LOG_LEVEL_KEY: &str = "logging/root";
/// The name of the debug-mode operator's one `DebugMode` object.
pub const DEBUG_MODE: &str = "debug-mode";
/// The Lease of leader election.
pub const LEASE: &str = "k8s-blueprint-operator-leader";
/// The ConfigMap of the required components' health (it need not carry the registry labels).
pub const HEALTH_CONFIG: &str = "k8s-blueprint-operator-health-config";
/// The ConfigMap of global config.
pub const GLOBAL_CONFIG: &str = "global-config";

/// The ConfigMap (normal) or Secret (sensitive) of a dogu's config.
pub fn dogu_config(dogu: &str) -> String {
    format!("{}-config", dogu.to_lowercase())
}

/// The local dogu registry's ConfigMap of a dogu's descriptors (shared with the dogu operator).
pub fn local_registry(simple_name: &str) -> String {
    format!("dogu-spec-{simple_name}")
}

/// Labels, and the values the platform gives them.
pub mod label {
    pub const APP: &str = "app";
    pub const APP_CES: &str = "ces";
    /// What a config object holds: one of the `*_TYPE` values below.
    pub const CONFIG_TYPE: &str = "k8s.cloudogu.com/type";
    /// The dogu a config object belongs to.
    pub const DOGU: &str = "dogu.name";
    pub const GLOBAL_CONFIG_TYPE: &str = "global-config";
    pub const DOGU_CONFIG_TYPE: &str = "dogu-config";
    pub const SENSITIVE_CONFIG_TYPE: &str = "sensitive-config";
    pub const LOCAL_REGISTRY_TYPE: &str = "local-dogu-registry";
}

/// The selectors of the operator's watches.
pub mod selector {
    /// Global and dogu config, the local dogu registry.
    pub const CES_OBJECTS: &str = "app=ces";
    /// Sensitive dogu config.
    pub const SENSITIVE_CONFIG: &str = "k8s.cloudogu.com/type=sensitive-config";
    /// Every other ConfigMap (those without the label too): the metadata cache of the ConfigMaps
    /// `configRef`s may name holds only those the `CES_OBJECTS` cache does not.
    pub const NOT_CES_OBJECTS: &str = "app!=ces";
    /// Every other Secret: likewise for the metadata cache of the Secrets `secretRef`s may name.
    pub const NOT_SENSITIVE_CONFIG: &str = "k8s.cloudogu.com/type!=sensitive-config";

    /// The health config, by name.
    pub fn health_config() -> String {
        format!("metadata.name={}", super::HEALTH_CONFIG)
    }
}

/// The labels of a local dogu registry ConfigMap.
pub fn local_registry_labels(simple_name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (label::APP.to_owned(), label::APP_CES.to_owned()),
        (label::DOGU.to_owned(), simple_name.to_owned()),
        (label::CONFIG_TYPE.to_owned(), label::LOCAL_REGISTRY_TYPE.to_owned()),
    ])
}
