//! The repository documents itself: every repository path that README, ARCHITECTURE,
//! `docs/` or a source file names exists, so no reader is sent to a file that is not
//! there.

use std::path::{Path, PathBuf};

/// Top-level directories whose paths are checked when a text names them.
const ROOTS: [&str; 8] = [
    "docs/",
    "tests/",
    "loadtest/",
    "src/",
    "actors/",
    "benches/",
    "migrations/",
    "scripts/",
];

/// The repository paths a text names: a root above, then path characters, ending in a
/// file name with an extension.
fn named_paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for root in ROOTS {
        let mut rest = text;
        while let Some(at) = rest.find(root) {
            let before = rest[..at].chars().next_back();
            let tail = &rest[at..];
            rest = &rest[at + root.len()..];
            // Part of a longer path or word (`/tmp/docs/…`, `mydocs/`): not ours.
            if before.is_some_and(|c| c.is_alphanumeric() || matches!(c, '/' | '_' | '-' | '.')) {
                continue;
            }
            let end = tail
                .find(|c: char| !(c.is_alphanumeric() || matches!(c, '/' | '_' | '-' | '.')))
                .unwrap_or(tail.len());
            let path = tail[..end].trim_end_matches('.');
            let file = path.rsplit('/').next().unwrap_or("");
            if file.contains('.') && !path.contains("..") && !path.contains('*') {
                found.push(path.to_owned());
            }
        }
    }
    found
}

fn texts(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let mut dirs = vec![
        root.join("docs"),
        root.join("src"),
        root.join("actors/src"),
        root.join("loadtest/src"),
        root.join("tests"),
    ];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("md" | "rs" | "sh")
            ) {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn every_path_the_repository_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    for file in texts(root) {
        let text = std::fs::read_to_string(&file).unwrap();
        for path in named_paths(&text) {
            if !root.join(&path).exists() {
                let from = file.strip_prefix(root).unwrap().display().to_string();
                missing.push(format!("{from}: {path}"));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "named but missing: {missing:#?}");
}

#[test]
fn named_paths_are_found_in_prose_and_code() {
    assert_eq!(
        named_paths("see `docs/operations.md`, and (docs/api.md). Not /tmp/docs/x.md."),
        vec!["docs/operations.md", "docs/api.md"]
    );
    assert!(named_paths("tests/fixtures/ and docs/ alone").is_empty());
}
