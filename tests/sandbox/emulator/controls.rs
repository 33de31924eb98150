//! What needs the emulator's own controls (a real server has no switch for them): injected errors
//! and delays, the request log, dropped watches, and a compaction while a client is away.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::{Value, json};

use blueprint_operator::sandbox::api::Emulator;

use super::{NS, Rig, Server, urlencode};

const JSON: &str = "application/json";

/// A rig on the emulator, and the emulator's controls.
async fn rig() -> (Rig, Emulator) {
    let rig = Rig::on(true).await;
    let Server::Emulator(emulator) = &rig.server else { unreachable!("on the emulator") };
    let emulator = emulator.clone();
    (rig, emulator)
}

/// Fault controls: injected errors for the next N matching requests, delays, and the request log.
#[tokio::test(start_paused = true)]
async fn fault_injection_and_request_log() {
    let (rig, emulator) = rig().await;
    let cm = rig.configmaps();
    emulator.fail_next(Some("POST"), "/configmaps", 2, 500);
    let (first, _) = rig.call("POST", &cm, JSON, json!({"metadata": {"name": "a"}})).await;
    let (second, _) = rig.call("POST", &cm, JSON, json!({"metadata": {"name": "a"}})).await;
    let (third, _) = rig.call("POST", &cm, JSON, json!({"metadata": {"name": "a"}})).await;
    assert_eq!((first, second, third), (500, 500, 201));
    emulator.delay_responses(Duration::from_secs(3));
    let before = tokio::time::Instant::now();
    rig.call("GET", &format!("{cm}/a"), JSON, Value::Null).await;
    assert!(before.elapsed() >= Duration::from_secs(3));
    let log = emulator.requests();
    assert_eq!(log.len(), 4);
    assert_eq!((log[0].status, log[0].verb()), (500, "create"));
    assert_eq!((log[3].status, log[3].verb()), (200, "get"));
}

/// Watches with allowWatchBookmarks get a BOOKMARK every minute while nothing changes; dropped
/// watches end (clients re-watch). Emulator-only: a minute of real time per run is too dear, and
/// when the real server's cache sends its bookmarks is its own affair (in a 12-second watch it sent
/// none); kube-runtime treats bookmarks as optional.
#[tokio::test(start_paused = true)]
async fn bookmarks_every_minute_and_dropped_watches() {
    let (rig, emulator) = rig().await;
    let handle = {
        let uri = format!("{}?watch=true&resourceVersion=1&allowWatchBookmarks=true", rig.configmaps());
        let rig = rig.clone();
        tokio::spawn(async move { rig.watch_lines(&uri).await })
    };
    tokio::time::sleep(Duration::from_secs(130)).await;
    emulator.drop_watches();
    let events = handle.await.unwrap();
    let bookmarks = events.iter().filter(|e| e["type"] == "BOOKMARK").count();
    assert_eq!(bookmarks, 2, "one per minute: {events:?}");
}

/// kube-runtime's watcher relists after a 410 when the history was compacted while its watch was
/// down, and the store gets what it missed.
#[tokio::test(start_paused = true)]
async fn a_reflector_relists_after_the_history_was_compacted() {
    let (rig, emulator) = rig().await;
    let api = Api::<ConfigMap>::namespaced(rig.client.clone(), NS);
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

/// Kubernetes rule: a continue token older than the compacted history is 410 Expired. Emulator-only:
/// the real server (1.37, `ListFromCacheSnapshot`) serves the next page from its watch cache's
/// snapshot for a while after etcd compacted, so a test cannot make it expire a fresh token without
/// waiting out the cache's window; the emulator expires it at once (stricter: clients' relist paths
/// run). The README's list of what the emulator does differently says so.
#[tokio::test(start_paused = true)]
async fn a_continue_token_older_than_the_compacted_history_is_expired() {
    let (rig, _) = rig().await;
    let cm = rig.configmaps();
    for name in ["a", "b", "c"] {
        rig.call("POST", &cm, JSON, json!({"metadata": {"name": name}})).await;
    }
    let (_, page) = rig.call("GET", &format!("{cm}?limit=2"), JSON, Value::Null).await;
    let token = page["metadata"]["continue"].as_str().unwrap().to_owned();
    rig.call("POST", &cm, JSON, json!({"metadata": {"name": "d"}})).await;
    rig.compact().await;
    let (code, body) =
        rig.call("GET", &format!("{cm}?limit=2&continue={}", urlencode(&token)), JSON, Value::Null).await;
    assert_eq!((code, body["reason"].as_str()), (410, Some("Expired")), "{body}");
}

/// Kubernetes rule: a watch from a resourceVersion older than the compacted history is an ERROR event
/// with 410 Expired. Emulator-only: the real server serves watches from its watch cache, which keeps
/// its own window of history past etcd's compaction (and answers an old version with the current
/// objects as ADDED while it has evicted nothing), so a test cannot make it answer 410 on demand.
#[tokio::test(start_paused = true)]
async fn a_watch_from_before_the_compacted_history_is_expired() {
    let (rig, _) = rig().await;
    let cm = rig.configmaps();
    let (_, a) = rig.call("POST", &cm, JSON, json!({"metadata": {"name": "a"}})).await;
    rig.call("POST", &cm, JSON, json!({"metadata": {"name": "b"}})).await;
    let since = a["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    rig.compact().await;
    let events = rig.watch_lines(&format!("{cm}?watch=true&resourceVersion={since}&timeoutSeconds=1")).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "ERROR");
    assert_eq!(events[0]["object"]["code"], 410);
    assert_eq!(events[0]["object"]["reason"], "Expired");
}
