//! The two ways to build the operator's image stay one: the Dockerfile (for those with a container
//! engine and a registry) and `make image` (tools/image/build.sh, offline, what the node's tests run).
//! The Dockerfile's build stage copies every file the build reads; the script's image has the
//! Dockerfile's user, entrypoint, command and binary path, and everything the binary loads.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::crd::repository;

/// The Dockerfile's instructions, `(stage, instruction, arguments)`, stages counted from 0.
fn dockerfile() -> Vec<(usize, String, String)> {
    let text = std::fs::read_to_string(repository("Dockerfile")).unwrap();
    let mut stage = 0;
    let mut instructions = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (instruction, arguments) = line.split_once(' ').unwrap();
        if instruction == "FROM" && !instructions.is_empty() {
            stage += 1;
        }
        instructions.push((stage, instruction.to_owned(), arguments.to_owned()));
    }
    instructions
}

/// Every file a source file of `dir` includes at compile time (`include_str!`, `include_bytes!`),
/// relative to the repository.
fn included(dir: &Path, found: &mut BTreeSet<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            included(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            for macro_name in ["include_str!(\"", "include_bytes!(\""] {
                for (at, _) in text.match_indices(macro_name) {
                    let rest = &text[at + macro_name.len()..];
                    let target = &rest[..rest.find('"').unwrap()];
                    let file = path.parent().unwrap().join(target);
                    let file = file.canonicalize().unwrap_or_else(|e| panic!("{}: {target}: {e}", path.display()));
                    found.insert(file.strip_prefix(repository("")).unwrap().to_owned());
                }
            }
        }
    }
}

#[test]
fn the_dockerfile_copies_everything_the_build_reads() {
    let copied: Vec<String> = dockerfile()
        .into_iter()
        .filter(|(stage, instruction, _)| *stage == 0 && instruction == "COPY")
        .flat_map(|(_, _, arguments)| {
            let mut parts: Vec<String> = arguments.split_whitespace().map(str::to_owned).collect();
            parts.pop(); // the destination
            parts
        })
        .collect();
    let mut needed: BTreeSet<PathBuf> =
        ["Cargo.toml", "Cargo.lock", "machine", "src"].iter().map(PathBuf::from).collect();
    // Cargo reads every target the manifest names, benches and tests included.
    needed.extend(["benches", "tests"].iter().map(PathBuf::from));
    // build.rs, and the linker's order of the hot functions it hands on.
    needed.extend(["build.rs", "tools/link-order/hot-functions.txt"].iter().map(PathBuf::from));
    included(&repository("src"), &mut needed);
    included(&repository("machine/src"), &mut needed);
    assert!(needed.iter().any(|p| p.starts_with("examples")), "the sandbox builds in the examples");
    let missing: Vec<&PathBuf> =
        needed.iter().filter(|path| !copied.iter().any(|c| path.starts_with(c.trim_end_matches('/')))).collect();
    assert!(missing.is_empty(), "the Dockerfile's build stage does not copy {missing:?} (copies {copied:?})");
}

/// The config and the files of the image `tools/image/build.sh` makes of `binary`.
fn build(binary: &Path, dir: &Path) -> (Value, BTreeSet<String>) {
    let archive = dir.join("image.tar");
    let output = Command::new(repository("tools/image/build.sh"))
        .arg(binary)
        .arg("example.com/blueprint-operator:test")
        .arg(&archive)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let layout = dir.join("layout");
    std::fs::create_dir_all(&layout).unwrap();
    let status = Command::new("tar").arg("-xf").arg(&archive).arg("-C").arg(&layout).status().unwrap();
    assert!(status.success());
    let blob = |digest: &str| layout.join("blobs/sha256").join(digest.trim_start_matches("sha256:"));
    let index: Value = serde_json::from_str(&std::fs::read_to_string(layout.join("index.json")).unwrap()).unwrap();
    let entry = &index["manifests"][0];
    assert_eq!(entry["annotations"]["io.containerd.image.name"], "example.com/blueprint-operator:test");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(blob(entry["digest"].as_str().unwrap())).unwrap()).unwrap();
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(blob(manifest["config"]["digest"].as_str().unwrap())).unwrap())
            .unwrap();
    let layer = blob(manifest["layers"][0]["digest"].as_str().unwrap());
    let listing = Command::new("tar").arg("-tzf").arg(&layer).output().unwrap();
    let files = String::from_utf8_lossy(&listing.stdout)
        .lines()
        .map(|line| line.trim_start_matches('.').trim_end_matches('/').to_owned())
        .collect();
    (config, files)
}

#[test]
fn make_image_builds_what_the_dockerfile_describes() {
    let last: Vec<(String, String)> = {
        let all = dockerfile();
        let stage = all.last().unwrap().0;
        all.into_iter().filter(|(s, ..)| *s == stage).map(|(_, i, a)| (i, a)).collect()
    };
    let value = |instruction: &str| last.iter().find(|(i, _)| i == instruction).map(|(_, a)| a.clone()).unwrap();
    let destination = value("COPY").split_whitespace().last().unwrap().to_owned();

    // A small dynamically linked program (ls links libraries of other packages than libc) stands in
    // for the release binary, which `make image` builds, not the tests: the script treats every binary
    // alike, and the node's tests run the real image.
    let binary = PathBuf::from("/bin/ls");
    let dir = tempfile::tempdir().unwrap();
    let (config, files) = build(&binary, dir.path());
    let config = &config["config"];
    assert_eq!(config["User"], value("USER"));
    assert_eq!(config["Entrypoint"], serde_json::from_str::<Value>(&value("ENTRYPOINT")).unwrap());
    assert_eq!(config["Cmd"], serde_json::from_str::<Value>(&value("CMD")).unwrap());
    assert!(files.contains(&destination), "{destination} in {files:?}");
    // What the binary loads, and the CA certificates the dogu registry's TLS trusts.
    let ldd = Command::new("ldd").arg(&binary).output().unwrap();
    for library in String::from_utf8_lossy(&ldd.stdout).lines().filter_map(|line| {
        let path = line.split_whitespace().find(|word| word.starts_with('/'))?;
        Some(path.to_owned())
    }) {
        assert!(files.contains(&library), "{library} in {files:?}");
    }
    assert!(files.contains("/etc/ssl/certs/ca-certificates.crt"));
    assert!(files.iter().any(|f| f.starts_with("/usr/share/doc/libc6")), "the libraries' copyright notices");
    let labels = config["Labels"]["org.opencontainers.image.base.name"].as_str().unwrap_or_default();
    assert!(labels.contains("libc6=") && labels.contains("ca-certificates="), "the packages named: {labels}");
    let passwd = files.contains("/etc/passwd");
    assert!(passwd, "the nonroot user's entry");
}
