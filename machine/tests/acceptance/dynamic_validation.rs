//! Dynamic validation against dogu descriptors: docs/acceptance.md cases 38–47.

use blueprint_machine::observation::{DescriptorLookup, ProvidedDependency};
use blueprint_machine::{Requeue, State};

use blueprint_machine::fixtures::*;

const REDMINE_AND_POSTGRES: &str = "{displayName: x, blueprint: {dogus: [{name: official/redmine, version: 1.0.0-1}, {name: official/postgres, version: 1.0.0-1}]}}";
const ONLY_REDMINE: &str = "{displayName: x, blueprint: {dogus: [{name: official/redmine, version: 1.0.0-1}]}}";

fn redmine() -> String {
    descriptor("official/redmine", "1.0.0-1", r#"{"type":"dogu","name":"postgres","version":"1.0.0-1"}"#, "")
}

#[test]
fn case_38_satisfied_dependencies_are_valid() {
    let decision = Scenario::new(REDMINE_AND_POSTGRES).with_descriptor(&redmine()).decide();
    assert_eq!(cond(&decision, "Valid"), pair("True", "Valid"));
}

#[test]
fn case_39_a_missing_dependency_is_inconsistent_and_waits_for_a_change() {
    let decision = Scenario::new(ONLY_REDMINE).with_descriptor(&redmine()).decide();
    assert_eq!(decision.state, State::Invalid);
    assert_eq!(cond(&decision, "Valid"), pair("False", "Inconsistent"));
    assert!(message(&decision, "Valid").contains(
        "dependencies for dogu 'official/redmine' are not satisfied in blueprint: dependency 'postgres' in version '1.0.0-1' is not a present dogu in the effective blueprint"
    ), "{}", message(&decision, "Valid"));
    assert_eq!(decision.requeue, Requeue::AwaitChange);
    assert!(decision.actions.is_empty());
}

#[test]
fn case_40_qualified_dependency_names_never_match_and_all_dogus_are_reported() {
    let decision = Scenario::new(
        "{displayName: x, blueprint: {dogus: [{name: helloworld/bluespice, version: 1.0.0-1}, {name: official/redmine, version: 1.0.0-1}]}}",
    )
    .with_descriptor(&descriptor("helloworld/bluespice", "1.0.0-1", r#"{"type":"dogu","name":"official/mysql","version":"1.0.0-1"}"#, ""))
    .with_descriptor(&redmine())
    .decide();
    let m = message(&decision, "Valid");
    assert!(
        m.contains("dependency 'official/mysql' in version '1.0.0-1' is not a present dogu in the effective blueprint"),
        "{m}"
    );
    assert!(m.contains("dependencies for dogu 'official/redmine'"), "{m}");
}

#[test]
fn case_41_package_dependencies_are_ignored() {
    let decision = Scenario::new(ONLY_REDMINE)
        .with_descriptor(&descriptor("official/redmine", "1.0.0-1", r#"{"type":"package","name":"jq"}"#, ""))
        .decide();
    assert_eq!(cond(&decision, "Valid"), pair("True", "Valid"));
}

#[test]
fn case_42_nginx_and_registrator_dependencies_are_ignored() {
    let decision = Scenario::new(
        "{displayName: x, blueprint: {dogus: [{name: official/plantuml, version: 1.0.0-1}, {name: official/ldap-mapper, version: 1.0.0-1}]}}",
    )
    .with_descriptor(&descriptor("official/plantuml", "1.0.0-1", r#"{"type":"dogu","name":"nginx"}"#, ""))
    .with_descriptor(&descriptor("official/ldap-mapper", "1.0.0-1", r#"{"type":"dogu","name":"registrator"}"#, ""))
    .decide();
    assert_eq!(cond(&decision, "Valid"), pair("True", "Valid"));
}

/// Upstream v3.3's feature flags (docs/differences.md D48): a platform that authenticates through a
/// component (auth registration) or sends mail through one provides `cas` or `postfix` without the dogu.
#[test]
fn v33_provided_dependencies_are_not_required_in_the_blueprint() {
    const REDMINE: &str = "{displayName: x, blueprint: {dogus: [{name: official/redmine, version: 1.0.0-1}]}}";
    let needs_both = descriptor(
        "official/redmine",
        "1.0.0-1",
        r#"{"type":"dogu","name":"cas","version":">=7.0.0-1"},{"type":"dogu","name":"postfix"}"#,
        "",
    );
    let plain = Scenario::new(REDMINE).with_descriptor(&needs_both).decide();
    let m = message(&plain, "Valid");
    assert!(m.contains("dependency 'cas'") && m.contains("dependency 'postfix'"), "{m}");

    let only_cas = Scenario::new(REDMINE).with_descriptor(&needs_both).with_provided(ProvidedDependency::Cas).decide();
    let m = message(&only_cas, "Valid");
    assert!(!m.contains("dependency 'cas'") && m.contains("dependency 'postfix'"), "{m}");

    let both = Scenario::new(REDMINE)
        .with_descriptor(&needs_both)
        .with_provided(ProvidedDependency::Cas)
        .with_provided(ProvidedDependency::Postfix)
        .decide();
    assert_eq!(cond(&both, "Valid"), pair("True", "Valid"));
}

#[test]
fn case_43_a_dogu_unknown_to_the_registry_is_retried_after_10s() {
    let decision = Scenario::new("{displayName: x, blueprint: {dogus: [{name: official/redmine2, version: 1.0.0-1}]}}")
        .with_lookup("official/redmine2", "1.0.0-1", DescriptorLookup::NotFound)
        .decide();
    assert_eq!(cond(&decision, "Valid"), pair("False", "Inconsistent"));
    assert!(
        message(&decision, "Valid")
            .contains("remote dogu registry has no dogu specification for at least one wanted dogu")
    );
    assert_eq!(decision.requeue, Requeue::after(10, "a wanted dogu version is unknown to the dogu registry"));
    assert!(decision.actions.is_empty());
}

/// Amended: a registry that cannot be asked leaves validity unknown (`Valid=Unknown/CannotValidate`,
/// not `False`), the diff is still shown, nothing is applied, and the reconcile backs off.
#[test]
fn case_44_an_unavailable_registry_backs_off() {
    let decision = Scenario::new(ONLY_REDMINE)
        .with_registry_default(DescriptorLookup::Unavailable { reason: "HTTP 500".into() })
        .decide();
    assert_eq!(decision.state, State::ValidationPending);
    assert_eq!(cond(&decision, "Valid"), pair("Unknown", "CannotValidate"));
    assert!(
        message(&decision, "Valid")
            .contains("cannot load dogu specifications from remote registry for dogu dependency validation")
    );
    assert!(message(&decision, "Valid").contains("HTTP 500"));
    assert!(matches!(decision.requeue, Requeue::Backoff { .. }));
    assert_eq!(dogu_actions(&decision, "redmine"), ["install"], "the diff is shown anyway");
    assert!(decision.actions.is_empty());
}

fn nginx_static() -> String {
    descriptor(
        "k8s/nginx-static",
        "1.26.3-2",
        r#"{"type":"dogu","name":"nginx-ingress"},{"type":"client","name":"k8s-dogu-operator"}"#,
        r#"{"Name":"app.conf.d"},{"Name":"customhtml"},{"Name":"menu-json","Clients":[{"Name":"k8s-dogu-operator"}]},{"Name":"localConfig"}"#,
    )
}

fn mount_to(volume: &str) -> String {
    format!(
        "{{displayName: x, blueprint: {{dogus: [{{name: k8s/nginx-ingress, version: 1.0.0-1}}, {{name: k8s/nginx-static, version: 1.26.3-2, platformConfig: {{additionalMounts: [{{sourceType: ConfigMap, name: html, volume: {volume}}}]}}}}]}}}}"
    )
}

#[test]
fn case_45_mounts_need_a_volume_without_clients() {
    let valid = Scenario::new(&mount_to("customhtml")).with_descriptor(&nginx_static()).decide();
    assert_eq!(cond(&valid, "Valid"), pair("True", "Valid"));
    for volume in ["unknownVolume", "menu-json"] {
        let decision = Scenario::new(&mount_to(volume)).with_descriptor(&nginx_static()).decide();
        let m = message(&decision, "Valid");
        assert!(m.contains("additionalMounts are invalid"), "{m}");
        assert!(
            m.contains(&format!("volume \"{volume}\" in additional mount for dogu \"k8s/nginx-static\" is invalid")),
            "{m}"
        );
        assert!(m.contains(r#"It needs to be one of ["app.conf.d" "customhtml" "localConfig"]"#), "{m}");
    }
}

/// Amended: descriptors of all wanted dogus are needed for the dependency check anyway; a dogu without
/// mounts is simply not mount-checked (its descriptor's volumes do not matter).
#[test]
fn case_46_dogus_without_mounts_are_not_mount_checked() {
    let decision = Scenario::new("{displayName: x, blueprint: {dogus: [{name: official/a, version: 1.0.0-1}]}}")
        .with_descriptor(&descriptor("official/a", "1.0.0-1", "", r#"{"Name":"only","Clients":[{"Name":"x"}]}"#))
        .decide();
    assert_eq!(cond(&decision, "Valid"), pair("True", "Valid"));
}

#[test]
fn case_47_absent_dogus_are_not_checked_and_satisfy_nothing() {
    let decision = Scenario::new(
        "{displayName: x, blueprint: {dogus: [{name: official/redmine, version: 1.0.0-1}, {name: official/postgres, version: 1.0.0-1, absent: true}]}}",
    )
    .with_descriptor(&redmine())
    .with_lookup("official/postgres", "1.0.0-1", DescriptorLookup::NotFound)
    .decide();
    let m = message(&decision, "Valid");
    assert!(m.contains("dependency 'postgres' in version '1.0.0-1' is not a present dogu"), "{m}");
    assert!(!m.contains("remote dogu registry"), "the absent dogu's descriptor is not needed: {m}");
}

/// Amended (docs/differences.md D1): dependency version constraints are checked against the wanted version.
#[test]
fn dependency_version_constraints_are_enforced() {
    let spec = |pg: &str| {
        format!(
            "{{displayName: x, blueprint: {{dogus: [{{name: official/redmine, version: 1.0.0-1}}, {{name: official/postgresql, version: {pg}}}]}}}}"
        )
    };
    let redmine =
        descriptor("official/redmine", "1.0.0-1", r#"{"type":"dogu","name":"postgresql","version":">=14.0-1"}"#, "");
    let too_old = Scenario::new(&spec("12.18-1")).with_descriptor(&redmine).decide();
    assert_eq!(cond(&too_old, "Valid"), pair("False", "Inconsistent"));
    assert!(
        message(&too_old, "Valid").contains(
            "parsed version 12.18-1 does not fulfill version requirement of >=14.0-1 dogu official/postgresql"
        )
    );
    let new_enough = Scenario::new(&spec("14.17-2")).with_descriptor(&redmine).decide();
    assert_eq!(cond(&new_enough, "Valid"), pair("True", "Valid"));
}

/// Amended (docs/differences.md D2): a dependency without `type` is a dogu dependency.
#[test]
fn untyped_dependencies_are_dogu_dependencies() {
    let decision = Scenario::new(ONLY_REDMINE)
        .with_descriptor(&descriptor("official/redmine", "1.0.0-1", r#"{"name":"postgres"}"#, ""))
        .decide();
    assert_eq!(cond(&decision, "Valid"), pair("False", "Inconsistent"));
    assert!(message(&decision, "Valid").contains("dependency 'postgres' in version '' is not a present dogu"));
}

/// The shell lists the descriptors in the order of the wanted dogus, and validation finds each at its
/// dogu's position; listed in another order (a recorded observation, another build), they are found
/// all the same.
#[test]
fn descriptors_listed_in_another_order_are_found_all_the_same() {
    let scenarios = [
        Scenario::new(REDMINE_AND_POSTGRES).with_descriptor(&redmine()),
        Scenario::new(ONLY_REDMINE).with_descriptor(&redmine()),
        Scenario::new(REDMINE_AND_POSTGRES).with_descriptor(&redmine()).with_lookup(
            "official/postgres",
            "1.0.0-1",
            DescriptorLookup::NotFound,
        ),
    ];
    for scenario in scenarios {
        let mut observation = scenario.observe();
        let in_order = blueprint_machine::reconcile(&observation);
        observation.descriptors.reverse();
        assert_eq!(blueprint_machine::reconcile(&observation), in_order);
    }
    // One left out (not looked up): said so; the other is still found at another position.
    let mut observation = Scenario::new(REDMINE_AND_POSTGRES).with_descriptor(&redmine()).observe();
    observation.descriptors.remove(0);
    let decision = blueprint_machine::reconcile(&observation);
    let valid = message(&decision, "Valid");
    assert!(
        valid.contains("\"official/redmine\" with version \"1.0.0-1\": the descriptor was not looked up"),
        "{valid}"
    );
    assert!(!valid.contains("postgres"), "{valid}");
}
