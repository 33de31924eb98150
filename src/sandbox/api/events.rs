//! The core/v1 view of events: every write of an events.k8s.io/v1 Event (what the operator writes)
//! also records, at the same resource version, the core/v1 Event that `kubectl describe` lists. Apart
//! from `writes` because it is a translation between two schemas, not a write rule.

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::resources::ResourceType;
use super::store::{Change, Store};

/// An events.k8s.io/v1 Event is also a core/v1 Event (one object, two API versions): the core view is
/// what `kubectl describe` lists.
pub(super) fn mirror_event(store: &mut Store, resource: &ResourceType, change: Change, event: &Value, version: u64) {
    if resource.group != "events.k8s.io" {
        return;
    }
    let time = event.get("eventTime").cloned().unwrap_or(Value::Null);
    let last = event.pointer("/series/lastObservedTime").cloned().unwrap_or(time.clone());
    let core = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": event["metadata"],
        "involvedObject": event.get("regarding").cloned().unwrap_or(Value::Null),
        "related": event.get("related").cloned().unwrap_or(Value::Null),
        "reason": event.get("reason").cloned().unwrap_or(Value::Null),
        "message": event.get("note").cloned().unwrap_or(Value::Null),
        "type": event.get("type").cloned().unwrap_or(Value::Null),
        "action": event.get("action").cloned().unwrap_or(Value::Null),
        "source": {"component": event.get("reportingController").cloned().unwrap_or(Value::Null)},
        "reportingComponent": event.get("reportingController").cloned().unwrap_or(Value::Null),
        "reportingInstance": event.get("reportingInstance").cloned().unwrap_or(Value::Null),
        "eventTime": time,
        "firstTimestamp": time_seconds(&time),
        "lastTimestamp": time_seconds(&last),
        "count": event.pointer("/series/count").cloned().unwrap_or(json!(1)),
    });
    let namespace = event.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default().to_owned();
    let name = event.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned();
    store.record(("/events".into(), namespace, name), change, core, version);
}

/// A MicroTime as a Time (seconds).
fn time_seconds(time: &Value) -> Value {
    match time.as_str().and_then(|t| t.parse::<Timestamp>().ok()) {
        Some(t) => json!(Timestamp::from_second(t.as_second()).unwrap_or(t).to_string()),
        None => Value::Null,
    }
}
