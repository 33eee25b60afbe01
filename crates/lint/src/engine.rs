//! The lint engine: paths → documents → typed views → rules → findings.
//!
//! The entry points: [`lint_paths`] (files, directories, `-`; everything
//! collected), [`lint_paths_each`] (the same, streamed file by file in report
//! order), [`lint_objects`]/[`lint_live`] (live objects from `--cluster`),
//! [`lint_source`] (one in-memory source: the fuzz target) and [`load_paths`]
//! (the loader without rules: the benchmark's baseline). Their results are
//! [`LintOutcome`]/[`FileOutcome`]; the printers in `report/` read only those.

use std::path::Path as FsPath;
use std::path::PathBuf;

use serde::Serialize;

use super::finding::ObjectRef;
pub use super::finding::RuleMeta;
use super::finding::{Finding, Severity};
pub use super::rules::InventoryNode;
use super::rules::{Capacity, Hit, REGISTRY, RollKind, Workload, deployment_roll};
pub use super::rules::{rule, rules};
use infera_model::api::{INFERA_DEPLOYMENT, LEADER_WORKER_SET};
use infera_model::manifest::{self, ConvertOutcome, Node, Seg, TypedObject};
use infera_model::operator::{self, Role, Strategy};
use infera_model::worker;

/// What the rules need to know that is not in the manifests.
#[derive(Debug, Clone, Default)]
pub struct LintOptions {
    /// GPUs per node assumed when no inventory is given (default 8).
    pub node_gpus: u32,
    /// Node inventory (`--nodes FILE`), if given.
    pub nodes: Option<PathBuf>,
    /// Rule codes to run (after config/--select/--ignore); empty = all.
    pub enabled: Vec<&'static str>,
    /// Files linted at once (`--threads`); 0 = rayon's default
    /// (`RAYON_NUM_THREADS`, else one per CPU).
    pub threads: usize,
    /// Keep the lines findings point at in [`LintOutcome::sources`] (the
    /// human printer's code frames need them; the other printers do not).
    pub keep_sources: bool,
    /// The operator generation InferaDeployments are rendered as (the
    /// `--operator` flag / `operator` config key; latest by default).
    pub operator: operator::Generation,
    /// Live: the generation each InferaDeployment's operator showed
    /// ((namespace, name) → detection). A known one wins over `operator`.
    pub detected: std::collections::BTreeMap<(String, String), operator::Detection>,
}

impl LintOptions {
    /// The generation an InferaDeployment is rendered as: the one its live
    /// workers show, else the configured one.
    pub fn generation_for(&self, idep: &operator::InferaDeployment) -> operator::Generation {
        let key = (
            idep.metadata.namespace.clone().unwrap_or_default(),
            idep.metadata.name.clone().unwrap_or_default(),
        );
        self.detected
            .get(&key)
            .and_then(operator::Detection::generation)
            .unwrap_or(self.operator)
    }
}

/// A file or document that could not be read or parsed. Never hides the
/// findings of other documents.
#[derive(Debug, Clone, Serialize)]
pub struct InputError {
    pub file: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// What is wrong and what to do.
    pub message: String,
}

impl From<infera_model::manifest::ManifestError> for InputError {
    fn from(e: infera_model::manifest::ManifestError) -> Self {
        InputError {
            file: e.file,
            line: e.line,
            column: e.column,
            message: e.message,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct LintSummary {
    pub files: usize,
    pub documents: usize,
    /// Objects of the analysed kinds (InferaDeployment, Deployment, LeaderWorkerSet).
    pub objects: usize,
    /// Documents of other kinds, skipped.
    pub skipped: usize,
    pub errors: usize,
    pub warnings: usize,
}

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

/// Object annotation listing rule codes/names to ignore (`IR001/prefill` per service).
pub const LINT_IGNORE_ANNOTATION: &str = "infera.amd.com/lint-ignore";

#[derive(Default)]
struct FileResult {
    findings: Vec<Finding>,
    errors: Vec<InputError>,
    documents: usize,
    objects: usize,
    skipped: usize,
    source: Option<(String, SourceLines)>,
}

fn load_capacity(
    opts: &LintOptions,
    live: Option<Vec<InventoryNode>>,
    errors: &mut Vec<InputError>,
) -> Capacity {
    let node_gpus = if opts.node_gpus == 0 {
        8
    } else {
        opts.node_gpus
    };
    let mut cap = Capacity {
        node_gpus,
        inventory: None,
    };
    if live.is_some() {
        cap.inventory = live;
        return cap;
    }
    let Some(path) = &opts.nodes else { return cap };
    match manifest::load_path_values(path) {
        Ok(items) => {
            let mut nodes = Vec::new();
            for item in items {
                match item {
                    Ok((_, v)) => collect_nodes(&v, &mut nodes),
                    Err(e) => errors.push(InputError::from(e)),
                }
            }
            cap.inventory = Some(nodes);
        }
        Err(e) => errors.push(InputError {
            file: manifest::display_path(path),
            line: None,
            column: None,
            message: format!("cannot read the node inventory: {e:#}; pass the output of `kubectl get nodes -o yaml`"),
        }),
    }
    cap
}

fn collect_nodes(v: &serde_json::Value, out: &mut Vec<InventoryNode>) {
    if let Some(items) = v.get("items").and_then(|i| i.as_array()) {
        for item in items {
            collect_nodes(item, out);
        }
        return;
    }
    if v.get("kind").and_then(|k| k.as_str()) != Some("Node") {
        return;
    }
    let str_map = |v: Option<&serde_json::Value>| -> std::collections::BTreeMap<String, String> {
        v.and_then(|m| m.as_object())
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    };
    let labels = str_map(v.pointer("/metadata/labels"));
    let gpus = str_map(v.pointer("/status/allocatable"))
        .into_iter()
        .filter_map(|(k, q)| Some((k, worker::whole_quantity(&q)?)))
        .collect();
    let name = v
        .pointer("/metadata/name")
        .and_then(|n| n.as_str())
        .unwrap_or_default()
        .to_string();
    out.push(InventoryNode {
        name,
        labels,
        gpus,
        free: None,
    });
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
    drive(&units, thread_count(opts.threads), &work, each)
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
    /// The lines findings point at (with [`LintOptions::keep_sources`]).
    pub sources: SourceLines,
}

/// Files (and input errors) that share a name in reports.
struct Unit {
    name: String,
    files: Vec<std::path::PathBuf>,
    errors: Vec<InputError>,
}

/// Expand the paths and group them, with the input errors known before any
/// file is read, by the name reports give them, in name order.
fn units(paths: &[std::path::PathBuf], mut pre: Vec<InputError>) -> Vec<Unit> {
    let (files, errors) = manifest::expand_paths(paths);
    pre.extend(errors.into_iter().map(InputError::from));
    let mut by_name: std::collections::BTreeMap<String, Unit> = Default::default();
    let unit = |name: &str| Unit {
        name: name.to_string(),
        files: Vec::new(),
        errors: Vec::new(),
    };
    for f in files {
        let name = manifest::display_path(&f);
        by_name
            .entry(name.clone())
            .or_insert_with(|| unit(&name))
            .files
            .push(f);
    }
    for e in pre {
        by_name
            .entry(e.file.clone())
            .or_insert_with(|| unit(&e.file))
            .errors
            .push(e);
    }
    by_name.into_values().collect()
}

fn lint_unit(u: &Unit, opts: &LintOptions, stage: Stage<'_>) -> FileOutcome {
    let mut out = FileOutcome {
        file: u.name.clone(),
        files: u.files.len(),
        input_errors: u.errors.clone(),
        ..FileOutcome::default()
    };
    for path in &u.files {
        let r = lint_file(path, opts, stage);
        out.documents += r.documents;
        out.objects += r.objects;
        out.skipped += r.skipped;
        out.findings.extend(r.findings);
        out.input_errors.extend(r.errors);
        if let Some((_, lines)) = r.source {
            out.sources.extend(lines);
        }
    }
    out
}

/// `--threads 0`: rayon's default (`RAYON_NUM_THREADS`, else one per CPU).
fn thread_count(threads: usize) -> usize {
    if threads > 0 {
        return threads;
    }
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn collect_paths(
    paths: &[std::path::PathBuf],
    opts: &LintOptions,
    stage: Stage<'_>,
    pre: Vec<InputError>,
) -> LintOutcome {
    let mut outcome = LintOutcome::default();
    let units = units(paths, pre);
    let work = |u: &Unit| lint_unit(u, opts, stage);
    let mut each = |f: FileOutcome| {
        outcome.summary.files += f.files;
        outcome.summary.documents += f.documents;
        outcome.summary.objects += f.objects;
        outcome.summary.skipped += f.skipped;
        if !f.findings.is_empty() && opts.keep_sources {
            outcome.sources.insert(f.file.clone(), f.sources);
        }
        outcome.findings.extend(f.findings);
        outcome.input_errors.extend(f.input_errors);
        Ok(())
    };
    if let Err(e) = drive(&units, thread_count(opts.threads), &work, &mut each) {
        outcome.input_errors.push(InputError {
            file: "-".into(),
            line: None,
            column: None,
            message: format!("cannot start the parser thread: {e}"),
        });
    }
    finish(&mut outcome);
    outcome
}

/// Run `work` over `units` on `threads` threads (each with a parser-sized
/// stack) and hand the results to `each`, on the calling thread, in order.
/// Workers stay at most a few units ahead of the one handed over (a reorder
/// window), so only that many results are ever held.
fn drive<T: Send>(
    units: &[Unit],
    threads: usize,
    work: &(dyn Fn(&Unit) -> T + Sync),
    each: &mut dyn FnMut(T) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let threads = threads.max(1);
    let window = 4 * threads;
    let gate = Gate::default();
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel::<(usize, T)>();
        let mut started = 0;
        let mut spawn_error = None;
        for _ in 0..threads {
            let tx = tx.clone();
            let gate = &gate;
            let spawned = std::thread::Builder::new()
                .stack_size(manifest::PARSE_STACK_BYTES)
                .spawn_scoped(s, move || {
                    // A worker that panics stops the others (its unit would
                    // never be handed over); the scope re-raises the panic.
                    let _stop_on_panic = StopOnPanic(gate);
                    while let Some(i) = gate.take(units.len(), window) {
                        if tx.send((i, work(&units[i]))).is_err() {
                            break;
                        }
                    }
                });
            match spawned {
                Ok(_) => started += 1,
                Err(e) => spawn_error = Some(e),
            }
        }
        drop(tx);
        if started == 0 {
            return Err(spawn_error.unwrap_or_else(|| std::io::Error::other("no thread")));
        }
        let mut pending = std::collections::BTreeMap::new();
        let mut result = Ok(());
        let mut next = 0;
        for (i, r) in rx {
            pending.insert(i, r);
            while let Some(r) = pending.remove(&next) {
                if result.is_ok() {
                    result = each(r);
                }
                next += 1;
                gate.handed_over(next, result.is_err());
            }
        }
        result
    })
}

/// The reorder window of [`drive`]: which unit is next to take, and how far
/// the hand-over has got.
#[derive(Default)]
struct Gate {
    state: std::sync::Mutex<GateState>,
    moved: std::sync::Condvar,
}

#[derive(Default)]
struct GateState {
    next: usize,
    handed_over: usize,
    stop: bool,
}

impl Gate {
    /// The next unit to work on, waiting while it is `window` units or
    /// more ahead of the hand-over; None when all are taken or on stop.
    fn take(&self, len: usize, window: usize) -> Option<usize> {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while !g.stop && g.next < len && g.next >= g.handed_over + window {
            g = self.moved.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        if g.stop || g.next >= len {
            return None;
        }
        g.next += 1;
        Some(g.next - 1)
    }

    fn handed_over(&self, count: usize, stop: bool) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        g.handed_over = count;
        g.stop |= stop;
        self.moved.notify_all();
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
    outcome.findings.extend(r.findings);
    outcome.input_errors.extend(r.errors);
    if let Some((k, v)) = r.source {
        outcome.sources.insert(k, v);
    }
}

/// Stops the [`Gate`] when dropped by a panicking thread.
struct StopOnPanic<'a>(&'a Gate);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut g = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
            g.stop = true;
            self.0.moved.notify_all();
        }
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

fn lint_file(path: &FsPath, opts: &LintOptions, stage: Stage<'_>) -> FileResult {
    let mut r = FileResult::default();
    let file = manifest::display_path(path);
    let bytes = match manifest::read_source(path) {
        Ok(b) => b,
        Err(e) => {
            r.errors.push(InputError::from(e));
            return r;
        }
    };
    lint_bytes(&file, &bytes, opts, stage, &mut r);
    if opts.keep_sources && !r.findings.is_empty() {
        r.source = Some((file, finding_lines(&bytes, &r.findings)));
    }
    r
}

fn lint_bytes(file: &str, bytes: &[u8], opts: &LintOptions, stage: Stage<'_>, r: &mut FileResult) {
    for raw in manifest::split_documents(bytes) {
        r.documents += 1;
        let doc = match manifest::parse_document(file, &raw) {
            Ok(Some(doc)) => doc,
            Ok(None) => continue,
            Err(e) => {
                r.errors.push(InputError::from(e));
                continue;
            }
        };
        for (base, node) in manifest::objects(&doc.root) {
            let locate = |p: &[Seg]| {
                let mut full = base.clone();
                full.extend_from_slice(p);
                doc.locate(&full)
            };
            lint_node(node, file, opts, stage, &locate, r);
        }
    }
}

fn lint_node(
    node: &Node,
    file: &str,
    opts: &LintOptions,
    stage: Stage<'_>,
    locate: &dyn Fn(&[Seg]) -> (usize, usize),
    r: &mut FileResult,
) {
    match manifest::convert(node) {
        ConvertOutcome::Other => r.skipped += 1,
        ConvertOutcome::Invalid { path, message } => {
            let (line, column) = locate(&path);
            let kind = node.get("kind").and_then(Node::as_str).unwrap_or("object");
            r.errors.push(InputError {
                file: file.to_string(),
                line: (line > 0).then_some(line),
                column: (column > 0).then_some(column),
                message: format!(
                    "{kind} field `{}` is invalid: {message}; fix the field (the other objects are still linted)",
                    manifest::path_string(&path)
                ),
            });
        }
        ConvertOutcome::Typed { object, set_aside } => {
            r.objects += 1;
            let Stage::Lint(capacity) = stage else { return };
            let mut placeholders = set_aside;
            collect_placeholders(node, &mut placeholders);
            for (hit, object_ref) in lint_typed(&object, placeholders, opts, capacity) {
                let (line, column) = locate(&hit.path);
                let Some(meta) = rule(hit.code) else { continue };
                r.findings.push(Finding {
                    code: meta.code,
                    name: meta.name,
                    severity: hit.severity,
                    message: hit.message,
                    file: file.to_string(),
                    line,
                    column,
                    object: object_ref,
                });
            }
        }
    }
}

/// Placeholders in the fields rules need.
fn collect_placeholders(node: &Node, out: &mut Vec<(manifest::Path, String)>) {
    const NEEDED: [&str; 7] = [
        "nodeSelector",
        "affinity",
        "resources",
        "replicas",
        "numberOfNodes",
        "ports",
        "port",
    ];
    let mut path = Vec::new();
    node.walk_strings(&mut path, &mut |p, s| {
        if manifest::has_placeholder(s)
            && p.iter()
                .any(|seg| matches!(seg, Seg::Key(k) if NEEDED.contains(&k.as_str())))
            && !out.iter().any(|(q, _)| q == p)
        {
            out.push((p.clone(), s.to_string()));
        }
    });
}

/// (namespace, name) of the InferaDeployments among live objects.
fn live_inferadeployments(objects: &[serde_json::Value]) -> Vec<(String, String)> {
    objects
        .iter()
        .filter(|v| v.get("kind").and_then(|k| k.as_str()) == Some(INFERA_DEPLOYMENT.kind))
        .map(|v| {
            let at = |p: &str| {
                v.pointer(p)
                    .and_then(|x| x.as_str())
                    .unwrap_or_default()
                    .to_string()
            };
            (at("/metadata/namespace"), at("/metadata/name"))
        })
        .collect()
}

/// A Deployment or LeaderWorkerSet the infera operator manages for one of
/// `owners` (labels `app.kubernetes.io/managed-by=infera-operator` and
/// `infera.amd.com/deployment=<owner>` in the owner's namespace).
fn rendered_by_linted_owner(v: &serde_json::Value, owners: &[(String, String)]) -> bool {
    let labels = v.pointer("/metadata/labels");
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(|x| x.as_str());
    if label(worker::LABEL_MANAGED_BY) != Some(worker::MANAGED_BY_VALUE) {
        return false;
    }
    let ns = v
        .pointer("/metadata/namespace")
        .and_then(|x| x.as_str())
        .unwrap_or_default();
    label(worker::LABEL_DEPLOYMENT)
        .is_some_and(|owner| owners.iter().any(|(n, o)| n == ns && o == owner))
}

/// Lint live objects (wire-form JSON, no source spans). Deployments and
/// LeaderWorkerSets the operator renders from an InferaDeployment in the same
/// list are skipped: their findings are the CR's.
pub fn lint_objects(
    objects: &[serde_json::Value],
    source: &str,
    opts: &LintOptions,
) -> LintOutcome {
    lint_live(objects, source, opts, None)
}

/// [`lint_objects`] with a live node inventory (`infera lint --cluster`:
/// allocatable and free GPUs per node), which takes the place of
/// `opts.nodes`.
pub fn lint_live(
    objects: &[serde_json::Value],
    source: &str,
    opts: &LintOptions,
    live: Option<Vec<InventoryNode>>,
) -> LintOutcome {
    let mut outcome = LintOutcome::default();
    let capacity = load_capacity(opts, live, &mut outcome.input_errors);
    let mut r = FileResult::default();
    let linted = manifest::with_parse_stack(|| {
        let mut r = FileResult::default();
        let owners = live_inferadeployments(objects);
        for v in objects {
            r.documents += 1;
            if rendered_by_linted_owner(v, &owners) {
                // The operator renders it from an InferaDeployment linted
                // here: one root cause, one finding (on the CR).
                r.skipped += 1;
                continue;
            }
            let node = Node::from_json(v);
            lint_node(
                &node,
                source,
                opts,
                Stage::Lint(&capacity),
                &|_| (0, 0),
                &mut r,
            );
        }
        r
    });
    match linted {
        Ok(done) => r = done,
        Err(e) => r.errors.push(InputError {
            file: source.to_string(),
            line: None,
            column: None,
            message: format!("cannot start the lint thread: {e}"),
        }),
    }
    outcome.summary.files = 0;
    outcome.summary.documents = r.documents;
    outcome.summary.objects = r.objects;
    outcome.summary.skipped = r.skipped;
    outcome.findings = r.findings;
    outcome.input_errors = r.errors;
    finish(&mut outcome);
    outcome
}

fn ignored(
    annotations: Option<&std::collections::BTreeMap<String, String>>,
    code: &str,
    service: Option<&str>,
) -> bool {
    let Some(list) = annotations.and_then(|a| a.get(LINT_IGNORE_ANNOTATION)) else {
        return false;
    };
    let Some(meta) = rule(code) else { return false };
    list.split(',').map(str::trim).any(|entry| {
        let (r, svc) = match entry.split_once('/') {
            Some((r, s)) => (r.trim(), Some(s.trim())),
            None => (entry, None),
        };
        (r.eq_ignore_ascii_case(meta.code) || r.eq_ignore_ascii_case(meta.name))
            && svc.is_none_or(|s| Some(s) == service)
    })
}

fn run_rules(w: &Workload<'_>, opts: &LintOptions) -> Vec<Hit> {
    let mut hits = Vec::new();
    let enabled = |code: &str| opts.enabled.is_empty() || opts.enabled.contains(&code);
    // IR011 last: it reports which verdicts its placeholders blocked.
    let (last, rest): (Vec<_>, Vec<_>) = REGISTRY
        .iter()
        .filter(|(meta, _)| enabled(meta.code))
        .partition(|(meta, _)| meta.code == super::rules::PLACEHOLDER_RULE);
    for (_, check) in rest.into_iter().chain(last) {
        check(w, &mut hits);
    }
    // One root cause, one finding: a skipped probe or an unknowable port
    // already explains the gap a generic rule would report again.
    let has = |hits: &[Hit], c: &str| hits.iter().any(|h| h.code == c);
    if has(&hits, "IR001") || has(&hits, "IR006") || has(&hits, "IR005") {
        hits.retain(|h| h.code != "IR008" && h.code != "IR007");
    }
    if has(&hits, "IR001") {
        hits.retain(|h| h.code != "IR006" && h.code != "IR005");
    }
    // An unpinned worker that needs a spare node (IR004, with the numbers
    // and the inventory's verdict) is not also reported as IR002's "no
    // eligible node holds both" from the same inventory.
    if has(&hits, "IR004") {
        hits.retain(|h| h.code != "IR002");
    }
    hits
}

fn idep_path(service: &str) -> manifest::Path {
    vec![
        Seg::Key("spec".into()),
        Seg::Key("services".into()),
        Seg::Key(service.to_string()),
    ]
}

fn lint_typed(
    object: &TypedObject,
    placeholders: Vec<(manifest::Path, String)>,
    opts: &LintOptions,
    capacity: &Capacity,
) -> Vec<(Hit, ObjectRef)> {
    match object {
        TypedObject::InferaDeployment(idep) => lint_idep(idep, &placeholders, opts, capacity),
        TypedObject::Deployment(d) => lint_deployment(d, placeholders, opts, capacity),
        TypedObject::LeaderWorkerSet(lws) => lint_lws(lws, placeholders, opts, capacity),
    }
}

/// Each worker service of an InferaDeployment, as the operator renders it.
fn lint_idep(
    idep: &operator::InferaDeployment,
    placeholders: &[(manifest::Path, String)],
    opts: &LintOptions,
    capacity: &Capacity,
) -> Vec<(Hit, ObjectRef)> {
    let mut out = Vec::new();
    let name = idep.metadata.name.clone().unwrap_or_default();
    let annotations = idep.metadata.annotations.as_ref();
    let generation = opts.generation_for(idep);
    for rw in operator::render_pods(idep, generation) {
        let Some(svc) = idep.spec.services.get(&rw.service) else {
            continue;
        };
        let base = idep_path(&rw.service);
        let worker = rw.component == operator::Component::Worker;
        let roll = match rw.strategy {
            Strategy::SurgeFirst => RollKind::SurgeFirst,
            Strategy::OldPodFirst => RollKind::OldPodFirst,
            Strategy::Lws => RollKind::Lws,
            Strategy::ServerDefault => RollKind::SurgeOrRetire,
        };
        let mine: Vec<_> = placeholders
            .iter()
            .filter(|(p, _)| p.starts_with(&base))
            .cloned()
            .collect();
        let w = Workload {
            kind: INFERA_DEPLOYMENT.kind,
            name: name.clone(),
            service: Some(rw.service.clone()),
            role: rw.role,
            worker,
            serving: worker && operator::is_serving_worker(svc),
            replicas: rw.replicas,
            number_of_nodes: rw.number_of_nodes,
            roll,
            max_surge: 1,
            strategy: Some(rw.strategy),
            generation: Some(generation),
            pod: &rw.pod,
            pod_labels: rw.pod_labels.clone(),
            main: operator::main_container_index(&rw.pod),
            readiness_port: rw.readiness_port.clone(),
            skip_readiness_probe: svc.skip_readiness_probe == Some(true),
            pod_path: (!rw.flat).then(|| {
                let mut p = base.clone();
                p.push(Seg::Key("extraPodSpec".into()));
                p
            }),
            base,
            placeholders: mine,
            capacity,
            blocked: Default::default(),
        };
        if !worker {
            continue;
        }
        let object_ref = ObjectRef {
            kind: INFERA_DEPLOYMENT.kind.into(),
            name: name.clone(),
            namespace: idep.metadata.namespace.clone(),
            service: Some(rw.service.clone()),
        };
        for hit in run_rules(&w, opts) {
            if !ignored(annotations, hit.code, Some(&rw.service)) {
                out.push((hit, object_ref.clone()));
            }
        }
    }
    out
}

/// A plain apps/v1 Deployment.
fn lint_deployment(
    d: &k8s_openapi::api::apps::v1::Deployment,
    placeholders: Vec<(manifest::Path, String)>,
    opts: &LintOptions,
    capacity: &Capacity,
) -> Vec<(Hit, ObjectRef)> {
    let Some(spec) = &d.spec else {
        return Vec::new();
    };
    let Some(pod) = &spec.template.spec else {
        return Vec::new();
    };
    let replicas = if placeholders
        .iter()
        .any(|(p, _)| p.ends_with(&[Seg::Key("replicas".into())]))
    {
        None
    } else {
        Some(spec.replicas.unwrap_or(1))
    };
    let ru = spec
        .strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref());
    let strategy_type = spec.strategy.as_ref().and_then(|s| s.type_.as_deref());
    let (max_surge, max_unavailable) = (
        ru.and_then(|r| r.max_surge.as_ref()),
        ru.and_then(|r| r.max_unavailable.as_ref()),
    );
    let roll = deployment_roll(
        strategy_type,
        max_surge,
        max_unavailable,
        replicas.unwrap_or(1),
    );
    let max_surge = deployment_max_surge(max_surge, max_unavailable, replicas.unwrap_or(1));
    let main = operator::main_container_index(pod);
    let labels = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let plain = Plain {
        kind: "Deployment",
        meta: &d.metadata,
        pod,
        pod_labels: labels,
        main,
        replicas,
        number_of_nodes: None,
        roll,
        max_surge,
    };
    plain_workload(plain, placeholders, opts, capacity)
}

/// A LeaderWorkerSet not rendered from an InferaDeployment.
fn lint_lws(
    lws: &operator::LeaderWorkerSet,
    placeholders: Vec<(manifest::Path, String)>,
    opts: &LintOptions,
    capacity: &Capacity,
) -> Vec<(Hit, ObjectRef)> {
    let tpl = &lws.spec.leader_worker_template;
    let Some(pod) = tpl.worker_template.as_ref().and_then(|t| t.spec.as_ref()) else {
        return Vec::new();
    };
    let replicas = lws
        .spec
        .replicas
        .as_ref()
        .map_or(Some(1), |r| r.as_i64().map(|n| n as i32));
    let size = tpl
        .size
        .as_ref()
        .map_or(Some(1), |s| s.as_i64().map(|n| n as i32));
    let main = operator::main_container_index(pod);
    let labels = tpl
        .worker_template
        .as_ref()
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let plain = Plain {
        kind: LEADER_WORKER_SET.kind,
        meta: &lws.metadata,
        pod,
        pod_labels: labels,
        main,
        replicas,
        number_of_nodes: size,
        roll: RollKind::Lws,
        max_surge: 0,
    };
    plain_workload(plain, placeholders, opts, capacity)
}

/// A Deployment or LeaderWorkerSet, as the rules see it.
struct Plain<'a> {
    kind: &'static str,
    meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    pod: &'a k8s_openapi::api::core::v1::PodSpec,
    pod_labels: std::collections::BTreeMap<String, String>,
    main: usize,
    replicas: Option<i32>,
    number_of_nodes: Option<i32>,
    roll: RollKind,
    max_surge: i64,
}

/// maxSurge of an apps/v1 Deployment after upstream rounding.
fn deployment_max_surge(
    max_surge: Option<&k8s_openapi::apimachinery::pkg::util::intstr::IntOrString>,
    max_unavailable: Option<&k8s_openapi::apimachinery::pkg::util::intstr::IntOrString>,
    replicas: i32,
) -> i64 {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let as_json = |v: Option<&IntOrString>| match v {
        Some(IntOrString::Int(n)) => Some(serde_json::Value::from(*n)),
        Some(IntOrString::String(s)) => Some(serde_json::Value::from(s.as_str())),
        None => None,
    };
    infera_model::rolling::resolve_fenceposts(
        as_json(max_surge).as_ref(),
        as_json(max_unavailable).as_ref(),
        i64::from(replicas),
    )
    .0
}

fn plain_workload(
    plain: Plain<'_>,
    placeholders: Vec<(manifest::Path, String)>,
    opts: &LintOptions,
    capacity: &Capacity,
) -> Vec<(Hit, ObjectRef)> {
    let Plain {
        kind,
        meta,
        pod,
        pod_labels,
        main,
        replicas,
        number_of_nodes,
        roll,
        max_surge,
    } = plain;
    let worker = pod
        .containers
        .get(main)
        .is_some_and(operator::container_runs_engine);
    let pod_path = if kind == "Deployment" {
        vec![
            Seg::Key("spec".into()),
            Seg::Key("template".into()),
            Seg::Key("spec".into()),
        ]
    } else {
        ["spec", "leaderWorkerTemplate", "workerTemplate", "spec"]
            .iter()
            .map(|s| Seg::Key((*s).into()))
            .collect()
    };
    let w = Workload {
        kind,
        name: meta.name.clone().unwrap_or_default(),
        service: None,
        role: Role::Mixed,
        worker,
        serving: worker,
        replicas,
        number_of_nodes,
        roll,
        max_surge,
        strategy: None,
        generation: None,
        pod,
        pod_labels,
        main,
        readiness_port: pod.containers.get(main).map_or(
            operator::ReadinessPort::Default {
                port: operator::DEFAULT_READINESS_PORT,
            },
            operator::container_readiness_port,
        ),
        skip_readiness_probe: false,
        base: vec![Seg::Key("spec".into())],
        pod_path: Some(pod_path),
        placeholders,
        capacity,
        blocked: Default::default(),
    };
    let object_ref = ObjectRef {
        kind: kind.into(),
        name: w.name.clone(),
        namespace: meta.namespace.clone(),
        service: None,
    };
    run_rules(&w, opts)
        .into_iter()
        .filter(|h| !ignored(meta.annotations.as_ref(), h.code, None))
        .map(|h| (h, object_ref.clone()))
        .collect()
}
