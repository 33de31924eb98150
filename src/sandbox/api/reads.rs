//! Reads: GET of one object and LIST with label and field selectors and `limit`/`continue`
//! pagination (410 for a continue token older than the last compaction); a LIST asked for
//! `as=Table` is answered as a Table (see `tables`); asked for `as=PartialObjectMetadata(List)`
//! (kube's metadata watcher), with the objects' metadata only.

use std::collections::BTreeMap;

use axum::http::{HeaderMap, header};
use serde_json::{Value, json};

use super::Emulator;
use super::error::{ApiError, not_found};
use super::resources::ResourceType;
use super::selectors::{FieldSelector, LabelSelector};

impl Emulator {
    /// GET of one object; asked for `as=Table` (`kubectl get KIND NAME`), a Table of one row.
    pub(super) fn do_get(
        &self,
        resource: &ResourceType,
        namespace: &str,
        name: &str,
        headers: &HeaderMap,
    ) -> Result<(u16, Value), ApiError> {
        let object = {
            let store = self.inner.store.lock().expect("not poisoned");
            store
                .objects
                .get(&(resource.key(), namespace.to_owned(), name.to_owned()))
                .map(|v| resource.present(v))
                .ok_or_else(|| not_found(resource, name))?
        };
        if wants_table(headers) {
            let version = object.pointer("/metadata/resourceVersion").cloned().unwrap_or(Value::Null);
            return Ok((200, self.table(resource, std::slice::from_ref(&object), json!({"resourceVersion": version}))));
        }
        if wants_metadata(headers) {
            return Ok((200, partial_metadata(&object)));
        }
        Ok((200, object))
    }

    /// LIST: the matching objects after the `continue` token, at most `limit` of them, as a list or,
    /// asked for `as=Table`, as a Table.
    pub(super) fn do_list(
        &self,
        resource: &ResourceType,
        namespace: Option<&str>,
        query: &BTreeMap<String, String>,
        headers: &HeaderMap,
    ) -> Result<(u16, Value), ApiError> {
        let labels = LabelSelector::parse(query.get("labelSelector").map(String::as_str).unwrap_or(""))
            .map_err(|e| ApiError::new(400, "BadRequest", e))?;
        let fields = FieldSelector::parse(query.get("fieldSelector").map(String::as_str).unwrap_or(""))
            .map_err(|e| ApiError::new(400, "BadRequest", e))?;
        let store = self.inner.store.lock().expect("not poisoned");
        let after = match query.get("continue").filter(|c| !c.is_empty()) {
            Some(token) => {
                let (version, key) =
                    token.split_once(':').ok_or_else(|| ApiError::new(400, "BadRequest", "invalid continue token"))?;
                let version: u64 =
                    version.parse().map_err(|_| ApiError::new(400, "BadRequest", "invalid continue token"))?;
                if version < store.compacted {
                    return Err(ApiError::new(
                        410,
                        "Expired",
                        "The provided continue parameter is too old to display a consistent list result.",
                    ));
                }
                Some(key.to_owned())
            }
            None => None,
        };
        let limit: usize = query.get("limit").and_then(|l| l.parse().ok()).filter(|l| *l > 0).unwrap_or(usize::MAX);
        let key = resource.key();
        let mut matching = store
            .objects
            .iter()
            .filter(|((r, ns, _), _)| *r == key && namespace.is_none_or(|n| n == ns))
            .filter(|((_, ns, name), _)| after.as_ref().is_none_or(|a| format!("{ns}/{name}") > *a))
            .map(|(_, v)| resource.present(v))
            .filter(|v| labels.matches(v) && fields.matches(v));
        let items: Vec<Value> = matching.by_ref().take(limit).collect();
        let remaining = matching.count();
        let mut metadata = json!({"resourceVersion": store.revision.to_string()});
        if remaining > 0
            && let Some(last) = items.last()
        {
            let ns = last.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("");
            let name = last.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
            metadata["continue"] = json!(format!("{}:{ns}/{name}", store.revision));
            metadata["remainingItemCount"] = json!(remaining);
        }
        if wants_table(headers) {
            return Ok((200, self.table(resource, &items, metadata)));
        }
        if wants_metadata(headers) {
            let items: Vec<Value> = items.iter().map(partial_metadata).collect();
            let kind = "PartialObjectMetadataList";
            return Ok((
                200,
                json!({"apiVersion": "meta.k8s.io/v1", "kind": kind, "metadata": metadata, "items": items}),
            ));
        }
        Ok((
            200,
            json!({"apiVersion": resource.api_version(), "kind": format!("{}List", resource.kind), "metadata": metadata, "items": items}),
        ))
    }
}

/// Whether the client asked for objects' metadata only (`as=PartialObjectMetadata` or
/// `as=PartialObjectMetadataList`): what the API server then sends of every object, Secrets' data never.
pub(super) fn wants_metadata(headers: &HeaderMap) -> bool {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    accept.is_some_and(|accept| accept.contains("as=PartialObjectMetadata"))
}

/// `object` as a `PartialObjectMetadata`: its metadata alone.
pub(super) fn partial_metadata(object: &Value) -> Value {
    json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": object["metadata"]})
}

/// Whether the client asked for `as=Table` (kubectl's `get`).
pub(super) fn wants_table(headers: &HeaderMap) -> bool {
    headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|accept| accept.contains("as=Table"))
}
