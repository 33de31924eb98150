//! `blueprint-operator sandbox` as a user runs it: the exit code, the result line and the summary for a
//! Blueprint that completes, one that is blocked and one that is stopped.

use std::path::Path;
use std::process::Command;

fn sandbox(args: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("sandbox")
        .args(args)
        .output()
        .expect("the binary runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    (output.status.code().unwrap_or(-1), text)
}

#[test]
fn a_completed_blueprint_reports_its_time_to_converge() {
    let (code, text) = sandbox(&["--timeout", "60s"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("] Completed=True (Completed)"), "{text}");
    assert!(text.contains("\n  time to converge:   "), "{text}");
    assert!(text.contains("\nresult: Completed=True after "), "{text}");
}

/// The findings: a blocked Blueprint was summarised with a "time to converge", and a stopped one ran
/// until the timeout saying "reconciling".
#[test]
fn a_blocked_or_stopped_blueprint_ends_at_once_without_a_time_to_converge() {
    let (code, text) = sandbox(&["-f", "examples/invalid/invalid.yaml", "--timeout", "60s"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("\nresult: the blueprint cannot be applied: Valid=False (Invalid): "), "{text}");
    assert!(!text.contains("time to converge"), "{text}");

    let example =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fresh-install/blueprint.yaml"))
            .unwrap();
    let stopped = example.replacen("spec:\n", "spec:\n  stopped: true\n", 1);
    assert_ne!(stopped, example);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stopped.yaml");
    std::fs::write(&file, stopped).unwrap();
    let (code, text) = sandbox(&["-f", file.to_str().unwrap(), "--timeout", "60s"]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("\nresult: the blueprint cannot be applied: stopped (spec.stopped): nothing is applied until spec.stopped is removed"),
        "{text}"
    );
    assert!(!text.contains("time to converge"), "{text}");
}

/// docs/cli.md's `sandbox --serve` and the kubectl commands beside it, as they are written: the
/// sandbox serves, the real kubectl (`make kube`) lists, describes and applies against it.
#[test]
fn the_served_sandbox_answers_the_kubectl_commands_the_docs_show() {
    use crate::support::doc_blocks::{self, DocBlocks};
    use crate::support::process::Killed;
    let docs = DocBlocks::read("docs/cli.md");
    let serve = docs.block("`sandbox`", "--serve 127.0.0.1:18080");
    let commands = docs.block("`sandbox`", "kubectl --server http://127.0.0.1:18080");
    let binary = Path::new(env!("CARGO_BIN_EXE_blueprint-operator"));
    let kubectl = blueprint_operator::sandbox::control_plane::bin_dir();
    let path =
        format!("{}:{}:{}", binary.parent().unwrap().display(), kubectl.display(), std::env::var("PATH").unwrap());
    let vars = vec![("PATH".to_owned(), path)];

    // The first block in the background, as in its own terminal (exec: the kill reaches the sandbox,
    // also when the test fails).
    let mut sandbox = Killed(
        Command::new("bash")
            .args(["-c", &format!("exec {}", serve.trim())])
            .envs(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = std::time::Instant::now();
    loop {
        let probe = Command::new(kubectl.join("kubectl"))
            .args(["--server", "http://127.0.0.1:18080", "-n", "ecosystem", "get", "blueprint", "blueprint-ces"])
            .args(["-o", "jsonpath={.status.conditions[*].type}"])
            .output()
            .expect("kubectl runs (make kube)");
        // Served, and the operator has reconciled once: `describe` has conditions to show.
        if probe.status.success() && !probe.stdout.is_empty() {
            break;
        }
        assert!(sandbox.0.try_wait().unwrap().is_none(), "the sandbox ended before it served");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the sandbox serves its Blueprint, reconciled, on 127.0.0.1:18080 within 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let (ok, output) = doc_blocks::run(&commands, &vars);
    assert!(ok, "docs/cli.md's kubectl commands:\n{commands}{output}");
    for shown in
        ["blueprint.k8s.cloudogu.com/blueprint-ces", "component.k8s.cloudogu.com/", "Conditions:", "configured"]
    {
        assert!(output.contains(shown), "{shown:?} in:\n{output}");
    }
}
