//! The lint engine: paths → documents → typed views → rules → findings.
//!
//! The entry points: [`lint_paths`] (files, directories, `-`; everything
//! collected), [`lint_paths_each`] (the same, streamed file by file in report
//! order), [`live::lint_objects`]/[`live::lint_live`] (live objects from
//! `--cluster`), [`lint_source`] (one in-memory source: the fuzz target) and
//! [`load_paths`] (the loader without rules: the benchmark's baseline). Their
//! results are [`LintOutcome`]/[`FileOutcome`]; the printers in `report/`
//! read only those.
//!
//! One file a concern, the data flowing one way: `walk` (paths → units)
//! and `rendered` (charts and overlays) hand each source to `context` (its
//! peers) and `document` (its objects, their place, the rules); `live` lints
//! live objects through the same; `capacity` and `summary` are read by all;
//! `unread` decides what an object lint does not analyse becomes (silent,
//! only for kinds that run nothing, else named).

mod capacity;
mod context;
mod document;
pub mod live;
mod rendered;
pub mod summary;
pub mod unread;
mod walk;

pub use super::finding::RuleMeta;
use super::finding::{Finding, Severity};
use super::options::LintOptions;
use super::rules::Capacity;
pub use super::rules::InventoryNode;
pub use super::rules::{rule, rules};
use capacity::load_capacity;
use context::context;
use document::lint_document;
use infera_model::manifest;
use summary::{InputError, LintSummary, SkippedInput, SkippedKind, merge_skipped_kinds};
use walk::{Unit, collect_paths, lint_unit, units};

#[derive(Debug, Clone, Default)]
pub struct LintOutcome {
    pub findings: Vec<Finding>,
    pub input_errors: Vec<InputError>,
    pub summary: LintSummary,
    /// For code frames: the lines findings point at, per file (path as
    /// reported → line → text). Only with [`LintOptions::keep_sources`], and
    /// never whole files, so memory does not grow with the input.
    pub sources: std::collections::BTreeMap<String, SourceLines>,
}

/// Lines of one file: 1-based line number → its text, without the line break.
pub type SourceLines = std::collections::BTreeMap<usize, String>;

/// The lines of `bytes` that `findings` point at.
fn finding_lines(bytes: &[u8], findings: &[Finding]) -> SourceLines {
    let wanted: std::collections::BTreeSet<usize> =
        findings.iter().map(|f| f.line).filter(|&l| l > 0).collect();
    let mut wanted = wanted.into_iter().peekable();
    let mut lines = SourceLines::new();
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let Some(&next) = wanted.peek() else { break };
        if i + 1 == next {
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            lines.insert(next, String::from_utf8_lossy(raw).into_owned());
            wanted.next();
        }
    }
    lines
}

#[derive(Default)]
struct FileResult {
    findings: Vec<Finding>,
    errors: Vec<InputError>,
    documents: usize,
    objects: usize,
    skipped: usize,
    silent: usize,
    skipped_kinds: Vec<SkippedKind>,
    unjudged: Vec<summary::Unjudged>,
    source: Option<(String, SourceLines)>,
}

/// Lint files, directories (recursively) and `-` (stdin), in parallel, and
/// collect everything (see [`lint_paths_each`] for the streaming form).
pub fn lint_paths(paths: &[std::path::PathBuf], opts: &LintOptions) -> LintOutcome {
    let mut outcome = LintOutcome::default();
    let capacity = load_capacity(opts, None, &mut outcome.input_errors);
    let pre = std::mem::take(&mut outcome.input_errors);
    collect_paths(paths, opts, Stage::Lint(&capacity), pre)
}

/// Read, split, parse and convert every object to its typed view exactly as
/// [`lint_paths`] does (same threads, same loader), but run no rule: the
/// baseline the lint benchmark (`benches/lint.rs`) measures against. The
/// outcome has counts and input errors, never findings.
pub fn load_paths(paths: &[std::path::PathBuf], opts: &LintOptions) -> LintOutcome {
    collect_paths(paths, opts, Stage::Load, Vec::new())
}

/// Lint files, directories and `-` and hand each file's results to `each`
/// as soon as it and every file before it are done, in report order: by
/// the name findings give the file (files given twice under one name come
/// as one [`FileOutcome`]), input errors that belong to no file read (a
/// missing path, a bad `--nodes` file) in their place among them. Files are
/// linted on `opts.threads` threads, at most a few files ahead of the one
/// being handed over, so memory does not grow with the corpus.
///
/// An error from `each` (e.g. a closed pipe) stops the run and is returned.
pub fn lint_paths_each(
    paths: &[std::path::PathBuf],
    opts: &LintOptions,
    each: &mut dyn FnMut(FileOutcome) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut pre = Vec::new();
    let capacity = load_capacity(opts, None, &mut pre);
    let units = units(paths, pre);
    let work = |u: &Unit| lint_unit(u, opts, Stage::Lint(&capacity));
    let mut each_file = |all: Vec<FileOutcome>| all.into_iter().try_for_each(&mut *each);
    super::pool::drive(
        &units,
        super::pool::thread_count(opts.threads),
        &work,
        &mut each_file,
    )
}

/// The results of the files read under one name, in the order a report
/// lists them: findings and input errors as the engine produced them (not
/// yet filtered by the configuration, nor sorted by position).
#[derive(Debug, Default)]
pub struct FileOutcome {
    /// The file as findings name it (`-` for stdin).
    pub file: String,
    /// Files read under this name (0 when the name only carries an input
    /// error, such as a path that does not exist).
    pub files: usize,
    pub findings: Vec<Finding>,
    pub input_errors: Vec<InputError>,
    pub documents: usize,
    pub objects: usize,
    pub skipped: usize,
    /// Of `skipped`, objects of kinds that run nothing (said nowhere).
    pub silent: usize,
    /// Skipped kinds named, with their group and the reason.
    pub skipped_kinds: Vec<SkippedKind>,
    /// GPU workloads no engine was recognised on (rules not run on them).
    pub unjudged: Vec<summary::Unjudged>,
    /// Charts and overlays not rendered.
    pub skipped_inputs: Vec<SkippedInput>,
    /// The lines findings point at (with [`LintOptions::keep_sources`]).
    pub sources: SourceLines,
}

/// One file's result as its outcome (one file read).
fn outcome(file: String, r: FileResult, sources: SourceLines) -> FileOutcome {
    FileOutcome {
        file,
        files: 1,
        findings: r.findings,
        input_errors: r.errors,
        documents: r.documents,
        objects: r.objects,
        skipped: r.skipped,
        silent: r.silent,
        skipped_kinds: r.skipped_kinds,
        unjudged: r.unjudged,
        skipped_inputs: Vec::new(),
        sources,
    }
}

/// Lint one in-memory source (`file` names it in findings and errors) on a
/// thread with a parser-sized stack. The fuzz target (`fuzz/`) and the
/// stable no-panic test feed arbitrary bytes through this: it must never
/// panic, whatever the bytes.
pub fn lint_source(file: &str, bytes: &[u8], opts: &LintOptions) -> LintOutcome {
    let mut outcome = LintOutcome::default();
    let capacity = load_capacity(opts, None, &mut outcome.input_errors);
    let linted = manifest::with_parse_stack(|| {
        let mut r = FileResult::default();
        lint_bytes(file, bytes, opts, Stage::Lint(&capacity), &mut r);
        if opts.keep_sources && !r.findings.is_empty() {
            r.source = Some((file.to_string(), finding_lines(bytes, &r.findings)));
        }
        r
    });
    match linted {
        Ok(r) => {
            outcome.summary.files = 1;
            merge(&mut outcome, r);
        }
        Err(e) => outcome.input_errors.push(InputError {
            file: file.to_string(),
            line: None,
            column: None,
            message: format!("cannot start the parser thread: {e}"),
        }),
    }
    finish(&mut outcome);
    outcome
}

/// How far a file is taken.
#[derive(Clone, Copy)]
enum Stage<'a> {
    /// Parsed and converted to typed views only.
    Load,
    /// And every enabled rule run over each object.
    Lint(&'a Capacity),
}

fn merge(outcome: &mut LintOutcome, r: FileResult) {
    outcome.summary.documents += r.documents;
    outcome.summary.objects += r.objects;
    outcome.summary.skipped += r.skipped;
    outcome.summary.silent += r.silent;
    merge_skipped_kinds(&mut outcome.summary.skipped_kinds, &r.skipped_kinds);
    outcome.summary.unjudged.extend(r.unjudged);
    outcome.findings.extend(r.findings);
    outcome.input_errors.extend(r.errors);
    if let Some((k, v)) = r.source {
        outcome.sources.insert(k, v);
    }
}

fn finish(outcome: &mut LintOutcome) {
    outcome.summary.errors = outcome
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    outcome.summary.warnings = outcome.findings.len() - outcome.summary.errors;
}

fn lint_bytes(file: &str, bytes: &[u8], opts: &LintOptions, stage: Stage<'_>, r: &mut FileResult) {
    let (claims, peers) = context(file, bytes, opts, stage, &|_| None);
    for raw in manifest::split_documents(bytes) {
        lint_document(file, &raw, opts, stage, (&claims, &peers, None), r);
    }
}
