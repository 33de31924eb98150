//! The rules, each a function of the server it runs on (see `mod.rs`): the same requests, the same
//! expected answers on the emulator and on kube-apiserver.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::{Value, json};

use super::{Rig, urlencode};

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";

fn dogu(name: &str, version: &str) -> Value {
    json!({"apiVersion": "k8s.cloudogu.com/v2", "kind": "Dogu", "metadata": {"name": name}, "spec": {"name": format!("official/{name}"), "version": version}})
}

fn timestamp(value: &Value) -> Timestamp {
    value.as_str().and_then(|t| t.parse().ok()).unwrap_or_else(|| panic!("not a timestamp: {value}"))
}

fn names(list: &Value) -> Vec<&str> {
    list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect()
}

/// Kubernetes rule: create assigns uid, creationTimestamp, resourceVersion; custom resources start at
/// generation 1; generateName makes a unique name; an existing name is 409 AlreadyExists.
pub async fn create_fills_server_fields_and_rejects_duplicates(rig: Rig) {
    let (code, created) = rig.call("POST", &rig.dogus(), JSON, dogu("ldap", "1.0.0-1")).await;
    assert_eq!(code, 201, "{created}");
    assert!(created["metadata"]["uid"].as_str().is_some_and(|u| u.len() == 36));
    let created_at = timestamp(&created["metadata"]["creationTimestamp"]);
    if rig.emulated() {
        assert_eq!(created_at.to_string(), "2026-01-01T00:00:00Z");
    }
    assert!(created["metadata"]["resourceVersion"].as_str().is_some_and(|v| v.parse::<u64>().is_ok()));
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(created["metadata"]["namespace"], rig.namespace.as_str());
    let (code, again) = rig.call("POST", &rig.dogus(), JSON, dogu("ldap", "1.0.0-1")).await;
    assert_eq!((code, again["reason"].as_str()), (409, Some("AlreadyExists")));
    assert_eq!(again["message"], "dogus.k8s.cloudogu.com \"ldap\" already exists");
    let (code, cm) = rig
        .call("POST", &rig.configmaps(), JSON, json!({"metadata": {"generateName": "cfg-"}, "data": {"a": "b"}}))
        .await;
    assert_eq!(code, 201);
    assert!(cm["metadata"]["name"].as_str().unwrap().starts_with("cfg-"));
    assert_eq!(cm["metadata"].get("generation"), None, "built-in kinds without spec have no generation");
    let (code, status) = rig.call("POST", &rig.configmaps(), JSON, json!({"metadata": {}})).await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (422, Some("Invalid")),
        "a name or generateName is required: {status}"
    );
}

/// Kubernetes rule: a missing object is 404 with a Status body.
pub async fn get_of_a_missing_object_is_not_found(rig: Rig) {
    let (code, body) = rig.call("GET", &format!("{}/nope", rig.dogus()), JSON, Value::Null).await;
    assert_eq!(code, 404);
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["reason"], "NotFound");
    assert_eq!(body["message"], "dogus.k8s.cloudogu.com \"nope\" not found");
    assert_eq!(body["details"], json!({"name": "nope", "group": "k8s.cloudogu.com", "kind": "dogus"}));
}

/// Kubernetes rule: list filters by label and field selectors and pages with limit/continue.
pub async fn list_filters_and_pages(rig: Rig) {
    let cm = rig.configmaps();
    for (name, app) in [("a", "ces"), ("b", "ces"), ("c", "other")] {
        rig.call("POST", &cm, JSON, json!({"metadata": {"name": name, "labels": {"app": app}}})).await;
    }
    let (_, list) = rig.call("GET", &format!("{cm}?labelSelector=app%3Dces"), JSON, Value::Null).await;
    assert_eq!(names(&list), ["a", "b"]);
    assert_eq!(list["kind"], "ConfigMapList");
    let (_, list) = rig.call("GET", &format!("{cm}?labelSelector=app%21%3Dces"), JSON, Value::Null).await;
    assert_eq!(names(&list), ["c"]);
    let (_, list) = rig.call("GET", &format!("{cm}?labelSelector=app+in+%28ces%2Cx%29"), JSON, Value::Null).await;
    assert_eq!(names(&list), ["a", "b"]);
    let (_, list) = rig.call("GET", &format!("{cm}?fieldSelector=metadata.name%3Dc"), JSON, Value::Null).await;
    assert_eq!(names(&list), ["c"]);
    let (_, list) = rig.call("GET", &format!("{cm}?fieldSelector=metadata.name%21%3Dc"), JSON, Value::Null).await;
    assert_eq!(names(&list), ["a", "b"]);

    let (_, page) = rig.call("GET", &format!("{cm}?limit=2"), JSON, Value::Null).await;
    assert_eq!(names(&page), ["a", "b"]);
    assert_eq!(page["metadata"]["remainingItemCount"], 1);
    let token = page["metadata"]["continue"].as_str().unwrap().to_owned();
    let (_, rest) = rig.call("GET", &format!("{cm}?limit=2&continue={}", urlencode(&token)), JSON, Value::Null).await;
    assert_eq!(names(&rest), ["c"]);
    assert_eq!(rest["metadata"].get("continue"), None);
    assert_eq!(rest["metadata"]["resourceVersion"], page["metadata"]["resourceVersion"], "one snapshot for every page");
}

/// Kubernetes rule: updates are optimistic: a stale resourceVersion is 409 Conflict; custom resources
/// need a resourceVersion on update, built-in ConfigMaps may be updated unconditionally.
pub async fn put_is_optimistically_concurrent(rig: Rig) {
    let dogus = rig.dogus();
    let (_, created) = rig.call("POST", &dogus, JSON, dogu("ldap", "1.0.0-1")).await;
    let mut stale = created.clone();
    let mut fresh = created.clone();
    fresh["spec"]["version"] = json!("1.0.0-2");
    let (code, updated) = rig.call("PUT", &format!("{dogus}/ldap"), JSON, fresh).await;
    assert_eq!(code, 200);
    assert_eq!(updated["metadata"]["generation"], 2);
    stale["spec"]["version"] = json!("1.0.0-3");
    let (code, body) = rig.call("PUT", &format!("{dogus}/ldap"), JSON, stale).await;
    assert_eq!((code, body["reason"].as_str()), (409, Some("Conflict")));
    let (code, body) = rig.call("PUT", &format!("{dogus}/ldap"), JSON, dogu("ldap", "9.0.0-1")).await;
    assert_eq!((code, body["reason"].as_str()), (422, Some("Invalid")), "{body}");
    let cm = rig.configmaps();
    rig.call("POST", &cm, JSON, json!({"metadata": {"name": "x"}, "data": {"a": "1"}})).await;
    let (code, _) =
        rig.call("PUT", &format!("{cm}/x"), JSON, json!({"metadata": {"name": "x"}, "data": {"a": "2"}})).await;
    assert_eq!(code, 200);
}

/// Kubernetes rule: merge patch (RFC 7386, `null` removes), JSON patch (RFC 6902, a failed `test` is
/// 422), strategic merge patch (for these kinds: as merge); a resourceVersion in a patch is a
/// precondition.
pub async fn patches_of_every_kind(rig: Rig) {
    let x = format!("{}/x", rig.configmaps());
    rig.call("POST", &rig.configmaps(), JSON, json!({"metadata": {"name": "x"}, "data": {"a": "1", "b": "2"}})).await;
    let (_, merged) = rig.call("PATCH", &x, MERGE, json!({"data": {"a": null, "c": "3"}})).await;
    assert_eq!(merged["data"], json!({"b": "2", "c": "3"}));
    let json_patch = "application/json-patch+json";
    let (_, patched) =
        rig.call("PATCH", &x, json_patch, json!([{"op": "replace", "path": "/data/b", "value": "20"}])).await;
    assert_eq!(patched["data"]["b"], "20");
    let (code, _) =
        rig.call("PATCH", &x, json_patch, json!([{"op": "test", "path": "/data/b", "value": "nope"}])).await;
    assert_eq!(code, 422);
    let strategic = "application/strategic-merge-patch+json";
    let (_, merged) = rig.call("PATCH", &x, strategic, json!({"data": {"d": "4"}})).await;
    assert_eq!(merged["data"]["d"], "4");
    let (code, body) =
        rig.call("PATCH", &x, MERGE, json!({"metadata": {"resourceVersion": "1"}, "data": {"e": "5"}})).await;
    assert_eq!((code, body["reason"].as_str()), (409, Some("Conflict")));
    let current = merged["metadata"]["resourceVersion"].clone();
    let (code, _) =
        rig.call("PATCH", &x, MERGE, json!({"metadata": {"resourceVersion": current}, "data": {"e": "5"}})).await;
    assert_eq!(code, 200);
    let (code, _) = rig.call("PATCH", &format!("{}/missing", rig.configmaps()), MERGE, json!({"data": {}})).await;
    assert_eq!(code, 404);
}

/// Kubernetes rule (server-side apply): apply creates, owns the fields it sends, conflicts with
/// another manager's fields unless `force=true`, and needs a field manager.
pub async fn server_side_apply(rig: Rig) {
    let lease = format!("{}/leader", rig.leases());
    let apply = "application/apply-patch+yaml";
    let body = |holder: &str| json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "leader"}, "spec": {"holderIdentity": holder}});
    let (code, _) = rig.call("PATCH", &lease, apply, body("a")).await;
    assert_eq!(code, 422, "apply needs a field manager");
    let (code, created) = rig.call("PATCH", &format!("{lease}?fieldManager=a"), apply, body("a")).await;
    assert_eq!(code, 201);
    assert_eq!(created["metadata"]["managedFields"][0]["manager"], "a");
    assert_eq!(created["metadata"]["managedFields"][0]["operation"], "Apply");
    let (code, conflict) = rig.call("PATCH", &format!("{lease}?fieldManager=b"), apply, body("b")).await;
    assert_eq!((code, conflict["reason"].as_str()), (409, Some("Conflict")));
    let (code, forced) = rig.call("PATCH", &format!("{lease}?fieldManager=b&force=true"), apply, body("b")).await;
    assert_eq!(code, 200);
    assert_eq!(forced["spec"]["holderIdentity"], "b");
}

/// Kubernetes rule: with the status subresource, writes to the object ignore status and writes to
/// `/status` change only status; generation counts spec changes only.
pub async fn status_subresource_and_generation(rig: Rig) {
    let ldap = format!("{}/ldap", rig.dogus());
    rig.call("POST", &rig.dogus(), JSON, dogu("ldap", "1.0.0-1")).await;
    let (_, object) = rig.call("PATCH", &ldap, MERGE, json!({"status": {"health": "available"}})).await;
    assert_eq!(object.get("status"), None, "status is not written through the object");
    let status = json!({"spec": {"version": "9.9.9-9"}, "status": {"health": "available"}});
    let (_, object) = rig.call("PATCH", &format!("{ldap}/status"), MERGE, status).await;
    assert_eq!(object["status"]["health"], "available");
    assert_eq!(object["spec"]["version"], "1.0.0-1", "spec is not written through status");
    assert_eq!(object["metadata"]["generation"], 1, "a status change is not a new generation");
    let (_, labelled) = rig.call("PATCH", &ldap, MERGE, json!({"metadata": {"labels": {"x": "y"}}})).await;
    assert_eq!(labelled["metadata"]["generation"], 1, "a metadata change is not a new generation");
    let (_, upgraded) = rig.call("PATCH", &ldap, MERGE, json!({"spec": {"version": "2.0.0-1"}})).await;
    assert_eq!(upgraded["metadata"]["generation"], 2);
    rig.call("POST", &rig.configmaps(), JSON, json!({"metadata": {"name": "x"}})).await;
    let (code, _) = rig.call("GET", &format!("{}/x/status", rig.configmaps()), JSON, Value::Null).await;
    assert_eq!(code, 404, "kinds without the subresource have no /status");
}

/// Kubernetes rule: a write that changes nothing keeps the resourceVersion and emits no watch event;
/// managedFields record each manager's fields and last write time.
pub async fn no_op_writes_change_nothing_and_managed_fields_keep_times(rig: Rig) {
    let cm = rig.configmaps();
    let create = json!({"metadata": {"name": "x"}, "data": {"a": "1"}});
    let (_, created) = rig.call("POST", &format!("{cm}?fieldManager=creator"), JSON, create).await;
    let version = created["metadata"]["resourceVersion"].clone();
    let created_at = timestamp(&created["metadata"]["managedFields"][0]["time"]);
    assert_eq!(created["metadata"]["managedFields"][0]["manager"], "creator");
    assert_eq!(created["metadata"]["managedFields"][0]["operation"], "Update");
    let api = Api::<ConfigMap>::namespaced(rig.client.clone(), &rig.namespace);
    let mut events = api.watch(&kube::api::WatchParams::default(), version.as_str().unwrap()).await.unwrap().boxed();

    rig.advance(Duration::from_secs(90)).await;
    let (_, same) = rig.call("PATCH", &format!("{cm}/x?fieldManager=editor"), MERGE, json!({"data": {"a": "1"}})).await;
    assert_eq!(same["metadata"]["resourceVersion"], version);
    assert_eq!(same["metadata"]["managedFields"].as_array().unwrap().len(), 1, "a no-op write adds no manager");
    let (_, changed) =
        rig.call("PATCH", &format!("{cm}/x?fieldManager=editor"), MERGE, json!({"data": {"a": "2"}})).await;
    assert_ne!(changed["metadata"]["resourceVersion"], version);
    let editor = changed["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == "editor")
        .unwrap()
        .clone();
    let edited_at = timestamp(&editor["time"]);
    assert!(edited_at >= created_at);
    if rig.emulated() {
        assert_eq!(edited_at.to_string(), "2026-01-01T00:01:30Z");
    }
    assert_eq!(editor["fieldsV1"], json!({"f:data": {"f:a": {}}}));
    assert_eq!(editor["operation"], "Update");
    // The only event the watch sees is the real change.
    let first = events.next().await.unwrap().unwrap();
    match first {
        kube::api::WatchEvent::Modified(cm) => assert_eq!(cm.data.unwrap()["a"], "2"),
        other => panic!("{other:?}"),
    }
}

/// Kubernetes rule: deleting an object with finalizers marks it (deletionTimestamp) and deletes it when
/// the last finalizer is removed.
pub async fn delete_with_finalizers(rig: Rig) {
    let x = format!("{}/x", rig.configmaps());
    rig.call("POST", &rig.configmaps(), JSON, json!({"metadata": {"name": "x", "finalizers": ["example.com/keep"]}}))
        .await;
    let (code, marked) = rig.call("DELETE", &x, JSON, Value::Null).await;
    assert_eq!(code, 200);
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    let (code, _) = rig.call("GET", &x, JSON, Value::Null).await;
    assert_eq!(code, 200, "still there while a finalizer is left");
    rig.call("PATCH", &x, MERGE, json!({"metadata": {"finalizers": null}})).await;
    let (code, _) = rig.call("GET", &x, JSON, Value::Null).await;
    assert_eq!(code, 404);
    let (code, _) = rig.call("DELETE", &x, JSON, Value::Null).await;
    assert_eq!(code, 404);
}

/// Kubernetes rule: a watch from a resourceVersion sends the changes after it; without one it starts
/// with synthetic ADDED events; `sendInitialEvents` ends them with a bookmark annotated
/// `k8s.io/initial-events-end`; `timeoutSeconds` ends the watch.
pub async fn watch_semantics(rig: Rig) {
    let cm = rig.configmaps();
    let (_, a) = rig.call("POST", &cm, JSON, json!({"metadata": {"name": "a"}})).await;
    rig.call("POST", &cm, JSON, json!({"metadata": {"name": "b"}})).await;
    let since = a["metadata"]["resourceVersion"].as_str().unwrap().to_owned();

    let events = rig.watch_lines(&format!("{cm}?watch=true&resourceVersion={since}&timeoutSeconds=1")).await;
    let seen: Vec<(&str, &str)> = events
        .iter()
        .map(|e| (e["type"].as_str().unwrap(), e["object"]["metadata"]["name"].as_str().unwrap()))
        .collect();
    assert_eq!(seen, [("ADDED", "b")]);

    let events = rig.watch_lines(&format!("{cm}?watch=true&timeoutSeconds=1")).await;
    assert_eq!(events.len(), 2, "synthetic ADDED for what exists: {events:?}");
    // The server writes `type` before `object` (clients decode the object without buffering it then).
    let raw = rig.watch_text(&format!("{cm}?watch=true&timeoutSeconds=1")).await;
    assert!(raw.lines().all(|l| l.starts_with(r#"{"type":"ADDED","object":{"#)), "{raw}");

    let initial = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    let events = rig.watch_lines(&format!("{cm}?{initial}&timeoutSeconds=1")).await;
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(&types[..3], ["ADDED", "ADDED", "BOOKMARK"], "{events:?}");
    assert_eq!(events[2]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
}

/// A watch with a label selector sees a modification that makes an object match as its addition, and
/// one that makes it stop matching as its deletion (the object as it was, at the new resourceVersion):
/// a cache filled by such a watch holds exactly the objects that match (the operator's ConfigMap caches
/// split the namespace's ConfigMaps by `app=ces`).
pub async fn a_selector_watch_sees_objects_enter_and_leave_it(rig: Rig) {
    let cm = rig.configmaps();
    let (_, created) = rig.call("POST", &cm, JSON, json!({"metadata": {"name": "moving"}})).await;
    let since = created["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let labelled = |app: Value| json!({"metadata": {"labels": {"app": app}}});
    let (_, joined) = rig.call("PATCH", &format!("{cm}/moving"), MERGE, labelled(json!("ces"))).await;
    rig.call("PATCH", &format!("{cm}/moving"), MERGE, json!({"data": {"x": "1"}})).await;
    let (_, left) = rig.call("PATCH", &format!("{cm}/moving"), MERGE, labelled(Value::Null)).await;
    let seen = |events: Vec<Value>| -> Vec<(String, String, Value)> {
        events
            .iter()
            .map(|e| {
                let object = &e["object"];
                let label = object["metadata"]["labels"]["app"].as_str().unwrap_or("-");
                (
                    e["type"].as_str().unwrap().to_owned(),
                    label.to_owned(),
                    object["metadata"]["resourceVersion"].clone(),
                )
            })
            .collect()
    };
    let version = |object: &Value| object["metadata"]["resourceVersion"].clone();
    let watch = |selector: &str| {
        format!("{cm}?watch=true&resourceVersion={since}&timeoutSeconds=1&labelSelector={}", urlencode(selector))
    };
    let ces = seen(rig.watch_lines(&watch("app=ces")).await);
    assert_eq!(ces.len(), 3, "{ces:?}");
    assert_eq!((ces[0].0.as_str(), ces[0].1.as_str(), &ces[0].2), ("ADDED", "ces", &version(&joined)));
    assert_eq!((ces[1].0.as_str(), ces[1].1.as_str()), ("MODIFIED", "ces"));
    assert_eq!((ces[2].0.as_str(), ces[2].1.as_str(), &ces[2].2), ("DELETED", "ces", &version(&left)), "as it was");
    let others = seen(rig.watch_lines(&watch("app!=ces")).await);
    assert_eq!(others.len(), 2, "{others:?}");
    assert_eq!((others[0].0.as_str(), others[0].1.as_str(), &others[0].2), ("DELETED", "-", &version(&joined)));
    assert_eq!((others[1].0.as_str(), others[1].1.as_str(), &others[1].2), ("ADDED", "-", &version(&left)));
}

/// The discovery endpoints kubectl uses.
pub async fn discovery(rig: Rig) {
    let (_, api) = rig.call("GET", "/api", JSON, Value::Null).await;
    assert_eq!(api["versions"], json!(["v1"]));
    let (_, groups) = rig.call("GET", "/apis", JSON, Value::Null).await;
    let names: Vec<&str> = groups["groups"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    for group in ["k8s.cloudogu.com", "events.k8s.io", "coordination.k8s.io", "apiextensions.k8s.io"] {
        assert!(names.contains(&group), "{group} in {names:?}");
    }
    let (_, resources) = rig.call("GET", "/apis/k8s.cloudogu.com/v2", JSON, Value::Null).await;
    let listed: Vec<&str> =
        resources["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    for resource in ["blueprints", "blueprints/status", "dogus", "dogus/status"] {
        assert!(listed.contains(&resource), "{resource} in {listed:?}");
    }
    let (_, v1) = rig.call("GET", "/apis/k8s.cloudogu.com/v1", JSON, Value::Null).await;
    // The project's kinds only: the real control plane also serves the backup operator's Restores.
    // v1 is the Go operator 2.x's Blueprint API (served, deprecated) and the Components' only one.
    let mut listed: Vec<&str> = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .filter(|r| !r.starts_with("restores") && !r.starts_with("debugmodes"))
        .collect();
    listed.sort();
    assert_eq!(listed, ["blueprints", "blueprints/status", "components", "components/status"]);
    let bp = resources["resources"].as_array().unwrap().iter().find(|r| r["name"] == "blueprints").unwrap();
    assert_eq!(bp["shortNames"], json!(["bp"]));
    assert_eq!(bp["namespaced"], true);
    assert_eq!(bp["kind"], "Blueprint");
    let (_, crds) = rig.call("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", JSON, Value::Null).await;
    // The project's CRDs only: other tests on the shared control plane install CRDs of their own, and the
    // control plane has the backup and debug-mode operators' kinds.
    let mut crd_names: Vec<&str> = crds["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .filter(|name| name.ends_with(".k8s.cloudogu.com"))
        .filter(|name| !["restores.k8s.cloudogu.com", "debugmodes.k8s.cloudogu.com"].contains(name))
        .collect();
    crd_names.sort();
    assert_eq!(
        crd_names,
        [
            "blueprintmasks.k8s.cloudogu.com",
            "blueprints.k8s.cloudogu.com",
            "components.k8s.cloudogu.com",
            "dogus.k8s.cloudogu.com"
        ],
        "the project's CRDs are registered from their manifests"
    );
}

/// kubectl asks for tables: the CRD's printer columns are served.
pub async fn tables_use_printer_columns(rig: Rig) {
    rig.call("POST", &rig.dogus(), JSON, dogu("ldap", "1.0.0-1")).await;
    let table = "application/json;as=Table;v=v1;g=meta.k8s.io";
    let (code, body) = rig.send("GET", &rig.dogus(), &[("accept", table)], Value::Null).await;
    assert_eq!(code, 200);
    let table: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["columnDefinitions"][0]["name"], "Name");
    assert_eq!(table["columnDefinitions"][1]["name"], "Spec-Version");
    assert_eq!(table["rows"][0]["cells"][0], "ldap");
    assert_eq!(table["rows"][0]["cells"][1], "1.0.0-1");
}

/// Kubernetes rule: a Secret's stringData is write-only and merged into data (base64).
pub async fn secret_string_data_becomes_data(rig: Rig) {
    let (_, secret) =
        rig.call("POST", &rig.secrets(), JSON, json!({"metadata": {"name": "s"}, "stringData": {"k": "v"}})).await;
    assert_eq!(secret["data"]["k"], "dg==");
    assert_eq!(secret.get("stringData"), None);
    assert_eq!(secret["type"], "Opaque");
}

/// Kubernetes rule: a client asking for metadata only (`as=PartialObjectMetadataList`, kube's
/// `PartialObjectMeta`, what the operator's metadata caches list and watch) gets each object's metadata
/// and nothing of its data, a list of them paged as any list.
pub async fn metadata_only_lists_and_watches_carry_no_data(rig: Rig) {
    use k8s_openapi::api::core::v1::Secret;
    use kube::core::PartialObjectMeta;
    for name in ["a", "b"] {
        let secret =
            json!({"metadata": {"name": name, "annotations": {"note": "kept"}}, "stringData": {"password": "hidden"}});
        assert_eq!(rig.call("POST", &rig.secrets(), JSON, secret).await.0, 201);
    }
    let accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
    let (code, body) = rig.send("GET", &format!("{}?limit=1", rig.secrets()), &[("accept", accept)], Value::Null).await;
    let list: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        (code, &list["kind"], &list["apiVersion"]),
        (200, &json!("PartialObjectMetadataList"), &json!("meta.k8s.io/v1"))
    );
    assert_eq!(list["items"][0]["kind"], "PartialObjectMetadata");
    assert_eq!(list["items"][0]["metadata"]["annotations"]["note"], "kept");
    assert!(list["metadata"]["continue"].as_str().is_some_and(|c| !c.is_empty()), "paged: {list}");
    let text = String::from_utf8_lossy(&body);
    assert!(!text.contains("aGlkZGVu") && !text.contains("hidden"), "no data: {text}");
    // kube's metadata watcher: a reflector of metadata only, filled through it.
    let api = Api::<PartialObjectMeta<Secret>>::namespaced(rig.client.clone(), &rig.namespace);
    let (reader, writer) = reflector::store();
    let mut events = reflector::reflector(writer, watcher(api, watcher::Config::default().page_size(1))).boxed();
    // The store shows the list once it is complete.
    while reader.state().len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(30), events.next()).await.unwrap().unwrap().unwrap();
        if let watcher::Event::InitApply(secret) = event {
            assert_eq!(secret.metadata.annotations.unwrap()["note"], "kept");
        }
    }
    assert_eq!(reader.state().len(), 2);
}

/// kube-runtime's watcher keeps a reflector store in sync (the emulator-only `controls` test adds the
/// relist after a 410).
pub async fn a_reflector_follows_changes(rig: Rig) {
    let api = Api::<ConfigMap>::namespaced(rig.client.clone(), &rig.namespace);
    api.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "a"}})).unwrap())
        .await
        .unwrap();
    let (reader, writer) = reflector::store();
    let (sender, mut applied) = tokio::sync::mpsc::unbounded_channel();
    let stream = reflector::reflector(writer, watcher(api.clone(), watcher::Config::default()))
        .default_backoff()
        .applied_objects();
    let driver = tokio::spawn(stream.for_each(move |object| {
        let _ = sender.send(object.map(|o| o.data));
        async {}
    }));
    reader.wait_until_ready().await.unwrap();
    assert_eq!(reader.len(), 1);
    api.patch("a", &PatchParams::default(), &Patch::Merge(json!({"data": {"x": "1"}}))).await.unwrap();
    let wait = async {
        while let Some(data) = applied.recv().await {
            if data.unwrap().is_some_and(|d| d.get("x").is_some_and(|x| x == "1")) {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), wait).await.expect("the change arrives");
    let key = reflector::ObjectRef::new("a").within(&rig.namespace);
    assert_eq!(reader.get(&key).unwrap().data.as_ref().unwrap()["x"], "1");
    driver.abort();
}

/// What a table row of `kind` shows in the columns every `kubectl get` prints (priority 0).
async fn default_columns(rig: &Rig, uri: &str) -> (Vec<String>, Vec<Vec<Value>>) {
    let table = "application/json;as=Table;v=v1;g=meta.k8s.io";
    let (code, body) = rig.send("GET", uri, &[("accept", table)], Value::Null).await;
    assert_eq!(code, 200);
    let table: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(table["kind"], "Table");
    let definitions = table["columnDefinitions"].as_array().unwrap();
    let shown: Vec<usize> = (0..definitions.len()).filter(|&i| definitions[i]["priority"] == 0).collect();
    let names = shown.iter().map(|&i| definitions[i]["name"].as_str().unwrap().to_owned()).collect();
    let rows = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| shown.iter().map(|&i| row["cells"][i].clone()).collect())
        .collect();
    (names, rows)
}

/// kubectl's columns of the built-in kinds a user looks at: ConfigMaps (data count), Secrets (type,
/// data count), and Events (type, reason, object, message), an events.k8s.io Event read as a core one.
pub async fn tables_of_built_in_kinds(rig: Rig) {
    rig.call("POST", &rig.configmaps(), JSON, json!({"metadata": {"name": "x"}, "data": {"a": "1", "b": "2"}})).await;
    let (names, rows) = default_columns(&rig, &rig.configmaps()).await;
    assert_eq!(names, ["Name", "Data", "Age"]);
    assert_eq!(rows[0][..2], [json!("x"), json!(2)]);
    assert!(rows[0][2].as_str().is_some_and(|age| age.ends_with('s')), "{rows:?}");
    let (names, rows) = default_columns(&rig, &format!("{}/x", rig.configmaps())).await;
    assert_eq!((names.len(), &rows[0][..2]), (3, [json!("x"), json!(2)].as_slice()), "one object, as a table");

    rig.call("POST", &rig.secrets(), JSON, json!({"metadata": {"name": "s"}, "stringData": {"k": "v"}})).await;
    let (names, rows) = default_columns(&rig, &rig.secrets()).await;
    assert_eq!(names, ["Name", "Type", "Data", "Age"]);
    assert_eq!(rows[0][..3], [json!("s"), json!("Opaque"), json!(1)]);

    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e1"},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "k8s.cloudogu.com/blueprint-operator",
        "reportingInstance": "blueprint-operator-0", "action": "Reconcile", "reason": "DogusApplied", "type": "Normal",
        "note": "ldap installed", "regarding": {"apiVersion": "k8s.cloudogu.com/v2", "kind": "Blueprint", "name": "blueprint-ces", "namespace": rig.namespace}});
    let (code, created) =
        rig.call("POST", &format!("/apis/events.k8s.io/v1/namespaces/{}/events", rig.namespace), JSON, event).await;
    assert_eq!(code, 201, "{created}");
    let (names, rows) = default_columns(&rig, &format!("/api/v1/namespaces/{}/events", rig.namespace)).await;
    assert_eq!(names, ["Last Seen", "Type", "Reason", "Object", "Message"]);
    assert_eq!(
        rows[0][1..],
        [json!("Normal"), json!("DogusApplied"), json!("blueprint/blueprint-ces"), json!("ldap installed")]
    );
}

/// A body in Kubernetes' protobuf encoding (the `k8s\0` magic, a `runtime.Unknown` envelope), as
/// kubectl sends built-in kinds.
fn protobuf_body(kind: &str, object: &impl prost::Message) -> Vec<u8> {
    use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
    let envelope = Unknown {
        type_meta: Some(TypeMeta { api_version: Some("v1".into()), kind: Some(kind.into()) }),
        raw: Some(object.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    [b"k8s\0".as_slice(), &prost::Message::encode_to_vec(&envelope)].concat()
}

/// Kubernetes rule: built-in kinds may be written in protobuf (kubectl does so for `create secret`
/// and `create configmap`); the answer is JSON when the client accepts it.
pub async fn protobuf_bodies_create_config_maps_and_secrets(rig: Rig) {
    use k8s_pb::api::core::v1 as pb;
    use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    let metadata = |name: &str| {
        Some(ObjectMeta {
            name: Some(name.into()),
            labels: [("app".to_owned(), "ces".to_owned())].into(),
            ..Default::default()
        })
    };
    let headers = [("content-type", "application/vnd.kubernetes.protobuf"), ("accept", "application/json")];
    let secret = pb::Secret {
        metadata: metadata("s"),
        data: [("k".to_owned(), b"v".to_vec())].into(),
        r#type: Some("Opaque".into()),
        ..Default::default()
    };
    let body = protobuf_body("Secret", &secret);
    let (code, answer) = rig.send_bytes("POST", &rig.secrets(), &headers, body).await;
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(code, 201, "{answer}");
    assert_eq!((&answer["data"], &answer["type"]), (&json!({"k": "dg=="}), &json!("Opaque")));
    assert_eq!(answer["metadata"]["labels"], json!({"app": "ces"}));

    let config_map = pb::ConfigMap {
        metadata: metadata("c"),
        data: [("a".to_owned(), "1".to_owned())].into(),
        ..Default::default()
    };
    let body = protobuf_body("ConfigMap", &config_map);
    let (code, answer) = rig.send_bytes("POST", &rig.configmaps(), &headers, body).await;
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(code, 201, "{answer}");
    assert_eq!(answer["data"], json!({"a": "1"}));
    assert_eq!(answer["kind"], "ConfigMap");
}

/// Kubernetes rule: `/openapi/v3` lists a document per group version, and a custom resource's schema
/// in it is its CRD's, marked with its group, version and kind (what `kubectl explain` reads).
pub async fn openapi_v3_serves_the_crds_schemas(rig: Rig) {
    let (code, root) = rig.call("GET", "/openapi/v3", JSON, Value::Null).await;
    assert_eq!(code, 200);
    let url = root["paths"]["apis/k8s.cloudogu.com/v2"]["serverRelativeURL"].as_str().expect("the group is listed");
    let (code, document) = rig.call("GET", url, JSON, Value::Null).await;
    assert_eq!(code, 200);
    let schemas = document["components"]["schemas"].as_object().unwrap();
    let gvk = json!([{"group": "k8s.cloudogu.com", "version": "v2", "kind": "Blueprint"}]);
    let (name, blueprint) =
        schemas.iter().find(|(_, s)| s["x-kubernetes-group-version-kind"] == gvk).expect("the Blueprint's schema");
    assert_eq!(name, "com.cloudogu.k8s.v2.Blueprint");
    let crd = blueprint_machine::api::blueprint_crd();
    let v2 = crd.spec.versions.iter().find(|v| v.name == "v2").expect("the CRD serves v2");
    let wanted = serde_json::to_value(v2.schema.as_ref().unwrap().open_api_v3_schema.as_ref().unwrap()).unwrap();
    let keys = |schema: &Value| {
        schema["properties"]["spec"]["properties"].as_object().unwrap().keys().cloned().collect::<Vec<_>>()
    };
    assert_eq!(keys(blueprint), keys(&wanted));
    assert_eq!(blueprint["properties"]["spec"]["description"], wanted["properties"]["spec"]["description"]);
}
