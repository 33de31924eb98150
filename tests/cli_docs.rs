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

const SUBCOMMANDS: &[&str] = &[
    "run",
    "storage-version",
    "plan",
    "status",
    "suspend",
    "resume",
    "reconcile",
    "version",
    "sandbox",
    "replay",
    "convert",
    "completions",
    "man",
    "crd",
];

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
}

/// What bash completes for the words typed so far (the last one is being completed), with the
/// script `completions bash` prints, as bash-completion calls it: `_fn command current previous`.
fn complete_in_bash(words: &[&str]) -> Vec<String> {
    let (code, script, stderr) = run(&["completions", "bash"]);
    assert_eq!(code, 0, "{stderr}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blueprint-operator.bash");
    std::fs::write(&file, script).unwrap();
    // The words come as the program's arguments; the function is the one the script registers.
    const PROGRAM: &str = r#"
        source "$1"; shift
        function=$(complete -p blueprint-operator | sed -n 's/.* -F \([^ ]*\) .*/\1/p')
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        "$function" blueprint-operator "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf '%s\n' "${COMPREPLY[@]}"
    "#;
    let output = Command::new("bash").arg("-c").arg(PROGRAM).arg("bash").arg(&file).args(words).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).lines().filter(|l| !l.is_empty()).map(str::to_owned).collect()
}

/// bash completes subcommands and every subcommand's options. The finding: clap_complete's script
/// completed only subcommand names (`plan --d<TAB>` gave nothing): its option cases did not match
/// for a binary name with a hyphen (src/completions.rs).
#[test]
fn bash_completes_subcommands_and_their_options() {
    assert_eq!(complete_in_bash(&["blueprint-operator", "pl"]), ["plan"]);
    assert_eq!(complete_in_bash(&["blueprint-operator", "re"]), ["resume", "reconcile", "replay"]);
    assert_eq!(complete_in_bash(&["blueprint-operator", "plan", "--des"]), ["--descriptors"]);
    assert_eq!(complete_in_bash(&["blueprint-operator", "status", "--wa"]), ["--watch"]);
    assert_eq!(complete_in_bash(&["blueprint-operator", "status", "--watch", "--ne"]), ["--next"]);
    assert_eq!(complete_in_bash(&["blueprint-operator", "version", "--cl"]), ["--client"]);
    assert_eq!(complete_in_bash(&["blueprint-operator", "convert", "--to", ""]), ["v1", "v2", "v3"]);
    assert_eq!(complete_in_bash(&["blueprint-operator", "completions", "f"]), ["fish"]);
}

/// zsh and fish complete the options too, where they are installed (CI's machines have bash only).
#[test]
fn zsh_and_fish_scripts_name_every_option() {
    for shell in ["zsh", "fish"] {
        let (code, script, _) = run(&["completions", shell]);
        assert_eq!(code, 0);
        for option in ["descriptors", "next", "client", "timeout"] {
            assert!(script.contains(option), "{shell} lacks --{option}");
        }
    }
    if Command::new("fish").arg("--version").output().is_ok_and(|o| o.status.success()) {
        let (_, script, _) = run(&["completions", "fish"]);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("blueprint-operator.fish");
        std::fs::write(&file, script).unwrap();
        let program = format!("source '{}'; complete -C 'blueprint-operator plan --des'", file.display());
        let output = Command::new("fish").arg("-c").arg(program).output().unwrap();
        assert!(String::from_utf8_lossy(&output.stdout).contains("--descriptors"), "{output:?}");
    }
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
