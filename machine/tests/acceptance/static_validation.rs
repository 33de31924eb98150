//! Parsing and static validation: docs/acceptance.md cases 1–31.

use blueprint_machine::{Requeue, State};

use blueprint_machine::fixtures::*;

fn invalid_message(spec: &str) -> String {
    let decision = Scenario::new(spec).decide();
    assert_eq!(decision.state, State::Invalid, "{decision:#?}");
    assert_eq!(cond(&decision, "Valid").0, "False");
    message(&decision, "Valid").to_owned()
}

fn assert_valid(spec: &str) {
    let decision = Scenario::new(spec).decide();
    assert_eq!(cond(&decision, "Valid"), pair("True", "Valid"), "{}", message(&decision, "Valid"));
}

#[test]
fn case_01_present_dogu_without_version_is_invalid_and_waits_for_a_change() {
    let decision =
        Scenario::new("{displayName: x, blueprint: {dogus: [{name: official/dogu1, absent: false}]}}").decide();
    assert_eq!(cond(&decision, "Valid"), pair("False", "Invalid"));
    let m = message(&decision, "Valid");
    for part in [
        "blueprint spec is invalid",
        "blueprint is invalid",
        "dogu is invalid",
        "dogu version must not be empty: official/dogu1",
    ] {
        assert!(m.contains(part), "{m}");
    }
    assert_eq!(event_reasons(&decision), ["BlueprintSpecInvalid"]);
    assert_eq!(decision.requeue, Requeue::AwaitChange);
    assert!(decision.actions.is_empty());
    assert_eq!(decision.status.as_ref().unwrap().state_diff, None, "no diff is computed");
}

#[test]
fn case_02_absent_dogu_without_version_is_valid() {
    assert_valid("{displayName: x, blueprint: {dogus: [{name: official/dogu2, absent: true}]}}");
}

#[test]
fn case_03_duplicate_dogus_are_all_named() {
    let m = invalid_message(
        "{displayName: x, blueprint: {dogus: [{name: official/dogu1, version: 3.2.1-0}, {name: official/dogu1, version: 3.2.1-3},
          {name: official/dogu2, version: 1.0.0-1}, {name: official/dogu2, version: 1.0.0-1}]}}",
    );
    assert!(m.contains("there are duplicate dogus: [dogu1 dogu2]"), "{m}");
}

#[test]
fn case_04_dogus_with_the_same_simple_name_in_different_namespaces_are_duplicates() {
    let m = invalid_message(
        "{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1}, {name: premium/nexus, version: 3.2.1-1}]}}",
    );
    assert!(m.contains("there are duplicate dogus: [nexus]"), "{m}");
}

#[test]
fn case_05_duplicate_components_are_all_named() {
    let m = invalid_message(
        "{displayName: x, blueprint: {components: [{name: present/component1, version: 1.0.0}, {name: present/component1, version: 1.0.0},
          {name: present/component2, version: 1.0.0}, {name: present/component2, version: 1.0.0}]}}",
    );
    assert!(m.contains("there are duplicate components: [component1 component2]"), "{m}");
}

#[test]
fn case_06_present_component_without_version_is_invalid() {
    let m = invalid_message("{displayName: x, blueprint: {components: [{name: k8s/my-component}]}}");
    assert!(m.contains("version of component \"k8s/my-component\" must not be empty"), "{m}");
}

#[test]
fn case_07_absent_component_without_version_is_valid() {
    assert_valid("{displayName: x, blueprint: {components: [{name: k8s/absent-component, absent: true}]}}");
}

/// Amended (docs/differences.md D11): a blueprint that cannot be parsed is reported in the `Valid` condition
/// (upstream only emits a Warning event and leaves the status untouched), and waits for a change.
#[test]
fn case_08_component_name_without_namespace_is_reported_in_the_status() {
    let decision =
        Scenario::new("{displayName: x, blueprint: {components: [{name: k8s-dogu-operator, version: 1.0.0}]}}")
            .decide();
    assert_eq!(cond(&decision, "Valid"), pair("False", "Invalid"));
    assert!(message(&decision, "Valid").contains(
        "cannot deserialize blueprint: cannot convert blueprint components: component name needs to be in the form 'namespace/component' but is 'k8s-dogu-operator'"
    ));
    let e = event(&decision, "BlueprintSpecInvalid");
    assert_eq!(e.type_, blueprint_machine::EventType::Warning);
    assert_eq!(decision.requeue, Requeue::AwaitChange);
}

/// Amended: both problems are in one condition message and one Warning event (upstream: two events).
#[test]
fn case_09_invalid_dogu_and_mask_names_are_both_reported() {
    let decision = Scenario::new(
        "{displayName: x, blueprint: {dogus: [{name: invalid, version: 1.0.0-1}]}, blueprintMask: {dogus: [{name: invalid}]}}",
    )
    .decide();
    let m = message(&decision, "Valid");
    assert!(m.starts_with("could not deserialize blueprint CR \"test-blueprint\": "), "{m}");
    assert!(m.contains("cannot deserialize blueprint: cannot convert blueprint dogus: dogu name needs to be in the form 'namespace/dogu' but is 'invalid'"), "{m}");
    assert!(m.contains("cannot deserialize blueprint mask: cannot convert blueprint dogus: dogu name needs to be in the form 'namespace/dogu' but is 'invalid'"), "{m}");
    assert_eq!(event_reasons(&decision), ["BlueprintSpecInvalid"]);
}

/// Amended (docs/differences.md D11): an invalid mask waits for a change like every invalid blueprint
/// (upstream retries it with exponential backoff forever).
#[test]
fn case_10_only_the_mask_name_is_invalid_and_the_blueprint_waits_for_a_change() {
    let decision = Scenario::new(
        "{displayName: x, blueprint: {dogus: [{name: official/x, version: 1.0.0-1}]}, blueprintMask: {dogus: [{name: invalid}]}}",
    )
    .decide();
    assert_eq!(cond(&decision, "Valid"), pair("False", "Invalid"));
    assert!(message(&decision, "Valid").contains("cannot deserialize blueprint mask"));
    assert_eq!(decision.requeue, Requeue::AwaitChange);
}

#[test]
fn case_11_prerelease_dogu_versions_do_not_parse() {
    let m = invalid_message("{displayName: x, blueprint: {dogus: [{name: official/x, version: 1.0.0-rc1}]}}");
    assert!(
        m.contains("could not parse version of target dogu \"official/x\": failed to parse extra version rc1"),
        "{m}"
    );
}

#[test]
fn case_12_binary_proxy_body_sizes_are_rejected() {
    for size in ["1Mi", "1Ki"] {
        let m = invalid_message(&format!(
            "{{displayName: x, blueprint: {{dogus: [{{name: official/dogu1, version: 1.0.0-1, platformConfig: {{reverseProxy: {{maxBodySize: {size}}}}}}}]}}}}"
        ));
        assert!(m.contains("dogu proxy body size is not in Decimal SI (\"M\" or \"G\"): official/dogu1"), "{m}");
    }
}

#[test]
fn case_13_zero_and_decimal_body_sizes_are_accepted() {
    for size in ["\"0\"", "1G"] {
        assert_valid(&format!(
            "{{displayName: x, blueprint: {{dogus: [{{name: official/dogu1, version: 1.0.0-1, platformConfig: {{reverseProxy: {{maxBodySize: {size}}}}}}}]}}}}"
        ));
    }
}

fn mount_spec(mount: &str) -> String {
    format!(
        "{{displayName: x, blueprint: {{dogus: [{{name: official/dogu1, version: 1.0.0-1, platformConfig: {{additionalMounts: [{mount}]}}}}]}}}}"
    )
}

#[test]
fn case_14_mount_source_types_are_configmap_or_secret() {
    let m = invalid_message(&mount_spec("{sourceType: unsupportedType, name: a, volume: v}"));
    assert!(
        m.contains(
            "dogu is invalid: dogu additional mounts sourceType must be one of 'ConfigMap', 'Secret': official/dogu1"
        ),
        "{m}"
    );
}

#[test]
fn case_15_mount_subfolders_are_relative() {
    let m = invalid_message(&mount_spec("{sourceType: ConfigMap, name: a, volume: v, subfolder: /test}"));
    assert!(
        m.contains("dogu is invalid: dogu additional mounts Subfolder must be a relative path : official/dogu1"),
        "{m}"
    );
}

fn dogu_config_spec(entries: &str) -> String {
    format!(
        "{{displayName: x, blueprint: {{dogus: [{{name: official/dogu1, version: 1.0.0-1}}], config: {{dogus: {{dogu1: [{entries}]}}}}}}}}"
    )
}

#[test]
fn case_16_absent_entries_cannot_have_a_value() {
    let m = invalid_message(&dogu_config_spec("{key: my/key1, value: v, absent: true}"));
    assert!(m.contains("absent entries cannot have value or secretRef"), "{m}");
}

#[test]
fn case_17_absent_entries_cannot_have_a_secret_ref() {
    let m = invalid_message(&dogu_config_spec("{key: my/key1, secretRef: {name: s, key: k}, absent: true}"));
    assert!(m.contains("absent entries cannot have value or secretRef"), "{m}");
}

#[test]
fn case_18_value_and_secret_ref_exclude_each_other() {
    let m =
        invalid_message(&dogu_config_spec("{key: my/key1, value: v, secretRef: {name: s, key: k}, sensitive: true}"));
    assert!(m.contains("config entries can have either a value or a secretRef"), "{m}");
}

/// Amended (docs/differences.md D52, API v3): a `secretRef` without `sensitive` is valid; the Secret's value
/// goes into the normal dogu config (upstream's v2 rejected it, its v3 accepts it).
#[test]
fn case_19_a_secret_ref_without_sensitive_fills_the_normal_config() {
    assert_valid(&dogu_config_spec("{key: my/key1, secretRef: {name: s, key: k}}"));
    let m = invalid_message(&dogu_config_spec("{key: my/key1, absent: true, secretRef: {name: s, key: k}}"));
    assert!(m.contains("absent entries cannot have value or secretRef"), "{m}");
}

#[test]
fn case_20_sensitive_entries_cannot_have_plain_values() {
    let m = invalid_message(&dogu_config_spec("{key: my/key1, sensitive: true, value: v}"));
    assert!(m.contains("sensitive config entries are not allowed to have normal values"), "{m}");
}

#[test]
fn case_21_sensitive_entry_with_secret_ref_is_valid() {
    let decision = Scenario::new(&dogu_config_spec("{key: my/key1, sensitive: true, secretRef: {name: s, key: k}}"))
        .with_secret("s", &[("k", "v")])
        .decide();
    assert_eq!(cond(&decision, "Valid"), pair("True", "Valid"));
}

#[test]
fn case_22_duplicate_dogu_config_keys() {
    let m = invalid_message(&dogu_config_spec("{key: my/key1, value: v}, {key: my/key1, absent: true}"));
    assert!(m.contains("config for dogu \"dogu1\" is invalid: duplicate dogu config Key found: my/key1"), "{m}");
}

#[test]
fn case_23_empty_keys() {
    let m = invalid_message(&dogu_config_spec("{key: \"\", value: v}"));
    assert!(m.contains("key for config should not be empty"), "{m}");
    for entry in ["{key: \"\", value: v}", "{key: \"\", absent: true}"] {
        let m = invalid_message(&format!("{{displayName: x, blueprint: {{config: {{global: [{entry}]}}}}}}"));
        assert!(m.contains("key for global config should not be empty"), "{m}");
    }
}

#[test]
fn case_24_duplicate_global_keys() {
    let m = invalid_message(
        "{displayName: x, blueprint: {config: {global: [{key: my/key1, value: value1}, {key: my/key1, absent: true}]}}}",
    );
    assert!(m.contains("global config is invalid: duplicate dogu config Key found: my/key1"), "{m}");
}

/// Amended (docs/differences.md D52, API v3): a global entry may take its value from a Secret (`secretRef`);
/// `sensitive` is still rejected, by static validation (upstream v3 only at the state diff).
#[test]
fn case_25_global_entries_cannot_be_sensitive_or_absent_with_value() {
    let global = |entry: &str| format!("{{displayName: x, blueprint: {{config: {{global: [{entry}]}}}}}}");
    for entry in ["{key: k, sensitive: true, value: v}", "{key: k, sensitive: true, secretRef: {name: s, key: k}}"] {
        let m = invalid_message(&global(entry));
        assert!(m.contains("global entries cannot be sensitive"), "{m}");
    }
    let m = invalid_message(&global("{key: k, absent: true, value: v}"));
    assert!(m.contains("absent entries cannot have value"), "{m}");
    let m = invalid_message(&global("{key: k, absent: true, secretRef: {name: s, key: k}}"));
    assert!(m.contains("absent entries cannot have a secretRef"), "{m}");
    let m = invalid_message(&global("{key: k, value: v, secretRef: {name: s, key: k}}"));
    assert!(m.contains("config entries can have either a value or a secretRef"), "{m}");
    assert_valid(&global("{key: k, secretRef: {name: s, key: k}}"));
}

/// Amended (docs/differences.md D6): a present entry without a value is rejected (upstream accepts it and then
/// sets the key on every reconcile, never completing). `value: ""` sets an empty value.
#[test]
fn case_26_present_global_entry_without_value_is_rejected() {
    let m = invalid_message("{displayName: x, blueprint: {config: {global: [{key: my/key1}]}}}");
    assert!(m.contains("config entry \"my/key1\" needs a value or absent: true"), "{m}");
    assert_valid("{displayName: x, blueprint: {config: {global: [{key: my/key1, value: \"\"}]}}}");
}

#[test]
fn case_27_mask_dogu_missing_in_the_blueprint() {
    let m = invalid_message("{displayName: x, blueprint: {}, blueprintMask: {dogus: [{name: official/nexus}]}}");
    assert!(m.contains("blueprint mask does not match the blueprint"), "{m}");
    assert!(m.contains("dogu \"official/nexus\" is missing in the blueprint"), "{m}");
    assert!(m.contains("namespace switch is not allowed by default for dogu \"official/nexus\""), "{m}");
}

#[test]
fn case_28_mask_namespace_switch_needs_the_flag() {
    let spec = |flag: bool| {
        format!(
            "{{displayName: x, allowDoguNamespaceSwitch: {flag}, blueprint: {{dogus: [{{name: official/nexus, version: 3.2.1-1}}]}}, blueprintMask: {{dogus: [{{name: premium/nexus}}]}}}}"
        )
    };
    let m = invalid_message(&spec(false));
    assert!(
        m.contains(
            "namespace switch is not allowed by default for dogu \"premium/nexus\": activate the feature flag for that"
        ),
        "{m}"
    );
    let decision = Scenario::new(&spec(true)).decide();
    assert_eq!(cond(&decision, "Valid"), pair("True", "Valid"));
    let effective = decision.status.as_ref().unwrap().effective_blueprint.as_ref().unwrap();
    assert_eq!(effective.dogus.as_ref().unwrap()[0].name, "premium/nexus");
}

#[test]
fn case_29_mask_cannot_make_an_absent_dogu_present() {
    let m = invalid_message(
        "{displayName: x, blueprint: {dogus: [{name: official/nexus, absent: true}]}, blueprintMask: {dogus: [{name: official/nexus, absent: false}]}}",
    );
    assert!(m.contains("absent dogu \"nexus\" cannot be present in blueprint mask"), "{m}");
}

#[test]
fn case_30_duplicate_mask_dogus() {
    let m = invalid_message(
        "{displayName: x, blueprint: {dogus: [{name: official/dogu1, version: 1.0.0-1}]}, blueprintMask: {dogus: [{name: official/dogu1}, {name: official/dogu1}]}}",
    );
    assert!(m.contains("blueprint mask is invalid: there are duplicate dogus: [dogu1]"), "{m}");
}

#[test]
fn case_31_mask_dogu_without_version_is_valid() {
    assert_valid(
        "{displayName: x, blueprint: {dogus: [{name: official/dogu1, version: 1.0.0-1}]}, blueprintMask: {dogus: [{name: official/dogu1}]}}",
    );
}

/// Amended (docs/differences.md D18): a Blueprint without spec is invalid (upstream panics and retries).
#[test]
fn a_blueprint_without_spec_is_invalid() {
    let mut scenario = Scenario::new("{displayName: x, blueprint: {}}");
    scenario.blueprint.as_mut().unwrap().spec.spec = None;
    let decision = scenario.decide();
    assert_eq!(decision.state, State::Invalid);
    assert_eq!(cond(&decision, "Valid"), pair("False", "Invalid"));
    assert!(message(&decision, "Valid").contains("no spec.blueprint"));
    assert_eq!(decision.requeue, Requeue::AwaitChange);
}

/// Ours (docs/differences.md D8): deploy-config keys that never reach the Component CR are rejected.
#[test]
fn unsupported_deploy_config_keys_are_rejected() {
    let m = invalid_message(
        "{displayName: x, blueprint: {components: [{name: k8s/c, version: 1.0.0, deployConfig: {deployNamespace: 5, replicas: 2}}]}}",
    );
    assert!(m.contains("deployConfig of component \"k8s/c\" has the unsupported key \"replicas\""), "{m}");
    assert!(m.contains("deployConfig.deployNamespace of component \"k8s/c\" must be a string"), "{m}");
    let m = invalid_message(
        "{displayName: x, blueprint: {components: [{name: k8s/c, version: 1.0.0, deployConfig: [1]}]}}",
    );
    assert!(m.contains("deployConfig of component \"k8s/c\" must be an object"), "{m}");
}

/// Ours (docs/differences.md D7): a sensitive entry needs a secretRef (upstream sets an empty secret).
#[test]
fn sensitive_entry_without_secret_ref_is_rejected() {
    let m = invalid_message(&dogu_config_spec("{key: my/key1, sensitive: true}"));
    assert!(m.contains("sensitive config entry \"my/key1\" needs a secretRef"), "{m}");
}
