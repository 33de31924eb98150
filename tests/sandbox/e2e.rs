//! End to end: the real kube-runtime `Controller` against the emulator, with the simulated dogu and
//! component operators, on tokio's paused clock.

use std::collections::BTreeMap;
use std::time::Duration;

use blueprint_machine::api::Blueprint;
use blueprint_operator::journal::JournalSettings;
use blueprint_operator::sandbox::api::LoggedRequest;
use blueprint_operator::sandbox::dogu_registry::Fault;
use blueprint_operator::sandbox::ecosystem::Behaviour;
use blueprint_operator::sandbox::seed;
use blueprint_operator::sandbox::session::{Sandbox, SandboxOptions};
use serde_json::{Value, json};

pub const NAME: &str = "blueprint-ces";
const NS: &str = "ecosystem";
const LIMIT: Duration = Duration::from_secs(600);

pub fn default_blueprint() -> Blueprint {
    serde_saphyr::from_str(seed::DEFAULT_BLUEPRINT).unwrap()
}

pub fn blueprint(yaml: &str) -> Blueprint {
    serde_saphyr::from_str(yaml).unwrap()
}

async fn sandbox_with(behaviour: Behaviour, cluster: &str) -> Sandbox {
    recorded_sandbox(None, behaviour, cluster).await
}

/// A sandbox whose reconciles are recorded into the replay corpus (`tests/replay/<scenario>.jsonl`)
/// when `RECORD_CORPUS` is set (`make record-corpus`).
async fn recorded_sandbox(scenario: Option<&str>, behaviour: Behaviour, cluster: &str) -> Sandbox {
    let journal = scenario.filter(|_| std::env::var_os("RECORD_CORPUS").is_some()).map(|scenario| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/replay/{scenario}.jsonl"));
        let _ = std::fs::remove_file(&path);
        JournalSettings { path, max_bytes: u64::MAX, keep: 0 }
    });
    let options = SandboxOptions { virtual_clock: true, behaviour, journal, ..Default::default() };
    let sandbox = Sandbox::start(options, None).await.unwrap();
    seed::cluster(&sandbox.emulator, &sandbox.namespace, &seed::objects(cluster).unwrap()).unwrap();
    seed::registry(&sandbox.emulator, &sandbox.registry, &sandbox.namespace, &seed::builtin_descriptors()).unwrap();
    sandbox
}

pub async fn fresh_sandbox() -> Sandbox {
    sandbox_with(Behaviour::default(), seed::DEFAULT_CLUSTER).await
}

async fn fresh_recorded(scenario: &str) -> Sandbox {
    recorded_sandbox(Some(scenario), Behaviour::default(), seed::DEFAULT_CLUSTER).await
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

pub fn conditions(sandbox: &Sandbox) -> String {
    format!("{:#?}", sandbox.blueprint(NAME).and_then(|b| b.status).map(|s| s.conditions.clone()))
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

/// Requests that change the ecosystem on the controller's behalf (not status reports of the simulated
/// operators, not the Blueprint's status, not events, not the local dogu registry: a cache of
/// descriptors, filled whenever a descriptor comes from the remote registry).
fn ecosystem_writes(requests: &[LoggedRequest]) -> Vec<String> {
    requests
        .iter()
        .filter(|r| r.method != "GET" && r.status < 300)
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

#[tokio::test(start_paused = true)]
async fn a_fresh_install_completes_within_a_request_budget() {
    let mut sandbox = fresh_recorded("fresh-install").await;
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&default_blueprint()).unwrap();
    let done = sandbox.wait_until(NAME, LIMIT, completed).await;
    assert!(done.is_some(), "not completed: {}", conditions(&sandbox));
    let status = done.unwrap().status.unwrap();
    assert!(status.state_diff.as_ref().unwrap().is_empty());

    // Every dogu and component of the blueprint exists, created once.
    for dogu in ["ldap", "postfix", "cas", "postgresql", "redmine", "nginx-ingress", "nginx-static"] {
        let object = sandbox.emulator.get("k8s.cloudogu.com/v2", "Dogu", NS, dogu).unwrap();
        assert_eq!(object["status"]["health"], "available");
        let creates = sandbox
            .emulator
            .requests()
            .iter()
            .filter(|r| r.method == "POST" && r.status == 201 && r.body.contains(&format!("\"name\":\"{dogu}\"")))
            .count();
        assert_eq!(creates, 1, "{dogu} created once");
    }
    let secret = sandbox.emulator.get("v1", "Secret", NS, "redmine-config").unwrap();
    assert!(secret["data"]["config.yaml"].is_string(), "the sensitive config was written");

    // Budgets: writes, status writes per reconcile, the whole run's requests.
    let reconciles = metric(&sandbox, "blueprint_operator_reconciles_total");
    let status_writes = metric(&sandbox, "blueprint_operator_status_writes_total");
    let requests = metric(&sandbox, "blueprint_operator_api_requests_total");
    println!(
        "fresh install: {reconciles} reconciles, {status_writes} status writes, {requests} requests, {} events",
        sandbox.events().len()
    );
    assert!(status_writes <= reconciles, "at most one status write per reconcile: {status_writes} > {reconciles}");
    assert!(requests <= 60.0, "the fresh install took {requests} requests");
    assert!(reconciles <= 8.0, "the fresh install took {reconciles} reconciles");

    // Descriptors: one authenticated request per wanted dogu, each added to the local registry once.
    let fetched = sandbox.registry.requests();
    assert_eq!(fetched.len(), 7, "{fetched:#?}");
    assert!(fetched.iter().all(|r| r.status == 200 && r.user.as_deref() == Some("sandbox")), "{fetched:#?}");
    let cas = sandbox.emulator.get("v1", "ConfigMap", NS, "dogu-spec-cas").unwrap();
    assert_eq!(cas["metadata"]["labels"]["k8s.cloudogu.com/type"], "local-dogu-registry");
    let stored: Value = serde_json::from_str(cas["data"]["7.1.5-2"].as_str().unwrap()).unwrap();
    assert_eq!(stored["Name"], "official/cas", "the whole dogu.json is stored");
    assert!(stored.get("Image").is_some(), "the whole dogu.json is stored, not only what validation reads");
    sandbox.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn descriptors_come_from_memory_then_the_local_registry_never_the_network_again() {
    let mut sandbox = fresh_sandbox().await;
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&default_blueprint()).unwrap();
    sandbox.wait_until(NAME, LIMIT, completed).await.unwrap();
    let fetched = sandbox.registry.requests().len();
    let lookups = metric(&sandbox, "blueprint_operator_descriptor_lookups_total{layer=\"memory\",result=\"hit\"}");

    // Reconciles after completion (triggered by config changes) are answered from memory.
    let labels = json!({"app": "ces", "dogu.name": "other", "k8s.cloudogu.com/type": "dogu-config"});
    sandbox
        .emulator
        .create(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other-config", "namespace": NS, "labels": labels}}))
        .unwrap();
    tokio::time::sleep(Duration::from_secs(30)).await;
    let memory_hits =
        metric(&sandbox, "blueprint_operator_descriptor_lookups_total{layer=\"memory\",result=\"hit\"}") - lookups;
    assert_eq!(memory_hits, 7.0, "one more reconcile, every descriptor from memory");
    assert_eq!(sandbox.registry.requests().len(), fetched, "no registry request after completion");

    // A new operator process has an empty memory: the local registry answers, the network is not asked.
    sandbox.stop_controller().await;
    let local_hits = metric(&sandbox, "blueprint_operator_descriptor_lookups_total{layer=\"local\",result=\"hit\"}");
    sandbox.start_controller("0.1.0");
    tokio::time::sleep(Duration::from_secs(30)).await;
    let local_hits =
        metric(&sandbox, "blueprint_operator_descriptor_lookups_total{layer=\"local\",result=\"hit\"}") - local_hits;
    assert_eq!(local_hits, 7.0, "the restarted operator read every descriptor from the local registry");
    assert_eq!(sandbox.registry.requests().len(), fetched, "no registry request after a restart");
    assert!(sandbox.blueprint(NAME).is_some_and(|b| completed(&b)));
    sandbox.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_unavailable_registry_requeues_until_it_answers() {
    let mut sandbox = fresh_recorded("registry-unavailable").await;
    sandbox.registry.inject(Fault::Status(503), 7);
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&default_blueprint()).unwrap();
    let unknown = sandbox.wait_until(NAME, LIMIT, |b| condition_is(b, "Valid", "Unknown")).await;
    let valid =
        unknown.as_ref().and_then(|b| b.status.as_ref()).and_then(|s| s.conditions.iter().find(|c| c.type_ == "Valid"));
    assert!(
        valid.is_some_and(|c| c.message.contains("answered HTTP 503")),
        "the condition says why: {}",
        conditions(&sandbox)
    );
    let done = sandbox.wait_until(NAME, LIMIT, completed).await;
    assert!(done.is_some(), "not completed once the registry answered: {}", conditions(&sandbox));
    let failed = sandbox.registry.requests().iter().filter(|r| r.status == 503).count();
    assert_eq!(failed, 7, "every fault was met, and the registry was asked again");
    sandbox.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn after_completion_reconciles_write_nothing_and_emit_nothing() {
    let mut sandbox = fresh_sandbox().await;
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&default_blueprint()).unwrap();
    sandbox.wait_until(NAME, LIMIT, completed).await.unwrap();
    tokio::time::sleep(Duration::from_secs(30)).await;
    let reconciles = metric(&sandbox, "blueprint_operator_reconciles_total");
    let writes = writes_of_controller(&sandbox);
    let events = sandbox.events().len();
    // Changes of watched objects that do not concern the blueprint trigger reconciles.
    for i in 0..5 {
        let labels =
            json!({"app": "ces", "dogu.name": format!("unrelated-{i}"), "k8s.cloudogu.com/type": "dogu-config"});
        sandbox
            .emulator
            .create(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("unrelated-{i}-config"), "namespace": NS, "labels": labels}}))
            .unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    tokio::time::sleep(Duration::from_secs(60)).await;
    let after_config = metric(&sandbox, "blueprint_operator_reconciles_total");
    assert!(after_config >= reconciles + 5.0, "the changes triggered reconciles");
    // The local dogu registry (also `app=ces`) is a cache of descriptors: its changes trigger nothing.
    let labels = json!({"app": "ces", "dogu.name": "unrelated", "k8s.cloudogu.com/type": "local-dogu-registry"});
    sandbox
        .emulator
        .create(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dogu-spec-unrelated", "namespace": NS, "labels": labels}}))
        .unwrap();
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        metric(&sandbox, "blueprint_operator_reconciles_total"),
        after_config,
        "a dogu-spec ConfigMap triggered"
    );
    assert_eq!(writes_of_controller(&sandbox), writes, "no write after completion");
    assert_eq!(sandbox.events().len(), events, "no event after completion");
    sandbox.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_upgrade_pauses_dogus_before_their_config_changes() {
    let cluster = include_str!("../../examples/upgrade/cluster.yaml");
    let mut sandbox = recorded_sandbox(Some("upgrade"), Behaviour::default(), cluster).await;
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&blueprint(include_str!("../../examples/upgrade/blueprint.yaml"))).unwrap();
    let done = sandbox.wait_until(NAME, LIMIT, completed).await;
    assert!(done.is_some(), "not completed: {}", conditions(&sandbox));

    let requests = sandbox.emulator.requests();
    let position = |predicate: &dyn Fn(&LoggedRequest) -> bool| requests.iter().position(predicate);
    let pause = position(&|r| {
        r.method == "PATCH" && r.path.ends_with("/dogus/redmine") && r.body.contains("\"pauseReconciliation\":true")
    })
    .expect("redmine paused");
    let config = position(&|r| r.path.ends_with("/configmaps/redmine-config") && r.method == "PATCH")
        .expect("redmine's config written");
    let upgrade =
        position(&|r| r.method == "PATCH" && r.path.ends_with("/dogus/redmine") && r.body.contains("5.1.8-1"))
            .expect("redmine upgraded");
    assert!(pause < config && config < upgrade, "pause {pause}, config {config}, upgrade {upgrade}");
    assert!(requests[upgrade].body.contains("\"pauseReconciliation\":false"), "the upgrade resumes it");
    let redmine = sandbox.emulator.get("k8s.cloudogu.com/v2", "Dogu", NS, "redmine").unwrap();
    assert_eq!(redmine["spec"]["pauseReconciliation"], false);
    assert_eq!(redmine["status"]["installedVersion"], "5.1.8-1");
    let config = sandbox.emulator.get("v1", "ConfigMap", NS, "redmine-config").unwrap();
    assert_eq!(config["data"]["config.yaml"], "logging:\n  root: INFO\n");
    sandbox.shutdown().await;
}

const SELF_UPGRADE: &str = r#"
apiVersion: k8s.cloudogu.com/v2
kind: Blueprint
metadata: {name: blueprint-ces, namespace: ecosystem}
spec:
  displayName: self-upgrade
  blueprint:
    dogus: [{name: official/ldap, version: "2.6.8-3"}]
    components: [{name: k8s/k8s-blueprint-operator, version: "0.2.0"}]
"#;

#[tokio::test(start_paused = true)]
async fn the_operator_upgrades_itself_before_anything_else() {
    let mut sandbox = fresh_recorded("self-upgrade").await;
    sandbox
        .emulator
        .create(json!({"apiVersion": "k8s.cloudogu.com/v1", "kind": "Component", "metadata": {"name": "k8s-blueprint-operator", "namespace": NS},
            "spec": {"namespace": "k8s", "name": "k8s-blueprint-operator", "version": "0.1.0"}}))
        .unwrap();
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&blueprint(SELF_UPGRADE)).unwrap();
    let done = sandbox.wait_until(NAME, LIMIT, completed).await;
    assert!(done.is_some(), "not completed: {}", conditions(&sandbox));
    assert_eq!(sandbox.rollouts, ["0.1.0", "0.2.0"]);
    let requests = sandbox.emulator.requests();
    let own = requests
        .iter()
        .position(|r| {
            r.method == "PATCH" && r.path.ends_with("/components/k8s-blueprint-operator") && r.body.contains("0.2.0")
        })
        .unwrap();
    let ldap =
        requests.iter().position(|r| r.method == "POST" && r.path.ends_with("/dogus") && r.status == 201).unwrap();
    let rollout = sandbox.rollout_marks[0];
    assert!(
        own < rollout && rollout <= ldap,
        "own patch {own}, rollout {rollout}, first dogu {ldap}: the new operator installs the dogus"
    );
    sandbox.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_unhealthy_dogu_blocks_and_the_ecosystem_recovers() {
    // scm, not in the blueprint, is unavailable and the simulated dogu operator keeps it so.
    let behaviour = Behaviour { never_healthy: ["scm".to_owned()].into(), ..Behaviour::default() };
    let mut sandbox = recorded_sandbox(Some("unhealthy"), behaviour, seed::DEFAULT_CLUSTER).await;
    let scm = json!({"apiVersion": "k8s.cloudogu.com/v2", "kind": "Dogu", "metadata": {"name": "scm", "namespace": NS}, "spec": {"name": "official/scm", "version": "1.0.0-1"}});
    sandbox.emulator.create(scm).unwrap();
    sandbox
        .emulator
        .update_status(
            "k8s.cloudogu.com/v2",
            "Dogu",
            NS,
            "scm",
            json!({"health": "unavailable", "installedVersion": "1.0.0-1"}),
        )
        .unwrap();
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&default_blueprint()).unwrap();
    let blocked = sandbox.wait_until(NAME, LIMIT, |b| condition_is(b, "EcosystemHealthy", "False")).await;
    assert!(blocked.is_some(), "{}", conditions(&sandbox));
    tokio::time::sleep(Duration::from_secs(120)).await;
    let blueprint = sandbox.blueprint(NAME).unwrap();
    assert!(!completed(&blueprint));
    assert!(
        !ecosystem_writes(&sandbox.emulator.requests()).iter().any(|w| w.contains("dogus")),
        "nothing is applied while unhealthy"
    );
    let diff = blueprint.status.unwrap().state_diff.clone().unwrap();
    assert_eq!(diff.dogu_diffs.len(), 7, "the diff is shown while blocked");

    // scm recovers (someone fixed it): the blueprint proceeds and completes.
    sandbox.emulator.delete("k8s.cloudogu.com/v2", "Dogu", NS, "scm").unwrap();
    let done = sandbox.wait_until(NAME, LIMIT, completed).await;
    assert!(done.is_some(), "{}", conditions(&sandbox));
    sandbox.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_stopped_blueprint_shows_its_diff_and_writes_nothing() {
    let mut sandbox = fresh_recorded("stopped").await;
    sandbox.start_controller("0.1.0");
    let mut stopped = default_blueprint();
    std::sync::Arc::make_mut(stopped.spec.spec.as_mut().unwrap()).stopped = Some(true);
    sandbox.apply_blueprint(&stopped).unwrap();
    let shown = sandbox.wait_until(NAME, LIMIT, |b| condition_is(b, "Completed", "False")).await.unwrap();
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(shown.status.unwrap().state_diff.as_ref().unwrap().dogu_diffs.len(), 7);
    assert_eq!(ecosystem_writes(&sandbox.emulator.requests()), Vec::<String>::new());
    let stopped_events = sandbox.events().iter().filter(|(r, _)| r == "BlueprintStopped").count();
    assert_eq!(stopped_events, 1);

    // Un-stopping applies.
    let done = {
        sandbox.apply_blueprint(&default_blueprint()).unwrap();
        sandbox.wait_until(NAME, LIMIT, completed).await
    };
    assert!(done.is_some(), "{}", conditions(&sandbox));
    sandbox.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_config_change_waits_for_the_restart() {
    // Rolling restarts: the ecosystem stays healthy while redmine restarts, so the operator waits for
    // the dogu to run the new config (AwaitingDogus), not for health.
    let behaviour = Behaviour { rolling_restarts: true, restart: Duration::from_secs(20), ..Behaviour::default() };
    let mut sandbox = recorded_sandbox(Some("config-change"), behaviour, seed::DEFAULT_CLUSTER).await;
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&default_blueprint()).unwrap();
    sandbox.wait_until(NAME, LIMIT, completed).await.unwrap();
    let before = sandbox.emulator.get("k8s.cloudogu.com/v2", "Dogu", NS, "redmine").unwrap();
    let changed = blueprint(&seed::DEFAULT_BLUEPRINT.replace("value: WARN", "value: DEBUG"));
    sandbox.apply_blueprint(&changed).unwrap();
    let done = sandbox.wait_until(NAME, LIMIT, |b| b.metadata.generation == Some(2) && completed(b)).await;
    assert!(done.is_some(), "{}", conditions(&sandbox));
    let awaited = metric(&sandbox, "blueprint_operator_reconciles_total{outcome=\"AwaitingDogus\"}");
    assert!(awaited >= 1.0, "completion waited for the restart: {awaited} reconciles in AwaitingDogus");
    let after = sandbox.emulator.get("k8s.cloudogu.com/v2", "Dogu", NS, "redmine").unwrap();
    assert_ne!(before["status"]["startedAt"], after["status"]["startedAt"], "redmine restarted");
    let config = sandbox.emulator.get("v1", "ConfigMap", NS, "redmine-config").unwrap();
    assert!(config["data"]["config.yaml"].as_str().unwrap().contains("root: DEBUG"));
    sandbox.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_second_blueprint_stops_all_changes_until_it_is_gone() {
    let mut sandbox = fresh_recorded("two-blueprints").await;
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&default_blueprint()).unwrap();
    sandbox.wait_until(NAME, LIMIT, completed).await.unwrap();
    let writes = ecosystem_writes(&sandbox.emulator.requests()).len();
    let mut second = default_blueprint();
    second.metadata.name = Some("blueprint-other".into());
    sandbox.apply_blueprint(&second).unwrap();
    // A config key changed by hand while two blueprints exist: neither may correct it.
    let hacked = "fqdn: hacked.example.com\nadmin_group: ces-admins\ndomain: example.com\n";
    sandbox
        .emulator
        .edit("v1", "ConfigMap", NS, "global-config", |c| c["data"]["config.yaml"] = json!(hacked))
        .unwrap();
    tokio::time::sleep(Duration::from_secs(60)).await;
    let multiple = metric(&sandbox, "blueprint_operator_reconciles_total{outcome=\"MultipleBlueprints\"}");
    assert!(multiple >= 2.0, "both blueprints were reconciled and refused: {multiple}");
    assert!(multiple <= 4.0, "no polling while two blueprints exist: {multiple} reconciles");
    assert_eq!(ecosystem_writes(&sandbox.emulator.requests()).len(), writes, "nothing changed");
    // Both say so, each once, and neither claims to be completed.
    for name in [NAME, "blueprint-other"] {
        let blueprint = sandbox.blueprint(name).unwrap();
        assert!(condition_is(&blueprint, "Executable", "False"), "{name}: {}", conditions(&sandbox));
        assert!(!completed(&blueprint), "{name} claims Completed=True for a generation not applied");
    }
    let warnings = sandbox.events().iter().filter(|(reason, _)| reason == "MultipleBlueprints").count();
    assert_eq!(warnings, 2, "one event on each Blueprint: {:?}", sandbox.events());
    // Once it is gone, its deletion triggers the remaining blueprint, which corrects the drift.
    sandbox.emulator.delete("k8s.cloudogu.com/v2", "Blueprint", NS, "blueprint-other").unwrap();
    wait_for(&mut sandbox, |s| {
        s.emulator
            .get("v1", "ConfigMap", NS, "global-config")
            .is_some_and(|c| c["data"]["config.yaml"].as_str().unwrap().contains("fqdn: ces.example.com"))
    })
    .await;
    sandbox.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn drift_is_corrected_after_completion() {
    let mut sandbox = fresh_recorded("drift").await;
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&default_blueprint()).unwrap();
    sandbox.wait_until(NAME, LIMIT, completed).await.unwrap();

    // A Dogu CR deleted by hand is reinstalled.
    sandbox.emulator.delete("k8s.cloudogu.com/v2", "Dogu", NS, "postfix").unwrap();
    wait_for(&mut sandbox, |s| {
        s.emulator
            .get("k8s.cloudogu.com/v2", "Dogu", NS, "postfix")
            .is_some_and(|d| d["status"]["health"] == "available")
    })
    .await;

    // A Dogu CR edited by hand (a mount removed) is set back.
    sandbox
        .emulator
        .edit("k8s.cloudogu.com/v2", "Dogu", NS, "redmine", |d| d["spec"]["additionalMounts"] = Value::Null)
        .unwrap();
    wait_for(&mut sandbox, |s| {
        s.emulator
            .get("k8s.cloudogu.com/v2", "Dogu", NS, "redmine")
            .is_some_and(|d| d["spec"]["additionalMounts"].is_array())
    })
    .await;

    // A config key changed by hand is set back.
    sandbox
        .emulator
        .edit("v1", "ConfigMap", NS, "global-config", |c| {
            c["data"]["config.yaml"] = json!("fqdn: hacked.example.com\nadmin_group: ces-admins\ndomain: example.com\n")
        })
        .unwrap();
    wait_for(&mut sandbox, |s| {
        s.emulator
            .get("v1", "ConfigMap", NS, "global-config")
            .is_some_and(|c| c["data"]["config.yaml"].as_str().unwrap().contains("fqdn: ces.example.com"))
    })
    .await;
    let done = sandbox.wait_until(NAME, LIMIT, completed).await;
    assert!(done.is_some(), "{}", conditions(&sandbox));
    sandbox.shutdown().await;
}

pub async fn wait_for(sandbox: &mut Sandbox, condition: impl Fn(&Sandbox) -> bool) {
    for _ in 0..6000 {
        sandbox.follow_rollouts().await;
        if condition(sandbox) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the condition never held: {}", conditions(sandbox));
}

#[tokio::test(start_paused = true)]
async fn a_forbidden_downgrade_stays_not_executable() {
    let cluster = include_str!("../../examples/upgrade/cluster.yaml");
    let mut sandbox = recorded_sandbox(Some("forbidden-downgrade"), Behaviour::default(), cluster).await;
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&blueprint(include_str!("../../examples/invalid/downgrade.yaml"))).unwrap();
    sandbox.wait_until(NAME, LIMIT, |b| condition_is(b, "Executable", "False")).await.unwrap();
    tokio::time::sleep(Duration::from_secs(300)).await;
    let blueprint = sandbox.blueprint(NAME).unwrap();
    assert!(condition_is(&blueprint, "Executable", "False"));
    assert_eq!(ecosystem_writes(&sandbox.emulator.requests()), Vec::<String>::new());
    let cas = sandbox.emulator.get("k8s.cloudogu.com/v2", "Dogu", NS, "cas").unwrap();
    assert_eq!(cas["spec"]["version"], "7.1.4-1");
    sandbox.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_invalid_blueprint_is_reported_and_nothing_is_applied() {
    let cluster = include_str!("../../examples/upgrade/cluster.yaml");
    let mut sandbox = recorded_sandbox(Some("invalid"), Behaviour::default(), cluster).await;
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&blueprint(include_str!("../../examples/invalid/invalid.yaml"))).unwrap();
    let invalid = sandbox.wait_until(NAME, LIMIT, |b| condition_is(b, "Valid", "False")).await.unwrap();
    tokio::time::sleep(Duration::from_secs(120)).await;
    let status = serde_json::to_string(&invalid.status).unwrap();
    assert!(status.contains("sensitive config entries are not allowed to have normal values"), "{status}");
    assert!(!status.contains("do-not-write-passwords-here"), "a plaintext value reached the status");
    assert_eq!(ecosystem_writes(&sandbox.emulator.requests()), Vec::<String>::new());
    let reconciles = metric(&sandbox, "blueprint_operator_reconciles_total");
    assert!(reconciles <= 2.0, "an invalid blueprint waits for a change of its spec: {reconciles} reconciles");
    sandbox.shutdown().await;
}

// ---- faults ----

async fn converges_despite(scenario: Option<&str>, fault: impl FnOnce(&Sandbox)) -> Sandbox {
    let mut sandbox = recorded_sandbox(scenario, Behaviour::default(), seed::DEFAULT_CLUSTER).await;
    sandbox.start_controller("0.1.0");
    fault(&sandbox);
    sandbox.apply_blueprint(&default_blueprint()).unwrap();
    let done = sandbox.wait_until(NAME, LIMIT, completed).await;
    assert!(done.is_some(), "not completed: {}", conditions(&sandbox));
    assert_no_duplicates_or_losses(&sandbox);
    sandbox
}

/// No dogu or component created twice, no config key of the blueprint missing.
fn assert_no_duplicates_or_losses(sandbox: &Sandbox) {
    let mut creates: BTreeMap<String, usize> = BTreeMap::new();
    for r in sandbox.emulator.requests().iter().filter(|r| r.method == "POST" && r.status == 201) {
        if r.path.ends_with("/dogus") || r.path.ends_with("/components") {
            let object: Value = serde_json::from_str(&r.body).unwrap();
            *creates.entry(object["metadata"]["name"].as_str().unwrap().to_owned()).or_default() += 1;
        }
    }
    assert!(creates.values().all(|n| *n == 1), "created more than once: {creates:?}");
    let global = sandbox.emulator.get("v1", "ConfigMap", NS, "global-config").unwrap();
    let text = global["data"]["config.yaml"].as_str().unwrap();
    for expected in ["fqdn: ces.example.com", "admin_group: ces-admins", "domain: example.com"] {
        assert!(text.contains(expected), "lost {expected:?}: {text}");
    }
    let redmine = sandbox.emulator.get("v1", "ConfigMap", NS, "redmine-config").unwrap();
    assert!(redmine["data"]["config.yaml"].as_str().unwrap().contains("root: WARN"));
    let cas = sandbox.emulator.get("v1", "ConfigMap", NS, "cas-config").unwrap();
    assert!(cas["data"]["config.yaml"].as_str().unwrap().contains("timeout: \"120\""));
}

#[tokio::test(start_paused = true)]
async fn converges_after_a_409_on_the_status_write() {
    let sandbox = converges_despite(Some("status-conflict"), |s| {
        s.emulator.fail_next(Some("PATCH"), "/blueprints/blueprint-ces/status", 1, 409)
    })
    .await;
    let conflicts =
        sandbox.emulator.requests().iter().filter(|r| r.path.ends_with("/status") && r.status == 409).count();
    assert_eq!(conflicts, 1, "the fault happened");
    sandbox.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn converges_after_a_conflict_on_a_config_write() {
    let sandbox = converges_despite(Some("config-conflict"), |s| {
        s.emulator.fail_next(Some("PATCH"), "/configmaps/global-config", 1, 409)
    })
    .await;
    let conflicts = sandbox.emulator.requests().iter().filter(|r| r.status == 409).count();
    assert_eq!(conflicts, 1);
    sandbox.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn converges_after_a_500_on_a_create() {
    let sandbox =
        converges_despite(Some("apply-failure"), |s| s.emulator.fail_next(Some("POST"), "/dogus", 2, 500)).await;
    assert_eq!(sandbox.emulator.requests().iter().filter(|r| r.path.ends_with("/dogus") && r.status == 500).count(), 2);
    sandbox.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn converges_when_watches_drop_and_history_is_compacted() {
    let mut sandbox = fresh_sandbox().await;
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&default_blueprint()).unwrap();
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(700)).await;
        sandbox.emulator.drop_watches();
        sandbox.emulator.compact();
    }
    let done = sandbox.wait_until(NAME, LIMIT, completed).await;
    assert!(done.is_some(), "{}", conditions(&sandbox));
    assert_no_duplicates_or_losses(&sandbox);
    let relists = sandbox.emulator.requests().iter().filter(|r| r.verb() == "list").count();
    assert!(relists > 7, "the watches relisted: {relists}");
    sandbox.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn converges_when_the_operator_restarts_at_any_point() {
    // Kill the controller after it sent n requests, for several n, and start a new one.
    for cut in [3usize, 8, 14, 20, 30] {
        let mut sandbox = fresh_sandbox().await;
        sandbox.start_controller("0.1.0");
        sandbox.apply_blueprint(&default_blueprint()).unwrap();
        let base = 0.0;
        for _ in 0..10_000 {
            if metric(&sandbox, "blueprint_operator_api_requests_total") - base >= cut as f64 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        sandbox.kill_controller();
        assert!(!sandbox.blueprint(NAME).is_some_and(|b| completed(&b)), "cut at {cut} came after completion");
        tokio::time::sleep(Duration::from_secs(2)).await;
        sandbox.start_controller("0.1.0");
        let done = sandbox.wait_until(NAME, LIMIT, completed).await;
        assert!(done.is_some(), "cut at {cut}: {}", conditions(&sandbox));
        assert_no_duplicates_or_losses(&sandbox);
        sandbox.shutdown().await;
    }
}
