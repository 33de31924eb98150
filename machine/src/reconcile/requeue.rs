//! When to look again, after the shell executed a decision. Every rule about the next reconcile is
//! here, so that replay and the property tests see the same ones the controller follows; the shell
//! only turns `Backoff` into a per-Blueprint delay.

use crate::decision::{Decision, Requeue};

/// How writing the decided status went, as far as the next reconcile is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusWriteResult {
    /// The stored status is the decided one: nothing was written.
    Unchanged,
    Written,
    /// The Blueprint changed since it was observed (409): nothing was written.
    Conflict,
    /// The write failed otherwise (5xx, timeout, connection).
    Failed,
}

/// The requeue of `decision` (the one whose status was written: after a failed action, what
/// `record_failure` decided) once its status write ended as `write`.
pub fn after_status_write(decision: &Decision, write: StatusWriteResult) -> Requeue {
    match write {
        // The decision was made on a stale Blueprint: decide again on the fresh one, as for a conflict
        // while applying.
        StatusWriteResult::Conflict => Requeue::after(1, "the Blueprint changed since it was observed"),
        StatusWriteResult::Failed => Requeue::Backoff { reason: "the status could not be written".into() },
        StatusWriteResult::Unchanged | StatusWriteResult::Written => decision.requeue.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::State;

    #[test]
    fn a_conflicting_status_write_is_decided_again_after_a_second() {
        let decision = Decision {
            state: State::Completed,
            status: None,
            actions: vec![],
            events: vec![],
            requeue: Requeue::AwaitChange,
            handled_request: None,
        };
        assert_eq!(after_status_write(&decision, StatusWriteResult::Written), Requeue::AwaitChange);
        assert_eq!(after_status_write(&decision, StatusWriteResult::Unchanged), Requeue::AwaitChange);
        assert!(matches!(
            after_status_write(&decision, StatusWriteResult::Conflict),
            Requeue::After { after, .. } if after.as_secs() == 1
        ));
        assert!(matches!(after_status_write(&decision, StatusWriteResult::Failed), Requeue::Backoff { .. }));
    }
}
