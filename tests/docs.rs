//! The documentation names only what exists: every relative link of README.md and docs/*.md points to
//! a file or folder of the repository (docs drifted before: a `v3.yaml` example that was not there).

use std::path::{Path, PathBuf};

/// README.md and every page of docs/.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    pages
}

#[test]
fn every_file_a_doc_links_to_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pages = pages(root);
    let mut missing = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for (start, _) in text.match_indices("](") {
            let rest = &text[start + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = &rest[..end];
            if target.contains("://")
                || target.starts_with('#')
                || target.starts_with("mailto:")
                || target.contains(' ')
            {
                continue;
            }
            let file = target.split('#').next().unwrap_or_default();
            if file.is_empty() {
                continue;
            }
            checked += 1;
            if !page.parent().unwrap().join(file).exists() {
                missing.push(format!("{}: {target}", page.strip_prefix(root).unwrap().display()));
            }
        }
    }
    assert!(missing.is_empty(), "links to nothing:\n{}", missing.join("\n"));
    assert!(checked > 20, "only {checked} links checked");
}

/// Every repository path a doc names in backticks (`src/…`, `tests/…`, `examples/…`, …) exists: a
/// renamed file leaves no doc pointing at nothing. A path with a placeholder (`<…>`, `*`, `NAME`) or a
/// `::` (a test's name after its file) is checked up to it.
#[test]
fn every_repository_path_a_doc_names_exists() {
    const ROOTS: [&str; 10] =
        ["src/", "tests/", "docs/", "examples/", "charts/", "deploy/", "tools/", "machine/", "crds/", "benches/"];
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pages = pages(root);
    let (mut missing, mut checked) = (Vec::new(), 0);
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for (index, quoted) in text.split('`').enumerate() {
            // The odd pieces are inside backticks; a path is one word.
            if index % 2 == 0 || quoted.contains(char::is_whitespace) || !ROOTS.iter().any(|r| quoted.starts_with(r)) {
                continue;
            }
            let path = quoted.split(['<', '*', '{', ':', '#']).next().unwrap_or_default();
            let path = path.trim_end_matches(['.', ',', ')']);
            if path.chars().any(|c| c.is_ascii_uppercase() && !path.contains(".md")) && !root.join(path).exists() {
                continue; // a placeholder such as `tests/fixtures/eras/NAME`
            }
            checked += 1;
            if !root.join(path).exists() {
                missing.push(format!("{}: `{quoted}`", page.strip_prefix(root).unwrap().display()));
            }
        }
    }
    assert!(missing.is_empty(), "paths that do not exist:\n{}", missing.join("\n"));
    assert!(checked > 50, "only {checked} paths checked");
}
