//! What every reconcile needs, shared by all of them: the client, the caches, the descriptor source,
//! the digester of secret values, the backoff, and the Blueprints this process wrote.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::runtime::events::Reporter;
use kube::runtime::reflector::ObjectRef;

use blueprint_machine::api::Blueprint;

use super::backoff::BackoffTracker;
use super::{HandledRequests, InFlight, KeptDoguReadings, KeptReadings, OwnStatusWrites};
use crate::caches::{CachesStopped, Stores};
use crate::descriptors::DescriptorSource;
use crate::identity::OperatorIdentity;
use crate::metrics::Metrics;
use crate::observe::referenced::ByVersion;
use crate::observe::{Digester, KeptConfigs};

/// How long a reconcile waits for the caches to be filled before it gives up (and is retried with
/// backoff): deciding on an unfilled cache would mean deciding on a cluster without those objects.
pub const CACHE_WAIT: Duration = Duration::from_secs(30);

/// Why a reconcile could not observe, and so could not decide.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    #[error("could not read a referenced Secret: {0}")]
    ReadSecret(#[source] kube::Error),
    #[error("could not read a referenced ConfigMap: {0}")]
    ReadConfigMap(#[source] kube::Error),
    #[error(transparent)]
    CachesStopped(#[from] CachesStopped),
    #[error("the caches are not filled after {0:?}: the API server cannot be listed (see the watcher errors)")]
    CachesNotFilled(Duration),
}

pub struct Context {
    pub client: Client,
    pub namespace: String,
    pub identity: OperatorIdentity,
    pub stores: Stores,
    pub descriptors: Arc<dyn DescriptorSource>,
    pub digester: Digester,
    /// Referenced Secrets' digests and referenced ConfigMaps' data, by `resourceVersion`.
    pub secrets: ByVersion<blueprint_machine::observation::ReferencedSecret>,
    pub config_maps: ByVersion<blueprint_machine::observation::ReferencedConfigMap>,
    /// The config objects' observations, by `resourceVersion`: an unchanged object is not parsed again.
    pub kept_configs: KeptConfigs,
    pub reporter: Reporter,
    pub metrics: Arc<Metrics>,
    pub backoff: BackoffTracker,
    /// Reconciles running now: a shutdown waits for them, and only for them.
    pub in_flight: InFlight,
    /// What this process's status writes produced: their watch events trigger nothing.
    pub own_status_writes: OwnStatusWrites,
    /// The reconcile requests (the Blueprints' annotation) handled last.
    pub handled_requests: HandledRequests,
    /// Each Blueprint's reading, kept while the Blueprint and the masks are unchanged.
    pub readings: KeptReadings,
    /// The Dogu CRs' readings, each kept while its object is unchanged.
    pub dogu_readings: KeptDoguReadings,
    /// The Blueprint as this process last wrote it, with the `resourceVersion` it had before: until the
    /// cache shows the write, the written object is what is observed (read-your-writes). Slimmed like
    /// the cached objects, and dropped once the cache has moved on.
    written: Mutex<HashMap<String, (String, Arc<Blueprint>)>>,
    clock: Box<dyn Fn() -> Timestamp + Send + Sync>,
}

impl Context {
    pub fn new(
        client: Client,
        namespace: String,
        identity: OperatorIdentity,
        stores: Stores,
        descriptors: Arc<dyn DescriptorSource>,
        metrics: Arc<Metrics>,
    ) -> Self {
        let reporter =
            Reporter { controller: "k8s-blueprint-operator".into(), instance: std::env::var("POD_NAME").ok() };
        Context {
            client,
            namespace,
            identity,
            stores,
            descriptors,
            digester: Digester::random(),
            secrets: ByVersion::default(),
            config_maps: ByVersion::default(),
            kept_configs: KeptConfigs::default(),
            reporter,
            metrics,
            backoff: BackoffTracker::default(),
            in_flight: InFlight::default(),
            own_status_writes: OwnStatusWrites::default(),
            handled_requests: HandledRequests::default(),
            readings: KeptReadings::default(),
            dogu_readings: KeptDoguReadings::default(),
            written: Mutex::new(HashMap::new()),
            clock: Box::new(Timestamp::now),
        }
    }

    /// Replaces the wall clock (tests, the sandbox's virtual clock).
    pub fn with_clock(mut self, clock: impl Fn() -> Timestamp + Send + Sync + 'static) -> Self {
        self.clock = Box::new(clock);
        self
    }

    /// Now, to the second (as Kubernetes stores times).
    pub fn now(&self) -> Time {
        let now = (self.clock)();
        Time(Timestamp::from_second(now.as_second()).unwrap_or(now))
    }

    /// The Blueprint to reconcile: the cached one, unless this process wrote a newer one the cache has
    /// not shown yet.
    pub fn blueprint(&self, name: &str) -> Option<Arc<Blueprint>> {
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
    pub fn remember_written(&self, name: &str, before: String, mut written: Blueprint) {
        crate::caches::slim_blueprint(&mut written.metadata);
        self.written.lock().expect("not poisoned").insert(name.to_owned(), (before, Arc::new(written)));
    }

    #[cfg(test)]
    fn written_is_empty(&self) -> bool {
        self.written.lock().expect("not poisoned").is_empty()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};
    use kube::api::Api;
    use kube::runtime::reflector::{self, Store};
    use kube::runtime::watcher;

    use super::*;
    use crate::descriptors::{CacheSettings, LocalStore, Registry};
    use crate::observe::decoded::Decoded;

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
            config_map_metadata: empty(),
            restores: crate::other_operators::none(crate::other_operators::RESTORE),
            debug_modes: crate::other_operators::none(crate::other_operators::DEBUG_MODE),
            blueprint_masks: empty(),
            filled: crate::caches::Filled::already(),
        };
        let metrics = Metrics::shared();
        let local = LocalStore::new(empty(), Api::namespaced(client.clone(), "ecosystem"), "ecosystem");
        let descriptors = Arc::new(Registry::new(local, None, CacheSettings::default(), metrics.clone()));
        let context =
            Context::new(client, "ecosystem".into(), OperatorIdentity::of_build("0.1.0"), stores, descriptors, metrics);

        context.remember_written("bp", "1".into(), blueprint("2"));
        let seen = context.blueprint("bp").unwrap();
        assert_eq!(seen.metadata.resource_version.as_deref(), Some("2"), "our write, not the stale cache");
        let fields = seen.metadata.managed_fields.iter().flatten().filter(|e| e.fields_v1.is_some()).count();
        assert_eq!(fields, 0, "the kept copy is slimmed");

        writer.apply_watcher_event(&watcher::Event::Apply(Decoded::Object(Arc::new(blueprint("3")))));
        assert_eq!(context.blueprint("bp").unwrap().metadata.resource_version.as_deref(), Some("3"));
        assert!(context.written_is_empty(), "dropped once the cache moved on");
    }
}
