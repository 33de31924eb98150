//! The six Blueprint conditions and the one place that changes them, with Kubernetes'
//! `SetStatusCondition` semantics: `lastTransitionTime` moves only when the status changes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

pub const VALID: &str = "Valid";
pub const EXECUTABLE: &str = "Executable";
pub const ECOSYSTEM_HEALTHY: &str = "EcosystemHealthy";
pub const SELF_UPGRADE_COMPLETED: &str = "SelfUpgradeCompleted";
pub const COMPLETED: &str = "Completed";
pub const LAST_APPLY_SUCCEEDED: &str = "LastApplySucceeded";

/// In the order they are added to a new Blueprint's status.
pub const ALL: [&str; 6] =
    [VALID, EXECUTABLE, ECOSYSTEM_HEALTHY, SELF_UPGRADE_COMPLETED, COMPLETED, LAST_APPLY_SUCCEEDED];

/// Condition reasons (CamelCase, part of the API).
pub mod reason {
    pub const INITIAL_SYNC_PENDING: &str = "InitialSyncPending";
    pub const VALID: &str = "Valid";
    pub const INVALID: &str = "Invalid";
    pub const INCONSISTENT: &str = "Inconsistent";
    /// `Valid=False`: `spec.blueprintMask.crRef` names a `BlueprintMask` that does not exist (upstream
    /// only logs it and retries every 10 s; the mask's creation triggers the next reconcile here).
    pub const BLUEPRINT_MASK_NOT_FOUND: &str = "BlueprintMaskNotFound";
    /// Ours: `Valid=False`, the blueprint references Secrets it may not read (D53).
    pub const FORBIDDEN_SECRET_REFERENCES: &str = "ForbiddenSecretReferences";
    /// Ours: the dogu descriptors needed for validation could not be loaded.
    pub const CANNOT_VALIDATE: &str = "CannotValidate";
    pub const EXECUTABLE: &str = "Executable";
    pub const FORBIDDEN_OPERATIONS: &str = "ForbiddenOperations";
    pub const MISSING_CONFIG_REFERENCES: &str = "MissingConfigReferences";
    pub const RESTORE_IN_PROGRESS: &str = "RestoreInProgress";
    /// Ours: an object the blueprint concerns exists but cannot be read.
    pub const INVALID_CLUSTER_STATE: &str = "InvalidClusterState";
    /// Ours: more than one Blueprint in the namespace, so none is processed.
    pub const MULTIPLE_BLUEPRINTS: &str = "MultipleBlueprints";
    pub const HEALTHY: &str = "Healthy";
    pub const UNHEALTHY: &str = "Unhealthy";
    /// Ours: `EcosystemHealthy=False` while every unhealthy dogu and component is being installed,
    /// upgraded or restarted: the apply in progress, not a fault (D55).
    pub const APPLY_IN_PROGRESS: &str = "ApplyInProgress";
    pub const CANNOT_CHECK_HEALTH: &str = "CannotCheckHealth";
    pub const AWAIT_SELF_UPGRADE: &str = "AwaitSelfUpgrade";
    pub const COMPLETED: &str = "Completed";
    pub const STATE_DIFF_HAS_CHANGES: &str = "StateDiffHasChanges";
    /// Ours: this generation did not get as far as the completion check (see the message).
    pub const NOT_EVALUATED: &str = "NotEvaluated";
    pub const APPLY_SUCCEEDED: &str = "ApplySucceeded";
    pub const CONFIG_APPLY_FAILURE: &str = "ConfigApplyFailure";
    pub const COMPONENT_APPLY_FAILURE: &str = "ComponentApplyFailure";
    pub const DOGU_APPLY_FAILURE: &str = "DoguApplyFailure";
}

pub const INITIAL_MESSAGE: &str = "controller has not determined this condition yet";

/// Longest message the CRD accepts.
const MAX_MESSAGE_BYTES: usize = 32768;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    True,
    False,
    Unknown,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::True => "True",
            Status::False => "False",
            Status::Unknown => "Unknown",
        }
    }
}

/// The conditions of one reconcile: starts from the stored ones and records every change.
#[derive(Clone, Debug)]
pub struct Conditions {
    stored: Vec<Condition>,
    current: Vec<Condition>,
    now: Time,
    generation: i64,
}

impl Conditions {
    /// The stored conditions, with every missing one of the six added as `Unknown/InitialSyncPending`.
    pub fn new(stored: &[Condition], now: Time, generation: i64) -> Self {
        let mut conditions = Conditions { stored: stored.to_vec(), current: stored.to_vec(), now, generation };
        for type_ in ALL {
            if conditions.get(type_).is_none() {
                conditions.set(type_, Status::Unknown, reason::INITIAL_SYNC_PENDING, INITIAL_MESSAGE);
            }
        }
        conditions
    }

    /// Continues from conditions already decided (`current`), still comparing against `stored`.
    pub fn resume(stored: &[Condition], current: &[Condition], now: Time, generation: i64) -> Self {
        Conditions { stored: stored.to_vec(), current: current.to_vec(), now, generation }
    }

    pub fn get(&self, type_: &str) -> Option<&Condition> {
        self.current.iter().find(|c| c.type_ == type_)
    }

    /// The condition as it was stored before this reconcile.
    pub fn stored(&self, type_: &str) -> Option<&Condition> {
        self.stored.iter().find(|c| c.type_ == type_)
    }

    pub fn is(&self, type_: &str, status: Status) -> bool {
        self.get(type_).is_some_and(|c| c.status == status.as_str())
    }

    /// Sets a condition for the current generation. Returns whether anything but the generation changed.
    pub fn set(&mut self, type_: &str, status: Status, reason: &str, message: impl Into<String>) -> bool {
        let message = truncate(message.into());
        let generation = Some(self.generation);
        // Set twice in one reconcile and back to the stored status: no transition happened.
        let stored_transition = self
            .stored
            .iter()
            .find(|c| c.type_ == type_ && c.status == status.as_str())
            .map(|c| c.last_transition_time.clone());
        match self.current.iter_mut().find(|c| c.type_ == type_) {
            None => {
                self.current.push(Condition {
                    type_: type_.to_owned(),
                    status: status.as_str().to_owned(),
                    reason: reason.to_owned(),
                    message,
                    last_transition_time: self.now.clone(),
                    observed_generation: generation,
                });
                true
            }
            Some(condition) => {
                let mut changed = false;
                if condition.status != status.as_str() {
                    condition.status = status.as_str().to_owned();
                    condition.last_transition_time = stored_transition.unwrap_or_else(|| self.now.clone());
                    changed = true;
                }
                if condition.reason != reason {
                    condition.reason = reason.to_owned();
                    changed = true;
                }
                // Messages are often empty (see `text`).
                if !crate::text::same(&condition.message, &message) {
                    condition.message = message;
                    changed = true;
                }
                condition.observed_generation = generation;
                changed
            }
        }
    }

    /// Whether the condition's status, reason or message differs from the stored one.
    pub fn changed(&self, type_: &str) -> bool {
        match (self.stored(type_), self.get(type_)) {
            (Some(before), Some(after)) => {
                before.status != after.status
                    || before.reason != after.reason
                    || !crate::text::same(&before.message, &after.message)
            }
            (None, Some(_)) => true,
            _ => false,
        }
    }

    /// Whether the condition is now `status` with `reason`, and was not before this reconcile.
    pub fn became(&self, type_: &str, status: Status, reason: &str) -> bool {
        let is = |c: Option<&Condition>| c.is_some_and(|c| c.status == status.as_str() && c.reason == reason);
        is(self.get(type_)) && !is(self.stored(type_))
    }

    /// Whether the condition was `status` with `reason` before this reconcile.
    pub fn was(&self, type_: &str, status: Status, reason: &str) -> bool {
        self.stored(type_).is_some_and(|c| c.status == status.as_str() && c.reason == reason)
    }

    /// Whether the condition's status differs from the stored one (a transition in the Kubernetes sense).
    pub fn transitioned(&self, type_: &str) -> bool {
        self.stored(type_).map(|c| &c.status) != self.get(type_).map(|c| &c.status)
    }

    pub fn into_vec(self) -> Vec<Condition> {
        self.current
    }
}

fn truncate(mut message: String) -> String {
    if message.len() > MAX_MESSAGE_BYTES {
        const MARK: &str = " …(truncated)";
        let mut end = MAX_MESSAGE_BYTES - MARK.len();
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push_str(MARK);
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn at(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).unwrap())
    }

    #[test]
    fn initialises_missing_conditions_in_order() {
        let c = Conditions::new(&[], at(1), 3);
        let list = c.into_vec();
        assert_eq!(list.iter().map(|c| c.type_.as_str()).collect::<Vec<_>>(), ALL);
        assert!(
            list.iter()
                .all(|c| c.status == "Unknown" && c.reason == "InitialSyncPending" && c.observed_generation == Some(3))
        );
    }

    #[test]
    fn transition_time_moves_only_on_status_changes() {
        let mut c = Conditions::new(&[], at(1), 1);
        c.set(VALID, Status::False, reason::INVALID, "a");
        let first = c.get(VALID).unwrap().last_transition_time.clone();
        assert_eq!(first, at(1));
        let stored = c.into_vec();

        let mut c = Conditions::new(&stored, at(5), 2);
        assert!(c.set(VALID, Status::False, reason::INCONSISTENT, "b"), "reason and message changes count");
        assert_eq!(c.get(VALID).unwrap().last_transition_time, at(1));
        assert!(!c.transitioned(VALID));
        assert!(c.changed(VALID));
        assert!(c.set(VALID, Status::True, reason::VALID, ""));
        assert_eq!(c.get(VALID).unwrap().last_transition_time, at(5));
        assert!(c.transitioned(VALID));
        assert_eq!(c.get(VALID).unwrap().observed_generation, Some(2));
        assert!(!c.set(VALID, Status::True, reason::VALID, ""), "setting the same again is no change");
    }

    #[test]
    fn long_messages_fit_the_crd_limit() {
        let mut c = Conditions::new(&[], at(1), 1);
        c.set(VALID, Status::False, reason::INVALID, "ä".repeat(40_000));
        let message = &c.get(VALID).unwrap().message;
        assert!(message.len() <= MAX_MESSAGE_BYTES);
        assert!(message.ends_with("(truncated)"));
    }
}
