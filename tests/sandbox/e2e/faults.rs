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
    let relists = scene.emulator().requests().iter().filter(|r| r.verb() == "list").count();
    assert!(relists > 7, "the watches relisted: {relists}");
    scene.shutdown().await;
}
