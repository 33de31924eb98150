//! Leader election, for real: two replicas of `run` (the operator's binary, each with a
//! ServiceAccount of its own bound to the operator's Role) against one API server. Only the Lease
//! holder writes; killing it (SIGKILL: no release) hands the Lease over and the install still
//! converges; a leader that gets SIGTERM gives the Lease up, and a waiting replica takes it at once.
//! Run as a phase of the RBAC test, whose audit log shows who sent what.

use std::process::{Command, Stdio};
use std::time::Duration;

use blueprint_machine::naming::LEASE;
use blueprint_operator::sandbox::ecosystem::Behaviour;
use blueprint_operator::sandbox::seed;
use blueprint_operator::sandbox::session::REGISTRY_CREDENTIALS;

use super::control_plane;
use super::rbac::{SERVICE_ACCOUNT, role_in, user_of};
use crate::sandbox::e2e::{Scene, completed, conditions, default_blueprint};
use crate::support::process::{Killed, free_port};

const STANDBY: &str = "k8s-blueprint-operator-standby";

/// Writes by `user` other than on the Lease (the holder's renewals, a candidate's attempts).
fn writes_of(user: &str) -> Vec<String> {
    control_plane::shared()
        .audited(user)
        .into_iter()
        .filter(|r| matches!(r.verb.as_str(), "create" | "update" | "patch" | "delete"))
        .filter(|r| r.resource() != "leases" && r.code() < 400)
        .map(|r| format!("{} {}", r.verb, r.request_uri))
        .collect()
}

/// The scenario in `namespace`; the two users (ServiceAccounts) it ran as.
pub async fn two_replicas_hand_over(namespace: &str) -> Vec<String> {
    let plane = control_plane::shared();
    let tokens = role_in(namespace, &[STANDBY]);
    // Slow installs (3 s on a real server): the leader is killed while it installs.
    let behaviour = Behaviour { install: Duration::from_secs(60), ..Behaviour::default() };
    let mut scene = Scene::on_kube_apiserver(namespace.to_owned(), None, behaviour, seed::DEFAULT_CLUSTER).await;
    scene.start_ecosystem();
    let dir = tempfile::tempdir().unwrap();
    let registry = scene.registry_endpoint();
    // Replicas log warnings only, to the test's output; `logged` (a file) gets a replica's whole log.
    let replica_logging = |identity: &str, account: &str, token: &str, logged: Option<&std::path::Path>| {
        let kubeconfig = dir.path().join(format!("{identity}.kubeconfig"));
        std::fs::write(&kubeconfig, plane.kubeconfig_text(account, token, namespace)).unwrap();
        let (level, stdout) = match logged {
            Some(file) => ("info", Stdio::from(std::fs::File::create(file).unwrap())),
            None => ("warn", Stdio::null()),
        };
        Killed(
            Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
                .arg("run")
                .env("LOG_FORMAT", "json")
                .env("KUBECONFIG", &kubeconfig)
                .env("NAMESPACE", namespace)
                .env("POD_NAME", identity)
                .env("LEADER_ELECT", "true")
                // The webhook would keep its certificate's CA in the shared control plane's Blueprint
                // CRD (tests/cluster/webhook.rs proves it with a CRD of its own).
                .env("WEBHOOK_ENABLED", "false")
                .env("DEBOUNCE_WINDOW", "50ms")
                .env("LOG_LEVEL", level)
                .env("METRICS_BIND_ADDRESS", format!("127.0.0.1:{}", free_port()))
                .env("HEALTH_PROBE_BIND_ADDRESS", format!("127.0.0.1:{}", free_port()))
                .env("DOGU_REGISTRY_ENDPOINT", &registry)
                .env("DOGU_REGISTRY_USERNAME", REGISTRY_CREDENTIALS.0)
                .env("DOGU_REGISTRY_PASSWORD", REGISTRY_CREDENTIALS.1)
                .stdout(stdout)
                .stderr(Stdio::inherit())
                .spawn()
                .expect("the operator binary starts"),
        )
    };
    let replica = |identity: &str, account: &str, token: &str| replica_logging(identity, account, token, None);
    let holder = |lease: &serde_json::Value| lease["spec"]["holderIdentity"].as_str().unwrap_or_default().to_owned();

    // The first replica takes the Lease; the second waits as a candidate.
    let leader = replica("replica-a", SERVICE_ACCOUNT, &tokens[0]);
    scene.wait_for(("coordination.k8s.io/v1", "Lease", LEASE), |l| holder(l) == "replica-a").await;
    let standby = replica("replica-b", STANDBY, &tokens[1]);

    // The leader installs; the standby writes nothing meanwhile.
    scene.apply_blueprint(&default_blueprint()).await.unwrap();
    scene.wait_for(("k8s.cloudogu.com/v2", "Dogu", "ldap"), |_| true).await;
    let (leader_user, standby_user) = (user_of(namespace, SERVICE_ACCOUNT), user_of(namespace, STANDBY));
    drop(leader);
    assert!(!writes_of(&leader_user).is_empty(), "the leader wrote");
    assert_eq!(writes_of(&standby_user), Vec::<String>::new(), "the standby wrote while it was not the leader");
    assert!(scene.blueprint(crate::sandbox::e2e::NAME).await.is_some_and(|b| !completed(&b)), "killed mid-install");

    // Its Lease expires; the standby takes it and finishes the install.
    scene.wait_for(("coordination.k8s.io/v1", "Lease", LEASE), |l| holder(l) == "replica-b").await;
    let done = scene.wait_blueprint(completed).await;
    assert!(done.is_some(), "not completed after the handover: {}", conditions(&scene).await);
    assert!(!writes_of(&standby_user).is_empty(), "the new leader wrote");

    // A rolling update: a new replica waits as a candidate, the leader gets SIGTERM and gives the Lease
    // up, and the candidate takes it at its next attempt, not when the Lease would have expired (15 s).
    let lease_reads = || plane.audited(&leader_user).iter().filter(|r| r.resource() == "leases").count();
    let before = lease_reads();
    let log = dir.path().join("replica-c.log");
    let _successor = replica_logging("replica-c", SERVICE_ACCOUNT, &tokens[0], Some(&log));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while lease_reads() == before {
        assert!(std::time::Instant::now() < deadline, "the new replica never asked for the Lease");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let terminated = std::time::Instant::now();
    let pid = i32::try_from(standby.0.id()).unwrap();
    // SAFETY: kill(2) with a valid signal on our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    scene.wait_for(("coordination.k8s.io/v1", "Lease", LEASE), |l| holder(l) == "replica-c").await;
    let handover = terminated.elapsed();
    assert!(
        handover < Duration::from_secs(8),
        "the handover after SIGTERM took {handover:?}: the Lease was not released"
    );
    eprintln!("leader handover after SIGTERM: {handover:?}");

    // The new leader's log, as a log pipeline reads it: JSON lines whose fields are plain words and
    // numbers, not Rust's debug output (`Action { requeue_after: None }`, `Some(..)`).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let text = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("\"message\":\"reconciled\"") {
            break text;
        }
        assert!(std::time::Instant::now() < deadline, "the new leader logged no reconcile:\n{text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for line in text.lines() {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        // Fields of the event and of its span (`span: {blueprint, generation, state, ...}`).
        let mut fields: Vec<(&String, &serde_json::Value)> = entry.as_object().unwrap().iter().collect();
        while let Some((field, value)) = fields.pop() {
            if let Some(nested) = value.as_object() {
                fields.extend(nested.iter());
                continue;
            }
            let Some(value) = value.as_str() else { continue };
            let debug_output = ["Some(", "None", "Ok(", "Err(", " { ", "}"].iter().any(|p| value.contains(p));
            assert!(!debug_output, "field {field} is Rust debug output: {line}");
        }
    }
    let reconciled = text.lines().find(|l| l.contains("\"message\":\"reconciled\"")).unwrap();
    assert!(reconciled.contains("\"blueprint\":\"blueprint-ces\"") && reconciled.contains("\"next\":"), "{reconciled}");
    drop(standby);
    scene.shutdown().await;
    vec![leader_user, standby_user]
}
