//! One reconcile of the shell, in named steps a reader can follow top to bottom:
//!
//! 1. **observe** (`observe`): the Blueprint (or what this process wrote of it), the caches, the
//!    referenced Secrets as digests, the dogu descriptors, the clock → an `Observation`;
//! 2. **decide**: `blueprint_machine::reconcile_kept`, with the readings kept from the last reconcile;
//! 3. **execute** (`execute`): the actions in order, until one fails (`record_failure` then decides);
//! 4. **write the status** (`write_status`): once, only if it changed;
//! 5. **publish** the events (`publish`), only after that write succeeded;
//! 6. **requeue** (`requeue`): the machine's rule after the status write, the shell's backoff.
//!
//! The result is the journal's [`Record`]: what was observed, decided and executed, one serde type
//! for the controller and the journal.

pub mod backoff;
mod context;
mod execute;
mod in_flight;
mod kept_dogu_readings;
mod kept_reading;
mod observe;
mod own_writes;
mod publish;
mod requests;
mod requeue;
mod write_status;

use std::time::Instant;

use blueprint_machine::StatusWriteResult;
use blueprint_machine::decision::Decision;

pub use context::{CACHE_WAIT, Context, ObserveError};
pub use in_flight::InFlight;
pub use kept_dogu_readings::KeptDoguReadings;
pub use kept_reading::{KeptReading, KeptReadings};
pub use own_writes::OwnStatusWrites;
pub use requests::{HandledRequests, requested_at};

use crate::journal::{Execution, FORMAT, Record};
use crate::metrics::OutcomeLabels;
use crate::status::StatusWrite;

/// How much of a reconcile its [`Record`] keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// Everything observed and decided: for the journal (and tests).
    Full,
    /// The decision without its actions, and no observation: what the controller logs. Both are
    /// dropped once executed, before the status write: its answer and the watch event after it are an
    /// install's largest, and at 1,000 dogus the actions are every Dogu CR and config write (2 MB).
    Outcome,
}

/// One reconcile of the Blueprint `name`: the record of what it observed, decided and did (`execution`
/// says when to look again), with the `detail` asked for.
pub async fn reconcile(context: &Context, name: &str, detail: Detail) -> Record {
    let started = Instant::now();
    let blueprint = context.blueprint(name);
    if blueprint.is_none() {
        context.handled_requests.forget(name);
        context.readings.forget(name);
    }
    let masks = observe::blueprint_masks(context);
    let kept = blueprint.as_ref().map(|b| context.readings.read(name, b, &masks));
    let reading = kept.as_deref().map(KeptReading::reading);

    // 1. Observe.
    let observation = match observe::observe(context, blueprint.clone(), masks.clone(), reading).await {
        Ok(observation) => observation,
        Err(error) => return could_not_observe(context, name, error),
    };
    // Each step's time at debug level: where a slow reconcile's time goes (observing includes the
    // descriptor lookups, which may wait for the remote registry).
    let observed = Instant::now();
    tracing::debug!(descriptors = observation.descriptors.len(), took = ?(observed - started), "observed");
    // 2. Decide.
    let dogu_readings = context.dogu_readings.read(&observation.dogus);
    let decision = blueprint_machine::reconcile_kept(reading, &dogu_readings, &observation);
    context.dogu_readings.keep(dogu_readings);
    tracing::debug!(actions = decision.actions.len(), took = ?observed.elapsed(), "decided");
    // 3. Execute.
    let executing = Instant::now();
    let mut executed = execute::execute(context, &observation, &decision).await;
    if !decision.actions.is_empty() {
        tracing::debug!(performed = executed.performed, took = ?executing.elapsed(), "executed");
    }
    let time = observation.now.clone();
    let (observation, decision) = match detail {
        Detail::Full => (Some(observation), decision),
        Detail::Outcome => {
            drop(observation);
            executed.after_failure = executed.after_failure.map(without_actions);
            (None, without_actions(decision))
        }
    };
    let outcome = executed.after_failure.as_ref().unwrap_or(&decision);
    // 4. Write the status.
    let status = write_status::write_status(context, name, blueprint.as_deref(), outcome).await;
    if !matches!(status, StatusWrite::Unchanged) {
        // The Blueprint object is replaced (or may be): its reading cannot serve the next reconcile.
        context.readings.forget(name);
    }
    // 5. Publish the events, only if the status they belong to is the stored one.
    let events_published = match (&status, blueprint.as_deref()) {
        (StatusWrite::Unchanged | StatusWrite::Written, Some(blueprint)) => {
            publish::publish(context, blueprint, &outcome.events).await
        }
        _ => 0,
    };
    // A reconcile asked for by hand is handled once its status is the stored one; whatever it
    // decided, the backoff starts afresh (the request asked to try now).
    if let (Some(value), StatusWrite::Unchanged | StatusWrite::Written) = (&decision.handled_request, &status) {
        context.handled_requests.handled(name, value);
        context.backoff.reset(name);
    }
    // 6. Requeue.
    let requeue = blueprint_machine::after_status_write(outcome, status_result(&status));
    let requeue_after = requeue::delay(context, name, &requeue);

    context.metrics.reconcile_duration.observe(started.elapsed().as_secs_f64());
    let label = match (&executed.failure, &status) {
        (_, StatusWrite::Conflict) => "StatusConflict".to_owned(),
        (_, StatusWrite::Failed { .. }) => "StatusFailed".to_owned(),
        (Some(_), _) => "ApplyFailed".to_owned(),
        (None, _) => decision.state.to_string(),
    };
    context.metrics.reconciles.get_or_create(&OutcomeLabels { outcome: label }).inc();
    // The Blueprint's state as the machine decided it, once the status that shows it is the stored one
    // (a decision whose status write conflicted or failed was made on a stale Blueprint).
    match (&status, blueprint.is_some()) {
        (StatusWrite::Unchanged | StatusWrite::Written, true) => {
            context.metrics.set_blueprint_state(&context.namespace, name, &outcome.state.to_string());
        }
        (_, false) => context.metrics.forget_blueprint(&context.namespace, name),
        _ => {}
    }
    Record {
        format: FORMAT,
        operator_version: context.identity.version.clone(),
        blueprint: name.to_owned(),
        time,
        execution: Execution {
            performed: executed.performed,
            failure: executed.failure,
            decision_after_failure: executed.after_failure,
            status,
            events_published,
            requeue_after_seconds: requeue_after.map(|d| d.as_secs_f64()),
            error: None,
        },
        observation,
        decision: Some(decision),
    }
}

fn without_actions(decision: Decision) -> Decision {
    Decision { actions: Vec::new(), ..decision }
}

/// The reconcile could not even observe (the caches are not filled, a Secret could not be read):
/// nothing was decided; it is tried again with backoff.
fn could_not_observe(context: &Context, name: &str, error: ObserveError) -> Record {
    tracing::warn!(%error, "reconcile could not decide");
    let requeue = blueprint_machine::Requeue::Backoff { reason: error.to_string() };
    let requeue_after = requeue::delay(context, name, &requeue);
    context.metrics.reconciles.get_or_create(&OutcomeLabels { outcome: "ObserveFailed".into() }).inc();
    Record {
        format: FORMAT,
        operator_version: context.identity.version.clone(),
        blueprint: name.to_owned(),
        time: context.now(),
        observation: None,
        decision: None,
        execution: Execution {
            performed: 0,
            failure: None,
            decision_after_failure: None,
            status: StatusWrite::Unchanged,
            events_published: 0,
            requeue_after_seconds: requeue_after.map(|d| d.as_secs_f64()),
            error: Some(error.to_string()),
        },
    }
}

fn status_result(status: &StatusWrite) -> StatusWriteResult {
    match status {
        StatusWrite::Unchanged => StatusWriteResult::Unchanged,
        StatusWrite::Written => StatusWriteResult::Written,
        StatusWrite::Conflict => StatusWriteResult::Conflict,
        StatusWrite::Failed { .. } => StatusWriteResult::Failed,
    }
}
