//! Applying: config with the pause handshake, failures, dogu and component changes (docs/acceptance.md
//! cases 85–95).

use super::*;

const REDMINE_CAS_UPGRADE: &str = "{displayName: x, blueprint: {dogus: [{name: official/redmine, version: 2.0.0-1}, {name: official/cas, version: 2.0.0-1}],
  config: {dogus: {redmine: [{key: logging/root, value: INFO}], cas: [{key: password, sensitive: true, secretRef: {name: s, key: p}}]}}}}";

/// The decision for redmine and cas at 1.0.0-1, upgraded with a config key each (one sensitive).
fn redmine_and_cas_upgraded_with_config() -> blueprint_machine::decision::Decision {
    Scenario::new(REDMINE_CAS_UPGRADE)
        .with_dogu("official/redmine", "1.0.0-1")
        .with_dogu("official/cas", "1.0.0-1")
        .with_secret("s", &[("p", "new")])
        .decide()
}

#[test]
fn case_85_upgrading_dogus_are_paused_before_their_config_changes() {
    let decision = redmine_and_cas_upgraded_with_config();
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

/// The executor starts the actions as the scheduler releases them: both pauses first, the config
/// writes once every pause is done, each upgrade once its own config is written (D59: cas's upgrade does
/// not wait for redmine's config).
#[test]
fn the_pauses_then_the_config_writes_then_each_upgrade_after_its_own_config() {
    let decision = redmine_and_cas_upgraded_with_config();
    let mut scheduler = blueprint_machine::schedule::Scheduler::new(&decision.actions);
    let startable = |scheduler: &mut blueprint_machine::schedule::Scheduler| {
        std::iter::from_fn(|| scheduler.start()).collect::<Vec<_>>()
    };
    assert_eq!(startable(&mut scheduler), [0, 1], "the pauses");
    scheduler.finished(0, true);
    assert!(startable(&mut scheduler).is_empty(), "no config write before every pause");
    scheduler.finished(1, true);
    assert_eq!(startable(&mut scheduler), [3, 2], "the config writes, cas's first (its upgrade comes first)");
    scheduler.finished(3, true);
    assert_eq!(startable(&mut scheduler), [4], "cas's upgrade after its own config, with redmine's still pending");
    scheduler.finished(2, true);
    assert_eq!(startable(&mut scheduler), [5]);
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
    scenario.dogu_mut("postgresql").spec.resources = Some(DoguResources {
        min_data_volume_size: Some(QuantityText("2Gi".into())),
        data_volume_size: None,
        storage_class_name: None,
    });
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
