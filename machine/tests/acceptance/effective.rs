//! The effective blueprint: docs/acceptance.md cases 32–37.

use blueprint_machine::api::{BlueprintDogu, BlueprintManifest};
use blueprint_machine::{Requeue, State};

use blueprint_machine::fixtures::*;

/// The effective blueprint a decision publishes (also for the v3 cases).
pub(super) fn effective(decision: &blueprint_machine::Decision) -> &BlueprintManifest {
    decision.status.as_ref().unwrap().effective_blueprint.as_ref().expect("an effective blueprint")
}

pub(super) fn dogu<'a>(manifest: &'a BlueprintManifest, name: &str) -> &'a BlueprintDogu {
    manifest.dogus.as_ref().unwrap().iter().find(|d| d.name == name).unwrap()
}

#[test]
fn case_32_mask_versions_override_blueprint_versions() {
    let decision = Scenario::new(
        "{displayName: x, blueprint: {dogus: [{name: official/dogu1, version: 3.2.1-1}, {name: official/dogu2, version: 3.2.1-2}]},
          blueprintMask: {dogus: [{name: official/dogu1, version: 3.2.1-2}, {name: official/dogu2, version: 3.2.1-1}]}}",
    )
    .decide();
    let e = effective(&decision);
    assert_eq!(dogu(e, "official/dogu1").version.as_deref(), Some("3.2.1-2"));
    assert_eq!(dogu(e, "official/dogu2").version.as_deref(), Some("3.2.1-1"));
    assert_eq!(dogu(e, "official/dogu1").absent, Some(false));
    assert_eq!(dogu(e, "official/dogu2").absent, Some(false));
}

#[test]
fn case_33_mask_absent_keeps_the_version_and_drops_the_dogus_config() {
    let decision = Scenario::new(
        "{displayName: x, blueprint: {dogus: [{name: official/dogu1, version: 3.2.1-1}, {name: official/dogu2, version: 3.2.1-2}],
            config: {dogus: {dogu1: [{key: a, value: b}]}}},
          blueprintMask: {dogus: [{name: official/dogu1, version: 3.2.1-1, absent: true}, {name: official/dogu2, absent: true}]}}",
    )
    .decide();
    assert_eq!(cond(&decision, "Valid"), pair("True", "Valid"));
    let e = effective(&decision);
    assert_eq!(dogu(e, "official/dogu1").absent, Some(true));
    assert_eq!(dogu(e, "official/dogu1").version.as_deref(), Some("3.2.1-1"));
    assert_eq!(dogu(e, "official/dogu2").absent, Some(true));
    assert_eq!(dogu(e, "official/dogu2").version.as_deref(), Some("3.2.1-2"));
    assert_eq!(e.config, None, "dogu1's config is removed");
}

/// Amended (docs/differences.md D11): config for a dogu that will not be installed is invalid and waits for a
/// change (upstream retries with exponential backoff).
#[test]
fn case_34_config_for_a_dogu_not_in_the_blueprint_is_inconsistent() {
    let decision = Scenario::new("{displayName: x, blueprint: {config: {dogus: {my-dogu: []}}}}").decide();
    assert_eq!(decision.state, State::Invalid);
    assert_eq!(cond(&decision, "Valid"), pair("False", "Inconsistent"));
    assert_eq!(
        message(&decision, "Valid"),
        "setting config for dogu \"my-dogu\" is not allowed as it will not be installed with the blueprint"
    );
    assert_eq!(event_reasons(&decision), ["BlueprintSpecInvalid"]);
    assert_eq!(decision.requeue, Requeue::AwaitChange);
    // The same situation again emits nothing new.
    let again =
        Scenario::new("{displayName: x, blueprint: {config: {dogus: {my-dogu: []}}}}").after(&decision).decide();
    assert!(again.events.is_empty(), "{:?}", again.events);
}

#[test]
fn case_35_config_for_an_absent_dogu_is_inconsistent() {
    let decision =
        Scenario::new("{displayName: x, blueprint: {dogus: [{name: official/x, absent: true}], config: {dogus: {x: [{key: a, value: b}]}}}}").decide();
    assert_eq!(cond(&decision, "Valid"), pair("False", "Inconsistent"));
    assert_eq!(
        message(&decision, "Valid"),
        "setting config for dogu \"x\" is not allowed as it will not be installed with the blueprint"
    );
}

#[test]
fn case_36_additional_mounts_pass_through_unchanged() {
    let decision = Scenario::new(
        "{displayName: x, blueprint: {dogus: [{name: official/dogu1, version: 1.0.0-1, platformConfig: {additionalMounts: [
            {sourceType: ConfigMap, name: html-config, volume: customhtml, subfolder: subfolder}]}}]}}",
    )
    .decide();
    let mounts = dogu(effective(&decision), "official/dogu1")
        .platform_config
        .as_ref()
        .unwrap()
        .additional_mounts
        .clone()
        .unwrap();
    assert_eq!(mounts.len(), 1);
    assert_eq!(mounts[0].source_type, "ConfigMap");
    assert_eq!(mounts[0].name, "html-config");
    assert_eq!(mounts[0].volume, "customhtml");
    assert_eq!(mounts[0].subfolder.as_deref(), Some("subfolder"));
}

/// The sample blueprint of k8s-blueprint-lib: mysql with config in the blueprint, made absent by the mask.
#[test]
fn case_37_the_upstream_sample_blueprint() {
    let decision = Scenario::new(
        r#"
displayName: "Blueprint Sample v6.834"
blueprint:
  components:
    - name: "k8s/k8s-prometheus"
      absent: true
  config:
    dogus:
      mysql:
        - key: "logging/root"
          value: "WARN"
        - key: "sa-ldap/password"
          sensitive: true
          secretRef:
            name: "ldap-sa-secret"
            key: "password"
        - key: "to/be/deleted"
          absent: true
    global:
      - key: "my/global/key"
        value: "myValue"
      - absent: true
        key: "global/to/be/delete"
  dogus:
    - name: "official/mysql"
      version: "8.4.6-1"
blueprintMask:
  dogus:
    - absent: true
      name: "official/mysql"
"#,
    )
    .decide();
    assert_eq!(cond(&decision, "Valid"), pair("True", "Valid"));
    let e = effective(&decision);
    assert_eq!(dogu(e, "official/mysql").absent, Some(true));
    let config = e.config.as_ref().unwrap();
    assert_eq!(config.dogus, None);
    assert_eq!(config.global.as_ref().unwrap().len(), 2);
    // Nothing references ldap-sa-secret any more, so its absence does not matter.
    assert_eq!(cond(&decision, "Executable"), pair("True", "Executable"));
}
