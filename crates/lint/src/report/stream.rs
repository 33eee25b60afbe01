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

use std::collections::BTreeMap;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};

use super::Format;
use crate::engine::{InputError, LintSummary, RuleMeta, SourceLines};
use crate::finding::{Finding, Severity};

/// Rendered findings kept in memory before the spool moves to a file.
pub const SPOOL_MEMORY: usize = 1 << 20;

/// Pretty-printed JSON items, in order, joined by `,\n`: in memory first,
/// then in an anonymous temporary file (or in memory still when none can be
/// created).
#[derive(Default)]
pub struct Spool {
    memory: Vec<u8>,
    file: Option<std::fs::File>,
    file_failed: bool,
    items: usize,
}

impl Spool {
    fn push(&mut self, item: &[u8]) -> io::Result<()> {
        if self.items > 0 {
            self.memory.extend_from_slice(b",\n");
        }
        self.memory.extend_from_slice(item);
        self.items += 1;
        if self.memory.len() >= SPOOL_MEMORY && !self.file_failed {
            if self.file.is_none() {
                match tempfile::tempfile() {
                    Ok(f) => self.file = Some(f),
                    Err(_) => self.file_failed = true,
                }
            }
            if let Some(f) = &mut self.file {
                f.write_all(&self.memory)?;
                self.memory.clear();
            }
        }
        Ok(())
    }

    fn is_empty(&self) -> bool {
        self.items == 0
    }

    fn copy_to(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if let Some(f) = &mut self.file {
            f.flush()?;
            f.rewind()?;
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = f.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                out.write_all(&buf[..n])?;
            }
        }
        out.write_all(&self.memory)
    }
}

/// Two spaces per level, as serde_json's pretty printer indents.
pub(crate) fn indent(out: &mut Vec<u8>, depth: usize) {
    out.extend(std::iter::repeat_n(b' ', 2 * depth));
}

/// `value` pretty-printed as serde_json prints it `depth` levels deep (the
/// first line unindented: it follows a key or an array's indentation).
/// Raw line breaks only ever separate tokens (strings escape theirs).
pub(crate) fn pretty_at<T: serde::Serialize + ?Sized>(
    value: &T,
    depth: usize,
) -> io::Result<Vec<u8>> {
    let text = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
    if depth == 0 {
        return Ok(text);
    }
    let mut out = Vec::with_capacity(text.len() + text.len() / 4);
    for &b in &text {
        out.push(b);
        if b == b'\n' {
            indent(&mut out, depth);
        }
    }
    Ok(out)
}

/// An array item at `depth`: its indentation, then the item.
fn spool_item<T: serde::Serialize + ?Sized>(
    spool: &mut Spool,
    value: &T,
    depth: usize,
) -> io::Result<()> {
    let mut item = Vec::new();
    indent(&mut item, depth);
    item.extend(pretty_at(value, depth)?);
    spool.push(&item)
}

/// The spooled items as an array at `depth` (`[]` when empty).
pub(crate) fn write_spooled_array(
    out: &mut dyn Write,
    spool: &mut Spool,
    depth: usize,
) -> io::Result<()> {
    if spool.is_empty() {
        return out.write_all(b"[]");
    }
    out.write_all(b"[\n")?;
    spool.copy_to(out)?;
    let mut end = vec![b'\n'];
    indent(&mut end, depth);
    end.push(b']');
    out.write_all(&end)
}

/// One entry of a map written by [`write_map`].
pub(crate) enum Entry<'a> {
    /// A value pretty-printed in place.
    Value(&'a serde_json::Value),
    /// Text written by a function (given the depth of the value).
    Writer(&'a mut dyn FnMut(&mut dyn Write, usize) -> io::Result<()>),
}

/// A JSON object at `depth`, its entries in the given order, exactly as
/// serde_json's pretty printer writes one.
pub(crate) fn write_map(
    out: &mut dyn Write,
    depth: usize,
    entries: Vec<(&str, Entry<'_>)>,
) -> io::Result<()> {
    if entries.is_empty() {
        return out.write_all(b"{}");
    }
    out.write_all(b"{")?;
    for (i, (key, entry)) in entries.into_iter().enumerate() {
        let mut head = Vec::new();
        head.extend_from_slice(if i == 0 { b"\n" } else { b",\n" });
        indent(&mut head, depth + 1);
        head.extend(serde_json::to_vec(key).map_err(io::Error::other)?);
        head.extend_from_slice(b": ");
        out.write_all(&head)?;
        match entry {
            Entry::Value(v) => out.write_all(&pretty_at(v, depth + 1)?)?,
            Entry::Writer(f) => f(out, depth + 1)?,
        }
    }
    let mut end = vec![b'\n'];
    indent(&mut end, depth);
    end.push(b'}');
    out.write_all(&end)
}

/// Per-rule counts: code → (name, highest severity, findings).
pub type RuleCounts = BTreeMap<&'static str, (&'static str, Severity, usize)>;

/// What every printer counts while findings stream through it.
#[derive(Default)]
pub struct Counts {
    pub rules: RuleCounts,
    /// Files with at least one finding.
    pub files_with_findings: usize,
    last_file: Option<String>,
}

impl Counts {
    fn add(&mut self, f: &Finding) {
        let entry = self.rules.entry(f.code).or_insert((f.name, f.severity, 0));
        entry.1 = entry.1.max(f.severity);
        entry.2 += 1;
        if self.last_file.as_deref() != Some(f.file.as_str()) {
            self.files_with_findings += 1;
            self.last_file = Some(f.file.clone());
        }
    }

    /// (code, name, severity, count), in code order.
    pub fn rule_list(&self) -> Vec<(&'static str, &'static str, Severity, usize)> {
        self.rules
            .iter()
            .map(|(code, (name, severity, n))| (*code, *name, *severity, *n))
            .collect()
    }
}

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
