//! Debug mode on the real API server (docs/differences.md D51), with the DebugMode kind installed as the
//! debug-mode operator installs it: while it is active, a dogu's log level changed by that operator is
//! left alone (a reconcile the change triggers writes nothing); when it ends, the blueprint's level is
//! enforced again.

use std::time::{Duration, Instant};

use blueprint_operator::sandbox::ecosystem::Behaviour;
use blueprint_operator::sandbox::seed;
use serde_json::{Value, json};

use super::control_plane;
use crate::sandbox::e2e::{Scene, completed, default_blueprint, metric};

fn log_level(config_map: &Value) -> Option<String> {
    let text = config_map["data"]["config.yaml"].as_str()?;
    let config: Value = serde_saphyr::from_str(text).ok()?;
    config["logging"]["root"].as_str().map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_levels_are_left_to_an_active_debug_mode_and_enforced_after_it() {
    let plane = control_plane::shared();
    let namespace = plane.namespace("debug-mode");
    let behaviour = Behaviour { install: Duration::from_secs(1), ..Behaviour::default() };
    let mut scene = Scene::on_kube_apiserver(namespace, None, behaviour, seed::DEFAULT_CLUSTER).await;
    scene.start_and_apply(&default_blueprint()).await;
    scene.wait_blueprint(completed).await.expect("installed");
    let redmine = scene.get("v1", "ConfigMap", "redmine-config").await.unwrap();
    assert_eq!(log_level(&redmine).as_deref(), Some("WARN"), "the blueprint's level");

    // The debug-mode operator starts: its DebugMode, then the log level it sets.
    scene
        .create(json!({"apiVersion": "k8s.cloudogu.com/v1", "kind": "DebugMode",
        "metadata": {"name": "debug-mode"}, "spec": {"deactivateTimestamp": "2026-12-04T12:00:00Z"}}))
        .await;
    let ns = scene.namespace.clone();
    let reconciles = metric(&scene, "blueprint_operator_reconciles_total");
    scene
        .cluster
        .update_status("k8s.cloudogu.com/v1", "DebugMode", &ns, "debug-mode", json!({"phase": "SetDebugMode"}))
        .await
        .unwrap();
    // Each change is reconciled before the next (bounded waits for the reconciles it triggers): the
    // DebugMode's, then the log level's, which leaves the level alone.
    let reconciled_after = |before: f64| {
        let scene = &scene;
        async move {
            let deadline = Instant::now() + Duration::from_secs(30);
            while metric(scene, "blueprint_operator_reconciles_total") < before + 1.0 {
                assert!(Instant::now() < deadline, "the change triggered no reconcile");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            metric(scene, "blueprint_operator_reconciles_total")
        }
    };
    let reconciles = reconciled_after(reconciles).await;
    scene
        .edit("v1", "ConfigMap", "redmine-config", |c| c["data"]["config.yaml"] = json!("logging:\n  root: DEBUG\n"))
        .await;
    reconciled_after(reconciles).await;
    let redmine = scene.get("v1", "ConfigMap", "redmine-config").await.unwrap();
    assert_eq!(log_level(&redmine).as_deref(), Some("DEBUG"), "left to the debug-mode operator");

    // Debug mode ends: the blueprint's level again (the DebugMode's change triggers the reconcile).
    scene
        .cluster
        .update_status("k8s.cloudogu.com/v1", "DebugMode", &ns, "debug-mode", json!({"phase": "Completed"}))
        .await
        .unwrap();
    scene.wait_for(("v1", "ConfigMap", "redmine-config"), |c| log_level(c).as_deref() == Some("WARN")).await;
    scene.shutdown().await;
}
