//! Shutdown is bounded: SIGTERM once ran on for good when a cache could not be filled (an API server
//! unreachable at start, a list that fails), since the controller waited for reconciles that waited
//! for the caches.

use std::time::Duration;

use crate::sandbox::e2e;

/// More than the operator's own bound on a shutdown, less than the kubelet's default grace period.
const BOUND: Duration = Duration::from_secs(30);

#[tokio::test(start_paused = true)]
async fn a_shutdown_ends_while_a_cache_cannot_be_filled_and_a_reconcile_waits_for_it() {
    let mut sandbox = e2e::fresh_sandbox().await;
    // The Secrets' metadata can never be listed: that cache is never filled.
    sandbox.emulator().fail_next(Some("GET"), "/secrets", usize::MAX, 503);
    sandbox.apply_blueprint(&e2e::default_blueprint()).await.unwrap();
    sandbox.start_controller("0.1.0");
    tokio::time::sleep(Duration::from_secs(20)).await;
    let stopped = tokio::time::timeout(BOUND, sandbox.stop_controller()).await;
    assert!(stopped.is_ok(), "the controller was still running {BOUND:?} after the shutdown began");
}

#[tokio::test(start_paused = true)]
async fn a_shutdown_ends_while_the_api_server_answers_nothing() {
    let mut sandbox = e2e::fresh_sandbox().await;
    sandbox.emulator().fail_next(None, "", usize::MAX, 503);
    sandbox.start_controller("0.1.0");
    tokio::time::sleep(Duration::from_secs(20)).await;
    let stopped = tokio::time::timeout(BOUND, sandbox.stop_controller()).await;
    assert!(stopped.is_ok(), "the controller was still running {BOUND:?} after the shutdown began");
}

/// The finding as it was seen: `run` against an API server that cannot be reached, SIGTERM, and the
/// process ran on (39 minutes, and a second SIGTERM was ignored). Real time, each wait bounded.
#[test]
fn run_ends_on_sigterm_while_the_api_server_cannot_be_reached() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::Instant;

    let folder = tempfile::tempdir().unwrap();
    let kubeconfig = folder.path().join("kubeconfig");
    // Port 9 (discard) on loopback: connections are refused.
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n\
         users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .arg("run")
        .env("KUBECONFIG", &kubeconfig)
        .env("NAMESPACE", "ecosystem")
        .env("LEADER_ELECT", "false")
        .env("WEBHOOK_ENABLED", "false")
        .env("METRICS_BIND_ADDRESS", "127.0.0.1:0")
        .env("HEALTH_PROBE_BIND_ADDRESS", "127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait (bounded) until it tried to list and failed.
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    let started = Instant::now();
    loop {
        let line = receiver.recv_timeout(Duration::from_secs(30)).expect("the operator logs its start");
        if line.contains("ERROR") || started.elapsed() > Duration::from_secs(30) {
            break;
        }
    }
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let signalled = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if signalled.elapsed() > Duration::from_secs(25) {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let status = status.expect("still running 25 s after SIGTERM");
    assert!(status.success(), "{status:?}");
    assert!(signalled.elapsed() < Duration::from_secs(5), "idle, it stops at once: {:?}", signalled.elapsed());
}
