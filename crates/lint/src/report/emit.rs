//! One printer per format behind one trait, as ruff's `Emitter`: the
//! [`Printer`](super::Printer) counts findings and keeps the input errors;
//! an emitter only writes (or spools) what its format shows.

use std::io::{self, Write};

use super::spool::Counts;
use crate::engine::summary::{InputError, LintSummary};
use crate::finding::Finding;

/// What a report knows when it closes.
pub(crate) struct End<'a> {
    /// Input errors, in report order.
    pub errors: &'a [InputError],
    pub summary: &'a LintSummary,
    /// The findings seen, per severity and rule.
    pub counts: &'a Counts,
}

/// A format's printer, fed findings in report order and closed once.
pub(crate) trait Emitter {
    /// One finding; `line` is the text of the line it points at, when known.
    fn finding(&mut self, out: &mut dyn Write, f: &Finding, line: Option<&str>) -> io::Result<()>;

    /// The summary (and, for formats that spool, the whole document).
    fn finish(&mut self, out: &mut dyn Write, end: &End<'_>) -> io::Result<()>;
}
