//! The journal and `replay`: the corpus recorded from the sandbox scenarios replays identically,
//! divergences read well, the command's exit codes, rotation, and no secret in a journal.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use blueprint_machine::State;
use blueprint_operator::journal::reader::{self, Entry};
use blueprint_operator::journal::replay::{Verdict, verdict};
use blueprint_operator::journal::{Journal, JournalSettings, ReadError, read_files};
use blueprint_operator::sandbox::seed;
use blueprint_operator::sandbox::session::{Sandbox, SandboxOptions};
use serde_json::Value;

/// The scenarios of `tests/sandbox/e2e.rs` recorded by `make record-corpus`.
const SCENARIOS: [&str; 11] = [
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
];

fn corpus(scenario: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/replay/{scenario}.jsonl"))
}

fn binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
}

#[test]
fn the_corpus_replays_identically() {
    let mut states = std::collections::HashSet::new();
    let (mut records, mut failures, mut versions) = (0, 0, BTreeSet::new());
    let mut divergences = Vec::new();
    for scenario in SCENARIOS {
        let entries = read_files(&[corpus(scenario)]).unwrap_or_else(|e| panic!("{scenario}: {e}"));
        assert!(!entries.is_empty(), "{scenario}: no records");
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
    assert!(failures > 0, "no record of a failed apply");
    assert!(versions.len() > 1, "no record of an operator upgrade: {versions:?}");
    assert!(records >= 50, "{records} records");
}

/// The first record of the fresh install: it creates every dogu.
fn fresh_install_first() -> Entry {
    read_files(&[corpus("fresh-install")]).unwrap().remove(0)
}

#[test]
fn a_changed_decision_reads_as_what_changed() {
    let entry = fresh_install_first();
    let mut record = entry.record.clone();
    let decision = record.decision.as_mut().unwrap();
    // What an older operator might have decided: Valid with another reason, one create less, a
    // different requeue.
    let status = decision.status.as_mut().unwrap();
    let valid = status.conditions.iter_mut().find(|c| c.type_ == "Valid").unwrap();
    valid.reason = "SomethingElse".into();
    let removed = decision.actions.iter().position(|a| a.operation.object() == "components/k8s-longhorn").unwrap();
    decision.actions.remove(removed);
    decision.requeue = blueprint_machine::Requeue::after(10, "older");

    let Verdict::Divergent(lines) = verdict(&record) else { panic!("not divergent") };
    assert!(lines.iter().any(|l| l == "status.conditions[Valid].reason: \"SomethingElse\" → \"Valid\""), "{lines:#?}");
    assert!(lines.iter().any(|l| l.starts_with("actions[createComponent k8s-longhorn]: added {")), "{lines:#?}");
    assert!(lines.iter().any(|l| l == "requeue.after: 10.0 → 1.0"), "{lines:#?}");
    assert!(lines.iter().all(|l| !l.contains("conditions[0]")), "conditions are named by type: {lines:#?}");
    assert_eq!(verdict(&entry.record), Verdict::Identical);
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
    assert!(reader::parse(file, "\n\n").unwrap().is_empty(), "blank lines are skipped");
}

#[test]
fn rotation_keeps_the_newest_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    let record = fresh_install_first().record;
    let size = serde_json::to_vec(&record).unwrap().len() as u64 + 1;
    // Three records fit in a file; two rotated files are kept.
    let journal = Journal::open(JournalSettings { path: path.clone(), max_bytes: 3 * size + 10, keep: 2 }).unwrap();
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
    let journal = Journal::open(JournalSettings { path: path.clone(), max_bytes: 3 * size + 10, keep: 2 }).unwrap();
    journal.append(&record).unwrap();
    let names: Vec<String> =
        read_files(std::slice::from_ref(&path)).unwrap().into_iter().map(|e| e.record.blueprint).collect();
    assert_eq!(names, ["r9", "blueprint-ces"], "appended after r9");
}

/// Every Secret value in the emulator, encoded as stored and decoded.
fn secret_values(sandbox: &Sandbox) -> Vec<String> {
    let mut values = Vec::new();
    for secret in sandbox.emulator.list("v1", "Secret") {
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

#[tokio::test(start_paused = true)]
async fn a_live_journal_replays_identically_and_holds_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    let journal = Arc::new(Journal::open(JournalSettings { path: path.clone(), max_bytes: 1 << 30, keep: 1 }).unwrap());
    let options = SandboxOptions { virtual_clock: true, journal: Some(journal), ..Default::default() };
    let mut sandbox = Sandbox::start(options, None).await.unwrap();
    seed::cluster(&sandbox.emulator, &sandbox.namespace, &seed::objects(seed::DEFAULT_CLUSTER).unwrap()).unwrap();
    seed::registry(&sandbox.emulator, &sandbox.registry, &sandbox.namespace, &seed::builtin_descriptors()).unwrap();
    sandbox.start_controller("0.1.0");
    sandbox.apply_blueprint(&crate::sandbox::e2e::default_blueprint()).unwrap();
    let done = sandbox.wait_until("blueprint-ces", Duration::from_secs(600), crate::sandbox::e2e::completed).await;
    assert!(done.is_some());
    let secrets = secret_values(&sandbox);
    let wrote_sensitive_config = sandbox.emulator.get("v1", "Secret", "ecosystem", "redmine-config").is_some();
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
