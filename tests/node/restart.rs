//! The node's own parts restarted under the operator: the kubelet and containerd stopped (their
//! containers keep running, as on a node whose runtime is upgraded) and started again. The Pods are
//! Ready again, the operator keeps running, and the Blueprint stays Completed without a transition.

use std::time::Duration;

use blueprint_operator::sandbox::node::Part;

use super::{ECOSYSTEM, condition, ecosystem_completed, json, ready_pods, turn, wait};

#[test]
fn the_pods_return_after_the_kubelet_and_containerd_restart() {
    let (node, _turn) = turn();
    let pods = ecosystem_completed(node);
    let before = json(node, &["get", "blueprint", "blueprint-ces", "-n", ECOSYSTEM]);

    node.stop(Part::Kubelet).unwrap();
    node.stop(Part::Containerd).unwrap();
    node.start(Part::Containerd).unwrap();
    node.start(Part::Kubelet).unwrap();

    // The node reports Ready again, then the Pods (their probes run again).
    wait(Duration::from_secs(120), "the node Ready again", || {
        let node_object = json(node, &["get", "node", blueprint_operator::sandbox::node::NODE_NAME]);
        let ready = node_object["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
        ready.then_some(()).ok_or_else(|| node.log(Part::Kubelet, 5))
    });
    let after = ready_pods(node, ECOSYSTEM, 2);
    assert_eq!(after.len(), 2);
    let unchanged: Vec<&String> = after.iter().filter(|pod| pods.contains(pod)).collect();
    eprintln!("measured: after the restart {} of 2 Pods are the same Pods", unchanged.len());

    let (status, reason, _) = condition(node, ECOSYSTEM, "blueprint-ces", "Completed").unwrap();
    assert_eq!((status.as_str(), reason.as_str()), ("True", "Completed"));
    let after = json(node, &["get", "blueprint", "blueprint-ces", "-n", ECOSYSTEM]);
    let transition = |object: &serde_json::Value| {
        object["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Completed").unwrap()
            ["lastTransitionTime"]
            .clone()
    };
    assert_eq!(transition(&before), transition(&after), "Completed stayed, it did not transition");
}
