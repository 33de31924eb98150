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
