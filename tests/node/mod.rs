//! The operator as users run it: `helm install` of the chart on a real one-node cluster
//! (src/sandbox/node: kube-apiserver, kube-controller-manager, kube-scheduler, the kubelet and
//! kube-proxy of the pinned release, containerd and runc), the image `make image` builds, running as a
//! Pod. Each scenario asserts from the cluster's own state (Pods, Leases, the Blueprint's status),
//! the API server's audit log and the container's `/proc` and cgroup. When the node cannot start on
//! this machine, every scenario fails with the reason in its first line.
//!
//! The scenarios share the node and run one at a time: the chart's cluster-wide objects (the
//! Blueprint CRD's webhook, its ClusterRole) belong to one release.

mod budget;
mod cluster_up;
mod faults;
mod install;
mod memory;
mod migration;
mod restart;
mod rollout;
mod security;

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use blueprint_operator::sandbox::ecosystem::Behaviour;
use blueprint_operator::sandbox::node::{self, Node, install as chart};
use serde_json::Value;

/// The namespace of the release every scenario but the isolated ones uses.
pub const ECOSYSTEM: &str = "ecosystem";

/// The node, and this scenario's turn on it.
pub fn turn() -> (&'static Node, MutexGuard<'static, ()>) {
    static TURN: Mutex<()> = Mutex::new(());
    // A scenario that failed leaves the node as it is; the next one starts from its own checks.
    let guard = TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    (node::shared(), guard)
}

/// The seeded ecosystem of `namespace` with its simulated dogu and component operators, once per
/// namespace; they run on a runtime of their own for as long as the test process, like the node.
pub fn ecosystem(node: &'static Node, namespace: &'static str, behaviour: Behaviour, descriptors: Vec<String>) {
    seed(node, namespace, behaviour, descriptors, None);
}

/// The same with the objects of `cluster` (an example's cluster.yaml): an ecosystem installed before.
pub fn seeded_ecosystem(node: &'static Node, namespace: &'static str, behaviour: Behaviour, cluster: &str) {
    seed(node, namespace, behaviour, Vec::new(), Some(cluster.to_owned()));
}

fn seed(
    node: &'static Node,
    namespace: &'static str,
    behaviour: Behaviour,
    descriptors: Vec<String>,
    cluster: Option<String>,
) {
    static SEEDED: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut seeded = SEEDED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !seeded.get_or_insert_with(HashSet::new).insert(namespace) {
        return;
    }
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name(format!("ecosystem-{namespace}"))
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
            runtime.block_on(async move {
                let cluster = cluster.as_deref().unwrap_or(blueprint_operator::sandbox::seed::DEFAULT_CLUSTER);
                match chart::seeded_ecosystem(node, namespace, behaviour, cluster).await {
                    Ok(sandbox) => {
                        for descriptor in &descriptors {
                            sandbox.registry.add(descriptor).expect("a valid descriptor");
                        }
                        let _ = sender.send(Ok(()));
                        std::future::pending::<()>().await;
                        drop(sandbox);
                    }
                    Err(problem) => {
                        let _ = sender.send(Err(problem));
                    }
                }
            });
        })
        .unwrap();
    receiver.recv().unwrap().unwrap_or_else(|problem| panic!("cannot seed {namespace}: {problem}"));
}

/// The simulated operators as the sandbox's command runs them: an install takes a moment.
pub fn behaviour() -> Behaviour {
    Behaviour {
        install: Duration::from_millis(1500),
        upgrade: Duration::from_millis(1000),
        restart: Duration::from_millis(500),
        ..Behaviour::default()
    }
}

/// kubectl as the admin, which must succeed.
pub fn kubectl(node: &Node, args: &[&str]) -> String {
    node.kubectl(args).unwrap_or_else(|problem| panic!("{problem}"))
}

/// kubectl's JSON output.
pub fn json(node: &Node, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.extend(["-o", "json"]);
    serde_json::from_str(&kubectl(node, &args)).unwrap()
}

/// helm as the admin in `namespace`, which must succeed.
pub fn helm(node: &Node, namespace: &str, args: &[&str]) -> String {
    chart::helm(node, namespace, args).unwrap_or_else(|problem| panic!("{problem}"))
}

/// The shell a reader of the docs types in, on the node: this build's `blueprint-operator`, the pinned
/// kubectl and helm first in `PATH`, the node's admin kubeconfig, helm's folders of the node's.
pub fn shell_env(node: &Node) -> Vec<(String, String)> {
    let binary = std::path::PathBuf::from(env!("CARGO_BIN_EXE_blueprint-operator"));
    let path = format!(
        "{}:{}:{}:{}",
        binary.parent().unwrap().display(),
        chart::helm_binary().parent().unwrap().display(),
        node.plane.bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let home = node.dir.join("helm");
    [
        ("PATH", path),
        ("KUBECONFIG", node.plane.kubeconfig.display().to_string()),
        ("HELM_CACHE_HOME", home.join("cache").display().to_string()),
        ("HELM_CONFIG_HOME", home.join("config").display().to_string()),
        ("HELM_DATA_HOME", home.join("data").display().to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// Polls `check` until it gives a value, at most `limit`; panics naming `what` and the last answer.
pub fn wait<T>(limit: Duration, what: &str, mut check: impl FnMut() -> Result<T, String>) -> T {
    let started = Instant::now();
    loop {
        match check() {
            Ok(value) => return value,
            Err(last) if started.elapsed() > limit => panic!("{what}: not within {limit:?}; last: {last}"),
            Err(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    }
}

/// The chart's Pods in `namespace`.
pub fn pods(node: &Node, namespace: &str) -> Vec<Value> {
    json(node, &["get", "pods", "-n", namespace, "-l", chart::POD_SELECTOR])["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Whether a Pod is Ready (its readiness probe passes) and not being deleted.
pub fn ready(pod: &Value) -> bool {
    pod["metadata"]["deletionTimestamp"].is_null()
        && pod["status"]["conditions"]
            .as_array()
            .is_some_and(|conditions| conditions.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

pub fn name(object: &Value) -> String {
    object["metadata"]["name"].as_str().unwrap_or_default().to_owned()
}

/// Waits until `replicas` Pods of the chart are Ready and no other is left; their names.
pub fn ready_pods(node: &Node, namespace: &str, replicas: usize) -> Vec<String> {
    wait(Duration::from_secs(240), &format!("{replicas} Ready Pods in {namespace}"), || {
        let pods = pods(node, namespace);
        let ready: Vec<String> = pods.iter().filter(|p| ready(p)).map(name).collect();
        if ready.len() == replicas && pods.len() == replicas {
            Ok(ready)
        } else {
            Err(pods.iter().map(|p| format!("{} {}", name(p), p["status"]["phase"])).collect::<Vec<_>>().join(", "))
        }
    })
}

/// The holder of the leader Lease in `namespace`.
pub fn leader(node: &Node, namespace: &str) -> Option<String> {
    let lease = node.kubectl(&["get", "lease", chart::LEASE, "-n", namespace, "-o", "json"]).ok()?;
    let lease: Value = serde_json::from_str(&lease).ok()?;
    lease["spec"]["holderIdentity"].as_str().map(str::to_owned)
}

/// A Blueprint's condition: (status, reason, message).
pub fn condition(node: &Node, namespace: &str, blueprint: &str, kind: &str) -> Option<(String, String, String)> {
    let object: Value =
        serde_json::from_str(&node.kubectl(&["get", "blueprint", blueprint, "-n", namespace, "-o", "json"]).ok()?)
            .ok()?;
    let found = object["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == kind)?.clone();
    let text = |field: &str| found[field].as_str().unwrap_or_default().to_owned();
    Some((text("status"), text("reason"), text("message")))
}

/// Waits until the Blueprint is Completed for its current generation.
pub fn completed(node: &Node, namespace: &str, blueprint: &str, limit: Duration) {
    wait(limit, &format!("Blueprint {namespace}/{blueprint} Completed"), || {
        let object = json(node, &["get", "blueprint", blueprint, "-n", namespace]);
        let current = object["metadata"]["generation"] == object["status"]["observedGeneration"];
        match condition(node, namespace, blueprint, "Completed") {
            Some((status, ..)) if status == "True" && current => Ok(()),
            other => Err(format!(
                "{other:?}, generation {} observed {}",
                object["metadata"]["generation"], object["status"]["observedGeneration"]
            )),
        }
    })
}

/// Applies a manifest (YAML) with kubectl.
pub fn apply(node: &Node, manifest: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("manifest.yaml");
    std::fs::write(&file, manifest).unwrap();
    kubectl(node, &["apply", "--server-side", "--force-conflicts", "-f", file.to_str().unwrap()]);
}

/// The fresh-install example in `namespace`.
pub fn fresh_install(namespace: &str) -> String {
    std::fs::read_to_string(crate::crd::repository("examples/fresh-install/blueprint.yaml"))
        .unwrap()
        .replace("namespace: ecosystem", &format!("namespace: {namespace}"))
}

/// The fresh-install example in `namespace`, as API v3 (`convert`): it needs no conversion webhook, so
/// a release of its own needs none either.
pub fn fresh_install_v3(namespace: &str) -> String {
    use std::io::Write;
    let mut convert = std::process::Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .args(["convert", "-f", "-", "--to", "v3"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    convert.stdin.take().unwrap().write_all(fresh_install(namespace).as_bytes()).unwrap();
    let output = convert.wait_with_output().unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap()
}

/// Waits until the API server converts a v2 Blueprint through the webhook's Service (the Pods are
/// Ready a moment before kube-proxy routes the Service to them): a server-side dry run of a create
/// converts it to the stored v3.
pub fn converting(node: &Node, namespace: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("probe.yaml");
    let probe = fresh_install(namespace).replace("name: blueprint-ces", "name: conversion-probe");
    std::fs::write(&file, probe).unwrap();
    wait(Duration::from_secs(60), "the webhook converting through its Service", || {
        node.kubectl(&["create", "--dry-run=server", "-o", "name", "-f", file.to_str().unwrap()])
    });
}

/// The release of `namespace` installed (when it is not) with these values, its Pods Ready.
pub fn installed(node: &Node, namespace: &str, values: &[&str]) -> Vec<String> {
    releases_elsewhere_gone(node, namespace);
    if chart::helm(node, namespace, &["status", chart::RELEASE]).is_err() {
        let chart_dir = chart::chart();
        let mut args = vec!["install", chart::RELEASE, chart_dir.to_str().unwrap()];
        for value in values {
            args.extend(["--set", value]);
        }
        helm(node, namespace, &args);
    }
    let replicas = values.iter().find_map(|v| v.strip_prefix("manager.replicas=")).map_or(2, |n| n.parse().unwrap());
    ready_pods(node, namespace, replicas)
}

/// This operator's release and the Go operator's CRD release gone from every namespace but `keep`: a
/// scenario that failed half-way leaves its release, whose cluster-scoped objects (the ClusterRoles)
/// would refuse the next scenario's install in another namespace.
pub fn releases_elsewhere_gone(node: &Node, keep: &str) {
    let Ok(list) = chart::helm(node, ECOSYSTEM, &["list", "--all-namespaces", "-o", "json"]) else { return };
    let releases: Value = serde_json::from_str(&list).unwrap_or_default();
    for release in releases.as_array().into_iter().flatten() {
        let name = release["name"].as_str().unwrap_or_default();
        let namespace = release["namespace"].as_str().unwrap_or_default();
        if namespace != keep && [chart::RELEASE, "k8s-blueprint-operator-crd"].contains(&name) {
            let _ = chart::helm(node, namespace, &["uninstall", name, "--wait"]);
        }
    }
}

/// The release in `ecosystem` installed with its defaults, and the fresh-install example completed.
pub fn ecosystem_completed(node: &'static Node) -> Vec<String> {
    ecosystem(node, ECOSYSTEM, behaviour(), Vec::new());
    let pods = installed(node, ECOSYSTEM, &[]);
    converting(node, ECOSYSTEM);
    if node.kubectl(&["get", "blueprint", "blueprint-ces", "-n", ECOSYSTEM]).is_err() {
        apply(node, &fresh_install(ECOSYSTEM));
    }
    completed(node, ECOSYSTEM, "blueprint-ces", Duration::from_secs(180));
    pods
}
