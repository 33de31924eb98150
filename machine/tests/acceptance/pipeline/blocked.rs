//! A diff that a gate keeps from being applied: `Completed` says that the Blueprint is blocked (or
//! waits, or is paused) and why. Found trying the operator as a new user: a forbidden downgrade read
//! `Completed=False (StateDiffHasChanges): Blueprint is being applied.` for as long as it stood.

use super::*;

#[test]
fn a_forbidden_downgrade_says_it_is_blocked_and_why() {
    let decision = Scenario::new("{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1}]}}")
        .with_dogu("official/nexus", "3.2.1-2")
        .decide();
    assert_eq!(decision.state, State::NotExecutable);
    assert_eq!(cond(&decision, "Completed"), pair("False", "StateDiffHasChanges"));
    assert_eq!(
        message(&decision, "Completed"),
        "Blueprint is blocked: nexus: action \"downgrade\" is not allowed (see Executable)"
    );
}

#[test]
fn an_apply_in_progress_is_being_applied() {
    let decision = Scenario::new(INSTALL_NEXUS).decide();
    assert_eq!(decision.state, State::ApplyingDogus);
    assert_eq!(message(&decision, "Completed"), "Blueprint is being applied.");
}

#[test]
fn a_version_unknown_to_the_registry_is_not_applied_yet() {
    let decision = Scenario::new(INSTALL_NEXUS)
        .with_lookup("official/nexus", "3.2.1-1", blueprint_machine::observation::DescriptorLookup::NotFound)
        .decide();
    assert_eq!(decision.state, State::ValidationPending);
    let completed = message(&decision, "Completed");
    assert!(completed.starts_with("Blueprint is not applied yet: it cannot be validated: "), "{completed}");
    assert!(completed.ends_with(" (see Valid)"), "{completed}");
}

#[test]
fn a_restore_pauses_and_completed_says_so() {
    let decision = Scenario::new(INSTALL_NEXUS).with_restore("nightly", Some("in progress"), None).decide();
    assert_eq!(decision.state, State::RestoreInProgress);
    assert_eq!(
        message(&decision, "Completed"),
        "Blueprint is paused: a restore is in progress (nightly): nothing is applied until it has ended (see Executable)"
    );
}
