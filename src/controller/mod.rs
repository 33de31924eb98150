//! `blueprint-operator run`: the kube-runtime `Controller` on Blueprints, with reflector caches of
//! everything a reconcile observes, each change of which triggers a (debounced) reconcile.

pub mod debounce;
pub mod initial_lists;
pub mod started;
pub mod triggers;

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, Stream, StreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DynamicObject};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tracing::Instrument;

use blueprint_machine::api::{Blueprint, BlueprintMaskObject, Component, Dogu};
use blueprint_machine::naming::selector;

pub use debounce::Debounce;
pub use initial_lists::InitialLists;
pub use started::Started;

use debounce::Debounced;
use started::OwnKind;
use triggers::{Events, Targets};

use crate::caches::{Filled, Kept, Stores, names_and_versions, slim, slim_blueprint};
use crate::descriptors::{CacheSettings, LocalStore, Registry, RemoteRegistry};
use crate::identity::OperatorIdentity;
use crate::journal::{JournalWriter, Record};
use crate::metrics::Metrics;
use crate::observe::decoded::Decoded;
use crate::observe::shared_parts::SharedParts;
use crate::reconcile::Context;
use crate::reconcile::Detail;
use crate::status::StatusWrite;

/// What a controller needs besides its client.
pub struct Options {
    pub namespace: String,
    pub identity: OperatorIdentity,
    pub debounce: Debounce,
    /// The remote dogu registry, asked when the local one lacks a descriptor.
    pub registry: Option<RemoteRegistry>,
    pub descriptor_cache: CacheSettings,
    /// Record every reconcile here.
    pub journal: Option<Arc<JournalWriter>>,
    /// The clock of observations; default: the wall clock.
    pub clock: Option<Arc<dyn Fn() -> k8s_openapi::jiff::Timestamp + Send + Sync>>,
}

/// What a cache keeps of each object's metadata.
#[derive(Clone, Copy, Debug)]
enum Trim {
    /// All of it but the `managedFields` (see [`slim`]).
    Slim,
    /// That, without the uid, and of the labels and annotations only those listed (see [`Kept::apply`]).
    Keeping(Kept),
}

impl Trim {
    fn apply(self, meta: &mut kube::api::ObjectMeta) {
        match self {
            Trim::Slim => slim(meta),
            Trim::Keeping(kept) => kept.apply(meta),
        }
    }
}

/// The watch events of `api`, their objects' metadata trimmed before any cache keeps them.
fn trimmed_watcher<K>(
    lists: &InitialLists,
    api: Api<K>,
    config: watcher::Config,
    trim: Trim,
) -> impl Stream<Item = watcher::Result<watcher::Event<K>>> + use<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    lists.watch(api, config).modify(move |object| trim.apply(object.meta_mut()))
}

/// A reflector store of another operator's kind and its watch events, if the kind is served; else an
/// empty store and no events.
fn reflect_other(
    lists: &InitialLists,
    client: &Client,
    namespace: &str,
    resource: Option<kube::api::ApiResource>,
    kind: &str,
) -> (Store<DynamicObject>, Option<Events<DynamicObject>>) {
    let Some(resource) = resource else { return (crate::other_operators::none(kind), None) };
    let writer = reflector::store::Writer::new(resource.clone());
    let reader = writer.as_reader();
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource);
    let events = lists.watch(api, watcher::Config::default()).modify(|object| slim(&mut object.metadata));
    (reader, Some(reflector::reflector(writer, events).default_backoff().boxed()))
}

/// A reflector store of `api`, and the stream of its watch events that keeps it current (it must be
/// polled), its objects' metadata trimmed by `trim`.
fn reflect<K>(lists: &InitialLists, api: Api<K>, config: watcher::Config, trim: Trim) -> (Store<K>, Events<K>)
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(writer, trimmed_watcher(lists, api, config, trim)).default_backoff();
    (reader, stream.boxed())
}

/// The Blueprints' reflector store and its watch events: slimmed ([`slim_blueprint`]), and each event's
/// spec and effective blueprint shared with the previous event's where equal ([`SharedParts`]).
fn reflect_blueprints(
    lists: &InitialLists,
    api: Api<Decoded<Blueprint>>,
) -> (Store<Decoded<Blueprint>>, Events<Decoded<Blueprint>>) {
    let (reader, writer) = reflector::store();
    let mut shared = SharedParts::default();
    let events = lists.watch(api, watcher::Config::default()).modify(move |blueprint| {
        slim_blueprint(blueprint.meta_mut());
        shared.share(blueprint);
    });
    (reader, reflector::reflector(writer, events).default_backoff().boxed())
}

/// A reflector store of the metadata of the objects of `api`'s kind that `labels` selects, and its
/// watch events: only metadata crosses the wire (kube asks for `as=PartialObjectMetadata` for
/// `PartialObjectMeta`: never a Secret's data), listed a page of [`METADATA_PAGE`] objects at a time,
/// and of the metadata only names and versions are kept.
fn reflect_metadata<K>(
    lists: &InitialLists,
    api: Api<PartialObjectMeta<K>>,
    labels: &str,
) -> (Store<PartialObjectMeta<K>>, Events<PartialObjectMeta<K>>)
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (reader, writer) = reflector::store();
    let config = watcher::Config::default().labels(labels).page_size(METADATA_PAGE);
    let events = lists.watch(api, config).modify(|object| {
        // Every object's `apiVersion` and `kind`: the same two strings, held once per object.
        object.types = None;
        names_and_versions(&mut object.metadata);
    });
    (reader, reflector::reflector(writer, events).default_backoff().boxed())
}

/// How many objects one list of the metadata caches asks for, where the API server refuses streaming
/// lists (see [`initial_lists`]; a streaming list sends one object per watch event). Any Secret or
/// ConfigMap of the namespace is listed, with annotations of up to 256 KiB each (the API server's
/// bound) until they are dropped: a page is held whole while it is read and decoded (kube holds a
/// response twice, then decodes it), so its size bounds that memory whatever the number of objects
/// (10 objects: at most 2.5 MiB of annotations, some 8 MiB while read; measured with 175 KiB each,
/// tests/cluster/caches.rs), at a list request per 10 objects at the start and at each relist.
pub const METADATA_PAGE: u32 = 10;

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
    started: Arc<Started>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let namespace = options.namespace.clone();
    let (c, ns) = (client.clone(), namespace.clone());
    let shutdown = shutdown.shared();
    let lists = InitialLists::default();
    // Dogus and Components without labels and annotations: none is read.
    let unlabelled = Trim::Keeping(Kept::NOTHING);

    let (blueprint_reader, blueprint_changes) = reflect_blueprints(&lists, Api::namespaced(c.clone(), &ns));
    let (dogus, dogu_changes) =
        reflect(&lists, Api::<Decoded<Dogu>>::namespaced(c.clone(), &ns), watcher::Config::default(), unlabelled);
    let (components, component_changes) =
        reflect(&lists, Api::<Decoded<Component>>::namespaced(c.clone(), &ns), watcher::Config::default(), unlabelled);
    let config_objects = Trim::Keeping(Kept::CONFIG_OBJECTS);
    let (config_maps, config_map_changes) = reflect(
        &lists,
        Api::<Decoded<ConfigMap>>::namespaced(c.clone(), &ns),
        watcher::Config::default().labels(selector::CES_OBJECTS),
        config_objects,
    );
    let (health_config, health_changes) = reflect(
        &lists,
        Api::<Decoded<ConfigMap>>::namespaced(c.clone(), &ns),
        watcher::Config::default().fields(&selector::health_config()),
        config_objects,
    );
    let (sensitive_configs, sensitive_changes) = reflect(
        &lists,
        Api::<Decoded<Secret>>::namespaced(c.clone(), &ns),
        watcher::Config::default().labels(selector::SENSITIVE_CONFIG),
        config_objects,
    );
    let (blueprint_masks, mask_changes) = reflect(
        &lists,
        Api::<Decoded<BlueprintMaskObject>>::namespaced(c.clone(), &ns),
        watcher::Config::default(),
        Trim::Slim,
    );
    // Metadata only: a referenced Secret's change is noticed without caching any Secret's data, nor
    // its annotations (`kubectl apply` copies its data into one). A `secretRef` may name any Secret:
    // this cache holds those the sensitive-config cache does not, so that no Secret is held twice (a
    // label change moves a Secret from one watch to the other: it leaves one as a deletion).
    let (secret_metadata, secret_changes) = reflect_metadata(
        &lists,
        Api::<PartialObjectMeta<Secret>>::namespaced(c.clone(), &ns),
        selector::NOT_SENSITIVE_CONFIG,
    );
    // Likewise the ConfigMaps a `configRef` may name: those the `app=ces` cache does not hold (at
    // 1,000 dogus, 2,001 entries fewer: docs/performance.md).
    let (config_map_metadata, config_map_metadata_changes) = reflect_metadata(
        &lists,
        Api::<PartialObjectMeta<ConfigMap>>::namespaced(c.clone(), &ns),
        selector::NOT_CES_OBJECTS,
    );

    // Restores and the DebugMode, where their operators' CRDs are installed. A shutdown meanwhile
    // (the API server slow to answer at the start) ends it: nothing is in flight yet.
    let discovered = tokio::select! {
        discovered = own_crd_discovered(&c, &started) => discovered,
        () = shutdown.clone() => return,
    };
    let (restores, restore_changes) =
        reflect_other(&lists, &c, &ns, discovered.restore, crate::other_operators::RESTORE);
    let (debug_modes, debug_mode_changes) =
        reflect_other(&lists, &c, &ns, discovered.debug_mode, crate::other_operators::DEBUG_MODE);

    let blueprint_changes = forget_deleted(blueprint_changes, blueprint_reader.clone(), metrics.clone(), ns.clone());
    let blueprint_changes = started.note_served(OwnKind::Blueprint, blueprint_changes);
    let mask_changes = started.note_served(OwnKind::BlueprintMask, mask_changes);
    let (mut filling, filled) = Filled::new();
    let blueprint_changes = filling.track(blueprint_changes);
    let dogu_changes = filling.track(dogu_changes);
    let component_changes = filling.track(component_changes);
    let config_map_changes = filling.track(config_map_changes);
    let health_changes = filling.track(health_changes);
    let sensitive_changes = filling.track(sensitive_changes);
    let secret_changes = filling.track(secret_changes);
    let mask_changes = filling.track(mask_changes);
    let config_map_metadata_changes = filling.track(config_map_metadata_changes);
    let mut track_other = |changes: Option<Events<DynamicObject>>| match changes {
        Some(changes) => filling.track(changes),
        None => {
            filling.skip();
            futures::stream::pending().boxed()
        }
    };
    let restore_changes = track_other(restore_changes);
    let debug_mode_changes = track_other(debug_mode_changes);
    drop(filling);
    let stores = Stores {
        blueprints: blueprint_reader.clone(),
        dogus,
        components,
        config_maps: config_maps.clone(),
        health_config,
        sensitive_configs,
        secret_metadata,
        config_map_metadata,
        restores,
        debug_modes,
        blueprint_masks,
        filled,
    };
    let local = LocalStore::new(config_maps, Api::namespaced(client.clone(), &namespace), namespace.clone());
    let descriptors = Arc::new(Registry::new(local, options.registry, options.descriptor_cache, metrics.clone()));
    let mut context = Context::new(client, namespace, options.identity, stores.clone(), descriptors, metrics);
    if let Some(clock) = options.clock {
        context = context.with_clock(move || clock());
    }
    let reconciler = Arc::new(Reconciler { context, journal: options.journal });
    let in_flight = reconciler.context.in_flight.clone();
    let own_status_writes = reconciler.context.own_status_writes.clone();

    // Ready once every cache has listed its objects.
    tokio::spawn({
        let stores = stores.clone();
        async move {
            if stores.ready().await.is_ok() {
                started.mark_synced();
                tracing::info!("caches synced");
            }
        }
    });

    // Every change that concerns a Blueprint, through one bounded debounce.
    let targets = Targets::new(blueprint_reader.clone());
    let all = futures::stream::select_all([
        triggers::blueprint_triggers(blueprint_changes, targets.clone(), own_status_writes),
        triggers::every_blueprint(dogu_changes, targets.clone(), triggers::any_dogu),
        triggers::every_blueprint(component_changes, targets.clone(), triggers::any_component),
        triggers::ces_config_map_triggers(config_map_changes, targets.clone()),
        triggers::every_blueprint(health_changes, targets.clone(), triggers::any_config_map),
        triggers::every_blueprint(sensitive_changes, targets.clone(), triggers::any_secret),
        triggers::every_blueprint(restore_changes, targets.clone(), triggers::any_restore),
        triggers::every_blueprint(mask_changes, targets.clone(), triggers::any_blueprint_mask),
        triggers::every_blueprint(debug_mode_changes, targets.clone(), triggers::any_debug_mode),
        triggers::config_map_reference_triggers(config_map_metadata_changes, targets.clone()),
        triggers::secret_triggers(secret_changes, targets),
    ]);
    let reconcile_requests = Debounced::new(all, options.debounce);

    // The Blueprints' own watch events reach the controller through `reconcile_requests` (which
    // polls the reflector), so its main stream is empty; kube's debounce is off (ours is bounded).
    let controller = Controller::for_stream(
        futures::stream::pending::<Result<Decoded<Blueprint>, watcher::Error>>(),
        blueprint_reader,
    )
    .with_config(ControllerConfig::default())
    .reconcile_on(reconcile_requests)
    .graceful_shutdown_on(shutdown.clone())
    .run(reconcile, error_policy, reconciler)
    .for_each(|result| async move {
        if let Err(error) = result {
            tracing::debug!(%error, "controller event");
        }
    });
    // Once the shutdown began: stop when no reconcile is in flight, or after the grace period (and
    // only then say that reconciles were cut off).
    let deadline = async move {
        shutdown.await;
        tokio::time::timeout(SHUTDOWN_GRACE, in_flight.idle()).await.is_err()
    };
    tokio::select! {
        () = controller => {}
        ran_out = deadline => if ran_out {
            tracing::warn!(
                grace = ?SHUTDOWN_GRACE,
                "in-flight reconciles did not finish within the shutdown grace period: stopping without them"
            );
        },
    }
}

/// How often the discovery is asked again while a Go operator's Blueprint CRD is in place.
const OWN_CRD_RETRY: Duration = Duration::from_secs(5);

/// The discovery at the start, once this operator's Blueprint CRD is in place. A Go operator's CRD
/// may serve the very version this operator reads (3.x's v3) under another schema, which would prune
/// what this operator writes: nothing is watched or written until ours is applied (docs/migration.md,
/// step 3), and meanwhile the replica is ready with its webhook ([`started`]). Discovery has no watch:
/// it is asked again every [`OWN_CRD_RETRY`], in this state only.
async fn own_crd_discovered(client: &Client, started: &Started) -> crate::other_operators::Discovered {
    loop {
        let discovered = crate::other_operators::discover(client).await;
        if discovered.own_blueprint_crd != Some(false) {
            if started.note(OwnKind::Blueprint, true) {
                tracing::info!("this operator's Blueprint CRD is in place");
            }
            if discovered.own_blueprint_crd.is_some() {
                tracing::info!(
                    restores = discovered.restore.is_some(),
                    debug_mode = discovered.debug_mode.is_some(),
                    "kinds of other operators watched"
                );
            }
            return discovered;
        }
        if started.note(OwnKind::Blueprint, false) {
            tracing::warn!(
                "the Blueprint CRD is not this operator's (it serves no k8s.cloudogu.com/v1 Blueprints): waiting for ours; the webhook serves meanwhile (docs/migration.md)"
            );
        }
        tokio::time::sleep(OWN_CRD_RETRY).await;
    }
}

/// A deleted Blueprint is reconciled no more: its state leaves the metrics when its deletion is
/// watched, or when a relist (which reports no deletions) no longer holds it. The reflector has
/// applied each event to `store` before it passes it on.
fn forget_deleted(
    events: Events<Decoded<Blueprint>>,
    store: Store<Decoded<Blueprint>>,
    metrics: Arc<Metrics>,
    namespace: String,
) -> Events<Decoded<Blueprint>> {
    events
        .inspect(move |event| match event {
            Ok(watcher::Event::Delete(blueprint)) => metrics.forget_blueprint(&namespace, &blueprint.name_any()),
            Ok(watcher::Event::InitDone) => {
                let names: std::collections::HashSet<String> = store.state().iter().map(|b| b.name_any()).collect();
                metrics.retain_blueprints(&namespace, |name| names.contains(name));
            }
            _ => {}
        })
        .boxed()
}

/// What the controller's reconciles share: the reconcile's context, and the journal they are recorded in.
struct Reconciler {
    context: Context,
    journal: Option<Arc<JournalWriter>>,
}

async fn reconcile(blueprint: Arc<Decoded<Blueprint>>, reconciler: Arc<Reconciler>) -> Result<Action, Infallible> {
    let name = blueprint.name_any();
    let span = tracing::info_span!(
        "reconcile",
        blueprint = %name,
        generation = blueprint.meta().generation.unwrap_or_default(),
        state = tracing::field::Empty,
        actions = tracing::field::Empty,
        status = tracing::field::Empty,
    );
    async move {
        let _busy = reconciler.context.in_flight.enter();
        // The whole record only for a journal (see `Detail`).
        let detail = if reconciler.journal.is_some() { Detail::Full } else { Detail::Outcome };
        let record = crate::reconcile::reconcile(&reconciler.context, &name, detail).await;
        let span = tracing::Span::current();
        if let Some(decision) = record.execution.decision_after_failure.as_ref().or(record.decision.as_ref()) {
            span.record("state", tracing::field::display(decision.state));
            span.record("actions", record.execution.performed);
        }
        span.record("status", status_words(&record.execution.status));
        let next = record.execution.requeue_after_seconds;
        match next {
            Some(seconds) => tracing::info!(next = %format!("in {seconds}s"), "reconciled"),
            None => tracing::info!(next = "when something watched changes", "reconciled"),
        }
        let action = next.map_or_else(Action::await_change, |s| Action::requeue(Duration::from_secs_f64(s)));
        record_in(reconciler.journal.as_deref(), record);
        Ok(action)
    }
    .instrument(span)
    .await
}

/// Queues the reconcile for the journal, if there is one (written by the journal's own thread; a
/// journal that cannot be written is reported and does not stop reconciling).
fn record_in(journal: Option<&JournalWriter>, record: Record) {
    if let Some(journal) = journal {
        journal.record(record);
    }
}

/// The status write in words, for the log.
fn status_words(status: &StatusWrite) -> &'static str {
    match status {
        StatusWrite::Unchanged => "unchanged",
        StatusWrite::Written => "written",
        StatusWrite::Conflict => "conflict",
        StatusWrite::Failed { .. } => "failed",
    }
}

fn error_policy(_: Arc<Decoded<Blueprint>>, _: &Infallible, _: Arc<Reconciler>) -> Action {
    Action::requeue(Duration::from_secs(1))
}
