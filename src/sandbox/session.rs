//! One sandbox: a cluster (the embedded emulator or a real kube-apiserver), the simulated operators and
//! the real controller (the code of `run`), which can be stopped and restarted (an operator restart,
//! or the rollout of a new operator version).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use blueprint_machine::api::Blueprint;

use crate::identity::OperatorIdentity;

use super::api::{ApiError, Clock, Emulator};
use super::cluster::{Cluster, Remote};
use super::dogu_registry::{RegistryServer, Served};
use super::ecosystem::{self, Behaviour};
use super::recording::{RecordLayer, Requests};
use crate::controller::{self, Options};
use crate::descriptors::{CacheSettings, RemoteRegistry, RemoteSettings, UrlSchema};
use crate::journal::{JournalSettings, JournalWriter};
use crate::metrics::Metrics;

/// How the controller reaches the emulator.
#[derive(Clone, Copy, Debug)]
pub enum Transport {
    /// A tower service in the same process (tests).
    InProcess,
    /// HTTP on loopback, exactly as `run` talks to a cluster.
    Http(SocketAddr),
}

/// Which cluster a sandbox works on.
#[derive(Clone, Default)]
pub enum Backend {
    /// The embedded API emulator (in process, or over HTTP when served).
    #[default]
    Emulator,
    /// A real kube-apiserver: `admin` seeds it and runs the simulated operators; the controller
    /// connects with `operator` (default: `admin`; a ServiceAccount's for the RBAC tests).
    KubeApiserver { admin: Box<kube::Config>, operator: Option<Box<kube::Config>> },
}

pub struct SandboxOptions {
    pub backend: Backend,
    pub namespace: String,
    pub behaviour: Behaviour,
    pub debounce: Duration,
    /// The version the operator runs initially.
    pub operator_version: String,
    /// Restart the controller with the new version when the component operator installs it.
    pub follow_self_upgrade: bool,
    /// A virtual clock following tokio's time (for paused-clock tests) instead of the wall clock.
    pub virtual_clock: bool,
    /// Record every reconcile (of every operator version the sandbox runs) in this journal.
    pub journal: Option<JournalSettings>,
    /// Where the remote dogu registry listens (loopback; a node's Pods reach it on this machine's end
    /// of the link to the node).
    pub registry_address: std::net::IpAddr,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        SandboxOptions {
            backend: Backend::Emulator,
            namespace: "ecosystem".into(),
            behaviour: Behaviour::default(),
            debounce: Duration::from_secs(1),
            operator_version: env!("CARGO_PKG_VERSION").into(),
            follow_self_upgrade: true,
            virtual_clock: false,
            journal: None,
            registry_address: std::net::Ipv4Addr::LOCALHOST.into(),
        }
    }
}

struct RunningController {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
    version: String,
}

pub struct Sandbox {
    /// Where the ecosystem lives.
    pub cluster: Cluster,
    /// The controller's connection to a real API server (`None`: the emulator).
    operator_config: Option<kube::Config>,
    /// The operator's own requests, in order (on either backend).
    pub requests: Requests,
    /// The remote dogu registry, reached by the controller over HTTP through its registry client.
    pub registry: RegistryServer,
    registry_served: Served,
    pub namespace: String,
    pub clock: Clock,
    /// Metrics of the controller (kept across restarts).
    pub metrics: Arc<Metrics>,
    transport: Transport,
    debounce: Duration,
    journal: Option<Arc<JournalWriter>>,
    controller: Option<RunningController>,
    ecosystem: Ecosystem,
    installed: mpsc::UnboundedReceiver<(String, String)>,
    follow_self_upgrade: bool,
    /// Versions the operator was restarted with, in order.
    pub rollouts: Vec<String>,
    /// For each rollout, how many requests the operator had sent when it happened.
    pub rollout_marks: Vec<usize>,
}

/// The simulated dogu and component operators: waiting for the first controller start (the cluster is
/// seeded by then), running, or stopped.
enum Ecosystem {
    Waiting { client: kube::Client, behaviour: Behaviour, sender: mpsc::UnboundedSender<(String, String)> },
    Running(JoinHandle<()>),
    Stopped,
}

/// The simple name of the operator's own component.
pub fn own_component() -> &'static str {
    blueprint_machine::naming::OWN_COMPONENT.rsplit('/').next().unwrap_or_default()
}

/// The sandbox registry's basic-auth credentials.
pub const REGISTRY_CREDENTIALS: (&str, &str) = ("sandbox", "sandbox-registry-password");

impl Sandbox {
    /// An emulator with the CRDs, and the simulated operators; seed it, then start the controller.
    pub async fn start(options: SandboxOptions, serve: Option<SocketAddr>) -> std::io::Result<Self> {
        let clock: Clock = if options.virtual_clock {
            let start = tokio::time::Instant::now();
            Arc::new(move || {
                Timestamp::from_second(1_767_225_600).expect("a valid time")
                    + SignedDuration::try_from(start.elapsed()).unwrap_or_default()
            })
        } else {
            Arc::new(Timestamp::now)
        };
        let (cluster, transport, operator_config, ecosystem_client) =
            match options.backend {
                Backend::Emulator => {
                    let emulator = Emulator::new(clock.clone());
                    // The namespace exists, as on a cluster (kubectl's NotFound for an object in it
                    // then names the object, not the namespace).
                    let namespace =
                        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": options.namespace}});
                    emulator.create(namespace).map_err(|e| std::io::Error::other(e.message))?;
                    let transport =
                        match serve {
                            Some(address) => Transport::Http(emulator.serve(address).await.map_err(|e| {
                                std::io::Error::new(e.kind(), format!("cannot serve on {address}: {e}"))
                            })?),
                            None => Transport::InProcess,
                        };
                    let client = emulator.client(&options.namespace);
                    (Cluster::Emulator(emulator), transport, None, client)
                }
                Backend::KubeApiserver { admin, operator } => {
                    let mut admin = *admin;
                    admin.default_namespace = options.namespace.clone();
                    let client = kube::Client::try_from(admin.clone()).map_err(std::io::Error::other)?;
                    let operator = operator.map_or(admin, |operator| *operator);
                    (Cluster::Remote(Remote::new(client.clone())), Transport::InProcess, Some(operator), client)
                }
            };
        let registry =
            RegistryServer::new(Some((REGISTRY_CREDENTIALS.0.to_owned(), REGISTRY_CREDENTIALS.1.to_owned())));
        let registry_served = registry.serve(SocketAddr::new(options.registry_address, 0)).await?;
        let (sender, installed) = mpsc::unbounded_channel();
        // The simulated operators start with the first controller, once the cluster is seeded: an
        // operator acting on an object the seeder has not finished (its status comes in a second
        // write) would act on what no real cluster shows.
        let ecosystem = Ecosystem::Waiting { client: ecosystem_client, behaviour: options.behaviour, sender };
        let metrics = Metrics::shared();
        let journal = match options.journal {
            Some(settings) => {
                let shown = settings.path.display().to_string();
                let journal = JournalWriter::start(settings, metrics.clone())
                    .map_err(|e| std::io::Error::new(e.kind(), format!("cannot open the journal {shown}: {e}")))?;
                Some(Arc::new(journal))
            }
            None => None,
        };
        let mut sandbox = Sandbox {
            cluster,
            operator_config,
            requests: Requests::default(),
            registry,
            registry_served,
            namespace: options.namespace,
            clock,
            metrics,
            transport,
            debounce: options.debounce,
            journal,
            controller: None,
            ecosystem,
            installed,
            follow_self_upgrade: options.follow_self_upgrade,
            rollouts: Vec::new(),
            rollout_marks: Vec::new(),
        };
        sandbox.rollouts.push(options.operator_version.clone());
        Ok(sandbox)
    }

    /// The emulator, for what only it can do (its fault controls, its log of every client's requests).
    /// Panics on a real API server: a test that needs it runs on the emulator only.
    pub fn emulator(&self) -> &Emulator {
        self.cluster.emulator().expect("this needs the API emulator's controls: run it on the emulator")
    }

    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// The controller's client (every request counted and recorded): to the real API server, or to the
    /// emulator over HTTP when serving, else in process.
    fn controller_client(&self) -> kube::Client {
        let counting = crate::run::counting(self.metrics.clone());
        let recording = RecordLayer(self.requests.clone());
        let config = match (&self.operator_config, self.transport) {
            (Some(config), _) => Some(config.clone()),
            (None, Transport::Http(address)) => {
                let mut config = kube::Config::new(format!("http://{address}").parse().expect("a valid URL"));
                config.default_namespace = self.namespace.clone();
                Some(config)
            }
            (None, Transport::InProcess) => None,
        };
        match config {
            Some(config) => kube::client::ClientBuilder::try_from(config)
                .expect("a client for the cluster")
                .with_layer(&counting)
                .with_layer(&recording)
                .build(),
            None => {
                let service = tower::ServiceBuilder::new()
                    .layer(counting)
                    .layer(recording)
                    .service(tower::util::MapRequestLayer::new(convert_body).layer(self.emulator().router()));
                kube::Client::new(service, self.namespace.clone())
            }
        }
    }

    /// The endpoint of the sandbox's remote dogu registry.
    pub fn registry_endpoint(&self) -> String {
        self.registry_served.endpoint()
    }

    /// The registry client `run` would build for the sandbox's registry.
    fn registry_client(&self) -> RemoteRegistry {
        RemoteRegistry::new(&RemoteSettings {
            endpoint: self.registry_endpoint(),
            schema: UrlSchema::Default,
            credentials: Some((REGISTRY_CREDENTIALS.0.to_owned(), REGISTRY_CREDENTIALS.1.to_owned())),
            proxy: None,
            timeout: Duration::from_secs(10),
            extra_ca: None,
        })
        .expect("a client for the sandbox registry")
    }

    /// Starts the simulated operators, if they are not running yet.
    pub fn start_ecosystem(&mut self) {
        if let Ecosystem::Waiting { client, behaviour, sender } =
            std::mem::replace(&mut self.ecosystem, Ecosystem::Stopped)
        {
            let task =
                tokio::spawn(ecosystem::run(client, self.namespace.clone(), behaviour, self.clock.clone(), sender));
            self.ecosystem = Ecosystem::Running(task);
        }
    }

    /// Starts the controller as version `version` (the same code as `run`); the simulated operators
    /// too, at the first start.
    pub fn start_controller(&mut self, version: &str) {
        self.start_ecosystem();
        let (stop, stopped) = oneshot::channel::<()>();
        let options = Options {
            namespace: self.namespace.clone(),
            identity: OperatorIdentity::of_build(version),
            debounce: controller::Debounce::window(self.debounce),
            registry: Some(self.registry_client()),
            descriptor_cache: CacheSettings::default(),
            journal: self.journal.clone(),
            clock: Some(self.clock.clone()),
        };
        let client = self.controller_client();
        let metrics = self.metrics.clone();
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped.await;
            };
            controller::run_controller(client, options, metrics, Arc::default(), shutdown).await;
        });
        self.controller = Some(RunningController { stop, task, version: version.to_owned() });
    }

    /// Stops the controller; its in-flight reconcile finishes first.
    pub async fn stop_controller(&mut self) {
        if let Some(running) = self.controller.take() {
            let _ = running.stop.send(());
            let _ = running.task.await;
        }
    }

    /// Kills the controller at once (a crash: whatever it was doing is cut off).
    pub fn kill_controller(&mut self) {
        if let Some(running) = self.controller.take() {
            running.task.abort();
        }
    }

    pub fn controller_version(&self) -> Option<&str> {
        self.controller.as_ref().map(|c| c.version.as_str())
    }

    /// Restarts the controller when the component operator installed a new version of it.
    pub async fn follow_rollouts(&mut self) {
        while let Ok((name, version)) = self.installed.try_recv() {
            if name == own_component()
                && self.follow_self_upgrade
                && self.controller_version() != Some(version.as_str())
            {
                self.stop_controller().await;
                self.rollouts.push(version.clone());
                self.rollout_marks.push(self.requests.len());
                self.start_controller(&version);
            }
        }
    }

    /// Creates the Blueprint, or replaces its spec.
    pub async fn apply_blueprint(&self, blueprint: &Blueprint) -> Result<Value, ApiError> {
        let name = blueprint.metadata.name.clone().unwrap_or_default();
        let mut object = serde_json::to_value(blueprint).expect("blueprints serialize");
        object["metadata"] = json!({"name": name, "namespace": self.namespace, "labels": blueprint.metadata.labels});
        if let Some(map) = object.as_object_mut() {
            map.remove("status");
        }
        match self.cluster.get("k8s.cloudogu.com/v3", "Blueprint", &self.namespace, &name).await {
            None => self.cluster.create(object).await,
            Some(_) => {
                let spec = object.get("spec").cloned().unwrap_or(Value::Null);
                self.cluster
                    .edit("k8s.cloudogu.com/v3", "Blueprint", &self.namespace, &name, |o| o["spec"] = spec.clone())
                    .await
            }
        }
    }

    /// The stored Blueprint.
    pub async fn blueprint(&self, name: &str) -> Option<Blueprint> {
        self.cluster
            .get("k8s.cloudogu.com/v3", "Blueprint", &self.namespace, name)
            .await
            .and_then(|object| lenient_blueprint(&object))
    }

    /// The status of a condition of the Blueprint.
    pub async fn condition(&self, name: &str, type_: &str) -> Option<(String, String)> {
        let blueprint = self.blueprint(name).await?;
        let status = blueprint.status?;
        let condition = status.conditions.iter().find(|c| c.type_ == type_)?;
        Some((condition.status.clone(), condition.reason.clone()))
    }

    /// Waits (following rollouts) until `done` holds for the stored Blueprint, or `timeout` passes.
    pub async fn wait_until(
        &mut self,
        name: &str,
        timeout: Duration,
        mut done: impl FnMut(&Blueprint) -> bool,
    ) -> Option<Blueprint> {
        let found = self
            .wait_object(("k8s.cloudogu.com/v3", "Blueprint", name), timeout, |object| {
                lenient_blueprint(object).is_some_and(|blueprint| done(&blueprint))
            })
            .await?;
        lenient_blueprint(&found)
    }

    /// Waits (following rollouts) until the object exists and `done` holds for it, or `timeout` passes.
    pub async fn wait_object(
        &mut self,
        (api_version, kind, name): (&str, &str, &str),
        timeout: Duration,
        mut done: impl FnMut(&Value) -> bool,
    ) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            self.follow_rollouts().await;
            if let Some(object) = self.cluster.get(api_version, kind, &self.namespace, name).await
                && done(&object)
            {
                return Some(object);
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Events recorded in the namespace, in the order they were created, as `(reason, note)`.
    pub async fn events(&self) -> Vec<(String, String)> {
        let mut events = self.cluster.list("events.k8s.io/v1", "Event", &self.namespace).await;
        let key = |e: &Value| {
            let text = |pointer: &str| e.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_owned();
            (text("/eventTime"), text("/metadata/creationTimestamp"), text("/metadata/uid"))
        };
        events.sort_by_key(key);
        events
            .iter()
            .map(|e| {
                (e["reason"].as_str().unwrap_or_default().to_owned(), e["note"].as_str().unwrap_or_default().to_owned())
            })
            .collect()
    }

    /// The events about Blueprint `name`, oldest first, for display.
    pub async fn event_lines(&self, name: &str) -> Vec<crate::progress::EventLine> {
        let events = self.cluster.list("events.k8s.io/v1", "Event", &self.namespace).await;
        crate::progress::blueprint_events(&events, name)
    }

    /// The Dogus and Components of the namespace, as far as they decode.
    pub async fn workload(&self) -> (Vec<blueprint_machine::api::Dogu>, Vec<blueprint_machine::api::Component>) {
        let dogus = self.cluster.list("k8s.cloudogu.com/v2", "Dogu", &self.namespace).await;
        let components = self.cluster.list("k8s.cloudogu.com/v1", "Component", &self.namespace).await;
        (
            dogus.into_iter().filter_map(|d| serde_json::from_value(d).ok()).collect(),
            components.into_iter().filter_map(|c| serde_json::from_value(c).ok()).collect(),
        )
    }

    pub async fn shutdown(mut self) {
        self.stop_controller().await;
        if let Ecosystem::Running(task) = &self.ecosystem {
            task.abort();
        }
        self.flush_journal();
    }

    /// Waits until every reconcile recorded so far is in the journal file.
    pub fn flush_journal(&self) {
        if let Some(journal) = &self.journal {
            journal.flush();
        }
    }
}

/// A stored Blueprint, leniently: one whose spec does not fit is shown with its status.
fn lenient_blueprint(object: &Value) -> Option<Blueprint> {
    Blueprint::decode_lenient(&object.to_string()).ok()
}

/// kube's request body into one axum's router takes.
fn convert_body(request: http::Request<kube::client::Body>) -> http::Request<axum::body::Body> {
    request.map(axum::body::Body::new)
}

use tower::Layer;
