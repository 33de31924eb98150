//! Protobuf request bodies. kubectl encodes built-in kinds as protobuf (`kubectl create secret
//! generic`, `create configmap`): the `k8s\0` magic, then a `runtime.Unknown` envelope naming the
//! kind and carrying the object's own encoding. The sandbox decodes ConfigMaps and Secrets (what a
//! user creates by hand) into the JSON it stores; any other kind is a 415 that says to send JSON.
//! Answers stay JSON, which kubectl accepts beside protobuf.

use std::collections::BTreeMap;

use base64::Engine;
use k8s_pb::api::core::v1::{ConfigMap, Secret};
use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;
use serde_json::{Map, Value, json};

use super::error::ApiError;

/// The content type of Kubernetes' protobuf encoding.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

const MAGIC: &[u8] = b"k8s\0";

/// The object a protobuf body holds, as JSON.
pub(super) fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let invalid = |what: String| ApiError::new(400, "BadRequest", format!("the protobuf body is not valid: {what}"));
    let envelope = body.strip_prefix(MAGIC).ok_or_else(|| invalid("it does not start with the k8s magic".into()))?;
    let unknown = Unknown::decode(envelope).map_err(|e| invalid(e.to_string()))?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    let (api_version, kind) = (type_meta.api_version.unwrap_or_default(), type_meta.kind.unwrap_or_default());
    let raw = unknown.raw.unwrap_or_default();
    let mut object = match (api_version.as_str(), kind.as_str()) {
        ("v1", "ConfigMap") => {
            let config_map = ConfigMap::decode(raw.as_slice()).map_err(|e| invalid(e.to_string()))?;
            let mut object = with_metadata(config_map.metadata);
            insert_map(&mut object, "data", config_map.data.into_iter().map(|(k, v)| (k, json!(v))));
            insert_map(&mut object, "binaryData", base64_values(config_map.binary_data));
            if let Some(immutable) = config_map.immutable {
                object.insert("immutable".into(), json!(immutable));
            }
            object
        }
        ("v1", "Secret") => {
            let secret = Secret::decode(raw.as_slice()).map_err(|e| invalid(e.to_string()))?;
            let mut object = with_metadata(secret.metadata);
            insert_map(&mut object, "data", base64_values(secret.data));
            insert_map(&mut object, "stringData", secret.string_data.into_iter().map(|(k, v)| (k, json!(v))));
            if let Some(type_) = secret.r#type {
                object.insert("type".into(), json!(type_));
            }
            if let Some(immutable) = secret.immutable {
                object.insert("immutable".into(), json!(immutable));
            }
            object
        }
        _ => {
            return Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                format!(
                    "the sandbox decodes protobuf only for v1 ConfigMaps and Secrets, not {api_version} {kind}: send JSON"
                ),
            ));
        }
    };
    object.insert("apiVersion".into(), json!(api_version));
    object.insert("kind".into(), json!(kind));
    Ok(Value::Object(object))
}

/// A new object with the metadata a client may set on a write.
fn with_metadata(metadata: Option<ObjectMeta>) -> Map<String, Value> {
    let metadata = metadata.unwrap_or_default();
    let mut fields = Map::new();
    for (key, value) in [
        ("name", metadata.name),
        ("generateName", metadata.generate_name),
        ("namespace", metadata.namespace),
        ("resourceVersion", metadata.resource_version),
    ] {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            fields.insert(key.into(), json!(value));
        }
    }
    insert_map(&mut fields, "labels", metadata.labels.into_iter().map(|(k, v)| (k, json!(v))));
    insert_map(&mut fields, "annotations", metadata.annotations.into_iter().map(|(k, v)| (k, json!(v))));
    if !metadata.finalizers.is_empty() {
        fields.insert("finalizers".into(), json!(metadata.finalizers));
    }
    let mut object = Map::new();
    object.insert("metadata".into(), Value::Object(fields));
    object
}

fn base64_values(map: BTreeMap<String, Vec<u8>>) -> impl Iterator<Item = (String, Value)> {
    map.into_iter().map(|(k, v)| (k, json!(base64::engine::general_purpose::STANDARD.encode(v))))
}

/// `key: {..}` unless there is nothing in it (protobuf does not tell empty from absent).
fn insert_map(object: &mut Map<String, Value>, key: &str, entries: impl Iterator<Item = (String, Value)>) {
    let map: Map<String, Value> = entries.collect();
    if !map.is_empty() {
        object.insert(key.into(), Value::Object(map));
    }
}
