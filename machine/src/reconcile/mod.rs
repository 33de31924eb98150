//! One reconcile, decided: read the Blueprint → what is observed (validity, health, the diff, what
//! blocks) → gates → stages → the decision.
//!
//! [`Run`] carries what a reconcile has found so far; its steps live in their own modules:
//! `findings` (conditions and events of what was observed), `gates` (what stops a reconcile before it
//! applies anything), `stages` (what it applies, in upstream's order), `finish` (the decision), and
//! `failure` (deciding again after a failed action), `requeue` (after the status write) and `progress`
//! (a status whose only news is progress waits for its refresh).

mod event_log;
mod failure;
mod findings;
mod finish;
mod gates;
mod progress;
mod requeue;
mod stages;

use crate::api::{Blueprint, StateDiff};
use crate::conditions::Conditions;
use crate::decision::{Action, Decision, Requeue, State};
use crate::diff;
use crate::health::Health;
use crate::model::{DoguPairs, DoguReadings, Installed};
use crate::observation::Observation;
use crate::reading::{Published, Reading};
use crate::references;
use crate::validation::dynamic;

pub use failure::record_failure;
pub use requeue::{StatusWriteResult, after_status_write};

use event_log::EventLog;

/// Decides one reconcile. Total (never panics) and deterministic.
pub fn reconcile(observation: &Observation) -> Decision {
    let reading = observation.blueprint.as_deref().map(|b| Reading::of(b, &observation.blueprint_masks));
    reconcile_read(reading.as_ref(), observation)
}

/// Decides one reconcile whose Blueprint was read already (see [`Reading`]): the shell reads it once,
/// to know what to observe, and decides with the same reading. A reading of another object than the
/// observation's Blueprint is not used (the observation's is read instead).
pub fn reconcile_read(reading: Option<&Reading<'_>>, observation: &Observation) -> Decision {
    reconcile_kept(reading, &DoguReadings::default(), observation)
}

/// Decides one reconcile with what the controller kept from the last: the Blueprint's reading (see
/// [`reconcile_read`]) and the readings of the Dogu CRs (see [`DoguReadings`]), which must be of the
/// observation's very objects to be used (else the observation's are read).
pub fn reconcile_kept(reading: Option<&Reading<'_>>, dogus: &DoguReadings, observation: &Observation) -> Decision {
    let Some(blueprint) = observation.blueprint.as_deref() else {
        return Decision {
            state: State::NoBlueprint,
            status: None,
            actions: Vec::new(),
            events: Vec::new(),
            requeue: Requeue::AwaitChange,
            handled_request: None,
        };
    };
    let own;
    let reading = match reading.filter(|r| r.is_of(blueprint)) {
        Some(reading) => reading,
        None => {
            own = Reading::of(blueprint, &observation.blueprint_masks);
            &own
        }
    };
    let own_dogus;
    let dogus = if dogus.is_of(&observation.dogus) {
        dogus
    } else {
        own_dogus = DoguReadings::of(&observation.dogus, DoguReadings::default());
        &own_dogus
    };
    let mut run = Run::new(observation, blueprint);
    run.handle_request();
    let (state, requeue) = if observation.blueprint_count > 1 {
        // Which one would win is not ours to guess: touch nothing, and say so on every Blueprint.
        run.multiple_blueprints()
    } else {
        run.evaluate(reading, dogus)
    };
    run.finish(state, requeue)
}

/// What one reconcile has found and decided so far.
struct Run<'o> {
    observation: &'o Observation,
    blueprint: &'o Blueprint,
    generation: i64,
    conditions: Conditions,
    /// What the status shows of the effective blueprint (with its size, for the status budget).
    effective_blueprint: Option<Published>,
    state_diff: Option<StateDiff>,
    /// The state diff is not empty (`Completed=False`).
    diff_pending: bool,
    /// The faulty unhealthy dogus and components (not at work), for the Warning of the transition.
    unhealthy_faults: Option<String>,
    events: EventLog,
    actions: Vec<Action>,
    /// What of the status was summarised to fit its size budget (see `status_size`).
    status_note: Option<String>,
    /// The reconcile request this reconcile handles.
    handled_request: Option<String>,
}

impl<'o> Run<'o> {
    fn new(observation: &'o Observation, blueprint: &'o Blueprint) -> Self {
        let generation = blueprint.metadata.generation.unwrap_or(0);
        let stored = blueprint.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
        Run {
            observation,
            blueprint,
            generation,
            conditions: Conditions::new(stored, observation.now.clone(), generation),
            effective_blueprint: None,
            state_diff: None,
            diff_pending: false,
            unhealthy_faults: None,
            events: EventLog::default(),
            actions: Vec::new(),
            status_note: None,
            handled_request: None,
        }
    }

    /// A reconcile asked for by hand and not handled yet: this reconcile handles it, and says so.
    fn handle_request(&mut self) {
        let Some(request) = self.observation.reconcile_request.as_ref().filter(|r| r.is_new()) else { return };
        self.events.log(event_log::Topic::Request, request.handled_event());
        self.handled_request = Some(request.requested_at.clone());
    }

    /// The reconcile of one Blueprint, top to bottom.
    fn evaluate(&mut self, reading: &Reading<'o>, dogus: &DoguReadings) -> (State, Requeue) {
        let observation = self.observation;
        let read = match &reading.result {
            Ok(read) => read,
            Err(invalid) => return self.invalid(invalid.reason, invalid.message.clone()),
        };
        let (effective, flags) = (&read.effective, read.flags);
        self.effective_blueprint = Some(read.published().clone());
        // Nothing is read from a Secret the blueprint may not read, not even to compare it (D53).
        let access = &observation.operator.secret_access;
        if let Some(refused) = references::refused_secrets(effective, &observation.referenced_secrets, access) {
            return self.invalid(crate::conditions::reason::FORBIDDEN_SECRET_REFERENCES, refused.to_string());
        }

        // What is observed: validity, health, the diff, and what blocks applying it.
        let installed = Installed::read(&observation.dogus, dogus, &observation.components, &observation.undecodable);
        let pairs = DoguPairs::pair(effective, &installed);
        let validity =
            dynamic::validate(effective, &observation.descriptors, &observation.operator.provided_dependencies, &pairs);
        self.record_validity(&validity);
        let health = Health::evaluate(&installed, observation, flags);
        self.record_health(&health, flags);
        let (resolved, missing_secrets) = references::resolve(effective, &observation.referenced_secrets);
        let (values, missing_config) = references::resolve_config_refs(effective, &observation.referenced_config_maps);
        let missing_references =
            crate::problem::Problem::join(missing_config.into_iter().chain(missing_secrets).collect());
        let (diff, unreadable) = diff::compute(effective, &pairs, observation, &resolved, &values);
        self.record_diff(&diff, || read.own_size());
        self.record_platform(&diff, effective);
        let blocked = self.record_executable(&diff, effective, flags, missing_references, unreadable);

        // Gates, in order: each may end the reconcile before anything is applied.
        if let Some(end) = gates::validity(&validity) {
            return end;
        }
        if let Some(end) = gates::executable(blocked) {
            return end;
        }
        if let Some(end) = self.stopped(flags) {
            return end;
        }
        // A paused wanted dogu is work left even when the diff is empty: a stored `Completed=True` may
        // be from before the blueprint wanted it (found by the missed-events property: such a dogu
        // stayed paused for ever). A resume alone applies nothing a health check guards, and the paused
        // dogu may be the one that needs its operator to become healthy again: it does not wait.
        if diff.is_empty() && stages::paused_without_change(&diff, &pairs).next().is_some() {
            return self.apply(&diff, effective, &pairs, &health, flags);
        }
        if let Some(end) = self.still_completed(&diff, &pairs) {
            return end;
        }
        if let Some(end) = gates::health(&health) {
            return end;
        }

        // Stages, in upstream's order; a stage that needs a fresh observation after it ends the run.
        self.apply(&diff, effective, &pairs, &health, flags)
    }
}
