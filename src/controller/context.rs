//! One reconcile of the shell: observe (caches), decide (the machine), execute, write the status
//! once, publish the events, and say when to look again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action as Requeue;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource};
use serde::{Deserialize, Serialize};

use blueprint_machine::api::{Blueprint, Component, Dogu};
use blueprint_machine::decision::{ApplyFailure, Decision, Operation};
use blueprint_machine::observation::{DescriptorEntry, Observation, OperatorFacts};

use super::backoff::BackoffTracker;
use crate::execute::{ConfigStores, Executor};
use crate::journal::{JournalWriter, Record};
use crate::metrics::{ActionLabels, Metrics, OutcomeLabels};
use crate::observe::decoded::{Decoded, Undecodable};
use crate::observe::secrets::SecretDigests;
use crate::observe::{Digester, Snapshot, is_health_config};
use crate::registry::DescriptorSource;
use crate::{publish, status};

/// The controller's caches, one reflector store per watched kind.
#[derive(Clone)]
///
/// Objects are decoded one by one ([`Decoded`]): one that does not fit its type is kept by name and
/// reported, and does not keep the cache from being filled.
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

impl Stores {
    /// Resolves once every cache has listed its objects (at once after that): the Blueprints' watch can
    /// start reconciles before the other caches are filled, and deciding on an empty cache of Dogus
    /// would mean deciding on a cluster without them.
    pub async fn ready(&self) -> Result<(), ReconcileError> {
        let result = futures::try_join!(
            self.blueprints.wait_until_ready(),
            self.dogus.wait_until_ready(),
            self.components.wait_until_ready(),
            self.config_maps.wait_until_ready(),
            self.health_config.wait_until_ready(),
            self.sensitive_configs.wait_until_ready(),
            self.secret_metadata.wait_until_ready(),
        );
        result.map(|_| ()).map_err(|_| ReconcileError::CachesStopped)
    }
}

/// Everything a reconcile needs; shared by all reconciles.
pub struct Context {
    pub client: Client,
    pub namespace: String,
    pub operator_version: String,
    pub stores: Stores,
    pub descriptors: Arc<dyn DescriptorSource>,
    pub digester: Digester,
    pub secrets: SecretDigests,
    reporter: Reporter,
    pub metrics: Arc<Metrics>,
    pub backoff: BackoffTracker,
    /// The Blueprint as this process last wrote it, with the `resourceVersion` it had before: until the
    /// cache shows the write, the written object is what is observed (read-your-writes). Slimmed like
    /// the cached objects, and dropped once the cache has moved on.
    written: Mutex<HashMap<String, (String, Arc<Blueprint>)>>,
    clock: Box<dyn Fn() -> Timestamp + Send + Sync>,
    journal: Option<Arc<JournalWriter>>,
    /// Reconciles running now: a shutdown waits for them, and only for them.
    pub in_flight: InFlight,
}

/// Counts the reconciles in flight.
#[derive(Clone, Default)]
pub struct InFlight(Arc<tokio::sync::watch::Sender<usize>>);

impl InFlight {
    /// Counts one reconcile until the guard is dropped.
    pub fn enter(&self) -> InFlightGuard {
        self.0.send_modify(|n| *n += 1);
        InFlightGuard(self.0.clone())
    }

    /// Resolves when no reconcile is in flight.
    pub async fn idle(&self) {
        let mut receiver = self.0.subscribe();
        let _ = receiver.wait_for(|n| *n == 0).await;
    }
}

pub struct InFlightGuard(Arc<tokio::sync::watch::Sender<usize>>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

/// How the status write went.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "result")]
pub enum StatusWrite {
    /// Nothing to write: the stored status is the decided one.
    Unchanged,
    Written,
    /// The Blueprint changed since it was observed; decided again shortly.
    Conflict,
    Failed {
        message: String,
    },
}

/// What one reconcile observed, decided and did.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// `None` when the reconcile could not observe (a read failed).
    pub observation: Option<Observation>,
    /// What `reconcile` decided.
    pub decision: Option<Decision>,
    /// Actions performed (a prefix of the decision's actions).
    pub performed: usize,
    pub failure: Option<ApplyFailure>,
    /// What `record_failure` decided after the failure: its status is the one written.
    pub after_failure: Option<Decision>,
    pub status: StatusWrite,
    pub events_published: usize,
    /// When the next reconcile comes; `None`: on the next change.
    pub requeue_after: Option<Duration>,
    #[serde(skip)]
    pub requeue: Requeue,
    /// Why the reconcile could not observe.
    pub error: Option<String>,
}

impl Outcome {
    /// The decision whose status was written and whose events were published.
    pub fn final_decision(&self) -> Option<&Decision> {
        self.after_failure.as_ref().or(self.decision.as_ref())
    }
}

/// Why a reconcile could not even decide.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("could not read a referenced Secret: {0}")]
    ReadSecret(#[source] kube::Error),
    #[error("the caches stopped before they were filled")]
    CachesStopped,
    #[error("the caches are not filled after {0:?}: the API server cannot be listed (see the watcher errors)")]
    CachesNotFilled(Duration),
}

/// How long a reconcile waits for the caches to be filled before it gives up (and is retried with
/// backoff): deciding on an unfilled cache would mean deciding on a cluster without those objects.
pub const CACHE_WAIT: Duration = Duration::from_secs(30);

impl Context {
    pub fn new(
        client: Client,
        namespace: String,
        operator_version: String,
        stores: Stores,
        descriptors: Arc<dyn DescriptorSource>,
        metrics: Arc<Metrics>,
    ) -> Self {
        let reporter =
            Reporter { controller: "k8s-blueprint-operator".into(), instance: std::env::var("POD_NAME").ok() };
        Context {
            reporter,
            client,
            namespace,
            operator_version,
            stores,
            descriptors,
            digester: Digester::random(),
            secrets: SecretDigests::default(),
            metrics,
            backoff: BackoffTracker::default(),
            written: Mutex::new(HashMap::new()),
            clock: Box::new(Timestamp::now),
            journal: None,
            in_flight: InFlight::default(),
        }
    }

    /// Records every reconcile in `journal`.
    pub fn with_journal(mut self, journal: Option<Arc<JournalWriter>>) -> Self {
        self.journal = journal;
        self
    }

    /// Replaces the wall clock (tests).
    pub fn with_clock(mut self, clock: impl Fn() -> Timestamp + Send + Sync + 'static) -> Self {
        self.clock = Box::new(clock);
        self
    }

    fn now(&self) -> Time {
        let now = (self.clock)();
        Time(Timestamp::from_second(now.as_second()).unwrap_or(now))
    }

    /// The Blueprint to reconcile: the cached one, unless this process wrote a newer one the cache has
    /// not shown yet.
    fn blueprint(&self, name: &str) -> Option<Arc<Blueprint>> {
        let cached = self
            .stores
            .blueprints
            .get(&ObjectRef::new(name).within(&self.namespace))
            .and_then(|decoded| decoded.object().cloned());
        let mut written = self.written.lock().expect("not poisoned");
        let cache_version = cached.as_ref().and_then(|c| c.metadata.resource_version.as_deref());
        match written.get(name) {
            Some((before, ours)) if cache_version == Some(before.as_str()) => Some(ours.clone()),
            _ => {
                // The cache shows our write or something newer (or the Blueprint is gone).
                written.remove(name);
                cached
            }
        }
    }

    /// Keeps the Blueprint this process wrote (`before`: the `resourceVersion` it replaced) until the
    /// cache shows the write.
    fn remember_written(&self, name: &str, before: String, mut written: Blueprint) {
        super::slim(&mut written.metadata);
        self.written.lock().expect("not poisoned").insert(name.to_owned(), (before, Arc::new(written)));
    }

    /// Builds the observation from the caches, the descriptor source and the clock.
    pub async fn observe(&self, blueprint: Option<Arc<Blueprint>>) -> Result<Observation, ReconcileError> {
        let blueprints = self.stores.blueprints.state();
        let dogus = self.stores.dogus.state();
        let components = self.stores.components.state();
        let config_maps = self.stores.config_maps.state();
        let health = self.stores.health_config.state();
        let sensitive = self.stores.sensitive_configs.state();
        let undecodable = undecodable("Dogu", &dogus)
            .chain(undecodable("Component", &components))
            .chain(undecodable("ConfigMap", &config_maps))
            .chain(undecodable("ConfigMap", &health))
            .chain(undecodable("Secret", &sensitive))
            .collect();

        let referenced = match blueprint.as_deref() {
            Some(blueprint) => {
                let names = blueprint_machine::Reading::of(blueprint).referenced_secrets();
                let api = Api::<Decoded<Secret>>::namespaced(self.client.clone(), &self.namespace);
                self.secrets
                    .observe(&names, &self.stores.secret_metadata, &api, &self.namespace, &self.digester)
                    .await
                    .map_err(ReconcileError::ReadSecret)?
            }
            None => Default::default(),
        };
        // Concurrently: on a fresh install every wanted descriptor may need the remote registry.
        let wanted =
            blueprint.as_deref().map(|b| blueprint_machine::Reading::of(b).wanted_descriptors()).unwrap_or_default();
        let descriptors = futures::future::join_all(wanted.into_iter().map(|(name, version)| async move {
            let lookup = self.descriptors.lookup(&name, &version).await;
            DescriptorEntry { name, version, lookup }
        }))
        .await;
        let own_name = blueprint.as_deref().and_then(|b| b.metadata.name.clone());
        let other_blueprints = blueprints
            .iter()
            .filter_map(|b| b.meta().name.clone())
            .filter(|other| Some(other) != own_name.as_ref())
            .collect();
        let snapshot = Snapshot {
            now: self.now(),
            operator: OperatorFacts::new(self.namespace.clone(), Some(self.operator_version.clone())),
            blueprint,
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
            descriptors,
        };
        Ok(snapshot.observe(&self.digester))
    }

    /// One reconcile of the Blueprint `name`.
    pub async fn reconcile(&self, name: &str) -> Outcome {
        let started = Instant::now();
        let outcome = match self.reconcile_inner(name).await {
            Ok(outcome) => outcome,
            Err(error) => {
                tracing::warn!(%error, "reconcile could not decide");
                let delay = self.backoff.next(name);
                self.metrics.objects_in_backoff.set(self.backoff.len() as i64);
                self.metrics.reconciles.get_or_create(&OutcomeLabels { outcome: "ObserveFailed".into() }).inc();
                let outcome = Outcome {
                    observation: None,
                    decision: None,
                    performed: 0,
                    failure: None,
                    after_failure: None,
                    status: StatusWrite::Unchanged,
                    events_published: 0,
                    requeue_after: Some(delay),
                    requeue: Requeue::requeue(delay),
                    error: Some(error.to_string()),
                };
                self.record(name, &outcome);
                return outcome;
            }
        };
        self.metrics.reconcile_duration.observe(started.elapsed().as_secs_f64());
        let label = match (&outcome.failure, &outcome.status) {
            (_, StatusWrite::Conflict) => "StatusConflict".to_owned(),
            (_, StatusWrite::Failed { .. }) => "StatusFailed".to_owned(),
            (Some(_), _) => "ApplyFailed".to_owned(),
            (None, _) => outcome.decision.as_ref().map(|d| d.state.to_string()).unwrap_or_default(),
        };
        self.metrics.reconciles.get_or_create(&OutcomeLabels { outcome: label }).inc();
        self.record(name, &outcome);
        outcome
    }

    /// Queues the reconcile for the journal, if there is one (written by the journal's own thread; a
    /// journal that cannot be written is reported and does not stop reconciling).
    fn record(&self, name: &str, outcome: &Outcome) {
        if let Some(journal) = &self.journal {
            journal.record(Record::of(outcome, name, &self.operator_version, self.now()));
        }
    }

    async fn reconcile_inner(&self, name: &str) -> Result<Outcome, ReconcileError> {
        tokio::time::timeout(CACHE_WAIT, self.stores.ready())
            .await
            .map_err(|_| ReconcileError::CachesNotFilled(CACHE_WAIT))??;
        let blueprint = self.blueprint(name);
        let observation = self.observe(blueprint.clone()).await?;
        let decision = blueprint_machine::reconcile(&observation);

        let executor = Executor::new(
            self.client.clone(),
            &self.namespace,
            ConfigStores {
                config_maps: self.stores.config_maps.clone(),
                sensitive_configs: self.stores.sensitive_configs.clone(),
            },
        );
        let mut performed = 0;
        let mut failure = None;
        for (index, action) in decision.actions.iter().enumerate() {
            let result = executor.perform(action).await;
            let labels = ActionLabels {
                kind: kind(&action.operation).to_owned(),
                result: match &result {
                    Ok(()) => "ok".to_owned(),
                    Err(f) => format!("{:?}", f.kind).to_lowercase(),
                },
            };
            self.metrics.actions.get_or_create(&labels).inc();
            match result {
                Ok(()) => {
                    tracing::info!(stage = %action.stage, object = %action.operation.object(), why = %action.reason, "applied");
                    performed += 1;
                }
                Err(f) => {
                    tracing::warn!(stage = %action.stage, object = %action.operation.object(), kind = ?f.kind, error = %f.message, "action failed");
                    failure = Some(ApplyFailure { action: index, kind: f.kind, message: f.message });
                    break;
                }
            }
        }
        let after_failure =
            failure.as_ref().map(|failure| blueprint_machine::record_failure(&observation, &decision, failure));
        let written = after_failure.as_ref().unwrap_or(&decision);

        let mut status_write = StatusWrite::Unchanged;
        if let (Some(blueprint), Some(wanted)) = (blueprint.as_deref(), written.status.as_ref()) {
            let version = blueprint.metadata.resource_version.clone().unwrap_or_default();
            if let Some(patch) = status::status_patch(blueprint.status.as_deref(), wanted, &version) {
                status_write = match status::write(&self.client, &self.namespace, name, &patch).await {
                    Ok(resource_version) => {
                        self.metrics.status_writes.inc();
                        self.remember_written(name, version, status::written(blueprint, wanted, resource_version));
                        StatusWrite::Written
                    }
                    Err(kube::Error::Api(e)) if e.code == 409 => StatusWrite::Conflict,
                    Err(e) => StatusWrite::Failed { message: e.to_string() },
                };
            }
        }

        let mut events_published = 0;
        if matches!(status_write, StatusWrite::Unchanged | StatusWrite::Written)
            && let Some(blueprint) = blueprint.as_deref()
        {
            // A recorder per reconcile: kube-runtime's recorder folds events of the same reason into one
            // series and keeps the first note; ours are already one per transition, each with its own note.
            let recorder = Recorder::new(self.client.clone(), self.reporter.clone());
            events_published = publish::publish(&recorder, blueprint, &written.events).await;
            self.metrics.events.inc_by(events_published as u64);
        }

        let requeue_after = match &status_write {
            StatusWrite::Conflict => Some(Duration::from_secs(1)),
            StatusWrite::Failed { .. } => Some(self.backoff.next(name)),
            _ => match &written.requeue {
                blueprint_machine::Requeue::AwaitChange => {
                    self.backoff.reset(name);
                    None
                }
                blueprint_machine::Requeue::After { after, .. } => {
                    self.backoff.reset(name);
                    Some(*after)
                }
                blueprint_machine::Requeue::Backoff { .. } => Some(self.backoff.next(name)),
            },
        };
        self.metrics.objects_in_backoff.set(self.backoff.len() as i64);
        Ok(Outcome {
            observation: Some(observation),
            decision: Some(decision),
            performed,
            failure,
            after_failure,
            status: status_write,
            events_published,
            requeue_after,
            requeue: requeue_after.map_or_else(Requeue::await_change, Requeue::requeue),
            error: None,
        })
    }
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

fn kind(operation: &Operation) -> &'static str {
    match operation {
        Operation::CreateDogu { .. } => "createDogu",
        Operation::PatchDogu { .. } => "patchDogu",
        Operation::DeleteDogu { .. } => "deleteDogu",
        Operation::CreateComponent { .. } => "createComponent",
        Operation::PatchComponent { .. } => "patchComponent",
        Operation::DeleteComponent { .. } => "deleteComponent",
        Operation::WriteConfig { .. } => "writeConfig",
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};
    use kube::runtime::{reflector, watcher};

    use super::*;
    use crate::registry::{CacheSettings, LocalStore, Registry};

    fn blueprint(resource_version: &str) -> Blueprint {
        let mut blueprint = Blueprint::new("bp", Default::default());
        blueprint.metadata = ObjectMeta {
            name: Some("bp".into()),
            namespace: Some("ecosystem".into()),
            resource_version: Some(resource_version.into()),
            managed_fields: Some(vec![ManagedFieldsEntry {
                manager: Some("k8s-blueprint-operator".into()),
                fields_v1: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1(
                    serde_json::json!({"f:status": {}}),
                )),
                ..Default::default()
            }]),
            ..Default::default()
        };
        blueprint
    }

    fn empty<K>() -> Store<K>
    where
        K: kube::Resource + Clone + 'static,
        K::DynamicType: Default + Eq + std::hash::Hash + Clone,
    {
        reflector::store().0
    }

    /// Read-your-writes: the written Blueprint is what a reconcile sees while the cache still holds the
    /// version it replaced; once the cache has moved on, the cache's object is seen and the written
    /// copy is dropped (it is megabytes at a thousand dogus). The kept copy has no field sets.
    #[tokio::test]
    async fn a_written_blueprint_is_seen_until_the_cache_shows_the_write_then_dropped() {
        let (service, _handle) =
            tower_test::mock::pair::<http::Request<kube::client::Body>, http::Response<kube::client::Body>>();
        let client = Client::new(service, "ecosystem");
        let (blueprints, mut writer) = reflector::store::<Decoded<Blueprint>>();
        writer.apply_watcher_event(&watcher::Event::Apply(Decoded::Object(Arc::new(blueprint("1")))));
        let stores = Stores {
            blueprints,
            dogus: empty(),
            components: empty(),
            config_maps: empty(),
            health_config: empty(),
            sensitive_configs: empty(),
            secret_metadata: empty(),
        };
        let metrics = Metrics::shared();
        let local = LocalStore::new(empty(), Api::namespaced(client.clone(), "ecosystem"), "ecosystem");
        let descriptors = Arc::new(Registry::new(local, None, CacheSettings::default(), metrics.clone()));
        let context = Context::new(client, "ecosystem".into(), "1.0.0".into(), stores, descriptors, metrics);

        context.remember_written("bp", "1".into(), blueprint("2"));
        let seen = context.blueprint("bp").unwrap();
        assert_eq!(seen.metadata.resource_version.as_deref(), Some("2"), "our write, not the stale cache");
        let fields = seen.metadata.managed_fields.iter().flatten().filter(|e| e.fields_v1.is_some()).count();
        assert_eq!(fields, 0, "the kept copy is slimmed");

        writer.apply_watcher_event(&watcher::Event::Apply(Decoded::Object(Arc::new(blueprint("3")))));
        assert_eq!(context.blueprint("bp").unwrap().metadata.resource_version.as_deref(), Some("3"));
        assert!(context.written.lock().unwrap().is_empty(), "dropped once the cache moved on");
    }
}
