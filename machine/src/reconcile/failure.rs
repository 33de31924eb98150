//! Deciding again when the executor could not perform an action: what the failed stage (and later
//! ones) would have reported did not happen, and `LastApplySucceeded` says what failed. A conflict is
//! not a failure: someone else wrote the object since it was observed, so the reconcile decides again
//! on fresh state.

use std::sync::Arc;

use crate::conditions::{self, Conditions, Status, reason};
use crate::decision::{ApplyFailure, ConfigTarget, Decision, FailureKind, Operation, Requeue, Stage};
use crate::events::{self, reason as event};
use crate::observation::Observation;

/// Decides again after the executor failed to perform `failure.action` of `decision` (the earlier runs
/// of independent actions were performed; of its own run, any other action may have been: each is on
/// another object, and the next observation shows which).
pub fn record_failure(observation: &Observation, decision: &Decision, failure: &ApplyFailure) -> Decision {
    let mut decision = decision.clone();
    let Some(stage) = decision.actions.get(failure.action).map(|a| a.stage) else {
        return decision;
    };
    // What a failed stage (or a later one) would have reported as applied did not happen.
    decision.events.retain(|e| e.stage.is_none_or(|s| s < stage));
    if failure.kind == FailureKind::Conflict {
        decision.requeue = Requeue::after(1, format!("conflict while applying {stage}: {}", failure.message));
        return decision;
    }
    let action = &decision.actions[failure.action];
    let (condition_reason, context) = what_failed(stage, &action.operation);
    let message = format!("{context}: {}: {}", action.operation.object(), failure.message);
    if let (Some(status), Some(blueprint)) =
        (decision.status.as_mut().map(Arc::make_mut), observation.blueprint.as_ref())
    {
        let stored = blueprint.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
        let generation = blueprint.metadata.generation.unwrap_or(0);
        let mut conditions = Conditions::resume(stored, &status.conditions, observation.now.clone(), generation);
        conditions.set(conditions::LAST_APPLY_SUCCEEDED, Status::False, condition_reason, message.clone());
        if conditions.changed(conditions::LAST_APPLY_SUCCEEDED) {
            // Published after the decision's events (it happened after them).
            decision.events.push(events::warning(event::EXECUTION_FAILED, message.clone()));
        }
        status.conditions = conditions.into_vec();
    }
    decision.requeue = match failure.kind {
        FailureKind::NotFound => Requeue::after(10, message),
        _ => Requeue::Backoff { reason: message },
    };
    decision
}

/// The condition reason and the words for a failed action, by stage and operation.
fn what_failed(stage: Stage, operation: &Operation) -> (&'static str, &'static str) {
    match (stage, operation) {
        (Stage::SelfUpgrade, _) => {
            (reason::COMPONENT_APPLY_FAILURE, "an error occurred while applying the self-upgrade to the ecosystem")
        }
        (Stage::Config, Operation::WriteConfig { target: ConfigTarget::Global, .. }) => {
            (reason::CONFIG_APPLY_FAILURE, "could not apply global config")
        }
        (Stage::Config, Operation::WriteConfig { target: ConfigTarget::Dogu(_), .. }) => {
            (reason::CONFIG_APPLY_FAILURE, "could not apply normal dogu config")
        }
        (Stage::Config, Operation::WriteConfig { target: ConfigTarget::Sensitive(_), .. }) => {
            (reason::CONFIG_APPLY_FAILURE, "could not apply sensitive dogu config")
        }
        (Stage::Config, _) => (reason::CONFIG_APPLY_FAILURE, "could not pause reconciliation for some dogus"),
        (Stage::Components, _) => {
            (reason::COMPONENT_APPLY_FAILURE, "an error occurred while applying component state to the ecosystem")
        }
        (Stage::Dogus, _) => {
            (reason::DOGU_APPLY_FAILURE, "an error occurred while applying dogu state to the ecosystem")
        }
    }
}
