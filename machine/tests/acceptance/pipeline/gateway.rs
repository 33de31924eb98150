//! docs/differences.md D49: on a platform that routes through the gateway (the component
//! `k8s-ces-gateway`), dogus' reverse-proxy settings are not applied (the gateway reads no nginx-ingress
//! annotations), existing annotations are left alone, and the user is told once per generation.

use super::*;

const PROXIED: &str = "{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 1.0.0-1, platformConfig: {reverseProxy: {maxBodySize: 1G}}}]}}";
const PROXIED_WITH_GATEWAY: &str = "{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 1.0.0-1, platformConfig: {reverseProxy: {maxBodySize: 1G}}}], components: [{name: k8s/k8s-ces-gateway, version: 1.0.0}]}}";

fn gateway() -> blueprint_machine::api::Component {
    let mut cr = component_cr("k8s/k8s-ces-gateway", "1.0.0");
    cr.status = Some(ComponentStatus {
        installed_version: Some("1.0.0".into()),
        health: Some("available".into()),
        ..Default::default()
    });
    cr
}

fn ignored_events(decision: &blueprint_machine::Decision) -> Vec<&str> {
    decision.events.iter().filter(|e| e.reason == "ReverseProxyIgnored").map(|e| e.message.as_str()).collect()
}

#[test]
fn d49_with_the_gateway_a_changed_reverse_proxy_is_no_action_and_said_once() {
    let scenario = Scenario::new(PROXIED).with_dogu("official/nexus", "1.0.0-1").with_component_cr(gateway());
    let decision = scenario.decide();
    assert!(decision.actions.is_empty(), "{:?}", action_summaries(&decision));
    assert_eq!(cond(&decision, "Completed"), pair("True", "Completed"));
    let told = ignored_events(&decision);
    assert_eq!(told.len(), 1, "{:?}", decision.events);
    assert!(
        told[0].starts_with(
            "reverseProxy of nexus is not applied: the platform routes through the gateway (k8s-ces-gateway)"
        ),
        "{}",
        told[0]
    );
    assert_eq!(
        decision.events.iter().find(|e| e.reason == "ReverseProxyIgnored").unwrap().type_,
        blueprint_machine::EventType::Warning
    );
    // The same generation again: not said again.
    let again = scenario.after(&decision).decide();
    assert!(ignored_events(&again).is_empty());
}

#[test]
fn d49_without_the_gateway_the_reverse_proxy_is_applied_as_annotations() {
    let decision = Scenario::new(PROXIED).with_dogu("official/nexus", "1.0.0-1").decide();
    assert_eq!(
        patch_of(&decision, "dogus/nexus"),
        &json!({"spec": {"additionalIngressAnnotations": {"nginx.ingress.kubernetes.io/proxy-body-size": "1G"}}})
    );
    assert!(ignored_events(&decision).is_empty());
}

#[test]
fn d49_a_dogu_installed_with_the_gateway_gets_no_annotations() {
    let decision = Scenario::new(PROXIED_WITH_GATEWAY).with_component_cr(gateway()).decide();
    let create = decision.actions.iter().find(|a| a.operation.object() == "dogus/nexus").expect("nexus is installed");
    let Operation::CreateDogu { object } = &create.operation else { panic!("{:?}", create.operation) };
    assert_eq!(object.spec.additional_ingress_annotations, None);
    assert_eq!(ignored_events(&decision).len(), 1);
}

/// A blueprint that removes the gateway goes back to nginx-ingress: the settings apply again.
#[test]
fn d49_a_blueprint_removing_the_gateway_applies_the_reverse_proxy() {
    let removed = "{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 1.0.0-1, platformConfig: {reverseProxy: {maxBodySize: 1G}}}], components: [{name: k8s/k8s-ces-gateway, absent: true}]}}";
    let decision = Scenario::new(removed).with_dogu("official/nexus", "1.0.0-1").with_component_cr(gateway()).decide();
    assert!(ignored_events(&decision).is_empty());
    let summaries = action_summaries(&decision);
    assert!(summaries.iter().any(|s| s.contains("components/k8s-ces-gateway")), "{summaries:?}");
}
