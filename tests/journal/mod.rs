//! The journal and `replay`: the corpus recorded from the sandbox scenarios replays identically,
//! divergences read well, the command's exit codes, rotation, and no secret in a journal.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use base64::Engine;
use blueprint_machine::State;
use blueprint_operator::journal::reader::{self, Entry};
use blueprint_operator::journal::replay::{Verdict, verdict};
use blueprint_operator::journal::{Journal, JournalSettings, ReadError};
use blueprint_operator::sandbox::seed;
use blueprint_operator::sandbox::session::{Sandbox, SandboxOptions};
use serde_json::Value;

/// The scenarios of `tests/sandbox/e2e/` (their emulator runs) recorded by `make record-corpus` (every file in
/// `tests/replay/` is replayed; these must be among them).
const SCENARIOS: [&str; 14] = [
    "fresh-install",
    "upgrade",
    "self-upgrade",
    "unhealthy",
    "stopped",
    "drift",
    "invalid",
    "forbidden-downgrade",
    "registry-unavailable",
    "apply-failure",
    "status-conflict",
    "config-conflict",
    "config-change",
    "two-blueprints",
];

fn corpus(scenario: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/replay/{scenario}.jsonl"))
}

fn corpus_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/replay");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

fn read_files(files: &[PathBuf]) -> Result<Vec<Entry>, ReadError> {
    let read = blueprint_operator::journal::read_files(files)?;
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    Ok(read.entries)
}

fn binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
}

#[test]
fn the_corpus_replays_identically() {
    let mut states = std::collections::HashSet::new();
    let (mut records, mut failures, mut versions) = (0, 0, BTreeSet::new());
    let mut divergences = Vec::new();
    let files = corpus_files();
    for scenario in SCENARIOS {
        assert!(files.contains(&corpus(scenario)), "the corpus has no {scenario}");
    }
    for file in &files {
        let entries = read_files(std::slice::from_ref(file)).unwrap_or_else(|e| panic!("{e}"));
        assert!(!entries.is_empty(), "{}: no records", file.display());
        for entry in &entries {
            records += 1;
            let record = &entry.record;
            states.extend(record.decision.as_ref().map(|d| d.state));
            failures += usize::from(record.execution.failure.is_some());
            versions.insert(record.operator_version.clone());
            if let Verdict::Divergent(lines) = verdict(record) {
                divergences.push(format!("{}:{}\n  {}", entry.file.display(), entry.line, lines.join("\n  ")));
            }
        }
    }
    assert!(
        divergences.is_empty(),
        "the machine now decides differently; fix it, or re-record on purpose with `make record-corpus`:\n{}",
        divergences.join("\n")
    );
    // The corpus exercises what replay is for: every kind of state, failures, an operator upgrade.
    for state in [
        State::MultipleBlueprints,
        State::AwaitingDogus,
        State::Invalid,
        State::ValidationPending,
        State::NotExecutable,
        State::Stopped,
        State::AwaitingHealth,
        State::SelfUpgrading,
        State::ApplyingDogus,
        State::Completed,
    ] {
        assert!(states.contains(&state), "no record of {state}: {states:?}");
    }
    assert!(failures > 1, "no records of failed applies (a server error and a conflict)");
    assert!(versions.len() > 1, "no record of an operator upgrade: {versions:?}");
    assert!(records >= 50, "{records} records");
}

/// The first record of the fresh install: it creates every dogu.
fn fresh_install_first() -> Entry {
    read_files(&[corpus("fresh-install")]).unwrap().remove(0)
}

/// Every corpus record written again is the line it was read from: a change to how an Observation,
/// Decision or Record serializes (a renamed, added or dropped field) fails here, and is either undone
/// or made on purpose: with `FORMAT` bumped once a release has written journals, and the corpus
/// re-recorded.
#[test]
fn the_format_is_what_the_corpus_was_written_in() {
    for file in corpus_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (entry, line) in read_files(std::slice::from_ref(&file)).unwrap().iter().zip(text.lines()) {
            let written = serde_json::to_string(&entry.record).unwrap();
            assert!(written == line, "{}:{}: the record reads back differently", file.display(), entry.line);
        }
    }
}

#[test]
fn a_changed_decision_reads_as_what_changed() {
    let entry = fresh_install_first();
    let mut record = entry.record.clone();
    let decision = record.decision.as_mut().unwrap();
    // What an older operator might have decided: Valid with another reason, one create less, a
    // different requeue.
    let status = std::sync::Arc::make_mut(decision.status.as_mut().unwrap());
    let valid = status.conditions.iter_mut().find(|c| c.type_ == "Valid").unwrap();
    valid.reason = "SomethingElse".into();
    let removed = decision.actions.iter().position(|a| a.operation.object() == "components/k8s-longhorn").unwrap();
    decision.actions.remove(removed);
    decision.requeue = blueprint_machine::Requeue::after(10, "older");

    let Verdict::Divergent(lines) = verdict(&record) else { panic!("not divergent") };
    assert!(lines.iter().any(|l| l == "status.conditions[Valid].reason: \"SomethingElse\" → \"Valid\""), "{lines:#?}");
    assert!(
        lines.iter().any(|l| l.starts_with("actions[components createComponent k8s-longhorn]: added {")),
        "{lines:#?}"
    );
    assert!(lines.iter().any(|l| l == "requeue.after: 10.0 → 1.0"), "{lines:#?}");
    assert!(lines.iter().all(|l| !l.contains("conditions[0]")), "conditions are named by type: {lines:#?}");
    assert_eq!(verdict(&entry.record), Verdict::Identical);
}

#[test]
fn actions_are_named_by_stage_kind_and_object_and_numbered_when_repeated() {
    // The record of the upgrade with the most actions (pauses, config writes, upgrades).
    let entry = read_files(&[corpus("upgrade")])
        .unwrap()
        .into_iter()
        .max_by_key(|e| e.record.decision.as_ref().map(|d| d.actions.len()))
        .unwrap();
    let mut record = entry.record.clone();
    let actions = &mut record.decision.as_mut().unwrap().actions;
    assert!(actions.len() >= 3, "{} actions", actions.len());
    // One action less, and one twice: two lines, not one per shifted position.
    let first = actions.remove(0);
    let repeated = actions.last().unwrap().clone();
    actions.push(repeated.clone());
    let Verdict::Divergent(lines) = verdict(&record) else { panic!("not divergent") };
    assert_eq!(lines.len(), 2, "{lines:#?}");
    let name = |a: &blueprint_machine::Action| {
        let value = serde_json::to_value(a).unwrap();
        format!("actions[{} {} ", value["stage"].as_str().unwrap(), value["kind"].as_str().unwrap())
    };
    assert!(lines[0].starts_with(&name(&repeated)) && lines[0].contains("#2]: removed {"), "{lines:#?}");
    assert!(lines[1].starts_with(&name(&first)) && lines[1].contains("]: added {"), "{lines:#?}");
}

fn write_journal(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(str::to_owned).collect()
}

#[test]
fn replay_exits_0_when_identical_1_on_a_divergence_2_on_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let output = binary().arg("replay").arg(corpus("fresh-install")).arg(corpus("upgrade")).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.ends_with("replayed 10 records of 2 files: 10 identical, 0 divergent, 0 skipped\n"), "{stdout}");

    // A divergence: the third record says it completed.
    let mut lines = lines_of(&corpus("fresh-install"));
    let mut third: Value = serde_json::from_str(&lines[2]).unwrap();
    third["decision"]["state"] = "Completed".into();
    lines[2] = third.to_string();
    let changed = write_journal(dir.path(), "changed.jsonl", &lines);
    let output = binary().arg("replay").arg(&changed).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let heading = format!("divergent: #3 {}:3 ", changed.display());
    assert!(stdout.starts_with(&heading), "{stdout}");
    assert!(stdout.contains("\n  state: \"Completed\" → \""), "{stdout}");
    assert!(stdout.ends_with("replayed 5 records of 1 file: 4 identical, 1 divergent, 0 skipped\n"), "{stdout}");

    // A line that is not a record: exit 2, named by file and line.
    let mut lines = lines_of(&corpus("fresh-install"));
    lines[1] = "{\"format\": 1, \"operatorVersion\": ".into();
    let broken = write_journal(dir.path(), "broken.jsonl", &lines);
    let output = binary().arg("replay").arg(&broken).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr.starts_with(&format!("error: {}:2: not a journal record: ", broken.display())), "{stderr}");

    // A newer format: named, not "malformed".
    let mut lines = lines_of(&corpus("fresh-install"));
    let mut first: Value = serde_json::from_str(&lines[0]).unwrap();
    first["format"] = 2.into();
    lines[0] = first.to_string();
    let newer = write_journal(dir.path(), "newer.jsonl", &lines);
    let output = binary().arg("replay").arg(&newer).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr.contains(":1: journal format 2 is newer than this operator reads (format 1)"), "{stderr}");
}

#[test]
fn explain_prints_one_record_as_plan_does() {
    let output = binary().args(["replay", "--explain", "1"]).arg(corpus("fresh-install")).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.starts_with("record #1 "), "{stdout}");
    assert!(stdout.contains("Blueprint \"blueprint-ces\" (generation 1)"), "{stdout}");
    assert!(stdout.contains("  + cas "), "the dogu diff, as plan shows it: {stdout}");
    assert!(stdout.contains("\nexecuted:\n  actions performed: "), "{stdout}");
    assert!(stdout.ends_with("replayed by this operator (0.1.0):\n  identical\n"), "{stdout}");

    let output = binary().args(["replay", "--explain", "99"]).arg(corpus("fresh-install")).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&output.stderr), "error: there is no record 99: the journal has 5\n");
}

#[test]
fn reading_names_the_problem_and_the_line() {
    let file = Path::new("j.jsonl");
    let error = reader::parse(file, "\n{\"format\": 1}\n").unwrap_err();
    assert!(matches!(error, ReadError::Malformed { line: 2, .. }), "{error}");
    let error = reader::parse(file, "[1, 2]\n").unwrap_err();
    assert_eq!(error.to_string(), "j.jsonl:1: not a journal record: it has no \"format\" number");
    let error = reader::parse(file, "{\"format\": 0}\n").unwrap_err();
    assert_eq!(error.to_string(), "j.jsonl:1: journal format 0 is no longer read (this operator reads format 1)");
    assert!(reader::parse(file, "\n\n").unwrap().entries.is_empty(), "blank lines are skipped");
}

#[test]
fn a_torn_last_line_is_skipped_with_a_warning_and_cut_off_on_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let lines = lines_of(&corpus("fresh-install"));
    // A writer that stopped half-way through the third line.
    let path = dir.path().join("torn.jsonl");
    let torn = format!("{}\n{}\n{}", lines[0], lines[1], &lines[2][..lines[2].len() / 2]);
    std::fs::write(&path, &torn).unwrap();
    let read = blueprint_operator::journal::read_files(std::slice::from_ref(&path)).unwrap();
    assert_eq!(read.entries.len(), 2);
    assert_eq!(
        read.warnings,
        [format!("{}:3: skipped a torn last line (the writer stopped mid-line)", path.display())]
    );
    let output = binary().arg("replay").arg(&path).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stderr).starts_with("warning: "), "the warning is shown");
    // A torn line in the middle is not a torn last line: an error.
    std::fs::write(&path, format!("{}\n{}\n", &lines[0][..10], lines[1])).unwrap();
    let error = blueprint_operator::journal::read_files(std::slice::from_ref(&path)).unwrap_err();
    assert!(matches!(error, ReadError::Malformed { line: 1, .. }), "{error}");

    // The writer reopens the torn file: the half line is cut off, the next record starts a line.
    std::fs::write(&path, &torn).unwrap();
    let mut journal = Journal::open(JournalSettings { path: path.clone(), max_bytes: u64::MAX, keep: 1 }).unwrap();
    journal.append(&fresh_install_first().record).unwrap();
    let names: Vec<usize> = read_files(std::slice::from_ref(&path)).unwrap().iter().map(|e| e.line).collect();
    assert_eq!(names, [1, 2, 3], "whole lines only");
}

#[test]
fn a_record_naming_an_action_its_decision_lacks_is_malformed() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = lines_of(&corpus("apply-failure"));
    let index = lines.iter().position(|l| l.contains("\"failure\"")).unwrap();
    let mut record: Value = serde_json::from_str(&lines[index]).unwrap();
    record["execution"]["failure"]["action"] = u64::MAX.into();
    lines[index] = record.to_string();
    let bad = write_journal(dir.path(), "bad.jsonl", &lines);
    let output = binary().args(["replay", "--explain", "1"]).arg(&bad).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let expected = format!(
        "error: {}:{}: not a journal record: the failed action {} is not in a decision with ",
        bad.display(),
        index + 1,
        u64::MAX
    );
    assert!(stderr.starts_with(&expected), "{stderr}");
}

#[test]
fn a_journal_replaced_under_the_writer_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    let record = fresh_install_first().record;
    let mut journal = Journal::open(JournalSettings { path: path.clone(), max_bytes: u64::MAX, keep: 1 }).unwrap();
    journal.append(&record).unwrap();
    // Someone moves the file away (logrotate without copytruncate, or by hand).
    std::fs::rename(&path, dir.path().join("moved.jsonl")).unwrap();
    journal.append(&record).unwrap();
    assert_eq!(read_files(std::slice::from_ref(&path)).unwrap().len(), 1, "the next record is in a new file at PATH");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "readable by its owner only");
    }
}

#[test]
fn rotation_keeps_the_newest_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    let record = fresh_install_first().record;
    let size = serde_json::to_vec(&record).unwrap().len() as u64 + 1;
    // Three records fit in a file; two rotated files are kept.
    let mut journal = Journal::open(JournalSettings { path: path.clone(), max_bytes: 3 * size + 10, keep: 2 }).unwrap();
    for n in 0..10 {
        let mut numbered = record.clone();
        numbered.blueprint = format!("r{n}");
        journal.append(&numbered).unwrap();
    }
    let rotated = |n: usize| PathBuf::from(format!("{}.{n}", path.display()));
    assert!(!rotated(3).exists(), "only two rotated files are kept");
    let order = read_files(&[rotated(2), rotated(1), path.clone()]).unwrap();
    let names: Vec<&str> = order.iter().map(|e| e.record.blueprint.as_str()).collect();
    // r0–r2 filled the first file; it was rotated twice and fell off.
    assert_eq!(names, ["r3", "r4", "r5", "r6", "r7", "r8", "r9"], "oldest first");
    for file in [rotated(2), rotated(1), path.clone()] {
        assert!(std::fs::metadata(&file).unwrap().len() <= 3 * size + 10);
    }
    // A reopened journal appends to what is there.
    drop(journal);
    let mut journal = Journal::open(JournalSettings { path: path.clone(), max_bytes: 3 * size + 10, keep: 2 }).unwrap();
    journal.append(&record).unwrap();
    let names: Vec<String> =
        read_files(std::slice::from_ref(&path)).unwrap().into_iter().map(|e| e.record.blueprint).collect();
    assert_eq!(names, ["r9", "blueprint-ces"], "appended after r9");
}

/// Every Secret value in the emulator, encoded as stored and decoded.
fn secret_values(sandbox: &Sandbox) -> Vec<String> {
    let mut values = Vec::new();
    for secret in sandbox.emulator().list("v1", "Secret") {
        for value in secret["data"].as_object().into_iter().flat_map(|d| d.values()) {
            let encoded = value.as_str().unwrap().to_owned();
            let decoded = base64::engine::general_purpose::STANDARD.decode(&encoded).unwrap();
            let decoded = String::from_utf8(decoded).unwrap();
            values.extend(decoded.lines().filter(|l| l.len() >= 8).map(str::to_owned));
            values.push(decoded);
            values.push(encoded);
        }
    }
    values
}

/// The default sandbox, seeded, recording into `dir/journal.jsonl`, its controller started.
async fn journaled_sandbox(dir: &std::path::Path) -> (Sandbox, std::path::PathBuf) {
    let path = dir.join("journal.jsonl");
    let journal = JournalSettings { path: path.clone(), max_bytes: 1 << 30, keep: 1 };
    let options = SandboxOptions { virtual_clock: true, journal: Some(journal), ..Default::default() };
    let mut sandbox = Sandbox::start(options, None).await.unwrap();
    seed::cluster(&sandbox.cluster, &sandbox.namespace, &seed::objects(seed::DEFAULT_CLUSTER).unwrap()).await.unwrap();
    seed::registry(&sandbox.cluster, &sandbox.registry, &sandbox.namespace, &seed::builtin_descriptors())
        .await
        .unwrap();
    sandbox.start_controller("0.1.0");
    (sandbox, path)
}

#[tokio::test(start_paused = true)]
async fn a_live_journal_replays_identically_and_holds_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let (mut sandbox, path) = journaled_sandbox(dir.path()).await;
    sandbox.apply_blueprint(&crate::sandbox::e2e::default_blueprint()).await.unwrap();
    let done = sandbox.wait_until("blueprint-ces", Duration::from_secs(600), crate::sandbox::e2e::completed).await;
    assert!(done.is_some());
    let secrets = secret_values(&sandbox);
    let wrote_sensitive_config = sandbox.emulator().get("v1", "Secret", "ecosystem", "redmine-config").is_some();
    sandbox.shutdown().await;

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(secrets.iter().any(|s| s.contains("super-secret-ldap-password")), "the scenario has a secret value");
    assert!(wrote_sensitive_config, "the sensitive config was written: later records observed its digest");
    for secret in &secrets {
        assert!(!text.contains(secret.as_str()), "a Secret value is in the journal: {secret:?}");
    }
    let entries = read_files(&[path]).unwrap();
    assert!(entries.len() >= 4, "{} records", entries.len());
    for entry in &entries {
        assert_eq!(verdict(&entry.record), Verdict::Identical, "record {}", entry.line);
    }
}

/// A blueprint with sensitive values written in plain text (which validation rejects) and a copy of
/// them in kubectl's last-applied annotation: the journal keeps neither.
#[tokio::test(start_paused = true)]
async fn plaintext_sensitive_values_in_a_blueprint_never_reach_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let (mut sandbox, path) = journaled_sandbox(dir.path()).await;
    let yaml = r#"
apiVersion: k8s.cloudogu.com/v2
kind: Blueprint
metadata: {name: blueprint-ces, namespace: ecosystem}
spec:
  blueprint:
    dogus: [{name: official/postfix, version: "3.9.0-2"}]
    config:
      global:
        - {key: smtp/password, sensitive: true, value: PLAINTEXT-GLOBAL-VALUE}
      dogus:
        postfix:
          - {key: relay/password, sensitive: true, value: PLAINTEXT-DOGU-VALUE}
"#;
    let blueprint: blueprint_machine::api::Blueprint = serde_saphyr::from_str(yaml).unwrap();
    sandbox.apply_blueprint(&blueprint).await.unwrap();
    let annotation = serde_json::to_string(&blueprint).unwrap();
    sandbox
        .emulator()
        .edit("k8s.cloudogu.com/v2", "Blueprint", "ecosystem", "blueprint-ces", |b| {
            b["metadata"]["annotations"] =
                serde_json::json!({"kubectl.kubernetes.io/last-applied-configuration": annotation});
        })
        .unwrap();
    let invalid = sandbox
        .wait_until("blueprint-ces", Duration::from_secs(600), |b| {
            b.status.as_ref().is_some_and(|s| s.conditions.iter().any(|c| c.type_ == "Valid" && c.status == "False"))
        })
        .await;
    assert!(invalid.is_some(), "rejected by validation");
    sandbox.shutdown().await;
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.lines().count() >= 1);
    for plaintext in ["PLAINTEXT-GLOBAL-VALUE", "PLAINTEXT-DOGU-VALUE"] {
        assert!(!text.contains(plaintext), "{plaintext} is in the journal");
    }
    assert!(text.contains(blueprint_operator::journal::REDACTED), "the values were replaced, not dropped");
    for entry in read_files(&[path]).unwrap() {
        assert_eq!(verdict(&entry.record), Verdict::Identical, "redaction changes no decision");
    }
}
