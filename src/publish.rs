//! Publishes the decision's events (events.k8s.io/v1 through kube-runtime's recorder) on the Blueprint.
//! Each event with a recorder of its own: kube-runtime's recorder folds events of the same reason into
//! one series (a PATCH of the first, keeping its note), while ours are one per transition already, each
//! with its own note; so events are only ever created (the Role grants `create` on events, no `patch`).

use kube::Resource;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use blueprint_machine::api::Blueprint;
use blueprint_machine::decision;

/// Kubernetes limits an event's note to 1 kB.
const MAX_NOTE_BYTES: usize = 1024;

pub async fn publish(
    client: &kube::Client,
    reporter: &Reporter,
    blueprint: &Blueprint,
    events: &[decision::Event],
) -> usize {
    let reference = blueprint.object_ref(&());
    let mut published = 0;
    for event in events {
        let kube_event = Event {
            type_: match event.type_ {
                decision::EventType::Normal => EventType::Normal,
                decision::EventType::Warning => EventType::Warning,
            },
            reason: event.reason.clone(),
            note: (!event.message.is_empty()).then(|| truncate(&event.message)),
            action: "Reconcile".into(),
            secondary: None,
        };
        let recorder = Recorder::new(client.clone(), reporter.clone());
        match recorder.publish(&kube_event, &reference).await {
            Ok(()) => published += 1,
            // An event is for humans; failing to record one must not fail the reconcile.
            Err(error) => tracing::warn!(reason = %event.reason, %error, "could not publish an event"),
        }
    }
    published
}

fn truncate(message: &str) -> String {
    if message.len() <= MAX_NOTE_BYTES {
        return message.to_owned();
    }
    let mut end = MAX_NOTE_BYTES - 4;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} …", &message[..end])
}
