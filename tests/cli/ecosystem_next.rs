//! Public samples of the serving operators of issue 42
//! (`tests/data/ecosystem-next/`, sources in its `SOURCES.md`): one row an
//! input (a file, or files given together as one stream, as
//! `cat a b | infera lint -` does), with the objects linted and named and
//! the findings, each checked by hand (docs/lint-corpus.md, "Operators of
//! issue 42"). Silent must be 0, and every named kind says its API group.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::common::case::root;
use infera_lint::engine::lint_source;
use infera_lint::options::LintOptions;

fn dir() -> PathBuf {
    root().join("tests/data/ecosystem-next")
}

/// Every sample file, relative to [`dir`].
fn files() -> Vec<String> {
    let mut out = Vec::new();
    for project in std::fs::read_dir(dir()).unwrap().flatten() {
        if !project.path().is_dir() {
            continue;
        }
        for f in std::fs::read_dir(project.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|e| e == "yaml") {
                let rel = f.path().strip_prefix(dir()).unwrap().display().to_string();
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// (input files, objects linted, objects named, finding codes).
type Row = (
    &'static [&'static str],
    usize,
    usize,
    &'static [&'static str],
);

#[rustfmt::skip]
const ROWS: &[Row] = &[
    (&["kthena/model-booster-qwen2.5-0.5b.yaml"], 0, 1, &[]),
    (&["kthena/model-serving-sample.yaml"], 1, 0, &["IR012", "IR012"]),
    (&["kubeai/deepseek-r1-mi300x.yaml"], 1, 0, &["IR004"]),
    (&["kubeai/llama-3.1-70b-instruct-fp8-l4.yaml"], 1, 0, &["IR004"]),
    (&["kubeai/llama-3.1-8b-instruct-tpu.yaml"], 1, 0, &[]),
    (&["kubeai/llama-3.2-11b-vision-instruct-l4.yaml"], 1, 0, &[]),
    (&["kubeai/qwen3-600m-sglang-gpu.yaml"], 1, 0, &[]),
    (&["kubeai/spark-x2.5-4b-vllm-gpu.yaml"], 1, 0, &[]),
    (&["llmaz/huggingface-playground.yaml"], 0, 1, &[]),
    (&["llmaz/multi-nodes-service.yaml"], 1, 0, &[]),
    (&["lws/disaggregatedset-sample.yaml"], 1, 0, &[]),
    (&["ome/isvc-llama-3-1-70b-instruct.yaml"], 0, 1, &[]),
    (&["ome/isvc-qwen1-5-7b-chat.yaml"], 0, 1, &[]),
    (&["ome/isvc-smollm2-1-7b-instruct.yaml"], 0, 1, &[]),
    (&["ome/srt-llama-3-1-70b-instruct-rt.yaml"], 0, 1, &[]),
    (&["ome/srt-qwen1-5-7b-chat-rt.yaml"], 0, 1, &[]),
    (&["ome/srt-smollm2-1-7b-instruct-rt.yaml"], 0, 1, &[]),
    (&["ome/isvc-smollm2-1-7b-instruct.yaml", "ome/srt-smollm2-1-7b-instruct-rt.yaml"], 1, 1, &[]),
    (&["ome/isvc-llama-3-1-70b-instruct.yaml", "ome/srt-llama-3-1-70b-instruct-rt.yaml"], 1, 1, &[]),
];

/// The files of a row as one stream (`---` between them).
fn stream(inputs: &[&str]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (i, f) in inputs.iter().enumerate() {
        if i > 0 {
            bytes.extend_from_slice(b"\n---\n");
        }
        bytes.extend(std::fs::read(dir().join(f)).unwrap());
    }
    bytes
}

/// (linted, named, silent) objects per `Kind (group)`.
type Tally = BTreeMap<String, (usize, usize, usize)>;

#[test]
fn every_operator_sample_is_linted_or_named_as_its_row_says() {
    let sources = std::fs::read_to_string(dir().join("SOURCES.md")).unwrap();
    let files = files();
    for rel in &files {
        assert!(
            sources
                .lines()
                .any(|l| l.starts_with(&format!("| `{rel}` |"))),
            "{rel} has no row in SOURCES.md"
        );
        assert!(
            ROWS.iter().any(|(inputs, ..)| inputs == &[rel.as_str()]),
            "{rel} has no row alone"
        );
    }
    let mut tally = Tally::new();
    let mut failed = Vec::new();
    for (inputs, linted, named, codes) in ROWS {
        let out = lint_source("-", &stream(inputs), &LintOptions::default());
        assert!(
            out.input_errors.is_empty(),
            "{inputs:?}: {:?}",
            out.input_errors
        );
        let s = &out.summary;
        let got_named: usize = s.skipped_kinds.iter().map(|k| k.count).sum();
        let got_codes: Vec<&str> = out.findings.iter().map(|f| f.code).collect();
        if (s.objects, got_named, s.silent, got_codes.as_slice()) != (*linted, *named, 0, *codes) {
            failed.push(format!(
                "{inputs:?}: linted {}, named {got_named}, silent {}, {got_codes:?}; {:?}",
                s.objects,
                s.silent,
                out.findings.iter().map(|f| &f.message).collect::<Vec<_>>()
            ));
        }
        if inputs.len() == 1 {
            let e = tally.entry(kind_of(inputs[0])).or_default();
            (e.0, e.1, e.2) = (e.0 + s.objects, e.1 + got_named, e.2 + s.silent);
        }
    }
    let table: Vec<String> = tally
        .iter()
        .map(|(k, (l, n, s))| format!("{k}: {l} linted, {n} named, {s} silent"))
        .collect();
    eprintln!("{}", table.join("\n"));
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// `Kind (group)` of a sample's one object.
fn kind_of(rel: &str) -> String {
    let v: serde_json::Value =
        serde_saphyr::from_slice(&std::fs::read(dir().join(rel)).unwrap()).unwrap();
    let group = v["apiVersion"]
        .as_str()
        .unwrap_or("")
        .rsplit_once('/')
        .map_or("", |(g, _)| g);
    format!("{} ({group})", v["kind"].as_str().unwrap_or(""))
}
