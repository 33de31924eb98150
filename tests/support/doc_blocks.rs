//! The shell blocks of a Markdown document, by the heading they follow: what the docs tell a reader
//! to type, for the tests that type it (so that the docs cannot drift from what works).

/// A document's ```` ```sh ```` and ```` ```bash ```` blocks, each with the heading it follows.
pub struct DocBlocks {
    path: String,
    blocks: Vec<(String, String)>,
}

impl DocBlocks {
    /// The blocks of `path` (relative to the repository).
    pub fn read(path: &str) -> DocBlocks {
        let text = std::fs::read_to_string(crate::crd::repository(path)).unwrap();
        let (mut blocks, mut heading, mut block) = (Vec::new(), String::new(), None::<String>);
        for line in text.lines() {
            match &mut block {
                Some(body) if line.starts_with("```") => {
                    blocks.push((heading.clone(), std::mem::take(body)));
                    block = None;
                }
                Some(body) => {
                    body.push_str(line);
                    body.push('\n');
                }
                None if line == "```bash" || line == "```sh" => block = Some(String::new()),
                None if line.starts_with('#') => heading = line.trim_start_matches('#').trim().to_owned(),
                None => {}
            }
        }
        DocBlocks { path: path.to_owned(), blocks }
    }

    /// The one block under the heading that starts with `heading` and holds `containing`.
    pub fn block(&self, heading: &str, containing: &str) -> String {
        let found: Vec<&String> = self
            .blocks
            .iter()
            .filter(|(h, b)| h.starts_with(heading) && b.contains(containing))
            .map(|(_, b)| b)
            .collect();
        assert_eq!(found.len(), 1, "{}: one shell block under {heading:?} with {containing:?}", self.path);
        found[0].clone()
    }
}

/// Runs `script` as a reader of the docs would (bash, stopping at the first failing command) in the
/// repository's folder, with `vars` (PATH among them); its output, and whether it succeeded.
pub fn run(script: &str, vars: &[(String, String)]) -> (bool, String) {
    let output = std::process::Command::new("bash")
        .args(["-euo", "pipefail", "-c", script])
        .envs(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(crate::crd::repository(""))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), text)
}
