//! Issue 27 ("Security and bounds"), end to end: what a Blueprint's writer may reach through it, and
//! what someone else changes of what the operator owns.

use serde_json::json;

use super::{NAME, On, Scene, completed, default_blueprint};

/// Issue 27, finding 7: a status set by hand (`Completed=False/Tampered`) stayed until the spec
/// changed. The status is the operator's alone: its change by anyone else triggers a reconcile,
/// which writes it back within the debounce (at most `DEBOUNCE_MAX_DELAY`, 5 s by default).
pub async fn a_status_changed_by_hand_is_restored(on: On) {
    let mut scene = Scene::fresh(on, None).await;
    scene.start_and_apply(&default_blueprint()).await;
    scene.wait_blueprint(completed).await.expect("the blueprint completes");
    let generation = scene.blueprint(NAME).await.unwrap().metadata.generation;
    let tampered = json!({"conditions": [{
        "type": "Completed", "status": "False", "reason": "Tampered", "message": "set by hand",
        "lastTransitionTime": "2020-01-01T00:00:00Z", "observedGeneration": generation,
    }]});
    let namespace = scene.namespace.clone();
    scene.cluster.update_status("k8s.cloudogu.com/v3", "Blueprint", &namespace, NAME, tampered).await.unwrap();
    let edited = tokio::time::Instant::now();
    let restored = scene
        .wait_blueprint(|b| {
            let conditions = b.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
            completed(b) && conditions.iter().all(|c| c.reason != "Tampered") && conditions.len() > 1
        })
        .await;
    assert!(restored.is_some(), "the status set by hand stayed: {}", super::conditions(&scene).await);
    if on == On::Emulator {
        // The debounce's bound, and the reconcile's own (virtual) moments.
        let took = edited.elapsed();
        assert!(took <= std::time::Duration::from_secs(6), "restored only after {took:?}");
    }
}
