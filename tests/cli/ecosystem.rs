//! Public LLM-serving manifests (`tests/data/ecosystem/`, sources in its
//! `SOURCES.md`) against the hand-checked table in `docs/lint-corpus.md`:
//! each file's findings (by rule code), input errors and skipped kinds must
//! be what its row says, and every file must have a row and a source.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use infera_lint::engine::lint_paths;
use infera_lint::options::LintOptions;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One row of the table: findings as written (`IR004, IR007`, `IR012×2`,
/// `—`), whether the file has an input error, the skipped kinds.
#[derive(Debug, PartialEq, Eq)]
struct Row {
    findings: String,
    input_error: bool,
    skipped: String,
}

fn table() -> BTreeMap<String, Row> {
    let text = std::fs::read_to_string(root().join("docs/lint-corpus.md")).unwrap();
    text.lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let file = cells[1].trim_matches('`').to_string();
            let row = Row {
                findings: cells[2].to_string(),
                input_error: cells[3] == "yes",
                skipped: cells[4].to_string(),
            };
            (file, row)
        })
        .collect()
}

fn files() -> Vec<String> {
    let dir = root().join("tests/data/ecosystem");
    let mut out = Vec::new();
    for project in std::fs::read_dir(&dir).unwrap() {
        let project = project.unwrap().path();
        if !project.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&project).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "yaml") {
                out.push(rel(&dir, &f));
            }
        }
    }
    out.sort();
    out
}

fn rel(dir: &Path, f: &Path) -> String {
    f.strip_prefix(dir)
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

/// What `infera lint FILE` reports, written as the table writes it.
fn linted(file: &str) -> Row {
    let out = lint_paths(
        &[root().join("tests/data/ecosystem").join(file)],
        &LintOptions {
            node_gpus: 8,
            ..LintOptions::default()
        },
    );
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for f in &out.findings {
        *counts.entry(f.code).or_default() += 1;
    }
    let findings = counts
        .iter()
        .map(|(c, n)| {
            if *n == 1 {
                c.to_string()
            } else {
                format!("{c}×{n}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    Row {
        findings: if findings.is_empty() {
            "—".into()
        } else {
            findings
        },
        input_error: !out.input_errors.is_empty(),
        skipped: out
            .summary
            .skipped_kinds
            .iter()
            .map(|k| k.kind.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

#[test]
fn findings_match_the_hand_checked_table() {
    let table = table();
    let files = files();
    assert!(files.len() >= 30, "{} files", files.len());
    let listed: Vec<&String> = table.keys().collect();
    let on_disk: Vec<&String> = files.iter().collect();
    assert_eq!(listed, on_disk, "docs/lint-corpus.md rows vs files");
    let mut drift = Vec::new();
    for file in &files {
        let got = linted(file);
        if got != table[file] {
            drift.push(format!("{file}: table {:?}, lint {got:?}", table[file]));
        }
    }
    assert!(drift.is_empty(), "findings drifted:\n{}", drift.join("\n"));
}

#[test]
fn every_file_has_a_source_and_the_licence_is_there() {
    let dir = root().join("tests/data/ecosystem");
    let sources = std::fs::read_to_string(dir.join("SOURCES.md")).unwrap();
    for file in files() {
        let row = sources
            .lines()
            .find(|l| l.starts_with(&format!("| `{file}` |")))
            .unwrap_or_else(|| panic!("{file} has no row in SOURCES.md"));
        // Repository, path, a 40-hex commit, the licence.
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let commit = cells[4].trim_matches('`');
        assert!(
            commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
            "{file}: commit {commit:?}"
        );
        assert!(cells[5].starts_with("Apache-2.0"), "{file}: {}", cells[5]);
    }
    let licence = std::fs::read_to_string(dir.join("LICENSE-Apache-2.0.txt")).unwrap();
    assert!(licence.contains("Apache License") && licence.contains("Version 2.0"));
}

/// Projects of the corpus: at least 6, so the rules are tried beyond one
/// project's habits.
#[test]
fn the_corpus_spans_projects() {
    let projects: std::collections::BTreeSet<String> = files()
        .iter()
        .filter_map(|f| f.split('/').next().map(str::to_string))
        .collect();
    assert!(projects.len() >= 6, "{projects:?}");
}

/// Kinds that run pods but are not linted are named, with the reason, in
/// every output format — never silently.
#[test]
fn skipped_kinds_are_said_in_every_format() {
    use crate::common::process::infera;
    let dirs = [
        "tests/data/ecosystem/kaito",
        "tests/data/ecosystem/nim-operator",
    ];
    let run = |format: &str| {
        let out = infera(&["lint", "--format", format, dirs[0], dirs[1]])
            .current_dir(root())
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let human = run("human");
    assert!(
        human.contains(
            "skipped: MultiRoleInference (kaito.sh) ×1 (each role becomes a KAITO InferenceSet"
        ) && human.contains("skipped: NIMCache (apps.nvidia.com) ×2 (downloads a model"),
        "{human}"
    );
    let github = run("github");
    assert!(
        github.contains("::notice title=infera lint::skipped: MultiRoleInference (kaito.sh) ×1"),
        "{github}"
    );
    let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    let kinds = json["summary"]["skipped_kinds"].as_array().unwrap();
    let named: Vec<(&str, u64)> = kinds
        .iter()
        .map(|k| (k["kind"].as_str().unwrap(), k["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(named, [("MultiRoleInference", 1), ("NIMCache", 2)]);
    assert!(
        kinds
            .iter()
            .all(|k| !k["reason"].as_str().unwrap().is_empty())
    );
    let notes = sarif_notes(&run("sarif"));
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].starts_with("skipped: MultiRoleInference (kaito.sh) ×1 (")
            && notes[1].starts_with("skipped: NIMCache (apps.nvidia.com) ×2 ("),
        "{notes:?}"
    );
}

fn sarif_notes(text: &str) -> Vec<String> {
    let sarif: serde_json::Value = serde_json::from_str(text).unwrap();
    crate::lint_cli::assert_valid_sarif(&sarif);
    sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["level"] == "note")
        .map(|n| n["message"]["text"].as_str().unwrap().to_string())
        .collect()
}

/// The serving kinds of the issue that must be linted (at most two may be
/// skipped with a reason; one is, see `docs/serving-kinds.md`).
const SERVING: [&str; 10] = [
    "InferenceService",
    "LLMInferenceService",
    "Workspace",
    "MultiRoleInference",
    "VLLMRuntime",
    "RayService",
    "RayClusterFleet",
    "StormService",
    "NIMService",
    "DynamoGraphDeployment",
];

/// True when a document's tree holds a container list (a pod template).
fn has_pods(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Object(m) => m
            .iter()
            .any(|(k, v)| k == "containers" || k == "mainContainer" || has_pods(v)),
        serde_json::Value::Array(a) => a.iter().any(has_pods),
        _ => false,
    }
}

/// One document of every kind in the corpus, alone in a file, linted in
/// every format: a document of any kind but those that run nothing (the
/// closed list of `engine/unread.rs`) is linted (an object in the summary)
/// or named, with its API group and a reason, in the human summary, JSON
/// `skipped_kinds` and SARIF; never dropped silently. Of the serving kinds, only MultiRoleInference
/// may be skipped.
#[test]
fn every_kind_in_the_corpus_is_linted_or_named() {
    use crate::common::process::infera;
    let mut seen = BTreeMap::new();
    for file in files() {
        let text =
            std::fs::read_to_string(root().join("tests/data/ecosystem").join(&file)).unwrap();
        for doc in text.split("\n---") {
            let Ok(v) = serde_saphyr::from_str::<serde_json::Value>(doc) else {
                continue;
            };
            let Some(kind) = v.get("kind").and_then(|k| k.as_str()) else {
                continue;
            };
            seen.entry(kind.to_string())
                .or_insert_with(|| (doc.to_string(), v.clone()));
        }
    }
    for kind in SERVING.iter().filter(|k| **k != "DynamoGraphDeployment") {
        assert!(seen.contains_key(*kind), "the corpus has no {kind}");
    }
    let dir = tempfile::tempdir().unwrap();
    let mut linted = Vec::new();
    for (kind, (doc, v)) in &seen {
        let api = v["apiVersion"].as_str().unwrap_or("");
        let group = infera_lint::engine::unread::group_version(api).0;
        // Every kind but the closed list of kinds that run nothing.
        let must = !infera_lint::engine::unread::runs_nothing(kind, group);
        assert!(must || !has_pods(v), "{kind} runs pods but is silent");
        let file = dir.path().join(format!("{kind}.yaml"));
        std::fs::write(&file, doc).unwrap();
        let run = |format: &str| {
            let out = infera(&["lint", "--format", format, file.to_str().unwrap()])
                .output()
                .unwrap();
            String::from_utf8(out.stdout).unwrap()
        };
        let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
        if json["summary"]["objects"] == 1 {
            linted.push(kind.clone());
            continue;
        }
        let named = json["summary"]["skipped_kinds"]
            .as_array()
            .is_some_and(|ks| {
                ks.iter().any(|k| {
                    k["kind"] == kind.as_str() && !k["reason"].as_str().unwrap_or("").is_empty()
                })
            });
        if !must {
            continue;
        }
        assert!(named, "{kind}: neither linted nor named as skipped in JSON");
        let human = run("human");
        let shown = if group.is_empty() { "core" } else { group };
        let line = |l: &str| {
            let l = l.strip_prefix("skipped: ").or(l.strip_prefix("not read: "));
            l.is_some_and(|l| l.starts_with(&format!("{kind} ({shown}) ×1 (")))
        };
        assert!(human.lines().any(line), "{kind}: {human}");
        assert!(
            sarif_notes(&run("sarif")).iter().any(|n| line(n)),
            "{kind}: not in the SARIF notes"
        );
        assert!(
            !SERVING.contains(&kind.as_str()) || kind == "MultiRoleInference",
            "{kind} is a serving kind the issue asks to lint"
        );
    }
    for kind in SERVING.iter().filter(|k| **k != "MultiRoleInference") {
        assert!(
            linted.iter().any(|k| k == kind),
            "{kind} was not linted: {linted:?}"
        );
    }
}
