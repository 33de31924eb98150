//! The status is bounded, however large the blueprint (docs/differences.md D42): the status of 5,000
//! dogus (1.19 MB) with the spec was over etcd's limit, so the status write could never succeed.

use blueprint_machine::api::Blueprint;
use blueprint_machine::fixtures::*;
use blueprint_machine::{OBJECT_LIMIT, STATUS_PARTS_LIMIT};

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
