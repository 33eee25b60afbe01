//! Human output: a code frame of the offending line for every finding
//! (annotate-snippets), then a summary table (comfy-table).
//!
//! Colour is decided by the caller (a TTY without `NO_COLOR`); with
//! `color == false` the output has no escape codes at all.

use std::io::{self, Write};

use annotate_snippets::renderer::DecorStyle;
use annotate_snippets::{AnnotationKind, Group, Level, Origin, Renderer, Snippet};
use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Attribute, Cell, CellAlignment, Color, ContentArrangement, Table};

use super::emit::{Emitter, End};
use super::spool::Counts;
use super::{Format, describe_object, plural};
use crate::engine::LintOutcome;
use crate::engine::summary::LintSummary;
use crate::finding::{Finding, Severity};

/// Write every finding as a code frame, then the summary tables.
pub fn write(out: &mut dyn Write, outcome: &LintOutcome, color: bool) -> io::Result<()> {
    super::write_outcome(out, Format::Human, outcome, &[], None, color)
}

/// Code frames as the findings arrive, the tables at the end.
pub(crate) struct HumanEmitter {
    renderer: Renderer,
    color: bool,
}

impl HumanEmitter {
    pub(crate) fn new(color: bool) -> Self {
        HumanEmitter {
            renderer: renderer(color),
            color,
        }
    }
}

impl Emitter for HumanEmitter {
    fn finding(&mut self, out: &mut dyn Write, f: &Finding, line: Option<&str>) -> io::Result<()> {
        write_finding(out, &self.renderer, f, line)
    }

    fn finish(&mut self, out: &mut dyn Write, end: &End<'_>) -> io::Result<()> {
        write_summary(out, end.summary, end.counts, end.errors.len(), self.color)
    }
}

/// The code-frame renderer, with or without colour.
fn renderer(color: bool) -> Renderer {
    if color {
        Renderer::styled()
    } else {
        Renderer::plain()
    }
    .decor_style(DecorStyle::Ascii)
}

/// One finding's code frame (`source`: the text of its line, when known)
/// and a blank line.
fn write_finding(
    out: &mut dyn Write,
    renderer: &Renderer,
    finding: &Finding,
    source: Option<&str>,
) -> io::Result<()> {
    let rendered = render_finding(renderer, finding, source);
    writeln!(out, "{rendered}")?;
    writeln!(out)
}

/// Byte range in `line_text` from the 1-based character `column` to the end
/// of the line's content (trailing whitespace and comments are kept out only
/// when trivially separable: the range ends at the last non-blank byte).
fn highlight_range(line_text: &str, column: usize) -> Option<std::ops::Range<usize>> {
    let start = line_text
        .char_indices()
        .nth(column.checked_sub(1)?)
        .map(|(i, _)| i)?;
    let end = line_text.trim_end().len();
    (end > start).then_some(start..end)
}

/// `line_text`: the text of the finding's line, when known.
fn render_finding(renderer: &Renderer, finding: &Finding, line_text: Option<&str>) -> String {
    let level = match finding.severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
    };
    let label = format!("{}: {}", finding.name, describe_object(&finding.object));
    let title = level
        .clone()
        .primary_title(finding.message.as_str())
        .id(finding.code);

    let frame = line_text.and_then(|line_text| {
        highlight_range(line_text, finding.column).map(|range| (line_text, range))
    });
    let fix = finding.fix.as_ref().map(|f| {
        format!(
            "fix: {} (`--format json` or `sarif` carry it as data)",
            f.description
        )
    });
    let group = match frame {
        Some((line_text, range)) => {
            let group = Group::with_title(title).element(
                Snippet::source(line_text)
                    .line_start(finding.line)
                    .path(finding.file.as_str())
                    .annotation(AnnotationKind::Primary.span(range).label(label)),
            );
            match fix {
                Some(fix) => group.element(Level::HELP.message(fix)),
                None => group,
            }
        }
        None => {
            // No source text (live objects, or a span outside the file):
            // point at file[:line[:column]] and name the object.
            let mut origin = Origin::path(finding.file.as_str());
            if finding.line > 0 {
                origin = origin.line(finding.line);
                if finding.column > 0 {
                    origin = origin.char_column(finding.column);
                }
            }
            let group = Group::with_title(title)
                .element(origin)
                .element(Level::NOTE.message(label));
            match fix {
                Some(fix) => group.element(Level::HELP.message(fix)),
                None => group,
            }
        }
    };
    renderer.render(&[group])
}

fn new_table(color: bool) -> Table {
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled);
    if color {
        table.enforce_styling();
    } else {
        table.force_no_tty();
    }
    table
}

fn severity_cell(severity: Severity) -> Cell {
    match severity {
        Severity::Error => Cell::new("error").fg(Color::Red),
        Severity::Warning => Cell::new("warning").fg(Color::Yellow),
    }
}

fn header(names: &[&str]) -> Vec<Cell> {
    names
        .iter()
        .map(|n| Cell::new(n).add_attribute(Attribute::Bold))
        .collect()
}

fn count_cell(n: usize) -> Cell {
    Cell::new(n).set_alignment(CellAlignment::Right)
}

/// Per-rule counts (when there are findings), the totals, and one sentence.
fn write_summary(
    out: &mut dyn Write,
    s: &LintSummary,
    seen: &Counts,
    input_errors: usize,
    color: bool,
) -> io::Result<()> {
    let counts = seen.rule_list();
    if !counts.is_empty() {
        let mut table = new_table(color);
        table.set_header(header(&["rule", "name", "severity", "findings"]));
        for (code, name, severity, n) in &counts {
            table.add_row(vec![
                Cell::new(code),
                Cell::new(name),
                severity_cell(*severity),
                count_cell(*n),
            ]);
        }
        writeln!(out, "{table}")?;
    }

    let mut totals = new_table(color);
    totals.set_header(header(&[
        "files",
        "documents",
        "objects",
        "skipped",
        "errors",
        "warnings",
        "input errors",
    ]));
    let mut errors = count_cell(s.errors);
    if color && s.errors > 0 {
        errors = errors.fg(Color::Red);
    }
    let mut warnings = count_cell(s.warnings);
    if color && s.warnings > 0 {
        warnings = warnings.fg(Color::Yellow);
    }
    let mut input_cell = count_cell(input_errors);
    if color && input_errors > 0 {
        input_cell = input_cell.fg(Color::Red);
    }
    totals.add_row(vec![
        count_cell(s.files),
        count_cell(s.documents),
        count_cell(s.objects),
        count_cell(s.skipped),
        errors,
        warnings,
        input_cell,
    ]);
    writeln!(out, "{totals}")?;
    for k in &s.skipped_kinds {
        writeln!(out, "{}", super::skipped_line(k))?;
    }
    for i in &s.skipped_inputs {
        writeln!(out, "{}", super::skipped_input_line(i))?;
    }
    for u in &s.unjudged {
        writeln!(out, "{}", super::unjudged_line(u))?;
    }

    let sentence = if counts.is_empty() {
        format!(
            "No findings in {} ({}).",
            plural(s.files, "file"),
            plural(s.objects, "object")
        )
    } else {
        format!(
            "{} and {} in {} of {}.",
            plural(s.errors, "error"),
            plural(s.warnings, "warning"),
            plural(seen.files_with_findings, "file"),
            plural(s.files, "file"),
        )
    };
    writeln!(out, "{sentence}")?;
    if s.objects == 0 && input_errors == 0 {
        writeln!(
            out,
            "note: nothing was linted: no Kubernetes object was read from {} (empty, or only comments)",
            plural(s.files, "input")
        )?;
    }
    if input_errors > 0 {
        writeln!(
            out,
            "{} could not be read or parsed (listed on standard error); fix them and run again.",
            plural(input_errors, "input")
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_support::{outcome_with, sample_findings};

    fn render(outcome: &LintOutcome, color: bool) -> String {
        let mut buf = Vec::new();
        write(&mut buf, outcome, color).unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn frame_shows_the_offending_line_with_location_code_and_name() {
        let text = render(&outcome_with(sample_findings()), false);
        assert!(
            text.contains("error[IR001]: decode will have no serving pod"),
            "{text}"
        );
        assert!(text.contains("--> recipes/pd.yaml:12:9"), "{text}");
        assert!(
            text.contains("12 |         skipReadinessProbe: true"),
            "{text}"
        );
        assert!(
            text.contains("^^^^^^^^^^^^^^^^^^^^^^^^ skip-probe-serving: InferaDeployment prod/pd, service decode"),
            "{text}"
        );
        assert!(text.contains("warning[IR005]"), "{text}");
        assert!(
            !text.contains('\u{1b}'),
            "no escape codes without colour: {text:?}"
        );
    }

    #[test]
    fn finding_without_source_points_at_the_origin() {
        let mut findings = sample_findings();
        findings.truncate(1);
        findings[0].file = "cluster".into();
        findings[0].line = 0;
        findings[0].column = 0;
        let text = render(&outcome_with(findings), false);
        assert!(text.contains("--> cluster"), "{text}");
        assert!(
            text.contains("note: skip-probe-serving: InferaDeployment prod/pd"),
            "{text}"
        );
    }

    #[test]
    fn summary_table_counts_per_rule_and_totals() {
        let text = render(&outcome_with(sample_findings()), false);
        assert!(text.contains("IR001"), "{text}");
        assert!(text.contains("skip-probe-serving"), "{text}");
        assert!(text.contains("input errors"), "{text}");
        assert!(
            text.contains("1 error and 1 warning in 1 file of 3 files."),
            "{text}"
        );
    }

    #[test]
    fn colour_only_when_asked() {
        let text = render(&outcome_with(sample_findings()), true);
        assert!(text.contains('\u{1b}'), "{text:?}");
    }

    #[test]
    fn no_findings_says_so() {
        let text = render(&outcome_with(Vec::new()), false);
        assert!(
            text.contains("No findings in 3 files (4 objects)."),
            "{text}"
        );
        assert!(!text.contains("severity"), "{text}");
    }

    /// An empty file lints clean, and says nothing was read.
    #[test]
    fn nothing_read_is_said() {
        let mut outcome = outcome_with(Vec::new());
        (outcome.summary.files, outcome.summary.documents) = (1, 0);
        (outcome.summary.objects, outcome.summary.skipped) = (0, 0);
        let text = render(&outcome, false);
        assert!(
            text.contains("No findings in 1 file (0 objects)."),
            "{text}"
        );
        assert!(
            text.contains("note: nothing was linted: no Kubernetes object was read from 1 input"),
            "{text}"
        );
        let some = render(&outcome_with(Vec::new()), false);
        assert!(!some.contains("nothing was linted"), "{some}");
    }

    #[test]
    fn column_past_end_of_line_falls_back_to_origin() {
        let mut findings = sample_findings();
        findings.truncate(1);
        findings[0].column = 500;
        let text = render(&outcome_with(findings), false);
        assert!(text.contains("--> recipes/pd.yaml:12:500"), "{text}");
    }
}
