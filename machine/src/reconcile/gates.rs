//! The gates a reconcile passes before it applies anything, in order: the blueprint is valid, it can
//! be executed, it is not stopped, it is not completed already, and the ecosystem is healthy. A gate
//! that stops the reconcile says in which state, and when to look again.

use crate::conditions::{self, Status, reason};
use crate::decision::{Requeue, State};
use crate::diff::Diff;
use crate::events::{self, reason as event};
use crate::health::Health;
use crate::model::{DoguPairs, Flags};
use crate::up_to_date;
use crate::validation::Validity;

use super::Run;
use super::event_log::Topic;
use super::findings::Blocked;

pub(super) type End = (State, Requeue);

pub(super) fn validity(validity: &Validity) -> Option<End> {
    match validity {
        Validity::Valid => None,
        Validity::Invalid(_) => Some((State::Invalid, Requeue::AwaitChange)),
        Validity::DescriptorsNotFound(_) => Some((
            State::ValidationPending,
            Requeue::after(10, "a wanted dogu version is unknown to the dogu registry"),
        )),
        Validity::DescriptorsUnavailable(_) => {
            Some((State::ValidationPending, Requeue::Backoff { reason: "dogu descriptors could not be loaded".into() }))
        }
    }
}

pub(super) fn executable(blocked: Blocked) -> Option<End> {
    match blocked {
        Blocked::No => None,
        Blocked::MissingReferences => {
            Some((State::NotExecutable, Requeue::after(10, "referenced Secrets or keys are missing")))
        }
        Blocked::Otherwise => Some((State::NotExecutable, Requeue::AwaitChange)),
        Blocked::Restore => Some((State::RestoreInProgress, Requeue::AwaitChange)),
    }
}

pub(super) fn health(health: &Health) -> Option<End> {
    match health {
        Health::Healthy => None,
        Health::Unhealthy(_) => Some((State::AwaitingHealth, Requeue::after(10, "the ecosystem is not healthy"))),
        Health::Unknown(_) => {
            Some((State::AwaitingHealth, Requeue::Backoff { reason: "ecosystem health cannot be determined".into() }))
        }
    }
}

impl Run<'_> {
    /// `spec.stopped`: everything is computed and shown, nothing applied.
    pub(super) fn stopped(&mut self, flags: Flags) -> Option<End> {
        if !flags.stopped {
            return None;
        }
        if self.blueprint.status.as_deref().and_then(|s| s.observed_generation) != Some(self.generation) {
            self.events.log(Topic::Stopped, events::normal(event::BLUEPRINT_STOPPED, events::STOPPED_MESSAGE));
        }
        Some((State::Stopped, Requeue::AwaitChange))
    }

    /// A completed blueprint stays completed while nothing differs, whatever the health says (a dogu
    /// that flaps after completion does not reopen it; a paused wanted dogu's resume comes before
    /// this). But "nothing differs" compares Dogu CR specs, and a CR recreated by a reconcile that
    /// crashed before its status write has the wanted spec and nothing installed yet: only a
    /// blueprint whose dogus all run their CR's version keeps it.
    pub(super) fn still_completed(&mut self, diff: &Diff<'_>, pairs: &DoguPairs<'_>) -> Option<End> {
        let was_completed =
            self.conditions.stored(conditions::COMPLETED).is_some_and(|c| c.status == Status::True.as_str());
        if !diff.is_empty() || !was_completed {
            return None;
        }
        if up_to_date::all_installed(pairs) {
            self.conditions.set(conditions::COMPLETED, Status::True, reason::COMPLETED, "");
            return Some((State::Completed, Requeue::AwaitChange));
        }
        let stale = up_to_date::stale_dogus(pairs, self.observation);
        self.conditions.set(conditions::COMPLETED, Status::False, reason::STATE_DIFF_HAS_CHANGES, waiting_for(&stale));
        None
    }
}

pub(super) fn waiting_for(stale: &[String]) -> String {
    format!(
        "Blueprint is being applied. Waiting for dogus to run the wanted version and configuration: {}",
        stale.join(", ")
    )
}
