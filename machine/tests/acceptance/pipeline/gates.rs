//! The gates and the end of a run: stopped, completed, one Blueprint (docs/acceptance.md cases 74–79).

use super::*;

#[test]
fn case_74_a_stopped_blueprint_shows_its_diff_and_applies_nothing() {
    let scenario = Scenario::new(
        "{displayName: x, stopped: true, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1}]}}",
    );
    let decision = scenario.decide();
    assert_eq!(decision.state, State::Stopped);
    assert_eq!(dogu_actions(&decision, "nexus"), ["install"]);
    assert_eq!(cond(&decision, "Completed"), pair("False", "StateDiffHasChanges"));
    // Amended: says it is stopped, not "being applied" (see blocked.rs).
    assert_eq!(
        message(&decision, "Completed"),
        "Blueprint is stopped (spec.stopped): its changes are not applied until spec.stopped is removed"
    );
    assert_eq!(
        event(&decision, "BlueprintStopped").message,
        "Blueprint is set as stopped and will not be applied. Remove flag to continue"
    );
    assert!(decision.actions.is_empty());
    assert_eq!(decision.requeue, Requeue::AwaitChange);
    // Amended (docs/differences.md D14): once per spec change, not on every reconcile.
    let again = scenario.after(&decision).decide();
    assert!(!event_reasons(&again).contains(&"BlueprintStopped"), "{:?}", again.events);
    assert!(again.events.is_empty(), "{:?}", again.events);
}

#[test]
fn case_75_a_completed_blueprint_without_diff_does_nothing() {
    let first = Scenario::new(INSTALL_NEXUS).with_dogu("official/nexus", "3.2.1-1").decide();
    assert_eq!(first.state, State::Completed);
    let again = Scenario::new(INSTALL_NEXUS).with_dogu("official/nexus", "3.2.1-1").after(&first).decide();
    assert_eq!(again.state, State::Completed);
    assert!(again.actions.is_empty());
    assert!(again.events.is_empty(), "{:?}", again.events);
    assert_eq!(again.requeue, Requeue::AwaitChange);
    assert_eq!(again.status, first.status, "the status does not change, so nothing is written");
}

/// Found by the crash property: a Dogu CR deleted after completion is recreated by a reconcile that
/// dies before its status write. The next reconcile finds no diff (the CR is as wanted) and a stored
/// `Completed=True`; that must not keep the blueprint completed while the dogu is not installed.
#[test]
fn a_recreated_dogu_that_is_not_installed_yet_does_not_keep_the_blueprint_completed() {
    let first = Scenario::new(INSTALL_NEXUS).with_dogu("official/nexus", "3.2.1-1").decide();
    assert_eq!(first.state, State::Completed);
    let mut recreated = Scenario::new(INSTALL_NEXUS).with_dogu("official/nexus", "3.2.1-1").after(&first);
    recreated.dogu_mut("nexus").status = None;
    let again = recreated.decide();
    assert_ne!(again.state, State::Completed);
    assert_eq!(cond(&again, "Completed").0, "False", "{:?}", condition(&again, "Completed"));
    assert!(again.actions.is_empty(), "the CR is as wanted: {:?}", again.actions);
}

/// Amended: the completion event's reason is `Completed` (upstream: `completed`).
#[test]
fn case_76_an_empty_diff_completes_the_blueprint() {
    for previous in
        [None, Some(completed("False", "StateDiffHasChanges")), Some(completed("Unknown", "InitialSyncPending"))]
    {
        let mut scenario = Scenario::new(INSTALL_NEXUS).with_dogu("official/nexus", "3.2.1-1");
        if let Some(c) = previous {
            scenario = scenario.with_conditions(vec![c]);
        }
        let decision = scenario.decide();
        assert_eq!(cond(&decision, "Completed"), pair("True", "Completed"));
        assert_eq!(message(&decision, "Completed"), "");
        assert_eq!(cond(&decision, "LastApplySucceeded"), pair("True", "ApplySucceeded"));
        assert!(event_reasons(&decision).contains(&"Completed"));
        let again = scenario.after(&decision).decide();
        assert!(!event_reasons(&again).contains(&"Completed"));
        assert_eq!(condition(&again, "Completed"), condition(&decision, "Completed"));
    }
}

#[test]
fn case_77_applying_never_completes_in_the_same_reconcile() {
    let decision = Scenario::new(INSTALL_NEXUS).decide();
    assert_eq!(decision.state, State::ApplyingDogus);
    assert_eq!(action_summaries(&decision), ["create dogus/nexus"]);
    assert_eq!(cond(&decision, "Completed"), pair("False", "StateDiffHasChanges"));
    assert_eq!(decision.requeue, Requeue::after(1, "dogus applied; re-evaluate"));
}

/// Amended (docs/differences.md, more than one Blueprint): neither is processed, as upstream, but each
/// says why in a condition and one event (upstream only logs and polls every 10 s), `Completed` claims
/// nothing for the generation, and the deletion of a Blueprint triggers the others (no polling).
#[test]
fn case_78_two_blueprints_are_both_left_alone() {
    // Completed for generation 2, then a spec change (generation 3) while a second Blueprint exists.
    let completed = Scenario::new(INSTALL_NEXUS).with_dogu("official/nexus", "3.2.1-1").with_generation(2);
    let decision = completed.decide();
    assert_eq!(cond(&decision, "Completed"), pair("True", "Completed"));
    let mut scenario = completed.after(&decision).with_generation(3);
    scenario.blueprint_count = 2;
    scenario.other_blueprints = vec!["blueprint-other".into()];
    let decision = scenario.decide();
    assert_eq!(decision.state, State::MultipleBlueprints);
    assert!(decision.actions.is_empty());
    assert_eq!(decision.requeue, Requeue::AwaitChange);
    assert_eq!(cond(&decision, "Executable"), pair("False", "MultipleBlueprints"));
    assert_eq!(
        message(&decision, "Executable"),
        "2 Blueprints in namespace ecosystem (blueprint-other, test-blueprint): only one Blueprint per namespace is processed, so none is; delete all but one"
    );
    assert_eq!(cond(&decision, "Completed"), pair("Unknown", "NotEvaluated"));
    assert_eq!(event_reasons(&decision), ["MultipleBlueprints"]);
    assert_eq!(
        message(&decision, "Completed"),
        "generation 3 is not kept applied: more than one Blueprint in the namespace (see Executable)"
    );
    let status = decision.status.as_ref().unwrap();
    assert_eq!(status.observed_generation, Some(3));
    assert_eq!(condition(&decision, "Valid").observed_generation, Some(2), "not evaluated again");
    assert_eq!((&status.state_diff, &status.effective_blueprint), (&None, &None), "nothing was evaluated");

    // Reconciled again while nothing changed: no second event.
    let again = scenario.after(&decision).decide();
    assert!(again.events.is_empty(), "{:?}", again.events);
}

#[test]
fn case_79_a_deleted_blueprint_uninstalls_nothing() {
    let mut scenario = Scenario::new(INSTALL_NEXUS).with_dogu("official/nexus", "3.2.1-1");
    scenario.blueprint = None;
    scenario.blueprint_count = 0;
    let decision = scenario.decide();
    assert_eq!(decision.state, State::NoBlueprint);
    assert_eq!(decision.status, None);
    assert!(decision.actions.is_empty());
    assert_eq!(decision.requeue, Requeue::AwaitChange);
}

/// docs/differences.md D50: nothing is applied while a restore is in progress (by the status string of
/// older backup operators or the `Successful=Unknown` condition of newer ones); the user sees why, in
/// `Executable` and one event; the diff is still computed and shown.
#[test]
fn d50_a_restore_in_progress_pauses_everything_and_says_so() {
    for (status, successful) in [(Some("in progress"), None), (None, Some("Unknown"))] {
        let scenario = Scenario::new(INSTALL_NEXUS).with_restore("nightly", status, successful);
        let decision = scenario.decide();
        assert_eq!(decision.state, State::RestoreInProgress);
        assert!(decision.actions.is_empty());
        assert_eq!(cond(&decision, "Executable"), pair("False", "RestoreInProgress"));
        assert!(message(&decision, "Executable").contains("a restore is in progress (nightly)"));
        assert_eq!(decision.requeue, Requeue::AwaitChange, "the restore's end triggers the next reconcile");
        let event = event(&decision, "RestoreInProgress");
        assert_eq!(event.type_, blueprint_machine::EventType::Normal);
        assert!(!state_diff(&decision).dogu_diffs.is_empty(), "the diff is shown");
        // Still in progress one reconcile later: not said again.
        assert!(!event_reasons(&scenario.after(&decision).decide()).contains(&"RestoreInProgress"));
    }
    // Ended (or failed): applied as usual.
    for (status, successful) in [(Some("completed"), None), (None, Some("True")), (Some("failed"), Some("False"))] {
        let decision = Scenario::new(INSTALL_NEXUS).with_restore("nightly", status, successful).decide();
        assert_eq!(action_summaries(&decision), ["create dogus/nexus"], "{status:?} {successful:?}");
    }
}

/// docs/differences.md D51 (upstream v3's debug mode): while the debug-mode operator's `DebugMode` is
/// active, the dogus' `logging/root` is not enforced (it owns the log levels then); other keys are.
#[test]
fn d51_debug_mode_leaves_the_log_levels_to_the_debug_mode_operator() {
    const REDMINE: &str = "{displayName: x, blueprint: {dogus: [{name: official/redmine, version: 1.0.0-1}], config: {dogus: {redmine: [{key: logging/root, value: WARN}, {key: theme, value: dark}]}}}}";
    let debugging = |phase: Option<&str>| {
        Scenario::new(REDMINE)
            .with_dogu("official/redmine", "1.0.0-1")
            .with_dogu_config("redmine", &[("logging/root", "DEBUG"), ("theme", "light")], Some(at(-100)))
            .with_debug_mode(phase)
    };
    let written = |decision: &blueprint_machine::Decision| -> Vec<String> {
        decision
            .actions
            .iter()
            .filter_map(|a| match &a.operation {
                Operation::WriteConfig { target: ConfigTarget::Dogu(_), set, .. } => {
                    Some(set.iter().map(|s| s.key.clone()).collect::<Vec<_>>())
                }
                _ => None,
            })
            .flatten()
            .collect()
    };
    for active in [Some("SetDebugMode"), Some("WaitForRollback"), None] {
        let decision = debugging(active).decide();
        assert_eq!(written(&decision), ["theme"], "{active:?}: the log level is left alone, the rest is applied");
    }
    for ended in ["Completed", "Failed"] {
        let decision = debugging(Some(ended)).decide();
        let mut keys = written(&decision);
        keys.sort();
        assert_eq!(keys, ["logging/root", "theme"], "{ended}: enforced again");
    }
    // Without a DebugMode at all: enforced.
    let plain = Scenario::new(REDMINE)
        .with_dogu("official/redmine", "1.0.0-1")
        .with_dogu_config("redmine", &[("logging/root", "DEBUG"), ("theme", "dark")], Some(at(-100)))
        .decide();
    assert_eq!(written(&plain), ["logging/root"]);
}
