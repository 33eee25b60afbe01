//! The documented crate graph is the workspace's: each `infera-*` crate's
//! normal dependencies on other workspace crates, as `cargo metadata`
//! reports them, equal the "`infera-x` → a, b" list in `docs/architecture.md`.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

use crate::common::case::root;

/// `infera-x` → its workspace dependencies (short names, sorted).
type Graph = BTreeMap<String, Vec<String>>;

fn from_cargo() -> Graph {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let mut graph = Graph::new();
    for package in meta["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().unwrap_or_default();
        let mut deps: Vec<String> = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"].is_null())
            .filter_map(|d| d["name"].as_str()?.strip_prefix("infera-"))
            .map(str::to_string)
            .collect();
        deps.sort();
        graph.insert(name.to_string(), deps);
    }
    graph
}

/// The paragraph of `docs/architecture.md` after "(workspace crates only):",
/// e.g. "`infera-lint` → model; `infera` → all six."
fn from_docs() -> Graph {
    let doc =
        std::fs::read_to_string(root().join("docs/architecture.md")).expect("docs/architecture.md");
    let start = doc
        .find("(workspace crates only):")
        .expect("the crate-graph paragraph of docs/architecture.md");
    let paragraph = doc[start..]
        .split("\n\n")
        .next()
        .unwrap_or_default()
        .replace('\n', " ");
    let mut graph = Graph::new();
    for entry in paragraph.split(';') {
        let Some((crate_part, deps)) = entry.split_once('→') else {
            continue;
        };
        let name = crate_part
            .rsplit('`')
            .nth(1)
            .unwrap_or_default()
            .to_string();
        let deps = deps.trim().trim_end_matches('.');
        let deps: Vec<String> = match deps {
            "none" => Vec::new(),
            "all six" => ["audit", "cluster", "lint", "model", "rollout", "sim"]
                .map(String::from)
                .to_vec(),
            list => list.split(',').map(|d| d.trim().to_string()).collect(),
        };
        graph.insert(name, deps);
    }
    graph
}

#[test]
fn documented_crate_graph_matches_cargo_metadata() {
    assert_eq!(from_docs(), from_cargo());
}

/// No merge-conflict marker is left in a tracked text file (one sat in
/// docs/monitor.md through a whole stop: nothing read it).
#[test]
fn no_merge_conflict_markers() {
    let out = Command::new("git")
        .args([
            "ls-files", "-z", "--", "*.md", "*.rs", "*.toml", "*.yaml", "*.sh",
        ])
        .current_dir(root())
        .output()
        .expect("git ls-files");
    assert!(out.status.success(), "git ls-files failed");
    let files = String::from_utf8_lossy(&out.stdout);
    assert!(
        files.split('\0').any(|f| f == "README.md"),
        "no files listed"
    );
    let mut found = Vec::new();
    for file in files.split('\0') {
        let Ok(text) = std::fs::read_to_string(root().join(file)) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            let marker =
                ["<<<<<<< ", ">>>>>>> "].iter().any(|m| line.starts_with(m)) || line == "=======";
            if marker {
                found.push(format!("{file}:{}: {line}", i + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "merge-conflict markers:\n{}",
        found.join("\n")
    );
}
