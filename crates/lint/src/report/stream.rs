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
use std::path::Path;

use super::Format;
use super::emit::{Emitter, End};
use super::github::GithubEmitter;
use super::human::HumanEmitter;
use super::json::JsonEmitter;
use super::sarif::SarifEmitter;
use super::spool::Counts;
use crate::engine::summary::{InputError, LintSummary};
use crate::engine::{RuleMeta, SourceLines};
use crate::finding::Finding;

/// A printer fed findings in report order (by file, then position), file by
/// file, then finished with the summary.
pub struct Printer<'a> {
    out: &'a mut dyn Write,
    emitter: Box<dyn Emitter + 'a>,
    counts: Counts,
    errors: Vec<InputError>,
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
        let emitter: Box<dyn Emitter + 'a> = match format {
            Format::Human => Box::new(HumanEmitter::new(color)),
            Format::Github => Box::new(GithubEmitter),
            Format::Json => Box::new(JsonEmitter::default()),
            Format::Sarif => Box::new(SarifEmitter::new(rules, base)),
        };
        Printer {
            out,
            emitter,
            counts: Counts::default(),
            errors: Vec::new(),
        }
    }

    /// Findings of one file (or more), in report order; `sources` holds the
    /// lines they point at (the human format's code frames).
    pub fn findings(
        &mut self,
        findings: &[Finding],
        sources: Option<&SourceLines>,
    ) -> io::Result<()> {
        for f in findings {
            self.counts.add(f);
            let line = sources.and_then(|l| l.get(&f.line)).map(String::as_str);
            self.emitter.finding(self.out, f, line)?;
        }
        Ok(())
    }

    /// Input errors, in report order (kept: printed at the end, or before
    /// the spooled findings).
    pub fn errors(&mut self, errors: &[InputError]) {
        self.errors.extend_from_slice(errors);
    }

    /// The summary (and, for JSON and SARIF, the whole document).
    pub fn finish(mut self, summary: &LintSummary) -> io::Result<()> {
        let end = End {
            errors: &self.errors,
            summary,
            counts: &self.counts,
        };
        self.emitter.finish(self.out, &end)
    }
}
