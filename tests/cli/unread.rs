//! Nothing passes unread: every object of every manifest the repository
//! holds (fixtures, corpora, golden inputs) ends in exactly one of linted
//! (an object of the summary), named (a `skipped_kinds` entry with its API
//! group and a reason), or an input error; objects skipped without a word
//! are exactly those of the closed list of kinds that run nothing
//! (`crates/lint/src/engine/unread.rs`).

use std::path::{Path, PathBuf};

use crate::common::case::root;
use infera_lint::engine::lint_source;
use infera_lint::engine::unread::{group_version, runs_nothing};
use infera_lint::options::LintOptions;
use infera_model::manifest::{self, Node};

/// Where manifests live. A Helm chart's directory holds templates, not
/// manifests: `tests/cli/charts.rs` lints what it renders.
/// `tests/data` holds the corpora (`ecosystem`, `ecosystem-next`).
const DIRS: [&str; 3] = ["tests/fixtures", "tests/data", "tests/golden/input"];

fn manifests(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    if dir.join("Chart.yaml").exists() {
        return;
    }
    for path in entries.flatten().map(|e| e.path()) {
        if path.is_dir() {
            manifests(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml")
            && !out.contains(&path)
        {
            out.push(path);
        }
    }
}

/// What an independent read of a file finds: objects, of which silent
/// (kinds that run nothing), and documents that do not parse.
#[derive(Default, Debug)]
struct Read {
    objects: usize,
    silent: usize,
    broken: usize,
}

fn read(file: &str, bytes: &[u8]) -> Read {
    let mut r = Read::default();
    for raw in manifest::split_documents(bytes) {
        let Ok(doc) = manifest::parse_document(file, &raw) else {
            r.broken += 1;
            continue;
        };
        let Some(doc) = doc else { continue };
        for (_, node) in manifest::objects(&doc.root) {
            r.objects += 1;
            let kind = node.get("kind").and_then(Node::as_str).unwrap_or("");
            let api = node.get("apiVersion").and_then(Node::as_str).unwrap_or("");
            if runs_nothing(kind, group_version(api).0) {
                r.silent += 1;
            }
        }
    }
    r
}

#[test]
fn every_object_is_linted_named_or_an_input_error() {
    let mut files = Vec::new();
    for d in DIRS {
        manifests(&root().join(d), &mut files);
    }
    assert!(files.len() >= 50, "{} files", files.len());
    let (mut objects, mut named, mut silent) = (0, 0, 0);
    let mut wrong = Vec::new();
    for path in &files {
        let file = path.strip_prefix(root()).unwrap().display().to_string();
        let bytes = std::fs::read(path).unwrap();
        let want = manifest::with_parse_stack(|| read(&file, &bytes)).unwrap();
        let out = lint_source(&file, &bytes, &LintOptions::default());
        let s = &out.summary;
        let n: usize = s.skipped_kinds.iter().map(|k| k.count).sum();
        let invalid = out.input_errors.len() - want.broken;
        let ends = s.objects + n + s.silent + invalid;
        if ends != want.objects || s.silent != want.silent || s.skipped != n + s.silent {
            wrong.push(format!(
                "{file}: {} objects, ended: {} linted + {n} named + {} silent (of the closed list: {}) + {invalid} invalid",
                want.objects, s.objects, s.silent, want.silent
            ));
        }
        for k in &s.skipped_kinds {
            assert!(
                !k.reason.is_empty(),
                "{file}: {} named without a reason",
                k.kind
            );
        }
        (objects, named, silent) = (objects + s.objects, named + n, silent + s.silent);
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    eprintln!(
        "{} files: {objects} linted, {named} named, {silent} silent (kinds that run nothing)",
        files.len()
    );
}
