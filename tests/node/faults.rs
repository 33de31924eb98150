//! Faults in the middle of an install, in a release of its own: the operator's container killed
//! (SIGKILL through containerd, as the kernel's OOM killer or a crash would end it) right after it
//! created the first Dogu, then its Pod deleted while the dogus are still being installed. The kubelet
//! restarts the container, the Deployment replaces the Pod, the install converges, and no action is
//! done twice: each object the operator writes is created or changed once (the audit log).

use std::collections::BTreeMap;
use std::time::Duration;

use blueprint_operator::sandbox::ecosystem::Behaviour;
use blueprint_operator::sandbox::node::install as chart;

use super::security::container_pid;
use super::{
    apply, completed, ecosystem, fresh_install_v3, installed, json, kubectl, leader, pods, ready_pods, turn, wait,
};

const NAMESPACE: &str = "faults";

#[test]
fn a_killed_container_and_a_deleted_pod_resume_the_install() {
    let (node, _turn) = turn();
    // Dogus take a while to install: both faults land while the operator waits for them (a restarted
    // container and a new Pod are Ready within seconds; a loaded machine gets a wide margin).
    let slow = Behaviour { install: Duration::from_secs(60), ..super::behaviour() };
    ecosystem(node, NAMESPACE, slow, Vec::new());
    // One replica: the container and the Pod that die are the only ones working.
    let pods_before = installed(node, NAMESPACE, &["webhook.enabled=false", "manager.replicas=1"]);
    apply(node, &fresh_install_v3(NAMESPACE));

    let first = wait(Duration::from_secs(120), "the operator's first Dogu", || {
        let dogus = json(node, &["get", "dogus", "-n", NAMESPACE]);
        dogus["items"].as_array().filter(|d| !d.is_empty()).map(|d| d.len()).ok_or("none yet".into())
    });
    let pod = &pods_before[0];
    let pid = container_pid(node, NAMESPACE, pod);
    let status = json(node, &["get", "pod", pod, "-n", NAMESPACE]);
    let id =
        status["status"]["containerStatuses"][0]["containerID"].as_str().unwrap().trim_start_matches("containerd://");
    node.ctr(&["tasks", "kill", "--signal", "SIGKILL", id]).unwrap();
    eprintln!("killed the container of {pod} (pid {pid}) after {first} Dogu(s)");
    wait(Duration::from_secs(120), "the container restarted", || {
        let status = json(node, &["get", "pod", pod, "-n", NAMESPACE]);
        let restarts = status["status"]["containerStatuses"][0]["restartCount"].as_u64().unwrap_or(0);
        (restarts >= 1 && super::ready(&status)).then_some(()).ok_or(format!("restarts {restarts}"))
    });
    let (completed_yet, ..) = super::condition(node, NAMESPACE, "blueprint-ces", "Completed").unwrap_or_default();
    assert_ne!(completed_yet, "True", "the install is still under way when the Pod is deleted");
    kubectl(node, &["delete", "pod", pod, "-n", NAMESPACE, "--wait=false"]);
    eprintln!("deleted {pod} while the dogus were installing");
    let replaced = ready_pods(node, NAMESPACE, 1);
    assert_ne!(&replaced[0], pod);
    completed(node, NAMESPACE, "blueprint-ces", Duration::from_secs(300));
    assert!(leader(node, NAMESPACE).is_some_and(|holder| holder == replaced[0]));
    assert_eq!(pods(node, NAMESPACE).len(), 1);

    // Every object the operator changed, counted by (verb, resource, name): each write once.
    let requests = node.plane.audited(&format!("system:serviceaccount:{NAMESPACE}:{}", chart::SERVICE_ACCOUNT));
    let mut writes: BTreeMap<String, usize> = BTreeMap::new();
    for request in requests.iter().filter(|r| r.is_write() && (200..300).contains(&r.code())) {
        let resource = request.resource();
        // The Lease, events and the Blueprint's status are the operator's own bookkeeping.
        if ["leases", "events", "blueprints/status"].contains(&resource.as_str()) {
            continue;
        }
        let name = request.object_ref.as_ref().map(|o| o.name.clone()).unwrap_or_default();
        *writes.entry(format!("{} {resource}/{name}", request.verb)).or_default() += 1;
    }
    let twice: Vec<_> = writes.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "written more than once: {twice:?}\nall: {writes:#?}");
    let refused: Vec<String> = requests
        .iter()
        .filter(|r| {
            r.is_write() && r.code() == 409 && !["leases", "blueprints/status"].contains(&r.resource().as_str())
        })
        .map(|r| format!("{} {}", r.verb, r.request_uri))
        .collect();
    assert!(refused.is_empty(), "conflicting writes (an action repeated): {refused:?}");
    assert!(writes.keys().any(|w| w.starts_with("create dogus/")), "{writes:#?}");
}
