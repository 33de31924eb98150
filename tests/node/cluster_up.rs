//! `make cluster-up` and `make cluster-down` as the README shows them (the commands they run, on a
//! folder of the test's): a second node beside the tests' own, in the background; the last line is a
//! kubeconfig that reaches the operator installed by the chart; down removes everything but the logs.

use std::process::Command;

use blueprint_operator::sandbox::node::install as chart;
use serde_json::Value;

use super::turn;

fn operator(args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_blueprint-operator")).args(args).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), text)
}

#[test]
fn cluster_up_returns_a_kubeconfig_of_the_installed_operator_and_down_removes_it() {
    let (node, _turn) = turn();
    let dir = tempfile::tempdir().unwrap();
    let dir_text = dir.path().to_str().unwrap();
    let image = blueprint_operator::sandbox::node::operator_image();
    let (ok, output) =
        operator(&["cluster", "up", "--dir", dir_text, "--image", image.to_str().unwrap(), "--background"]);
    assert!(ok, "{output}");
    let kubeconfig = output.lines().last().unwrap().to_owned();
    assert!(kubeconfig.ends_with("/kubeconfig"), "the last line is the kubeconfig: {output}");
    let (again, refused) = operator(&["cluster", "up", "--dir", dir_text, "--background"]);
    assert!(!again && refused.contains("runs already"), "{refused}");

    let kubectl = |args: &[&str]| {
        let output =
            Command::new(node.plane.bin.join("kubectl")).env("KUBECONFIG", &kubeconfig).args(args).output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };
    // The kubeconfig's namespace is the operator's: no -n.
    let pods = kubectl(&["get", "pods", "-l", chart::POD_SELECTOR, "-o", "json"]);
    let names: Vec<&str> =
        pods["items"].as_array().unwrap().iter().map(|p| p["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 2, "{pods}");
    assert!(pods["items"].as_array().unwrap().iter().all(super::ready), "Ready: {names:?}");
    let lease = kubectl(&["get", "lease", chart::LEASE, "-o", "json"]);
    let holder = lease["spec"]["holderIdentity"].as_str().unwrap_or_default();
    assert!(names.contains(&holder), "the Lease names a Pod: {holder} of {names:?}");

    let (ok, output) = operator(&["cluster", "down", "--dir", dir_text]);
    assert!(ok, "{output}");
    let left: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, ["logs"], "only the logs stay");
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(dir_text), "nothing stays mounted under {dir_text}");
    let (ok, output) = operator(&["cluster", "down", "--dir", dir_text]);
    assert!(ok && output.contains("none"), "{output}");
}
