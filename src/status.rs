//! Writes the Blueprint status: once per reconcile at most, only when it changed (ignoring
//! `lastTransitionTime`), as a JSON merge patch of what changed (removed fields sent as `null`),
//! conditional on the `resourceVersion` the decision was based on. A 409 means the decision was made
//! on a stale Blueprint: nothing is written and its events are not published.

use std::collections::BTreeMap;
use std::sync::Arc;

use blueprint_machine::api::{Blueprint, BlueprintManifest, BlueprintStatus, StateDiff};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ManagedFieldsEntry, ObjectMeta, Time};
use kube::api::{Patch, PatchParams};
use kube::core::Request;
use kube::{Client, Resource};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use blueprint_machine::naming::{self, FIELD_MANAGER};

/// How the status write went.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "result")]
pub enum StatusWrite {
    /// Nothing to write: the stored status is the decided one.
    Unchanged,
    Written,
    /// The Blueprint changed since it was observed; decided again shortly.
    Conflict,
    Failed {
        message: String,
    },
}

/// A `/status` merge patch. It borrows what it sends whole from the wanted status, so that those fields
/// are serialized straight into the request body: a 1,000-dogu status is megabytes as
/// `serde_json::Value`s, and building those for every write was the operator's peak memory.
#[derive(Serialize, Debug)]
pub struct StatusPatch<'a> {
    metadata: PatchMetadata<'a>,
    status: BTreeMap<&'static str, Field<'a>>,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
struct PatchMetadata<'a> {
    resource_version: &'a str,
}

/// One field of the patch: removed (`null`), sent whole, or the merge diff of a changed field.
#[derive(Serialize, Debug)]
#[serde(untagged)]
enum Field<'a> {
    Removed(()),
    Conditions(&'a [Condition]),
    Manifest(&'a BlueprintManifest),
    StateDiff(&'a StateDiff),
    Generation(i64),
    Diff(Value),
}

/// The `/status` merge patch that turns `stored` into `wanted`, or `None` when they are equal.
pub fn status_patch<'a>(
    stored: Option<&BlueprintStatus>,
    wanted: &'a BlueprintStatus,
    resource_version: &'a str,
) -> Option<StatusPatch<'a>> {
    if stored.is_some_and(|stored| stored.same_apart_from(wanted, &[])) {
        return None;
    }
    // Field by field, compared typed: only what changed is sent.
    let empty = BlueprintStatus::default();
    let stored = stored.unwrap_or(&empty);
    let mut status = BTreeMap::new();
    if stored.conditions != wanted.conditions {
        // A list is replaced as a whole by a merge patch.
        let conditions =
            if wanted.conditions.is_empty() { Field::Removed(()) } else { Field::Conditions(&wanted.conditions) };
        status.insert("conditions", conditions);
    }
    let fields = [
        (
            "effectiveBlueprint",
            changed(&stored.effective_blueprint, &wanted.effective_blueprint, |m: &Arc<BlueprintManifest>| {
                Field::Manifest(m)
            }),
        ),
        ("stateDiff", changed_state_diff(&stored.state_diff, &wanted.state_diff)),
        (
            "observedGeneration",
            changed(&stored.observed_generation, &wanted.observed_generation, |g: &i64| Field::Generation(*g)),
        ),
    ];
    status.extend(fields.into_iter().filter_map(|(key, field)| Some((key, field?))));
    Some(StatusPatch { metadata: PatchMetadata { resource_version }, status })
}

/// The patch of one optional field, if it changed: whole when it is new, a merge diff when it was
/// there before (so that removed map entries become `null`).
fn changed<'a, T: Serialize + PartialEq>(
    before: &Option<T>,
    after: &'a Option<T>,
    whole: impl FnOnce(&'a T) -> Field<'a>,
) -> Option<Field<'a>> {
    if before == after {
        return None;
    }
    Some(match (before, after) {
        (_, None) => Field::Removed(()),
        (None, Some(after)) => whole(after),
        (Some(before), Some(after)) => Field::Diff(merge_diff(&to_json(before), &to_json(after))),
    })
}

/// The state diff changes on every reconcile of an install, as dogus arrive: its patch is built map by
/// map, so that only the entries that changed become `serde_json::Value`s (a removed entry is `null`).
fn changed_state_diff<'a>(before: &Option<StateDiff>, after: &'a Option<StateDiff>) -> Option<Field<'a>> {
    match (before, after) {
        _ if before == after => None,
        (_, None) => Some(Field::Removed(())),
        (None, Some(after)) => Some(Field::StateDiff(after)),
        (Some(before), Some(after)) => {
            let mut patch = Map::new();
            map_patch(&mut patch, "doguDiffs", &before.dogu_diffs, &after.dogu_diffs);
            map_patch(&mut patch, "componentDiffs", &before.component_diffs, &after.component_diffs);
            map_patch(&mut patch, "doguConfigDiffs", &before.dogu_config_diffs, &after.dogu_config_diffs);
            if before.global_config_diff != after.global_config_diff {
                let list = &after.global_config_diff;
                patch.insert("globalConfigDiff".into(), if list.is_empty() { Value::Null } else { to_json(list) });
            }
            Some(Field::Diff(Value::Object(patch)))
        }
    }
}

/// The merge patch of one map field (left out of the document when empty, as the types serialize it).
fn map_patch<V: Serialize + PartialEq>(
    patch: &mut Map<String, Value>,
    key: &str,
    before: &BTreeMap<String, V>,
    after: &BTreeMap<String, V>,
) {
    if before == after {
        return;
    }
    if after.is_empty() {
        patch.insert(key.to_owned(), Value::Null);
        return;
    }
    if before.is_empty() {
        patch.insert(key.to_owned(), to_json(after));
        return;
    }
    let mut entries = Map::new();
    for (name, value) in after {
        match before.get(name) {
            Some(previous) if previous == value => {}
            Some(previous) => {
                entries.insert(name.clone(), merge_diff(&to_json(previous), &to_json(value)));
            }
            None => {
                entries.insert(name.clone(), to_json(value));
            }
        }
    }
    for name in before.keys().filter(|name| !after.contains_key(*name)) {
        entries.insert(name.clone(), Value::Null);
    }
    patch.insert(key.to_owned(), Value::Object(entries));
}

fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("statuses serialize")
}

/// RFC 7386: a merge patch that turns `before` into `after` (objects recurse, removed members become
/// `null`, everything else is replaced).
pub fn merge_diff(before: &Value, after: &Value) -> Value {
    match (before, after) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = Map::new();
            for (key, value) in new {
                match old.get(key) {
                    Some(previous) if previous == value => {}
                    Some(previous) if previous.is_object() && value.is_object() => {
                        patch.insert(key.clone(), merge_diff(previous, value));
                    }
                    _ => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            for key in old.keys().filter(|k| !new.contains_key(*k)) {
                patch.insert(key.clone(), Value::Null);
            }
            Value::Object(patch)
        }
        _ => after.clone(),
    }
}

/// Sends the patch; the answer is the new `resourceVersion`.
///
/// The server answers with the whole Blueprint, field sets included: megabytes during a large
/// install, decoded on every write only to be thrown away. So only the `resourceVersion` is decoded
/// (serde skips the rest without building it); the caller knows the rest of what was written.
pub async fn write(
    client: &Client,
    namespace: &str,
    name: &str,
    patch: &StatusPatch<'_>,
) -> Result<Option<String>, kube::Error> {
    let params = PatchParams { field_manager: Some(FIELD_MANAGER.to_owned()), ..Default::default() };
    // kube builds the path, query and headers; the body is serialized here, at its size.
    let mut request = Request::new(Blueprint::url_path(&(), Some(namespace)))
        .patch_subresource("status", name, &params, &Patch::Merge(()))
        .map_err(kube::Error::BuildRequest)?;
    *request.body_mut() = body_at_its_size(patch).map_err(kube::Error::SerdeError)?;
    request.extensions_mut().insert("patch_status");
    let answer = client.request_stream(request).await?;
    answered_resource_version(answer).await
}

/// `value` as JSON in a buffer of exactly its length. Serialized into a growing buffer, a 1,000-dogu
/// status (half a megabyte) left a buffer of twice its size, and held both while growing.
fn body_at_its_size<T: Serialize>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut body = Vec::with_capacity(blueprint_machine::json_len(value));
    serde_json::to_writer(&mut body, value)?;
    Ok(body)
}

/// The `metadata.resourceVersion` of the object a write answered with. The API server answers with the
/// whole Blueprint (with a 1,000-dogu install's status, about a megabyte), and read as one text it was
/// held three times over (the body's chunks, their copy in one piece, the text) at the operator's
/// peak. The metadata comes first (the server sorts an object's keys), so only the answer's front is
/// kept, up to the end of its metadata; the rest is read and dropped as it arrives.
async fn answered_resource_version(answer: impl futures::AsyncBufRead + Unpin) -> Result<Option<String>, kube::Error> {
    use futures::AsyncBufReadExt;
    let mut answer = answer;
    let mut front = Vec::new();
    // Parsed again only when the front has doubled since the last try: linear in the answer's size
    // even when the metadata comes last.
    let mut next_try = 4096;
    let mut found = None;
    loop {
        let chunk = answer.fill_buf().await.map_err(kube::Error::ReadEvents)?;
        if chunk.is_empty() {
            break;
        }
        let length = chunk.len();
        if found.is_none() {
            front.extend_from_slice(chunk);
            if front.len() >= next_try {
                found = metadata_in_front(&front);
                next_try = front.len() * 2;
                if found.is_some() {
                    front = Vec::new();
                }
            }
        }
        answer.consume_unpin(length);
    }
    // Without `found`, the whole answer is in `front` (a small object, or metadata that never came first).
    match found.or_else(|| metadata_in_front(&front)) {
        Some(version) => Ok(version),
        // Not an object with metadata: serde says what is wrong with it.
        None => serde_json::from_slice::<Answer>(&front)
            .map(|a| a.metadata.resource_version)
            .map_err(kube::Error::SerdeError),
    }
}

/// The object's `metadata.resourceVersion` (itself optional) if `front` holds the object's metadata
/// whole; `None` while it does not yet.
fn metadata_in_front(front: &[u8]) -> Option<Option<String>> {
    use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
    /// Visits the object's members up to `metadata`, and stops there: what follows is not read. (serde
    /// then fails the parse for the unread rest; the metadata is already in `found`.)
    struct UpToMetadata<'a>(&'a mut Option<Option<String>>);
    impl<'de> Visitor<'de> for UpToMetadata<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<(), A::Error> {
            while let Some(key) = members.next_key::<std::borrow::Cow<'de, str>>()? {
                if key == "metadata" {
                    let metadata: AnswerMetadata = members.next_value()?;
                    *self.0 = Some(metadata.resource_version);
                    return Ok(());
                }
                members.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }
    impl<'de> DeserializeSeed<'de> for UpToMetadata<'_> {
        type Value = ();
        fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
            deserializer.deserialize_map(self)
        }
    }
    let mut found = None;
    let _ = UpToMetadata(&mut found).deserialize(&mut serde_json::Deserializer::from_slice(front));
    found
}

#[derive(Deserialize)]
struct Answer {
    metadata: AnswerMetadata,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerMetadata {
    resource_version: Option<String>,
}

/// The Blueprint as the status write left it: `before` with the `wanted` status and the answer's
/// `resourceVersion`. Its `managedFields` say that the operator wrote the status at `now`, as the API server's answer does:
/// until the cache shows the write, a reconcile reads this copy, and a progress message's hold (D58)
/// counts from this write, not from the one before it.
pub fn written(
    before: &Blueprint,
    wanted: &Arc<BlueprintStatus>,
    resource_version: Option<String>,
    now: Time,
) -> Blueprint {
    let mut managed_fields: Vec<ManagedFieldsEntry> = (before.metadata.managed_fields.iter().flatten())
        .filter(|entry| !naming::own_status_write(entry))
        .cloned()
        .collect();
    managed_fields.push(ManagedFieldsEntry {
        manager: Some(FIELD_MANAGER.to_owned()),
        operation: Some("Update".to_owned()),
        subresource: Some("status".to_owned()),
        time: Some(now),
        ..ManagedFieldsEntry::default()
    });
    let metadata = ObjectMeta { resource_version, managed_fields: Some(managed_fields), ..before.metadata.clone() };
    Blueprint {
        metadata,
        spec: before.spec.clone(),
        status: Some(wanted.clone()),
        undecodable_spec: before.undecodable_spec.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn answer(text: &str) -> Result<Option<String>, kube::Error> {
        // Read in chunks of 1,000 bytes, as a body arrives in frames.
        let reader = futures::io::BufReader::with_capacity(1000, futures::io::Cursor::new(text.as_bytes().to_vec()));
        futures::executor::block_on(answered_resource_version(reader))
    }

    #[test]
    fn the_answer_of_a_write_is_read_for_its_resource_version() {
        let big = "x".repeat(200_000);
        let first = format!(
            r#"{{"apiVersion":"v3","kind":"Blueprint","metadata":{{"name":"b","resourceVersion":"42","labels":{{"a":"}}"}}}},"spec":{{"s":"{big}"}},"status":{{"t":"{big}"}}}}"#
        );
        assert_eq!(answer(&first).unwrap().as_deref(), Some("42"));
        let last = format!(r#"{{"spec":{{"s":"{big}"}},"metadata":{{"resourceVersion":"43"}}}}"#);
        assert_eq!(answer(&last).unwrap().as_deref(), Some("43"));
        assert_eq!(answer(r#"{"metadata":{"name":"b"}}"#).unwrap(), None);
        assert!(answer("not json").is_err());
        assert!(answer(r#"{"kind":"Blueprint"}"#).is_err(), "an answer without metadata is not an object");
    }

    #[test]
    fn a_body_is_serialized_at_its_size() {
        let value = json!({"entries": (0..1000).map(|i| format!("entry-{i}")).collect::<Vec<_>>()});
        let body = body_at_its_size(&value).unwrap();
        assert_eq!(body, serde_json::to_vec(&value).unwrap());
        assert_eq!(body.capacity(), body.len());
    }

    #[test]
    fn merge_diffs_remove_with_null_and_replace_lists() {
        let before = json!({"a": 1, "b": {"c": 1, "d": 2}, "l": [1, 2], "gone": true});
        let after = json!({"a": 1, "b": {"c": 3}, "l": [1]});
        assert_eq!(merge_diff(&before, &after), json!({"b": {"c": 3, "d": null}, "l": [1], "gone": null}));
        assert_eq!(merge_diff(&Value::Null, &json!({"x": 1})), json!({"x": 1}));
    }

    /// The field-by-field patch is the RFC 7386 diff of the whole statuses, without serializing what
    /// did not change.
    #[test]
    fn the_patch_is_the_merge_diff_of_the_statuses() {
        let status = |value: Value| -> BlueprintStatus { serde_json::from_value(value).unwrap() };
        let condition = |reason: &str| {
            json!({"type": "Completed", "status": "False", "reason": reason, "message": "",
                   "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1})
        };
        let first = status(json!({
            "conditions": [condition("StateDiffHasChanges")],
            "effectiveBlueprint": {"dogus": [{"name": "official/ldap", "version": "1.0.0-1", "absent": false}]},
            "stateDiff": {"doguDiffs": {"ldap": {"actual": {"namespace": "", "absent": true}, "expected": {"namespace": "official", "version": "1.0.0-1", "absent": false}, "neededActions": ["install"]}}},
            "observedGeneration": 1
        }));
        let second = status(json!({
            "conditions": [condition("Completed")],
            "effectiveBlueprint": {"dogus": [{"name": "official/ldap", "version": "1.0.0-1", "absent": false}]},
            "stateDiff": {},
            "observedGeneration": 2
        }));
        let whole = |before: Option<&BlueprintStatus>, after: &BlueprintStatus| {
            let before = before.map(|b| serde_json::to_value(b).unwrap()).unwrap_or(Value::Null);
            json!({"metadata": {"resourceVersion": "7"}, "status": merge_diff(&before, &serde_json::to_value(after).unwrap())})
        };
        let patch = |before, after| serde_json::to_value(status_patch(before, after, "7").unwrap()).unwrap();
        let third = status(json!({
            "conditions": [condition("StateDiffHasChanges")],
            "stateDiff": {
                "doguDiffs": {
                    "ldap": {"actual": {"namespace": "official", "version": "1.0.0-1", "absent": false}, "expected": {"namespace": "official", "version": "1.1.0-1", "absent": false}, "neededActions": ["upgrade"]},
                    "cas": {"actual": {"namespace": "", "absent": true}, "expected": {"namespace": "official", "version": "7.0.0-1", "absent": false}, "neededActions": ["install"]}
                },
                "globalConfigDiff": [{"key": "fqdn", "actual": {"exists": false}, "expected": {"value": "x", "exists": true}, "neededAction": "set"}]
            },
            "observedGeneration": 2
        }));
        for (before, after) in [
            (None, &first),
            (Some(&first), &second),
            (Some(&second), &first),
            (Some(&first), &third),
            (Some(&third), &first),
        ] {
            assert_eq!(patch(before, after), whole(before, after));
        }
        let patch = patch(Some(&first), &second);
        assert!(patch["status"].get("effectiveBlueprint").is_none(), "unchanged fields are left out: {patch}");
        assert!(status_patch(Some(&first), &first, "7").is_none());
    }
    /// Until the cache shows a status write, the next reconcile reads the remembered copy: it says that
    /// the operator wrote the status then, so that a progress message's hold (D58) counts from this write.
    #[test]
    fn the_remembered_copy_of_a_write_says_when_it_was_written() {
        use k8s_openapi::jiff::Timestamp;
        let at = |second: i64| Time(Timestamp::from_second(1_767_225_600 + second).unwrap());
        let entry = |manager: &str, subresource: Option<&str>, second: i64| ManagedFieldsEntry {
            manager: Some(manager.to_owned()),
            operation: Some("Update".to_owned()),
            subresource: subresource.map(str::to_owned),
            time: Some(at(second)),
            ..ManagedFieldsEntry::default()
        };
        let mut before = Blueprint::default();
        before.metadata.resource_version = Some("7".to_owned());
        before.metadata.managed_fields =
            Some(vec![entry("kubectl", None, 10), entry(FIELD_MANAGER, Some("status"), 20)]);
        let wanted = Arc::new(BlueprintStatus { observed_generation: Some(3), ..BlueprintStatus::default() });
        let written = written(&before, &wanted, Some("8".to_owned()), at(30));
        assert_eq!(written.metadata.resource_version.as_deref(), Some("8"));
        assert_eq!(written.status.as_deref(), Some(wanted.as_ref()));
        let entries = written.metadata.managed_fields.as_deref().unwrap();
        assert_eq!(entries.len(), 2, "the operator's status entry is replaced, another writer's kept: {entries:?}");
        assert_eq!(entries[0], entry("kubectl", None, 10));
        let newest = naming::newest_write(entries).unwrap();
        assert!(naming::own_status_write(newest));
        assert_eq!(newest.time, Some(at(30)));
    }
}
