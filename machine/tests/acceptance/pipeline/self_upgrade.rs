//! The operator's own upgrade first (docs/acceptance.md cases 80–84).

use super::*;

const OPERATOR_2: &str = "{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1}], components: [{name: k8s/k8s-blueprint-operator, version: 2.0.0}]}}";

fn operator_cr(spec: &str, installed: &str) -> blueprint_machine::api::Component {
    let mut cr = component_cr("k8s/k8s-blueprint-operator", spec);
    cr.status = Some(ComponentStatus {
        installed_version: Some(installed.into()),
        health: Some("available".into()),
        ..Default::default()
    });
    cr
}

#[test]
fn case_80_the_operator_upgrades_itself_before_anything_else() {
    let decision = Scenario::new(OPERATOR_2).with_component_cr(operator_cr("1.0.0", "1.0.0")).decide();
    assert_eq!(decision.state, State::SelfUpgrading);
    assert_eq!(action_summaries(&decision), ["patch components/k8s-blueprint-operator"]);
    assert_eq!(patch_of(&decision, "components/k8s-blueprint-operator"), &json!({"spec": {"version": "2.0.0"}}));
    assert_eq!(cond(&decision, "SelfUpgradeCompleted"), pair("False", "AwaitSelfUpgrade"));
    assert!(event_reasons(&decision).contains(&"AwaitSelfUpgrade"));
    assert_eq!(decision.requeue, Requeue::after(5, "await self upgrade"));
}

#[test]
fn case_81_a_missing_operator_component_is_created() {
    let decision = Scenario::new(OPERATOR_2).decide();
    assert_eq!(action_summaries(&decision), ["create components/k8s-blueprint-operator"]);
    assert_eq!(decision.state, State::SelfUpgrading);
    assert_eq!(decision.requeue, Requeue::after(5, "await self upgrade"));
}

/// Amended (docs/differences.md D3): done only when the component reports the version and this operator runs it.
#[test]
fn case_82_the_self_upgrade_is_done_when_the_new_operator_runs() {
    let decision = Scenario::new(OPERATOR_2)
        .with_component_cr(operator_cr("2.0.0", "2.0.0"))
        .with_operator_version("2.0.0")
        .decide();
    assert_eq!(cond(&decision, "SelfUpgradeCompleted"), pair("True", "Completed"));
    assert!(event_reasons(&decision).contains(&"SelfUpgradeCompleted"));
    assert_eq!(action_summaries(&decision), ["create dogus/nexus"], "the apply continues");
}

#[test]
fn case_83_waiting_for_the_new_version_writes_nothing() {
    let not_installed = Scenario::new(OPERATOR_2).with_component_cr(operator_cr("2.0.0", "1.0.0")).decide();
    assert_eq!(not_installed.state, State::SelfUpgrading);
    assert!(not_installed.actions.is_empty());
    assert_eq!(cond(&not_installed, "SelfUpgradeCompleted"), pair("False", "AwaitSelfUpgrade"));
    // Amended (docs/differences.md D3): installed, but the running operator is still the old one.
    let not_running = Scenario::new(OPERATOR_2)
        .with_component_cr(operator_cr("2.0.0", "2.0.0"))
        .with_operator_version("1.0.0")
        .decide();
    assert_eq!(not_running.state, State::SelfUpgrading);
    assert!(not_running.actions.is_empty());
    assert!(message(&not_running, "SelfUpgradeCompleted").contains("this operator runs 1.0.0"));
}

#[test]
fn case_84_an_operator_not_in_the_blueprint_needs_no_self_upgrade() {
    let decision = Scenario::new(INSTALL_NEXUS).decide();
    assert_eq!(cond(&decision, "SelfUpgradeCompleted"), pair("True", "Completed"));
}
