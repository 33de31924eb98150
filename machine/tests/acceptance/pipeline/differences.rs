//! The differences from upstream that change the apply (docs/differences.md).

use super::*;

/// docs/differences.md D4: a removed proxy setting is deleted from the CR (`null`), foreign annotations stay.
#[test]
fn removed_proxy_settings_are_sent_as_null() {
    let mut scenario = Scenario::new("{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 1.0.0-1, platformConfig: {reverseProxy: {maxBodySize: 1G}}}]}}")
        .with_dogu("official/nexus", "1.0.0-1");
    scenario.dogu_mut("nexus").spec.additional_ingress_annotations = Some(
        [
            ("nginx.ingress.kubernetes.io/proxy-body-size".to_string(), "1G".to_string()),
            ("nginx.ingress.kubernetes.io/rewrite-target".to_string(), "/".to_string()),
            ("example.com/foreign".to_string(), "kept".to_string()),
        ]
        .into(),
    );
    let decision = scenario.decide();
    assert_eq!(
        patch_of(&decision, "dogus/nexus"),
        &json!({"spec": {"additionalIngressAnnotations": {
            "nginx.ingress.kubernetes.io/proxy-body-size": "1G",
            "nginx.ingress.kubernetes.io/rewrite-target": null
        }}})
    );
}

/// docs/differences.md D9: a namespace switch combined with an upgrade keeps `allowNamespaceSwitch`.
#[test]
fn namespace_switch_with_upgrade_keeps_the_permission() {
    let decision = Scenario::new("{displayName: x, allowDoguNamespaceSwitch: true, blueprint: {dogus: [{name: premium/nexus, version: 2.0.0-1}]}}")
        .with_dogu("official/nexus", "1.0.0-1")
        .decide();
    assert_eq!(dogu_actions(&decision, "nexus"), ["dogu namespace switch", "upgrade"]);
    assert_eq!(
        patch_of(&decision, "dogus/nexus"),
        &json!({"spec": {"name": "premium/nexus", "upgradeConfig": {"allowNamespaceSwitch": true}, "version": "2.0.0-1"}})
    );
}

/// docs/differences.md D10: a dogu paused for an upgrade that is no longer wanted is resumed.
#[test]
fn a_paused_dogu_without_pending_upgrade_is_resumed() {
    let mut scenario = Scenario::new(INSTALL_NEXUS).with_dogu("official/nexus", "3.2.1-1");
    scenario.dogu_mut("nexus").spec.pause_reconciliation = Some(true);
    let decision = scenario.decide();
    assert_eq!(action_summaries(&decision), ["patch dogus/nexus"]);
    assert_eq!(patch_of(&decision, "dogus/nexus"), &json!({"spec": {"pauseReconciliation": false}}));
    assert_eq!(decision.actions[0].reason, "resume reconciliation: no upgrade is pending");
}

/// docs/differences.md D10, also when the stored status says `Completed=True`: a dogu paused before the
/// blueprint wanted it, added at its installed version (an empty diff), is resumed.
#[test]
fn a_paused_dogu_is_resumed_although_the_blueprint_was_completed() {
    let mut scenario = Scenario::new(INSTALL_NEXUS)
        .with_dogu("official/nexus", "3.2.1-1")
        .with_conditions(vec![completed("True", "Completed")]);
    scenario.dogu_mut("nexus").spec.pause_reconciliation = Some(true);
    let decision = scenario.decide();
    assert_eq!(action_summaries(&decision), ["patch dogus/nexus"]);
    assert_eq!(patch_of(&decision, "dogus/nexus"), &json!({"spec": {"pauseReconciliation": false}}));
    assert_ne!(decision.state, State::Completed);
}

/// docs/differences.md D10: the resume does not wait for the ecosystem's health (the paused dogu may be
/// the unhealthy one, and need its operator to recover).
#[test]
fn a_paused_dogu_is_resumed_while_the_ecosystem_is_unhealthy() {
    let mut scenario = Scenario::new(INSTALL_NEXUS)
        .with_dogu("official/nexus", "3.2.1-1")
        .with_conditions(vec![completed("True", "Completed")]);
    let nexus = scenario.dogu_mut("nexus");
    nexus.spec.pause_reconciliation = Some(true);
    nexus.status.as_mut().unwrap().health = Some("unavailable".into());
    let decision = scenario.decide();
    assert_eq!(action_summaries(&decision), ["patch dogus/nexus"]);
    assert_eq!(patch_of(&decision, "dogus/nexus"), &json!({"spec": {"pauseReconciliation": false}}));
}

/// docs/differences.md D16: only the blueprint's dogus must be up to date, sensitive config counts, and a dogu
/// without config objects is not stale for that.
#[test]
fn up_to_date_covers_the_blueprints_dogus_and_their_sensitive_config() {
    let mut unrelated =
        Scenario::new(INSTALL_NEXUS).with_dogu("official/nexus", "3.2.1-1").with_dogu("official/other", "1.0.0-1");
    unrelated.dogu_mut("other").status.as_mut().unwrap().installed_version = Some("0.9.0-1".into());
    assert_eq!(unrelated.decide().state, State::Completed);

    let sensitive = Scenario::new(INSTALL_NEXUS)
        .with_dogu("official/nexus", "3.2.1-1")
        .with_sensitive("nexus", &[("k", "v")], Some(at(500)))
        .decide();
    assert_eq!(sensitive.state, State::AwaitingDogus);
}

/// docs/differences.md D19: the operator never uninstalls itself.
#[test]
fn the_operator_cannot_uninstall_itself() {
    let decision =
        Scenario::new("{displayName: x, blueprint: {components: [{name: k8s/k8s-blueprint-operator, absent: true}]}}")
            .with_component("k8s/k8s-blueprint-operator", "1.0.0")
            .decide();
    assert_eq!(cond(&decision, "Executable"), pair("False", "ForbiddenOperations"));
    assert!(message(&decision, "Executable").contains("k8s-blueprint-operator: action \"uninstall\" is not allowed"));
    assert!(decision.actions.is_empty());
}

/// docs/differences.md D20: the status and every condition it sets carry the generation they were computed from.
#[test]
fn status_and_conditions_carry_the_observed_generation() {
    let decision = Scenario::new(INSTALL_NEXUS).with_generation(7).decide();
    let status = decision.status.as_ref().unwrap();
    assert_eq!(status.observed_generation, Some(7));
    assert!(status.conditions.iter().all(|c| c.observed_generation == Some(7)), "{:#?}", status.conditions);
}

/// docs/differences.md D17: the order of actions is deterministic (stage, then object name) whatever the
/// blueprint order.
#[test]
fn actions_come_in_a_stable_order() {
    let forward = Scenario::new("{displayName: x, blueprint: {dogus: [{name: official/b, version: 1.0.0-1}, {name: official/a, version: 1.0.0-1}, {name: official/c, version: 1.0.0-1}]}}").decide();
    let backward = Scenario::new("{displayName: x, blueprint: {dogus: [{name: official/c, version: 1.0.0-1}, {name: official/a, version: 1.0.0-1}, {name: official/b, version: 1.0.0-1}]}}").decide();
    assert_eq!(action_summaries(&forward), ["create dogus/a", "create dogus/b", "create dogus/c"]);
    assert_eq!(action_summaries(&forward), action_summaries(&backward));
}

/// Components go first; dogus wait for a fresh health check after component changes.
#[test]
fn components_are_applied_before_dogus_in_separate_reconciles() {
    let decision = Scenario::new("{displayName: x, blueprint: {dogus: [{name: official/a, version: 1.0.0-1}], components: [{name: k8s/c, version: 1.0.0}]}}").decide();
    assert_eq!(decision.state, State::ApplyingComponents);
    assert_eq!(action_summaries(&decision), ["create components/c"]);
    assert_eq!(event(&decision, "ComponentsApplied").message, "components applied: \"c\": [install]");
}
