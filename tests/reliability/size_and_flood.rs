//! Bounded by design, however large the blueprint: the traffic to the dogu registry (a blueprint of
//! 5,000 dogus the registry does not know once caused 420 requests a second for as long as it
//! existed), and the status (1.19 MB for 5,000 dogus: with the spec, over etcd's limit, so the status
//! write could never succeed).

use std::time::Duration;

use blueprint_machine::api::Blueprint;
use blueprint_machine::status_size::{OBJECT_LIMIT, STATUS_PARTS_LIMIT};
use blueprint_operator::registry::{REQUEST_BURST, REQUESTS_PER_SECOND};

use crate::sandbox::e2e;
use crate::support::*;

fn many_dogus(count: usize) -> String {
    let dogus: Vec<String> =
        (0..count).map(|i| format!("{{name: official/unknown-dogu-{i:05}, version: 1.0.{i}-1}}")).collect();
    format!("{{displayName: many, blueprint: {{dogus: [{}]}}}}", dogus.join(", "))
}

#[test]
fn the_status_of_five_thousand_dogus_fits_and_says_it_is_summarised() {
    // Every descriptor is found (without dependencies): 5,000 installs.
    let scenario = Scenario::new(&many_dogus(5000));
    let decision = scenario.decide();
    let status = decision.status.as_ref().unwrap();
    let parts = serde_json::to_vec(&status.state_diff).unwrap().len()
        + serde_json::to_vec(&status.effective_blueprint).unwrap().len();
    assert!(parts <= STATUS_PARTS_LIMIT, "{parts} bytes");
    let mut blueprint: Blueprint = scenario.blueprint.clone().unwrap();
    blueprint.status = Some(status.clone());
    let object = serde_json::to_vec(&blueprint).unwrap().len();
    assert!(object < OBJECT_LIMIT, "the written object would be {object} bytes");
    let completed = message(&decision, "Completed");
    assert!(completed.contains("The status is summarised"), "{completed}");
    assert!(completed.contains("of 5000 dogu diffs"), "{completed}");
    // Every dogu is still acted on; only the published diff is shortened.
    assert_eq!(decision.actions.len(), 5000);

    // Summarised the same way again: no new diff event, no change of the status.
    let again = scenario.after(&decision).decide();
    assert!(!event_reasons(&again).contains(&"StateDiffDetermined"), "{:?}", event_reasons(&again));
    assert_eq!(again.status.as_ref().unwrap().state_diff, status.state_diff);
}

#[test]
fn a_small_status_is_never_summarised() {
    let scenario = Scenario::new(&many_dogus(30));
    let decision = scenario.decide();
    assert_eq!(state_diff(&decision).dogu_diffs.len(), 30);
    assert!(!message(&decision, "Completed").contains("summarised"));
}

/// The finding, end to end: 2,000 dogus the registry does not know, for 65 s.
#[tokio::test(start_paused = true)]
async fn unknown_dogus_cost_a_bounded_number_of_registry_requests() {
    let mut sandbox = e2e::fresh_sandbox().await;
    sandbox.start_controller("0.1.0");
    let many = blueprint(&many_dogus(2000));
    let name = many.metadata.name.clone().unwrap();
    sandbox.apply_blueprint(&many).unwrap();
    let started = tokio::time::Instant::now();
    tokio::time::sleep(Duration::from_secs(35)).await;
    let at_35 = sandbox.registry.requests().len();
    tokio::time::sleep(Duration::from_secs(30)).await;
    let total = sandbox.registry.requests().len();
    let elapsed = started.elapsed().as_secs();
    let bound = REQUEST_BURST as usize + REQUESTS_PER_SECOND as usize * elapsed as usize;
    assert!(total <= bound, "{total} registry requests in {elapsed} s (bound {bound})");
    let steady = total - at_35;
    assert!(
        steady <= REQUESTS_PER_SECOND as usize * 31,
        "{steady} requests in the last 30 s, over {REQUESTS_PER_SECOND} a second"
    );
    let stored = sandbox.blueprint(&name).unwrap();
    assert!(!e2e::condition_is(&stored, "Valid", "True"), "{}", e2e::conditions(&sandbox));
    assert_eq!(
        stored.status.as_ref().unwrap().observed_generation,
        stored.metadata.generation,
        "the status was written"
    );
    sandbox.shutdown().await;
}
