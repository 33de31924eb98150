//! Rolling updates of the Deployment: `helm upgrade` to a new image tag, and `kubectl rollout
//! restart`. A change of the Blueprint made while the Pods are replaced is reconciled (no reconcile is
//! lost); the Lease passes to a new Pod; from the moment the new leader took the Lease, no old Pod
//! writes anything (the audit log).

use std::time::Duration;

use blueprint_operator::sandbox::control_plane::Audited;
use blueprint_operator::sandbox::node::{self, Node, install as chart};

use super::{ECOSYSTEM, apply, completed, ecosystem_completed, helm, kubectl, leader, ready_pods, turn, wait};

/// Replaces the Pods with `replace`, changing the Blueprint meanwhile; checks the handover.
fn handover(node: &Node, key: &str, replace: impl FnOnce()) {
    let old = ready_pods(node, ECOSYSTEM, 2);
    let old_leader = wait(Duration::from_secs(60), "a leader", || leader(node, ECOSYSTEM).ok_or("none".into()));
    replace();
    // While the Pods are replaced: a new global config key.
    let blueprint = super::fresh_install(ECOSYSTEM).replace(
        "      global:\n",
        &format!("      global:\n        - key: rollout/{key}\n          value: \"during the rollout\"\n"),
    );
    assert!(blueprint.contains(&format!("rollout/{key}")), "the example has global config");
    apply(node, &blueprint);
    kubectl(
        node,
        &["rollout", "status", &format!("deployment/{}", chart::DEPLOYMENT), "-n", ECOSYSTEM, "--timeout=240s"],
    );
    let new = ready_pods(node, ECOSYSTEM, 2);
    assert!(new.iter().all(|pod| !old.contains(pod)), "every Pod replaced: {old:?} → {new:?}");
    completed(node, ECOSYSTEM, "blueprint-ces", Duration::from_secs(120));
    let global = super::json(node, &["get", "configmap", "global-config", "-n", ECOSYSTEM]);
    assert!(global["data"]["config.yaml"].as_str().unwrap_or_default().contains(key), "{global}");

    let new_leader = wait(Duration::from_secs(60), "a new leader", || {
        leader(node, ECOSYSTEM).filter(|holder| new.contains(holder)).ok_or("an old Pod".into())
    });
    // The new leader's first write of the Lease that the API server accepted; nothing written by an old
    // Pod after it. Refused writes change nothing: while the Pods are replaced, the old standby may win
    // the released Lease against a new Pod (whose attempt is refused with 409) and lead until it is
    // replaced in turn; and a candidate that saw the Lease free may be refused once another took it.
    let requests = node.plane.audited(&format!("system:serviceaccount:{ECOSYSTEM}:{}", chart::SERVICE_ACCOUNT));
    let accepted = |r: &&Audited| r.is_write() && (200..300).contains(&r.code());
    let taken = requests
        .iter()
        .filter(accepted)
        .filter(|r| r.pod() == Some(new_leader.as_str()) && r.resource() == "leases")
        .map(|r| r.request_received_timestamp.clone())
        .min()
        .expect("the new leader wrote the Lease");
    let late: Vec<String> = requests
        .iter()
        .filter(accepted)
        .filter(|r| r.pod().is_some_and(|pod| old.iter().any(|o| o == pod)))
        .filter(|r| r.request_received_timestamp > taken)
        .map(|r| {
            let (at, pod, code) = (&r.request_received_timestamp, r.pod().unwrap(), r.code());
            format!("{at} {pod} {} {} -> {code}", r.verb, r.request_uri)
        })
        .collect();
    assert!(
        late.is_empty(),
        "old Pods wrote after {new_leader} took the Lease at {taken} (from {old_leader}): {late:#?}"
    );
}

#[test]
fn an_upgrade_and_a_restart_hand_the_lease_over_without_losing_a_reconcile() {
    let (node, _turn) = turn();
    ecosystem_completed(node);
    // A new tag of the same image: the Deployment's Pod template changes, as with a new release.
    let tag = format!("{}-next", env!("CARGO_PKG_VERSION"));
    let image = node::operator_image_name();
    let next = format!("{}:{tag}", image.rsplit_once(':').unwrap().0);
    let _ = node.ctr(&["images", "rm", &next]);
    node.ctr(&["images", "tag", &image, &next]).unwrap();
    handover(node, "upgrade", || {
        let chart_dir = chart::chart();
        helm(
            node,
            ECOSYSTEM,
            &[
                "upgrade",
                chart::RELEASE,
                chart_dir.to_str().unwrap(),
                "--reuse-values",
                "--set",
                &format!("manager.image.tag={tag}"),
            ],
        );
    });
    handover(node, "restart", || {
        kubectl(node, &["rollout", "restart", &format!("deployment/{}", chart::DEPLOYMENT), "-n", ECOSYSTEM]);
    });
}
