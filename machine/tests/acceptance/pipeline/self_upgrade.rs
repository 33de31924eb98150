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

// The self-upgrade trap (docs/differences.md D46): a blueprint written for Cloudogu's Go operator names
// `k8s/k8s-blueprint-operator` at one of its versions; this operator runs 0.x under the same name.
const GO_OPERATOR: &str = "{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1}], components: [{name: k8s/k8s-blueprint-operator, version: 2.7.0}]}}";
const OWN_RELEASES: &str = ">=0.0.0, <1.0.0";

#[test]
fn d46_a_version_of_another_implementation_is_refused_before_anything_is_applied() {
    let decision = Scenario::new(GO_OPERATOR)
        .with_component_cr(operator_cr("0.1.0", "0.1.0"))
        .with_operator_version("0.1.0")
        .with_own_versions(OWN_RELEASES, false)
        .decide();
    assert_eq!(cond(&decision, "Executable"), pair("False", "ForbiddenOperations"));
    let why = message(&decision, "Executable");
    assert!(why.contains("2.7.0 is not a release of this operator"), "{why}");
    assert!(why.contains(">=0.0.0, <1.0.0") && why.contains("ALLOW_OPERATOR_REPLACEMENT=true"), "{why}");
    assert!(decision.actions.is_empty(), "nothing is applied, not even the dogus: {:?}", action_summaries(&decision));
    let told = decision.events.iter().filter(|e| e.message.contains("2.7.0 is not a release of this operator")).count();
    assert_eq!(told, 1, "the user is told once, in an event: {:?}", decision.events);
}

/// The Go operator's Component CR left behind at 2.7.0 after a migration: no diff, but waiting for 2.7.0
/// to "take over" would never end; the blueprint must say what runs now.
#[test]
fn d46_a_component_cr_already_at_the_other_implementation_is_refused_too() {
    let decision = Scenario::new(GO_OPERATOR)
        .with_component_cr(operator_cr("2.7.0", "2.7.0"))
        .with_operator_version("0.1.0")
        .with_own_versions(OWN_RELEASES, false)
        .decide();
    assert_eq!(cond(&decision, "Executable"), pair("False", "ForbiddenOperations"));
    assert_ne!(decision.state, State::SelfUpgrading, "not a wait that never ends");
    assert!(decision.actions.is_empty());
}

#[test]
fn d46_an_allowed_replacement_is_applied_as_a_self_upgrade() {
    let decision = Scenario::new(GO_OPERATOR)
        .with_component_cr(operator_cr("0.1.0", "0.1.0"))
        .with_operator_version("0.1.0")
        .with_own_versions(OWN_RELEASES, true)
        .decide();
    assert_eq!(cond(&decision, "Executable"), pair("True", "Executable"));
    assert_eq!(decision.state, State::SelfUpgrading);
    assert_eq!(patch_of(&decision, "components/k8s-blueprint-operator"), &json!({"spec": {"version": "2.7.0"}}));
}

#[test]
fn d46_a_release_of_this_operator_upgrades_it_as_before() {
    let own = "{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1}], components: [{name: k8s/k8s-blueprint-operator, version: 0.2.0-1}]}}";
    let decision = Scenario::new(own)
        .with_component_cr(operator_cr("0.1.0", "0.1.0"))
        .with_operator_version("0.1.0")
        .with_own_versions(OWN_RELEASES, false)
        .decide();
    assert_eq!(cond(&decision, "Executable"), pair("True", "Executable"));
    assert_eq!(decision.state, State::SelfUpgrading, "a packaging suffix (-1) is still one of ours");
}

/// Installed under a component name of its own (`OPERATOR_COMPONENT`), the operator would get Cloudogu's
/// operator installed beside it by a blueprint that names `k8s/k8s-blueprint-operator`: refused too.
#[test]
fn d46_under_its_own_name_it_refuses_cloudogus_operator_beside_it() {
    let scenario = Scenario::new(GO_OPERATOR).with_operator_version("0.1.0").with_own_versions(OWN_RELEASES, false);
    let mut observation = scenario.observe();
    observation.operator.component = "k8s/blueprint-operator".into();
    let decision = blueprint_machine::reconcile(&observation);
    assert_eq!(cond(&decision, "Executable"), pair("False", "ForbiddenOperations"));
    let why = message(&decision, "Executable");
    assert!(why.contains("k8s-blueprint-operator: installing it would run another blueprint operator beside this one (blueprint-operator)"), "{why}");
    assert!(decision.actions.is_empty());
    // Allowed on purpose: installed.
    let allowed = Scenario::new(GO_OPERATOR).with_operator_version("0.1.0").with_own_versions(OWN_RELEASES, true);
    let mut observation = allowed.observe();
    observation.operator.component = "k8s/blueprint-operator".into();
    let decision = blueprint_machine::reconcile(&observation);
    assert_eq!(cond(&decision, "Executable"), pair("True", "Executable"));
}
