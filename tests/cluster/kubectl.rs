//! The real kubectl against the real API server, as an administrator uses it: `apply` an example,
//! `wait --for=condition=Completed`, `get` with the printer columns, `describe` with the events the
//! operator published.

use blueprint_operator::sandbox::ecosystem::Behaviour;
use blueprint_operator::sandbox::seed;

use super::control_plane;
use crate::crd::repository;
use crate::sandbox::e2e::Scene;

/// kubectl, off the async runtime (the operator runs in this process meanwhile).
async fn kubectl(args: &[&str]) -> Result<String, String> {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        control_plane::shared().kubectl(&args.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_wait_get_and_describe_with_the_real_kubectl() {
    let plane = control_plane::shared();
    let namespace = plane.namespace("kubectl");
    let mut scene =
        Scene::on_kube_apiserver(namespace.clone(), None, Behaviour::default(), seed::DEFAULT_CLUSTER).await;
    scene.start_controller("0.1.0");

    // The example as a user has it (its namespace set to the test's).
    let example = std::fs::read_to_string(repository("examples/fresh-install/blueprint.yaml"))
        .unwrap()
        .replace("namespace: ecosystem", &format!("namespace: {namespace}"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blueprint.yaml");
    std::fs::write(&file, example).unwrap();
    let applied = kubectl(&["apply", "-f", &file.display().to_string()]).await.unwrap();
    assert_eq!(applied.trim(), "blueprint.k8s.cloudogu.com/blueprint-ces created");

    let waited =
        kubectl(&["wait", "--for=condition=Completed", "bp/blueprint-ces", "-n", &namespace, "--timeout=90s"]).await;
    assert_eq!(waited.as_deref().map(str::trim), Ok("blueprint.k8s.cloudogu.com/blueprint-ces condition met"));

    // The printer columns, filled.
    let table = kubectl(&["get", "bp", "-n", &namespace]).await.unwrap();
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(
        header,
        [
            "NAME",
            "DISPLAY NAME",
            "STOPPED",
            "VALID",
            "EXECUTABLE",
            "ECOSYSTEM HEALTHY",
            "COMPLETED",
            "LAST APPLY SUCCESSFUL",
            "AGE"
        ],
        "{table}"
    );
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(row[0], "blueprint-ces", "{table}");
    assert_eq!(
        row.iter().filter(|c| **c == "True").count(),
        5,
        "Valid, Executable, healthy, Completed, applied: {table}"
    );
    let dogus = kubectl(&["get", "dogus", "-n", &namespace, "-o", "name"]).await.unwrap();
    assert_eq!(dogus.lines().count(), 7, "{dogus}");

    // describe: the conditions and the events of the install, from the operator.
    let described = kubectl(&["describe", "bp", "blueprint-ces", "-n", &namespace]).await.unwrap();
    let events = described.split("Events:").nth(1).unwrap_or_default();
    for reason in ["StateDiffDetermined", "DogusApplied", "Completed"] {
        assert!(events.contains(reason), "describe shows the {reason} event: {described}");
    }
    assert!(events.contains("k8s-blueprint-operator"), "from the operator: {events}");
    scene.shutdown().await;
}

/// `kubectl explain` reads the CRD's schema from the real server's OpenAPI v3 (the sandbox's twin:
/// `reliability::sandbox_gaps::kubectl_explain_reads_the_crd_schema`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_explain_reads_the_crd_schema() {
    // The server publishes a new CRD's schema a moment after the CRD is established: wait for it.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    let explained = loop {
        match kubectl(&["explain", "blueprint.spec"]).await {
            Ok(explained) => break explained,
            Err(problem) if tokio::time::Instant::now() > deadline => panic!("{problem}"),
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
        }
    };
    crate::reliability::sandbox_gaps::assert_explains_the_blueprint_spec(&explained);
}

/// Strict input on the real API server: `kubectl apply` (strict field validation, its default) refuses
/// the field `plan` refuses, by the CRD's schema: the same mistake is caught before and after the commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_refuses_an_unknown_field_as_plan_does() {
    let plane = control_plane::shared();
    let namespace = plane.namespace("strict");
    let typo = std::fs::read_to_string(repository("examples/fresh-install/blueprint.yaml"))
        .unwrap()
        .replace("namespace: ecosystem", &format!("namespace: {namespace}"))
        .replacen("  displayName:", "  blueprintMsk:\n    dogus: []\n  displayName:", 1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blueprint.yaml");
    std::fs::write(&file, typo).unwrap();
    let refused = kubectl(&["apply", "-f", &file.display().to_string()]).await.unwrap_err();
    assert!(refused.contains("unknown field \"spec.blueprintMsk\""), "{refused}");
    let planned = std::process::Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .args([
            "plan",
            "-f",
            &file.display().to_string(),
            "--cluster",
            &repository("examples/fresh-install/cluster.yaml").display().to_string(),
        ])
        .output()
        .unwrap();
    assert_eq!(planned.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&planned.stderr).contains("unknown field spec.blueprintMsk"));
}
