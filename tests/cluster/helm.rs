//! The chart installed into the real API server with the real helm: its objects are accepted, the
//! operator runs with exactly what it installs (its ServiceAccount's token, its Role, its Deployment's
//! settings) and reconciles a Blueprint without a refused request; an upgrade changes a setting; an
//! uninstall removes it. There is no kubelet, so the operator runs as a process of the test.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::control_plane;
use crate::chart::helm;
use crate::crd::repository;
use crate::support::process::{Killed, free_port};

/// helm as the admin, in `namespace`.
fn helm_in(namespace: &str, args: &[&str]) -> String {
    let plane = control_plane::shared();
    let output = Command::new(helm())
        .args(args)
        .args(["--namespace", namespace])
        .env("KUBECONFIG", &plane.kubeconfig)
        .env("HELM_CACHE_HOME", plane_dir("helm-cache"))
        .env("HELM_CONFIG_HOME", plane_dir("helm-config"))
        .env("HELM_DATA_HOME", plane_dir("helm-data"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "helm {}: {text}", args.join(" "));
    text
}

/// helm keeps caches and settings in the home directory by default: a folder of the test's instead.
fn plane_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("blueprint-operator-tests-{}", std::process::id())).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn kubectl_json(args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.extend(["-o", "json"]);
    serde_json::from_str(&control_plane::shared().kubectl(&args).unwrap()).unwrap()
}

#[test]
fn the_chart_installs_runs_the_operator_upgrades_and_uninstalls() {
    let plane = control_plane::shared();
    let namespace = plane.namespace("helm");
    let chart = repository("charts/blueprint-operator");
    let chart = chart.to_str().unwrap();
    // The CRDs exist already: the shared control plane installs them with the conversion webhook at
    // a loopback URL (no Service can route to a test process). helm v4 applies a chart's CRDs server
    // side, which would point the conversion of every other test's Blueprints at the chart's Service:
    // skipped here; tests/chart.rs checks that the chart's CRDs are the committed ones.
    helm_in(&namespace, &["install", "bo", chart, "--skip-crds"]);
    for object in [
        "deployment/k8s-blueprint-operator-controller-manager",
        "serviceaccount/k8s-blueprint-operator",
        "role/k8s-blueprint-operator",
        "rolebinding/k8s-blueprint-operator",
        "configmap/k8s-blueprint-operator-health-config",
        "service/k8s-blueprint-operator-metrics",
        "poddisruptionbudget/k8s-blueprint-operator",
        "networkpolicy/k8s-blueprint-operator",
        "service/blueprint-operator-webhook",
        "clusterrole/k8s-blueprint-operator-webhook",
        "clusterrolebinding/k8s-blueprint-operator-webhook",
    ] {
        plane.kubectl(&["get", object, "-n", &namespace]).unwrap_or_else(|e| panic!("{object}: {e}"));
    }
    // Every CRD of the chart is established.
    let mut crds = 0;
    for file in std::fs::read_dir(repository("charts/blueprint-operator/crds")).unwrap() {
        let crd = crate::crd::yaml_file(&file.unwrap().path());
        let name = format!("crd/{}", crd["metadata"]["name"].as_str().unwrap());
        plane
            .kubectl(&["wait", "--for=condition=Established", &name, "--timeout=30s"])
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        crds += 1;
    }
    assert_eq!(crds, 2, "the Blueprint and BlueprintMask CRDs");

    // The operator as the chart deploys it: the Deployment's settings, the chart's ServiceAccount.
    let deployment = kubectl_json(&["get", "deployment/k8s-blueprint-operator-controller-manager", "-n", &namespace]);
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let token = plane.kubectl(&["create", "token", "k8s-blueprint-operator", "-n", &namespace]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, plane.kubeconfig_text("k8s-blueprint-operator", token.trim(), &namespace)).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"));
    command.args(container["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()));
    for variable in container["env"].as_array().unwrap() {
        if let Some(value) = variable["value"].as_str() {
            command.env(variable["name"].as_str().unwrap(), value);
        }
    }
    let operator = Killed(
        command
            .env("KUBECONFIG", &kubeconfig)
            .env("NAMESPACE", &namespace)
            .env("POD_NAME", "k8s-blueprint-operator-0")
            // Not the chart's webhook: it would write its CA into the shared control plane's Blueprint
            // CRD (the chart's ClusterRole allows it). tests/cluster/webhook.rs proves that part.
            .env("WEBHOOK_ENABLED", "false")
            .env("LOG_LEVEL", "warn")
            .env("METRICS_BIND_ADDRESS", format!("127.0.0.1:{}", free_port()))
            .env("HEALTH_PROBE_BIND_ADDRESS", format!("127.0.0.1:{}", free_port()))
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let example = std::fs::read_to_string(repository("examples/fresh-install/blueprint.yaml"))
        .unwrap()
        .replace("namespace: ecosystem", &format!("namespace: {namespace}"));
    let file = dir.path().join("blueprint.yaml");
    std::fs::write(&file, example).unwrap();
    plane.kubectl(&["apply", "-f", file.to_str().unwrap()]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let blueprint = kubectl_json(&["get", "blueprint/blueprint-ces", "-n", &namespace]);
        if blueprint["status"]["observedGeneration"] == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the operator did not reconcile: {blueprint}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let refused: Vec<String> = plane
        .audited(&format!("system:serviceaccount:{namespace}:k8s-blueprint-operator"))
        .into_iter()
        .filter(|r| r.code() == 403)
        .map(|r| format!("{} {}", r.verb, r.request_uri))
        .collect();
    assert_eq!(refused, Vec::<String>::new(), "the chart's Role refused the operator");
    drop(operator);

    // An upgrade changes a setting; an uninstall removes what was installed (the CRD and the
    // Blueprints stay: helm never deletes CRDs).
    helm_in(&namespace, &["upgrade", "bo", chart, "--set", "manager.env.logLevel=debug"]);
    let deployment = kubectl_json(&["get", "deployment/k8s-blueprint-operator-controller-manager", "-n", &namespace]);
    let env = deployment["spec"]["template"]["spec"]["containers"][0]["env"].as_array().unwrap().clone();
    assert!(env.iter().any(|v| v["name"] == "LOG_LEVEL" && v["value"] == "debug"), "{env:?}");
    let status: Value = serde_json::from_str(&helm_in(&namespace, &["status", "bo", "-o", "json"])).unwrap();
    assert_eq!(status["version"], 2, "the second revision");
    helm_in(&namespace, &["uninstall", "bo", "--wait"]);
    assert!(
        plane.kubectl(&["get", "deployment/k8s-blueprint-operator-controller-manager", "-n", &namespace]).is_err(),
        "removed"
    );
    assert!(plane.kubectl(&["get", "clusterrole/k8s-blueprint-operator-webhook"]).is_err(), "removed");
    assert!(plane.kubectl(&["get", "blueprint/blueprint-ces", "-n", &namespace]).is_ok(), "the Blueprint stays");
}
