//! Issue 27, finding 4: Secret values sat in the operator's memory through annotations. A Secret
//! made by `kubectl apply` carries its data in `kubectl.kubernetes.io/last-applied-configuration`;
//! 150 unrelated Secrets with ~175 KB of it (and as much data) took the operator's start-up peak to
//! 85.4 MB, and it was OOM-killed under 64 MiB. What was held: every Secret's and every ConfigMap's
//! metadata is watched (to notice changes of referenced ones); kube asks for metadata only
//! (`as=PartialObjectMetadata`, no data crosses the wire), but the list came in pages of 500 objects,
//! each page held whole while it was decoded, and the metadata cache then kept every annotation, the
//! last-applied copies of the Secrets' data included, for the life of the process. Now the metadata
//! caches keep names and versions only (the config caches the labels and annotation the operator
//! reads), and the lists come 10 objects a page.
//!
//! Measured on the operator's binary (`run`, as the ServiceAccount of deploy/rbac.yaml) against the
//! real API server, its peak resident size (`VmHWM`) once its caches are synced: in a namespace with
//! 150 such Secrets it is that with 50 (flat: their number does not count), and at most a page of
//! them above that in a namespace without. (Its resident size afterwards says little: the allocator
//! keeps freed pages it may reuse.)

use std::process::Command;
use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

use super::control_plane;
use super::rbac::{SERVICE_ACCOUNT, role_in};
use crate::support::process::{Killed, Ports, start_until};

const APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// How much the big objects may add to the operator's peak: a page of them (10) of each of the two
/// metadata lists, held while it is read and decoded (kube holds a response twice, then decodes it),
/// about 4 MB of JSON. Measured (debug build, 2026-12-05, 4 runs): 14–20 MiB above the peak without
/// them; held for their life, the 150 Secrets' annotations alone would add 33 MiB.
const PAGE_KIB: u64 = 24 * 1024;
/// How much three times as many of them may add: their number does not count (the memory is flat).
/// Whether one more page is in flight at the peak depends on timing: measured 50 → 150 added -0.3 to
/// 6 MiB; held for their life, the 100 more would add 22 MiB.
const FLAT_KIB: u64 = 10 * 1024;

/// `count` Secrets and a third as many ConfigMaps, each as `kubectl apply` leaves it: `size` bytes of
/// data and their copy in the last-applied annotation.
async fn fill(namespace: &str, count: usize, size: usize) {
    let client = control_plane::shared().client(namespace).await;
    let (secrets, config_maps) =
        (Api::<Secret>::namespaced(client.clone(), namespace), Api::<ConfigMap>::namespaced(client, namespace));
    let value: String = (0..size).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let encoded = base64::engine::general_purpose::STANDARD.encode(&value);
    for index in 0..count {
        let name = format!("app-credentials-{index}");
        let applied = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
                             "data": {"password": encoded}});
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "annotations": {APPLIED: applied.to_string()}}, "data": {"password": encoded}});
        secrets.create(&PostParams::default(), &serde_json::from_value(secret).unwrap()).await.unwrap();
        if index % 3 == 0 {
            let name = format!("app-settings-{index}");
            let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"settings": value}});
            let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "annotations": {APPLIED: applied.to_string()}}, "data": {"settings": value}});
            config_maps.create(&PostParams::default(), &serde_json::from_value(config_map).unwrap()).await.unwrap();
        }
    }
}

/// The operator, once its caches are synced in `namespace`.
struct Synced {
    operator: Killed,
    _dir: tempfile::TempDir,
}

impl Synced {
    async fn start(namespace: &str) -> Synced {
        let plane = control_plane::shared();
        let token = role_in(namespace, &[]).remove(0);
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(&kubeconfig, plane.kubeconfig_text(SERVICE_ACCOUNT, &token, namespace)).unwrap();
        let command = |ports: Ports| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"));
            command
                .arg("run")
                .env("KUBECONFIG", &kubeconfig)
                .env("NAMESPACE", namespace)
                .env("LEADER_ELECT", "false")
                .env("WEBHOOK_ENABLED", "false")
                .env("LOG_LEVEL", "warn")
                .env("METRICS_BIND_ADDRESS", format!("127.0.0.1:{}", ports.metrics))
                .env("HEALTH_PROBE_BIND_ADDRESS", format!("127.0.0.1:{}", ports.health));
            command
        };
        let synced = |ports: Ports| async move { ready(ports.health).await.then_some(()) };
        let (replica, ()) = start_until(command, Duration::from_secs(120), synced).await;
        let operator = replica.process;
        Synced { operator, _dir: dir }
    }

    /// `VmHWM` (the peak) or `VmRSS` (now), in KiB.
    fn memory(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.operator.0.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with(field)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }
}

async fn ready(port: u16) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut stream) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else { return false };
    if stream.write_all(b"GET /readyz HTTP/1.0\r\nHost: operator\r\n\r\n").await.is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer).await;
    answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_last_applied_annotations_leave_the_operators_memory_flat() {
    let plane = control_plane::shared();
    let namespaces = [plane.namespace("caches-none"), plane.namespace("caches-50"), plane.namespace("caches-150")];
    fill(&namespaces[1], 50, 175 * 1024).await;
    fill(&namespaces[2], 150, 175 * 1024).await;
    let mut peaks = Vec::new();
    for namespace in &namespaces {
        let synced = Synced::start(namespace).await;
        peaks.push(synced.memory("VmHWM:"));
    }
    let [none, fifty, hundred_fifty] = peaks[..] else { unreachable!() };
    println!(
        "caches: peak {none} KiB without big objects, {fifty} KiB with 50 Secrets (and 17 ConfigMaps) of 175 KiB, \
         {hundred_fifty} KiB with 150 (and 50)"
    );
    assert!(
        hundred_fifty <= fifty + FLAT_KIB,
        "three times as many big annotations took the peak from {fifty} KiB to {hundred_fifty} KiB"
    );
    assert!(
        hundred_fifty <= none + PAGE_KIB,
        "the big annotations took the peak from {none} KiB to {hundred_fifty} KiB (allowed: {PAGE_KIB} KiB more)"
    );
}
