//! `blueprint-operator status` against the real API server while the operator works: the view of a
//! Blueprint, `--watch` following it through watches until it completes or is blocked, and its exit
//! codes.

use std::process::Output;
use std::time::Duration;

use blueprint_operator::sandbox::ecosystem::Behaviour;
use blueprint_operator::sandbox::seed;
use serde_json::Value;

use super::control_plane;
use crate::sandbox::e2e::{Scene, blueprint, default_blueprint};

/// The binary as a user runs it, with the admin's kubeconfig, off the async runtime.
async fn status(args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
            .arg("status")
            .args(&args)
            .env("KUBECONFIG", &control_plane::shared().kubeconfig)
            .output()
            .expect("the binary runs")
    })
    .await
    .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_and_follows_a_blueprint_until_it_is_done() {
    let plane = control_plane::shared();
    let namespace = plane.namespace("status");
    let behaviour = Behaviour { install: Duration::from_secs(2), ..Behaviour::default() };
    let mut scene = Scene::on_kube_apiserver(namespace.clone(), None, behaviour, seed::DEFAULT_CLUSTER).await;

    // No Blueprint yet: a clear error.
    let none = status(&["-n", &namespace]).await;
    assert_eq!(none.status.code(), Some(1));
    assert_eq!(text(&none.stderr).trim(), format!("error: no Blueprint in namespace {namespace:?}"));

    scene.start_controller("0.1.0");
    scene.apply_blueprint(&default_blueprint()).await.unwrap();
    // Followed from the start to the end, through watches (the command's own --timeout bounds it).
    let watched = status(&["-n", &namespace, "--watch", "--timeout", "120s"]).await;
    let log = text(&watched.stdout);
    assert_eq!(watched.status.code(), Some(0), "completed; stdout:\n{log}\nstderr: {}", text(&watched.stderr));
    for expected in [
        "Blueprint \"blueprint-ces\" (generation 1): ",
        "dogu redmine: installing 5.1.8-1",
        "dogu redmine: done",
        "Completed=True (Completed)",
        "completed: every dogu and component runs what the blueprint wants",
    ] {
        assert!(log.contains(expected), "missing {expected:?} in:\n{log}");
    }
    assert!(log.lines().all(|l| l.starts_with('[')), "every line is timed: {log}");

    // The view, once completed.
    let shown = status(&["blueprint-ces", "-n", &namespace]).await;
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    let view = text(&shown.stdout);
    assert!(view.starts_with("Blueprint \"blueprint-ces\" (generation 1): completed"), "{view}");
    assert!(view.contains("\nConditions:\n") && view.contains("\nRecent events:\n"), "{view}");
    assert!(!view.contains("Waiting for:"), "nothing is busy: {view}");
    let json = status(&["-n", &namespace, "-o", "json"]).await;
    let report: Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(report["phase"], "completed");
    assert_eq!(report["observedGeneration"], 1);
    assert!(report["events"].as_array().is_some_and(|e| !e.is_empty() && e.len() <= 10), "{report}");

    // A blueprint that cannot be applied: --watch ends at once, exit 1, with the reason.
    // redmine 5.1.8-1 runs; 5.1.6-1 would be a downgrade.
    let downgrade = blueprint(&seed::DEFAULT_BLUEPRINT.replace("version: \"5.1.8-1\"", "version: \"5.1.6-1\""));
    scene.apply_blueprint(&downgrade).await.unwrap();
    let blocked = status(&["-n", &namespace, "--watch", "--timeout", "60s"]).await;
    let log = text(&blocked.stdout);
    assert_eq!(blocked.status.code(), Some(1), "{log}");
    assert!(log.contains("(generation 2): blocked: Executable=False (ForbiddenOperations)"), "{log}");
    scene.shutdown().await;
}
