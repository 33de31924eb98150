//! The local dogu registry: one ConfigMap `dogu-spec-<dogu>` per dogu, one data key per version, the
//! whole `dogu.json` as the value. Shared with the dogu operator (same format), so descriptors of
//! installed dogus are usually there already. Reads come from the controller's ConfigMap cache (no
//! request); a descriptor fetched from the remote registry is added, never overwriting a version.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};

use crate::observe::decoded::Decoded;
use serde_json::json;

use blueprint_machine::descriptor::DoguDescriptor;
use blueprint_machine::naming::{self, FIELD_MANAGER};

/// How often an add re-reads the ConfigMap after a conflict before giving up (the write is only a
/// cache fill: the next lookup tries again).
const ADD_ATTEMPTS: usize = 3;

/// What an add did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Added {
    Created,
    Patched,
    /// The version key was there already (possibly written by the dogu operator meanwhile).
    AlreadyPresent,
}

impl std::fmt::Display for Added {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Added::Created => "created",
            Added::Patched => "added",
            Added::AlreadyPresent => "already present",
        })
    }
}

pub struct LocalStore {
    config_maps: Store<Decoded<ConfigMap>>,
    api: Api<ConfigMap>,
    namespace: String,
}

pub fn config_map_name(qualified_name: &str) -> String {
    naming::local_registry(simple_name(qualified_name))
}

fn simple_name(qualified_name: &str) -> &str {
    qualified_name.rsplit('/').next().unwrap_or(qualified_name)
}

/// The descriptor of `name` (qualified) in `version` if `config_map` is its local registry ConfigMap
/// and holds it (`plan` reads the same ConfigMaps from a snapshot or a live cluster).
pub fn descriptor_in(config_map: &ConfigMap, name: &str, version: &str) -> Option<DoguDescriptor> {
    if config_map.metadata.name.as_deref() != Some(config_map_name(name).as_str()) {
        return None;
    }
    let text = config_map.data.as_ref()?.get(version)?;
    let descriptor: DoguDescriptor = serde_json::from_str(text).ok()?;
    // The store is keyed by simple name: a descriptor of another namespace is not this dogu's.
    (descriptor.name == name && descriptor.version == version).then_some(descriptor)
}

impl LocalStore {
    pub fn new(config_maps: Store<Decoded<ConfigMap>>, api: Api<ConfigMap>, namespace: impl Into<String>) -> Self {
        LocalStore { config_maps, api, namespace: namespace.into() }
    }

    fn cached(&self, qualified_name: &str) -> Option<std::sync::Arc<ConfigMap>> {
        self.config_maps
            .get(&ObjectRef::new(&config_map_name(qualified_name)).within(&self.namespace))
            .and_then(|decoded| decoded.object().cloned())
    }

    /// The descriptor if the store has it for exactly this qualified name and version.
    pub fn get(&self, name: &str, version: &str) -> Option<DoguDescriptor> {
        descriptor_in(&*self.cached(name)?, name, version)
    }

    /// Adds `text` (the descriptor's `dogu.json`) under the descriptor's version, unless that key exists.
    /// Optimistic concurrency: a create that finds the ConfigMap, or a patch on a changed one, re-reads
    /// it and tries again.
    pub async fn add(&self, descriptor: &DoguDescriptor, text: &str) -> Result<Added, kube::Error> {
        let name = config_map_name(&descriptor.name);
        let mut current = self.cached(&descriptor.name).map(|c| (*c).clone());
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = match &current {
                None => self.create(&name, descriptor, text).await.map(|_| Added::Created),
                Some(existing) if existing.data.as_ref().is_some_and(|d| d.contains_key(&descriptor.version)) => {
                    return Ok(Added::AlreadyPresent);
                }
                Some(existing) => {
                    // The resourceVersion makes the patch conditional: no concurrent key is lost.
                    let patch = json!({
                        "metadata": {"resourceVersion": existing.metadata.resource_version},
                        "data": {descriptor.version.as_str(): text},
                    });
                    let params = PatchParams { field_manager: Some(FIELD_MANAGER.to_owned()), ..Default::default() };
                    self.api.patch(&name, &params, &Patch::Merge(&patch)).await.map(|_| Added::Patched)
                }
            };
            match result {
                Ok(added) => return Ok(added),
                Err(kube::Error::Api(status))
                    if (status.code == 409 || status.code == 404) && attempt < ADD_ATTEMPTS =>
                {
                    current = self.api.get_opt(&name).await?;
                }
                Err(error) => return Err(error),
            }
        }
    }

    async fn create(&self, name: &str, descriptor: &DoguDescriptor, text: &str) -> Result<ConfigMap, kube::Error> {
        let simple = simple_name(&descriptor.name).to_owned();
        let labels = naming::local_registry_labels(&simple);
        let config_map = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some(self.namespace.clone()),
                labels: Some(labels),
                ..Default::default()
            },
            data: Some(BTreeMap::from([(descriptor.version.clone(), text.to_owned())])),
            ..Default::default()
        };
        let params = PostParams { field_manager: Some(FIELD_MANAGER.to_owned()), ..Default::default() };
        self.api.create(&params, &config_map).await
    }
}
