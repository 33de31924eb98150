//! Ecosystem health: docs/acceptance.md cases 68–73, and what the apply in progress changes (D55, D60).

use blueprint_machine::conditions::reason;
use blueprint_machine::naming::FIELD_MANAGER;
use blueprint_machine::{Operation, Requeue, State};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ManagedFieldsEntry};

use blueprint_machine::fixtures::*;

const INSTALL_NEXUS: &str = "{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 1.0.0-1}]}}";

fn with_health(scenario: Scenario, dogu: &str, health: &str) -> Scenario {
    let mut scenario = scenario;
    scenario.dogu_mut(dogu).status.as_mut().unwrap().health = Some(health.into());
    scenario
}

fn healthy_condition(status: &str, reason: &str) -> Condition {
    Condition {
        type_: "EcosystemHealthy".into(),
        status: status.into(),
        reason: reason.into(),
        message: String::new(),
        last_transition_time: at(0),
        observed_generation: Some(1),
    }
}

#[test]
fn case_68_an_unavailable_dogu_makes_the_ecosystem_unhealthy() {
    let decision =
        with_health(Scenario::new(INSTALL_NEXUS).with_dogu("official/ldap", "1.0.0-1"), "ldap", "unavailable").decide();
    assert_eq!(decision.state, State::AwaitingHealth);
    assert_eq!(cond(&decision, "EcosystemHealthy"), pair("False", "Unhealthy"));
    let m = message(&decision, "EcosystemHealthy");
    // Amended (D55): a side without unhealthy objects is left out (upstream: "0 component(s) are
    // unhealthy: " with nothing after the colon).
    assert_eq!(m, "ecosystem health:\n  1 dogu(s) are unhealthy: ldap");
    assert_eq!(decision.requeue, Requeue::after(10, "the ecosystem is not healthy"));
    assert!(decision.actions.is_empty());
}

/// Amended (docs/differences.md D13): the event is emitted on every transition to unhealthy, also from Unknown
/// (upstream skips Unknown→False, so the first unhealthy check after start reports nothing).
#[test]
fn case_69_the_unhealthy_event_lists_the_unhealthy_dogus_once_per_transition() {
    let base = || {
        let s = Scenario::new(INSTALL_NEXUS)
            .with_dogu("official/postgresql", "1.0.0-1")
            .with_dogu("official/ldap", "1.0.0-1")
            .with_dogu("official/admin", "1.0.0-1");
        with_health(with_health(s, "ldap", "unavailable"), "admin", "")
    };
    // On one line (docs/differences.md D47); upstream's message spans three.
    let expected = "Ecosystem became unhealthy (up-to-date list is in the EcosystemHealthy condition): 2 dogu(s) are unhealthy: admin, ldap";
    let from_true = base().with_conditions(vec![healthy_condition("True", reason::HEALTHY)]).decide();
    assert_eq!(event(&from_true, "EcosystemUnhealthy").message, expected);
    let from_unknown = base().decide();
    assert_eq!(event(&from_unknown, "EcosystemUnhealthy").message, expected);
    let still_false = base().with_conditions(vec![healthy_condition("False", reason::UNHEALTHY)]).decide();
    assert!(!event_reasons(&still_false).contains(&"EcosystemUnhealthy"));
}

/// The blueprint's nexus, installed already: nothing this reconcile creates is waited for (D60).
fn nexus_installed() -> Scenario {
    Scenario::new(INSTALL_NEXUS).with_dogu("official/nexus", "1.0.0-1")
}

#[test]
fn case_70_healthy_and_ignored_health() {
    let decision = nexus_installed().with_dogu("official/ldap", "1.0.0-1").decide();
    assert_eq!(cond(&decision, "EcosystemHealthy"), pair("True", "Healthy"));
    assert_eq!(message(&decision, "EcosystemHealthy"), "dogu health ignored: false; component health ignored: false");
    assert!(event_reasons(&decision).contains(&"EcosystemHealthy"));

    let ignoring = with_health(
        Scenario::new(
            "{displayName: x, ignoreDoguHealth: true, blueprint: {dogus: [{name: official/nexus, version: 1.0.0-1}]}}",
        )
        .with_dogu("official/ldap", "1.0.0-1"),
        "ldap",
        "unavailable",
    )
    .decide();
    assert_eq!(cond(&ignoring, "EcosystemHealthy"), pair("True", "Healthy"));
    assert_eq!(message(&ignoring, "EcosystemHealthy"), "dogu health ignored: true; component health ignored: false");
    assert_eq!(ignoring.state, State::ApplyingDogus);
}

#[test]
fn case_71_health_that_cannot_be_determined_is_unknown_and_reported_once() {
    let scenario = Scenario::new(INSTALL_NEXUS).with_health_config("required: [unclosed");
    let decision = scenario.decide();
    assert_eq!(cond(&decision, "EcosystemHealthy"), pair("Unknown", "CannotCheckHealth"));
    assert!(message(&decision, "EcosystemHealthy").contains("cannot retrieve required components"));
    let again = scenario.after(&decision).decide();
    assert_eq!(condition(&again, "EcosystemHealthy"), condition(&decision, "EcosystemHealthy"));
    assert!(again.events.is_empty(), "{:?}", again.events);
}

#[test]
fn case_72_required_components_must_be_installed_and_available() {
    let mut scenario = Scenario::new(INSTALL_NEXUS)
        .with_component("k8s/k8s-component-operator", "1.0.0")
        .with_health_config("required:\n  - name: k8s-dogu-operator\n  - name: k8s-component-operator\n");
    scenario.components[0].status.as_mut().unwrap().health = Some("unavailable".into());
    let decision = scenario.decide();
    assert_eq!(cond(&decision, "EcosystemHealthy"), pair("False", "Unhealthy"));
    assert!(
        message(&decision, "EcosystemHealthy")
            .contains("2 component(s) are unhealthy: k8s-component-operator, k8s-dogu-operator")
    );
}

#[test]
fn case_73_health_config_missing_or_malformed() {
    let missing = nexus_installed().decide();
    assert_eq!(cond(&missing, "EcosystemHealthy"), pair("True", "Healthy"));
    let malformed = Scenario::new(INSTALL_NEXUS).with_health_config("required: [unclosed").decide();
    assert_eq!(cond(&malformed, "EcosystemHealthy"), pair("Unknown", "CannotCheckHealth"));
    assert!(matches!(malformed.requeue, Requeue::Backoff { .. }));
    assert!(malformed.actions.is_empty());
}

/// D55: dogus and components their operator is busy with (installing, upgrading, restarting for a
/// config write) are the apply in progress: `EcosystemHealthy=False (ApplyInProgress)`, no Warning, and
/// no `EcosystemHealthy` event when they are done. A fault among them is a Warning, also while the
/// ecosystem was unhealthy from the apply already.
#[test]
fn d55_an_apply_in_progress_is_no_fault() {
    let installing = |scenario: Scenario| {
        let mut scenario = scenario;
        let status = scenario.dogu_mut("ldap").status.as_mut().unwrap();
        status.installed_version = None;
        status.health = Some(String::new());
        status.status = Some("installing".into());
        scenario
    };
    let base = || nexus_installed().with_dogu("official/ldap", "1.0.0-1");
    let from_true = installing(base()).with_conditions(vec![healthy_condition("True", reason::HEALTHY)]).decide();
    assert_eq!(cond(&from_true, "EcosystemHealthy"), pair("False", "ApplyInProgress"));
    assert_eq!(message(&from_true, "EcosystemHealthy"), "ecosystem health:\n  1 dogu(s) are unhealthy: ldap");
    assert!(!event_reasons(&from_true).contains(&"EcosystemUnhealthy"), "{:?}", from_true.events);
    assert_eq!(from_true.state, State::AwaitingHealth, "health still gates applying");

    // Installed, and still not available: now a fault.
    let in_progress = healthy_condition("False", reason::APPLY_IN_PROGRESS);
    let faulty = with_health(base(), "ldap", "unavailable").with_conditions(vec![in_progress.clone()]).decide();
    assert_eq!(cond(&faulty, "EcosystemHealthy"), pair("False", "Unhealthy"));
    assert_eq!(
        event(&faulty, "EcosystemUnhealthy").message,
        "Ecosystem became unhealthy (up-to-date list is in the EcosystemHealthy condition): 1 dogu(s) are unhealthy: ldap"
    );

    // Done and available: healthy again, which no event announces (none announced the apply).
    let done = base().with_conditions(vec![in_progress]).decide();
    assert_eq!(cond(&done, "EcosystemHealthy"), pair("True", "Healthy"));
    assert!(!event_reasons(&done).contains(&"EcosystemHealthy"), "{:?}", done.events);
    // After a fault it is announced, as before.
    let recovered = base().with_conditions(vec![healthy_condition("False", reason::UNHEALTHY)]).decide();
    assert!(event_reasons(&recovered).contains(&"EcosystemHealthy"));
}

/// D55: a dogu that started before its config was written is restarting for that write; a component
/// being upgraded is at work; a required component that does not exist is missing, a fault.
#[test]
fn d55_restarts_and_upgrades_are_at_work_and_a_missing_component_is_a_fault() {
    let restarting = with_health(Scenario::new(INSTALL_NEXUS).with_dogu("official/ldap", "1.0.0-1"), "ldap", "")
        .with_dogu_config("ldap", &[("key", "value")], Some(at(5)));
    assert_eq!(cond(&restarting.decide(), "EcosystemHealthy"), pair("False", "ApplyInProgress"));

    let mut upgrading = component_cr("k8s/k8s-longhorn", "1.7.1-2");
    let status = upgrading.status.as_mut().unwrap();
    status.installed_version = Some("1.7.1-1".into());
    status.health = Some("unavailable".into());
    let decision = Scenario::new(INSTALL_NEXUS).with_component_cr(upgrading).decide();
    assert_eq!(cond(&decision, "EcosystemHealthy"), pair("False", "ApplyInProgress"));
    assert_eq!(
        message(&decision, "EcosystemHealthy"),
        "ecosystem health:\n  1 component(s) are unhealthy: k8s-longhorn"
    );

    let missing = Scenario::new(INSTALL_NEXUS).with_health_config("required:\n  - name: k8s-dogu-operator\n").decide();
    assert_eq!(cond(&missing, "EcosystemHealthy"), pair("False", "Unhealthy"));
    assert!(event_reasons(&missing).contains(&"EcosystemUnhealthy"));
}

/// D60: a reconcile that installs dogus says that they are not healthy yet, as the next health check
/// will find them; that check then adds nothing but progress (the emptied diff), which waits for the
/// refresh of D58. A dogu it only upgrades keeps its health until its operator starts.
#[test]
fn d60_what_a_reconcile_installs_is_not_healthy_yet() {
    let scenario = Scenario::new(
        "{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 1.0.0-1}, {name: official/ldap, version: 1.0.0-1}]}}",
    )
    .with_dogu("official/ldap", "1.0.0-1");
    let install = scenario.decide();
    assert_eq!(install.state, State::ApplyingDogus);
    assert_eq!(cond(&install, "EcosystemHealthy"), pair("False", "ApplyInProgress"));
    assert_eq!(message(&install, "EcosystemHealthy"), "ecosystem health:\n  1 dogu(s) are unhealthy: nexus");
    // Neither the clean check before the apply nor the apply in progress is announced (D55).
    let reasons = event_reasons(&install);
    assert!(!reasons.contains(&"EcosystemHealthy") && !reasons.contains(&"EcosystemUnhealthy"), "{reasons:?}");

    // The next reconcile finds nexus as created: what the install said, word for word.
    let created: Vec<_> = install
        .actions
        .iter()
        .filter_map(|a| match &a.operation {
            Operation::CreateDogu { object } => Some((**object).clone()),
            _ => None,
        })
        .collect();
    assert_eq!(created.len(), 1);
    let next = created.into_iter().fold(scenario.after(&install), Scenario::with_dogu_cr).at(at(1003));
    let observed = next.decide();
    assert_eq!(observed.state, State::AwaitingHealth);
    assert_eq!(condition(&observed, "EcosystemHealthy"), condition(&install, "EcosystemHealthy"));
    let stored = install.status.as_deref().unwrap();
    let wanted = observed.status.as_deref().unwrap();
    assert!(wanted.state_diff.as_ref().is_some_and(|d| d.is_empty()), "the diff emptied");
    assert!(!stored.state_diff.as_ref().unwrap().is_empty());
    assert_eq!(wanted.conditions, stored.conditions, "nothing else is news");

    // Written by the operator two seconds earlier: the emptied diff waits for the refresh (D58) ...
    let written_at = |scenario: Scenario, time: i64| {
        let mut scenario = scenario;
        let entry = ManagedFieldsEntry {
            manager: Some(FIELD_MANAGER.into()),
            subresource: Some("status".into()),
            time: Some(at(time)),
            ..ManagedFieldsEntry::default()
        };
        scenario.blueprint.as_mut().unwrap().metadata.managed_fields = Some(vec![entry]);
        scenario
    };
    let held = written_at(next.clone(), 1001).decide();
    assert_eq!(held.status.as_deref(), Some(stored), "nothing to write yet");
    assert!(held.actions.is_empty() && held.events.is_empty());
    assert!(matches!(&held.requeue, Requeue::After { after, .. } if after.as_secs() == 8), "{:?}", held.requeue);
    // ... and is written once it is due.
    let due = written_at(next.at(at(1011)), 1001).decide();
    assert_eq!(due.status.as_deref(), Some(wanted));

    // An upgrade: the dogu keeps its health until its operator starts it.
    let upgrade = Scenario::new(INSTALL_NEXUS).with_dogu("official/nexus", "0.9.0-1").decide();
    assert_eq!(upgrade.state, State::ApplyingDogus);
    assert_eq!(cond(&upgrade, "EcosystemHealthy"), pair("True", "Healthy"));
}
