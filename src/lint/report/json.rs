//! JSON output: one document,
//! `{"findings": [...], "errors": [...], "summary": {...}}`.
//!
//! The shape is a public contract (documented in the README): fields are
//! only ever added, never renamed.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use super::rule_counts;
use crate::lint::engine::{InputError, LintOutcome, LintSummary};
use crate::lint::finding::Finding;

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
        summary: JsonSummary {
            counts: &outcome.summary,
            input_errors: outcome.input_errors.len(),
            rules: rule_counts(&outcome.findings)
                .into_iter()
                .map(|(code, _, _, n)| (code, n))
                .collect(),
        },
    };
    // Serializing plain structs of strings and integers cannot fail.
    serde_json::to_value(report).unwrap_or(serde_json::Value::Null)
}

/// Pretty-printed, with a trailing newline.
pub fn write(out: &mut dyn Write, outcome: &LintOutcome) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &to_value(outcome))?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::report::tests_support::{input_error, outcome_with, sample_findings};
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
            json!({"files": 3, "documents": 5, "objects": 4, "skipped": 1, "errors": 1,
                   "warnings": 1, "input_errors": 1, "rules": {"IR001": 1, "IR005": 1}})
        );
    }

    #[test]
    fn empty_outcome_still_has_every_key() {
        let v = to_value(&LintOutcome::default());
        assert_eq!(v["findings"], json!([]));
        assert_eq!(v["errors"], json!([]));
        assert_eq!(v["summary"]["rules"], json!({}));
    }
}
