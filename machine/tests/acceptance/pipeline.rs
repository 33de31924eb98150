//! Pipeline, apply and completion: docs/acceptance.md cases 74–100, and the differences of
//! docs/differences.md that change how the pipeline applies.

use blueprint_machine::api::{ComponentStatus, DoguResources, QuantityText};
use blueprint_machine::decision::{ConfigTarget, ConfigValue, Operation};
use blueprint_machine::{ApplyFailure, FailureKind, Requeue, State, record_failure};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use serde_json::json;

use blueprint_machine::fixtures::*;

const INSTALL_NEXUS: &str = "{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1}]}}";

fn completed(status: &str, reason: &str) -> Condition {
    Condition {
        type_: "Completed".into(),
        status: status.into(),
        reason: reason.into(),
        message: String::new(),
        last_transition_time: at(0),
        observed_generation: Some(1),
    }
}

#[test]
fn case_74_a_stopped_blueprint_shows_its_diff_and_applies_nothing() {
    let scenario = Scenario::new(
        "{displayName: x, stopped: true, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1}]}}",
    );
    let decision = scenario.decide();
    assert_eq!(decision.state, State::Stopped);
    assert_eq!(dogu_actions(&decision, "nexus"), ["install"]);
    assert_eq!(cond(&decision, "Completed"), pair("False", "StateDiffHasChanges"));
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

const REDMINE_CAS_UPGRADE: &str = "{displayName: x, blueprint: {dogus: [{name: official/redmine, version: 2.0.0-1}, {name: official/cas, version: 2.0.0-1}],
  config: {dogus: {redmine: [{key: logging/root, value: INFO}], cas: [{key: password, sensitive: true, secretRef: {name: s, key: p}}]}}}}";

#[test]
fn case_85_upgrading_dogus_are_paused_before_their_config_changes() {
    let decision = Scenario::new(REDMINE_CAS_UPGRADE)
        .with_dogu("official/redmine", "1.0.0-1")
        .with_dogu("official/cas", "1.0.0-1")
        .with_secret("s", &[("p", "new")])
        .decide();
    assert_eq!(
        action_summaries(&decision),
        [
            "patch dogus/cas",
            "patch dogus/redmine",
            "write configmaps/redmine-config",
            "write secrets/cas-config",
            "patch dogus/cas",
            "patch dogus/redmine",
        ]
    );
    assert_eq!(
        decision.actions[0].operation,
        Operation::PatchDogu { name: "cas".into(), patch: json!({"spec": {"pauseReconciliation": true}}) }
    );
    assert_eq!(
        decision.actions[1].operation,
        Operation::PatchDogu { name: "redmine".into(), patch: json!({"spec": {"pauseReconciliation": true}}) }
    );
    // The upgrade itself resumes them (docs/differences.md D10).
    assert_eq!(
        decision.actions[4].operation,
        Operation::PatchDogu {
            name: "cas".into(),
            patch: json!({"spec": {"version": "2.0.0-1", "pauseReconciliation": false}})
        }
    );
    assert!(event_reasons(&decision).contains(&"EcosystemConfigApplied"));
    match &decision.actions[3].operation {
        Operation::WriteConfig { target, set, .. } => {
            assert_eq!(target, &ConfigTarget::Sensitive("cas".into()));
            assert_eq!(
                set[0].value,
                ConfigValue::SecretRef(blueprint_machine::api::SecretReference { name: "s".into(), key: "p".into() })
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn case_86_a_global_config_change_pauses_every_upgrading_dogu() {
    let decision = Scenario::new(
        "{displayName: x, blueprint: {dogus: [{name: official/redmine, version: 2.0.0-1}, {name: official/cas, version: 2.0.0-1}, {name: official/postfix, version: 1.0.0-1}],
          config: {global: [{key: fqdn, value: new.example.com}]}}}",
    )
    .with_dogu("official/redmine", "1.0.0-1")
    .with_dogu("official/cas", "1.0.0-1")
    .with_dogu("official/postfix", "1.0.0-1")
    .decide();
    let paused: Vec<_> = decision.actions.iter().filter(|a| a.reason.starts_with("pause")).map(summary).collect();
    assert_eq!(paused, ["patch dogus/cas", "patch dogus/redmine"]);
}

#[test]
fn case_87_an_upgrade_without_config_change_is_not_paused() {
    let decision = Scenario::new(INSTALL_NEXUS.replace("3.2.1-1", "3.2.1-2").as_str())
        .with_dogu("official/nexus", "3.2.1-1")
        .decide();
    assert_eq!(action_summaries(&decision), ["patch dogus/nexus"]);
    assert_eq!(patch_of(&decision, "dogus/nexus"), &json!({"spec": {"version": "3.2.1-2"}}));
}

fn failure_at(decision: &blueprint_machine::Decision, object: &str, kind: FailureKind, message: &str) -> ApplyFailure {
    let action = decision.actions.iter().position(|a| a.operation.object() == object).unwrap();
    ApplyFailure { action, kind, message: message.into() }
}

#[test]
fn case_88_a_failed_config_write_is_reported_once() {
    let scenario = Scenario::new(REDMINE_CAS_UPGRADE)
        .with_dogu("official/redmine", "1.0.0-1")
        .with_dogu("official/cas", "1.0.0-1")
        .with_secret("s", &[("p", "new")]);
    let observation = scenario.observe();
    let decision = blueprint_machine::reconcile(&observation);
    let failure = failure_at(&decision, "configmaps/redmine-config", FailureKind::Transient, "etcd timeout");
    let failed = record_failure(&observation, &decision, &failure);
    assert_eq!(cond(&failed, "LastApplySucceeded"), pair("False", "ConfigApplyFailure"));
    assert!(message(&failed, "LastApplySucceeded").starts_with("could not apply normal dogu config: "));
    assert!(event_reasons(&failed).contains(&"ExecutionFailed"));
    assert!(!event_reasons(&failed).contains(&"EcosystemConfigApplied"), "the config stage did not finish");
    assert!(!event_reasons(&failed).contains(&"DogusApplied"));
    assert!(matches!(failed.requeue, Requeue::Backoff { .. }));
    // The same failure on the next reconcile changes nothing and emits nothing new (case 98's rule).
    let next = scenario.after(&failed).observe();
    let again = record_failure(&next, &blueprint_machine::reconcile(&next), &failure);
    assert!(!event_reasons(&again).contains(&"ExecutionFailed"));
}

#[test]
fn case_89_a_value_cannot_replace_a_dictionary() {
    use blueprint_machine::config_format::{ConfigError, apply};
    let mut entries = [("a/b".to_string(), "1".to_string())].into();
    assert_eq!(apply(&mut entries, [("a", "x".to_string())], []), Err(ConfigError::UsedAsDictionary("a".into())));
    let scenario = Scenario::new("{displayName: x, blueprint: {config: {global: [{key: a, value: x}]}}}")
        .with_global(&[("a/b", "1")], Some(at(0)));
    let observation = scenario.observe();
    let decision = blueprint_machine::reconcile(&observation);
    let failure =
        failure_at(&decision, "configmaps/global-config", FailureKind::Rejected, "key a is already used as dictionary");
    let failed = record_failure(&observation, &decision, &failure);
    assert_eq!(cond(&failed, "LastApplySucceeded"), pair("False", "ConfigApplyFailure"));
    assert!(matches!(failed.requeue, Requeue::Backoff { .. }));
}

#[test]
fn case_90_installing_a_dogu_creates_its_cr() {
    let decision = Scenario::new(
        "{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1, platformConfig: {
            reverseProxy: {maxBodySize: 1G, rewriteTarget: /x}, additionalMounts: [{sourceType: Secret, name: s, volume: v}]}}]}}",
    )
    .with_descriptor(&descriptor("official/nexus", "3.2.1-1", "", r#"{"Name":"v"}"#))
    .decide();
    let Operation::CreateDogu { object } = &decision.actions[0].operation else { panic!() };
    let object = serde_json::to_value(object).unwrap();
    assert_eq!(
        object,
        json!({
            "apiVersion": "k8s.cloudogu.com/v2",
            "kind": "Dogu",
            "metadata": {
                "name": "nexus",
                "namespace": "ecosystem",
                "labels": {
                    "app": "ces",
                    "k8s.cloudogu.com/app": "ces",
                    "dogu.name": "nexus",
                    "k8s.cloudogu.com/dogu.name": "nexus",
                    "app.kubernetes.io/name": "nexus",
                    "app.kubernetes.io/version": "3.2.1-1",
                    "app.kubernetes.io/part-of": "ces",
                    "app.kubernetes.io/managed-by": "k8s-blueprint-operator"
                }
            },
            "spec": {
                "name": "official/nexus",
                "version": "3.2.1-1",
                "resources": {"minDataVolumeSize": "0"},
                "supportMode": false,
                "pauseReconciliation": false,
                "upgradeConfig": {"allowNamespaceSwitch": false, "forceUpgrade": false},
                "additionalIngressAnnotations": {
                    "nginx.ingress.kubernetes.io/proxy-body-size": "1G",
                    "nginx.ingress.kubernetes.io/rewrite-target": "/x"
                },
                "additionalMounts": [{"sourceType": "Secret", "name": "s", "volume": "v"}]
            }
        })
    );
    assert_eq!(event(&decision, "DogusApplied").message, "dogus applied: \"nexus\": [install]");
    // Next reconcile: the dogu exists but its operator has not reported health yet.
    let mut next = Scenario::new("{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1}]}}")
        .with_dogu("official/nexus", "3.2.1-1")
        .after(&decision);
    next.dogu_mut("nexus").status.as_mut().unwrap().health = Some(String::new());
    let pending = next.decide();
    assert_eq!(pending.state, State::AwaitingHealth);
    assert_eq!(pending.requeue, Requeue::after(10, "the ecosystem is not healthy"));
}

/// Amended: an uninstall of a dogu that is already gone is no action at all (the diff says there is
/// nothing to uninstall); a NotFound reported by the executor for another reason is retried after 10s.
#[test]
fn case_91_uninstalling_a_dogu_that_is_gone() {
    let decision = Scenario::new("{displayName: x, blueprint: {dogus: [{name: official/x, absent: true}]}}").decide();
    assert!(decision.actions.is_empty());
    assert_eq!(decision.state, State::Completed);

    let scenario = Scenario::new("{displayName: x, blueprint: {dogus: [{name: official/x, absent: true}]}}")
        .with_dogu("official/x", "1.0.0-1");
    let observation = scenario.observe();
    let decision = blueprint_machine::reconcile(&observation);
    assert_eq!(action_summaries(&decision), ["delete dogus/x"]);
    let failed =
        record_failure(&observation, &decision, &failure_at(&decision, "dogus/x", FailureKind::NotFound, "not found"));
    assert_eq!(cond(&failed, "LastApplySucceeded"), pair("False", "DoguApplyFailure"));
    assert!(matches!(failed.requeue, Requeue::After { .. }));
}

/// Amended (docs/differences.md D4, D5): one patch with exactly the owned fields that change.
#[test]
fn case_92_several_dogu_changes_make_one_patch() {
    let mut scenario = Scenario::new(
        "{displayName: x, blueprint: {dogus: [{name: official/postgresql, version: 3.2.1-4, platformConfig: {resource: {minVolumeSize: 4Gi},
          reverseProxy: {maxBodySize: 1G, rewriteTarget: /, additionalConfig: additional}}}]}}",
    )
    .with_dogu("official/postgresql", "3.2.1-3");
    scenario.dogu_mut("postgresql").spec.resources =
        Some(DoguResources { min_data_volume_size: Some(QuantityText("2Gi".into())), data_volume_size: None });
    let decision = scenario.decide();
    assert_eq!(action_summaries(&decision), ["patch dogus/postgresql"]);
    assert_eq!(
        patch_of(&decision, "dogus/postgresql"),
        &json!({"spec": {
            "version": "3.2.1-4",
            "resources": {"minDataVolumeSize": "4Gi"},
            "additionalIngressAnnotations": {
                "nginx.ingress.kubernetes.io/configuration-snippet": "additional",
                "nginx.ingress.kubernetes.io/proxy-body-size": "1G",
                "nginx.ingress.kubernetes.io/rewrite-target": "/"
            }
        }})
    );
}

#[test]
fn case_94_a_downgrade_never_reaches_apply() {
    let decision = Scenario::new(INSTALL_NEXUS).with_dogu("official/nexus", "3.2.1-2").decide();
    assert_eq!(decision.state, State::NotExecutable);
    assert!(decision.actions.is_empty());
}

#[test]
fn case_95_component_changes_make_one_patch_and_forbidden_ones_none() {
    let decision = Scenario::new(
        "{displayName: x, blueprint: {components: [{name: k8s/my-component, version: 1.0.0-1, deployConfig: {deployNamespace: longhorn-system, overwriteConfig: {key: value}}}]}}",
    )
    .with_component("k8s/my-component", "0.9.0")
    .decide();
    assert_eq!(action_summaries(&decision), ["patch components/my-component"]);
    assert_eq!(
        patch_of(&decision, "components/my-component"),
        &json!({"spec": {"version": "1.0.0-1", "deployNamespace": "longhorn-system", "valuesYamlOverwrite": "key: value\n"}})
    );
    let switch =
        Scenario::new("{displayName: x, blueprint: {components: [{name: k8s-testing/my-component, version: 1.0.0}]}}")
            .with_component("k8s/my-component", "1.0.0")
            .decide();
    assert!(
        message(&switch, "Executable").contains("my-component: action \"component namespace switch\" is not allowed")
    );
    assert!(switch.actions.is_empty());
    let gone = Scenario::new("{displayName: x, blueprint: {components: [{name: k8s/x, absent: true}]}}").decide();
    assert!(gone.actions.is_empty());
}

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
    stale.global = present::<String>(&[], Some(time("2025-07-01T00:00:00Z")));
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
    assert_eq!(scenario(Some(t), Some(t), Some(t)), State::Completed, "all equal");
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
        "state diff determined:\n  0 config changes ()\n  9 dogu actions (\"downgrade\": 1, \"install\": 2, \"uninstall\": 3, \"update resource minimum volume size\": 1, \"update reverse proxy\": 1, \"upgrade\": 1)"
    );
}

// ---- differences from upstream (docs/differences.md) that change the apply ----

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
