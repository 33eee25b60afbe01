//! The JSON building blocks the streaming printers share: a [`Spool`]
//! (memory up to [`SPOOL_MEMORY`], then an anonymous temporary file),
//! serde_json's pretty layout written piece by piece, and the per-rule
//! [`Counts`] the summaries print.

use std::collections::BTreeMap;
use std::io::{self, Read, Seek, Write};

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
pub(crate) fn spool_item<T: serde::Serialize + ?Sized>(
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
    pub(crate) fn add(&mut self, f: &Finding) {
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
