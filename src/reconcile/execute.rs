//! Step 3, execute: the decision's actions in the machine's runs of independent actions
//! (`independent_runs`: the pauses, the config writes, the dogus' creates and patches), each run with
//! up to [`IN_FLIGHT`] requests at once and the runs in order; each action counted in the metrics. On
//! the first failure no further action starts (those in flight finish), and the machine decides
//! again (`record_failure`) with the failure of the lowest index.

use std::sync::atomic::{AtomicBool, Ordering};

use blueprint_machine::decision::{ApplyFailure, Decision, Operation, independent_runs};
use blueprint_machine::observation::Observation;
use futures::StreamExt;

use super::Context;
use crate::executor::{ConfigStores, Executor, Failure};
use crate::metrics::ActionLabels;

/// How many actions of one run are sent at once: 1,000 dogus' creates one by one took most of an
/// install's time on a real API server, and 8 keep the API server's and the operator's share of two
/// cores small (as the descriptor lookups' bound does).
pub const IN_FLIGHT: usize = 8;

/// What executing a decision did.
pub(super) struct Executed {
    /// How many of the decision's actions were performed: every one of the runs before a failure,
    /// and of the failed run those that succeeded.
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
    let mut failure: Option<ApplyFailure> = None;
    for run in independent_runs(&decision.actions) {
        let failed = AtomicBool::new(false);
        let (executor, failed) = (&executor, &failed);
        // Each action is logged and counted when it ends, not when its run does.
        let outcomes: Vec<(usize, Option<Failure>)> = futures::stream::iter(run)
            .map(|index| async move {
                // Nothing new starts after a failure.
                if failed.load(Ordering::Relaxed) {
                    return None;
                }
                let action = &decision.actions[index];
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
                        Some((index, None))
                    }
                    Err(f) => {
                        tracing::warn!(stage = %action.stage, object = %action.operation.object(), kind = %f.kind, error = %f.message, "action failed");
                        failed.store(true, Ordering::Relaxed);
                        Some((index, Some(f)))
                    }
                }
            })
            .buffer_unordered(IN_FLIGHT)
            .filter_map(std::future::ready)
            .collect()
            .await;
        performed += outcomes.iter().filter(|(_, failure)| failure.is_none()).count();
        // The lowest failed index: what `record_failure` reports.
        failure = outcomes
            .into_iter()
            .filter_map(|(index, failure)| failure.map(|f| (index, f)))
            .min_by_key(|(index, _)| *index)
            .map(|(index, f)| ApplyFailure { action: index, kind: f.kind, message: f.message });
        if failure.is_some() {
            break;
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
