//! Pipeline, apply and completion: docs/acceptance.md cases 74–100, and the differences of
//! docs/differences.md that change how the pipeline applies.

mod apply;
mod blocked;
mod completion;
mod differences;
mod gates;
mod gateway;
mod reconcile_request;
mod self_upgrade;

pub(crate) use blueprint_machine::api::{ComponentStatus, DoguResources, QuantityText};
pub(crate) use blueprint_machine::decision::{ConfigTarget, ConfigValue, Operation};
pub(crate) use blueprint_machine::fixtures::*;
pub(crate) use blueprint_machine::{ApplyFailure, FailureKind, Requeue, State, record_failure};
pub(crate) use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
pub(crate) use serde_json::json;

pub(crate) const INSTALL_NEXUS: &str =
    "{displayName: x, blueprint: {dogus: [{name: official/nexus, version: 3.2.1-1}]}}";

pub(crate) fn completed(status: &str, reason: &str) -> Condition {
    Condition {
        type_: "Completed".into(),
        status: status.into(),
        reason: reason.into(),
        message: String::new(),
        last_transition_time: at(0),
        observed_generation: Some(1),
    }
}

pub(crate) fn failure_at(
    decision: &blueprint_machine::Decision,
    object: &str,
    kind: FailureKind,
    message: &str,
) -> ApplyFailure {
    let action = decision.actions.iter().position(|a| a.operation.object() == object).unwrap();
    ApplyFailure { action, kind, message: message.into() }
}
