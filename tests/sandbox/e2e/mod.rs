//! End to end: the real kube-runtime `Controller` with the simulated dogu and component operators, on
//! two backends. Each scenario of `scenarios` runs on the API emulator (tokio's paused clock, seconds
//! of virtual time) and on a real kube-apiserver with etcd (`make kube`; real time, the simulated
//! operators' delays and the scenario's pauses scaled down). `faults` holds what needs the emulator's
//! controls (injected 409s and 500s, dropped watches, compaction).

pub(crate) mod faults;
mod scenarios;
mod security;

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

use blueprint_machine::api::Blueprint;
use blueprint_operator::journal::JournalSettings;
use blueprint_operator::sandbox::api::LoggedRequest;
use blueprint_operator::sandbox::control_plane;
use blueprint_operator::sandbox::ecosystem::Behaviour;
use blueprint_operator::sandbox::seed;
use blueprint_operator::sandbox::session::{Backend, Sandbox, SandboxOptions};
use serde_json::Value;

pub const NAME: &str = "blueprint-ces";
const LIMIT: Duration = Duration::from_secs(600);

/// Where a scenario runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum On {
    /// The API emulator, on tokio's paused clock.
    Emulator,
    /// The shared real kube-apiserver, in real time.
    KubeApiserver,
}

impl On {
    /// A scenario's duration on this backend: virtual time on the emulator; a twentieth of it on a
    /// real server, where it is waited for.
    fn scale(self, duration: Duration) -> Duration {
        match self {
            On::Emulator => duration,
            On::KubeApiserver => duration / 20,
        }
    }
}

/// A sandbox on one backend, with the scenario's notion of time.
pub struct Scene {
    sandbox: Sandbox,
    pub on: On,
}

impl Deref for Scene {
    type Target = Sandbox;
    fn deref(&self) -> &Sandbox {
        &self.sandbox
    }
}

impl DerefMut for Scene {
    fn deref_mut(&mut self) -> &mut Sandbox {
        &mut self.sandbox
    }
}

impl Scene {
    /// A seeded sandbox on `on`, whose reconciles are recorded into the replay corpus
    /// (`tests/replay/<scenario>.jsonl`) when `RECORD_CORPUS` is set (`make record-corpus`; the
    /// emulator's runs only, whose virtual clock makes them reproducible).
    pub async fn start(on: On, scenario: Option<&str>, behaviour: Behaviour, cluster: &str) -> Scene {
        let journal =
            scenario.filter(|_| on == On::Emulator && std::env::var_os("RECORD_CORPUS").is_some()).map(|scenario| {
                let path =
                    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/replay/{scenario}.jsonl"));
                let _ = std::fs::remove_file(&path);
                JournalSettings { path, max_bytes: u64::MAX, keep: 0 }
            });
        let options = match on {
            On::Emulator => SandboxOptions { virtual_clock: true, behaviour, journal, ..Default::default() },
            On::KubeApiserver => {
                let namespace = control_plane::shared().namespace("e2e");
                return Scene::on_kube_apiserver(namespace, None, behaviour, cluster).await;
            }
        };
        Scene::seeded(options, On::Emulator, cluster).await
    }

    /// A seeded sandbox on the shared real API server in `namespace` (which exists); the controller
    /// connects with `operator` (default: the admin's).
    pub async fn on_kube_apiserver(
        namespace: String,
        operator: Option<kube::Config>,
        behaviour: Behaviour,
        cluster: &str,
    ) -> Scene {
        Scene::on_control_plane(control_plane::shared(), namespace, operator, behaviour, cluster).await
    }

    /// A seeded sandbox on the real API server of `plane`, in `namespace` (which exists).
    pub async fn on_control_plane(
        plane: &control_plane::ControlPlane,
        namespace: String,
        operator: Option<kube::Config>,
        behaviour: Behaviour,
        cluster: &str,
    ) -> Scene {
        let on = On::KubeApiserver;
        let options = SandboxOptions {
            backend: Backend::KubeApiserver {
                admin: Box::new(plane.admin_config(&namespace).await),
                operator: operator.map(Box::new),
            },
            namespace,
            behaviour: Behaviour {
                install: on.scale(behaviour.install),
                upgrade: on.scale(behaviour.upgrade),
                restart: on.scale(behaviour.restart),
                ..behaviour
            },
            debounce: on.scale(SandboxOptions::default().debounce),
            ..Default::default()
        };
        Scene::seeded(options, on, cluster).await
    }

    async fn seeded(options: SandboxOptions, on: On, cluster: &str) -> Scene {
        let sandbox = Sandbox::start(options, None).await.unwrap();
        seed::cluster(&sandbox.cluster, &sandbox.namespace, &seed::objects(cluster).unwrap()).await.unwrap();
        seed::registry(&sandbox.cluster, &sandbox.registry, &sandbox.namespace, &seed::builtin_descriptors())
            .await
            .unwrap();
        Scene { sandbox, on }
    }

    /// The default cluster, the default behaviour.
    pub async fn fresh(on: On, scenario: Option<&str>) -> Scene {
        Scene::start(on, scenario, Behaviour::default(), seed::DEFAULT_CLUSTER).await
    }

    /// Starts the operator (version 0.1.0) and applies `blueprint`: how most scenarios begin.
    pub async fn start_and_apply(&mut self, blueprint: &Blueprint) {
        self.start_controller("0.1.0");
        self.apply_blueprint(blueprint).await.unwrap();
    }

    /// Lets the scenario's time pass (scaled on a real server).
    pub async fn pause(&self, duration: Duration) {
        tokio::time::sleep(self.on.scale(duration)).await;
    }

    /// How long a scenario waits for what must happen.
    pub fn limit(&self) -> Duration {
        match self.on {
            On::Emulator => LIMIT,
            On::KubeApiserver => Duration::from_secs(90),
        }
    }

    /// The object in the scene's namespace.
    pub async fn get(&self, api_version: &str, kind: &str, name: &str) -> Option<Value> {
        self.cluster.get(api_version, kind, &self.namespace, name).await
    }

    /// Creates `object` in the scene's namespace.
    pub async fn create(&self, mut object: Value) -> Value {
        object["metadata"]["namespace"] = Value::String(self.namespace.clone());
        self.cluster.create(object).await.unwrap()
    }

    pub async fn edit(&self, api_version: &str, kind: &str, name: &str, change: impl FnMut(&mut Value)) {
        self.cluster.edit(api_version, kind, &self.namespace, name, change).await.unwrap();
    }

    pub async fn delete(&self, api_version: &str, kind: &str, name: &str) {
        self.cluster.delete(api_version, kind, &self.namespace, name).await.unwrap();
    }

    /// Waits until the object satisfies `done`; panics with the Blueprint's conditions if it never does.
    pub async fn wait_for(&mut self, (api_version, kind, name): (&str, &str, &str), done: impl FnMut(&Value) -> bool) {
        let limit = self.limit();
        if self.sandbox.wait_object((api_version, kind, name), limit, done).await.is_none() {
            panic!("{kind} {name} never got there: {}", conditions(self).await);
        }
    }

    /// Waits until `done` holds for the Blueprint.
    pub async fn wait_blueprint(&mut self, done: impl FnMut(&Blueprint) -> bool) -> Option<Blueprint> {
        let limit = self.limit();
        self.sandbox.wait_until(NAME, limit, done).await
    }

    /// The operator's own requests so far (recorded by its client, on either backend).
    pub fn operator_requests(&self) -> Vec<LoggedRequest> {
        self.requests.all()
    }

    pub async fn shutdown(self) {
        self.sandbox.shutdown().await;
    }

    /// The sandbox, for tests that use it directly.
    pub fn into_sandbox(self) -> Sandbox {
        self.sandbox
    }
}

/// The default cluster on the emulator (for the emulator-only tests elsewhere).
pub async fn fresh_sandbox() -> Sandbox {
    Scene::fresh(On::Emulator, None).await.into_sandbox()
}

pub fn default_blueprint() -> Blueprint {
    serde_saphyr::from_str(seed::DEFAULT_BLUEPRINT).unwrap()
}

pub fn blueprint(yaml: &str) -> Blueprint {
    serde_saphyr::from_str(yaml).unwrap()
}

pub fn completed(blueprint: &Blueprint) -> bool {
    condition_is(blueprint, "Completed", "True")
}

pub fn condition_is(blueprint: &Blueprint, type_: &str, status: &str) -> bool {
    blueprint.status.as_ref().is_some_and(|s| {
        s.observed_generation == blueprint.metadata.generation
            && s.conditions.iter().any(|c| c.type_ == type_ && c.status == status)
    })
}

/// The Blueprint's conditions, for a failing assertion's message.
pub async fn conditions(sandbox: &Sandbox) -> String {
    format!("{:#?}", sandbox.blueprint(NAME).await.and_then(|b| b.status).map(|s| s.conditions.clone()))
}

/// Metrics of the controller, by name (summing label sets) or `name{labels}`.
pub fn metric(sandbox: &Sandbox, prefix: &str) -> f64 {
    sandbox
        .metrics
        .encode()
        .lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn writes_of_controller(sandbox: &Sandbox) -> f64 {
    ["create", "update", "patch", "delete"]
        .iter()
        .map(|v| metric(sandbox, &format!("blueprint_operator_api_requests_total{{verb=\"{v}\"}}")))
        .sum()
}

/// Requests that change the ecosystem on the controller's behalf (not the Blueprint's status, not
/// events, not the local dogu registry: a cache of descriptors, filled whenever a descriptor comes from
/// the remote registry).
fn ecosystem_writes(requests: &[LoggedRequest]) -> Vec<String> {
    requests
        .iter()
        .filter(|r| r.method != "GET" && (200..300).contains(&r.status))
        .filter(|r| !r.path.ends_with("/status") && !r.path.contains("/events") && !r.path.contains("/leases"))
        .filter(|r| !r.path.contains("/configmaps/dogu-spec-") && !r.body.contains("local-dogu-registry"))
        .filter(|r| {
            r.path.contains("/dogus")
                || r.path.contains("/components")
                || r.path.contains("/configmaps")
                || r.path.contains("/secrets")
        })
        .map(|r| {
            format!(
                "{} {}",
                r.method,
                r.path.rsplit('/').take(2).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("/")
            )
        })
        .collect()
}

/// No dogu or component created twice by the operator, no config key of the blueprint missing.
async fn assert_no_duplicates_or_losses(scene: &Scene) {
    let mut creates: BTreeMap<String, usize> = BTreeMap::new();
    for r in scene.operator_requests().iter().filter(|r| r.method == "POST" && r.status == 201) {
        if r.path.ends_with("/dogus") || r.path.ends_with("/components") {
            let object: Value = serde_json::from_str(&r.body).unwrap();
            *creates.entry(object["metadata"]["name"].as_str().unwrap().to_owned()).or_default() += 1;
        }
    }
    assert!(creates.values().all(|n| *n == 1), "created more than once: {creates:?}");
    let global = scene.get("v1", "ConfigMap", "global-config").await.unwrap();
    let text = global["data"]["config.yaml"].as_str().unwrap();
    for expected in ["fqdn: ces.example.com", "admin_group: ces-admins", "domain: example.com"] {
        assert!(text.contains(expected), "lost {expected:?}: {text}");
    }
    let redmine = scene.get("v1", "ConfigMap", "redmine-config").await.unwrap();
    assert!(redmine["data"]["config.yaml"].as_str().unwrap().contains("root: WARN"));
    let cas = scene.get("v1", "ConfigMap", "cas-config").await.unwrap();
    assert!(cas["data"]["config.yaml"].as_str().unwrap().contains("timeout: \"120\""));
}

/// Each scenario as two tests: `on_the_emulator::<scenario>` (paused clock) and
/// `on_kube_apiserver::<scenario>` (the shared real control plane, a namespace of its own). The
/// scenarios are named with their module.
macro_rules! on_both_backends {
    ($($module:ident: [$($scenario:ident),* $(,)?]),* $(,)?) => {
        mod on_the_emulator {
            $($(
                #[tokio::test(start_paused = true)]
                async fn $scenario() {
                    super::$module::$scenario(super::On::Emulator).await;
                }
            )*)*
        }
        mod on_kube_apiserver {
            $($(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    if std::env::var_os("E2E_LOG").is_some() {
                        let _ = tracing_subscriber::fmt().with_env_filter(std::env::var("E2E_LOG").unwrap()).try_init();
                    }
                    super::$module::$scenario(super::On::KubeApiserver).await;
                }
            )*)*
        }
    };
}

on_both_backends!(
    scenarios: [
        a_fresh_install_completes_within_a_request_budget,
        the_start_fills_each_cache_with_one_request,
        descriptors_come_from_memory_then_the_local_registry_never_the_network_again,
        an_unavailable_registry_requeues_until_it_answers,
        a_reconcile_request_is_handled_at_once_past_the_backoff,
        after_completion_reconciles_write_nothing_and_emit_nothing,
        an_upgrade_pauses_dogus_before_their_config_changes,
        the_operator_upgrades_itself_before_anything_else,
        an_unhealthy_dogu_blocks_and_the_ecosystem_recovers,
        a_stopped_blueprint_shows_its_diff_and_writes_nothing,
        a_config_change_waits_for_the_restart,
        a_second_blueprint_stops_all_changes_until_it_is_gone,
        drift_is_corrected_after_completion,
        a_forbidden_downgrade_stays_not_executable,
        an_invalid_blueprint_is_reported_and_nothing_is_applied,
        converges_when_the_operator_restarts_at_any_point,
        a_blueprint_mask_object_masks_the_blueprint_and_its_changes_are_applied,
        a_referenced_config_map_feeds_the_config_and_its_edits_are_applied,
        a_secret_value_fills_the_normal_config_and_is_never_shown,
    ],
    security: [a_blueprint_cannot_read_the_operators_or_helms_secrets, a_status_changed_by_hand_is_restored],
);
