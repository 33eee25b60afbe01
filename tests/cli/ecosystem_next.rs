//! Public samples of serving operators lint does not render yet
//! (`tests/data/ecosystem-next/`, sources in its `SOURCES.md`): per kind,
//! objects linted, named and silent; silent must be 0, and every named
//! kind says its API group and what it holds.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::common::case::root;
use infera_lint::engine::lint_source;
use infera_lint::options::LintOptions;

fn files() -> Vec<PathBuf> {
    let dir = root().join("tests/data/ecosystem-next");
    let mut out = Vec::new();
    for project in std::fs::read_dir(&dir).unwrap().flatten() {
        if !project.path().is_dir() {
            continue;
        }
        for f in std::fs::read_dir(project.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|e| e == "yaml") {
                out.push(f.path());
            }
        }
    }
    out.sort();
    out
}

/// (linted, named, silent) objects per `Kind (group)`.
type Tally = BTreeMap<String, (usize, usize, usize)>;

#[test]
fn every_operator_kind_is_linted_or_named_never_silent() {
    let sources =
        std::fs::read_to_string(root().join("tests/data/ecosystem-next/SOURCES.md")).unwrap();
    let mut tally = Tally::new();
    let files = files();
    assert!(files.len() >= 8, "{files:?}");
    for path in &files {
        let rel = path
            .strip_prefix(root().join("tests/data/ecosystem-next"))
            .unwrap();
        let rel = rel.display().to_string();
        assert!(
            sources
                .lines()
                .any(|l| l.starts_with(&format!("| `{rel}` |"))),
            "{rel} has no row in SOURCES.md"
        );
        let bytes = std::fs::read(path).unwrap();
        let out = lint_source(&rel, &bytes, &LintOptions::default());
        assert!(out.input_errors.is_empty(), "{rel}: {:?}", out.input_errors);
        let v: serde_json::Value = serde_saphyr::from_slice(&bytes).unwrap();
        let kind = v["kind"].as_str().unwrap_or("");
        let group = v["apiVersion"]
            .as_str()
            .unwrap_or("")
            .rsplit_once('/')
            .map_or("", |(g, _)| g);
        let key = format!("{kind} ({group})");
        let e = tally.entry(key.clone()).or_default();
        e.0 += out.summary.objects;
        e.2 += out.summary.silent;
        for k in &out.summary.skipped_kinds {
            assert_eq!(k.kind_and_group(), key, "{rel}");
            assert!(!k.found.is_empty(), "{rel}: named without what it holds");
            e.1 += k.count;
        }
    }
    let silent: usize = tally.values().map(|t| t.2).sum();
    let table: Vec<String> = tally
        .iter()
        .map(|(k, (l, n, s))| format!("{k}: {l} linted, {n} named, {s} silent"))
        .collect();
    eprintln!("{}", table.join("\n"));
    assert_eq!(silent, 0, "{table:?}");
    assert!(tally.values().all(|(l, n, _)| l + n > 0), "{table:?}");
}
