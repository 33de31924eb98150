//! Step 6, requeue: the machine decided when to look again; the shell turns "with backoff" into a
//! per-Blueprint delay (and forgets the backoff once a reconcile needs none).

use std::time::Duration;

use blueprint_machine::Requeue;

use super::Context;

/// The delay before the next reconcile of `name`; `None`: when something watched changes.
pub(super) fn delay(context: &Context, name: &str, requeue: &Requeue) -> Option<Duration> {
    let delay = match requeue {
        Requeue::AwaitChange => {
            context.backoff.reset(name);
            None
        }
        Requeue::After { after, .. } => {
            context.backoff.reset(name);
            Some(*after)
        }
        Requeue::Backoff { .. } => Some(context.backoff.next(name)),
    };
    context.metrics.objects_in_backoff.set(context.backoff.len() as i64);
    delay
}
