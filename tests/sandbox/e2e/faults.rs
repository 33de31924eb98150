//! Faults only the emulator can inject (a 409 or a 500 on a chosen request, dropped watches, compacted
//! history): the operator converges, creates nothing twice and loses no config key.

use blueprint_operator::sandbox::api::LoggedRequest;
use std::time::Duration;

use super::{On, Scene, assert_no_duplicates_or_losses, completed, conditions, default_blueprint};

async fn converges_despite(scenario: Option<&str>, fault: impl FnOnce(&Scene)) -> Scene {
    let mut scene = Scene::fresh(On::Emulator, scenario).await;
    scene.start_controller("0.1.0");
    fault(&scene);
    scene.apply_blueprint(&default_blueprint()).await.unwrap();
    let done = scene.wait_blueprint(completed).await;
    assert!(done.is_some(), "not completed: {}", conditions(&scene).await);
    assert_no_duplicates_or_losses(&scene).await;
    scene
}

fn answered(scene: &Scene, status: u16, path: impl Fn(&LoggedRequest) -> bool) -> usize {
    scene.emulator().requests().iter().filter(|r| r.status == status && path(r)).count()
}

#[tokio::test(start_paused = true)]
async fn converges_after_a_409_on_the_status_write() {
    let scene = converges_despite(Some("status-conflict"), |s| {
        s.emulator().fail_next(Some("PATCH"), "/blueprints/blueprint-ces/status", 1, 409)
    })
    .await;
    assert_eq!(answered(&scene, 409, |r| r.path.ends_with("/status")), 1, "the fault happened");
    scene.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn converges_after_a_conflict_on_a_config_write() {
    let scene = converges_despite(Some("config-conflict"), |s| {
        s.emulator().fail_next(Some("PATCH"), "/configmaps/global-config", 1, 409)
    })
    .await;
    assert_eq!(answered(&scene, 409, |_| true), 1);
    scene.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn converges_after_a_500_on_a_create() {
    let scene =
        converges_despite(Some("apply-failure"), |s| s.emulator().fail_next(Some("POST"), "/dogus", 2, 500)).await;
    assert_eq!(answered(&scene, 500, |r| r.path.ends_with("/dogus")), 2);
    scene.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn converges_when_watches_drop_and_history_is_compacted() {
    let mut scene = Scene::fresh(On::Emulator, None).await;
    scene.start_and_apply(&default_blueprint()).await;
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(700)).await;
        scene.emulator().drop_watches();
        scene.emulator().compact();
    }
    let done = scene.wait_blueprint(completed).await;
    assert!(done.is_some(), "{}", conditions(&scene).await);
    assert_no_duplicates_or_losses(&scene).await;
    let relists = scene.emulator().requests().iter().filter(|r| super::scenarios::fills_a_cache(r)).count();
    assert!(relists > 11, "the watches filled their caches again: {relists}");
    scene.shutdown().await;
}

/// An API server that refuses streaming lists (the WatchList feature gate off: Kubernetes 1.27 to
/// 1.31 by default, and 1.33) gets a LIST and a WATCH per cache instead, and the blueprint completes.
/// Emulator-only: the pinned kube-apiserver serves streaming lists, and the emulator answers the
/// refusal as a server with the gate off does (422 Invalid).
#[tokio::test(start_paused = true)]
async fn a_server_without_streaming_lists_gets_list_and_watch() {
    let scene = Scene::fresh(On::Emulator, None).await;
    scene.emulator().refuse_streaming_lists();
    lists_and_watches_where_streaming_lists_are_refused(scene).await;
}

/// On a server that refuses streaming lists (`scene`'s), the operator converges; each refused
/// collection was refused once and listed afterwards, and every cache was listed.
pub(crate) async fn lists_and_watches_where_streaming_lists_are_refused(mut scene: Scene) {
    scene.start_and_apply(&default_blueprint()).await;
    assert!(scene.wait_blueprint(completed).await.is_some(), "{}", conditions(&scene).await);
    let requests = scene.operator_requests();
    let refused: Vec<String> = requests.iter().filter(|r| r.status == 422).map(super::scenarios::collection).collect();
    let listed: std::collections::BTreeSet<String> =
        requests.iter().filter(|r| r.verb() == "list" && r.status == 200).map(super::scenarios::collection).collect();
    assert!(!refused.is_empty(), "the server refused streaming lists");
    let once: std::collections::BTreeSet<&String> = refused.iter().collect();
    assert_eq!(once.len(), refused.len(), "no refused request repeated: {refused:#?}");
    for collection in &refused {
        assert!(listed.contains(collection), "{collection} listed after the refusal: {listed:#?}");
    }
    assert!(listed.len() >= 9, "every cache listed: {listed:#?}");
    scene.shutdown().await;
}

/// A server that stops serving streaming lists while the operator runs (its WatchList gate turned off,
/// an upgrade to 1.33): the relist after 410 Gone is refused, that watcher lists and watches instead,
/// and a Dogu CR deleted by hand afterwards is still seen and reinstalled.
#[tokio::test(start_paused = true)]
async fn streaming_lists_refused_at_a_relist_fall_back_too() {
    let mut scene = Scene::fresh(On::Emulator, None).await;
    scene.start_and_apply(&default_blueprint()).await;
    assert!(scene.wait_blueprint(completed).await.is_some(), "{}", conditions(&scene).await);
    let accepted = scene.emulator().requests().len();
    scene.emulator().refuse_streaming_lists();
    scene.emulator().drop_watches();
    scene.emulator().compact();
    tokio::time::sleep(Duration::from_secs(5)).await;

    let before = scene.get("k8s.cloudogu.com/v2", "Dogu", "postfix").await.unwrap();
    scene.delete("k8s.cloudogu.com/v2", "Dogu", "postfix").await;
    scene
        .wait_for(("k8s.cloudogu.com/v2", "Dogu", "postfix"), |d| {
            d["metadata"]["uid"] != before["metadata"]["uid"] && d["status"]["health"] == "available"
        })
        .await;
    let after: Vec<LoggedRequest> = scene.emulator().requests().split_off(accepted);
    let refused = after.iter().filter(|r| r.status == 422).count();
    let listed = after.iter().filter(|r| r.verb() == "list" && r.status == 200).count();
    assert!(refused > 0 && listed > 0, "refused {refused} streaming lists, then listed {listed} times");
    scene.shutdown().await;
}
