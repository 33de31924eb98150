//! The status claims nothing for a generation it did not evaluate: the printer column `Completed` once
//! showed `True` while the newest generation was invalid or not executable.

use blueprint_machine::State;

use blueprint_machine::fixtures::*;

const NEXUS: &str = "{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1}]}}";

/// Completed for generation 2; then generation 3 is `spec`.
fn completed_then(spec: &str) -> blueprint_machine::Decision {
    let completed = Scenario::new(NEXUS).with_dogu("official/nexus", "3.2.1-1").with_generation(2);
    let decision = completed.decide();
    assert_eq!(cond(&decision, "Completed"), pair("True", "Completed"));
    let mut next = completed.after(&decision);
    let status = next.blueprint.as_ref().unwrap().status.clone();
    next.blueprint = Some(blueprint(spec));
    next.blueprint.as_mut().unwrap().status = status;
    next.with_generation(3).decide()
}

#[test]
fn a_newer_invalid_generation_is_not_shown_as_completed() {
    let decision = completed_then("{displayName: x, blueprint: {dogus: [{name: official/nexus}]}}");
    assert_eq!(decision.state, State::Invalid);
    assert_eq!(cond(&decision, "Completed"), pair("Unknown", "NotEvaluated"));
    assert_eq!(message(&decision, "Completed"), "generation 3 is not applied: the blueprint is invalid (see Valid)");
    assert_eq!(condition(&decision, "Completed").observed_generation, Some(3));
}

#[test]
fn a_newer_generation_with_a_missing_secret_is_not_shown_as_completed() {
    let decision = completed_then(
        "{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1}],
          config: {dogus: {nexus: [{key: pw, sensitive: true, secretRef: {name: missing, key: k}}]}}}}",
    );
    assert_eq!(decision.state, State::NotExecutable);
    assert_ne!(cond(&decision, "Completed").0, "True", "{}", message(&decision, "Completed"));
    assert_eq!(condition(&decision, "Completed").observed_generation, Some(3));
}

#[test]
fn a_newer_stopped_generation_is_not_shown_as_completed() {
    let decision = completed_then(
        "{displayName: x, stopped: true, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1}]}}",
    );
    assert_eq!(decision.state, State::Stopped);
    assert_eq!(cond(&decision, "Completed"), pair("Unknown", "NotEvaluated"));
    assert_eq!(message(&decision, "Completed"), "generation 3 is not applied: the blueprint is stopped (spec.stopped)");
}
