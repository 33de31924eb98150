//! `plan` against a live cluster: the objects one reconcile observes, read once through the kubeconfig
//! with GET and LIST only (nothing is written: a plan is `kubectl diff`, not `kubectl apply`), then the
//! same plan as from a snapshot. Secrets are read by the same selectors as the controller's (the
//! sensitive-config label, the Blueprint's references by name) and digested on the way in.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams};

use blueprint_machine::api::{Blueprint, BlueprintMaskObject, Component, Dogu};
use blueprint_machine::conversion::{ApiVersion, convert};
use blueprint_machine::naming::selector;
use blueprint_machine::observation::DescriptorLookup;

use super::input::{self, ClusterObjects, InputError};
use super::{PlanArgs, PlanOutput, namespace_of, plan};
use crate::config::SettingsError;
use crate::descriptors::{RegistrySettingsError, RemoteError, RemoteRegistry};
use crate::kubeconfig::NamespacedKind;
use crate::observe::decoded::{Decoded, Undecodable};

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("no cluster to read (give --cluster FILE for a snapshot): {0}")]
    Kubeconfig(String),
    #[error("cannot read {what} in namespace {namespace:?}: {source}")]
    Read { what: &'static str, namespace: String, source: kube::Error },
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Registry(#[from] RegistrySettingsError),
    #[error("{0}")]
    NoBlueprint(String),
    #[error(
        "the cluster serves no Blueprints (no blueprints.k8s.cloudogu.com in v3, v2 or v1): is the Blueprint CRD installed?"
    )]
    NoCrd,
}

/// The plan for the cluster of the kubeconfig (its current context, or `args.context`).
pub async fn run(args: &PlanArgs) -> Result<PlanOutput, LiveError> {
    let file = args.blueprint.as_deref().map(input::read_blueprint).transpose()?;
    let (client, default_namespace) =
        crate::kubeconfig::client(args.context.as_deref()).await.map_err(LiveError::Kubeconfig)?;
    let namespace = match &file {
        Some(blueprint) => namespace_of(args, blueprint, &default_namespace),
        None => args.namespace.clone().unwrap_or(default_namespace),
    };
    let mut undecodable = Vec::new();
    let (stored, served) = stored_blueprints(&client, &namespace, &mut undecodable).await?;
    let count = stored.len();
    let blueprint = match file {
        Some(blueprint) => blueprint,
        None => super::only_blueprint(stored.clone(), &namespace, "the cluster").map_err(LiveError::NoBlueprint)?,
    };
    let mut cluster = read(&client, &namespace, &blueprint).await?;
    cluster.blueprints = stored;
    cluster.undecodable.extend(undecodable);

    let wanted = blueprint_machine::Reading::of(&blueprint, &cluster.masks_in(&namespace)).wanted_descriptors();
    let config_maps: Vec<&ConfigMap> = cluster.config_maps.iter().collect();
    let mut descriptors = input::read_descriptors(&config_maps, args.descriptors.as_deref(), &wanted)?;
    // Descriptors the local dogu registry lacks come from the remote one, as the controller's do (read
    // only: the controller would add them to the local registry, a plan does not).
    if let Some(settings) = crate::config::remote_registry_from_env()? {
        let remote = RemoteRegistry::new(&settings)?;
        for entry in descriptors.iter_mut().filter(|e| !matches!(e.lookup, DescriptorLookup::Found { .. })) {
            entry.lookup = match remote.fetch(&entry.name, &entry.version).await {
                Ok(fetched) => DescriptorLookup::Found { descriptor: Arc::new(fetched.descriptor) },
                Err(RemoteError::NotFound { .. }) => DescriptorLookup::NotFound,
                Err(error) => DescriptorLookup::Unavailable { reason: error.to_string() },
            };
        }
    }
    let mut output = plan(args, blueprint, &cluster, descriptors, &namespace);
    output.notes.push(format!(
        "read {count} Blueprint(s) of namespace {namespace:?} as {}/{} (the newest version the cluster serves)",
        GROUP,
        served.as_str()
    ));
    Ok(output)
}

const GROUP: &str = "k8s.cloudogu.com";

/// The namespace's Blueprints in the newest version the cluster serves (v3, else v2, else v1: the CRD
/// of whichever operator era is installed), converted to v3 as the webhook would. A Blueprint that does
/// not convert is kept in `undecodable`, as the caches keep it.
async fn stored_blueprints(
    client: &kube::Client,
    namespace: &str,
    undecodable: &mut Vec<(&'static str, Arc<Undecodable>)>,
) -> Result<(Vec<Blueprint>, ApiVersion), LiveError> {
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
    let error = |source| LiveError::Read { what: "Blueprint", namespace: namespace.to_owned(), source };
    for version in [ApiVersion::V3, ApiVersion::V2, ApiVersion::V1] {
        let gvk = GroupVersionKind::gvk(GROUP, version.as_str(), "Blueprint");
        let resource = ApiResource::from_gvk_with_plural(&gvk, "blueprints");
        let api = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource);
        let listed = match api.list(&ListParams::default()).await {
            Ok(listed) => listed,
            // Not served in this version (the CRD of another era), or no Blueprint CRD at all.
            Err(kube::Error::Api(status)) if status.code == 404 => continue,
            Err(other) => return Err(error(other)),
        };
        let mut blueprints = Vec::new();
        for mut item in listed.items {
            item.types.get_or_insert_with(|| kube::api::TypeMeta {
                api_version: resource.api_version.clone(),
                kind: "Blueprint".into(),
            });
            let metadata = item.metadata.clone();
            let read = serde_json::to_value(&item)
                .map_err(|e| e.to_string())
                .and_then(|value| convert(&value, ApiVersion::V3).map_err(|e| e.to_string()))
                .and_then(|v3| serde_json::from_value::<Blueprint>(v3).map_err(|e| e.to_string()));
            match read {
                Ok(blueprint) => blueprints.push(blueprint),
                Err(problem) => undecodable.push(("Blueprint", Arc::new(Undecodable { metadata, problem }))),
            }
        }
        return Ok((blueprints, version));
    }
    Err(LiveError::NoCrd)
}

/// What the controller's caches hold for `namespace`, listed once.
async fn read(client: &kube::Client, namespace: &str, blueprint: &Blueprint) -> Result<ClusterObjects, LiveError> {
    let mut objects = ClusterObjects::default();
    let all = ListParams::default();
    // The Go operator 2.x's cluster has no BlueprintMask CRD: no masks.
    objects.blueprint_masks =
        match list::<BlueprintMaskObject>(client, namespace, "BlueprintMask", &all, &mut objects.undecodable).await {
            Err(LiveError::Read { source: kube::Error::Api(status), .. }) if status.code == 404 => Vec::new(),
            other => other?,
        };
    objects.dogus = list::<Dogu>(client, namespace, "Dogu", &all, &mut objects.undecodable).await?;
    objects.components = list::<Component>(client, namespace, "Component", &all, &mut objects.undecodable).await?;
    let ces = ListParams::default().labels(selector::CES_OBJECTS);
    objects.config_maps = list::<ConfigMap>(client, namespace, "ConfigMap", &ces, &mut objects.undecodable).await?;
    let health = ListParams::default().fields(&selector::health_config());
    objects
        .config_maps
        .extend(list::<ConfigMap>(client, namespace, "ConfigMap", &health, &mut objects.undecodable).await?);
    let sensitive = ListParams::default().labels(selector::SENSITIVE_CONFIG);
    objects.secrets = list::<Secret>(client, namespace, "Secret", &sensitive, &mut objects.undecodable).await?;
    // The Secrets and ConfigMaps the Blueprint references, by name (a missing one is the reconcile's
    // finding): any object of the namespace, labelled or not.
    let reading = blueprint_machine::Reading::of(blueprint, &objects.masks_in(namespace));
    let (secrets, config_maps) = (reading.referenced_secrets(), reading.referenced_config_maps());
    get_missing(client, namespace, "Secret", secrets, &mut objects.secrets, &mut objects.undecodable).await?;
    get_missing(client, namespace, "ConfigMap", config_maps, &mut objects.config_maps, &mut objects.undecodable)
        .await?;
    Ok(objects)
}

/// GETs each of `names` that `listed` lacks and adds it there (or to `undecodable`); a missing one
/// is left missing.
async fn get_missing<K: NamespacedKind>(
    client: &kube::Client,
    namespace: &str,
    what: &'static str,
    names: std::collections::BTreeSet<String>,
    listed: &mut Vec<K>,
    undecodable: &mut Vec<(&'static str, Arc<Undecodable>)>,
) -> Result<(), LiveError> {
    let api = Api::<Decoded<K>>::namespaced(client.clone(), namespace);
    for name in names {
        if listed.iter().any(|o| o.meta().name.as_deref() == Some(name.as_str())) {
            continue;
        }
        let read = api.get_opt(&name).await;
        match read.map_err(|source| LiveError::Read { what, namespace: namespace.to_owned(), source })? {
            Some(Decoded::Object(object)) => listed.push(Arc::unwrap_or_clone(object)),
            Some(Decoded::Undecodable(unfit)) => undecodable.push((what, unfit)),
            None => {}
        }
    }
    Ok(())
}

/// One LIST of `what`; the objects that do not fit their type are kept in `undecodable`.
async fn list<K: NamespacedKind>(
    client: &kube::Client,
    namespace: &str,
    what: &'static str,
    params: &ListParams,
    undecodable: &mut Vec<(&'static str, Arc<Undecodable>)>,
) -> Result<Vec<K>, LiveError> {
    let (objects, unfit) = crate::kubeconfig::list::<K>(client, namespace, params)
        .await
        .map_err(|source| LiveError::Read { what, namespace: namespace.to_owned(), source })?;
    undecodable.extend(unfit.into_iter().map(|problem| (what, problem)));
    Ok(objects)
}
