//! `infera lint`: rules over typed manifest views, reported by printers.
//!
//! The pieces know nothing of each other: the config (`config`), the engine
//! (`engine`, which parses and runs the rules) and the printers (`report`).
//! The command (`infera lint`, flags, exit codes, `--cluster`) is in the
//! binary's `commands::lint`.

pub mod config;
pub mod engine;
pub mod finding;
pub mod fix;
mod kinds;
pub mod options;
pub mod peers;
mod pool;
pub mod report;
pub mod rules;
pub mod runner;
mod serving;

use std::io;

use config::Effective;
use engine::summary::{InputError, LintSummary};
use engine::{LintOutcome, RuleMeta};
use finding::Severity;
use options::LintOptions;
use report::Format;

/// Render a whole `outcome` with the printer for `format`.
pub use report::write_outcome as write_report;

/// Everything `infera lint` does to one file, in memory: parse, every rule,
/// [`apply`] with the default configuration, and every printer (into a
/// sink). The fuzz target (`fuzz/fuzz_targets/lint.rs`) and
/// `tests/cli/no_panic.rs` feed arbitrary bytes through this: whatever the bytes,
/// it returns, with findings or input errors, and never panics.
pub fn lint_bytes_through_every_printer(bytes: &[u8]) -> LintOutcome {
    let rules = engine::rules();
    let options = LintOptions {
        node_gpus: config::DEFAULT_NODE_GPUS,
        keep_sources: true,
        ..LintOptions::default()
    };
    let outcome = engine::lint_source("fuzz.yaml", bytes, &options);
    let outcome = match config::resolve(
        rules,
        &config::LoadedConfig::default(),
        &config::CliOverrides::default(),
    ) {
        Ok(effective) => apply(outcome, &effective),
        Err(_) => outcome,
    };
    // Human with colour: the same code frames as without, plus styling.
    let printers = [
        (Format::Human, true),
        (Format::Json, false),
        (Format::Sarif, false),
        (Format::Github, false),
    ];
    for (format, color) in printers {
        // A sink never fails: what matters here is that no printer panics.
        let _ = write_report(&mut io::sink(), format, &outcome, rules, None, color);
    }
    outcome
}

/// `file:line:column: message` (as much of the position as is known).
pub fn describe_input_error(e: &InputError) -> String {
    let mut s = e.file.clone();
    if let Some(line) = e.line {
        s.push_str(&format!(":{line}"));
        if let Some(column) = e.column {
            s.push_str(&format!(":{column}"));
        }
    }
    format!("{s}: {}", e.message)
}

/// Apply rule selection and severity overrides to what the engine found,
/// order findings by position, and recount the summary.
///
/// The engine already runs only `LintOptions::enabled`; filtering again here
/// keeps the contract simple ("an empty list means all rules" cannot express
/// "none", and a rule disabled in the config must never be reported).
pub fn apply(mut outcome: LintOutcome, effective: &Effective) -> LintOutcome {
    configure(&mut outcome.findings, effective);
    outcome.findings.sort_by(|a, b| {
        (&a.file, a.line, a.column, a.code).cmp(&(&b.file, b.line, b.column, b.code))
    });
    outcome
        .input_errors
        .sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
    let errors = outcome
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    outcome.summary.errors = errors;
    outcome.summary.warnings = outcome.findings.len() - errors;
    let files: std::collections::BTreeSet<&str> =
        outcome.findings.iter().map(|f| f.file.as_str()).collect();
    outcome
        .sources
        .retain(|file, _| files.contains(file.as_str()));
    outcome
}

/// Keep the enabled rules' findings, at their configured severity.
fn configure(findings: &mut Vec<finding::Finding>, effective: &Effective) {
    findings.retain(|f| effective.enabled.contains(&f.code));
    for f in findings.iter_mut() {
        f.severity = effective.severity_of(f.code, f.severity);
    }
}

/// `infera lint PATHS`, streamed: lint file by file ([`engine::lint_paths_each`]),
/// [`apply`] the configuration to each file's findings, print them with
/// `printer` and hand each input error to `on_input_error` as they come, in
/// the order (and with the bytes) [`apply`] + [`write_report`] give for the
/// whole outcome. Returns the summary (errors and warnings counted after
/// the configuration) and the number of input errors.
pub fn lint_and_print(
    paths: &[std::path::PathBuf],
    opts: &LintOptions,
    effective: &Effective,
    mut printer: report::Printer<'_>,
    on_input_error: &mut dyn FnMut(&InputError),
) -> io::Result<(LintSummary, usize)> {
    let mut summary = LintSummary::default();
    let mut input_errors = 0;
    let mut each = |mut f: engine::FileOutcome| {
        configure(&mut f.findings, effective);
        f.findings
            .sort_by(|a, b| (a.line, a.column, a.code).cmp(&(b.line, b.column, b.code)));
        f.input_errors.sort_by_key(|e| (e.line, e.column));
        summary.add_file(&f);
        let errors = f
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count();
        summary.errors += errors;
        summary.warnings += f.findings.len() - errors;
        input_errors += f.input_errors.len();
        f.input_errors.iter().for_each(&mut *on_input_error);
        printer.findings(&f.findings, Some(&f.sources))?;
        printer.errors(&f.input_errors);
        Ok(())
    };
    engine::lint_paths_each(paths, opts, &mut each)?;
    printer.finish(&summary)?;
    Ok((summary, input_errors))
}

// ---------------------------------------------------------------------------
// infera rules
// ---------------------------------------------------------------------------

fn severity_name(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

fn to_json_text<T: serde::Serialize + ?Sized>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".to_string());
    s.push('\n');
    s
}

/// All rules: a Markdown table (also the table of `docs/lint.md`, spliced in
/// by `infera generate`), or JSON.
pub fn rules_listing(rules: &[RuleMeta], json: bool) -> String {
    if json {
        return to_json_text(rules);
    }
    let mut table = comfy_table::Table::new();
    table
        .load_preset(comfy_table::presets::ASCII_MARKDOWN)
        .set_content_arrangement(comfy_table::ContentArrangement::Disabled)
        .force_no_tty()
        .set_header(vec!["code", "name", "default severity", "summary"]);
    for r in rules {
        // A `|` in a summary would end the Markdown cell.
        table.add_row(vec![
            r.code.to_string(),
            r.name.to_string(),
            severity_name(r.default_severity).to_string(),
            r.summary.replace('|', "\\|"),
        ]);
    }
    format!("{table}\n")
}

/// One rule's page from its doc comment, or its JSON.
pub fn rule_page(rule: &RuleMeta, json: bool) -> String {
    if json {
        return to_json_text(rule);
    }
    let mut page = format!(
        "# {} {}\n\nDefault severity: {}. {}\n\n",
        rule.code,
        rule.name,
        severity_name(rule.default_severity),
        rule.summary
    );
    page.push_str(rule.doc.trim_end());
    page.push('\n');
    page
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_support::{RULES, input_error, outcome_with, sample_findings};
    use std::collections::BTreeMap;

    fn effective(enabled: &[&'static str], severity: &[(&'static str, Severity)]) -> Effective {
        Effective {
            node_gpus: Some(8),
            nodes: None,
            enabled: enabled.to_vec(),
            severity: severity.iter().copied().collect::<BTreeMap<_, _>>(),
            operator: Default::default(),
        }
    }

    #[test]
    fn apply_filters_re_severities_and_recounts() {
        let out = apply(
            outcome_with(sample_findings()),
            &effective(&["IR005"], &[("IR005", Severity::Error)]),
        );
        assert_eq!(out.findings.len(), 1);
        assert_eq!(out.findings[0].code, "IR005");
        assert_eq!(out.findings[0].severity, Severity::Error);
        assert_eq!((out.summary.errors, out.summary.warnings), (1, 0));
        // Unrelated counts from the engine are kept.
        assert_eq!(out.summary.files, 3);
    }

    #[test]
    fn apply_orders_findings_by_position() {
        let mut findings = sample_findings();
        findings.reverse();
        let out = apply(outcome_with(findings), &effective(&["IR001", "IR005"], &[]));
        assert_eq!(out.findings[0].line, 12);
        assert_eq!(out.findings[1].line, 15);
    }

    #[test]
    fn input_errors_read_file_line_column() {
        assert_eq!(
            describe_input_error(&input_error()),
            "recipes/bad.yaml:3:7: mapping values are not allowed here: fix the YAML and run again"
        );
        let mut e = input_error();
        e.line = None;
        assert!(describe_input_error(&e).starts_with("recipes/bad.yaml: "));
    }

    /// The streamed report (file by file) is byte for byte the whole
    /// outcome's, sorted by [`apply`]: names where path order and text
    /// order differ (`b-c.yaml` before `b/`), a file given twice, a path
    /// that does not exist, a broken document beside a good one.
    #[test]
    fn streamed_report_equals_the_sorted_outcome() {
        let pd = include_str!("../../../tests/golden/input/pd-skip-probe.yaml");
        let plain = include_str!("../../../tests/golden/input/plain-deployments.yaml");
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("b")).unwrap();
        std::fs::write(d.join("b/x.yaml"), pd).unwrap();
        std::fs::write(d.join("b-c.yaml"), plain).unwrap();
        std::fs::write(d.join("a.yaml"), format!("a: [1\n---\n{pd}")).unwrap();
        let paths = vec![
            d.join("b-c.yaml"),
            d.to_path_buf(),
            d.join("missing.yaml"),
            d.join("a.yaml"),
        ];
        let rules = engine::rules();
        let effective = config::resolve(
            rules,
            &config::LoadedConfig::default(),
            &config::CliOverrides::default(),
        )
        .unwrap();
        for threads in [1, 3] {
            let opts = LintOptions {
                node_gpus: 8,
                enabled: effective.enabled.clone(),
                threads,
                keep_sources: true,
                ..LintOptions::default()
            };
            let whole = apply(engine::lint_paths(&paths, &opts), &effective);
            assert!(whole.input_errors.len() >= 2 && whole.findings.len() >= 4);
            for format in [Format::Human, Format::Json, Format::Sarif, Format::Github] {
                let mut expected = Vec::new();
                write_report(&mut expected, format, &whole, rules, None, false).unwrap();
                let mut streamed = Vec::new();
                let mut errors = Vec::new();
                let printer = report::Printer::new(&mut streamed, format, rules, None, false);
                let (summary, n) = lint_and_print(&paths, &opts, &effective, printer, &mut |e| {
                    errors.push(e.clone())
                })
                .unwrap();
                assert_eq!(
                    String::from_utf8(streamed).unwrap(),
                    String::from_utf8(expected).unwrap(),
                    "{format:?} on {threads} threads"
                );
                assert_eq!(n, whole.input_errors.len());
                assert_eq!(summary.errors, whole.summary.errors);
                let order = |v: &[InputError]| {
                    v.iter()
                        .map(|e| (e.file.clone(), e.line))
                        .collect::<Vec<_>>()
                };
                assert_eq!(order(&errors), order(&whole.input_errors));
            }
        }
    }

    #[test]
    fn rules_listing_is_a_markdown_table() {
        let text = rules_listing(RULES, false);
        assert!(text.contains("| IR001 | skip-probe-serving"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&rules_listing(RULES, true)).unwrap();
        assert_eq!(json[1]["code"], "IR005");
        assert_eq!(json[1]["default_severity"], "warning");
    }

    #[test]
    fn rule_page_prints_the_doc() {
        let page = rule_page(&RULES[0], false);
        assert!(page.starts_with("# IR001 skip-probe-serving\n"), "{page}");
        assert!(page.contains("## Why is this bad?"), "{page}");
        let json: serde_json::Value = serde_json::from_str(&rule_page(&RULES[0], true)).unwrap();
        assert_eq!(json["name"], "skip-probe-serving");
    }
}
