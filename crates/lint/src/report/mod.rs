//! Printers over one list of findings: human, JSON, SARIF, GitHub.
//!
//! Each printer renders the same [`LintOutcome`] (findings, input errors,
//! summary) and knows nothing of the command line; `lint::run` picks one.

mod emit;
pub mod github;
pub mod human;
pub mod json;
pub mod sarif;
pub mod spool;
pub mod stream;

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;

use super::engine::{LintOutcome, RuleMeta};
use super::finding::{Finding, ObjectRef, Severity};
pub use stream::Printer;

/// Print a whole outcome (findings already in report order) through the
/// streaming [`Printer`]: the same bytes whether the findings arrive at
/// once or file by file.
pub fn write_outcome(
    out: &mut dyn Write,
    format: Format,
    outcome: &LintOutcome,
    rules: &[RuleMeta],
    base: Option<&Path>,
    color: bool,
) -> io::Result<()> {
    let mut printer = Printer::new(out, format, rules, base, color);
    for group in outcome.findings.chunk_by(|a, b| a.file == b.file) {
        let sources = group.first().and_then(|f| outcome.sources.get(&f.file));
        printer.findings(group, sources)?;
    }
    printer.errors(&outcome.input_errors);
    printer.finish(&outcome.summary)
}

/// Findings per rule code, in code order: (code, name, severity, count).
/// The severity is the highest one reported for that rule in this run.
pub fn rule_counts(findings: &[Finding]) -> Vec<(&'static str, &'static str, Severity, usize)> {
    let mut counts: BTreeMap<&'static str, (&'static str, Severity, usize)> = BTreeMap::new();
    for f in findings {
        let entry = counts.entry(f.code).or_insert((f.name, f.severity, 0));
        entry.1 = entry.1.max(f.severity);
        entry.2 += 1;
    }
    counts
        .into_iter()
        .map(|(code, (name, severity, n))| (code, name, severity, n))
        .collect()
}

/// `InferaDeployment prod/pd-1p1d, service decode`.
pub fn describe_object(object: &ObjectRef) -> String {
    let mut s = object.kind.clone();
    s.push(' ');
    if let Some(ns) = &object.namespace {
        s.push_str(ns);
        s.push('/');
    }
    s.push_str(&object.name);
    if let Some(service) = &object.service {
        s.push_str(", service ");
        s.push_str(service);
    }
    s
}

/// Number of files that have at least one finding.
pub fn files_with_findings(outcome: &LintOutcome) -> usize {
    let mut files: Vec<&str> = outcome.findings.iter().map(|f| f.file.as_str()).collect();
    files.sort_unstable();
    files.dedup();
    files.len()
}

/// `1 error`, `2 warnings`.
pub fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("{n} {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// The printers `write_report` chooses between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Code frames and a summary table.
    Human,
    /// One JSON document.
    Json,
    /// SARIF 2.1.0.
    Sarif,
    /// GitHub Actions workflow annotation lines.
    Github,
}

/// How every report names a kind it skipped:
/// `skipped: StormService (orchestration.aibrix.ai) ×2 (reason)`, or for a
/// kind lint does not know, `not read: Model (kubeai.org) ×4 (reason;
/// found: containers at spec.runner, replicas 1 at spec.replicas)`.
pub(crate) fn skipped_line(k: &crate::engine::summary::SkippedKind) -> String {
    use crate::engine::summary::SkipStatus;
    let head = match k.status {
        SkipStatus::Skipped => "skipped",
        SkipStatus::NotRead => "not read",
    };
    let found = if k.found.is_empty() {
        String::new()
    } else {
        format!("; found: {}", k.found.join(", "))
    };
    format!(
        "{head}: {} ×{} ({}{found})",
        k.kind_and_group(),
        k.count,
        k.reason
    )
}

/// How every report says a GPU workload was not judged for want of an
/// engine, and how to name it.
pub(crate) fn unjudged_line(u: &crate::engine::summary::Unjudged) -> String {
    format!(
        "not judged: {}: {} (container {}, {}) runs no engine infera recognises, so {} did not judge it; name the engine: run it by its own command (vllm serve, python3 -m sglang.launch_server, text-generation-launcher, tritonserver, trtllm-serve), use an image whose repository name says it (…/vllm-…, …/sglang-…, …/tgi-…, …/triton-…, …/trtllm-…), or pass the engine's own flags in args (vLLM --tensor-parallel-size, SGLang --tp-size, TGI --num-shard, Triton --model-repository, TensorRT-LLM --tp_size)",
        u.file,
        u.workload,
        u.container,
        u.gpus,
        u.rules.join(", ")
    )
}

/// `skipped: charts/w (a Helm chart, and no helm on PATH …); run `helm template charts/w | infera lint -``.
pub(crate) fn skipped_input_line(s: &crate::engine::summary::SkippedInput) -> String {
    format!("skipped: {} ({}); run `{}`", s.path, s.reason, s.command)
}

/// Hand-built outcomes for the printers' unit tests (and the `infera lint`
/// command's tests in the binary).
#[doc(hidden)]
pub mod tests_support {
    use super::*;
    use crate::engine::RuleMeta;
    use crate::engine::summary::{InputError, LintSummary};

    pub const PD_YAML: &str = "\
apiVersion: infera.amd.com/v1alpha1
kind: InferaDeployment
metadata:
  name: pd
  namespace: prod
spec:
  services:
    decode:
      replicas: 1
      worker:
        image: engine:1
        skipReadinessProbe: true
        readinessProbe:
          httpGet:
            path: /health
            port: 30090
";

    pub fn sample_findings() -> Vec<Finding> {
        let object = ObjectRef {
            kind: "InferaDeployment".into(),
            name: "pd".into(),
            namespace: Some("prod".into()),
            service: Some("decode".into()),
        };
        vec![
            Finding {
                code: "IR001",
                name: "skip-probe-serving",
                severity: Severity::Error,
                message: "decode will have no serving pod for the whole restart of its \
                          replacement: remove `skipReadinessProbe: true`"
                    .into(),
                file: "recipes/pd.yaml".into(),
                line: 12,
                column: 9,
                object: object.clone(),
                fix: None,
            },
            Finding {
                code: "IR005",
                name: "probe-not-registration",
                severity: Severity::Warning,
                message: "the readiness probe checks /health, not /ready: pods count Ready \
                          before they registered, use httpGet /ready on port 30090"
                    .into(),
                file: "recipes/pd.yaml".into(),
                line: 15,
                column: 13,
                object,
                fix: None,
            },
        ]
    }

    pub fn outcome_with(findings: Vec<Finding>) -> LintOutcome {
        let errors = findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count();
        let warnings = findings.len() - errors;
        let mut sources = std::collections::BTreeMap::new();
        sources.insert(
            "recipes/pd.yaml".to_string(),
            PD_YAML
                .lines()
                .enumerate()
                .map(|(i, l)| (i + 1, l.to_string()))
                .collect(),
        );
        LintOutcome {
            findings,
            input_errors: Vec::new(),
            summary: LintSummary {
                files: 3,
                documents: 5,
                objects: 4,
                skipped: 1,
                silent: 1,
                errors,
                warnings,
                skipped_kinds: Vec::new(),
                unjudged: Vec::new(),
                skipped_inputs: Vec::new(),
            },
            sources,
        }
    }

    pub fn input_error() -> InputError {
        InputError {
            file: "recipes/bad.yaml".into(),
            line: Some(3),
            column: Some(7),
            message: "mapping values are not allowed here: fix the YAML and run again".into(),
        }
    }

    pub const RULES: &[RuleMeta] = &[
        RuleMeta {
            code: "IR001",
            name: "skip-probe-serving",
            default_severity: Severity::Error,
            summary: "skipReadinessProbe on a serving worker",
            doc: "## What it does\nFlags `skipReadinessProbe: true` on a worker that serves.\n\n\
                  ## Why is this bad?\nThe pod counts Ready before it serves.\n",
        },
        RuleMeta {
            code: "IR005",
            name: "probe-not-registration",
            default_severity: Severity::Warning,
            summary: "readiness probe is not httpGet /ready on the readiness port",
            doc: "## What it does\nChecks the readiness probe.\n",
        },
    ];
}
