//! Step 3, execute: the decision's actions in order, each counted in the metrics; on the first
//! failure the rest is skipped, and the machine decides again (`record_failure`).

use blueprint_machine::decision::{ApplyFailure, Decision, Operation};
use blueprint_machine::observation::Observation;

use super::Context;
use crate::executor::{ConfigStores, Executor};
use crate::metrics::ActionLabels;

/// What executing a decision did.
pub(super) struct Executed {
    /// Actions performed: a prefix of the decision's actions.
    pub(super) performed: usize,
    pub(super) failure: Option<ApplyFailure>,
    /// What the machine decided after the failure: its status and events are the ones that count.
    pub(super) after_failure: Option<Decision>,
}

pub(super) async fn execute(context: &Context, observation: &Observation, decision: &Decision) -> Executed {
    let stores = ConfigStores {
        config_maps: context.stores.config_maps.clone(),
        sensitive_configs: context.stores.sensitive_configs.clone(),
    };
    let access = observation.operator.secret_access.clone();
    let executor = Executor::new(context.client.clone(), &context.namespace, stores, access);
    let mut performed = 0;
    let mut failure = None;
    for (index, action) in decision.actions.iter().enumerate() {
        let result = executor.perform(action).await;
        let labels = ActionLabels {
            kind: kind(&action.operation).to_owned(),
            result: match &result {
                Ok(()) => "ok".to_owned(),
                Err(f) => format!("{:?}", f.kind).to_lowercase(),
            },
        };
        context.metrics.actions.get_or_create(&labels).inc();
        match result {
            Ok(()) => {
                tracing::info!(stage = %action.stage, object = %action.operation.object(), why = %action.reason, "applied");
                performed += 1;
            }
            Err(f) => {
                tracing::warn!(stage = %action.stage, object = %action.operation.object(), kind = %f.kind, error = %f.message, "action failed");
                failure = Some(ApplyFailure { action: index, kind: f.kind, message: f.message });
                break;
            }
        }
    }
    let after_failure = failure.as_ref().map(|f| blueprint_machine::record_failure(observation, decision, f));
    Executed { performed, failure, after_failure }
}

/// The metric label of an operation.
fn kind(operation: &Operation) -> &'static str {
    match operation {
        Operation::CreateDogu { .. } => "createDogu",
        Operation::PatchDogu { .. } => "patchDogu",
        Operation::DeleteDogu { .. } => "deleteDogu",
        Operation::CreateComponent { .. } => "createComponent",
        Operation::PatchComponent { .. } => "patchComponent",
        Operation::DeleteComponent { .. } => "deleteComponent",
        Operation::WriteConfig { .. } => "writeConfig",
    }
}
