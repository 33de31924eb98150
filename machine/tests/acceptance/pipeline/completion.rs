//! Completion: dogus up to date, repeated failures, conflicts, the diff event (docs/acceptance.md
//! cases 96–100).

use super::*;

const UP_TO_DATE: &str = "{displayName: x, blueprint: {dogus: [{name: official/postgresql, version: 3.2.1-1}, {name: official/ldap, version: 3.2.1-1}, {name: official/cas, version: 3.2.1-1}]}}";

fn up_to_date_scenario() -> Scenario {
    let mut scenario = Scenario::new(UP_TO_DATE)
        .with_dogu("official/postgresql", "3.2.1-1")
        .with_dogu("official/ldap", "3.2.1-1")
        .with_dogu("official/cas", "3.2.1-1")
        .with_global(&[], Some(time("2025-05-01T00:00:00Z")))
        .with_dogu_config("postgresql", &[], Some(time("2025-06-01T00:00:00Z")))
        .with_dogu_config("ldap", &[], Some(time("2025-05-01T00:00:00Z")));
    scenario.dogu_mut("postgresql").status.as_mut().unwrap().started_at = Some(time("2025-07-01T00:00:00Z"));
    scenario.dogu_mut("ldap").status.as_mut().unwrap().started_at = Some(time("2025-06-01T00:00:00Z"));
    scenario.dogu_mut("cas").status.as_mut().unwrap().started_at = Some(time("2025-06-01T00:00:00Z"));
    scenario
}

#[test]
fn case_96_dogus_must_run_the_wanted_version_and_config() {
    let fine = up_to_date_scenario().decide();
    assert_eq!(fine.state, State::Completed);

    let mut stale = up_to_date_scenario();
    stale.dogu_mut("cas").status.as_mut().unwrap().installed_version = Some("3.2.1-2".into());
    stale.global = present::<String>(&[], Some(time("2025-06-15T00:00:00Z")));
    stale.dogu_configs.insert("ldap".into(), present::<String>(&[], Some(time("2025-07-01T00:00:00Z"))));
    let decision = stale.decide();
    assert_eq!(decision.state, State::AwaitingDogus);
    assert_eq!(event(&decision, "DogusNotUpToDate").message, "2 dogu(s) not up to date yet: cas, ldap");
    assert_eq!(decision.requeue, Requeue::after(10, "dogus are not up to date yet"));
    assert_eq!(cond(&decision, "Completed"), pair("False", "StateDiffHasChanges"));

    let mut all = up_to_date_scenario();
    all.dogu_mut("cas").status.as_mut().unwrap().installed_version = Some("3.2.1-2".into());
    all.global = present::<String>(&[], Some(time("2025-08-01T00:00:00Z")));
    let decision = all.decide();
    assert_eq!(event(&decision, "DogusNotUpToDate").message, "3 dogu(s) not up to date yet: cas, ldap, postgresql");
    // Waiting for the same dogus again emits nothing new.
    assert!(all.after(&decision).decide().events.is_empty());
}

#[test]
fn case_97_up_to_date_timestamp_rules() {
    let one = "{displayName: x, blueprint: {dogus: [{name: official/a, version: 1.0.0-1}]}}";
    let scenario = |started: Option<&str>, global: Option<&str>, dogu: Option<&str>| {
        let mut s = Scenario::new(one).with_dogu("official/a", "1.0.0-1").with_global(&[], global.map(time));
        if let Some(t) = dogu {
            s = s.with_dogu_config("a", &[], Some(time(t)));
        }
        s.dogu_mut("a").status.as_mut().unwrap().started_at = started.map(time);
        s.decide().state
    };
    let t = "2025-06-01T00:00:00Z";
    // Upstream counts a start in the same second as the config write as up to date; write times are
    // whole seconds, so the start may have preceded the write: we wait for a later start (D45).
    assert_eq!(scenario(Some(t), Some(t), Some(t)), State::AwaitingDogus, "all equal");
    assert_eq!(scenario(Some("2025-06-01T00:00:01Z"), Some(t), Some(t)), State::Completed, "a second later");
    assert_eq!(scenario(Some(t), Some("2025-05-01T00:00:00Z"), None), State::Completed, "no dogu config time");
    assert_eq!(scenario(Some(t), None, None), State::Completed, "no times at all");
    assert_eq!(scenario(None, Some(t), None), State::AwaitingDogus, "never started");
}

#[test]
fn case_98_the_same_failure_again_is_not_a_new_event() {
    let scenario = Scenario::new(INSTALL_NEXUS);
    let observation = scenario.observe();
    let decision = blueprint_machine::reconcile(&observation);
    let failure = failure_at(&decision, "dogus/nexus", FailureKind::Rejected, "admission webhook denied");
    let first = record_failure(&observation, &decision, &failure);
    assert_eq!(cond(&first, "LastApplySucceeded"), pair("False", "DoguApplyFailure"));
    assert!(event_reasons(&first).contains(&"ExecutionFailed"));
    let next = scenario.after(&first).observe();
    let second = record_failure(&next, &blueprint_machine::reconcile(&next), &failure);
    assert!(!event_reasons(&second).contains(&"ExecutionFailed"));
    assert_eq!(condition(&second, "LastApplySucceeded"), condition(&first, "LastApplySucceeded"));
}

/// Adapted: the status write is the shell's; a conflict on an action is not a failure of the blueprint
/// — decide again after 1s on fresh state, without reporting the stage as applied.
#[test]
fn case_99_a_conflict_requeues_after_one_second() {
    let scenario = Scenario::new(
        "{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1}], config: {global: [{key: a, value: b}]}}}",
    );
    let observation = scenario.observe();
    let decision = blueprint_machine::reconcile(&observation);
    let failure =
        failure_at(&decision, "configmaps/global-config", FailureKind::Conflict, "the object has been modified");
    let after = record_failure(&observation, &decision, &failure);
    assert!(matches!(&after.requeue, Requeue::After { after, .. } if after.as_secs() == 1));
    assert_eq!(condition(&after, "LastApplySucceeded"), condition(&decision, "LastApplySucceeded"));
    assert!(!event_reasons(&after).contains(&"EcosystemConfigApplied"));
    assert!(!event_reasons(&after).contains(&"DogusApplied"));
    assert!(event_reasons(&after).contains(&"StateDiffDetermined"));
}

#[test]
fn case_100_state_diff_event_message() {
    let mut scenario = Scenario::new(
        "{displayName: x, blueprint: {dogus: [
            {name: official/a, version: 1.0.0-1}, {name: official/b, version: 1.0.0-1},
            {name: official/c, absent: true}, {name: official/d, absent: true}, {name: official/e, absent: true},
            {name: official/f, version: 1.0.0-1},
            {name: official/g, version: 2.0.0-1, platformConfig: {resource: {minVolumeSize: 5Gi}, reverseProxy: {maxBodySize: 1G}}}]}}",
    )
    .with_dogu("official/c", "1.0.0-1")
    .with_dogu("official/d", "1.0.0-1")
    .with_dogu("official/e", "1.0.0-1")
    .with_dogu("official/f", "2.0.0-1")
    .with_dogu("official/g", "1.0.0-1");
    scenario.dogu_mut("g").spec.resources = None;
    let decision = scenario.decide();
    assert_eq!(
        event(&decision, "StateDiffDetermined").message,
        "state diff determined: 0 config changes (); 9 dogu actions (\"downgrade\": 1, \"install\": 2, \"uninstall\": 3, \"update resource minimum volume size\": 1, \"update reverse proxy\": 1, \"upgrade\": 1)"
    );
}
