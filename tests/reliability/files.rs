//! Local files are read with a bound, and large inputs in the memory they need: a CA file of
//! `/dev/zero` grew the operator without end; `plan` refused a real 5,000-Dogu snapshot (5.6 MB) for
//! its YAML budget, and held a file twice; `replay` took 4.8 times a journal's size.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

fn binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
}

/// Runs `command` to its end: exit code, stderr, and the child's peak resident memory in KiB. The peak
/// is the kernel's high-water mark (`VmHWM`, which starts afresh at `exec`, so the test process's own
/// memory is not counted), read every 10 ms while the child runs.
fn run_measured(command: Command) -> (i32, String, u64) {
    let (code, stderr, peak, _) = run_measured_anon(command);
    (code, stderr, peak)
}

/// [`run_measured`], and the peak of its anonymous memory (`RssAnon`, sampled every 10 ms): what the
/// process allocated, without the pages of its binary (a debug build maps tens of MiB of code, and
/// grows with every feature).
fn run_measured_anon(mut command: Command) -> (i32, String, u64, u64) {
    let mut child = command.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut text).unwrap();
        text
    });
    let field = |status: &str, name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok()
    };
    let (mut peak, mut peak_anon) = (0, 0);
    let status = loop {
        if let Ok(status) = std::fs::read_to_string(&status_file) {
            peak = peak.max(field(&status, "VmHWM:").unwrap_or(0));
            peak_anon = peak_anon.max(field(&status, "RssAnon:").unwrap_or(0));
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    (status.code().unwrap_or(-1), reader.join().unwrap(), peak, peak_anon)
}

#[test]
fn run_refuses_a_ca_file_that_never_ends() {
    let output = binary()
        .arg("run")
        .env("NAMESPACE", "ecosystem")
        .env("DOGU_REGISTRY_ENDPOINT", "https://dogu.example.com")
        .env("DOGU_REGISTRY_CA_FILE", "/dev/zero")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("DOGU_REGISTRY_CA_FILE: the CA file /dev/zero: larger than 4 MiB: not read"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
}

#[test]
fn plan_refuses_a_blueprint_file_that_never_ends() {
    let output = binary().args(["plan", "-f", "/dev/zero", "--cluster", "/dev/null"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("/dev/zero: larger than 16 MiB: not read"), "{stderr}");
}

fn snapshot(dir: &Path, dogus: usize) -> std::path::PathBuf {
    let path = dir.join("cluster.yaml");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    writeln!(file, "apiVersion: v1\nkind: List\nitems:").unwrap();
    for i in 0..dogus {
        // As kubectl prints a Dogu CR and its config ConfigMap.
        write!(
            file,
            "- apiVersion: k8s.cloudogu.com/v2\n  kind: Dogu\n  metadata:\n    name: dogu-{i}\n    namespace: ecosystem\n    \
             creationTimestamp: \"2026-01-01T00:00:00Z\"\n    generation: 1\n    resourceVersion: \"{i}\"\n    \
             uid: 00000000-0000-4000-8000-{i:012}\n    labels:\n      app: ces\n      dogu.name: dogu-{i}\n  spec:\n    \
             name: official/dogu-{i}\n    version: 1.0.0-1\n    resources:\n      dataVolumeSize: 2Gi\n  status:\n    \
             health: available\n    installedVersion: 1.0.0-1\n    status: installed\n    \
             startedAt: \"2026-01-01T00:00:00Z\"\n\
             - apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: dogu-{i}-config\n    namespace: ecosystem\n    \
             labels:\n      app: ces\n      dogu.name: dogu-{i}\n      k8s.cloudogu.com/type: dogu-config\n  \
             data:\n    config.yaml: |\n      logging:\n        root: WARN\n      container_config:\n        \
             memory_limit: 512m\n"
        )
        .unwrap();
    }
    drop(file);
    path
}

#[test]
fn plan_reads_a_real_sized_cluster_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = snapshot(dir.path(), 5000);
    let size = std::fs::metadata(&cluster).unwrap().len();
    assert!(size > 4_000_000, "{size} bytes");
    let blueprint = dir.path().join("blueprint.yaml");
    std::fs::write(
        &blueprint,
        "apiVersion: k8s.cloudogu.com/v2\nkind: Blueprint\nmetadata: {name: b, namespace: ecosystem}\n\
         spec: {blueprint: {dogus: [{name: official/dogu-1, version: 1.0.0-1}]}}\n",
    )
    .unwrap();
    let mut command = binary();
    command.args(["plan", "-f"]).arg(&blueprint).arg("--cluster").arg(&cluster);
    let (code, stderr, peak_kib) = run_measured(command);
    assert!(code == 0 || code == 2, "exit {code}: {stderr}");
    assert!(!stderr.contains("budget"), "{stderr}");
    println!("plan of a {size}-byte snapshot: peak RSS {peak_kib} KiB");
}

#[test]
fn replay_takes_the_memory_of_one_record_not_of_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/replay/fresh-install.jsonl");
    let text = std::fs::read_to_string(&corpus).unwrap();
    let journal = dir.path().join("big.jsonl");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&journal).unwrap());
    while file.get_ref().metadata().unwrap().len() < 60_000_000 {
        file.write_all(text.as_bytes()).unwrap();
        file.flush().unwrap();
    }
    drop(file);
    let size_kib = std::fs::metadata(&journal).unwrap().len() / 1024;
    let mut command = binary();
    command.arg("replay").arg(&journal);
    let (code, stderr, peak_kib, anon_kib) = run_measured_anon(command);
    assert_eq!(code, 0, "{stderr}");
    // Before: all records in memory, about 4.8 times the journal (290 MB for this one). Measured as
    // anonymous memory: the debug binary's mapped code alone was 27 MiB of a 30 MiB peak.
    assert!(anon_kib < size_kib / 8, "replay of a {size_kib} KiB journal took {anon_kib} KiB of anonymous memory");
    println!("replay of a {size_kib} KiB journal: peak RSS {peak_kib} KiB, of it anonymous {anon_kib} KiB");
}
