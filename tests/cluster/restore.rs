//! The restore pause on the real API server (docs/differences.md D50), with the Restore kind installed
//! as the backup operator installs it: a Blueprint applied during a restore is not applied, says why,
//! and goes on when the restore ends (its end triggers the reconcile; nothing polls).

use std::time::Duration;

use blueprint_operator::sandbox::ecosystem::Behaviour;
use blueprint_operator::sandbox::seed;
use serde_json::json;

use super::control_plane;
use crate::sandbox::e2e::{Scene, completed, condition_is, default_blueprint};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_in_progress_pauses_the_blueprint_until_it_ends() {
    let plane = control_plane::shared();
    let namespace = plane.namespace("restore");
    let behaviour = Behaviour { install: Duration::from_secs(1), ..Behaviour::default() };
    let mut scene = Scene::on_kube_apiserver(namespace, None, behaviour, seed::DEFAULT_CLUSTER).await;
    let restore = json!({"apiVersion": "k8s.cloudogu.com/v1", "kind": "Restore",
        "metadata": {"name": "nightly"}, "spec": {"backupName": "nightly"}});
    scene.create(restore).await;
    let in_progress = json!({"status": "in progress", "conditions": [{"type": "Successful", "status": "Unknown"}]});
    let ns = scene.namespace.clone();
    scene.cluster.update_status("k8s.cloudogu.com/v1", "Restore", &ns, "nightly", in_progress).await.unwrap();

    scene.start_controller("0.1.0");
    scene.apply_blueprint(&default_blueprint()).await.unwrap();
    let paused = scene
        .wait_blueprint(|b| condition_is(b, "Executable", "False"))
        .await
        .expect("the Blueprint says it is paused");
    let executable = paused.status.as_ref().unwrap().conditions.iter().find(|c| c.type_ == "Executable").unwrap();
    assert_eq!(executable.reason, "RestoreInProgress");
    assert!(executable.message.contains("a restore is in progress (nightly)"), "{}", executable.message);
    assert!(scene.cluster.list("k8s.cloudogu.com/v2", "Dogu", &ns).await.is_empty(), "nothing was applied");
    // Events follow the status write (D32): wait (bounded) for the one that says so, then count.
    let told = |events: Vec<(String, String)>| events.into_iter().filter(|(reason, _)| reason == "RestoreInProgress");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while told(scene.events().await).count() == 0 {
        assert!(tokio::time::Instant::now() < deadline, "no RestoreInProgress event: {:?}", scene.events().await);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let told: Vec<_> = told(scene.events().await).collect();
    assert_eq!(told.len(), 1, "{told:?}");

    // The restore ends: the Blueprint is applied.
    let ended = json!({"status": "completed", "conditions": [{"type": "Successful", "status": "True"}]});
    scene.cluster.update_status("k8s.cloudogu.com/v1", "Restore", &ns, "nightly", ended).await.unwrap();
    let done = scene.wait_blueprint(completed).await;
    assert!(done.is_some(), "not completed after the restore ended");
    scene.shutdown().await;
}
