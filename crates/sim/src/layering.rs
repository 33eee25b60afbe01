//! The crate's modules depend on each other one way: the store and what
//! lies below it know nothing of the API server, the controllers or the
//! world; those three never name each other (the world reaches the API over
//! HTTP, the controllers share only the store); inside the API server only
//! the accept loop names the dispatcher. A `use` that breaks this brings
//! back a module cycle; this test names the file and the line.

use std::path::{Path, PathBuf};

/// The three parts that stand on the store and never name each other.
const PARTS: [&str; 3] = ["crate::api", "crate::controllers", "crate::world"];

/// The modules below the parts: (files, what they must not name besides
/// the parts).
const BELOW: &[(&[&str], &[&str])] = &[
    (
        &[
            "kind.rs",
            "clock.rs",
            "faults.rs",
            "json.rs",
            "net.rs",
            "defaults.rs",
            "partition.rs",
            "budget.rs",
        ],
        &["crate::store", "crate::scenario"],
    ),
    (
        &["store.rs", "recorder.rs", "truth.rs"],
        &["crate::scenario"],
    ),
    (&["scenario.rs"], &[]),
];

/// What the file `rel` (relative to `src/`) must not name.
fn forbidden(rel: &str) -> Vec<&'static str> {
    if let Some((_, more)) = BELOW.iter().find(|(files, _)| files.contains(&rel)) {
        return PARTS.iter().chain(more.iter()).copied().collect();
    }
    let Some(own) = PARTS
        .iter()
        .find(|p| rel.starts_with(&format!("{}/", p.trim_start_matches("crate::"))))
    else {
        return Vec::new();
    };
    let mut paths: Vec<&str> = PARTS.iter().copied().filter(|p| p != own).collect();
    match *own {
        // The API server serves what is stored; scenarios are the world's.
        "crate::api" => paths.push("crate::scenario"),
        // The world reaches the store only through the API, over HTTP.
        "crate::world" => paths.push("crate::store::Store"),
        _ => {}
    }
    paths
}

/// Inside the API server, only the accept loop (`api/mod.rs`) names the
/// dispatcher; the verbs and subresources it dispatches to never do.
const DISPATCHER: &str = "handler::";

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

/// `file:line: names X` for every code line (comments aside) of `text`
/// that names a forbidden path.
fn violations(rel: &str, text: &str) -> Vec<String> {
    let forbidden = forbidden(rel);
    let dispatcher_checked = rel.starts_with("api/") && rel != "api/mod.rs";
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        for path in &forbidden {
            if line.contains(path) {
                found.push(format!("src/{rel}:{}: names {path}", i + 1));
            }
        }
        let names_dispatcher = line
            .match_indices(DISPATCHER)
            .any(|(at, _)| !line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_'));
        if dispatcher_checked && names_dispatcher {
            found.push(format!(
                "src/{rel}:{}: names the dispatcher ({DISPATCHER})",
                i + 1
            ));
        }
    }
    found
}

#[test]
fn modules_depend_one_way() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut found = Vec::new();
    let mut checked = 0;
    for file in &files {
        let rel = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{rel}: {e}"));
        if !forbidden(&rel).is_empty() {
            checked += 1;
        }
        found.extend(violations(&rel, &text));
    }
    assert!(
        checked > 20,
        "only {checked} files matched a rule: the layout moved"
    );
    assert!(
        found.is_empty(),
        "module dependencies point the wrong way:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_use_against_the_grain_is_reported() {
    let cases = [
        ("store.rs", "use crate::api::status::ApiStatus;", 1),
        ("store.rs", "// see crate::api for the wire form", 0),
        ("world/nodes.rs", "    crate::api::WORLD_HEADER", 1),
        ("api/eviction.rs", "use super::handler::json_response;", 1),
        (
            "api/eviction.rs",
            "use super::handlers::delete::delete_one;",
            0,
        ),
        ("api/mod.rs", "handler::handle(shared, req)", 0),
        ("controllers/mod.rs", "use crate::store::Store;", 0),
        ("controllers/mod.rs", "use crate::world::WorldHandle;", 1),
        ("world/pods.rs", "use crate::store::Store;", 1),
        ("json.rs", "use crate::store::Kind;", 1),
        ("scenario.rs", "use crate::store::Store;", 0),
    ];
    for (rel, line, want) in cases {
        assert_eq!(violations(rel, line).len(), want, "{rel}: {line}");
    }
}
