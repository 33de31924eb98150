//! Step 1, observe: the caches, the referenced Secrets (as digests) and ConfigMaps, the dogu descriptors
//! and the clock, into the machine's `Observation`. The Blueprint's reading says which of them.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Resource;
use kube::api::Api;

use blueprint_machine::Reading;
use blueprint_machine::api::{Blueprint, BlueprintMaskObject};
use blueprint_machine::observation::{DescriptorEntry, Observation, ReferencedSecret};

use super::{CACHE_WAIT, Context, ObserveError};
use crate::observe::decoded::{Decoded, Undecodable};
use crate::observe::referenced::Versions;
use crate::observe::{
    Snapshot, debug_mode_observation, is_health_config, referenced_config_map, referenced_secret, restore_observation,
};

/// The namespace's `BlueprintMask`s as cached: read before the Blueprint is (its mask reference needs
/// them), and observed with the rest.
pub(super) fn blueprint_masks(context: &Context) -> Vec<Arc<BlueprintMaskObject>> {
    objects(&context.stores.blueprint_masks.state())
}

pub(super) async fn observe(
    context: &Context,
    blueprint: Option<Arc<Blueprint>>,
    blueprint_masks: Vec<Arc<BlueprintMaskObject>>,
    reading: Option<&Reading<'_>>,
) -> Result<Observation, ObserveError> {
    tokio::time::timeout(CACHE_WAIT, context.stores.ready())
        .await
        .map_err(|_| ObserveError::CachesNotFilled(CACHE_WAIT))??;
    let stores = &context.stores;
    let blueprints = stores.blueprints.state();
    let dogus = stores.dogus.state();
    let components = stores.components.state();
    let config_maps = stores.config_maps.state();
    let health = stores.health_config.state();
    let sensitive = stores.sensitive_configs.state();
    let undecodable = undecodable("Dogu", &dogus)
        .chain(undecodable("Component", &components))
        .chain(undecodable("ConfigMap", &config_maps))
        .chain(undecodable("ConfigMap", &health))
        .chain(undecodable("Secret", &sensitive))
        .collect();

    let (referenced, referenced_config_maps) = match reading {
        Some(reading) => {
            let (namespace, digester) = (&context.namespace, &context.digester);
            let api = Api::<Decoded<Secret>>::namespaced(context.client.clone(), namespace);
            let versions = Versions { metadata: &stores.secret_metadata, whole: &stores.sensitive_configs, namespace };
            let secrets = context
                .secrets
                .observe(&reading.referenced_secrets(), versions, &api, |read| match read {
                    Some(Decoded::Undecodable(_)) => ReferencedSecret::Unreadable,
                    Some(Decoded::Object(secret)) => referenced_secret(Some(secret), digester),
                    None => referenced_secret(None, digester),
                })
                .await
                .map_err(ObserveError::ReadSecret)?;
            let api = Api::<Decoded<ConfigMap>>::namespaced(context.client.clone(), namespace);
            let names = reading.referenced_config_maps();
            let versions = Versions { metadata: &stores.config_map_metadata, whole: &stores.config_maps, namespace };
            let config_maps = context
                .config_maps
                .observe(&names, versions, &api, referenced_config_map)
                .await
                .map_err(ObserveError::ReadConfigMap)?;
            (secrets, config_maps)
        }
        None => Default::default(),
    };
    // Concurrently: on a fresh install every wanted descriptor may need the remote registry.
    let wanted = reading.map(Reading::wanted_descriptors).unwrap_or_default();
    context.descriptors.expect_lookups(wanted.len());
    let descriptors = futures::future::join_all(wanted.into_iter().map(|(name, version)| async move {
        let lookup = context.descriptors.lookup(&name, &version).await;
        DescriptorEntry { name, version, lookup }
    }))
    .await;
    let own_name = blueprint.as_deref().and_then(|b| b.metadata.name.clone());
    let other_blueprints = blueprints
        .iter()
        .filter_map(|b| b.meta().name.clone())
        .filter(|other| Some(other) != own_name.as_ref())
        .collect();
    let reconcile_request = blueprint.as_deref().and_then(|b| context.handled_requests.observe(b));
    let snapshot = Snapshot {
        now: context.now(),
        operator: context.identity.facts(&context.namespace),
        blueprint,
        blueprint_masks,
        blueprint_count: blueprints.len(),
        other_blueprints,
        dogus: objects(&dogus),
        components: objects(&components),
        config_maps: config_maps
            .iter()
            .filter_map(|c| c.object())
            .map(AsRef::as_ref)
            .filter(|c| !is_health_config(c))
            .chain(health.iter().filter_map(|c| c.object()).map(AsRef::as_ref))
            .collect(),
        secrets: sensitive.iter().filter_map(|s| s.object()).map(AsRef::as_ref).collect(),
        undecodable,
        referenced_secrets: Some(referenced),
        referenced_config_maps: Some(referenced_config_maps),
        keys_filled_from_secrets: Some(reading.map(Reading::keys_filled_from_secrets).unwrap_or_default()),
        descriptors,
        debug_mode: stores.debug_modes.state().iter().find_map(|d| debug_mode_observation(d)),
        restores: stores.restores.state().iter().map(|r| restore_observation(r)).collect(),
    };
    Ok(Observation { reconcile_request, ..snapshot.observe(&context.digester, &context.kept_configs) })
}

/// The decoded objects of a cache, shared with it.
fn objects<K>(cached: &[Arc<Decoded<K>>]) -> Vec<Arc<K>> {
    cached.iter().filter_map(|d| d.object().cloned()).collect()
}

/// The objects of a cache that do not fit their type, with their kind.
fn undecodable<'a, K>(
    kind: &'static str,
    cached: &'a [Arc<Decoded<K>>],
) -> impl Iterator<Item = (&'static str, &'a Undecodable)> {
    cached.iter().filter_map(move |d| d.undecodable().map(|u| (kind, u)))
}
