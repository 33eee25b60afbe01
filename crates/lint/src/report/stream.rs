//! Printing as the findings arrive, file by file, with memory that does not
//! grow with the corpus: every printer keeps only counters (and the input
//! errors, which it must print in one place).
//!
//! The human and GitHub printers write each finding at once. JSON and SARIF
//! print the input errors *before* the findings (their keys are sorted:
//! `errors` < `findings`, `invocations` < `results`), and the errors are only
//! known at the end, so their findings are rendered into a [`Spool`] (memory
//! up to [`SPOOL_MEMORY`], then an anonymous temporary file) and copied out
//! after the errors. The bytes are those the whole-outcome printers wrote.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::Format;
use crate::engine::summary::{InputError, LintSummary};
use crate::engine::{RuleMeta, SourceLines};
use crate::finding::Finding;

use super::spool::{Counts, Spool, spool_item};

/// Where the printer is and what it has kept.
struct State<'a> {
    format: Format,
    rules: &'a [RuleMeta],
    base: Option<PathBuf>,
    color: bool,
    counts: Counts,
    errors: Vec<InputError>,
    spool: Spool,
    /// SARIF: codes in `tool.driver.rules` (the registry, then any other
    /// code a result used).
    codes: Vec<(&'static str, &'static str)>,
    renderer: annotate_snippets::Renderer,
}

/// A printer fed findings in report order (by file, then position), file by
/// file, then finished with the summary.
pub struct Printer<'a> {
    out: &'a mut dyn Write,
    state: State<'a>,
}

impl<'a> Printer<'a> {
    /// `rules` is the registry (SARIF lists it); `base` the directory SARIF
    /// makes absolute paths relative to; `color` for the human format.
    pub fn new(
        out: &'a mut dyn Write,
        format: Format,
        rules: &'a [RuleMeta],
        base: Option<&Path>,
        color: bool,
    ) -> Self {
        Printer {
            out,
            state: State {
                format,
                rules,
                base: base.map(Path::to_path_buf),
                color,
                counts: Counts::default(),
                errors: Vec::new(),
                spool: Spool::default(),
                codes: Vec::new(),
                renderer: super::human::renderer(color),
            },
        }
    }

    /// Findings of one file (or more), in report order; `sources` holds the
    /// lines they point at (the human format's code frames).
    pub fn findings(
        &mut self,
        findings: &[Finding],
        sources: Option<&SourceLines>,
    ) -> io::Result<()> {
        let s = &mut self.state;
        for f in findings {
            s.counts.add(f);
            match s.format {
                Format::Human => {
                    let line = sources.and_then(|l| l.get(&f.line)).map(String::as_str);
                    super::human::write_finding(self.out, &s.renderer, f, line)?;
                }
                Format::Github => writeln!(self.out, "{}", super::github::finding_line(f))?,
                Format::Json => spool_item(&mut s.spool, &super::json::sorted(f)?, 2)?,
                Format::Sarif => {
                    let index = sarif_index(s.rules, &mut s.codes, f);
                    let result = super::sarif::result(f, index, s.base.as_deref());
                    spool_item(&mut s.spool, &result, 4)?;
                }
            }
        }
        Ok(())
    }

    /// Input errors, in report order (kept: printed at the end, or before
    /// the spooled findings).
    pub fn errors(&mut self, errors: &[InputError]) {
        self.state.errors.extend_from_slice(errors);
    }

    /// The summary (and, for JSON and SARIF, the whole document).
    pub fn finish(self, summary: &LintSummary) -> io::Result<()> {
        let Printer { out, mut state } = self;
        let s = &mut state;
        match s.format {
            Format::Human => {
                super::human::write_summary(out, summary, &s.counts, s.errors.len(), s.color)
            }
            Format::Github => {
                for e in &s.errors {
                    writeln!(out, "{}", super::github::input_error_line(e))?;
                }
                for k in &summary.skipped_kinds {
                    writeln!(
                        out,
                        "::notice title=infera lint::{}",
                        super::skipped_line(k)
                    )?;
                }
                for i in &summary.skipped_inputs {
                    writeln!(
                        out,
                        "::notice title=infera lint::{}",
                        super::skipped_input_line(i)
                    )?;
                }
                Ok(())
            }
            Format::Json => {
                super::json::write_document(out, &s.errors, &mut s.spool, summary, &s.counts)
            }
            Format::Sarif => super::sarif::write_document(
                out,
                s.rules,
                &s.codes,
                &s.errors,
                summary,
                &mut s.spool,
                s.base.as_deref(),
            ),
        }
    }
}

/// The `ruleIndex` of a finding's code: its place in the registry, or after
/// it (codes outside the registry get descriptors of their own, in the order
/// results first use them).
fn sarif_index(
    rules: &[RuleMeta],
    extra: &mut Vec<(&'static str, &'static str)>,
    f: &Finding,
) -> usize {
    if let Some(i) = rules.iter().position(|r| r.code == f.code) {
        return i;
    }
    match extra.iter().position(|(c, _)| *c == f.code) {
        Some(i) => rules.len() + i,
        None => {
            extra.push((f.code, f.name));
            rules.len() + extra.len() - 1
        }
    }
}
