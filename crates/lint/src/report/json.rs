//! JSON output: one document,
//! `{"findings": [...], "errors": [...], "summary": {...}}`.
//!
//! The shape is a public contract (documented in docs/lint.md): fields are
//! only ever added, never renamed.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use super::emit::{Emitter, End};
use super::rule_counts;
use super::spool::{Counts, Entry, Spool, spool_item, write_map, write_spooled_array};
use crate::engine::LintOutcome;
use crate::engine::summary::{InputError, LintSummary};
use crate::finding::Finding;

#[derive(Serialize)]
struct JsonReport<'a> {
    findings: &'a [Finding],
    /// Files or documents that could not be read or parsed.
    errors: &'a [InputError],
    summary: JsonSummary<'a>,
}

#[derive(Serialize)]
struct JsonSummary<'a> {
    #[serde(flatten)]
    counts: &'a LintSummary,
    input_errors: usize,
    /// Findings per rule code.
    rules: BTreeMap<&'static str, usize>,
}

/// The report as a JSON value (also used by tests and other commands).
pub fn to_value(outcome: &LintOutcome) -> serde_json::Value {
    let report = JsonReport {
        findings: &outcome.findings,
        errors: &outcome.input_errors,
        summary: summary(outcome),
    };
    // Serializing plain structs of strings and integers cannot fail.
    serde_json::to_value(report).unwrap_or(serde_json::Value::Null)
}

/// Pretty-printed, with a trailing newline: the same text as [`to_value`]
/// printed, but written through the streaming printer, so the report never
/// exists twice in memory (as findings and as one big JSON tree).
pub fn write(out: &mut dyn Write, outcome: &LintOutcome) -> io::Result<()> {
    super::write_outcome(out, super::Format::Json, outcome, &[], None, false)
}

/// Findings spooled as they arrive; the document (errors first, as its
/// keys sort) written at the end.
#[derive(Default)]
pub(crate) struct JsonEmitter {
    spool: Spool,
}

impl Emitter for JsonEmitter {
    fn finding(&mut self, _: &mut dyn Write, f: &Finding, _: Option<&str>) -> io::Result<()> {
        spool_item(&mut self.spool, &sorted(f)?, 2)
    }

    fn finish(&mut self, out: &mut dyn Write, end: &End<'_>) -> io::Result<()> {
        write_document(out, end.errors, &mut self.spool, end.summary, end.counts)
    }
}

/// A finding as `serde_json::Value` prints it (keys sorted).
fn sorted<T: Serialize>(item: &T) -> io::Result<serde_json::Value> {
    serde_json::to_value(item).map_err(io::Error::other)
}

/// The whole document, keys in the order a `serde_json::Value` prints them
/// (sorted): `errors`, the spooled `findings`, `summary`.
fn write_document(
    out: &mut dyn Write,
    errors: &[InputError],
    findings: &mut Spool,
    counts: &LintSummary,
    seen: &Counts,
) -> io::Result<()> {
    let summary = JsonSummary {
        counts,
        input_errors: errors.len(),
        rules: seen
            .rules
            .iter()
            .map(|(code, (_, _, n))| (*code, *n))
            .collect(),
    };
    let errors =
        serde_json::Value::Array(errors.iter().map(sorted).collect::<io::Result<Vec<_>>>()?);
    let summary = sorted(&summary)?;
    let mut write_findings =
        |out: &mut dyn Write, depth: usize| write_spooled_array(out, findings, depth);
    write_map(
        out,
        0,
        vec![
            ("errors", Entry::Value(&errors)),
            ("findings", Entry::Writer(&mut write_findings)),
            ("summary", Entry::Value(&summary)),
        ],
    )?;
    writeln!(out)
}

fn summary(outcome: &LintOutcome) -> JsonSummary<'_> {
    JsonSummary {
        counts: &outcome.summary,
        input_errors: outcome.input_errors.len(),
        rules: rule_counts(&outcome.findings)
            .into_iter()
            .map(|(code, _, _, n)| (code, n))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_support::{input_error, outcome_with, sample_findings};
    use serde_json::json;

    #[test]
    fn shape_is_the_documented_one() {
        let mut outcome = outcome_with(sample_findings());
        outcome.input_errors.push(input_error());
        let mut buf = Vec::new();
        write(&mut buf, &outcome).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(
            v["findings"][0],
            json!({
                "code": "IR001",
                "name": "skip-probe-serving",
                "severity": "error",
                "message": sample_findings()[0].message,
                "file": "recipes/pd.yaml",
                "line": 12,
                "column": 9,
                "object": {"kind": "InferaDeployment", "name": "pd", "namespace": "prod", "service": "decode"}
            })
        );
        assert_eq!(v["findings"][1]["severity"], "warning");
        assert_eq!(
            v["errors"][0],
            json!({"file": "recipes/bad.yaml", "line": 3, "column": 7,
                   "message": "mapping values are not allowed here: fix the YAML and run again"})
        );
        assert_eq!(
            v["summary"],
            json!({"files": 3, "documents": 5, "objects": 4, "skipped": 1, "silent": 1, "errors": 1,
                   "warnings": 1, "input_errors": 1, "rules": {"IR001": 1, "IR005": 1}})
        );
    }

    #[test]
    fn streamed_text_is_the_json_value_printed() {
        for mut outcome in [LintOutcome::default(), outcome_with(sample_findings())] {
            outcome.input_errors.push(input_error());
            let mut streamed = Vec::new();
            write(&mut streamed, &outcome).unwrap();
            let mut whole = serde_json::to_vec_pretty(&to_value(&outcome)).unwrap();
            whole.push(b'\n');
            assert_eq!(
                String::from_utf8(streamed).unwrap(),
                String::from_utf8(whole).unwrap()
            );
        }
    }

    #[test]
    fn empty_outcome_still_has_every_key() {
        let v = to_value(&LintOutcome::default());
        assert_eq!(v["findings"], json!([]));
        assert_eq!(v["errors"], json!([]));
        assert_eq!(v["summary"]["rules"], json!({}));
    }
}
