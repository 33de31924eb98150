//! `blueprint-operator run`: the kube-runtime `Controller` on Blueprints, with reflector caches of
//! everything a reconcile observes, each change of which triggers a (debounced) reconcile.

pub mod backoff;
pub mod context;

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::{FutureExt, Stream, StreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, predicates, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tracing::Instrument;

use blueprint_machine::api::{Blueprint, Component, Dogu};
use blueprint_machine::health::HEALTH_CONFIG_MAP;

pub use context::{Context, Outcome, StatusWrite, Stores};

use crate::journal::JournalWriter;
use crate::metrics::Metrics;
use crate::observe::config_kind;
use crate::registry::{CacheSettings, LocalStore, Registry, RemoteRegistry};

/// What a controller needs besides its client.
pub struct Options {
    pub namespace: String,
    pub operator_version: String,
    pub debounce: Duration,
    /// The remote dogu registry, asked when the local one lacks a descriptor.
    pub registry: Option<RemoteRegistry>,
    pub descriptor_cache: CacheSettings,
    /// Record every reconcile here.
    pub journal: Option<Arc<JournalWriter>>,
    /// The clock of observations; default: the wall clock.
    pub clock: Option<Arc<dyn Fn() -> k8s_openapi::jiff::Timestamp + Send + Sync>>,
}

type Trigger<K> = std::pin::Pin<Box<dyn Stream<Item = Result<K, watcher::Error>> + Send>>;

/// Keeps of an object's `managedFields` only the newest time (a config object's "last updated", see
/// `observe`). The field sets (`fieldsV1`) are most of a cached object's memory and are never read.
pub fn slim(meta: &mut ObjectMeta) {
    let Some(entries) = meta.managed_fields.as_mut() else { return };
    let newest = entries.iter().filter_map(|entry| entry.time.clone()).max();
    *entries =
        newest.map(|time| vec![ManagedFieldsEntry { time: Some(time), ..Default::default() }]).unwrap_or_default();
}

/// The watch events of `api`, their objects slimmed before any cache keeps them.
fn slim_watcher<K>(api: Api<K>, config: watcher::Config) -> impl Stream<Item = watcher::Result<watcher::Event<K>>>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    watcher(api, config).modify(|object| slim(object.meta_mut()))
}

/// A reflector store of `api`, and the stream of changes that keeps it current (it must be polled).
fn reflect<K>(api: Api<K>, config: watcher::Config) -> (Store<K>, Trigger<K>)
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(writer, slim_watcher(api, config)).default_backoff().touched_objects();
    (reader, Box::pin(stream))
}

/// How long in-flight reconciles may take to finish once a shutdown began (less than Kubernetes'
/// default grace period of 30 s, which also has to cover releasing the Lease). kube-runtime's
/// controller does not end before its Blueprint cache is filled, and a reconcile waits for the caches:
/// without this bound a shutdown while the API server cannot be listed would never end.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(20);

/// Runs the controller until `shutdown` resolves; in-flight reconciles finish first, for at most
/// [`SHUTDOWN_GRACE`].
pub async fn run_controller(
    client: Client,
    options: Options,
    metrics: Arc<Metrics>,
    ready: Arc<AtomicBool>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let namespace = options.namespace.clone();
    let (c, ns) = (client.clone(), namespace.clone());

    // The main stream: Blueprints. Status-only updates (our own writes) do not trigger.
    let (blueprint_reader, blueprint_writer) = reflector::store::<Blueprint>();
    let blueprints = reflector::reflector(
        blueprint_writer,
        slim_watcher(Api::<Blueprint>::namespaced(c.clone(), &ns), watcher::Config::default()),
    )
    .default_backoff()
    .applied_objects()
    .predicate_filter(predicates::generation, Default::default());

    let (dogus, dogu_changes) = reflect(Api::<Dogu>::namespaced(c.clone(), &ns), watcher::Config::default());
    let (components, component_changes) =
        reflect(Api::<Component>::namespaced(c.clone(), &ns), watcher::Config::default());
    let (config_maps, config_map_changes) =
        reflect(Api::<ConfigMap>::namespaced(c.clone(), &ns), watcher::Config::default().labels("app=ces"));
    let (health_config, health_changes) = reflect(
        Api::<ConfigMap>::namespaced(c.clone(), &ns),
        watcher::Config::default().fields(&format!("metadata.name={HEALTH_CONFIG_MAP}")),
    );
    let (sensitive_configs, sensitive_changes) = reflect(
        Api::<Secret>::namespaced(c.clone(), &ns),
        watcher::Config::default().labels("k8s.cloudogu.com/type=sensitive-config"),
    );
    // Metadata only: a referenced Secret's change is noticed without caching any Secret's data.
    let (secret_metadata, secret_changes) =
        reflect(Api::<PartialObjectMeta<Secret>>::namespaced(c.clone(), &ns), watcher::Config::default());

    let stores = Stores {
        blueprints: blueprint_reader.clone(),
        dogus,
        components,
        config_maps: config_maps.clone(),
        health_config,
        sensitive_configs,
        secret_metadata,
    };
    let local = LocalStore::new(config_maps, Api::namespaced(client.clone(), &namespace), namespace.clone());
    let descriptors = Arc::new(Registry::new(local, options.registry, options.descriptor_cache, metrics.clone()));
    let mut context = Context::new(client, namespace, options.operator_version, stores.clone(), descriptors, metrics)
        .with_journal(options.journal);
    if let Some(clock) = options.clock {
        context = context.with_clock(move || clock());
    }
    let context = Arc::new(context);
    let in_flight = context.in_flight.clone();

    // Ready once every cache has listed its objects.
    tokio::spawn({
        let stores = stores.clone();
        async move {
            if stores.ready().await.is_ok() {
                ready.store(true, Ordering::Relaxed);
                tracing::info!("caches synced");
            }
        }
    });

    let every_blueprint = {
        let reader = blueprint_reader.clone();
        move || reader.state().iter().map(|b| ObjectRef::from_obj(b.as_ref())).collect::<Vec<_>>()
    };
    let on_change = {
        let every = every_blueprint.clone();
        move |_: Dogu| every()
    };
    let on_component = {
        let every = every_blueprint.clone();
        move |_: Component| every()
    };
    // Only config ConfigMaps trigger: the local dogu registry's (also `app=ces`) change when
    // descriptors are cached, which changes no decision.
    let on_config_map = {
        let every = every_blueprint.clone();
        move |config_map: ConfigMap| {
            if config_kind(&config_map.metadata).is_some() { every() } else { Vec::new() }
        }
    };
    let on_health = {
        let every = every_blueprint.clone();
        move |_: ConfigMap| every()
    };
    let on_sensitive = {
        let every = every_blueprint.clone();
        move |_: Secret| every()
    };
    // A Secret triggers only the Blueprints that reference it.
    let on_secret = {
        let reader = blueprint_reader.clone();
        move |secret: PartialObjectMeta<Secret>| {
            let name = secret.name_any();
            reader
                .state()
                .iter()
                .filter(|b| blueprint_machine::referenced_secrets(b).contains(&name))
                .map(|b| ObjectRef::from_obj(b.as_ref()))
                .collect::<Vec<_>>()
        }
    };

    let shutdown = shutdown.shared();
    let controller = Controller::for_stream(blueprints, blueprint_reader)
        .with_config(ControllerConfig::default().debounce(options.debounce))
        .watches_stream(dogu_changes, on_change)
        .watches_stream(component_changes, on_component)
        .watches_stream(config_map_changes, on_config_map)
        .watches_stream(health_changes, on_health)
        .watches_stream(sensitive_changes, on_sensitive)
        .watches_stream(secret_changes, on_secret)
        .graceful_shutdown_on(shutdown.clone())
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "controller event");
            }
        });
    // Once the shutdown began: stop when no reconcile is in flight, or after the grace period.
    let deadline = async move {
        shutdown.await;
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, in_flight.idle()).await;
    };
    tokio::select! {
        () = controller => {}
        () = deadline => tracing::warn!(
            grace = ?SHUTDOWN_GRACE,
            "in-flight reconciles did not finish within the shutdown grace period: stopping without them"
        ),
    }
}

async fn reconcile(blueprint: Arc<Blueprint>, context: Arc<Context>) -> Result<Action, Infallible> {
    let name = blueprint.name_any();
    let span = tracing::info_span!(
        "reconcile",
        blueprint = %name,
        generation = blueprint.metadata.generation.unwrap_or_default(),
        state = tracing::field::Empty,
        actions = tracing::field::Empty,
        status = tracing::field::Empty,
    );
    async move {
        let _busy = context.in_flight.enter();
        let outcome = context.reconcile(&name).await;
        let span = tracing::Span::current();
        if let Some(decision) = outcome.final_decision() {
            span.record("state", tracing::field::display(decision.state));
            span.record("actions", outcome.performed);
        }
        span.record("status", tracing::field::debug(&outcome.status));
        tracing::info!(requeue = ?outcome.requeue, "reconciled");
        Ok(outcome.requeue)
    }
    .instrument(span)
    .await
}

fn error_policy(_: Arc<Blueprint>, _: &Infallible, _: Arc<Context>) -> Action {
    Action::requeue(Duration::from_secs(1))
}
