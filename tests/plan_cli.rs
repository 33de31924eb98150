//! `blueprint-operator plan` as a user runs it: the real binary, real files, exit codes and output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

const NOW: &str = "2026-12-01T10:00:00Z";

fn example(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(path)
}

fn plan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blueprint-operator")).arg("plan").args(args).output().expect("the binary runs")
}

fn plan_example(blueprint: &str, cluster: &str, extra: &[&str]) -> Output {
    let blueprint = example(blueprint);
    let cluster = example(cluster);
    let descriptors = example("descriptors");
    let mut args = vec![
        "-f",
        blueprint.to_str().unwrap(),
        "--cluster",
        cluster.to_str().unwrap(),
        "--descriptors",
        descriptors.to_str().unwrap(),
        "--now",
        NOW,
    ];
    args.extend_from_slice(extra);
    plan(&args)
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

#[test]
fn a_fresh_install_plans_changes_and_exits_2() {
    let output = plan_example("fresh-install/blueprint.yaml", "fresh-install/cluster.yaml", &[]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stdout(&output);
    for expected in [
        "Blueprint \"blueprint-ces\" (generation 1): applying components",
        "+ redmine",
        "install: absent → official/5.1.8-1",
        "+ k8s-longhorn",
        "~ admin_group",
        "\"admins\" → \"ces-admins\"",
        "+ sa-ldap/password               set from its Secret",
        "[components] create components/k8s-longhorn: install",
        "Next: reconcile again in 1s",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

#[test]
fn json_output_is_the_status_actions_events_and_requeue() {
    let output = plan_example("upgrade/blueprint.yaml", "upgrade/cluster.yaml", &["-o", "json"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let plan: Value = serde_json::from_str(&stdout(&output)).expect("valid JSON");
    for key in ["status", "actions", "events", "requeue"] {
        assert!(plan.get(key).is_some(), "no {key}");
    }
    let status = &plan["status"];
    assert_eq!(status["observedGeneration"], 4);
    assert_eq!(status["stateDiff"]["doguDiffs"]["cas"]["neededActions"], serde_json::json!(["upgrade"]));
    let completed = status["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Completed").unwrap();
    assert_eq!(completed["status"], "False");
    assert_eq!(completed["lastTransitionTime"], NOW, "the transition happened at --now");
    let valid = status["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Valid").unwrap();
    assert_eq!(valid["lastTransitionTime"], "2026-10-01T08:00:00Z", "no transition, the stored time stays");
    let first = &plan["actions"][0];
    assert_eq!(first["kind"], "patchDogu");
    assert_eq!(first["patch"], serde_json::json!({"spec": {"pauseReconciliation": true}}));
    assert_eq!(plan["requeue"]["kind"], "after");
}

#[test]
fn yaml_output_is_the_json_output_in_yaml() {
    let json = plan_example("upgrade/blueprint.yaml", "upgrade/cluster.yaml", &["-o", "json"]);
    let yaml = plan_example("upgrade/blueprint.yaml", "upgrade/cluster.yaml", &["-o", "yaml"]);
    assert_eq!(yaml.status.code(), Some(2), "{}", stderr(&yaml));
    let from_json: Value = serde_json::from_str(&stdout(&json)).unwrap();
    let from_yaml: Value = serde_saphyr::from_str(&stdout(&yaml)).expect("valid YAML");
    assert_eq!(from_yaml, from_json);
    assert!(stdout(&yaml).starts_with("state: "), "{}", stdout(&yaml));
}

#[test]
fn the_same_inputs_give_the_same_plan() {
    let a = plan_example("upgrade/blueprint.yaml", "upgrade/cluster.yaml", &["-o", "json"]);
    let b = plan_example("upgrade/blueprint.yaml", "upgrade/cluster.yaml", &["-o", "json"]);
    assert_eq!(stdout(&a), stdout(&b));
}

#[test]
fn secret_values_never_appear_in_the_output() {
    for format in ["text", "json"] {
        let output = plan_example("upgrade/blueprint.yaml", "upgrade/cluster.yaml", &["-o", format]);
        let all = stdout(&output) + &stderr(&output);
        assert!(all.contains("sa-ldap/password"), "the key is shown");
        for secret in ["rotated-ldap-password", "old-ldap-password", "cm90YXRlZC1sZGFwLXBhc3N3b3Jk"] {
            assert!(!all.contains(secret), "{format} output shows a secret value");
        }
    }
}

#[test]
fn a_forbidden_downgrade_is_shown_and_blocks() {
    let output = plan_example("invalid/downgrade.yaml", "upgrade/cluster.yaml", &[]);
    assert_eq!(output.status.code(), Some(2));
    let text = stdout(&output);
    assert!(text.contains("! cas"), "{text}");
    assert!(text.contains("Blocked (Executable False):\n  cas: action \"downgrade\" is not allowed"), "{text}");
    assert!(text.contains("Actions: none in this reconcile."), "{text}");
}

#[test]
fn an_invalid_blueprint_exits_1_with_the_reason() {
    let output = plan_example("invalid/invalid.yaml", "upgrade/cluster.yaml", &[]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.starts_with("error: the blueprint is invalid: blueprint spec is invalid:"), "{err}");
    assert!(err.contains("dogu version must not be empty: official/ldap"), "{err}");
    assert!(err.contains("sensitive config entries are not allowed to have normal values"), "{err}");
}

#[test]
fn nothing_to_do_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let blueprint = dir.path().join("bp.yaml");
    std::fs::write(
        &blueprint,
        r#"apiVersion: k8s.cloudogu.com/v2
kind: Blueprint
metadata: {name: blueprint-ces, namespace: ecosystem}
spec:
  displayName: "CES production, October update"
  blueprint:
    dogus:
      - {name: official/ldap, version: "2.6.7-4"}
      - {name: official/postfix, version: "3.9.0-2"}
      - {name: official/cas, version: "7.1.4-1"}
      - {name: official/postgresql, version: "14.15-1", platformConfig: {resource: {minVolumeSize: 10Gi}}}
      - {name: official/redmine, version: "5.1.6-1", platformConfig: {resource: {minVolumeSize: 5Gi}}}
      - {name: k8s/nginx-ingress, version: "1.11.5-1"}
      - {name: k8s/nginx-static, version: "1.26.3-1"}
    components:
      - {name: k8s/k8s-longhorn, version: "1.7.1-1", deployConfig: {deployNamespace: longhorn-system}}
"#,
    )
    .unwrap();
    let cluster = example("upgrade/cluster.yaml");
    let descriptors = example("descriptors");
    let output = plan(&[
        "-f",
        blueprint.to_str().unwrap(),
        "--cluster",
        cluster.to_str().unwrap(),
        "--descriptors",
        descriptors.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}{}", stdout(&output), stderr(&output));
    assert!(stdout(&output).contains("No changes"), "{}", stdout(&output));
    assert!(stdout(&output).contains("): completed"), "{}", stdout(&output));
}

#[test]
fn without_descriptors_the_plan_says_which_checks_could_not_run() {
    let blueprint = example("fresh-install/blueprint.yaml");
    let cluster = example("fresh-install/cluster.yaml");
    let output = plan(&["-f", blueprint.to_str().unwrap(), "--cluster", cluster.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let text = stdout(&output);
    assert!(text.contains("validation pending"), "{text}");
    assert!(text.contains("Blocked (Valid Unknown)"), "{text}");
    assert!(text.contains("no dogu descriptors were given (plan --descriptors DIR)"), "{text}");
    assert!(text.contains("+ redmine"), "the diff is still shown: {text}");
    assert!(text.contains("Actions: none in this reconcile."), "{text}");
}

#[test]
fn a_file_that_does_not_parse_is_named_with_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.yaml");
    std::fs::write(
        &broken,
        "apiVersion: k8s.cloudogu.com/v2\nkind: Blueprint\nmetadata:\n  name: x\nspec:\n  displayName: [unclosed\n",
    )
    .unwrap();
    let cluster = example("fresh-install/cluster.yaml");
    let output = plan(&["-f", broken.to_str().unwrap(), "--cluster", cluster.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.starts_with(&format!("error: {}: not valid YAML", broken.display())), "{err}");
    assert!(err.contains("line 6"), "the position is named: {err}");

    let wrong_type = dir.path().join("wrong-type.yaml");
    std::fs::write(&wrong_type, "apiVersion: k8s.cloudogu.com/v2\nkind: Blueprint\nmetadata:\n  name: x\nspec:\n  displayName: x\n  stopped: maybe\n  blueprint: {}\n").unwrap();
    let output = plan(&["-f", wrong_type.to_str().unwrap(), "--cluster", cluster.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.contains("not a valid Blueprint") && err.contains("line 7"), "{err}");
}

#[test]
fn a_bad_cluster_object_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.yaml");
    std::fs::write(&cluster, "apiVersion: v1\nkind: List\nitems:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n  - {apiVersion: k8s.cloudogu.com/v2, kind: Dogu, metadata: {name: b}, spec: {version: [1]}}\n").unwrap();
    let blueprint = example("fresh-install/blueprint.yaml");
    let output = plan(&["-f", blueprint.to_str().unwrap(), "--cluster", cluster.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.contains("cluster.yaml: object 2 (Dogu \"b\") is not valid"), "{err}");

    let missing = dir.path().join("missing.yaml");
    let output = plan(&["-f", blueprint.to_str().unwrap(), "--cluster", missing.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("missing.yaml: cannot read the file"), "{}", stderr(&output));
}

#[test]
fn crd_prints_the_committed_manifest() {
    let output = Command::new(env!("CARGO_BIN_EXE_blueprint-operator")).args(["crd"]).output().unwrap();
    assert!(output.status.success());
    let committed = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("crds/blueprint.yaml")).unwrap();
    assert_eq!(stdout(&output), committed);
}

/// The README and docs/cli.md show `plan` on the examples and `replay` on the corpus with their real
/// output, and the real `--help`; this keeps them true.
#[test]
fn the_readme_shows_the_real_plan_output() {
    let read = |file: &str| std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
    let readme = read("README.md") + &read("docs/cli.md");
    let mut checked = 0;
    let mut lines = readme.lines().peekable();
    while let Some(line) = lines.next() {
        let Some((subcommand, command)) = ["plan", "replay", "convert"]
            .iter()
            .find_map(|s| line.strip_prefix(&format!("$ blueprint-operator {s} ")).map(|c| (*s, c)))
        else {
            continue;
        };
        let mut command = command.to_owned();
        while command.ends_with('\\') {
            command.pop();
            command.push_str(lines.next().unwrap().trim());
        }
        let mut shown = Vec::new();
        let exit_code = loop {
            let line = lines.next().expect("the block ends with its exit code");
            if let Some(code) = line.strip_prefix("(exit code ").and_then(|c| c.strip_suffix(')')) {
                break code.parse::<i32>().unwrap();
            }
            shown.push(line);
        };
        let mut args: Vec<String> = Vec::new();
        for arg in command.split_whitespace() {
            // `tests/replay/*.jsonl` as a shell would expand it.
            match arg.strip_suffix("*.jsonl") {
                Some(dir) => {
                    let mut files: Vec<String> = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(dir))
                        .unwrap()
                        .map(|e| format!("{dir}{}", e.unwrap().file_name().to_string_lossy()))
                        .filter(|f| f.ends_with(".jsonl"))
                        .collect();
                    files.sort();
                    args.extend(files);
                }
                None => args.push(arg.to_owned()),
            }
        }
        let output = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .arg(subcommand)
            .args(&args)
            .output()
            .unwrap();
        let actual = stdout(&output) + &stderr(&output);
        assert_eq!(actual.trim_end(), shown.join("\n"), "README output of `{subcommand} {command}` is out of date");
        assert_eq!(output.status.code(), Some(exit_code), "README exit code of `{subcommand} {command}`");
        checked += 1;
    }
    let help = readme.split("$ blueprint-operator --help\n").nth(1).expect("docs/cli.md shows --help");
    let help = help.split("\n```").next().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_blueprint-operator")).arg("--help").output().unwrap();
    assert_eq!(stdout(&output).trim_end(), help, "README --help is out of date");
    assert!(checked >= 6, "the README shows plan and replay {checked} times");
}

/// The CLI says what is wrong with a file it cannot read, and exits 1 without a panic.
#[test]
fn plan_names_what_is_wrong_with_a_bad_file() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text, expected) in [
        ("bytes.yaml", "\u{0}\u{1}\u{2}: [", "not valid YAML"),
        ("list.yaml", "- 1\n- 2\n", "expected kind Blueprint"),
        (
            "typed.yaml",
            "apiVersion: k8s.cloudogu.com/v2\nkind: Blueprint\nmetadata: {name: x}\nspec: {blueprint: {dogus: 7}}\n",
            "not a valid Blueprint",
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
            .args(["plan", "-f"])
            .arg(&path)
            .args(["--cluster", "examples/fresh-install/cluster.yaml"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains(expected) && !stderr.contains("panicked"), "{name}: {stderr}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(500))]

    /// `plan`'s readers take any bytes without a panic, and name the file in every error.
    #[test]
    fn plan_input_reads_any_bytes_or_names_the_file(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Err(error) = blueprint_operator::plan::input::blueprint_from_text(Path::new("b.yaml"), &text) {
            proptest::prop_assert!(error.to_string().starts_with("b.yaml: "), "{}", error);
        }
    }
}

/// The finding (issue "Adoption"): a wanted version the dogu registry does not have exited 2 with
/// nothing on stderr, while the README promised 1 and the reason.
#[test]
fn a_version_the_registry_does_not_have_is_an_error_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let blueprint = dir.path().join("unknown-version.yaml");
    let text = std::fs::read_to_string(example("upgrade/blueprint.yaml")).unwrap();
    assert!(text.contains(r#"version: "2.6.8-3""#));
    std::fs::write(&blueprint, text.replace(r#"version: "2.6.8-3""#, r#"version: "9.9.9-1""#)).unwrap();
    let output = plan_example(blueprint.to_str().unwrap(), "upgrade/cluster.yaml", &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert_eq!(
        stderr(&output),
        "error: the blueprint is invalid: remote dogu registry has no dogu specification for at least one wanted dogu: \
         dogu \"official/ldap\" with version \"9.9.9-1\" could not be found\n"
    );
    assert!(stdout(&output).contains("Blocked (Valid False)"), "the plan is still printed: {}", stdout(&output));
}

/// `plan` reads both versions (the operator reads v3; a v2 file is converted as the API server would):
/// the upgrade example in v3 plans exactly as in v2. A `configRef` is resolved among the snapshot's
/// ConfigMaps: missing, the plan is blocked naming it; present, its value is planned.
#[test]
fn a_v3_blueprint_plans_as_its_v2_form_and_config_refs_resolve_in_the_snapshot() {
    use blueprint_machine::conversion::{ApiVersion, convert};
    let dir = tempfile::tempdir().unwrap();
    let v2: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(example("upgrade/blueprint.yaml")).unwrap()).unwrap();
    let mut v3 = convert(&v2, ApiVersion::V3).unwrap();
    let file = dir.path().join("v3.json");
    std::fs::write(&file, v3.to_string()).unwrap();
    let as_v2 = plan_example("upgrade/blueprint.yaml", "upgrade/cluster.yaml", &[]);
    let as_v3 = plan_example(file.to_str().unwrap(), "upgrade/cluster.yaml", &[]);
    assert_eq!(as_v3.status.code(), as_v2.status.code());
    assert_eq!(stdout(&as_v3), stdout(&as_v2));
    assert_eq!(stderr(&as_v3), "");

    v3["spec"]["blueprint"]["config"]["global"][0] =
        json!({"key": "fqdn", "configRef": {"name": "site-settings", "key": "fqdn"}});
    std::fs::write(&file, v3.to_string()).unwrap();
    let missing = plan_example(file.to_str().unwrap(), "upgrade/cluster.yaml", &[]);
    let text = stdout(&missing);
    assert!(text.contains("MissingConfigReferences"), "{text}");
    assert!(text.contains(r#"referenced config map "site-settings" does not exist"#), "{text}");

    let cluster = dir.path().join("cluster.yaml");
    let snapshot = std::fs::read_to_string(example("upgrade/cluster.yaml")).unwrap();
    let settings = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: site-settings, namespace: ecosystem}\ndata: {fqdn: planned.example.com}\n";
    std::fs::write(&cluster, format!("{snapshot}\n---\n{settings}")).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .args(["plan", "-f", file.to_str().unwrap(), "--cluster", cluster.to_str().unwrap(), "--descriptors"])
        .arg(example("descriptors"))
        .args(["-o", "json"])
        .output()
        .unwrap();
    let plan: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&output)));
    let global = &plan["status"]["stateDiff"]["globalConfigDiff"];
    let fqdn = global.as_array().unwrap().iter().find(|e| e["key"] == "fqdn").expect("fqdn is planned");
    assert_eq!(fqdn["expected"]["value"], "planned.example.com");
}

/// `-f -` reads the Blueprint from standard input (issue "Adoption": `kubectl get bp -o yaml | plan -f -`).
#[test]
fn the_blueprint_may_come_from_standard_input() {
    use std::io::Write;
    let cluster = example("upgrade/cluster.yaml");
    let descriptors = example("descriptors");
    let mut child = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .args([
            "plan",
            "-f",
            "-",
            "--cluster",
            cluster.to_str().unwrap(),
            "--descriptors",
            descriptors.to_str().unwrap(),
        ])
        .args(["--now", NOW])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let text = std::fs::read_to_string(example("upgrade/blueprint.yaml")).unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let from_stdin = child.wait_with_output().unwrap();
    let from_file = plan_example("upgrade/blueprint.yaml", "upgrade/cluster.yaml", &[]);
    assert_eq!(from_stdin.status.code(), Some(2), "{}", stderr(&from_stdin));
    assert_eq!(stdout(&from_stdin), stdout(&from_file));
}

/// The self-upgrade trap (docs/differences.md D46): a blueprint written for Cloudogu's Go operator lists
/// its own component at one of its versions; this operator refuses to be replaced by it unless allowed.
#[test]
fn a_blueprint_that_would_replace_the_operator_is_blocked_unless_allowed() {
    let text = std::fs::read_to_string(example("upgrade/blueprint.yaml")).unwrap();
    let trap = text.replacen(
        "    components:\n",
        "    components:\n      - name: k8s/k8s-blueprint-operator\n        version: \"2.7.0\"\n",
        1,
    );
    assert_ne!(trap, text, "the example has a components list");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blueprint.yaml");
    std::fs::write(&file, trap).unwrap();
    let cluster = example("upgrade/cluster.yaml");
    let descriptors = example("descriptors");
    let args = |extra: &[&'static str]| {
        let mut args = vec![
            "-f".to_owned(),
            file.display().to_string(),
            "--cluster".into(),
            cluster.display().to_string(),
            "--descriptors".into(),
            descriptors.display().to_string(),
            "--now".into(),
            NOW.into(),
            "-o".into(),
            "json".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let run = |extra: &[&'static str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
            .arg("plan")
            .args(args(extra))
            .env_remove("OPERATOR_COMPONENT_VERSIONS")
            .env_remove("ALLOW_OPERATOR_REPLACEMENT")
            .output()
            .unwrap();
        let plan: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&output)));
        plan
    };
    let executable = |plan: &Value| {
        plan["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Executable").unwrap().clone()
    };

    let refused = run(&[]);
    let condition = executable(&refused);
    assert_eq!(
        (condition["status"].as_str(), condition["reason"].as_str()),
        (Some("False"), Some("ForbiddenOperations"))
    );
    let why = condition["message"].as_str().unwrap();
    assert!(why.contains("version 2.7.0 is not a release of this operator"), "{why}");
    assert_eq!(refused["actions"], json!([]), "nothing is applied");

    let allowed = run(&["--allow-operator-replacement"]);
    assert_eq!(executable(&allowed)["status"], "True");
    assert_eq!(allowed["state"], "SelfUpgrading", "the replacement goes first, as a self-upgrade does");

    // An operator whose releases include 2.7.0 (a later major of this project, say) upgrades itself.
    let own = run(&["--operator-component-versions", ">=2.0.0"]);
    assert_eq!(executable(&own)["status"], "True");
}

/// A snapshot's local dogu registry (`dogu-spec-<dogu>` ConfigMaps, as the dogu operator keeps them) is
/// where the controller looks first: the plan does too, without a descriptor folder.
#[test]
fn a_snapshots_dogu_spec_config_maps_are_its_descriptors() {
    let mut snapshot = std::fs::read_to_string(example("upgrade/cluster.yaml")).unwrap();
    assert!(snapshot.starts_with("apiVersion: v1\nkind: List\n") || snapshot.contains("kind: List"), "a List");
    // Every descriptor of the examples, one ConfigMap per dogu, one key per version.
    let mut by_dogu: std::collections::BTreeMap<String, Vec<(String, String)>> = Default::default();
    for namespace in std::fs::read_dir(example("descriptors")).unwrap() {
        for dogu in std::fs::read_dir(namespace.unwrap().path()).unwrap() {
            let dogu = dogu.unwrap().path();
            for version in std::fs::read_dir(&dogu).unwrap() {
                let path = version.unwrap().path();
                let text = std::fs::read_to_string(&path).unwrap();
                let version = path.file_stem().unwrap().to_str().unwrap().to_owned();
                by_dogu
                    .entry(dogu.file_name().unwrap().to_str().unwrap().to_owned())
                    .or_default()
                    .push((version, text));
            }
        }
    }
    let mut documents = String::new();
    for (dogu, versions) in &by_dogu {
        let data: serde_json::Map<String, Value> =
            versions.iter().map(|(version, text)| (version.clone(), Value::String(text.clone()))).collect();
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("dogu-spec-{dogu}"), "namespace": "ecosystem",
                         "labels": {"app": "ces", "dogu.name": dogu, "k8s.cloudogu.com/type": "local-dogu-registry"}},
            "data": data});
        documents.push_str(&format!("---\n{}\n", serde_json::to_string(&config_map).unwrap()));
    }
    snapshot = format!("{snapshot}\n{documents}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cluster.yaml");
    std::fs::write(&file, snapshot).unwrap();
    let blueprint = example("upgrade/blueprint.yaml");
    let from_registry = plan(&["-f", blueprint.to_str().unwrap(), "--cluster", file.to_str().unwrap(), "--now", NOW]);
    let from_folder = plan_example("upgrade/blueprint.yaml", "upgrade/cluster.yaml", &[]);
    assert_eq!(from_registry.status.code(), Some(2), "{}", stderr(&from_registry));
    assert!(!stdout(&from_registry).contains("no dogu descriptors"), "{}", stdout(&from_registry));
    assert_eq!(stdout(&from_registry), stdout(&from_folder), "the same descriptors, the same plan");
}

/// Strict input: a typo in a field name was dropped without a word (and the mask with it); now it is an
/// error naming the field's path, its line and the field meant.
#[test]
fn an_unknown_field_is_an_error_with_its_path_and_line() {
    let text = std::fs::read_to_string(example("upgrade/blueprint.yaml")).unwrap();
    let typo = text.replacen("  displayName:", "  blueprintMsk:\n    dogus: []\n  displayName:", 1);
    let line = typo.lines().position(|l| l.contains("blueprintMsk")).unwrap() + 1;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blueprint.yaml");
    std::fs::write(&file, &typo).unwrap();
    let cluster = example("upgrade/cluster.yaml");
    let output = plan(&["-f", file.to_str().unwrap(), "--cluster", cluster.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output).trim(),
        format!(
            "error: {}: line {line}, column 3: unknown field spec.blueprintMsk (did you mean spec.blueprintMask?)",
            file.display()
        )
    );
    assert!(stdout(&output).is_empty(), "no plan for a file that does not say what it means");
}

/// An uninstall is the most dangerous line of a plan (a dogu's data volumes may go with it): it is
/// announced before the list of changes, not only marked with a `-` among them.
#[test]
fn an_uninstall_is_announced_before_the_changes() {
    let text = std::fs::read_to_string(example("upgrade/blueprint.yaml")).unwrap();
    let mounts = "        platformConfig:\n          additionalMounts:\n            - sourceType: ConfigMap\n              name: company-landing-page\n              volume: customhtml\n";
    assert!(text.contains(mounts), "the example has nginx-static's mounts");
    let removed = text.replacen(
        &format!("        version: \"1.26.3-1\"\n{mounts}"),
        "        version: \"1.26.3-1\"\n        absent: true\n",
        1,
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blueprint.yaml");
    std::fs::write(&file, removed).unwrap();
    let (cluster, descriptors) = (example("upgrade/cluster.yaml"), example("descriptors"));
    let args = [
        "-f",
        file.to_str().unwrap(),
        "--cluster",
        cluster.to_str().unwrap(),
        "--descriptors",
        descriptors.to_str().unwrap(),
    ];
    let output = plan(&args);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stdout(&output);
    let warning =
        "\n!!! UNINSTALL 1 dogu(s): nginx-static. Their data volumes may be deleted with them; back them up first.\n";
    let at = text.find(warning).unwrap_or_else(|| panic!("no uninstall warning:\n{text}"));
    assert!(at < text.find("\nDogus:").unwrap(), "before the changes:\n{text}");
    assert!(text.contains("- nginx-static             uninstall: k8s/1.26.3-1 → absent"), "{text}");
    // Nothing is announced for a plan without an uninstall.
    let upgrade = plan_example("upgrade/blueprint.yaml", "upgrade/cluster.yaml", &[]);
    assert!(!stdout(&upgrade).contains("UNINSTALL"));
}

/// A snapshot's Restore in progress pauses the plan as it pauses the controller (D50).
#[test]
fn a_restore_in_progress_in_the_snapshot_pauses_the_plan() {
    let snapshot = std::fs::read_to_string(example("upgrade/cluster.yaml")).unwrap()
        + "\n---\n{apiVersion: k8s.cloudogu.com/v1, kind: Restore, metadata: {name: nightly, namespace: ecosystem}, status: {status: in progress}}\n";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cluster.yaml");
    std::fs::write(&file, snapshot).unwrap();
    let (blueprint, descriptors) = (example("upgrade/blueprint.yaml"), example("descriptors"));
    let output = plan(&[
        "-f",
        blueprint.to_str().unwrap(),
        "--cluster",
        file.to_str().unwrap(),
        "--descriptors",
        descriptors.to_str().unwrap(),
        "--now",
        NOW,
    ]);
    let text = stdout(&output);
    assert!(
        text.starts_with("Blueprint \"blueprint-ces\" (generation 4): paused: a restore is in progress\n"),
        "{text}"
    );
    assert!(text.contains("a restore is in progress (nightly)"), "{text}");
    assert!(text.contains("Actions: none in this reconcile."), "{text}");
}

/// The v3 example (README): its mask comes from the BlueprintMask of the second snapshot file, its
/// configRefs from that file's ConfigMap, its secretRef from that file's Secret, and postgresql is
/// installed with its storage class.
#[test]
fn the_v3_example_plans_with_its_mask_object_config_map_and_storage_class() {
    let output = plan_example(
        "v3/blueprint.yaml",
        "fresh-install/cluster.yaml",
        &["--cluster", example("v3/cluster.yaml").to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains(r#"postgresql               install: absent → official/14.17-2  (storage class "longhorn-ssd")"#),
        "{text}"
    );
    assert!(!text.contains("nginx-static"), "the BlueprintMask leaves nginx-static out: {text}");
    assert!(text.contains(r#"admin_group                    "admins" → "ces-admins""#), "{text}");
    assert!(text.contains(r#"logging/root                   set "WARN""#), "{text}");
    // A Secret's value in the normal config: named by its source, never shown (the Secret holds
    // "relay-password").
    assert!(text.contains("relay/password                 set from its Secret"), "{text}");
    assert!(text.contains("set relay/password = from Secret mail-relay/password"), "{text}");
    assert!(!text.contains("relay-password"), "{text}");
    assert_eq!(stderr(&output), "");
}
