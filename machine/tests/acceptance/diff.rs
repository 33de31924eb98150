//! The state diff: docs/acceptance.md cases 48–67.

use blueprint_machine::api::{ConfigEntryDiff, DoguResources, QuantityText};
use blueprint_machine::{Requeue, State};

use blueprint_machine::fixtures::*;

fn one_dogu(dogu: &str) -> String {
    format!("{{displayName: x, blueprint: {{dogus: [{dogu}]}}}}")
}

#[test]
fn case_48_a_new_dogu_is_installed() {
    let decision = Scenario::new(&one_dogu("{name: official/nexus, version: 3.2.1-1}")).decide();
    let diff = &state_diff(&decision).dogu_diffs["nexus"];
    assert!(diff.actual.absent);
    assert_eq!(diff.actual.namespace, "");
    assert_eq!(diff.expected.namespace, "official");
    assert_eq!(diff.expected.version.as_deref(), Some("3.2.1-1"));
    assert_eq!(diff.needed_actions, ["install"]);
    assert_eq!(cond(&decision, "Completed"), pair("False", "StateDiffHasChanges"));
    assert_eq!(message(&decision, "Completed"), "Blueprint is being applied.");
    assert_eq!(cond(&decision, "Executable"), pair("True", "Executable"));
    assert!(event_reasons(&decision).contains(&"StateDiffDetermined"));
    assert!(!event_reasons(&decision).contains(&"StateDiffComponentDetermined"));
}

#[test]
fn case_49_an_absent_dogu_is_uninstalled() {
    let decision = Scenario::new(&one_dogu("{name: official/nexus, absent: true}"))
        .with_dogu("official/nexus", "3.2.1-1")
        .decide();
    let diff = &state_diff(&decision).dogu_diffs["nexus"];
    assert_eq!(diff.needed_actions, ["uninstall"]);
    assert_eq!(diff.expected.namespace, "official");
    assert!(diff.expected.absent);
    assert_eq!(diff.expected.version, None);
}

#[test]
fn case_50_an_equal_dogu_has_no_diff() {
    let decision = Scenario::new(&one_dogu("{name: official/nexus, version: 3.2.1-1}"))
        .with_dogu("official/nexus", "3.2.1-1")
        .decide();
    assert!(state_diff(&decision).dogu_diffs.is_empty());
}

#[test]
fn case_51_dogus_the_blueprint_does_not_name_are_left_alone() {
    let decision = Scenario::new(&one_dogu("{name: official/nexus, version: 3.2.1-1}"))
        .with_dogu("official/nexus", "3.2.1-1")
        .with_dogu("official/ldap", "1.0.0-1")
        .decide();
    assert!(state_diff(&decision).is_empty());
    assert!(decision.actions.is_empty());
}

#[test]
fn case_52_a_dogu_namespace_switch_needs_the_flag() {
    let spec = |flag: bool| {
        format!(
            "{{displayName: x, allowDoguNamespaceSwitch: {flag}, blueprint: {{dogus: [{{name: premium/nexus, version: 3.2.1-1}}]}}}}"
        )
    };
    let forbidden = Scenario::new(&spec(false)).with_dogu("official/nexus", "3.2.1-1").decide();
    assert_eq!(dogu_actions(&forbidden, "nexus"), ["dogu namespace switch"]);
    assert_eq!(forbidden.state, State::NotExecutable);
    assert_eq!(cond(&forbidden, "Executable"), pair("False", "ForbiddenOperations"));
    assert_eq!(message(&forbidden, "Executable"), "nexus: action \"dogu namespace switch\" is not allowed");
    assert_eq!(forbidden.requeue, Requeue::AwaitChange);
    assert!(forbidden.actions.is_empty());
    let allowed = Scenario::new(&spec(true)).with_dogu("official/nexus", "3.2.1-1").decide();
    assert_eq!(cond(&allowed, "Executable"), pair("True", "Executable"));
}

#[test]
fn case_53_upgrades_are_applied_and_downgrades_forbidden() {
    let upgrade = Scenario::new(&one_dogu("{name: official/nexus, version: 3.2.1-2}"))
        .with_dogu("official/nexus", "3.2.1-1")
        .decide();
    assert_eq!(dogu_actions(&upgrade, "nexus"), ["upgrade"]);
    let downgrade = Scenario::new(&one_dogu("{name: official/nexus, version: 3.2.1-1}"))
        .with_dogu("official/nexus", "3.2.1-2")
        .decide();
    assert_eq!(dogu_actions(&downgrade, "nexus"), ["downgrade"]);
    assert_eq!(message(&downgrade, "Executable"), "nexus: action \"downgrade\" is not allowed");
}

fn with_size(scenario: Scenario, size: &str) -> Scenario {
    let mut scenario = scenario;
    scenario.dogu_mut("nexus").spec.resources = Some(DoguResources {
        min_data_volume_size: Some(QuantityText(size.into())),
        data_volume_size: None,
        storage_class_name: None,
    });
    scenario
}

#[test]
fn case_54_volumes_only_grow() {
    let spec = |size: &str| {
        one_dogu(&format!(
            "{{name: official/nexus, version: 3.2.1-1, platformConfig: {{resource: {{minVolumeSize: {size}}}}}}}"
        ))
    };
    let grow = with_size(Scenario::new(&spec("100M")).with_dogu("official/nexus", "3.2.1-1"), "10M").decide();
    assert_eq!(dogu_actions(&grow, "nexus"), ["update resource minimum volume size"]);
    let equal = with_size(Scenario::new(&spec("100M")).with_dogu("official/nexus", "3.2.1-1"), "100M").decide();
    assert!(dogu_actions(&equal, "nexus").is_empty());
    let shrink = with_size(Scenario::new(&spec("10M")).with_dogu("official/nexus", "3.2.1-1"), "100M").decide();
    assert!(dogu_actions(&shrink, "nexus").is_empty());
}

#[test]
fn case_55_several_changes_of_one_dogu_in_order() {
    let decision = with_size(
        Scenario::new(&one_dogu(
            "{name: official/nexus, version: 3.2.1-2, platformConfig: {resource: {minVolumeSize: 2Gi},
              reverseProxy: {maxBodySize: 1M, rewriteTarget: /, additionalConfig: snippet}}}",
        ))
        .with_dogu("official/nexus", "3.2.1-1"),
        "1Gi",
    )
    .decide();
    assert_eq!(
        dogu_actions(&decision, "nexus"),
        ["update resource minimum volume size", "update reverse proxy", "upgrade"]
    );
}

#[test]
fn case_56_proxy_body_size_changes() {
    let spec = |size: &str| {
        one_dogu(&format!(
            "{{name: official/nexus, version: 3.2.1-1, platformConfig: {{reverseProxy: {{maxBodySize: {size}}}}}}}"
        ))
    };
    let set = Scenario::new(&spec("100M")).with_dogu("official/nexus", "3.2.1-1").decide();
    assert_eq!(dogu_actions(&set, "nexus"), ["update reverse proxy"]);
    let mut changed = Scenario::new(&spec("100M")).with_dogu("official/nexus", "3.2.1-1");
    changed.dogu_mut("nexus").spec.additional_ingress_annotations =
        Some([("nginx.ingress.kubernetes.io/proxy-body-size".to_string(), "10M".to_string())].into());
    assert_eq!(dogu_actions(&changed.decide(), "nexus"), ["update reverse proxy"]);
    let none = Scenario::new(&one_dogu("{name: official/nexus, version: 3.2.1-1}"))
        .with_dogu("official/nexus", "3.2.1-1")
        .decide();
    assert!(dogu_actions(&none, "nexus").is_empty());
}

#[test]
fn case_57_mounts_compare_regardless_of_order() {
    let spec = |mounts: &str| {
        one_dogu(&format!(
            "{{name: official/nexus, version: 3.2.1-1, platformConfig: {{additionalMounts: [{mounts}]}}}}"
        ))
    };
    let a = blueprint_machine::api::DoguMount {
        source_type: "ConfigMap".into(),
        name: "a".into(),
        volume: "v".into(),
        subfolder: None,
    };
    let b = blueprint_machine::api::DoguMount {
        source_type: "Secret".into(),
        name: "b".into(),
        volume: "v".into(),
        subfolder: Some("s".into()),
    };
    let scenario = |mounts: &str| {
        let mut s = Scenario::new(&spec(mounts)).with_dogu("official/nexus", "3.2.1-1");
        s.dogu_mut("nexus").spec.additional_mounts = Some(vec![a.clone(), b.clone()]);
        s
    };
    let reordered =
        scenario("{sourceType: Secret, name: b, volume: v, subfolder: s}, {sourceType: ConfigMap, name: a, volume: v}")
            .decide();
    assert!(dogu_actions(&reordered, "nexus").is_empty());
    let fewer = scenario("{sourceType: ConfigMap, name: a, volume: v}").decide();
    assert_eq!(dogu_actions(&fewer, "nexus"), ["update additional mounts"]);
    let different = scenario(
        "{sourceType: ConfigMap, name: a, volume: v}, {sourceType: Secret, name: b, volume: v, subfolder: other}",
    )
    .decide();
    assert_eq!(dogu_actions(&different, "nexus"), ["update additional mounts"]);
}

fn one_component(component: &str) -> String {
    format!("{{displayName: x, blueprint: {{components: [{component}]}}}}")
}

#[test]
fn case_58_component_actions() {
    let install = Scenario::new(&one_component("{name: k8s/my-component, version: 3.2.1-1}")).decide();
    assert_eq!(component_actions(&install, "my-component"), ["install"]);
    assert!(event_reasons(&install).contains(&"StateDiffComponentDetermined"));

    let uninstall = Scenario::new(&one_component("{name: k8s/my-component, absent: true}"))
        .with_component("k8s/my-component", "3.2.1-1")
        .decide();
    assert_eq!(component_actions(&uninstall, "my-component"), ["uninstall"]);

    let upgrade = Scenario::new(&one_component("{name: k8s/my-component, version: 3.2.1-2}"))
        .with_component("k8s/my-component", "3.2.1-1")
        .decide();
    assert_eq!(component_actions(&upgrade, "my-component"), ["upgrade"]);

    let config = Scenario::new(&one_component(
        "{name: k8s/my-component, version: 3.2.1-1, deployConfig: {deployNamespace: k8s-longhorn}}",
    ))
    .with_component("k8s/my-component", "3.2.1-1")
    .decide();
    assert_eq!(component_actions(&config, "my-component"), ["update component package config"]);

    let both = Scenario::new(&one_component(
        "{name: k8s/my-component, version: 3.2.1-2, deployConfig: {deployNamespace: k8s-longhorn}}",
    ))
    .with_component("k8s/my-component", "3.2.1-1")
    .decide();
    assert_eq!(component_actions(&both, "my-component"), ["update component package config", "upgrade"]);

    let downgrade = Scenario::new(&one_component("{name: k8s/my-component, version: 3.2.1-1}"))
        .with_component("k8s/my-component", "3.2.1-2")
        .decide();
    assert_eq!(component_actions(&downgrade, "my-component"), ["downgrade"]);
    assert_eq!(message(&downgrade, "Executable"), "my-component: action \"downgrade\" is not allowed");

    let switch = Scenario::new(&one_component("{name: k8s-testing/my-component, version: 3.2.1-1}"))
        .with_component("k8s/my-component", "3.2.1-1")
        .decide();
    assert_eq!(component_actions(&switch, "my-component"), ["component namespace switch"]);
    assert_eq!(cond(&switch, "Executable"), pair("False", "ForbiddenOperations"));
}

#[test]
fn case_59_no_deploy_config_equals_an_empty_one() {
    let decision = Scenario::new(&one_component("{name: k8s/my-component, version: 3.2.1-1}"))
        .with_component("k8s/my-component", "3.2.1-1")
        .decide();
    assert!(component_actions(&decision, "my-component").is_empty());
    let empty = Scenario::new(&one_component("{name: k8s/my-component, version: 3.2.1-1, deployConfig: {}}"))
        .with_component("k8s/my-component", "3.2.1-1")
        .decide();
    assert!(component_actions(&empty, "my-component").is_empty());
}

fn entry<'a>(diffs: &'a [ConfigEntryDiff], key: &str) -> &'a ConfigEntryDiff {
    diffs.iter().find(|d| d.key == key).unwrap()
}

#[test]
fn case_60_global_config_diff() {
    let decision = Scenario::new(
        "{displayName: x, blueprint: {config: {global: [{key: key1, value: value1}, {key: key2, value: value3}, {key: key3, absent: true}, {key: key4, absent: true}]}}}",
    )
    .with_global(&[("key1", "value1"), ("key2", "value2"), ("key3", "value3")], Some(at(0)))
    .decide();
    let diffs = &state_diff(&decision).global_config_diff;
    assert_eq!(diffs.len(), 2);
    let key2 = entry(diffs, "key2");
    assert_eq!(
        (key2.needed_action.as_str(), key2.actual.value.as_deref(), key2.expected.value.as_deref()),
        ("set", Some("value2"), Some("value3"))
    );
    let key3 = entry(diffs, "key3");
    assert_eq!(key3.needed_action, "remove");
    assert_eq!(key3.actual.value.as_deref(), Some("value3"));
    assert!(!key3.expected.exists);
    assert!(!event_reasons(&decision).contains(&"StateDiffComponentDetermined"));
}

#[test]
fn case_61_normal_dogu_config_diff() {
    let decision = Scenario::new(
        "{displayName: x, blueprint: {dogus: [{name: official/dogu1, version: 1.0.0-1}], config: {dogus: {dogu1: [
            {key: key1, value: value1}, {key: key2, value: value3}, {key: key3, absent: true}, {key: key4, absent: true}]}}}}",
    )
    .with_dogu("official/dogu1", "1.0.0-1")
    .with_dogu_config("dogu1", &[("key1", "value1"), ("key2", "value2"), ("key3", "value3")], Some(at(0)))
    .decide();
    let combined = &state_diff(&decision).dogu_config_diffs["dogu1"];
    assert_eq!(combined.dogu_config_diff.len(), 2);
    assert_eq!(entry(&combined.dogu_config_diff, "key2").needed_action, "set");
    assert_eq!(entry(&combined.dogu_config_diff, "key3").needed_action, "remove");
    assert!(combined.sensitive_dogu_config_diff.is_empty());
}

#[test]
fn case_62_sensitive_config_diff_never_shows_values() {
    let decision = Scenario::new(
        "{displayName: x, blueprint: {dogus: [{name: official/dogu1, version: 1.0.0-1}], config: {dogus: {dogu1: [
            {key: key1, sensitive: true, secretRef: {name: s, key: a}},
            {key: key2, sensitive: true, secretRef: {name: s, key: b}},
            {key: key3, sensitive: true, absent: true}]}}}}",
    )
    .with_dogu("official/dogu1", "1.0.0-1")
    .with_sensitive("dogu1", &[("key1", "value1"), ("key2", "value1")], Some(at(0)))
    .with_secret("s", &[("a", "value1"), ("b", "value2")])
    .decide();
    let sensitive = &state_diff(&decision).dogu_config_diffs["dogu1"].sensitive_dogu_config_diff;
    assert_eq!(sensitive.len(), 1);
    assert_eq!(sensitive[0].key, "key2");
    assert_eq!(sensitive[0].needed_action, "set");
    assert_eq!((sensitive[0].actual.value.as_ref(), sensitive[0].expected.value.as_ref()), (None, None));
    let status = serde_json::to_string(&decision).unwrap();
    assert!(!status.contains("value1") && !status.contains("value2"), "{status}");
}

#[test]
fn case_63_sensitive_config_of_a_dogu_not_installed_yet() {
    let decision = Scenario::new(
        "{displayName: x, blueprint: {dogus: [{name: official/dogu1, version: 1.0.0-1}], config: {dogus: {dogu1: [{key: key1, sensitive: true, secretRef: {name: s, key: a}}]}}}}",
    )
    .with_secret("s", &[("a", "value1")])
    .decide();
    let sensitive = &state_diff(&decision).dogu_config_diffs["dogu1"].sensitive_dogu_config_diff;
    assert_eq!(sensitive[0].needed_action, "set");
    assert!(!sensitive[0].actual.exists);
}

#[test]
fn case_64_missing_secret_references() {
    let scenario = Scenario::new(
        "{displayName: x, blueprint: {dogus: [{name: official/dogu1, version: 1.0.0-1}], config: {dogus: {dogu1: [
            {key: a, sensitive: true, secretRef: {name: ldap_credentials, key: username}},
            {key: b, sensitive: true, secretRef: {name: postgres_credentials, key: password}}]}}}}",
    )
    .with_secret("postgres_credentials", &[("user", "x")]);
    let decision = scenario.decide();
    assert_eq!(decision.state, State::NotExecutable);
    assert_eq!(cond(&decision, "Executable"), pair("False", "MissingConfigReferences"));
    let m = message(&decision, "Executable");
    assert!(m.contains("could not load referenced sensitive config"), "{m}");
    assert!(m.contains("referenced secret \"ldap_credentials\" does not exist"), "{m}");
    assert!(m.contains("referenced key \"password\" in secret \"postgres_credentials\" does not exist"), "{m}");
    assert!(event_reasons(&decision).contains(&"MissingConfigReferences"));
    assert_eq!(decision.requeue, Requeue::after(10, "referenced Secrets or keys are missing"));
    let again = scenario.after(&decision).decide();
    assert!(!event_reasons(&again).contains(&"MissingConfigReferences"), "no new event for the same situation");
}

/// Our reconcile also reports the conditions it determined for the first time (health, completion);
/// what matters here is that an empty blueprint on an empty cluster has no diff and no diff events.
#[test]
fn case_65_empty_blueprint_on_an_empty_cluster() {
    let decision = Scenario::new("{displayName: x, blueprint: {}}").decide();
    assert!(state_diff(&decision).is_empty());
    assert_eq!(cond(&decision, "Executable"), pair("True", "Executable"));
    assert!(!event_reasons(&decision).iter().any(|r| r.starts_with("StateDiff")));
    assert!(decision.actions.is_empty());
}

/// The reachable combinations of the config action matrix (present entries always have a value since
/// docs/differences.md D6).
#[test]
fn case_66_config_action_matrix() {
    let cases: [(&str, Option<&str>, Option<&str>); 5] = [
        ("{key: k, absent: true}", None, None),
        ("{key: k, value: v1}", Some("v1"), None),
        ("{key: k, value: v1}", Some("v2"), Some("set")),
        ("{key: k, value: v1}", None, Some("set")),
        ("{key: k, absent: true}", Some("v3"), Some("remove")),
    ];
    for (entry_yaml, actual, expected) in cases {
        let mut scenario =
            Scenario::new(&format!("{{displayName: x, blueprint: {{config: {{global: [{entry_yaml}]}}}}}}"));
        let entries: Vec<(&str, &str)> = actual.map(|v| vec![("k", v)]).unwrap_or_default();
        scenario = scenario.with_global(&entries, Some(at(0)));
        let decision = scenario.decide();
        let got = state_diff(&decision).global_config_diff.first().map(|d| d.needed_action.as_str());
        assert_eq!(got, expected, "{entry_yaml} vs {actual:?}");
    }
}

#[test]
fn case_67_versions_compare_numerically() {
    let dogu = Scenario::new(&one_dogu("{name: official/nexus, version: 1.2.3-1}"))
        .with_dogu("official/nexus", "1.2.3.0-1")
        .decide();
    assert!(state_diff(&dogu).dogu_diffs.is_empty());
    let component =
        Scenario::new(&one_component("{name: k8s/c, version: 3.2.1}")).with_component("k8s/c", "3.2.1-1").decide();
    assert_eq!(component_actions(&component, "c"), ["upgrade"], "a pre-release sorts before its release");
}

#[test]
fn the_diff_is_shown_even_while_the_ecosystem_is_unhealthy() {
    // Amended (docs/differences.md D12): upstream stops before the diff when unhealthy.
    let mut scenario =
        Scenario::new(&one_dogu("{name: official/nexus, version: 3.2.1-2}")).with_dogu("official/nexus", "3.2.1-1");
    scenario.dogu_mut("nexus").status.as_mut().unwrap().health = Some("unavailable".into());
    let decision = scenario.decide();
    assert_eq!(decision.state, State::AwaitingHealth);
    assert_eq!(dogu_actions(&decision, "nexus"), ["upgrade"]);
    assert!(decision.actions.is_empty());
}
