//! `plan` against the live cluster of a kubeconfig, on the real API server: the same plan as from a
//! snapshot of the same objects, made with read access only (deploy/plan-reader.yaml), and every
//! request it sent a read.

use std::process::{Command, Output};

use blueprint_operator::sandbox::cluster::{Cluster, Remote};
use blueprint_operator::sandbox::dogu_registry::RegistryServer;
use blueprint_operator::sandbox::seed;
use serde_json::Value;

use super::control_plane;
use crate::crd::repository;

const NOW: &str = "2026-12-01T10:00:00Z";
const PLANNER: &str = "planner";

fn plan(kubeconfig: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .arg("plan")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        // The plan asks no remote registry here (the descriptors come from the local registry and DIR).
        .env_remove("DOGU_REGISTRY_ENDPOINT")
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The upgrade example's cluster in `namespace`: its objects with their status, and the Blueprint as
/// stored before the update.
async fn seed_upgrade_example(namespace: &str) {
    let plane = control_plane::shared();
    let cluster = Cluster::Remote(Remote::new(plane.client(namespace).await));
    let snapshot = std::fs::read_to_string(repository("examples/upgrade/cluster.yaml")).unwrap();
    let objects = seed::objects(&snapshot).unwrap();
    seed::cluster(&cluster, namespace, &objects).await.unwrap();
    let documents: Vec<Value> = serde_saphyr::from_multiple(&snapshot).unwrap();
    let stored = documents[0]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "Blueprint")
        .expect("the example stores a Blueprint")
        .clone();
    seed::cluster(&cluster, namespace, &[stored]).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_plan_is_the_snapshot_plan_of_the_same_objects_made_with_reads_only() {
    let plane = control_plane::shared();
    let namespace = plane.namespace("live-plan");
    seed_upgrade_example(&namespace).await;

    // The planner may read, nothing else: deploy/plan-reader.yaml bound to a ServiceAccount.
    let role = std::fs::read_to_string(repository("deploy/plan-reader.yaml"))
        .unwrap()
        .replace("namespace: ecosystem", &format!("namespace: {namespace}"));
    let dir = tempfile::tempdir().unwrap();
    let role_file = dir.path().join("role.yaml");
    std::fs::write(&role_file, role).unwrap();
    plane.kubectl(&["apply", "-f", &role_file.display().to_string()]).unwrap();
    plane.kubectl(&["create", "serviceaccount", PLANNER, "-n", &namespace]).unwrap();
    let subject = format!("{namespace}:{PLANNER}");
    plane
        .kubectl(&[
            "create",
            "rolebinding",
            PLANNER,
            "--role=blueprint-plan-reader",
            &format!("--serviceaccount={subject}"),
            "-n",
            &namespace,
        ])
        .unwrap();
    let token = plane.kubectl(&["create", "token", PLANNER, "-n", &namespace, "--duration=1h"]).unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, plane.kubeconfig_text(PLANNER, token.trim(), &namespace)).unwrap();

    let blueprint = std::fs::read_to_string(repository("examples/upgrade/blueprint.yaml"))
        .unwrap()
        .replace("namespace: ecosystem", &format!("namespace: {namespace}"));
    let blueprint_file = dir.path().join("blueprint.yaml");
    std::fs::write(&blueprint_file, blueprint).unwrap();
    let descriptors = repository("examples/descriptors");
    let common = ["-f", blueprint_file.to_str().unwrap(), "--descriptors", descriptors.to_str().unwrap(), "--now", NOW];

    let live = plan(&kubeconfig, &common);
    assert_eq!(live.status.code(), Some(2), "changes pending; stderr: {}", text(&live.stderr));
    let live_plan = text(&live.stdout);
    for expected in
        ["~ cas", "upgrade: official/7.1.4-1 → official/7.1.5-2", "~ admin_group", "set to a new value from its Secret"]
    {
        assert!(live_plan.contains(expected), "missing {expected:?} in the live plan:\n{live_plan}");
    }
    assert!(!live_plan.contains("ldap-secret-password"), "no secret value is printed");

    // The same objects as a snapshot, as the README tells users to take one.
    let snapshot = plane
        .kubectl(&["get", "blueprints,dogus,components,configmaps,secrets", "-n", &namespace, "-o", "yaml"])
        .unwrap();
    let snapshot_file = dir.path().join("cluster.yaml");
    std::fs::write(&snapshot_file, snapshot).unwrap();
    let mut args = common.to_vec();
    args.extend(["--cluster", snapshot_file.to_str().unwrap()]);
    let offline = plan(&kubeconfig, &args);
    assert_eq!(offline.status.code(), Some(2), "{}", text(&offline.stderr));
    assert_eq!(live_plan, text(&offline.stdout), "the live plan and the snapshot plan differ");

    // Without a descriptor folder, the descriptors come from the remote dogu registry configured as
    // for `run` (here a registry on loopback with the examples' descriptors, basic auth).
    let registry = RegistryServer::new(Some(("planner".into(), "registry-password".into())));
    for file in walk(&descriptors) {
        registry.add(&std::fs::read_to_string(file).unwrap()).unwrap();
    }
    let served = registry.serve(([127, 0, 0, 1], 0).into()).await.unwrap();
    let endpoint = served.endpoint();
    let remote = {
        let (blueprint, kubeconfig) = (blueprint_file.clone(), kubeconfig.clone());
        tokio::task::spawn_blocking(move || {
            Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
                .args(["plan", "-f", blueprint.to_str().unwrap(), "--now", NOW])
                .env("KUBECONFIG", &kubeconfig)
                .env("DOGU_REGISTRY_ENDPOINT", &endpoint)
                .env("DOGU_REGISTRY_USERNAME", "planner")
                .env("DOGU_REGISTRY_PASSWORD", "registry-password")
                .output()
                .unwrap()
        })
        .await
        .unwrap()
    };
    assert_eq!(
        text(&remote.stdout),
        live_plan,
        "descriptors from the remote registry; stderr: {}",
        text(&remote.stderr)
    );
    assert!(!registry.requests().is_empty(), "the registry was asked");

    // Reads only: every request the planner sent was a get or a list, and none was refused.
    let requests = plane.audited(&crate::cluster::rbac::user_of(&namespace, PLANNER));
    assert!(!requests.is_empty(), "the audit log has the planner's requests");
    for request in &requests {
        assert!(
            ["get", "list"].contains(&request.verb.as_str()),
            "a plan wrote: {} {}",
            request.verb,
            request.request_uri
        );
        let code = request.code();
        assert!(code < 400 || code == 404, "refused: {} {} ({code})", request.verb, request.request_uri);
    }
}

/// Every file below `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { files.extend(walk(&path)) } else { files.push(path) }
    }
    files
}

#[test]
fn a_context_that_does_not_exist_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n").unwrap();
    let blueprint = repository("examples/upgrade/blueprint.yaml");
    let output = plan(&kubeconfig, &["-f", blueprint.to_str().unwrap(), "--context", "production"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.starts_with("error: no cluster to read (give --cluster FILE for a snapshot): "), "{stderr}");
    assert!(stderr.contains("production"), "names the context: {stderr}");
}
