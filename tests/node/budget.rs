//! The chart's PodDisruptionBudget through the Eviction API (what `kubectl drain` uses): with two
//! replicas one may be evicted; while it is gone, evicting the other is refused (429), so a drain
//! never leaves the operator without a replica; the Deployment replaces the evicted one.

use std::time::Duration;

use super::{ECOSYSTEM, ecosystem_completed, json, ready_pods, turn, wait};

/// Asks the Eviction API to evict `pod`; kubectl's answer or its error.
fn evict(node: &blueprint_operator::sandbox::node::Node, pod: &str) -> Result<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("eviction.json");
    let eviction = serde_json::json!({
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod, "namespace": ECOSYSTEM},
    });
    std::fs::write(&file, eviction.to_string()).unwrap();
    let path = format!("/api/v1/namespaces/{ECOSYSTEM}/pods/{pod}/eviction");
    node.kubectl(&["create", "--raw", &path, "-f", file.to_str().unwrap()])
}

#[test]
fn two_replicas_allow_one_eviction_and_refuse_the_last() {
    let (node, _turn) = turn();
    let pods = ecosystem_completed(node);
    assert_eq!(pods.len(), 2, "the chart's default: two replicas");
    // The budget's controller has counted both as healthy.
    wait(Duration::from_secs(60), "the budget allows one disruption", || {
        let budget = json(node, &["get", "poddisruptionbudget", "k8s-blueprint-operator", "-n", ECOSYSTEM]);
        (budget["status"]["disruptionsAllowed"] == 1).then_some(()).ok_or(budget["status"].to_string())
    });

    evict(node, &pods[0]).unwrap_or_else(|e| panic!("the first eviction is allowed: {e}"));
    let refused = evict(node, &pods[1]).expect_err("the last replica must not be evicted");
    assert!(
        refused.contains("TooManyRequests") || refused.contains("disruption budget"),
        "refused by the budget (429): {refused}"
    );

    // The evicted replica is replaced; the other one was never touched.
    let after = ready_pods(node, ECOSYSTEM, 2);
    assert!(after.contains(&pods[1]), "{:?} kept {}", after, pods[1]);
    assert!(!after.contains(&pods[0]), "{:?} replaced {}", after, pods[0]);
}
