//! Step 3, execute: the decision's actions as the machine's [`Scheduler`] releases them (D59: each dogu
//! after its own config and the global config, components one by one), up to [`IN_FLIGHT`] requests at
//! once; each action counted in the metrics. After a failure no action of its stage or a later one
//! starts (those in flight finish), and the machine decides again (`record_failure`) with the failure
//! the scheduler reports.

use std::collections::BTreeMap;

use blueprint_machine::decision::{ApplyFailure, Decision, Operation};
use blueprint_machine::observation::Observation;
use blueprint_machine::schedule::Scheduler;
use futures::StreamExt;
use futures::stream::FuturesUnordered;

use super::Context;
use crate::executor::{ConfigStores, Executor, Failure};
use crate::metrics::ActionLabels;

/// How many actions are sent at once: 1,000 dogus' creates one by one took most of an install's time
/// on a real API server, and 8 keep the API server's and the operator's share of two cores small (as
/// the descriptor lookups' bound does).
pub const IN_FLIGHT: usize = 8;

/// What executing a decision did.
pub(super) struct Executed {
    /// How many of the decision's actions were performed.
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
    let mut scheduler = Scheduler::new(&decision.actions);
    let mut failures: BTreeMap<usize, Failure> = BTreeMap::new();
    let mut in_flight = FuturesUnordered::new();
    loop {
        while in_flight.len() < IN_FLIGHT
            && let Some(index) = scheduler.start()
        {
            let executor = &executor;
            in_flight.push(async move { (index, executor.perform(&decision.actions[index]).await) });
        }
        let Some((index, result)) = in_flight.next().await else { break };
        // Each action is logged and counted when it ends.
        let action = &decision.actions[index];
        let labels = ActionLabels {
            kind: kind(&action.operation).to_owned(),
            result: match &result {
                Ok(()) => "ok".to_owned(),
                Err(f) => format!("{:?}", f.kind).to_lowercase(),
            },
        };
        context.metrics.actions.get_or_create(&labels).inc();
        scheduler.finished(index, result.is_ok());
        match result {
            Ok(()) => {
                tracing::info!(stage = %action.stage, object = %action.operation.object(), why = %action.reason, "applied");
            }
            Err(f) => {
                tracing::warn!(stage = %action.stage, object = %action.operation.object(), kind = %f.kind, error = %f.message, "action failed");
                failures.insert(index, f);
            }
        }
    }
    let failure = scheduler.failure().and_then(|index| {
        let f = failures.remove(&index)?;
        Some(ApplyFailure { action: index, kind: f.kind, message: f.message })
    });
    let after_failure = failure.as_ref().map(|f| blueprint_machine::record_failure(observation, decision, f));
    Executed { performed: scheduler.performed(), failure, after_failure }
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
