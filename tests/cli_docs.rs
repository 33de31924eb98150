//! The command line documents itself: `run --help` lists every environment variable the settings read,
//! `completions` and `man` are generated from the same definition, so they name every subcommand.

use std::process::Command;

fn run(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_blueprint-operator")).args(args).output().expect("the binary runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

const SUBCOMMANDS: &[&str] = &["run", "plan", "status", "sandbox", "replay", "convert", "completions", "man", "crd"];

#[test]
fn run_help_lists_every_environment_variable_with_its_default() {
    let (code, help, _) = run(&["run", "--help"]);
    assert_eq!(code, 0);
    for (name, default, _) in blueprint_operator::config::ENVIRONMENT {
        let line = help.lines().find(|l| l.trim_start().starts_with(&format!("{name} "))).unwrap_or_else(|| {
            panic!("{name} is not in run --help:\n{help}");
        });
        assert!(line.ends_with(default), "{name}'s default {default:?} is not shown: {line:?}");
    }
    assert!(help.contains("[env: JOURNAL_PATH=]"), "{help}");
}

#[test]
fn completions_know_every_subcommand() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let (code, script, stderr) = run(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {stderr}");
        for sub in SUBCOMMANDS {
            assert!(script.contains(sub), "the {shell} completion lacks {sub}");
        }
    }
    let (code, _, stderr) = run(&["completions", "tcsh"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("invalid value 'tcsh'"), "{stderr}");
    // Options complete too: `status --watch`, `plan --context`.
    let (_, bash, _) = run(&["completions", "bash"]);
    assert!(bash.contains("--watch") && bash.contains("--context"), "options are completed");
}

#[test]
fn the_man_page_has_a_section_per_subcommand_and_the_environment() {
    let (code, page, stderr) = run(&["man"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(page.contains(".TH blueprint-operator 1"), "{}", &page[..page.len().min(300)]);
    for sub in SUBCOMMANDS {
        let title = format!(".TH BLUEPRINT-OPERATOR-{} 1", sub.to_uppercase());
        assert!(page.contains(&title), "no page for {sub}");
    }
    let run_page = &page[page.find(".TH BLUEPRINT-OPERATOR-RUN").unwrap()..];
    for name in ["NAMESPACE", "OPERATOR_COMPONENT_VERSIONS", "DOGU_REGISTRY_ENDPOINT"] {
        assert!(run_page.contains(name), "the run page lacks {name}");
    }
    // When man(1) is installed, the page renders without warnings.
    if Command::new("man").arg("--version").output().is_ok_and(|o| o.status.success()) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("blueprint-operator.1");
        std::fs::write(&file, &page).unwrap();
        let rendered =
            Command::new("man").args(["--warnings", "-l"]).arg(&file).env("MANPAGER", "cat").output().unwrap();
        assert!(rendered.status.success(), "{}", String::from_utf8_lossy(&rendered.stderr));
        assert!(String::from_utf8_lossy(&rendered.stdout).contains("Applies a Blueprint"));
    }
}
