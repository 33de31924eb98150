//! The documentation names only what exists: every relative link of README.md and docs/*.md points to
//! a file or folder of the repository (docs drifted before: a `v3.yaml` example that was not there).

use std::path::Path;

#[test]
fn every_file_a_doc_links_to_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
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
