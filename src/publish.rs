//! Publishes the decision's events (events.k8s.io/v1) on the Blueprint. Each event is created, never
//! patched: kube-runtime's recorder folds events of the same reason into one series (a PATCH of the
//! first, keeping its note), while ours are one per transition already, each with its own note (the
//! Role grants `create` on events, no `patch`). Created here rather than through that recorder because
//! each carries the generation it is about ([`GENERATION_LABEL`]): `status` shows the current
//! generation's events only, not a `Completed` of the one before.

use k8s_openapi::api::events::v1::Event as KubeEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use kube::runtime::events::Reporter;
use kube::{Resource, ResourceExt};

use blueprint_machine::api::Blueprint;
use blueprint_machine::decision;

/// The label of every event: the `metadata.generation` of the Blueprint the decision was made for
/// (`kubectl get events -l blueprint-operator.k8s.cloudogu.com/generation=4`).
pub const GENERATION_LABEL: &str = "blueprint-operator.k8s.cloudogu.com/generation";

/// Kubernetes limits an event's note to 1 kB.
const MAX_NOTE_BYTES: usize = 1024;

pub async fn publish(
    client: &kube::Client,
    reporter: &Reporter,
    blueprint: &Blueprint,
    events: &[decision::Event],
) -> usize {
    let namespace = blueprint.namespace().unwrap_or_else(|| "default".into());
    let api = Api::<KubeEvent>::namespaced(client.clone(), &namespace);
    let mut published = 0;
    for (index, event) in events.iter().enumerate() {
        let event = kube_event(reporter, blueprint, event, Timestamp::now(), index);
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => published += 1,
            // An event is for humans; failing to record one must not fail the reconcile.
            Err(error) => tracing::warn!(reason = ?event.reason, %error, "could not publish an event"),
        }
    }
    published
}

/// The events.k8s.io object of one event, as kube-runtime's recorder makes it (the name: the
/// Blueprint's, a dot and the time in hexadecimal nanoseconds, here plus the event's index, so that
/// the events of one decision never share a name), with the generation label.
fn kube_event(
    reporter: &Reporter,
    blueprint: &Blueprint,
    event: &decision::Event,
    now: Timestamp,
    index: usize,
) -> KubeEvent {
    let reference = blueprint.object_ref(&());
    let generation = blueprint.metadata.generation.unwrap_or_default();
    let nanos = now.as_nanosecond() + index as i128;
    KubeEvent {
        metadata: ObjectMeta {
            name: Some(format!("{}.{nanos:x}", reference.name.as_deref().unwrap_or(&reporter.controller))),
            namespace: reference.namespace.clone(),
            labels: Some([(GENERATION_LABEL.to_owned(), generation.to_string())].into()),
            ..Default::default()
        },
        action: Some("Reconcile".into()),
        reason: Some(event.reason.clone()),
        note: (!event.message.is_empty()).then(|| truncate(&event.message)),
        type_: Some(
            match event.type_ {
                decision::EventType::Normal => "Normal",
                decision::EventType::Warning => "Warning",
            }
            .into(),
        ),
        event_time: Some(MicroTime(now)),
        regarding: Some(reference),
        reporting_controller: Some(reporter.controller.clone()),
        reporting_instance: Some(reporter.instance.clone().unwrap_or_else(|| reporter.controller.clone())),
        ..Default::default()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_names_its_blueprint_and_generation() {
        let mut blueprint = blueprint_machine::fixtures::blueprint("{displayName: x}");
        blueprint.metadata.generation = Some(4);
        let reporter = Reporter { controller: "k8s-blueprint-operator".into(), instance: Some("pod-1".into()) };
        let event = decision::Event {
            type_: decision::EventType::Warning,
            reason: "BlueprintSpecInvalid".into(),
            message: "x".repeat(2000),
            stage: None,
        };
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let first = kube_event(&reporter, &blueprint, &event, now, 0);
        let second = kube_event(&reporter, &blueprint, &event, now, 1);
        assert_ne!(first.metadata.name, second.metadata.name, "one decision's events never share a name");
        assert_eq!(first.metadata.labels.unwrap()[GENERATION_LABEL], "4");
        assert_eq!(first.regarding.unwrap().kind.as_deref(), Some("Blueprint"));
        assert_eq!(first.type_.as_deref(), Some("Warning"));
        assert_eq!(first.reporting_instance.as_deref(), Some("pod-1"));
        assert!(first.note.unwrap().len() <= MAX_NOTE_BYTES);
    }
}
