//! One sandbox: the emulator, the simulated operators and the real controller (the code of `run`),
//! which can be stopped and restarted (an operator restart, or the rollout of a new operator version).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use blueprint_machine::api::Blueprint;

use super::api::{ApiError, Clock, Emulator};
use super::dogu_registry::{RegistryServer, Served};
use super::ecosystem::{self, Behaviour};
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

pub struct SandboxOptions {
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
}

impl Default for SandboxOptions {
    fn default() -> Self {
        SandboxOptions {
            namespace: "ecosystem".into(),
            behaviour: Behaviour::default(),
            debounce: Duration::from_secs(1),
            operator_version: env!("CARGO_PKG_VERSION").into(),
            follow_self_upgrade: true,
            virtual_clock: false,
            journal: None,
        }
    }
}

struct RunningController {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
    version: String,
}

pub struct Sandbox {
    pub emulator: Emulator,
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
    ecosystem: JoinHandle<()>,
    installed: mpsc::UnboundedReceiver<(String, String)>,
    follow_self_upgrade: bool,
    /// Versions the operator was restarted with, in order.
    pub rollouts: Vec<String>,
    /// For each rollout, how many requests the emulator had received when it happened.
    pub rollout_marks: Vec<usize>,
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
        let emulator = Emulator::new(clock.clone());
        let transport = match serve {
            Some(address) => Transport::Http(
                emulator
                    .serve(address)
                    .await
                    .map_err(|e| std::io::Error::new(e.kind(), format!("cannot serve on {address}: {e}")))?,
            ),
            None => Transport::InProcess,
        };
        let registry =
            RegistryServer::new(Some((REGISTRY_CREDENTIALS.0.to_owned(), REGISTRY_CREDENTIALS.1.to_owned())));
        let registry_served = registry.serve(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let (sender, installed) = mpsc::unbounded_channel();
        let ecosystem = tokio::spawn(ecosystem::run(
            emulator.client(&options.namespace),
            options.namespace.clone(),
            options.behaviour,
            clock.clone(),
            sender,
        ));
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
            emulator,
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

    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// The controller's client: over HTTP when serving, else in-process; every request counted.
    fn controller_client(&self) -> kube::Client {
        match self.transport {
            Transport::Http(address) => {
                let url = format!("http://{address}").parse().expect("a valid URL");
                let mut config = kube::Config::new(url);
                config.default_namespace = self.namespace.clone();
                crate::run::client(config, self.metrics.clone()).expect("a client for the emulator")
            }
            Transport::InProcess => {
                let metrics = self.metrics.clone();
                let service = tower::ServiceBuilder::new()
                    .map_request(move |request: http::Request<kube::client::Body>| {
                        metrics.count_request(&request);
                        request
                    })
                    .service(tower::util::MapRequestLayer::new(convert_body).layer(self.emulator.router()));
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

    /// Starts the controller as version `version` (the same code as `run`).
    pub fn start_controller(&mut self, version: &str) {
        let (stop, stopped) = oneshot::channel::<()>();
        let options = Options {
            namespace: self.namespace.clone(),
            operator_version: version.to_owned(),
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
            controller::run_controller(client, options, metrics, Arc::new(AtomicBool::new(false)), shutdown).await;
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
                self.rollout_marks.push(self.emulator.requests().len());
                self.start_controller(&version);
            }
        }
    }

    /// Creates the Blueprint, or replaces its spec.
    pub fn apply_blueprint(&self, blueprint: &Blueprint) -> Result<Value, ApiError> {
        let name = blueprint.metadata.name.clone().unwrap_or_default();
        let mut object = serde_json::to_value(blueprint).expect("blueprints serialize");
        object["metadata"] = json!({"name": name, "namespace": self.namespace, "labels": blueprint.metadata.labels});
        if let Some(map) = object.as_object_mut() {
            map.remove("status");
        }
        match self.emulator.get("k8s.cloudogu.com/v2", "Blueprint", &self.namespace, &name) {
            None => self.emulator.create(object),
            Some(_) => {
                let spec = object.get("spec").cloned().unwrap_or(Value::Null);
                self.emulator.edit("k8s.cloudogu.com/v2", "Blueprint", &self.namespace, &name, |o| o["spec"] = spec)
            }
        }
    }

    /// The stored Blueprint.
    pub fn blueprint(&self, name: &str) -> Option<Blueprint> {
        self.emulator
            .get("k8s.cloudogu.com/v2", "Blueprint", &self.namespace, name)
            // Leniently: a Blueprint whose spec does not fit is shown with its status.
            .and_then(|v| Blueprint::decode_lenient(&v.to_string()).ok())
    }

    /// The status of a condition of the Blueprint.
    pub fn condition(&self, name: &str, type_: &str) -> Option<(String, String)> {
        let blueprint = self.blueprint(name)?;
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
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            self.follow_rollouts().await;
            if let Some(blueprint) = self.blueprint(name)
                && done(&blueprint)
            {
                return Some(blueprint);
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Events recorded in the namespace, in the order they were created, as `(reason, note)`.
    pub fn events(&self) -> Vec<(String, String)> {
        let mut events = self.emulator.list("events.k8s.io/v1", "Event");
        events.sort_by_key(|e| e.pointer("/metadata/uid").and_then(Value::as_str).map(str::to_owned));
        events
            .iter()
            .map(|e| {
                (e["reason"].as_str().unwrap_or_default().to_owned(), e["note"].as_str().unwrap_or_default().to_owned())
            })
            .collect()
    }

    pub async fn shutdown(mut self) {
        self.stop_controller().await;
        self.ecosystem.abort();
        self.flush_journal();
    }

    /// Waits until every reconcile recorded so far is in the journal file.
    pub fn flush_journal(&self) {
        if let Some(journal) = &self.journal {
            journal.flush();
        }
    }
}

/// kube's request body into one axum's router takes.
fn convert_body(request: http::Request<kube::client::Body>) -> http::Request<axum::body::Body> {
    request.map(axum::body::Body::new)
}

use tower::Layer;
