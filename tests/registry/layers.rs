//! The layers behind one lookup: memory, the local dogu registry (ConfigMaps in the emulator), the
//! remote registry (HTTP on loopback).

use blueprint_operator::observe::decoded::Decoded;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use blueprint_machine::observation::DescriptorLookup;
use blueprint_operator::descriptors::{
    CacheSettings, DescriptorSource, LocalStore, Registry, RemoteRegistry, UrlSchema,
};
use blueprint_operator::metrics::Metrics;
use blueprint_operator::sandbox::api::Emulator;
use blueprint_operator::sandbox::dogu_registry::{Fault, RegistryServer, Served};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams};
use kube::runtime::reflector::{self, Store, store::Writer};
use kube::runtime::watcher;
use serde_json::{Value, json};

use super::{CAS_V2, LDAP_V1, settings};

const NS: &str = "ecosystem";

struct Fixture {
    emulator: Emulator,
    api: Api<ConfigMap>,
    reader: Store<Decoded<ConfigMap>>,
    writer: Writer<Decoded<ConfigMap>>,
    served: Served,
    metrics: Arc<Metrics>,
}

impl Fixture {
    async fn new() -> Self {
        let emulator = crate::sandbox::emulator::emulator();
        let api = Api::namespaced(emulator.client(NS), NS);
        let (reader, writer) = reflector::store();
        let registry = RegistryServer::new(Some(("instance".into(), "s3cret".into())));
        registry.add(CAS_V2).unwrap();
        registry.add(LDAP_V1).unwrap();
        let served = registry.serve(([127, 0, 0, 1], 0).into()).await.unwrap();
        let mut fixture = Fixture { emulator, api, reader, writer, served, metrics: Metrics::shared() };
        fixture.sync().await;
        fixture
    }

    fn registry(&self, cache: CacheSettings) -> Registry {
        let local = LocalStore::new(self.reader.clone(), self.api.clone(), NS);
        let remote = RemoteRegistry::new(&settings(&self.served.endpoint(), UrlSchema::Default)).unwrap();
        Registry::new(local, Some(remote), cache, self.metrics.clone())
    }

    /// The controller's ConfigMap cache catches up with the API (a relist).
    async fn sync(&mut self) {
        let list = self.api.list(&ListParams::default()).await.unwrap();
        self.writer.apply_watcher_event(&watcher::Event::Init);
        for config_map in list.items {
            self.writer
                .apply_watcher_event(&watcher::Event::InitApply(Decoded::Object(std::sync::Arc::new(config_map))));
        }
        self.writer.apply_watcher_event(&watcher::Event::InitDone);
    }

    /// Waits for the background writes of the local dogu registry.
    async fn settle(&self, registry: &Registry) {
        registry.settled().await;
    }

    fn remote_requests(&self) -> usize {
        self.served.registry.requests().len()
    }

    /// Writes of ConfigMaps the emulator received over its API (not the fixture's), as `METHOD status`.
    fn config_map_writes(&self) -> Vec<String> {
        self.emulator
            .requests()
            .iter()
            .filter(|r| r.method != "GET" && r.path.contains("/configmaps"))
            .map(|r| format!("{} {}", r.method, r.status))
            .collect()
    }

    fn spec_config_map(&self, dogu: &str) -> Value {
        self.emulator.get("v1", "ConfigMap", NS, &format!("dogu-spec-{dogu}")).expect("the ConfigMap exists")
    }

    fn create_spec_config_map(&self, dogu: &str, data: Value) {
        self.emulator
            .create(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("dogu-spec-{dogu}"), "namespace": NS, "labels": {"app": "ces", "dogu.name": dogu, "k8s.cloudogu.com/type": "local-dogu-registry"}}, "data": data}))
            .unwrap();
    }

    fn metric(&self, line: &str) -> f64 {
        self.metrics
            .encode()
            .lines()
            .find(|l| l.starts_with(line))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or(0.0)
    }
}

fn found(lookup: &DescriptorLookup) -> &str {
    match lookup {
        DescriptorLookup::Found { descriptor } => &descriptor.name,
        other => panic!("not found: {other:?}"),
    }
}

#[tokio::test]
async fn a_second_lookup_is_answered_from_memory() {
    let fixture = Fixture::new().await;
    let registry = fixture.registry(CacheSettings::default());
    assert_eq!(found(&registry.lookup("official/cas", "7.1.5-2").await), "official/cas");
    assert_eq!(fixture.remote_requests(), 1);
    assert_eq!(found(&registry.lookup("official/cas", "7.1.5-2").await), "official/cas");
    assert_eq!(fixture.remote_requests(), 1, "the second lookup made no request");
    assert_eq!(fixture.metric("blueprint_operator_descriptor_lookups_total{layer=\"memory\",result=\"hit\"}"), 1.0);
    assert_eq!(fixture.metric("blueprint_operator_registry_requests_total{outcome=\"found\"}"), 1.0);
    assert_eq!(fixture.metric("blueprint_operator_registry_request_duration_seconds_count"), 1.0);
}

/// Every reconcile looks up all of a blueprint's descriptors in the same order: an LRU cache smaller
/// than the blueprint missed every one of them, every reconcile. The cache grows to what a reconcile
/// says it will look up.
#[tokio::test]
async fn the_memory_holds_a_whole_blueprints_descriptors() {
    let fixture = Fixture::new().await;
    let one = CacheSettings { capacity: NonZeroUsize::new(1).unwrap(), ..CacheSettings::default() };
    let registry = fixture.registry(one);
    let wanted = [("official/cas", "7.1.5-2"), ("official/ldap", "2.6.2-1")];
    for _round in 0..3 {
        registry.expect_lookups(wanted.len());
        for (name, version) in wanted {
            assert_eq!(found(&registry.lookup(name, version).await), name);
        }
    }
    assert_eq!(fixture.remote_requests(), 2, "each descriptor fetched once");
    assert_eq!(fixture.metric("blueprint_operator_descriptor_lookups_total{layer=\"memory\",result=\"hit\"}"), 4.0);
}

#[tokio::test]
async fn the_local_registry_is_written_once_and_read_back() {
    let mut fixture = Fixture::new().await;
    let registry = fixture.registry(CacheSettings::default());
    found(&registry.lookup("official/cas", "7.1.5-2").await);
    found(&registry.lookup("official/cas", "7.1.5-2").await);
    fixture.settle(&registry).await;
    assert_eq!(fixture.config_map_writes(), ["POST 201"], "one create, no second write");
    let stored = fixture.spec_config_map("cas");
    assert_eq!(stored["data"]["7.1.5-2"], CAS_V2, "the registry's dogu.json, unchanged");
    assert_eq!(
        stored["metadata"]["labels"],
        json!({"app": "ces", "dogu.name": "cas", "k8s.cloudogu.com/type": "local-dogu-registry"})
    );

    // Another process (empty memory) with the cache caught up: the local registry answers.
    fixture.sync().await;
    let restarted = fixture.registry(CacheSettings::default());
    assert_eq!(found(&restarted.lookup("official/cas", "7.1.5-2").await), "official/cas");
    assert_eq!(fixture.remote_requests(), 1, "read back from the local registry");
    assert_eq!(fixture.metric("blueprint_operator_descriptor_lookups_total{layer=\"local\",result=\"hit\"}"), 1.0);
}

#[tokio::test]
async fn a_new_version_is_added_next_to_the_stored_ones() {
    let mut fixture = Fixture::new().await;
    fixture.create_spec_config_map("cas", json!({"7.1.4-1": "{\"Name\":\"official/cas\",\"Version\":\"7.1.4-1\"}"}));
    fixture.sync().await;
    let registry = fixture.registry(CacheSettings::default());
    found(&registry.lookup("official/cas", "7.1.5-2").await);
    fixture.settle(&registry).await;
    let stored = fixture.spec_config_map("cas");
    assert_eq!(stored["data"]["7.1.4-1"], "{\"Name\":\"official/cas\",\"Version\":\"7.1.4-1\"}");
    assert_eq!(stored["data"]["7.1.5-2"], CAS_V2);
    assert_eq!(fixture.config_map_writes(), ["PATCH 200"], "the ConfigMap existed: one patch");
}

#[tokio::test]
async fn a_stale_cache_costs_a_reread_never_a_lost_key() {
    let mut fixture = Fixture::new().await;
    fixture.create_spec_config_map("cas", json!({"7.1.3-1": "{}"}));
    fixture.sync().await;
    // The dogu operator adds a version; the controller's cache has not seen it yet.
    fixture.emulator.edit("v1", "ConfigMap", NS, "dogu-spec-cas", |c| c["data"]["7.1.4-1"] = json!("{}")).unwrap();
    let registry = fixture.registry(CacheSettings::default());
    found(&registry.lookup("official/cas", "7.1.5-2").await);
    fixture.settle(&registry).await;
    let stored = fixture.spec_config_map("cas");
    let keys: Vec<&String> = stored["data"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["7.1.3-1", "7.1.4-1", "7.1.5-2"], "no concurrent key lost");
    assert_eq!(fixture.config_map_writes(), ["PATCH 409", "PATCH 200"], "a conflict, a re-read, a patch");
}

#[tokio::test]
async fn another_namespaces_descriptor_is_a_miss_and_stays() {
    let mut fixture = Fixture::new().await;
    let premium = r#"{"Name":"premium/cas","Version":"7.1.5-2"}"#;
    fixture.create_spec_config_map("cas", json!({"7.1.5-2": premium}));
    fixture.sync().await;
    let registry = fixture.registry(CacheSettings::default());
    assert_eq!(found(&registry.lookup("official/cas", "7.1.5-2").await), "official/cas");
    assert_eq!(fixture.remote_requests(), 1, "the stored descriptor of premium/cas is not official/cas's");
    fixture.settle(&registry).await;
    assert_eq!(
        fixture.spec_config_map("cas")["data"]["7.1.5-2"],
        premium,
        "an existing version key is never overwritten"
    );
    assert!(fixture.config_map_writes().is_empty(), "no write: {:?}", fixture.config_map_writes());
}

#[tokio::test(start_paused = true)]
async fn not_found_is_believed_for_its_time_to_live() {
    let fixture = Fixture::new().await;
    let cache = CacheSettings { not_found_ttl: Duration::from_secs(30), ..CacheSettings::default() };
    let registry = fixture.registry(cache);
    assert_eq!(registry.lookup("official/cas", "9.9.9-9").await, DescriptorLookup::NotFound);
    tokio::time::sleep(Duration::from_secs(29)).await;
    assert_eq!(registry.lookup("official/cas", "9.9.9-9").await, DescriptorLookup::NotFound);
    assert_eq!(fixture.remote_requests(), 1, "remembered");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(registry.lookup("official/cas", "9.9.9-9").await, DescriptorLookup::NotFound);
    assert_eq!(fixture.remote_requests(), 2, "expired after 30s, asked again");
}

#[tokio::test]
async fn unavailable_is_never_remembered() {
    let fixture = Fixture::new().await;
    let registry = fixture.registry(CacheSettings::default());
    fixture.served.registry.inject(Fault::Status(500), 1);
    match registry.lookup("official/cas", "7.1.5-2").await {
        DescriptorLookup::Unavailable { reason } => assert!(reason.contains("HTTP 500"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(found(&registry.lookup("official/cas", "7.1.5-2").await), "official/cas");
    assert_eq!(fixture.remote_requests(), 2);
}

#[tokio::test(start_paused = true)]
async fn concurrent_lookups_of_one_descriptor_make_one_request() {
    let fixture = Fixture::new().await;
    let registry = fixture.registry(CacheSettings::default());
    fixture.served.registry.inject(Fault::Delay(Duration::from_secs(2)), 1);
    let lookups = (0..10).map(|_| registry.lookup("official/cas", "7.1.5-2"));
    let answers = futures::future::join_all(lookups).await;
    assert!(answers.iter().all(|a| found(a) == "official/cas"));
    assert_eq!(fixture.remote_requests(), 1, "single flight");
    fixture.settle(&registry).await;
    assert_eq!(fixture.config_map_writes(), ["POST 201"], "and one local write");
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_lookup_neither_stops_nor_repeats_the_request() {
    let fixture = Fixture::new().await;
    let registry = fixture.registry(CacheSettings::default());
    fixture.served.registry.inject(Fault::Delay(Duration::from_secs(5)), 1);
    // A reconcile gives up on the lookup (its task was cancelled) while the request is under way.
    let cancelled = tokio::time::timeout(Duration::from_secs(1), registry.lookup("official/cas", "7.1.5-2")).await;
    assert!(cancelled.is_err());
    // The next reconcile joins the same request, which was never stopped.
    assert_eq!(found(&registry.lookup("official/cas", "7.1.5-2").await), "official/cas");
    assert_eq!(fixture.remote_requests(), 1);
    fixture.settle(&registry).await;
    assert_eq!(fixture.config_map_writes(), ["POST 201"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_from_many_threads_make_one_request() {
    let fixture = Fixture::new().await;
    let registry = fixture.registry(CacheSettings::default());
    let lookups: Vec<_> = (0..32)
        .map(|_| {
            let registry = registry.clone();
            tokio::spawn(async move { registry.lookup("official/cas", "7.1.5-2").await })
        })
        .collect();
    for lookup in lookups {
        assert_eq!(found(&lookup.await.unwrap()), "official/cas");
    }
    assert_eq!(fixture.remote_requests(), 1, "one request, whatever the interleaving");
    fixture.settle(&registry).await;
}

#[tokio::test]
async fn a_v1_descriptor_is_stored_as_v2_for_the_dogu_operator() {
    let fixture = Fixture::new().await;
    let registry = fixture.registry(CacheSettings::default());
    found(&registry.lookup("official/ldap", "2.6.2-1").await);
    fixture.settle(&registry).await;
    let stored: Value =
        serde_json::from_str(fixture.spec_config_map("ldap")["data"]["2.6.2-1"].as_str().unwrap()).unwrap();
    assert_eq!(
        stored["Dependencies"],
        json!([{"type": "dogu", "name": "nginx"}, {"type": "dogu", "name": "postfix"}]),
        "the dogu operator reads only v2 dependencies"
    );
    assert_eq!(stored["Image"], "registry.cloudogu.com/official/ldap", "everything else is kept");
}

#[tokio::test]
async fn the_memory_is_bounded() {
    let fixture = Fixture::new().await;
    let cache = CacheSettings { capacity: NonZeroUsize::new(1).unwrap(), ..CacheSettings::default() };
    let registry = fixture.registry(cache);
    for (name, version) in [("official/cas", "7.1.5-2"), ("official/ldap", "2.6.2-1"), ("official/cas", "7.1.5-2")] {
        found(&registry.lookup(name, version).await);
        fixture.settle(&registry).await;
    }
    // The local registry's cache is not synced here, so an evicted descriptor comes from the remote.
    assert_eq!(fixture.remote_requests(), 3, "cas was evicted by ldap");
}

#[tokio::test]
async fn without_a_remote_registry_a_local_miss_is_unavailable() {
    let mut fixture = Fixture::new().await;
    fixture.create_spec_config_map("cas", json!({"7.1.5-2": CAS_V2}));
    fixture.sync().await;
    let local = LocalStore::new(fixture.reader.clone(), fixture.api.clone(), NS);
    let registry = Registry::new(local, None, CacheSettings::default(), fixture.metrics.clone());
    assert_eq!(found(&registry.lookup("official/cas", "7.1.5-2").await), "official/cas");
    match registry.lookup("official/ldap", "2.6.2-1").await {
        DescriptorLookup::Unavailable { reason } => assert!(reason.contains("DOGU_REGISTRY_ENDPOINT"), "{reason}"),
        other => panic!("{other:?}"),
    }
}
