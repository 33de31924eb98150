//! `blueprint-operator convert` as a user runs it: the real binary, files and standard input, exit
//! codes and messages.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn convert(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .arg("convert")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child.stdin.take().unwrap().write_all(stdin.unwrap_or_default().as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/upgrade/blueprint.yaml").display().to_string()
}

#[test]
fn an_example_goes_to_v3_and_back_through_standard_input_unchanged() {
    let original: Value = serde_saphyr::from_str(&std::fs::read_to_string(example()).unwrap()).unwrap();
    let v3 = convert(&["-f", &example()], None);
    assert!(v3.status.success(), "{}", text(&v3.stderr));
    let v3_text = text(&v3.stdout);
    assert!(v3_text.starts_with("apiVersion: k8s.cloudogu.com/v3\n"), "{v3_text}");
    let v3_value: Value = serde_saphyr::from_str(&v3_text).unwrap();
    assert_eq!(v3_value["spec"]["blueprintMask"]["manifest"], original["spec"]["blueprintMask"]);
    let back = convert(&["-f", "-", "--to", "v2", "-o", "json"], Some(&v3_text));
    assert!(back.status.success(), "{}", text(&back.stderr));
    let back: Value = serde_json::from_slice(&back.stdout).unwrap();
    assert_eq!(back, original);
}

#[test]
fn other_kinds_pass_and_many_documents_print_as_a_list() {
    let input = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n---\n\
                 apiVersion: k8s.cloudogu.com/v3\nkind: Blueprint\nmetadata: {name: b}\n\
                 spec: {blueprintMask: {crRef: {name: mask}}}\n";
    let output = convert(&["-f", "-", "--to", "v2", "-o", "json"], Some(input));
    assert!(output.status.success(), "{}", text(&output.stderr));
    let list: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"][0], json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}));
    assert_eq!(list["items"][1]["apiVersion"], "k8s.cloudogu.com/v2");
    assert_eq!(list["items"][1]["spec"], json!({}), "the mask reference went into the annotation");
    let kept = list["items"][1]["metadata"]["annotations"]["blueprint.k8s.cloudogu.com/v3-fields"].as_str().unwrap();
    assert!(kept.contains(r#""crRef":{"name":"mask"}"#), "{kept}");
}

#[test]
fn what_cannot_be_converted_is_an_error_with_exit_code_1() {
    let cases = [
        (
            "apiVersion: k8s.cloudogu.com/v4\nkind: Blueprint\n",
            "error: standard input: document 1: apiVersion \"k8s.cloudogu.com/v4\" is not a served Blueprint version (v1, v2 or v3, such as k8s.cloudogu.com/v3)\n",
        ),
        (
            "apiVersion: k8s.cloudogu.com/v3\nkind: Blueprint\nspec: {blueprintMask: all}\n",
            "error: standard input: document 1: spec.blueprintMask must be an object\n",
        ),
        ("", "error: standard input: no document in it\n"),
    ];
    for (input, message) in cases {
        let output = convert(&["-f", "-", "--to", "v2"], Some(input));
        assert_eq!(output.status.code(), Some(1), "{input}");
        assert_eq!(text(&output.stderr), message);
        assert!(output.stdout.is_empty(), "nothing printed on an error");
    }
    let missing = convert(&["-f", "/nonexistent/blueprint.yaml"], None);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing.stderr).starts_with("error: /nonexistent/blueprint.yaml: cannot read the file"),
        "{}",
        text(&missing.stderr)
    );
}

/// `kubectl get blueprints -o yaml` prints a `List`: its Blueprints are converted (docs/migration.md
/// converts such an export), and an item that cannot be converted is named.
#[test]
fn the_blueprints_of_a_kubectl_list_are_converted() {
    let list = "apiVersion: v1\nkind: List\nitems:\n\
        - {apiVersion: k8s.cloudogu.com/v3, kind: Blueprint, metadata: {name: a}, spec: {blueprint: {dogus: [{name: official/ldap, version: 2.6.8-3, platformConfig: {resource: {storageClassName: fast}}}]}}}\n\
        - {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n";
    let output = convert(&["-f", "-", "--to", "v2", "-o", "json"], Some(list));
    assert!(output.status.success(), "{}", text(&output.stderr));
    let converted: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(converted["kind"], "List");
    assert_eq!(converted["items"][0]["apiVersion"], "k8s.cloudogu.com/v2");
    let kept =
        converted["items"][0]["metadata"]["annotations"]["blueprint.k8s.cloudogu.com/v3-fields"].as_str().unwrap();
    assert!(kept.contains("\"storageClassName\":\"fast\""), "{kept}");
    assert_eq!(converted["items"][1], json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}));

    let bad = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n- {apiVersion: k8s.cloudogu.com/v9, kind: Blueprint, metadata: {name: b}}\n";
    let output = convert(&["-f", "-", "--to", "v2"], Some(bad));
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).starts_with("error: standard input: document 1, item 2: "),
        "{}",
        text(&output.stderr)
    );
    assert!(output.stdout.is_empty());
}

/// The Go operator 2.x's Blueprint (API v1, as it stores it: JSON text, `dryRun`, its phase, a
/// censored sensitive value) converts to v3 and back to what it was.
#[test]
fn a_v1_blueprint_of_the_go_operator_converts_and_back() {
    let stored = std::fs::read_to_string("tests/fixtures/eras/v1/blueprint.yaml").unwrap();
    let v3 = convert(&["-f", "-", "--to", "v3", "-o", "json"], Some(&stored));
    assert!(v3.status.success(), "{}", text(&v3.stderr));
    let v3_text = text(&v3.stdout);
    let v3: Value = serde_json::from_str(&v3_text).unwrap();
    assert_eq!(v3["apiVersion"], "k8s.cloudogu.com/v3");
    assert!(v3["spec"]["blueprint"]["dogus"].as_array().is_some_and(|d| !d.is_empty()), "{v3_text}");
    assert!(!v3_text.contains("*****"), "a censored value is not a value in v3: {v3_text}");
    let back = convert(&["-f", "-", "--to", "v1", "-o", "json"], Some(&v3_text));
    assert!(back.status.success(), "{}", text(&back.stderr));
    let back: Value = serde_json::from_slice(&back.stdout).unwrap();
    let original: Value = serde_saphyr::from_str(&stored).unwrap();
    let inner = |object: &Value, field: &str| -> Value {
        serde_json::from_str(object["spec"][field].as_str().unwrap()).unwrap()
    };
    // The same dogus (the Go operator's "minVolumeSize": "0" and empty reverseProxy mean none, and
    // come back as none).
    let dogus = |object: &Value| -> Vec<(Value, Value, Value)> {
        let blueprint = inner(object, "blueprint");
        let list = blueprint["dogus"].as_array().unwrap().clone();
        list.into_iter().map(|d| (d["name"].clone(), d["version"].clone(), d["targetState"].clone())).collect()
    };
    assert_eq!(dogus(&back), dogus(&original));
    assert_eq!(inner(&back, "blueprint")["config"], inner(&original, "blueprint")["config"], "the censored key too");
    assert_eq!(back["spec"]["dryRun"], original["spec"]["dryRun"]);
    assert_eq!(back["status"]["phase"], original["status"]["phase"]);
}
