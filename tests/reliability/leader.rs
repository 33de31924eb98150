//! Leader election: the Lease is given up on shutdown (a standby waited 8–15 s on every rollout), and
//! a leader stops writing as soon as its leadership is in doubt (a replaced leader wrote a ConfigMap
//! 2 s after another identity had taken the Lease).

use std::time::Duration;

use blueprint_operator::leader::{self, Leadership, LeaseTiming};
use blueprint_operator::sandbox::api::Emulator;
use serde_json::json;
use tokio::time::{Instant, timeout};
use tower::ServiceBuilder;

const NS: &str = "ecosystem";
const LEASE: &str = "k8s-blueprint-operator-leader";
const TIMING: LeaseTiming = LeaseTiming {
    duration: Duration::from_secs(15),
    renew_deadline: Duration::from_secs(10),
    retry: Duration::from_secs(2),
};

fn candidate(emulator: &Emulator, identity: &str) -> Leadership {
    Leadership::start(emulator.client(NS), NS, LEASE, identity, "0.1.0", TIMING)
}

fn holder(emulator: &Emulator) -> Option<String> {
    emulator
        .get("coordination.k8s.io/v1", "Lease", NS, LEASE)
        .and_then(|lease| lease["spec"]["holderIdentity"].as_str().map(str::to_owned))
}

#[tokio::test(start_paused = true)]
async fn a_standby_takes_over_at_once_when_the_leader_shuts_down() {
    let emulator = Emulator::wall_clock();
    let mut a = candidate(&emulator, "a");
    timeout(Duration::from_secs(5), a.acquired()).await.expect("a leads");
    let mut b = candidate(&emulator, "b");
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert!(a.guard().may_write() && !b.guard().may_write(), "one leader, renewing");
    assert_eq!(holder(&emulator).as_deref(), Some("a"));

    a.release(Duration::from_secs(5)).await;
    assert_eq!(holder(&emulator), None, "released");
    let released = Instant::now();
    timeout(Duration::from_secs(15), b.acquired()).await.expect("b leads");
    assert!(released.elapsed() <= TIMING.retry, "b took over after {:?}, not at its next attempt", released.elapsed());
    assert_eq!(holder(&emulator).as_deref(), Some("b"));
}

#[tokio::test(start_paused = true)]
async fn a_leader_whose_lease_was_taken_stops_writing_within_one_retry_period() {
    let emulator = Emulator::wall_clock();
    let mut a = candidate(&emulator, "a");
    timeout(Duration::from_secs(5), a.acquired()).await.expect("a leads");
    let guard = a.guard();
    let lost = a.lost();
    // Another identity takes the Lease (by hand, or a replica with a different view).
    emulator
        .edit("coordination.k8s.io/v1", "Lease", NS, LEASE, |lease| {
            lease["spec"]["holderIdentity"] = json!("intruder");
            lease["spec"]["renewTime"] = json!("2030-01-01T00:00:00.000000Z");
        })
        .unwrap();
    let taken = Instant::now();
    timeout(Duration::from_secs(30), lost).await.expect("the loss is noticed");
    assert!(taken.elapsed() <= TIMING.retry, "noticed after {:?}", taken.elapsed());
    assert!(!guard.may_write());
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_cannot_renew_stops_writing_before_the_lease_expires_for_others() {
    let emulator = Emulator::wall_clock();
    let mut a = candidate(&emulator, "a");
    timeout(Duration::from_secs(5), a.acquired()).await.expect("a leads");
    let guard = a.guard();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let last_renewal = Instant::now();
    emulator.fail_next(None, "/leases", usize::MAX, 503);
    timeout(Duration::from_secs(30), a.lost()).await.expect("the loss is noticed");
    let stopped = last_renewal.elapsed();
    assert!(!guard.may_write());
    assert!(stopped <= TIMING.renew_deadline, "wrote on for {stopped:?} without renewing");
    assert!(stopped < TIMING.duration, "others may take the Lease {:?} after its last renewal", TIMING.duration);
}

#[tokio::test(start_paused = true)]
async fn the_guarded_client_sends_no_write_while_not_leading_and_reads_on() {
    let emulator = Emulator::wall_clock();
    let mut other = candidate(&emulator, "other");
    timeout(Duration::from_secs(5), other.acquired()).await.expect("the other replica leads");
    let a = candidate(&emulator, "a");
    // Not leading: writes are refused before they are sent, reads go on.
    let service = ServiceBuilder::new()
        .layer(leader::guard_layer(a.guard()))
        .map_request(|request: http::Request<kube::client::Body>| request.map(axum::body::Body::new))
        .service(emulator.router());
    let client = kube::Client::new(service, NS);
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::namespaced(client, NS);
    let before = emulator.requests().len();
    let map = serde_json::from_value(json!({"metadata": {"name": "written"}})).unwrap();
    let refused = api.create(&Default::default(), &map).await;
    assert!(refused.is_err(), "a write went out");
    let sent: Vec<String> = emulator.requests()[before..]
        .iter()
        .filter(|r| r.path.contains("/configmaps"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(sent.is_empty(), "the write reached the API server: {sent:?}");
    assert!(api.list(&Default::default()).await.is_ok(), "reads go on");
    assert!(emulator.get("v1", "ConfigMap", NS, "written").is_none());
}
