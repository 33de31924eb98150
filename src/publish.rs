//! Publishes the decision's events (events.k8s.io/v1 through kube-runtime's recorder) on the Blueprint.

use kube::Resource;
use kube::runtime::events::{Event, EventType, Recorder};

use blueprint_machine::api::Blueprint;
use blueprint_machine::decision;

/// Kubernetes limits an event's note to 1 kB.
const MAX_NOTE_BYTES: usize = 1024;

pub async fn publish(recorder: &Recorder, blueprint: &Blueprint, events: &[decision::Event]) -> usize {
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
