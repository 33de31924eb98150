//! Step 5, publish the decision's events, only after its status write succeeded (a decision made on a
//! stale Blueprint publishes nothing), with a recorder of its own: kube-runtime's recorder folds
//! events of the same reason into one series and keeps the first note, while ours are one per
//! transition already, each with its own note.

use kube::runtime::events::Recorder;

use blueprint_machine::api::Blueprint;
use blueprint_machine::decision::Event;

use super::Context;

pub(super) async fn publish(context: &Context, blueprint: &Blueprint, events: &[Event]) -> usize {
    let recorder = Recorder::new(context.client.clone(), context.reporter.clone());
    let published = crate::publish::publish(&recorder, blueprint, events).await;
    context.metrics.events.inc_by(published as u64);
    published
}
