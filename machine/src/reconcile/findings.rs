//! What a reconcile observed, recorded: each finding sets its condition, and logs an event where the
//! finding changed (a new problem, a health transition, a new diff).

use crate::conditions::{self, Status, reason};
use crate::decision::{Requeue, State};
use crate::diff::Diff;
use crate::events::{self, reason as event};
use crate::forbidden;
use crate::health::{Health, Unhealthy};
use crate::model::{ComponentName, Flags};
use crate::problem::Problem;
use crate::status_size;
use crate::validation::{EffectiveBlueprint, Validity};

use super::Run;
use super::event_log::Topic;

/// `Completed`'s message while the diff is being applied (upstream's words).
pub(super) const APPLYING: &str = "Blueprint is being applied.";

/// Why a blueprint cannot be applied as it stands (`Executable=False`), if it cannot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Blocked {
    No,
    /// Referenced Secrets or keys are missing: they may appear.
    MissingReferences,
    /// Unreadable cluster objects or forbidden actions: a change is needed.
    Otherwise,
    /// A restore is in progress: its end (a change of the Restore) is awaited.
    Restore,
}

impl Run<'_> {
    /// The blueprint is invalid: `Valid=False`, and nothing else is evaluated.
    pub(super) fn invalid(&mut self, why: &str, message: impl Into<String>) -> (State, Requeue) {
        self.conditions.set(conditions::VALID, Status::False, why, message);
        (State::Invalid, Requeue::AwaitChange)
    }

    /// More than one Blueprint in the namespace: none is processed, and each says so.
    pub(super) fn multiple_blueprints(&mut self) -> (State, Requeue) {
        let observation = self.observation;
        let mut names: Vec<&str> = observation.other_blueprints.iter().map(String::as_str).collect();
        names.extend(self.blueprint.metadata.name.as_deref());
        names.sort_unstable();
        let listed =
            if names.len() == observation.blueprint_count { format!(" ({})", names.join(", ")) } else { String::new() };
        self.conditions.set(
            conditions::EXECUTABLE,
            Status::False,
            reason::MULTIPLE_BLUEPRINTS,
            format!(
                "{} Blueprints in namespace {}{listed}: only one Blueprint per namespace is processed, so none is; delete all but one",
                observation.blueprint_count, observation.operator.namespace
            ),
        );
        // Not even the generation completed before is kept applied while no Blueprint is processed.
        self.conditions.set(
            conditions::COMPLETED,
            Status::Unknown,
            reason::NOT_EVALUATED,
            format!(
                "generation {} is not kept applied: more than one Blueprint in the namespace (see Executable)",
                self.generation
            ),
        );
        (State::MultipleBlueprints, Requeue::AwaitChange)
    }

    pub(super) fn record_validity(&mut self, validity: &Validity) {
        match validity {
            Validity::Valid => self.conditions.set(conditions::VALID, Status::True, reason::VALID, ""),
            Validity::Invalid(problem) | Validity::DescriptorsNotFound(problem) => {
                self.conditions.set(conditions::VALID, Status::False, reason::INCONSISTENT, problem.to_string())
            }
            Validity::DescriptorsUnavailable(problem) => {
                self.conditions.set(conditions::VALID, Status::Unknown, reason::CANNOT_VALIDATE, problem.to_string())
            }
        };
    }

    pub(super) fn record_health(&mut self, health: &Health, flags: Flags) {
        match health {
            Health::Healthy => self.conditions.set(
                conditions::ECOSYSTEM_HEALTHY,
                Status::True,
                reason::HEALTHY,
                format!(
                    "dogu health ignored: {}; component health ignored: {}",
                    flags.ignore_dogu_health, flags.ignore_component_health
                ),
            ),
            Health::Unhealthy(unhealthy) => {
                // Faulty objects make it `Unhealthy`; objects being installed, upgraded or restarted
                // alone are the apply in progress (D55).
                let reason = if unhealthy.all_at_work() { reason::APPLY_IN_PROGRESS } else { reason::UNHEALTHY };
                let changed = self.conditions.set(
                    conditions::ECOSYSTEM_HEALTHY,
                    Status::False,
                    reason,
                    format!("ecosystem health:\n{}", unhealthy.summary()),
                );
                self.unhealthy_faults = Some(unhealthy.faulty_summary());
                changed
            }
            Health::Unknown(problem) => self.conditions.set(
                conditions::ECOSYSTEM_HEALTHY,
                Status::Unknown,
                reason::CANNOT_CHECK_HEALTH,
                problem.to_string(),
            ),
        };
    }

    /// Objects this reconcile creates report no health yet, so the next health check will find them
    /// unhealthy and at work (upstream's first reconcile says so after its health check that follows
    /// the apply). Said now, after a clean health check, so that the status written with the apply is
    /// true after it, and the next reconcile has nothing to add but progress (D60). A side whose health
    /// is ignored stays ignored.
    pub(super) fn record_created(
        &mut self,
        health: &Health,
        flags: Flags,
        dogus: Vec<String>,
        components: Vec<String>,
    ) {
        if *health != Health::Healthy {
            return;
        }
        let dogus = if flags.ignore_dogu_health { Vec::new() } else { dogus };
        let components = if flags.ignore_component_health { Vec::new() } else { components };
        if dogus.is_empty() && components.is_empty() {
            return;
        }
        self.record_health(&Health::Unhealthy(Unhealthy::just_created(dogus, components)), flags);
    }

    /// The state diff, published within the status' size budget; an event when it changed.
    /// (`own_size`: see `status_size`.)
    pub(super) fn record_diff(&mut self, diff: &Diff<'_>, own_size: impl FnOnce() -> usize) {
        let fitted = status_size::fit(own_size, self.effective_blueprint.take(), diff.to_api());
        self.effective_blueprint = fitted.effective_blueprint;
        self.status_note = fitted.note;
        let state_diff = fitted.state_diff;
        if !diff.is_empty() {
            // Said more precisely at the end when a gate stops the apply (see `finish`).
            self.conditions.set(conditions::COMPLETED, Status::False, reason::STATE_DIFF_HAS_CHANGES, APPLYING);
            self.diff_pending = true;
        }
        let stored = self.blueprint.status.as_deref().and_then(|s| s.state_diff.as_ref());
        let changed = match stored {
            Some(stored) => stored != &state_diff,
            None => !state_diff.is_empty(),
        };
        if changed {
            if !diff.dogus.is_empty() || diff.has_config_changes() {
                let message = events::state_diff_message(diff);
                self.events.log(Topic::Diff, events::normal(event::STATE_DIFF_DETERMINED, message));
            }
            if !diff.components.is_empty() {
                let message = events::component_diff_message(diff);
                self.events.log(Topic::Diff, events::normal(event::STATE_DIFF_COMPONENT_DETERMINED, message));
            }
        }
        self.state_diff = Some(state_diff);
    }

    /// On a platform with the gateway, dogus' reverse-proxy settings are not applied (D49): said once
    /// per generation that has any, in a Warning event naming the dogus.
    pub(super) fn record_platform(&mut self, diff: &Diff<'_>, effective: &EffectiveBlueprint<'_>) {
        let new_generation =
            self.blueprint.status.as_deref().and_then(|s| s.observed_generation) != Some(self.generation);
        if !diff.gateway || !new_generation {
            return;
        }
        let ignored: Vec<&str> = effective
            .dogus
            .iter()
            .filter(|d| !d.absent && !d.reverse_proxy.is_empty())
            .map(|d| d.name.simple.as_str())
            .collect();
        if ignored.is_empty() {
            return;
        }
        let message = format!(
            "reverseProxy of {} is not applied: the platform routes through the gateway ({}), which does not \
             read nginx-ingress settings; existing annotations are left as they are",
            ignored.join(", "),
            crate::naming::GATEWAY_COMPONENT
        );
        self.events.log(Topic::Diff, events::warning(event::REVERSE_PROXY_IGNORED, message));
    }

    /// Whether the diff can be applied: references resolved, every object it concerns readable, no
    /// forbidden action.
    pub(super) fn record_executable(
        &mut self,
        diff: &Diff<'_>,
        effective: &EffectiveBlueprint<'_>,
        flags: Flags,
        missing_references: Option<Problem>,
        unreadable: Vec<Problem>,
    ) -> Blocked {
        let operator = &self.observation.operator;
        let own_component = own_component_name(&operator.component);
        let restoring: Vec<&str> =
            self.observation.restores.iter().filter(|r| r.in_progress()).map(|r| r.name.as_str()).collect();
        let (why, problem, blocked) = if !restoring.is_empty() {
            // Checked first: whatever else the diff says, nothing is applied under a restore (upstream
            // v3 pauses the same way, but says so only in its log).
            let problem = Problem::new(format!(
                "a restore is in progress ({}): nothing is applied until it has ended",
                restoring.join(", ")
            ));
            (reason::RESTORE_IN_PROGRESS, problem, Blocked::Restore)
        } else if let Some(problem) = missing_references {
            (reason::MISSING_CONFIG_REFERENCES, problem, Blocked::MissingReferences)
        } else if let Some(problem) = Problem::join(unreadable) {
            (reason::INVALID_CLUSTER_STATE, problem, Blocked::Otherwise)
        } else if let Some(problem) = forbidden::check(diff, effective, flags, operator, &own_component) {
            (reason::FORBIDDEN_OPERATIONS, problem, Blocked::Otherwise)
        } else {
            self.conditions.set(conditions::EXECUTABLE, Status::True, reason::EXECUTABLE, "");
            return Blocked::No;
        };
        self.conditions.set(conditions::EXECUTABLE, Status::False, why, problem.to_string());
        blocked
    }
}

/// The simple name of the operator's own component (`k8s-blueprint-operator`).
pub(super) fn own_component_name(qualified: &str) -> String {
    ComponentName::parse(qualified).map(|n| n.simple).unwrap_or_else(|_| qualified.to_owned())
}
