//! The controller's caches: one reflector store per watched kind, objects decoded one by one
//! ([`Decoded`]) and slimmed before they are kept.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::Store;

use blueprint_machine::api::{Blueprint, Component, Dogu};

use crate::observe::decoded::Decoded;

/// The caches a reconcile observes.
#[derive(Clone)]
pub struct Stores {
    pub blueprints: Store<Decoded<Blueprint>>,
    pub dogus: Store<Decoded<Dogu>>,
    pub components: Store<Decoded<Component>>,
    /// ConfigMaps labelled `app=ces`: global and dogu config, the local dogu registry.
    pub config_maps: Store<Decoded<ConfigMap>>,
    /// The health config ConfigMap (selected by name: it need not carry the registry labels).
    pub health_config: Store<Decoded<ConfigMap>>,
    /// Secrets labelled `k8s.cloudogu.com/type=sensitive-config`.
    pub sensitive_configs: Store<Decoded<Secret>>,
    /// Every Secret's metadata (no data): to notice changes of referenced Secrets.
    pub secret_metadata: Store<PartialObjectMeta<Secret>>,
}

/// A cache stopped before it was filled (its watch ended).
#[derive(Debug, thiserror::Error)]
#[error("the caches stopped before they were filled")]
pub struct CachesStopped;

impl Stores {
    /// Resolves once every cache has listed its objects (at once after that): the Blueprints' watch can
    /// start reconciles before the other caches are filled, and deciding on an empty cache of Dogus
    /// would mean deciding on a cluster without them.
    pub async fn ready(&self) -> Result<(), CachesStopped> {
        let result = futures::try_join!(
            self.blueprints.wait_until_ready(),
            self.dogus.wait_until_ready(),
            self.components.wait_until_ready(),
            self.config_maps.wait_until_ready(),
            self.health_config.wait_until_ready(),
            self.sensitive_configs.wait_until_ready(),
            self.secret_metadata.wait_until_ready(),
        );
        result.map(|_| ()).map_err(|_| CachesStopped)
    }
}

/// Keeps of an object's `managedFields` only the newest time (a config object's "last updated", see
/// `observe`). The field sets (`fieldsV1`) are most of a cached object's memory and are never read.
pub fn slim(meta: &mut ObjectMeta) {
    let Some(entries) = meta.managed_fields.as_mut() else { return };
    let newest = entries.iter().filter_map(|entry| entry.time.clone()).max();
    *entries =
        newest.map(|time| vec![ManagedFieldsEntry { time: Some(time), ..Default::default() }]).unwrap_or_default();
}
