//! WATCH: a stream of JSON lines from a `resourceVersion` (or the current objects as ADDED), with
//! label and field selectors, `sendInitialEvents` and its end bookmark, periodic bookmarks,
//! `timeoutSeconds`, an ERROR 410 when the version is older than the last compaction, and an end
//! whenever the fault controls drop the watches. Asked for `as=Table` (`kubectl get -w`), each event's
//! object is a Table of its one row, with the same columns as the LIST's; asked for
//! `as=PartialObjectMetadata`, its metadata alone.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Response, header};
use futures::StreamExt;
use serde_json::{Value, json};

use super::Emulator;
use super::error::ApiError;
use super::resources::ResourceType;
use super::selectors::{FieldSelector, LabelSelector};
use super::serve::error_response;
use super::store::{Change, Record};

impl Emulator {
    /// WATCH: a streamed response that lasts until `timeoutSeconds`, `drop_watches`, the client going
    /// away or falling behind the live changes.
    pub(super) fn watch(
        &self,
        resource: &ResourceType,
        namespace: Option<String>,
        query: &BTreeMap<String, String>,
        headers: &HeaderMap,
    ) -> Response<Body> {
        let as_table = super::reads::wants_table(headers);
        let as_metadata = super::reads::wants_metadata(headers);
        let labels = match LabelSelector::parse(query.get("labelSelector").map(String::as_str).unwrap_or("")) {
            Ok(l) => l,
            Err(e) => return error_response(&ApiError::new(400, "BadRequest", e)),
        };
        let fields = match FieldSelector::parse(query.get("fieldSelector").map(String::as_str).unwrap_or("")) {
            Ok(f) => f,
            Err(e) => return error_response(&ApiError::new(400, "BadRequest", e)),
        };
        let timeout = query.get("timeoutSeconds").and_then(|t| t.parse::<u64>().ok()).map(Duration::from_secs);
        let bookmarks = query.get("allowWatchBookmarks").is_some_and(|b| b == "true" || b == "1");
        let initial_events = query.get("sendInitialEvents").is_some_and(|s| s == "true");
        if initial_events && self.streaming_lists_refused() {
            // The real server's answer with the WatchList gate off (ListOptions validation).
            return error_response(&ApiError::new(
                422,
                "Invalid",
                "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is \
                 forbidden for watch unless the WatchList feature gate is enabled",
            ));
        }
        let since: Option<u64> =
            query.get("resourceVersion").filter(|v| !v.is_empty() && *v != "0").and_then(|v| v.parse().ok());
        let resource_key = resource.key();
        let api_version = resource.api_version();
        let kind = resource.kind.clone();
        let view = resource.clone();
        // The record as this watch sees it, if at all: its event type and the object as this resource
        // shows it. A modification that makes the object match the selectors is its addition; one that
        // makes it stop matching, its deletion, showing the object as it was with the new
        // resourceVersion (the API server's watch cache does the same).
        let wanted = move |record: &Record| -> Option<(&'static str, Value)> {
            if record.resource != resource_key || namespace.as_ref().is_some_and(|n| *n != record.namespace) {
                return None;
            }
            let object = view.present(&record.object);
            let matches = |object: &Value| labels.matches(object) && fields.matches(object);
            // Selectors read the metadata, which every version shows alike: the stored form will do.
            match (record.previous.as_ref().map(matches), matches(&object)) {
                (Some(false), true) => Some((Change::Added.as_str(), object)),
                (Some(true), false) => {
                    let mut before = view.present(record.previous.as_ref()?);
                    before["metadata"]["resourceVersion"] = object["metadata"]["resourceVersion"].clone();
                    Some((Change::Deleted.as_str(), before))
                }
                (_, true) => Some((record.change.as_str(), object)),
                (_, false) => None,
            }
        };

        let (mut sender, receiver) = futures::channel::mpsc::channel::<Result<Bytes, Infallible>>(64);
        let (backlog, mut live, current) = {
            let store = self.inner.store.lock().expect("not poisoned");
            let live = store.changes.subscribe();
            let backlog: Result<Vec<Record>, ()> = match since {
                Some(version) => store.since(version).ok_or(()),
                None => Ok(store
                    .objects
                    .iter()
                    .map(|((r, ns, _), object)| Record {
                        resource_version: 0,
                        resource: r.clone(),
                        namespace: ns.clone(),
                        change: Change::Added,
                        object: object.clone(),
                        previous: None,
                    })
                    .collect()),
            };
            (backlog, live, store.revision)
        };
        let mut epoch = self.inner.watch_epoch.subscribe();
        epoch.borrow_and_update();
        let compacted_message = format!("too old resource version: {} ({current})", since.unwrap_or_default());
        let (emulator, table_resource) = (self.clone(), resource.clone());
        tokio::spawn(async move {
            let line = |event_type: &str, object: &Value| {
                if as_table && matches!(event_type, "ADDED" | "MODIFIED" | "DELETED") {
                    let version = object.pointer("/metadata/resourceVersion").cloned().unwrap_or(Value::Null);
                    let table = emulator.table(
                        &table_resource,
                        std::slice::from_ref(object),
                        json!({"resourceVersion": version}),
                    );
                    return Ok(watch_line(event_type, &table));
                }
                if as_metadata && matches!(event_type, "ADDED" | "MODIFIED" | "DELETED") {
                    return Ok(watch_line(event_type, &super::reads::partial_metadata(object)));
                }
                Ok(watch_line(event_type, object))
            };
            let backlog = match backlog {
                Ok(backlog) => backlog,
                Err(()) => {
                    let error = ApiError::new(410, "Expired", compacted_message);
                    let _ = futures::SinkExt::send(&mut sender, line("ERROR", &error.body())).await;
                    return;
                }
            };
            let mut last = since.unwrap_or(current);
            for record in &backlog {
                let Some((event_type, object)) = wanted(record) else { continue };
                last = last.max(record.resource_version);
                if futures::SinkExt::send(&mut sender, line(event_type, &object)).await.is_err() {
                    return;
                }
            }
            if initial_events {
                let bookmark = json!({"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": current.to_string(), "annotations": {"k8s.io/initial-events-end": "true"}}});
                if futures::SinkExt::send(&mut sender, line("BOOKMARK", &bookmark)).await.is_err() {
                    return;
                }
            }
            let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
            let mut ticker = tokio::time::interval(Duration::from_secs(60));
            ticker.tick().await;
            loop {
                let until_deadline = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = until_deadline => return,
                    _ = epoch.changed() => return,
                    _ = ticker.tick(), if bookmarks => {
                        let bookmark = json!({"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": last.to_string()}});
                        if futures::SinkExt::send(&mut sender, line("BOOKMARK", &bookmark)).await.is_err() {
                            return;
                        }
                    }
                    received = live.recv() => match received {
                        Ok(record) => {
                            if record.resource_version <= last && since.is_some() {
                                continue;
                            }
                            last = last.max(record.resource_version);
                            if let Some((event_type, object)) = wanted(&record)
                                && futures::SinkExt::send(&mut sender, line(event_type, &object)).await.is_err()
                            {
                                return;
                            }
                        }
                        // Fell behind or the store is gone: end the watch; the client re-watches.
                        Err(_) => return,
                    },
                }
            }
        });
        Response::builder()
            .status(200)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from_stream(receiver.map(|chunk| chunk)))
            .expect("a valid response")
    }
}

/// One line of a watch stream: `{"type":…,"object":…}`, in that order, as the API server writes it.
/// The order matters to clients: kube's decoder reads the object straight into its type when it knows
/// the event type first, and buffers the whole object otherwise.
fn watch_line(event_type: &str, object: &Value) -> Bytes {
    let mut line = Vec::with_capacity(256);
    line.extend_from_slice(b"{\"type\":");
    serde_json::to_writer(&mut line, event_type).expect("a string serializes");
    line.extend_from_slice(b",\"object\":");
    serde_json::to_writer(&mut line, object).expect("a JSON value serializes");
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}
