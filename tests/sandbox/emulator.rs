//! The API emulator's rules, each test named after the Kubernetes rule it follows.

use std::time::Duration;

use axum::body::Body;
use blueprint_operator::sandbox::api::Emulator;
use futures::StreamExt;
use http::Request;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::{Value, json};
use tower::ServiceExt;

const NS: &str = "ecosystem";

/// An emulator on a virtual clock that follows tokio's (paused) time.
pub fn emulator() -> Emulator {
    let start = tokio::time::Instant::now();
    Emulator::new(std::sync::Arc::new(move || {
        Timestamp::from_second(1_767_225_600).unwrap()
            + k8s_openapi::jiff::SignedDuration::try_from(start.elapsed()).unwrap()
    }))
}

async fn call(emulator: &Emulator, method: &str, uri: &str, content_type: &str, body: Value) -> (u16, Value) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(if body.is_null() { Body::empty() } else { Body::from(body.to_string()) })
        .unwrap();
    let response = emulator.router().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

const CM: &str = "/api/v1/namespaces/ecosystem/configmaps";
const DOGUS: &str = "/apis/k8s.cloudogu.com/v2/namespaces/ecosystem/dogus";
const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";

fn dogu(name: &str, version: &str) -> Value {
    json!({"apiVersion": "k8s.cloudogu.com/v2", "kind": "Dogu", "metadata": {"name": name}, "spec": {"name": format!("official/{name}"), "version": version}})
}

/// Kubernetes rule: create assigns uid, creationTimestamp, resourceVersion; custom resources start at
/// generation 1; generateName makes a unique name; an existing name is 409 AlreadyExists.
#[tokio::test]
async fn create_fills_server_fields_and_rejects_duplicates() {
    let emulator = emulator();
    let (code, created) = call(&emulator, "POST", DOGUS, JSON, dogu("ldap", "1.0.0-1")).await;
    assert_eq!(code, 201);
    assert!(created["metadata"]["uid"].as_str().is_some_and(|u| u.len() == 36));
    assert_eq!(created["metadata"]["creationTimestamp"], "2026-01-01T00:00:00Z");
    assert!(created["metadata"]["resourceVersion"].as_str().is_some());
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(created["metadata"]["namespace"], NS);
    let (code, again) = call(&emulator, "POST", DOGUS, JSON, dogu("ldap", "1.0.0-1")).await;
    assert_eq!((code, again["reason"].as_str()), (409, Some("AlreadyExists")));
    let (code, cm) =
        call(&emulator, "POST", CM, JSON, json!({"metadata": {"generateName": "cfg-"}, "data": {"a": "b"}})).await;
    assert_eq!(code, 201);
    assert!(cm["metadata"]["name"].as_str().unwrap().starts_with("cfg-"));
    assert_eq!(cm["metadata"].get("generation"), None, "built-in kinds without spec have no generation");
    let (code, _) = call(&emulator, "POST", CM, JSON, json!({"metadata": {}})).await;
    assert_eq!(code, 422, "a name or generateName is required");
}

/// Kubernetes rule: a missing object is 404 with a Status body.
#[tokio::test]
async fn get_of_a_missing_object_is_not_found() {
    let emulator = emulator();
    let (code, body) = call(&emulator, "GET", &format!("{DOGUS}/nope"), JSON, Value::Null).await;
    assert_eq!(code, 404);
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["reason"], "NotFound");
    assert_eq!(body["message"], "dogus.k8s.cloudogu.com \"nope\" not found");
}

/// Kubernetes rule: list filters by label and field selectors and pages with limit/continue; a
/// continue token older than the compacted history is 410 Expired.
#[tokio::test]
async fn list_filters_and_pages() {
    let emulator = emulator();
    for (name, app) in [("a", "ces"), ("b", "ces"), ("c", "other")] {
        call(&emulator, "POST", CM, JSON, json!({"metadata": {"name": name, "labels": {"app": app}}})).await;
    }
    let (_, list) = call(&emulator, "GET", &format!("{CM}?labelSelector=app%3Dces"), JSON, Value::Null).await;
    let names: Vec<&str> =
        list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(list["kind"], "ConfigMapList");
    let (_, list) = call(&emulator, "GET", &format!("{CM}?fieldSelector=metadata.name%3Dc"), JSON, Value::Null).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);

    let (_, page) = call(&emulator, "GET", &format!("{CM}?limit=2"), JSON, Value::Null).await;
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    assert_eq!(page["metadata"]["remainingItemCount"], 1);
    let token = page["metadata"]["continue"].as_str().unwrap().to_owned();
    let (_, rest) =
        call(&emulator, "GET", &format!("{CM}?limit=2&continue={}", urlencode(&token)), JSON, Value::Null).await;
    assert_eq!(rest["items"][0]["metadata"]["name"], "c");
    assert_eq!(rest["metadata"].get("continue"), None);

    call(&emulator, "POST", CM, JSON, json!({"metadata": {"name": "d"}})).await;
    emulator.compact();
    let (code, body) =
        call(&emulator, "GET", &format!("{CM}?limit=2&continue={}", urlencode(&token)), JSON, Value::Null).await;
    assert_eq!((code, body["reason"].as_str()), (410, Some("Expired")));
}

fn urlencode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// Kubernetes rule: updates are optimistic: a stale resourceVersion is 409 Conflict; custom resources
/// need a resourceVersion on update, built-in ConfigMaps may be updated unconditionally.
#[tokio::test]
async fn put_is_optimistically_concurrent() {
    let emulator = emulator();
    let (_, created) = call(&emulator, "POST", DOGUS, JSON, dogu("ldap", "1.0.0-1")).await;
    let mut stale = created.clone();
    let mut fresh = created.clone();
    fresh["spec"]["version"] = json!("1.0.0-2");
    let (code, updated) = call(&emulator, "PUT", &format!("{DOGUS}/ldap"), JSON, fresh).await;
    assert_eq!(code, 200);
    assert_eq!(updated["metadata"]["generation"], 2);
    stale["spec"]["version"] = json!("1.0.0-3");
    let (code, body) = call(&emulator, "PUT", &format!("{DOGUS}/ldap"), JSON, stale).await;
    assert_eq!((code, body["reason"].as_str()), (409, Some("Conflict")));
    let (code, _) = call(&emulator, "PUT", &format!("{DOGUS}/ldap"), JSON, dogu("ldap", "9.0.0-1")).await;
    assert_eq!(code, 422);
    call(&emulator, "POST", CM, JSON, json!({"metadata": {"name": "x"}, "data": {"a": "1"}})).await;
    let (code, _) =
        call(&emulator, "PUT", &format!("{CM}/x"), JSON, json!({"metadata": {"name": "x"}, "data": {"a": "2"}})).await;
    assert_eq!(code, 200);
}

/// Kubernetes rule: merge patch (RFC 7386, `null` removes), JSON patch (RFC 6902, a failed `test` is
/// 422), strategic merge patch (for these kinds: as merge); a resourceVersion in a patch is a
/// precondition.
#[tokio::test]
async fn patches_of_every_kind() {
    let emulator = emulator();
    call(&emulator, "POST", CM, JSON, json!({"metadata": {"name": "x"}, "data": {"a": "1", "b": "2"}})).await;
    let (_, merged) = call(&emulator, "PATCH", &format!("{CM}/x"), MERGE, json!({"data": {"a": null, "c": "3"}})).await;
    assert_eq!(merged["data"], json!({"b": "2", "c": "3"}));
    let (_, patched) = call(
        &emulator,
        "PATCH",
        &format!("{CM}/x"),
        "application/json-patch+json",
        json!([{"op": "replace", "path": "/data/b", "value": "20"}]),
    )
    .await;
    assert_eq!(patched["data"]["b"], "20");
    let (code, _) = call(
        &emulator,
        "PATCH",
        &format!("{CM}/x"),
        "application/json-patch+json",
        json!([{"op": "test", "path": "/data/b", "value": "nope"}]),
    )
    .await;
    assert_eq!(code, 422);
    let (_, strategic) = call(
        &emulator,
        "PATCH",
        &format!("{CM}/x"),
        "application/strategic-merge-patch+json",
        json!({"data": {"d": "4"}}),
    )
    .await;
    assert_eq!(strategic["data"]["d"], "4");
    let (code, _) = call(
        &emulator,
        "PATCH",
        &format!("{CM}/x"),
        MERGE,
        json!({"metadata": {"resourceVersion": "1"}, "data": {"e": "5"}}),
    )
    .await;
    assert_eq!(code, 409);
    let current = strategic["metadata"]["resourceVersion"].clone();
    let (code, _) = call(
        &emulator,
        "PATCH",
        &format!("{CM}/x"),
        MERGE,
        json!({"metadata": {"resourceVersion": current}, "data": {"e": "5"}}),
    )
    .await;
    assert_eq!(code, 200);
    let (code, _) = call(&emulator, "PATCH", &format!("{CM}/missing"), MERGE, json!({"data": {}})).await;
    assert_eq!(code, 404);
}

/// Kubernetes rule (server-side apply): apply creates, owns the fields it sends, conflicts with
/// another manager's fields unless `force=true`, and needs a field manager.
#[tokio::test]
async fn server_side_apply() {
    let emulator = emulator();
    let lease = "/apis/coordination.k8s.io/v1/namespaces/ecosystem/leases/leader";
    let apply = "application/apply-patch+yaml";
    let body = |holder: &str| json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "leader"}, "spec": {"holderIdentity": holder}});
    let (code, _) = call(&emulator, "PATCH", lease, apply, body("a")).await;
    assert_eq!(code, 422, "apply needs a field manager");
    let (code, created) = call(&emulator, "PATCH", &format!("{lease}?fieldManager=a"), apply, body("a")).await;
    assert_eq!(code, 201);
    assert_eq!(created["metadata"]["managedFields"][0]["manager"], "a");
    assert_eq!(created["metadata"]["managedFields"][0]["operation"], "Apply");
    let (code, conflict) = call(&emulator, "PATCH", &format!("{lease}?fieldManager=b"), apply, body("b")).await;
    assert_eq!((code, conflict["reason"].as_str()), (409, Some("Conflict")));
    let (code, forced) =
        call(&emulator, "PATCH", &format!("{lease}?fieldManager=b&force=true"), apply, body("b")).await;
    assert_eq!(code, 200);
    assert_eq!(forced["spec"]["holderIdentity"], "b");
}

/// Kubernetes rule: with the status subresource, writes to the object ignore status and writes to
/// `/status` change only status; generation counts spec changes only.
#[tokio::test]
async fn status_subresource_and_generation() {
    let emulator = emulator();
    call(&emulator, "POST", DOGUS, JSON, dogu("ldap", "1.0.0-1")).await;
    let (_, object) =
        call(&emulator, "PATCH", &format!("{DOGUS}/ldap"), MERGE, json!({"status": {"health": "available"}})).await;
    assert_eq!(object.get("status"), None, "status is not written through the object");
    let (_, object) = call(
        &emulator,
        "PATCH",
        &format!("{DOGUS}/ldap/status"),
        MERGE,
        json!({"spec": {"version": "9.9.9-9"}, "status": {"health": "available"}}),
    )
    .await;
    assert_eq!(object["status"]["health"], "available");
    assert_eq!(object["spec"]["version"], "1.0.0-1", "spec is not written through status");
    assert_eq!(object["metadata"]["generation"], 1, "a status change is not a new generation");
    let (_, labelled) =
        call(&emulator, "PATCH", &format!("{DOGUS}/ldap"), MERGE, json!({"metadata": {"labels": {"x": "y"}}})).await;
    assert_eq!(labelled["metadata"]["generation"], 1, "a metadata change is not a new generation");
    let (_, upgraded) =
        call(&emulator, "PATCH", &format!("{DOGUS}/ldap"), MERGE, json!({"spec": {"version": "2.0.0-1"}})).await;
    assert_eq!(upgraded["metadata"]["generation"], 2);
    let (code, _) = call(&emulator, "GET", "/api/v1/namespaces/ecosystem/configmaps/x/status", JSON, Value::Null).await;
    assert_eq!(code, 404, "kinds without the subresource have no /status");
}

/// Kubernetes rule: a write that changes nothing keeps the resourceVersion and emits no watch event;
/// managedFields record each manager's last write time.
#[tokio::test(start_paused = true)]
async fn no_op_writes_change_nothing_and_managed_fields_keep_times() {
    let emulator = emulator();
    let (_, created) = call(
        &emulator,
        "POST",
        &format!("{CM}?fieldManager=creator"),
        JSON,
        json!({"metadata": {"name": "x"}, "data": {"a": "1"}}),
    )
    .await;
    let version = created["metadata"]["resourceVersion"].clone();
    assert_eq!(created["metadata"]["managedFields"][0]["time"], "2026-01-01T00:00:00Z");
    let client = emulator.client(NS);
    let api = Api::<ConfigMap>::namespaced(client, NS);
    let mut events = api.watch(&kube::api::WatchParams::default(), version.as_str().unwrap()).await.unwrap().boxed();

    tokio::time::advance(Duration::from_secs(90)).await;
    let (_, same) =
        call(&emulator, "PATCH", &format!("{CM}/x?fieldManager=editor"), MERGE, json!({"data": {"a": "1"}})).await;
    assert_eq!(same["metadata"]["resourceVersion"], version);
    let (_, changed) =
        call(&emulator, "PATCH", &format!("{CM}/x?fieldManager=editor"), MERGE, json!({"data": {"a": "2"}})).await;
    assert_ne!(changed["metadata"]["resourceVersion"], version);
    let editor = changed["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == "editor")
        .unwrap()
        .clone();
    assert_eq!(editor["time"], "2026-01-01T00:01:30Z");
    assert_eq!(editor["fieldsV1"], json!({"f:data": {"f:a": {}}}));
    // The only event the watch sees is the real change.
    let first = events.next().await.unwrap().unwrap();
    match first {
        kube::api::WatchEvent::Modified(cm) => assert_eq!(cm.data.unwrap()["a"], "2"),
        other => panic!("{other:?}"),
    }
}

/// Kubernetes rule: deleting an object with finalizers marks it (deletionTimestamp) and deletes it when
/// the last finalizer is removed.
#[tokio::test]
async fn delete_with_finalizers() {
    let emulator = emulator();
    call(&emulator, "POST", CM, JSON, json!({"metadata": {"name": "x", "finalizers": ["example.com/keep"]}})).await;
    let (code, marked) = call(&emulator, "DELETE", &format!("{CM}/x"), JSON, Value::Null).await;
    assert_eq!(code, 200);
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    let (code, _) = call(&emulator, "GET", &format!("{CM}/x"), JSON, Value::Null).await;
    assert_eq!(code, 200, "still there while a finalizer is left");
    call(&emulator, "PATCH", &format!("{CM}/x"), MERGE, json!({"metadata": {"finalizers": null}})).await;
    let (code, _) = call(&emulator, "GET", &format!("{CM}/x"), JSON, Value::Null).await;
    assert_eq!(code, 404);
    let (code, _) = call(&emulator, "DELETE", &format!("{CM}/x"), JSON, Value::Null).await;
    assert_eq!(code, 404);
}

async fn watch_lines(emulator: &Emulator, uri: &str) -> Vec<Value> {
    watch_text(emulator, uri).await.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

async fn watch_text(emulator: &Emulator, uri: &str) -> String {
    let request = Request::builder().uri(uri).body(Body::empty()).unwrap();
    let response = emulator.router().oneshot(request).await.unwrap();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Kubernetes rule: a watch from a resourceVersion sends the changes after it; without one it starts
/// with synthetic ADDED events; `sendInitialEvents` ends them with a bookmark annotated
/// `k8s.io/initial-events-end`; `timeoutSeconds` ends the watch; a version older than the compacted
/// history is an ERROR event with 410 Expired.
#[tokio::test(start_paused = true)]
async fn watch_semantics() {
    let emulator = emulator();
    let (_, a) = call(&emulator, "POST", CM, JSON, json!({"metadata": {"name": "a"}})).await;
    call(&emulator, "POST", CM, JSON, json!({"metadata": {"name": "b"}})).await;
    let since = a["metadata"]["resourceVersion"].as_str().unwrap().to_owned();

    let events = watch_lines(&emulator, &format!("{CM}?watch=true&resourceVersion={since}&timeoutSeconds=5")).await;
    let names: Vec<(&str, &str)> = events
        .iter()
        .map(|e| (e["type"].as_str().unwrap(), e["object"]["metadata"]["name"].as_str().unwrap()))
        .collect();
    assert_eq!(names, [("ADDED", "b")]);

    let events = watch_lines(&emulator, &format!("{CM}?watch=true&timeoutSeconds=5")).await;
    assert_eq!(events.len(), 2, "synthetic ADDED for what exists");
    // The server writes `type` before `object` (clients decode the object without buffering it then).
    let raw = watch_text(&emulator, &format!("{CM}?watch=true&timeoutSeconds=5")).await;
    assert!(raw.lines().all(|l| l.starts_with(r#"{"type":"ADDED","object":{"#)), "{raw}");

    let events = watch_lines(&emulator, &format!("{CM}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=5")).await;
    let last = events.last().unwrap();
    assert_eq!(last["type"], "BOOKMARK");
    assert_eq!(last["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");

    emulator.compact();
    let events = watch_lines(&emulator, &format!("{CM}?watch=true&resourceVersion={since}")).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["type"], "ERROR");
    assert_eq!(events[0]["object"]["code"], 410);
}

/// Kubernetes rule: watches with allowWatchBookmarks get periodic BOOKMARK events carrying the latest
/// resourceVersion; dropped watches end (clients re-watch).
#[tokio::test(start_paused = true)]
async fn bookmarks_and_dropped_watches() {
    let emulator = emulator();
    let handle = {
        let emulator = emulator.clone();
        tokio::spawn(async move {
            watch_lines(&emulator, &format!("{CM}?watch=true&resourceVersion=1&allowWatchBookmarks=true")).await
        })
    };
    tokio::time::sleep(Duration::from_secs(130)).await;
    emulator.drop_watches();
    let events = handle.await.unwrap();
    let bookmarks = events.iter().filter(|e| e["type"] == "BOOKMARK").count();
    assert_eq!(bookmarks, 2, "one per minute: {events:?}");
}

/// The discovery endpoints kubectl uses.
#[tokio::test]
async fn discovery() {
    let emulator = emulator();
    let (_, api) = call(&emulator, "GET", "/api", JSON, Value::Null).await;
    assert_eq!(api["versions"], json!(["v1"]));
    let (_, groups) = call(&emulator, "GET", "/apis", JSON, Value::Null).await;
    let names: Vec<&str> = groups["groups"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert!(
        names.contains(&"k8s.cloudogu.com")
            && names.contains(&"events.k8s.io")
            && names.contains(&"coordination.k8s.io")
    );
    let (_, resources) = call(&emulator, "GET", "/apis/k8s.cloudogu.com/v2", JSON, Value::Null).await;
    let listed: Vec<&str> =
        resources["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert!(listed.contains(&"blueprints") && listed.contains(&"blueprints/status") && listed.contains(&"dogus"));
    let bp = resources["resources"].as_array().unwrap().iter().find(|r| r["name"] == "blueprints").unwrap();
    assert_eq!(bp["shortNames"], json!(["bp"]));
    let (_, crds) =
        call(&emulator, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", JSON, Value::Null).await;
    assert_eq!(crds["items"].as_array().unwrap().len(), 3, "the project's CRDs are registered from their manifests");
}

/// kubectl asks for tables: the CRD's printer columns are served.
#[tokio::test]
async fn tables_use_printer_columns() {
    let emulator = emulator();
    call(&emulator, "POST", DOGUS, JSON, dogu("ldap", "1.0.0-1")).await;
    let request = Request::builder()
        .uri(DOGUS)
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Body::empty())
        .unwrap();
    let response = emulator.router().oneshot(request).await.unwrap();
    let table: Value =
        serde_json::from_slice(&axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap()).unwrap();
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["columnDefinitions"][1]["name"], "Spec-Version");
    assert_eq!(table["rows"][0]["cells"][0], "ldap");
    assert_eq!(table["rows"][0]["cells"][1], "1.0.0-1");
}

/// Fault controls: injected errors for the next N matching requests, delays, and the request log.
#[tokio::test(start_paused = true)]
async fn fault_injection_and_request_log() {
    let emulator = emulator();
    emulator.fail_next(Some("POST"), "/configmaps", 2, 500);
    let (first, _) = call(&emulator, "POST", CM, JSON, json!({"metadata": {"name": "a"}})).await;
    let (second, _) = call(&emulator, "POST", CM, JSON, json!({"metadata": {"name": "a"}})).await;
    let (third, _) = call(&emulator, "POST", CM, JSON, json!({"metadata": {"name": "a"}})).await;
    assert_eq!((first, second, third), (500, 500, 201));
    emulator.delay_responses(Duration::from_secs(3));
    let before = tokio::time::Instant::now();
    call(&emulator, "GET", &format!("{CM}/a"), JSON, Value::Null).await;
    assert!(before.elapsed() >= Duration::from_secs(3));
    let log = emulator.requests();
    assert_eq!(log.len(), 4);
    assert_eq!((log[0].status, log[0].verb()), (500, "create"));
    assert_eq!((log[3].status, log[3].verb()), (200, "get"));
}

/// Kubernetes rule: a Secret's stringData is write-only and merged into data (base64).
#[tokio::test]
async fn secret_string_data_becomes_data() {
    let emulator = emulator();
    let (_, secret) = call(
        &emulator,
        "POST",
        "/api/v1/namespaces/ecosystem/secrets",
        JSON,
        json!({"metadata": {"name": "s"}, "stringData": {"k": "v"}}),
    )
    .await;
    assert_eq!(secret["data"]["k"], "dg==");
    assert_eq!(secret.get("stringData"), None);
}

/// kube-runtime's watcher keeps a reflector store in sync through the emulator, and relists after a
/// 410 when the history was compacted while the watch was down.
#[tokio::test(start_paused = true)]
async fn a_reflector_follows_and_relists() {
    let emulator = emulator();
    let api = Api::<ConfigMap>::namespaced(emulator.client(NS), NS);
    api.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "a"}})).unwrap())
        .await
        .unwrap();
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(writer, watcher(api.clone(), watcher::Config::default()))
        .default_backoff()
        .touched_objects();
    let driver = tokio::spawn(stream.for_each(|_| async {}));
    reader.wait_until_ready().await.unwrap();
    assert_eq!(reader.len(), 1);
    api.patch("a", &PatchParams::default(), &Patch::Merge(json!({"data": {"x": "1"}}))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(reader.get(&reflector::ObjectRef::new("a").within(NS)).unwrap().data.as_ref().unwrap()["x"], "1");

    // The watch drops and cannot come back for a while; meanwhile b is created and the history compacted.
    emulator.fail_next(Some("GET"), "/configmaps", 3, 503);
    emulator.drop_watches();
    tokio::time::sleep(Duration::from_millis(1)).await;
    api.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "b"}})).unwrap())
        .await
        .unwrap();
    emulator.compact();
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(reader.len(), 2, "the relist after 410 brought the missed object");
    let lists = emulator.requests().iter().filter(|r| r.verb() == "list").count();
    assert!(lists >= 2, "relisted: {lists}");
    let list = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 2);
    driver.abort();
}
