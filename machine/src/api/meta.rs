//! Decoding `metadata` without the managers' field sets.
//!
//! Every write to an object adds to its `managedFields` a `fieldsV1`: the set of every field the
//! manager owns, as a JSON tree. For a Blueprint whose status lists a thousand dogus that tree is
//! megabytes, and decoding it into `serde_json::Value`s was a third of the operator's peak memory,
//! for data it never reads. The field sets are skipped while decoding (serde's `IgnoredAny` allocates
//! nothing); everything else of the metadata, the managers' names and times included, is kept.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta, OwnerReference, Time};
use serde::{Deserialize, Deserializer};

/// `ObjectMeta` as on the wire, but for the field sets. `#[serde(default)]` keeps it as lenient as
/// k8s-openapi's own decoding, which treats every field as optional.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Metadata {
    annotations: Option<BTreeMap<String, String>>,
    creation_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
    generate_name: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    managed_fields: Option<Vec<Manager>>,
    name: Option<String>,
    namespace: Option<String>,
    owner_references: Option<Vec<OwnerReference>>,
    resource_version: Option<String>,
    self_link: Option<String>,
    uid: Option<String>,
}

/// A `managedFields` entry without its `fieldsV1` (an unknown key to serde, so skipped unread).
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Manager {
    api_version: Option<String>,
    fields_type: Option<String>,
    manager: Option<String>,
    operation: Option<String>,
    subresource: Option<String>,
    time: Option<Time>,
}

/// Decodes an `ObjectMeta` whose `managedFields` entries have no `fieldsV1`.
pub(super) fn without_field_sets<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ObjectMeta, D::Error> {
    let m = Metadata::deserialize(deserializer)?;
    // Every field named, none defaulted: a field k8s-openapi adds must be added here too.
    Ok(ObjectMeta {
        annotations: m.annotations,
        creation_timestamp: m.creation_timestamp,
        deletion_grace_period_seconds: m.deletion_grace_period_seconds,
        deletion_timestamp: m.deletion_timestamp,
        finalizers: m.finalizers,
        generate_name: m.generate_name,
        generation: m.generation,
        labels: m.labels,
        managed_fields: m.managed_fields.map(|entries| {
            entries
                .into_iter()
                .map(|e| ManagedFieldsEntry {
                    api_version: e.api_version,
                    fields_type: e.fields_type,
                    fields_v1: None,
                    manager: e.manager,
                    operation: e.operation,
                    subresource: e.subresource,
                    time: e.time,
                })
                .collect()
        }),
        name: m.name,
        namespace: m.namespace,
        owner_references: m.owner_references,
        resource_version: m.resource_version,
        self_link: m.self_link,
        uid: m.uid,
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;
    use k8s_openapi::jiff::Timestamp;
    use serde_json::json;

    use super::*;

    /// Every field of the metadata survives the decoding, but the field sets.
    #[test]
    fn everything_but_the_field_sets_is_decoded() {
        let time = |s: &str| Some(Time(s.parse::<Timestamp>().unwrap()));
        let entry = |fields_v1| ManagedFieldsEntry {
            api_version: Some("k8s.cloudogu.com/v2".into()),
            fields_type: Some("FieldsV1".into()),
            fields_v1,
            manager: Some("blueprint-operator".into()),
            operation: Some("Update".into()),
            subresource: Some("status".into()),
            time: time("2026-01-02T03:04:05Z"),
        };
        let full = ObjectMeta {
            annotations: Some([("a".to_owned(), "1".to_owned())].into()),
            creation_timestamp: time("2026-01-01T00:00:00Z"),
            deletion_grace_period_seconds: Some(30),
            deletion_timestamp: time("2026-01-03T00:00:00Z"),
            finalizers: Some(vec!["f".into()]),
            generate_name: Some("bp-".into()),
            generation: Some(7),
            labels: Some([("app".to_owned(), "ces".to_owned())].into()),
            managed_fields: Some(vec![entry(Some(FieldsV1(json!({"f:status": {"f:stateDiff": {}}}))))]),
            name: Some("bp".into()),
            namespace: Some("ecosystem".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "owner".into(),
                uid: "u-1".into(),
                block_owner_deletion: Some(true),
                controller: Some(false),
            }]),
            resource_version: Some("42".into()),
            self_link: Some("/apis/x".into()),
            uid: Some("u-2".into()),
        };
        let decoded = without_field_sets(serde_json::to_value(&full).unwrap()).unwrap();
        assert_eq!(decoded, ObjectMeta { managed_fields: Some(vec![entry(None)]), ..full });
    }

    #[test]
    fn empty_and_null_metadata_decode_like_k8s_openapi() {
        assert_eq!(without_field_sets(json!({})).unwrap(), ObjectMeta::default());
        assert_eq!(without_field_sets(json!({"labels": null})).unwrap(), ObjectMeta::default());
        assert!(without_field_sets(json!({"generation": "seven"})).is_err());
    }
}
