//! Step 5, publish the decision's events, only after its status write succeeded (a decision made on a
//! stale Blueprint publishes nothing).

use blueprint_machine::api::Blueprint;
use blueprint_machine::decision::Event;

use super::Context;

pub(super) async fn publish(context: &Context, blueprint: &Blueprint, events: &[Event]) -> usize {
    let published = crate::publish::publish(&context.client, &context.reporter, blueprint, events).await;
    context.metrics.events.inc_by(published as u64);
    published
}
