//! The decision: the conditions settled (what was not evaluated says so), their transitions logged as
//! events, and the complete status.

use std::sync::Arc;

use crate::api::BlueprintStatus;
use crate::conditions::{self, Conditions, Status, reason};
use crate::decision::{Decision, Requeue, State};
use crate::events::{self, reason as event};

use super::event_log::Topic;
use super::{Run, progress};

impl Run<'_> {
    pub(super) fn finish(mut self, state: State, requeue: Requeue) -> Decision {
        self.completion_blocked(state);
        self.completion_not_evaluated(state);
        self.note_summarised_status();
        self.log_transitions();
        let mut status = Arc::new(BlueprintStatus {
            conditions: self.conditions.into_vec(),
            effective_blueprint: self.effective_blueprint.map(|published| published.manifest),
            state_diff: self.state_diff,
            observed_generation: Some(self.generation),
        });
        let events = self.events.into_events();
        let mut requeue = requeue;
        // A status whose only news is progress waits for its refresh (D58); nothing else does.
        let quiet = self.actions.is_empty() && events.is_empty() && self.handled_request.is_none();
        let stored = self.blueprint.status.as_ref();
        let written = progress::own_status_write(&self.blueprint.metadata);
        if let (true, Some(stored), Some(written)) = (quiet, stored, written)
            && let Some(due) = progress::hold_back(stored, &status, written, &self.observation.now)
        {
            status = Arc::clone(stored);
            requeue = progress::no_later_than(requeue, due);
        }
        Decision {
            state,
            status: Some(status),
            actions: self.actions,
            events,
            requeue,
            handled_request: self.handled_request,
        }
    }

    /// A diff that a gate keeps from being applied: `Completed` says that it is blocked (or stopped,
    /// or paused) and why, instead of "being applied" (found: a forbidden downgrade read
    /// `Completed=False (StateDiffHasChanges): Blueprint is being applied.` for as long as it stood).
    fn completion_blocked(&mut self, state: State) {
        if !self.diff_pending {
            return;
        }
        let because = |conditions: &Conditions, type_: &str| events::one_line(&message(conditions, type_));
        let text = match state {
            State::NotExecutable => {
                format!("Blueprint is blocked: {} (see Executable)", because(&self.conditions, conditions::EXECUTABLE))
            }
            State::Invalid => {
                format!(
                    "Blueprint is blocked: it is invalid: {} (see Valid)",
                    because(&self.conditions, conditions::VALID)
                )
            }
            State::ValidationPending => format!(
                "Blueprint is not applied yet: it cannot be validated: {} (see Valid)",
                because(&self.conditions, conditions::VALID)
            ),
            State::Stopped => "Blueprint is stopped (spec.stopped): its changes are not applied until spec.stopped is \
                               removed"
                .to_owned(),
            State::RestoreInProgress => {
                format!("Blueprint is paused: {} (see Executable)", because(&self.conditions, conditions::EXECUTABLE))
            }
            _ => return,
        };
        self.conditions.set(conditions::COMPLETED, Status::False, reason::STATE_DIFF_HAS_CHANGES, text);
    }

    /// `Completed` must not claim anything for a generation that did not get as far as the completion
    /// check (the printer column showed `True` while a newer generation was not executable).
    fn completion_not_evaluated(&mut self, state: State) {
        let fresh =
            self.conditions.get(conditions::COMPLETED).is_some_and(|c| c.observed_generation == Some(self.generation));
        if fresh {
            return;
        }
        let why = match state {
            State::Invalid => "the blueprint is invalid (see Valid)",
            State::ValidationPending => "the blueprint cannot be validated yet (see Valid)",
            State::NotExecutable => "the blueprint cannot be applied (see Executable)",
            State::MultipleBlueprints => "more than one Blueprint in the namespace (see Executable)",
            State::Stopped => "the blueprint is stopped (spec.stopped)",
            State::RestoreInProgress => "a restore is in progress (see Executable)",
            State::AwaitingHealth => "the ecosystem is not healthy (see EcosystemHealthy)",
            State::SelfUpgrading => "the operator is upgrading itself (see SelfUpgradeCompleted)",
            _ => "not evaluated",
        };
        self.conditions.set(
            conditions::COMPLETED,
            Status::Unknown,
            reason::NOT_EVALUATED,
            format!("generation {} is not applied: {why}", self.generation),
        );
    }

    /// A status summarised to fit its size budget says so in `Completed`.
    fn note_summarised_status(&mut self) {
        let Some(note) = self.status_note.take() else { return };
        let Some(completed) = self.conditions.get(conditions::COMPLETED).cloned() else { return };
        let status = match completed.status.as_str() {
            "True" => Status::True,
            "False" => Status::False,
            _ => Status::Unknown,
        };
        let message = if completed.message.is_empty() { note } else { format!("{} {note}", completed.message) };
        self.conditions.set(conditions::COMPLETED, status, &completed.reason, message);
    }

    /// Two kinds of events come from conditions: problems (an invalid or not executable blueprint) are
    /// reported whenever the problem changes, so that a new error is seen; states (healthy,
    /// self-upgrade, completed) only when the condition's status transitions.
    fn log_transitions(&mut self) {
        let c = &self.conditions;
        let mut logged = Vec::new();
        if c.changed(conditions::VALID) && c.is(conditions::VALID, Status::False) {
            logged
                .push((Topic::Validity, events::warning(event::BLUEPRINT_SPEC_INVALID, message(c, conditions::VALID))));
        }
        // Healthy again after a fault (or at the first check); not after an apply in progress, whose
        // unhealthiness no event announced (D55).
        if c.transitioned(conditions::ECOSYSTEM_HEALTHY)
            && c.is(conditions::ECOSYSTEM_HEALTHY, Status::True)
            && !c.was(conditions::ECOSYSTEM_HEALTHY, Status::False, reason::APPLY_IN_PROGRESS)
        {
            let message = message(c, conditions::ECOSYSTEM_HEALTHY);
            logged.push((Topic::Health, events::normal(event::ECOSYSTEM_HEALTHY, message)));
        }
        // A fault: an unhealthy object that is not being installed, upgraded or restarted. Reported
        // when it appears, also while the ecosystem was unhealthy already from an apply in progress.
        if c.became(conditions::ECOSYSTEM_HEALTHY, Status::False, reason::UNHEALTHY)
            && let Some(faults) = &self.unhealthy_faults
        {
            let message =
                format!("Ecosystem became unhealthy (up-to-date list is in the EcosystemHealthy condition):\n{faults}");
            logged.push((Topic::Health, events::warning(event::ECOSYSTEM_UNHEALTHY, message)));
        }
        let restoring = c.get(conditions::EXECUTABLE).is_some_and(|e| e.reason == reason::RESTORE_IN_PROGRESS);
        if c.changed(conditions::EXECUTABLE) && c.is(conditions::EXECUTABLE, Status::False) && restoring {
            // Not a fault: the platform is being restored, and this operator waits for it.
            logged.push((
                Topic::Executable,
                events::normal(event::RESTORE_IN_PROGRESS, message(c, conditions::EXECUTABLE)),
            ));
        } else if c.changed(conditions::EXECUTABLE) && c.is(conditions::EXECUTABLE, Status::False) {
            let reason = match c.get(conditions::EXECUTABLE).map(|c| c.reason.as_str()) {
                Some(reason::MISSING_CONFIG_REFERENCES) => event::MISSING_CONFIG_REFERENCES,
                Some(reason::INVALID_CLUSTER_STATE) => event::INVALID_CLUSTER_STATE,
                Some(reason::MULTIPLE_BLUEPRINTS) => event::MULTIPLE_BLUEPRINTS,
                _ => event::BLUEPRINT_SPEC_INVALID,
            };
            logged.push((Topic::Executable, events::warning(reason, message(c, conditions::EXECUTABLE))));
        }
        if c.transitioned(conditions::SELF_UPGRADE_COMPLETED) {
            if c.is(conditions::SELF_UPGRADE_COMPLETED, Status::False) {
                let event = events::normal(event::AWAIT_SELF_UPGRADE, events::AWAIT_SELF_UPGRADE_MESSAGE);
                logged.push((Topic::SelfUpgrade, event));
            } else if c.is(conditions::SELF_UPGRADE_COMPLETED, Status::True) {
                let event = events::normal(event::SELF_UPGRADE_COMPLETED, events::SELF_UPGRADE_COMPLETED_MESSAGE);
                logged.push((Topic::SelfUpgrade, event));
            }
        }
        if c.transitioned(conditions::COMPLETED) && c.is(conditions::COMPLETED, Status::True) {
            logged.push((Topic::Completed, events::normal(event::COMPLETED, events::COMPLETED_MESSAGE)));
        }
        for (topic, event) in logged {
            self.events.log(topic, event);
        }
    }
}

fn message(conditions: &Conditions, type_: &str) -> String {
    conditions.get(type_).map(|c| c.message.clone()).unwrap_or_default()
}
