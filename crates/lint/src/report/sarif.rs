//! SARIF 2.1.0 output (serde-sarif), for GitHub code scanning.
//!
//! Rules come from the registry so every result has a `ruleIndex` into
//! `tool.driver.rules`; locations are relative URIs with forward slashes and
//! a region that always starts at line/column ≥ 1 (code scanning rejects 0),
//! so live objects without spans point at line 1 and carry a logical
//! location naming the object instead.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_sarif::sarif::{
    ArtifactChange, ArtifactContent, ArtifactLocation, Fix as SarifFix, Invocation, Location,
    LogicalLocation, Message, MultiformatMessageString, Notification, PhysicalLocation, Region,
    Replacement, ReportingConfiguration, ReportingDescriptor, Result as SarifResult, ResultLevel,
    Run, Sarif, Tool, ToolComponent,
};

use super::describe_object;
use super::emit::{Emitter, End};
use super::spool::{Entry, Spool, indent, spool_item, write_map, write_spooled_array};
use crate::engine::summary::InputError;
use crate::engine::{LintOutcome, RuleMeta};
use crate::finding::{Finding, Severity};

/// The schema URI written into `$schema`.
pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

fn level_name(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

fn result_level(severity: Severity) -> ResultLevel {
    match severity {
        Severity::Error => ResultLevel::Error,
        Severity::Warning => ResultLevel::Warning,
    }
}

/// The first paragraph under the doc's "What it does" heading (or the
/// doc's first paragraph), as one line.
pub fn what_it_does(doc: &str) -> Option<String> {
    let lines: Vec<&str> = doc.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with('#') && l.to_ascii_lowercase().contains("what it does"))
        .map_or(0, |i| i + 1);
    let paragraph: Vec<&str> = lines
        .get(start..)
        .unwrap_or_default()
        .iter()
        .skip_while(|l| l.trim().is_empty() || l.starts_with('#'))
        .take_while(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.trim())
        .collect();
    (!paragraph.is_empty()).then(|| paragraph.join(" "))
}

/// A path as given on the command line → a relative URI reference with
/// forward slashes, percent-encoded. Absolute paths under `base` are made
/// relative to it; other absolute paths become `file://` URIs; `-` (stdin)
/// becomes `stdin`.
pub fn artifact_uri(path: &str, base: Option<&Path>) -> String {
    if path == "-" {
        return "stdin".to_string();
    }
    let mut p = path.replace('\\', "/");
    let absolute = Path::new(path).is_absolute() || p.starts_with('/');
    if absolute {
        if let Some(rel) = base.and_then(|b| Path::new(path).strip_prefix(b).ok()) {
            p = rel.to_string_lossy().replace('\\', "/");
        } else {
            let encoded = percent_encode(&p);
            return if encoded.starts_with('/') {
                format!("file://{encoded}")
            } else {
                format!("file:///{encoded}")
            };
        }
    }
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.to_string();
    }
    percent_encode(&p)
}

/// Percent-encode everything but RFC 3986 unreserved characters and `/`.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn descriptor(rule: &RuleMeta) -> ReportingDescriptor {
    let full = what_it_does(rule.doc).unwrap_or_else(|| rule.summary.to_string());
    ReportingDescriptor::builder()
        .id(rule.code)
        .name(rule.name)
        .short_description(
            MultiformatMessageString::builder()
                .text(rule.summary)
                .build(),
        )
        .full_description(MultiformatMessageString::builder().text(full).build())
        .help(
            MultiformatMessageString::builder()
                .text(rule.doc)
                .markdown(rule.doc)
                .build(),
        )
        .default_configuration(
            ReportingConfiguration::builder()
                .level(serde_json::Value::from(level_name(rule.default_severity)))
                .build(),
        )
        .build()
}

fn region(line: usize, column: usize) -> Region {
    let as_i64 = |n: usize| i64::try_from(n.max(1)).unwrap_or(i64::MAX);
    Region::builder()
        .start_line(as_i64(line))
        .start_column(as_i64(column))
        .build()
}

fn physical(file: &str, line: usize, column: usize, base: Option<&Path>) -> PhysicalLocation {
    PhysicalLocation::builder()
        .artifact_location(
            ArtifactLocation::builder()
                .uri(artifact_uri(file, base))
                .build(),
        )
        .region(region(line, column))
        .build()
}

fn result(finding: &Finding, rule_index: usize, base: Option<&Path>) -> SarifResult {
    let object = &finding.object;
    let mut qualified = vec![object.kind.as_str()];
    if let Some(ns) = &object.namespace {
        qualified.push(ns);
    }
    qualified.push(&object.name);
    if let Some(service) = &object.service {
        qualified.push(service);
    }
    let logical = LogicalLocation::builder()
        .name(describe_object(object))
        .fully_qualified_name(qualified.join("/"))
        .kind(object.kind.as_str())
        .build();
    let location = Location::builder()
        .physical_location(physical(&finding.file, finding.line, finding.column, base))
        .logical_locations(vec![logical])
        .build();
    let mut result = SarifResult::builder()
        .rule_id(finding.code)
        .rule_index(i64::try_from(rule_index).unwrap_or(i64::MAX))
        .level(result_level(finding.severity))
        .message(Message::builder().text(finding.message.as_str()).build())
        .locations(vec![location])
        .build();
    result.fixes = fixes(finding, base);
    result
}

/// The finding's fix as SARIF `fixes` (one artifact change of the file,
/// a replacement per text edit); none for a fix without text edits.
fn fixes(finding: &Finding, base: Option<&Path>) -> Option<Vec<SarifFix>> {
    let fix = finding.fix.as_ref().filter(|f| !f.edits.is_empty())?;
    let as_i64 = |n: usize| i64::try_from(n.max(1)).unwrap_or(i64::MAX);
    let replacements: Vec<Replacement> = fix
        .edits
        .iter()
        .map(|e| {
            let region = Region::builder()
                .start_line(as_i64(e.line))
                .start_column(as_i64(e.column))
                .end_line(as_i64(e.end_line))
                .end_column(as_i64(e.end_column))
                .build();
            let mut r = Replacement::builder().deleted_region(region).build();
            if !e.text.is_empty() {
                r.inserted_content = Some(ArtifactContent::builder().text(e.text.as_str()).build());
            }
            r
        })
        .collect();
    let change = ArtifactChange::builder()
        .artifact_location(
            ArtifactLocation::builder()
                .uri(artifact_uri(&finding.file, base))
                .build(),
        )
        .replacements(replacements)
        .build();
    Some(vec![
        SarifFix::builder()
            .description(Message::builder().text(fix.description.as_str()).build())
            .artifact_changes(vec![change])
            .build(),
    ])
}

fn notification(error: &InputError, base: Option<&Path>) -> Notification {
    Notification::builder()
        .level(serde_json::Value::from("error"))
        .message(Message::builder().text(error.message.as_str()).build())
        .locations(vec![
            Location::builder()
                .physical_location(physical(
                    &error.file,
                    error.line.unwrap_or(1),
                    error.column.unwrap_or(1),
                    base,
                ))
                .build(),
        ])
        .build()
}

/// A kind that carries pods but was not linted: a `note` notification
/// (`skipped: KIND (reason)`), so code scanning shows it was not checked.
fn skipped_note(k: &crate::engine::summary::SkippedKind) -> Notification {
    Notification::builder()
        .level(serde_json::Value::from("note"))
        .message(Message::builder().text(super::skipped_line(k)).build())
        .build()
}

/// A chart or overlay left unrendered: a `note` notification with the
/// command that renders it.
fn skipped_input_note(s: &crate::engine::summary::SkippedInput) -> Notification {
    Notification::builder()
        .level(serde_json::Value::from("note"))
        .message(
            Message::builder()
                .text(super::skipped_input_line(s))
                .build(),
        )
        .build()
}

/// A GPU workload the engine-dependent rules did not judge: a `note`.
fn unjudged_note(u: &crate::engine::summary::Unjudged) -> Notification {
    Notification::builder()
        .level(serde_json::Value::from("note"))
        .message(Message::builder().text(super::unjudged_line(u)).build())
        .build()
}

/// The SARIF log for one run. `rules` is the registry (all rules, so
/// code scanning can show every rule's help); `base` is the directory
/// absolute paths are made relative to (the project root / cwd).
pub fn to_sarif(outcome: &LintOutcome, rules: &[RuleMeta], base: Option<&Path>) -> Sarif {
    let mut descriptors: Vec<ReportingDescriptor> = rules.iter().map(descriptor).collect();
    let mut codes: Vec<&str> = rules.iter().map(|r| r.code).collect();
    let mut results = Vec::with_capacity(outcome.findings.len());
    for finding in &outcome.findings {
        let index = match codes.iter().position(|c| *c == finding.code) {
            Some(i) => i,
            None => {
                // A code missing from the registry still gets a descriptor,
                // so ruleIndex stays valid.
                descriptors.push(
                    ReportingDescriptor::builder()
                        .id(finding.code)
                        .name(finding.name)
                        .build(),
                );
                codes.push(finding.code);
                codes.len() - 1
            }
        };
        results.push(result(finding, index, base));
    }

    let mut driver = ToolComponent::builder()
        .name("infera")
        .version(env!("CARGO_PKG_VERSION"))
        .semantic_version(env!("CARGO_PKG_VERSION"))
        .rules(descriptors)
        .build();
    driver.information_uri = information_uri();

    let invocation = Invocation::builder()
        .execution_successful(outcome.input_errors.is_empty())
        .tool_execution_notifications(
            outcome
                .input_errors
                .iter()
                .map(|e| notification(e, base))
                .chain(outcome.summary.skipped_kinds.iter().map(skipped_note))
                .chain(
                    outcome
                        .summary
                        .skipped_inputs
                        .iter()
                        .map(skipped_input_note),
                )
                .chain(outcome.summary.unjudged.iter().map(unjudged_note))
                .collect::<Vec<_>>(),
        )
        .build();

    let run = Run::builder()
        .tool(Tool::builder().driver(driver).build())
        .results(results)
        .invocations(vec![invocation])
        .column_kind(serde_json::Value::from("unicodeCodePoints"))
        .build();

    Sarif::builder()
        .schema(SCHEMA_URI)
        .version(serde_json::Value::from("2.1.0"))
        .runs(vec![run])
        .build()
}

/// The project's home page, from `Cargo.toml` (`repository`, else
/// `homepage`); omitted when neither is set.
fn information_uri() -> Option<String> {
    [env!("CARGO_PKG_REPOSITORY"), env!("CARGO_PKG_HOMEPAGE")]
        .into_iter()
        .find(|s| !s.is_empty())
        .map(str::to_string)
}

/// Pretty-printed, with a trailing newline: the same bytes as
/// `serde_json::to_writer_pretty(out, &to_sarif(..))`, but streamed through
/// the [`Printer`](super::Printer): each result is built, written and
/// dropped in turn.
pub fn write(
    out: &mut dyn Write,
    outcome: &LintOutcome,
    rules: &[RuleMeta],
    base: Option<&Path>,
) -> io::Result<()> {
    super::write_outcome(out, super::Format::Sarif, outcome, rules, base, false)
}

/// Results spooled as they arrive; the run (rules, invocation with the
/// input errors, then the results) written at the end.
pub(crate) struct SarifEmitter<'a> {
    rules: &'a [RuleMeta],
    base: Option<PathBuf>,
    /// Codes results used that the registry lacks, in first-use order.
    extra: Vec<(&'static str, &'static str)>,
    spool: Spool,
}

impl<'a> SarifEmitter<'a> {
    /// `rules`: the registry (`tool.driver.rules`); `base`: the directory
    /// absolute paths are made relative to.
    pub(crate) fn new(rules: &'a [RuleMeta], base: Option<&Path>) -> Self {
        SarifEmitter {
            rules,
            base: base.map(Path::to_path_buf),
            extra: Vec::new(),
            spool: Spool::default(),
        }
    }

    /// The `ruleIndex` of a finding's code: its place in the registry, or
    /// after it (codes outside the registry get descriptors of their own, in
    /// the order results first use them).
    fn rule_index(&mut self, f: &Finding) -> usize {
        if let Some(i) = self.rules.iter().position(|r| r.code == f.code) {
            return i;
        }
        let known = self.extra.iter().position(|(c, _)| *c == f.code);
        let i = known.unwrap_or_else(|| {
            self.extra.push((f.code, f.name));
            self.extra.len() - 1
        });
        self.rules.len() + i
    }
}

impl Emitter for SarifEmitter<'_> {
    fn finding(&mut self, _: &mut dyn Write, f: &Finding, _: Option<&str>) -> io::Result<()> {
        let index = self.rule_index(f);
        spool_item(&mut self.spool, &result(f, index, self.base.as_deref()), 4)
    }

    fn finish(&mut self, out: &mut dyn Write, end: &End<'_>) -> io::Result<()> {
        let base = self.base.as_deref();
        write_document(
            out,
            self.rules,
            &self.extra,
            end.errors,
            end.summary,
            &mut self.spool,
            base,
        )
    }
}

/// The document around the spooled `results`: only the small parts (rules,
/// invocation) are built as SARIF objects. `extra` are the codes results
/// used that the registry lacks (each gets a descriptor after the
/// registry's). Keys are written in sorted order, as a `serde_json::Value`
/// prints them (serde-sarif's fields are alphabetical).
fn write_document(
    out: &mut dyn Write,
    rules: &[RuleMeta],
    extra: &[(&'static str, &'static str)],
    errors: &[InputError],
    summary: &crate::engine::summary::LintSummary,
    results: &mut Spool,
    base: Option<&Path>,
) -> io::Result<()> {
    let mut empty = LintOutcome {
        input_errors: errors.to_vec(),
        ..LintOutcome::default()
    };
    empty.summary.skipped_kinds = summary.skipped_kinds.clone();
    empty.summary.skipped_inputs = summary.skipped_inputs.clone();
    empty.summary.unjudged = summary.unjudged.clone();
    let mut skeleton = to_sarif(&empty, rules, base);
    let Some(mut run) = skeleton.runs.pop() else {
        return Err(io::Error::other("SARIF skeleton without a run"));
    };
    for (code, name) in extra {
        run.tool
            .driver
            .rules
            .get_or_insert_with(Vec::new)
            .push(ReportingDescriptor::builder().id(*code).name(*name).build());
    }
    run.results = None;
    let (serde_json::Value::Object(run), serde_json::Value::Object(head)) = (
        serde_json::to_value(&run).map_err(io::Error::other)?,
        serde_json::to_value(&skeleton).map_err(io::Error::other)?,
    ) else {
        return Err(io::Error::other("SARIF skeleton is not an object"));
    };
    let mut write_results =
        |out: &mut dyn Write, depth: usize| write_spooled_array(out, results, depth);
    let mut write_run = |out: &mut dyn Write, depth: usize| {
        let mut open = b"[\n".to_vec();
        indent(&mut open, depth + 1);
        out.write_all(&open)?;
        write_map(
            out,
            depth + 1,
            with_entry(&run, "results", &mut write_results),
        )?;
        let mut close = vec![b'\n'];
        indent(&mut close, depth);
        close.push(b']');
        out.write_all(&close)
    };
    write_map(out, 0, with_entry(&head, "runs", &mut write_run))?;
    writeln!(out)
}

/// The entries of `map` with `key` (written by `writer`) in sorted key order.
fn with_entry<'a>(
    map: &'a serde_json::Map<String, serde_json::Value>,
    key: &'a str,
    writer: &'a mut dyn FnMut(&mut dyn Write, usize) -> io::Result<()>,
) -> Vec<(&'a str, Entry<'a>)> {
    let mut entries: Vec<(&str, Entry<'_>)> = map
        .iter()
        .filter(|(k, _)| k.as_str() != key)
        .map(|(k, v)| (k.as_str(), Entry::Value(v)))
        .collect();
    entries.push((key, Entry::Writer(writer)));
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_support::{RULES, input_error, outcome_with, sample_findings};

    fn value(outcome: &LintOutcome) -> serde_json::Value {
        serde_json::to_value(to_sarif(outcome, RULES, None)).unwrap()
    }

    #[test]
    fn driver_lists_rules_and_results_point_at_them() {
        let v = value(&outcome_with(sample_findings()));
        let run = &v["runs"][0];
        assert_eq!(v["version"], "2.1.0");
        assert_eq!(run["tool"]["driver"]["name"], "infera");
        let rules = &run["tool"]["driver"]["rules"];
        assert_eq!(rules[0]["id"], "IR001");
        assert_eq!(rules[0]["name"], "skip-probe-serving");
        assert_eq!(
            rules[0]["fullDescription"]["text"],
            "Flags `skipReadinessProbe: true` on a worker that serves."
        );
        assert_eq!(rules[1]["defaultConfiguration"]["level"], "warning");
        let r = &run["results"][1];
        assert_eq!(r["ruleId"], "IR005");
        assert_eq!(r["ruleIndex"], 1);
        assert_eq!(r["level"], "warning");
        let loc = &r["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], "recipes/pd.yaml");
        assert_eq!(loc["region"]["startLine"], 15);
        assert_eq!(loc["region"]["startColumn"], 13);
        assert_eq!(
            r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"],
            "InferaDeployment/prod/pd/decode"
        );
        assert_eq!(run["invocations"][0]["executionSuccessful"], true);
    }

    #[test]
    fn streamed_bytes_equal_the_built_document() {
        let mut outcome = outcome_with(sample_findings());
        outcome.input_errors.push(input_error());
        // A code outside the registry still gets its descriptor.
        let mut stray = sample_findings()[0].clone();
        stray.code = "IR999";
        stray.name = "stray";
        outcome.findings.push(stray);
        for o in [outcome, outcome_with(Vec::new())] {
            let mut built = serde_json::to_vec_pretty(&to_sarif(&o, RULES, None)).unwrap();
            built.push(b'\n');
            let mut streamed = Vec::new();
            write(&mut streamed, &o, RULES, None).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&streamed),
                String::from_utf8_lossy(&built)
            );
        }
    }

    #[test]
    fn live_objects_get_line_one() {
        let mut findings = sample_findings();
        findings[0].file = "cluster".into();
        findings[0].line = 0;
        findings[0].column = 0;
        let v = value(&outcome_with(findings));
        let region = &v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"];
        assert_eq!(region["startLine"], 1);
        assert_eq!(region["startColumn"], 1);
    }

    #[test]
    fn input_errors_become_notifications() {
        let mut outcome = outcome_with(Vec::new());
        outcome.input_errors.push(input_error());
        let v = value(&outcome);
        let inv = &v["runs"][0]["invocations"][0];
        assert_eq!(inv["executionSuccessful"], false);
        let n = &inv["toolExecutionNotifications"][0];
        assert_eq!(n["level"], "error");
        assert_eq!(
            n["locations"][0]["physicalLocation"]["region"]["startLine"],
            3
        );
    }

    #[test]
    fn unknown_code_still_gets_a_rule_index() {
        let mut findings = sample_findings();
        findings[0].code = "IR999";
        let v = value(&outcome_with(findings));
        assert_eq!(v["runs"][0]["results"][0]["ruleIndex"], 2);
        assert_eq!(v["runs"][0]["tool"]["driver"]["rules"][2]["id"], "IR999");
    }

    #[test]
    fn uris_are_relative_with_forward_slashes() {
        assert_eq!(
            artifact_uri("./recipes/a b.yaml", None),
            "recipes/a%20b.yaml"
        );
        assert_eq!(artifact_uri("-", None), "stdin");
        assert_eq!(
            artifact_uri("/work/p/recipes/x.yaml", Some(Path::new("/work/p"))),
            "recipes/x.yaml"
        );
        assert_eq!(
            artifact_uri("/elsewhere/x.yaml", Some(Path::new("/work/p"))),
            "file:///elsewhere/x.yaml"
        );
        assert_eq!(
            artifact_uri("../manifests/a.yaml", None),
            "../manifests/a.yaml"
        );
    }

    #[test]
    fn what_it_does_takes_the_first_paragraph() {
        assert_eq!(
            what_it_does(
                "## What it does
One
two.

## Why
x"
            )
            .as_deref(),
            Some("One two.")
        );
        assert_eq!(
            what_it_does(
                "Plain text.

More."
            )
            .as_deref(),
            Some("Plain text.")
        );
        assert_eq!(what_it_does(""), None);
    }
}
