//! Reconcile triggers are debounced, but a change never waits longer than the maximum delay, however
//! often other watched objects change (a Component label edited every 0.26 s once held a Blueprint
//! spec change for 18 s, and would have held it for as long as the edits went on).

use std::time::Duration;

use serde_json::json;

use crate::sandbox::e2e::{self, NAME};

#[tokio::test(start_paused = true)]
async fn a_spec_change_is_reconciled_within_the_maximum_delay_while_other_objects_keep_changing() {
    let mut sandbox = e2e::fresh_sandbox().await;
    sandbox.start_controller("0.1.0");
    let mut blueprint = e2e::default_blueprint();
    sandbox.apply_blueprint(&blueprint).await.unwrap();
    assert!(sandbox.wait_until(NAME, Duration::from_secs(600), e2e::completed).await.is_some());

    // A label of a Component edited every 0.26 s, for a minute.
    let emulator = sandbox.emulator().clone();
    let edits = tokio::spawn(async move {
        for i in 0..230 {
            let _ = emulator.edit("k8s.cloudogu.com/v1", "Component", "ecosystem", "k8s-dogu-operator", |c| {
                c["metadata"]["labels"] = json!({"edited": i.to_string()})
            });
            tokio::time::sleep(Duration::from_millis(260)).await;
        }
    });
    tokio::time::sleep(Duration::from_secs(3)).await;

    // Meanwhile a spec change: a new global config key.
    let mut spec = serde_json::to_value(&blueprint).unwrap();
    spec["spec"]["blueprint"]["config"]["global"].as_array_mut().unwrap().push(json!({"key": "new/key", "value": "v"}));
    blueprint = serde_json::from_value(spec).unwrap();
    sandbox.apply_blueprint(&blueprint).await.unwrap();
    let generation = sandbox.blueprint(NAME).await.unwrap().metadata.generation;
    let started = tokio::time::Instant::now();
    let seen = sandbox
        .wait_until(NAME, Duration::from_secs(30), |b| {
            b.status.as_ref().is_some_and(|s| s.observed_generation == generation)
        })
        .await;
    let waited = started.elapsed();
    assert!(!edits.is_finished(), "the edits still go on");
    assert!(seen.is_some(), "the spec change was not reconciled within 30 s while the edits went on");
    // The default maximum delay is 5 s; the wait loop looks every 0.1 s.
    assert!(waited <= Duration::from_millis(5200), "reconciled after {waited:?}");
    edits.abort();
    sandbox.shutdown().await;
}
