//! One reconcile of the real shell (`reconcile::reconcile`) against a scripted API server behind kube's
//! `Client` (tower-test): every request is recorded with its method, path, content type and body, and
//! answered by the test's responder.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use blueprint_machine::api::{Blueprint, Component, Dogu};
use blueprint_operator::caches::Stores;
use blueprint_operator::descriptors::{CacheSettings, LocalStore, Registry};
use blueprint_operator::journal::Record;
use blueprint_operator::metrics::Metrics;
use blueprint_operator::observe::decoded::Decoded;
use blueprint_operator::reconcile::Context;
use blueprint_operator::reconcile::Detail;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::client::Body;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use kube::{Client, Resource};
use serde_json::{Value, json};

pub const NAMESPACE: &str = "ecosystem";

/// A request as the API server received it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: BTreeMap<String, String>,
    pub content_type: Option<String>,
    pub body: Value,
    pub raw_body: String,
}

impl Recorded {
    pub fn line(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// What the scripted server answers: a status code and a JSON body; code 0 fails the request in
/// transport (no answer).
pub type Responder = Box<dyn Fn(&Recorded) -> (u16, Value) + Send + Sync>;

/// The default answers of a healthy API server: creates and patches echo, deletes succeed, events are
/// accepted, status patches return the Blueprint as patched.
pub fn healthy(blueprint: Blueprint) -> Responder {
    Box::new(move |request| default_answer(&blueprint, request))
}

pub fn default_answer(blueprint: &Blueprint, request: &Recorded) -> (u16, Value) {
    match request.method.as_str() {
        "POST" => (201, request.body.clone()),
        "DELETE" => (200, json!({"kind": "Status", "apiVersion": "v1", "status": "Success"})),
        "PATCH" if request.path.ends_with("/status") => {
            let mut written = serde_json::to_value(blueprint).unwrap();
            json_patch::merge(&mut written, &request.body);
            written["metadata"]["resourceVersion"] = json!("2");
            (200, written)
        }
        "PATCH" => {
            let name = request.path.rsplit('/').next().unwrap();
            let mut object = json!({"metadata": {"name": name, "namespace": NAMESPACE}});
            json_patch::merge(&mut object, &request.body);
            (200, object)
        }
        _ => (404, not_found()),
    }
}

pub fn status(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": format!("{reason} (test)"), "reason": reason, "code": code})
}

pub fn not_found() -> Value {
    status(404, "NotFound")
}

/// The cluster as the controller's caches hold it.
pub struct Harness {
    pub blueprint: Blueprint,
    pub dogus: Vec<Dogu>,
    pub components: Vec<Component>,
    pub config_maps: Vec<ConfigMap>,
    pub sensitive: Vec<Secret>,
    /// Secrets the API serves on GET (referenced Secrets); their metadata is in the cache.
    pub secrets: Vec<Secret>,
}

impl Harness {
    pub fn new(spec_yaml: &str) -> Self {
        let mut blueprint = crate::support::blueprint(spec_yaml);
        blueprint.metadata.resource_version = Some("1".into());
        Harness {
            blueprint,
            dogus: vec![],
            components: vec![],
            config_maps: vec![],
            sensitive: vec![],
            secrets: vec![],
        }
    }

    pub fn dogu(mut self, dogu: Dogu) -> Self {
        self.dogus.push(dogu);
        self
    }

    pub fn component(mut self, component: Component) -> Self {
        self.components.push(component);
        self
    }

    /// A dogu descriptor in the local dogu registry (no dependencies).
    pub fn descriptor(mut self, name: &str, version: &str) -> Self {
        let simple = name.rsplit('/').next().unwrap();
        let json = format!(r#"{{"Name":"{name}","Version":"{version}"}}"#);
        self.config_maps.push(config_map(
            &format!("dogu-spec-{simple}"),
            "local-dogu-registry",
            Some(simple),
            [(version, json.as_str())],
            "3",
        ));
        self
    }

    pub fn config(mut self, map: ConfigMap) -> Self {
        self.config_maps.push(map);
        self
    }

    pub fn sensitive(mut self, secret: Secret) -> Self {
        self.sensitive.push(secret);
        self
    }

    pub fn secret(mut self, secret: Secret) -> Self {
        self.secrets.push(secret);
        self
    }

    fn stores(&self) -> Stores {
        fn store<K>(objects: &[K]) -> Store<K>
        where
            K: Resource + Clone + 'static,
            K::DynamicType: Default + Eq + std::hash::Hash + Clone,
        {
            let (reader, mut writer) = reflector::store();
            writer.apply_watcher_event(&watcher::Event::Init);
            for object in objects {
                writer.apply_watcher_event(&watcher::Event::InitApply(object.clone()));
            }
            writer.apply_watcher_event(&watcher::Event::InitDone);
            reader
        }
        let metadata: Vec<PartialObjectMeta<Secret>> = self
            .secrets
            .iter()
            .map(|s| PartialObjectMeta { types: None, metadata: s.metadata.clone(), _phantom: Default::default() })
            .collect();
        fn decoded<K: Clone>(objects: &[K]) -> Vec<Decoded<K>> {
            objects.iter().cloned().map(|o| Decoded::Object(Arc::new(o))).collect()
        }
        Stores {
            blueprints: store(&decoded(std::slice::from_ref(&self.blueprint))),
            dogus: store(&decoded(&self.dogus)),
            components: store(&decoded(&self.components)),
            config_maps: store(&decoded(&self.config_maps)),
            health_config: store::<Decoded<ConfigMap>>(&[]),
            sensitive_configs: store(&decoded(&self.sensitive)),
            secret_metadata: store(&metadata),
            config_map_metadata: store::<PartialObjectMeta<ConfigMap>>(&[]),
            restores: blueprint_operator::other_operators::none("Restore"),
            debug_modes: blueprint_operator::other_operators::none("DebugMode"),
            blueprint_masks: store::<Decoded<blueprint_machine::api::BlueprintMaskObject>>(&[]),
            filled: blueprint_operator::caches::Filled::already(),
        }
    }

    /// Runs one reconcile; GETs of referenced Secrets are answered from `secrets`, everything else by
    /// `responder`.
    pub async fn reconcile(&self, responder: Responder) -> (Record, Vec<Recorded>) {
        let (outcome, requests, _) = self.reconcile_keeping(responder).await;
        (outcome, requests)
    }

    /// [`Self::reconcile`], and whether the context keeps a reading of the Blueprint afterwards.
    pub async fn reconcile_keeping(&self, responder: Responder) -> (Record, Vec<Recorded>, bool) {
        let (client, recorded, server) = self.client(responder);
        let stores = self.stores();
        let metrics = Metrics::shared();
        let local =
            LocalStore::new(stores.config_maps.clone(), kube::Api::namespaced(client.clone(), NAMESPACE), NAMESPACE);
        let descriptors = Arc::new(Registry::new(local, None, CacheSettings::default(), metrics.clone()));
        let identity = blueprint_operator::identity::OperatorIdentity::of_build("0.1.0");
        let context = Context::new(client, NAMESPACE.into(), identity, stores, descriptors, metrics)
            .with_clock(|| Timestamp::from_second(1_767_225_600).unwrap());
        let outcome = blueprint_operator::reconcile::reconcile(&context, crate::support::NAME, Detail::Full).await;
        let kept = context.readings.holds(crate::support::NAME);
        drop(context);
        server.abort();
        let requests = recorded.lock().unwrap().clone();
        (outcome, requests, kept)
    }

    fn client(&self, responder: Responder) -> (Client, Arc<Mutex<Vec<Recorded>>>, tokio::task::JoinHandle<()>) {
        let (service, handle) = tower_test::mock::pair::<http::Request<Body>, http::Response<Body>>();
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let secrets = self.secrets.clone();
        let log = recorded.clone();
        let server = tokio::spawn(async move {
            let mut handle = std::pin::pin!(handle);
            while let Some((request, send)) = handle.next_request().await {
                let method = request.method().to_string();
                let uri = request.uri().clone();
                let content_type =
                    request.headers().get(http::header::CONTENT_TYPE).map(|v| v.to_str().unwrap().to_owned());
                let bytes = request.into_body().collect_bytes().await.unwrap();
                let raw_body = String::from_utf8_lossy(&bytes).into_owned();
                let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                let query = uri
                    .query()
                    .unwrap_or("")
                    .split('&')
                    .filter(|p| !p.is_empty())
                    .map(|p| {
                        let (k, v) = p.split_once('=').unwrap_or((p, ""));
                        (k.to_owned(), v.to_owned())
                    })
                    .collect();
                let record = Recorded { method, path: uri.path().to_owned(), query, content_type, body, raw_body };
                log.lock().unwrap().push(record.clone());
                let secret_prefix = format!("/api/v1/namespaces/{NAMESPACE}/secrets/");
                let (code, answer) = match record.path.strip_prefix(&secret_prefix) {
                    Some(name) if record.method == "GET" => {
                        match secrets.iter().find(|s| s.metadata.name.as_deref() == Some(name)) {
                            Some(secret) => (200, serde_json::to_value(secret).unwrap()),
                            None => (404, not_found()),
                        }
                    }
                    _ => responder(&record),
                };
                if code == 0 {
                    // A transport failure (connection reset, timeout) instead of an answer.
                    send.send_error(std::io::Error::other("connection reset by peer"));
                    continue;
                }
                let response = http::Response::builder()
                    .status(code)
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .body(Body::from(serde_json::to_vec(&answer).unwrap()))
                    .unwrap();
                send.send_response(response);
            }
        });
        (Client::new(service, NAMESPACE), recorded, server)
    }
}

/// A ConfigMap in the registry format.
pub fn config_map<'a>(
    name: &str,
    kind: &str,
    dogu: Option<&str>,
    data: impl IntoIterator<Item = (&'a str, &'a str)>,
    resource_version: &str,
) -> ConfigMap {
    let mut labels =
        BTreeMap::from([("app".to_owned(), "ces".to_owned()), ("k8s.cloudogu.com/type".to_owned(), kind.to_owned())]);
    if let Some(dogu) = dogu {
        labels.insert("dogu.name".into(), dogu.into());
    }
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NAMESPACE.into()),
            labels: Some(labels),
            resource_version: Some(resource_version.into()),
            ..Default::default()
        },
        data: Some(data.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect()),
        ..Default::default()
    }
}

pub fn secret(name: &str, labels: &[(&str, &str)], data: &[(&str, &str)], resource_version: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NAMESPACE.into()),
            labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            resource_version: Some(resource_version.into()),
            ..Default::default()
        },
        data: Some(data.iter().map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec()))).collect()),
        ..Default::default()
    }
}
