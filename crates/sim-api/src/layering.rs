//! Inside the API server only the accept loop (`lib.rs`) names the
//! dispatcher (`handler.rs`); the verbs and subresources it dispatches to
//! never do, or they would call back into what calls them. The crate graph
//! enforces the rest of the simulator's layering (this crate depends on
//! neither the controllers, the world nor the scenario); no crate boundary
//! can express this rule inside one crate, so this test names the file and
//! the line.

use std::path::{Path, PathBuf};

/// How a file names the dispatcher.
const DISPATCHER: &str = "handler::";

/// The accept loop, the one file allowed to name it.
const ACCEPT_LOOP: &str = "lib.rs";

/// This test, which spells the dispatcher's path without naming it.
const THIS_TEST: &str = "layering.rs";

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `file:line: names the dispatcher` for every code line (comments aside)
/// of `text` that names it, unless `rel` (relative to `src/`) is the accept
/// loop or this test.
fn violations(rel: &str, text: &str) -> Vec<String> {
    if rel == ACCEPT_LOOP || rel == THIS_TEST {
        return Vec::new();
    }
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        let names_dispatcher = line
            .match_indices(DISPATCHER)
            .any(|(at, _)| !line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_'));
        if names_dispatcher {
            found.push(format!(
                "src/{rel}:{}: names the dispatcher ({DISPATCHER})",
                i + 1
            ));
        }
    }
    found
}

#[test]
fn only_the_accept_loop_names_the_dispatcher() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    assert!(
        files.len() > 20,
        "only {} files found: the layout moved",
        files.len()
    );
    let mut found = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{rel}: {e}"));
        found.extend(violations(&rel, &text));
    }
    assert!(
        found.is_empty(),
        "module dependencies point the wrong way:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_use_against_the_grain_is_reported() {
    let cases = [
        ("eviction.rs", "use super::handler::json_response;", 1),
        ("eviction.rs", "use crate::handler::json_response;", 1),
        ("eviction.rs", "// see handler::handle", 0),
        ("eviction.rs", "use super::handlers::delete::delete_one;", 0),
        ("handlers/get.rs", "use super::super::handler::x;", 1),
        ("lib.rs", "handler::handle(shared, req)", 0),
    ];
    for (rel, line, want) in cases {
        assert_eq!(violations(rel, line).len(), want, "{rel}: {line}");
    }
}
