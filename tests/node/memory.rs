//! The operator's memory in its Pod, under the chart's limit, read from the container's own memory
//! cgroup: a blueprint of 30 dogus, then of 1,000 dogus with 5,000 dogu config keys and 200 global
//! keys. No OOM kill, no restart; the peak is reported next to the limit (and the time from the
//! container's start to Ready).

use std::time::Duration;

use blueprint_operator::sandbox::ecosystem::Behaviour;
use serde_json::{Value, json};

use super::security::container_pid;
use super::{apply, completed, ecosystem, installed, turn};

const NAMESPACE: &str = "scale";
const DOGUS: usize = 1_000;
const KEYS_PER_DOGU: usize = 5;
const GLOBAL_KEYS: usize = 200;

/// A blueprint of the first `dogus` generated dogus, with their config keys and the global keys.
fn blueprint(dogus: usize) -> String {
    let entries: Vec<Value> =
        (0..dogus).map(|i| json!({"name": format!("official/dogu{i:04}"), "version": "1.0.0-1"})).collect();
    let config: serde_json::Map<String, Value> = (0..dogus)
        .map(|i| {
            let keys: Vec<Value> = (0..KEYS_PER_DOGU)
                .map(|k| json!({"key": format!("section/key{k}"), "value": format!("value {k} of dogu {i}")}))
                .collect();
            (format!("dogu{i:04}"), Value::from(keys))
        })
        .collect();
    let global: Vec<Value> =
        (0..GLOBAL_KEYS).map(|k| json!({"key": format!("global/key{k:03}"), "value": format!("global {k}")})).collect();
    json!({
        "apiVersion": "k8s.cloudogu.com/v3",
        "kind": "Blueprint",
        "metadata": {"name": "scale", "namespace": NAMESPACE},
        "spec": {
            "displayName": "scale",
            "blueprint": {"dogus": entries, "config": {"dogus": config, "global": global}},
        },
    })
    .to_string()
}

/// A value of the container's memory cgroup (v1).
fn memory(pid: u32, file: &str) -> u64 {
    let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let path = cgroups
        .lines()
        .find_map(|line| line.split_once(":memory:").map(|(_, path)| path.to_owned()))
        .unwrap_or_else(|| panic!("no memory cgroup:\n{cgroups}"));
    let text = std::fs::read_to_string(format!("/sys/fs/cgroup/memory{path}/{file}")).unwrap();
    text.trim().parse().unwrap()
}

#[test]
fn a_thousand_dogus_stay_under_the_memory_limit() {
    let (node, _turn) = turn();
    let descriptors = (0..DOGUS)
        .map(|i| json!({"Name": format!("official/dogu{i:04}"), "Version": "1.0.0-1", "Dependencies": []}).to_string())
        .collect();
    let instant =
        Behaviour { install: Duration::ZERO, upgrade: Duration::ZERO, restart: Duration::ZERO, ..Behaviour::default() };
    ecosystem(node, NAMESPACE, instant, descriptors);
    let pods = installed(node, NAMESPACE, &["webhook.enabled=false", "manager.replicas=1"]);
    let pod = &pods[0];
    let status = super::json(node, &["get", "pod", pod, "-n", NAMESPACE]);
    let started = status["status"]["containerStatuses"][0]["state"]["running"]["startedAt"].clone();
    let ready = status["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Ready").unwrap()
        ["lastTransitionTime"]
        .clone();
    eprintln!("measured: the container started at {started}, Ready at {ready}");

    let pid = container_pid(node, NAMESPACE, pod);
    let limit = memory(pid, "memory.limit_in_bytes");
    assert_eq!(limit, 64 * 1024 * 1024, "the chart's limit, 64Mi");
    for dogus in [30, DOGUS] {
        apply(node, &blueprint(dogus));
        completed(node, NAMESPACE, "scale", Duration::from_secs(600));
        let peak = memory(pid, "memory.max_usage_in_bytes");
        let now = memory(pid, "memory.usage_in_bytes");
        let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
        eprintln!(
            "measured: {dogus} dogus: peak {:.1} MiB, now {:.1} MiB, of the {:.0} MiB limit",
            mib(peak),
            mib(now),
            mib(limit)
        );
        assert!(peak * 10 < limit * 9, "the peak {:.1} MiB leaves less than 10% of the limit", mib(peak));
    }
    let status = super::json(node, &["get", "pod", pod, "-n", NAMESPACE]);
    let container = &status["status"]["containerStatuses"][0];
    assert_eq!(container["restartCount"], 0, "no restart (no OOM kill): {container}");
    assert_eq!(container_pid(node, NAMESPACE, pod), pid, "the same process throughout");
    assert_eq!(memory(pid, "memory.failcnt"), 0, "the limit was never hit");
}
