//! The lint engine: paths → documents → typed views → rules → findings.
//!
//! The entry points: [`lint_paths`] (files, directories, `-`; everything
//! collected), [`lint_paths_each`] (the same, streamed file by file in report
//! order), [`lint_objects`]/[`lint_live`] (live objects from `--cluster`),
//! [`lint_source`] (one in-memory source: the fuzz target) and [`load_paths`]
//! (the loader without rules: the benchmark's baseline). Their results are
//! [`LintOutcome`]/[`FileOutcome`]; the printers in `report/` read only those.

use std::path::Path as FsPath;

use serde::Serialize;

pub use super::finding::RuleMeta;
use super::finding::{Finding, Severity};
use super::options::LintOptions;
use super::peers::{self, PeerBudget, Peers};
pub use super::rules::InventoryNode;
use super::rules::{Around, Capacity};
pub use super::rules::{rule, rules};
use infera_model::api::INFERA_DEPLOYMENT;
use infera_model::dra::Claims;
use infera_model::manifest::{self, ConvertOutcome, Node, Seg};
use infera_model::worker;

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
    /// Skipped kinds that carry pods (and so may hide a rollout hazard),
    /// with why infera cannot lint them: reports say "skipped: KIND
    /// (reason)", never silently.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped_kinds: Vec<SkippedKind>,
    /// Charts and Kustomize directories not rendered (no tool), with the
    /// command that renders them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped_inputs: Vec<SkippedInput>,
}

/// A directory that is not manifests until rendered, left unlinted because
/// its tool is missing: not an error in the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedInput {
    pub path: String,
    /// Why (`a Helm chart, and no helm on PATH (--helm, INFERA_HELM)`).
    pub reason: String,
    /// What renders and lints it by hand.
    pub command: String,
}

/// A kind that carries pods but whose rollout infera does not model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedKind {
    pub kind: String,
    /// Objects of that kind skipped.
    pub count: usize,
    pub reason: String,
}

/// Add `more` to `into`, one entry a kind (in kind order).
pub fn merge_skipped_kinds(into: &mut Vec<SkippedKind>, more: &[SkippedKind]) {
    for k in more {
        match into.iter_mut().find(|e| e.kind == k.kind) {
            Some(e) => e.count += k.count,
            None => into.push(k.clone()),
        }
    }
    into.sort_by(|a, b| a.kind.cmp(&b.kind));
}

impl LintSummary {
    /// Count one file's outcome (files, documents, objects, skipped kinds;
    /// not findings, which the caller counts after its configuration).
    pub fn add_file(&mut self, f: &FileOutcome) {
        self.files += f.files;
        self.documents += f.documents;
        self.objects += f.objects;
        self.skipped += f.skipped;
        merge_skipped_kinds(&mut self.skipped_kinds, &f.skipped_kinds);
        self.skipped_inputs.extend_from_slice(&f.skipped_inputs);
    }
}

/// Why a kind that runs pods is skipped, for the kinds real fleets use
/// (listed even when their pods are described without a container list,
/// like KServe's `predictor.model` or a NIMService's `image`).
fn known_skip_reason(kind: &str, group: &str) -> Option<&'static str> {
    Some(match (kind, group) {
        ("ServingRuntime" | "ClusterServingRuntime", "serving.kserve.io") => {
            "a KServe runtime template: it runs no pods itself"
        }
        ("MultiRoleInference", "kaito.sh") => {
            "each role becomes a KAITO InferenceSet, which reconciles only the number and labels of its Workspaces (addOrUpdateInferenceSet); what replaces them is the cluster's auto-upgrade strategy, which is not in the object"
        }
        ("RoleSet" | "PodSet", "orchestration.aibrix.ai") => {
            "rendered by AIBrix from a StormService; lint that instead"
        }
        ("NIMCache", "apps.nvidia.com") => "downloads a model: it serves nothing",
        ("RayCluster" | "RayJob", "ray.io") => {
            "KubeRay replaces Ray clusters whole; infera does not model that rollout"
        }
        ("ModelService", "llm-d.ai") => {
            "llm-d renders the Deployments; lint the rendered Deployments instead"
        }
        ("DynamoComponentDeployment", "nvidia.com") => {
            "rendered by the Dynamo operator from a DynamoGraphDeployment; lint that instead"
        }
        ("DaemonSet", "apps") => "one pod per node: no surge or replica count to check",
        ("Job" | "CronJob", "batch") => "runs to completion: no rollout",
        ("Pod", "") => "a bare pod is never rolled",
        _ => return None,
    })
}

/// The skipped-kind entry for an object infera does not analyse, when it
/// runs pods (a known kind, or any kind with a container list).
fn skipped_kind(node: &Node) -> Option<SkippedKind> {
    let kind = node.get("kind").and_then(Node::as_str).unwrap_or("object");
    let api = node.get("apiVersion").and_then(Node::as_str).unwrap_or("");
    let group = api.rsplit_once('/').map_or("", |(g, _)| g);
    let reason = match known_skip_reason(kind, group) {
        Some(r) => r,
        None if carries_pods(node, 0) => {
            "it carries pods, but infera does not know how its controller rolls them out"
        }
        None => return None,
    };
    Some(SkippedKind {
        kind: kind.to_string(),
        count: 1,
        reason: reason.to_string(),
    })
}

/// True when an object's tree holds a container list (a pod template).
fn carries_pods(node: &Node, depth: usize) -> bool {
    use infera_model::manifest::Value;
    if depth > 12 {
        return false;
    }
    match &node.value {
        Value::Map(entries) => entries.iter().any(|(k, v)| {
            matches!(k.name.as_ref(), "containers" | "mainContainer") || carries_pods(v, depth + 1)
        }),
        Value::Seq(items) => items.iter().any(|v| carries_pods(v, depth + 1)),
        _ => false,
    }
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

#[derive(Default)]
struct FileResult {
    findings: Vec<Finding>,
    errors: Vec<InputError>,
    documents: usize,
    objects: usize,
    skipped: usize,
    skipped_kinds: Vec<SkippedKind>,
    source: Option<(String, SourceLines)>,
}

fn load_capacity(
    opts: &LintOptions,
    live: Option<Vec<InventoryNode>>,
    errors: &mut Vec<InputError>,
) -> Capacity {
    let node_gpus = if opts.node_gpus == 0 {
        super::config::DEFAULT_NODE_GPUS
    } else {
        opts.node_gpus
    };
    let mut cap = Capacity {
        node_gpus,
        node_gpus_given: opts.node_gpus != 0,
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
    /// Skipped kinds that carry pods, with the reason.
    pub skipped_kinds: Vec<SkippedKind>,
    /// Charts and overlays not rendered.
    pub skipped_inputs: Vec<SkippedInput>,
    /// The lines findings point at (with [`LintOptions::keep_sources`]).
    pub sources: SourceLines,
}

/// Files (and input errors) that share a name in reports.
struct Unit {
    name: String,
    files: Vec<manifest::Input>,
    errors: Vec<InputError>,
}

/// Expand the paths and group them, with the input errors known before any
/// file is read, by the name reports give them, in name order.
fn units(paths: &[std::path::PathBuf], mut pre: Vec<InputError>) -> Vec<Unit> {
    let (files, errors) = manifest::expand_inputs(paths);
    pre.extend(errors.into_iter().map(InputError::from));
    let mut by_name: std::collections::BTreeMap<String, Unit> = Default::default();
    let unit = |name: &str| Unit {
        name: name.to_string(),
        files: Vec::new(),
        errors: Vec::new(),
    };
    for f in files {
        let name = manifest::display_path(f.path());
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

/// The outcomes of one unit: the unit's own, then (for a rendered
/// directory) one per file its objects came from, in name order.
fn lint_unit(u: &Unit, opts: &LintOptions, stage: Stage<'_>) -> Vec<FileOutcome> {
    let mut out = FileOutcome {
        file: u.name.clone(),
        input_errors: u.errors.clone(),
        ..FileOutcome::default()
    };
    let mut rendered = Vec::new();
    for input in &u.files {
        let path = match input {
            manifest::Input::File(path) => path,
            manifest::Input::Rendered(renderer, dir) => {
                let (head, files) = lint_rendered(*renderer, dir, opts, stage);
                out.skipped_inputs.extend(head.skipped_inputs);
                out.input_errors.extend(head.input_errors);
                rendered.extend(files);
                continue;
            }
        };
        if path.as_os_str() == "-" {
            for f in lint_stdin(opts, stage) {
                match f.file == out.file {
                    true => absorb(&mut out, f),
                    false => rendered.push(f),
                }
            }
            continue;
        }
        let mut r = lint_file(path, opts, stage);
        let sources = r.source.take().map(|(_, lines)| lines).unwrap_or_default();
        absorb(&mut out, outcome(String::new(), r, sources));
    }
    let mut all = vec![out];
    all.extend(rendered);
    all
}

/// Lint stdin. A `helm template` stream whose charts are found under the
/// working directory ([`manifest::render::StdinCharts`]) is placed in its
/// template files as a chart directory is; what cannot be placed stays
/// under `-`, on stdin's own lines.
fn lint_stdin(opts: &LintOptions, stage: Stage<'_>) -> Vec<FileOutcome> {
    let stdin = FsPath::new("-");
    let bytes = match manifest::read_source(stdin) {
        Ok(b) => b,
        Err(e) => {
            return vec![FileOutcome {
                file: "-".into(),
                input_errors: vec![InputError::from(e)],
                ..FileOutcome::default()
            }];
        }
    };
    // Relative to `.`, so reports name the template as the user would.
    let charts = manifest::render::StdinCharts::find(&bytes, FsPath::new("."));
    let outcomes = lint_by_origin("-", &bytes, opts, stage, &|text| charts.origin(text));
    if outcomes.is_empty() {
        // Nothing to lint is still one input read.
        return vec![FileOutcome {
            file: "-".into(),
            files: 1,
            ..FileOutcome::default()
        }];
    }
    outcomes
}

/// Add one outcome of a file to another of the same name.
fn absorb(into: &mut FileOutcome, f: FileOutcome) {
    into.files += f.files;
    into.documents += f.documents;
    into.objects += f.objects;
    into.skipped += f.skipped;
    merge_skipped_kinds(&mut into.skipped_kinds, &f.skipped_kinds);
    into.findings.extend(f.findings);
    into.input_errors.extend(f.input_errors);
    into.sources.extend(f.sources);
}

// ---------------------------------------------------------------------------
// Helm charts and Kustomize directories: rendered by their tool, linted as
// the objects they render, each finding placed in the template file and
// line the object came from (`infera_model::manifest::render`).
// ---------------------------------------------------------------------------

/// Lint what `renderer` renders from `dir`: the directory's own outcome
/// (a skip when the tool is missing, an input error when it fails), and
/// one outcome per file the rendered objects came from, in name order.
fn lint_rendered(
    renderer: manifest::render::Renderer,
    dir: &FsPath,
    opts: &LintOptions,
    stage: Stage<'_>,
) -> (FileOutcome, Vec<FileOutcome>) {
    let name = manifest::display_path(dir);
    let mut head = FileOutcome {
        file: name.clone(),
        ..FileOutcome::default()
    };
    let command = opts.render.command_line(renderer, dir);
    let bytes = match opts.render.render(renderer, dir) {
        Ok(bytes) => bytes,
        Err(manifest::render::Unrendered::NoTool) => {
            let flag = match renderer {
                manifest::render::Renderer::Helm => "--helm or INFERA_HELM",
                manifest::render::Renderer::Kustomize => "--kubectl or INFERA_KUBECTL",
            };
            head.skipped_inputs.push(SkippedInput {
                path: name,
                reason: format!(
                    "{}, and no {} on PATH ({flag}) to render it: not linted",
                    renderer.what(),
                    renderer.program()
                ),
                command,
            });
            return (head, Vec::new());
        }
        Err(manifest::render::Unrendered::Failed(said)) => {
            head.input_errors.push(InputError {
                file: name,
                line: None,
                column: None,
                message: format!(
                    "{} could not be rendered: {said}; fix it or its values (`{command}` shows the same)",
                    renderer.what()
                ),
            });
            return (head, Vec::new());
        }
    };
    let origin_of = |text: &str| Some(manifest::render::origin(renderer, dir, text));
    (head, lint_by_origin(&name, &bytes, opts, stage, &origin_of))
}

/// Lint a rendered stream, one outcome per file its documents came from
/// (in name order): `origin_of` places a document in its template, and a
/// document it cannot place stays under `name` on the stream's own lines.
fn lint_by_origin(
    name: &str,
    bytes: &[u8],
    opts: &LintOptions,
    stage: Stage<'_>,
    origin_of: &dyn Fn(&str) -> Option<manifest::render::Origin>,
) -> Vec<FileOutcome> {
    let placed = |raw: &manifest::RawDocument<'_>| origin_of(&String::from_utf8_lossy(raw.bytes));
    let (claims, peers) = context(name, bytes, opts, stage, &placed);
    let mut by_file: std::collections::BTreeMap<String, (FileResult, Option<String>)> =
        Default::default();
    for raw in manifest::split_documents(bytes) {
        let origin = placed(&raw);
        let file = origin
            .as_ref()
            .map_or(name, |o| o.file.as_str())
            .to_string();
        let (r, source) = by_file.entry(file.clone()).or_default();
        lint_document(
            &file,
            &raw,
            opts,
            stage,
            (&claims, &peers, origin.as_ref()),
            r,
        );
        if source.is_none() {
            *source = match origin {
                Some(o) => o.text,
                None => Some(String::from_utf8_lossy(bytes).into_owned()),
            };
        }
    }
    by_file
        .into_iter()
        .map(|(file, (r, text))| {
            let sources = match text {
                Some(t) if opts.keep_sources && !r.findings.is_empty() => {
                    finding_lines(t.as_bytes(), &r.findings)
                }
                _ => Default::default(),
            };
            outcome(file, r, sources)
        })
        .collect()
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
        skipped_kinds: r.skipped_kinds,
        skipped_inputs: Vec::new(),
        sources,
    }
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
    let mut each = |all: Vec<FileOutcome>| {
        for f in all {
            outcome.summary.add_file(&f);
            if !f.findings.is_empty() && opts.keep_sources {
                outcome.sources.insert(f.file.clone(), f.sources);
            }
            outcome.findings.extend(f.findings);
            outcome.input_errors.extend(f.input_errors);
        }
        Ok(())
    };
    if let Err(e) = super::pool::drive(
        &units,
        super::pool::thread_count(opts.threads),
        &work,
        &mut each,
    ) {
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
    merge_skipped_kinds(&mut outcome.summary.skipped_kinds, &r.skipped_kinds);
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

/// What a source's workloads refer to in other objects of the same source
/// (a file, stdin, a rendered chart): the DRA claims and claim templates
/// their pods' GPUs come from, their PodDisruptionBudgets and their
/// PersistentVolumeClaims. Only a source that mentions one of these kinds
/// is parsed twice. `origin_of` places a rendered document in its template.
fn source_context(file: &str, bytes: &[u8], origin_of: &OriginOf<'_>) -> (Claims, Peers) {
    const KINDS: [&[u8]; 3] = [
        b"ResourceClaim",
        b"PodDisruptionBudget",
        b"PersistentVolumeClaim",
    ];
    let mut claims = Claims::new();
    let mut peers = Peers::default();
    if !peers::mentions_any(bytes, &KINDS) {
        return (claims, peers);
    }
    let none = Claims::new();
    // Only the documents that name a peer kind are parsed a second time,
    // and only peer objects are turned into JSON.
    for raw in manifest::split_documents(bytes) {
        if !peers::mentions_any(raw.bytes, &KINDS) {
            continue;
        }
        let origin = origin_of(&raw);
        each_object(file, &raw, (&none, origin.as_ref()), &mut |item| {
            if let Ok((node, place)) = item {
                let kind = node.get("kind").and_then(Node::as_str).unwrap_or_default();
                if KINDS.iter().any(|k| kind.as_bytes().starts_with(k)) {
                    add_peer(&node.to_json(), place, &mut claims, &mut peers);
                }
            }
        });
    }
    (claims, peers)
}

/// Where a rendered document came from (`None` for a file's own).
type OriginOf<'a> = dyn Fn(&manifest::RawDocument<'_>) -> Option<manifest::render::Origin> + 'a;

/// One object of a document with its place, or the document's parse error.
type Item<'n, 'p> = Result<(&'n Node<'n>, &'p Place<'p>), InputError>;

/// Every object of one document, with its place (`claims`: the source's DRA
/// claims, for the rules; `origin`: a rendered document's template), in
/// order; a document that does not parse comes as its error.
fn each_object(
    file: &str,
    raw: &manifest::RawDocument<'_>,
    (claims, origin): (&Claims, Option<&manifest::render::Origin>),
    each: &mut dyn FnMut(Item<'_, '_>),
) {
    let doc = match manifest::parse_document(file, raw) {
        Ok(Some(doc)) => doc,
        Ok(None) => return,
        Err(mut e) => {
            if let Some(o) = origin {
                e.line = e
                    .line
                    .map(|l| o.line(l - raw.line_offset))
                    .filter(|&l| l > 0);
            }
            each(Err(InputError::from(e)));
            return;
        }
    };
    let text = std::str::from_utf8(raw.bytes).unwrap_or_default();
    for (base, node) in manifest::objects(&doc.root) {
        let place = Place {
            document: doc.index,
            base,
            source: Some((&doc.root, text)),
            line_offset: doc.line_offset,
            claims,
            origin,
        };
        each(Ok((node, &place)));
    }
}

/// Record `v` when it is a DRA claim, a budget or a volume claim.
fn add_peer(v: &serde_json::Value, place: &Place<'_>, claims: &mut Claims, peers: &mut Peers) {
    if let Some((key, gpus)) = infera_model::dra::read_claim(v) {
        claims.insert(key, gpus);
    } else if let Some(budget) = infera_model::pdb::read_budget(v) {
        peers.budgets.push(peer_budget(budget, place));
    } else if let Some(claim) = infera_model::volume::read_claim(v) {
        peers.claims.push(claim);
    }
}

/// A budget with where findings about it point: the field that sets it,
/// and the fix (one disruption at a time) as the document's edits.
fn peer_budget(budget: infera_model::pdb::Budget, place: &Place<'_>) -> PeerBudget {
    let spec = |k: &str| vec![Seg::Key("spec".into()), Seg::Key(k.into())];
    let field = if budget.spec.min_available.is_some() {
        spec("minAvailable")
    } else {
        spec("maxUnavailable")
    };
    let (line, column) = place.locate(&field);
    let fix = place.fix(super::rules::HitFix {
        description: "allow one disruption at a time (maxUnavailable: 1)".into(),
        changes: vec![(vec![Seg::Key("spec".into())], peers::one_at_a_time())],
    });
    PeerBudget {
        line,
        column,
        object: super::finding::ObjectRef {
            kind: "PodDisruptionBudget".into(),
            name: budget.name.clone(),
            namespace: (!budget.namespace.is_empty()).then(|| budget.namespace.clone()),
            service: None,
        },
        fix,
        budget,
    }
}

/// The claims and peers of a source, as the stage needs them.
fn context(
    file: &str,
    bytes: &[u8],
    opts: &LintOptions,
    stage: Stage<'_>,
    origin_of: &OriginOf<'_>,
) -> (Claims, Peers) {
    let (claims, mut peers) = match stage {
        Stage::Lint(_) => source_context(file, bytes, origin_of),
        Stage::Load => Default::default(),
    };
    peers.every_budget = opts.every_budget;
    peers.every_claim = opts.every_claim;
    (claims, peers)
}

fn lint_bytes(file: &str, bytes: &[u8], opts: &LintOptions, stage: Stage<'_>, r: &mut FileResult) {
    let (claims, peers) = context(file, bytes, opts, stage, &|_| None);
    for raw in manifest::split_documents(bytes) {
        lint_document(file, &raw, opts, stage, (&claims, &peers, None), r);
    }
}

/// Lint one document of a source; `origin` (a rendered document) moves
/// positions to the template it came from.
fn lint_document(
    file: &str,
    raw: &manifest::RawDocument<'_>,
    opts: &LintOptions,
    stage: Stage<'_>,
    (claims, peers, origin): (&Claims, &Peers, Option<&manifest::render::Origin>),
    r: &mut FileResult,
) {
    r.documents += 1;
    each_object(file, raw, (claims, origin), &mut |item| match item {
        Ok((node, place)) => lint_node(node, file, opts, stage, (place, peers), r),
        Err(e) => r.errors.push(e),
    });
}

/// Where an object sits: its document, its path in it, and (for a file)
/// the document's tree and text, which positions and fixes are read from.
struct Place<'d> {
    document: usize,
    base: manifest::Path,
    source: Option<(&'d Node<'d>, &'d str)>,
    line_offset: usize,
    /// The DRA claims of the same source.
    claims: &'d Claims,
    /// For a rendered document: the template file's lines.
    origin: Option<&'d manifest::render::Origin>,
}

impl Place<'_> {
    fn full(&self, p: &[Seg]) -> manifest::Path {
        let mut full = self.base.clone();
        full.extend_from_slice(p);
        full
    }

    /// File line/column of a path inside the object ((0, 0) when unknown).
    fn locate(&self, p: &[Seg]) -> (usize, usize) {
        let Some((root, _)) = self.source else {
            return (0, 0);
        };
        match (root.locate(&self.full(p)), self.origin) {
            ((0, _), _) => (0, 0),
            ((line, column), None) => (line as usize + self.line_offset, column as usize),
            ((line, column), Some(o)) => match o.line(line as usize) {
                0 => (0, 0),
                l => (l, column as usize),
            },
        }
    }

    /// A rule's fix as the report carries it: paths from the document's
    /// root, and the text edits of the file (all or none).
    fn fix(&self, hit: super::rules::HitFix) -> super::finding::Fix {
        let mut edits = Vec::new();
        let mut complete = self.source.is_some();
        let changes = hit
            .changes
            .into_iter()
            .map(|(path, value)| {
                let full = self.full(&path);
                if let Some((root, text)) = self.source.filter(|_| complete) {
                    match super::fix::text_edits(root, text, &full, &value) {
                        Some(e) => edits.extend(e),
                        None => complete = false,
                    }
                }
                super::finding::Change {
                    path: super::fix::pointer(&full),
                    value,
                }
            })
            .collect();
        // A rendered document's text is not the template's: the merge
        // patches stand, the text edits would land on the wrong lines.
        if !complete || self.origin.is_some() {
            edits.clear();
        }
        for e in &mut edits {
            e.line += self.line_offset;
            e.end_line += self.line_offset;
        }
        super::finding::Fix {
            description: hit.description,
            document: self.document,
            changes,
            edits,
        }
    }
}

fn lint_node(
    node: &Node,
    file: &str,
    opts: &LintOptions,
    stage: Stage<'_>,
    (place, peers): (&Place<'_>, &Peers),
    r: &mut FileResult,
) {
    match manifest::convert(node) {
        ConvertOutcome::Other => {
            r.skipped += 1;
            if let Some(k) = skipped_kind(node) {
                merge_skipped_kinds(&mut r.skipped_kinds, &[k]);
            }
        }
        ConvertOutcome::Invalid { path, message } => {
            let (line, column) = place.locate(&path);
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
            let namespace = node
                .get("metadata")
                .and_then(|m| m.get("namespace"))
                .and_then(Node::as_str)
                .unwrap_or_default();
            let cx = super::runner::Cx {
                opts,
                capacity,
                claims: place.claims,
                around: Around {
                    peers,
                    namespace,
                    progress: super::rules::Progress::of(node),
                },
            };
            for (hit, mut object_ref) in super::kinds::lint_typed(&object, placeholders, cx) {
                let Some(meta) = rule(hit.code) else { continue };
                let (mut line, mut column) = place.locate(&hit.path);
                let mut fix = hit.fix.map(|f| place.fix(f));
                if let Some(b) = hit.at_budget.and_then(|i| peers.budgets.get(i)) {
                    (line, column) = (b.line, b.column);
                    fix = Some(b.fix.clone());
                    object_ref = b.object.clone();
                }
                r.findings.push(Finding {
                    code: meta.code,
                    name: meta.name,
                    severity: hit.severity,
                    message: hit.message,
                    file: file.to_string(),
                    line,
                    column,
                    object: object_ref,
                    fix,
                });
            }
        }
    }
}

/// Placeholders in the fields rules need.
fn collect_placeholders(node: &Node, out: &mut Vec<(manifest::Path, String)>) {
    let mut path = Vec::new();
    placeholders_under(node, &mut path, 0, out);
}

/// Keys whose values rules read (a placeholder below one blocks a verdict).
const NEEDED: [&str; 7] = [
    "nodeSelector",
    "affinity",
    "resources",
    "replicas",
    "numberOfNodes",
    "ports",
    "port",
];

/// The walk of [`collect_placeholders`]: `needed` counts the [`NEEDED`]
/// keys on `path`, and only strings below one are looked at. The path is
/// borrowed while walking and copied only for a placeholder found (most
/// objects have none: no allocation per key, lint's hot path).
fn placeholders_under<'n>(
    node: &'n Node,
    path: &mut Vec<(Option<&'n str>, usize)>,
    needed: usize,
    out: &mut Vec<(manifest::Path, String)>,
) {
    use infera_model::manifest::Value;
    match &node.value {
        Value::Str(s) if needed > 0 && s.bytes().any(|b| matches!(b, b'$' | b'{' | b'<')) => {
            if !manifest::has_placeholder(s) {
                return;
            }
            let owned: manifest::Path = path
                .iter()
                .map(|(k, i)| match k {
                    Some(k) => Seg::Key((*k).to_string()),
                    None => Seg::Index(*i),
                })
                .collect();
            if !out.iter().any(|(q, _)| *q == owned) {
                out.push((owned, s.to_string()));
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push((None, i));
                placeholders_under(item, path, needed, out);
                path.pop();
            }
        }
        Value::Map(entries) => {
            for (k, v) in entries {
                let name: &str = k.name.as_ref();
                path.push((Some(name), 0));
                let more = usize::from(NEEDED.contains(&name));
                placeholders_under(v, path, needed + more, out);
                path.pop();
            }
        }
        _ => {}
    }
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
        let mut claims = Claims::new();
        let mut peers = Peers {
            every_budget: opts.every_budget,
            every_claim: opts.every_claim,
            ..Peers::default()
        };
        let none = Claims::new();
        for (document, v) in objects.iter().enumerate() {
            let place = Place {
                document,
                base: Vec::new(),
                source: None,
                line_offset: 0,
                claims: &none,
                origin: None,
            };
            add_peer(v, &place, &mut claims, &mut peers);
        }
        for (document, v) in objects.iter().enumerate() {
            r.documents += 1;
            if rendered_by_linted_owner(v, &owners) {
                // The operator renders it from an InferaDeployment linted
                // here: one root cause, one finding (on the CR).
                r.skipped += 1;
                continue;
            }
            let node = Node::from_json(v);
            let place = Place {
                document,
                base: Vec::new(),
                source: None,
                line_offset: 0,
                claims: &claims,
                origin: None,
            };
            let context = (&place, &peers);
            lint_node(&node, source, opts, Stage::Lint(&capacity), context, &mut r);
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
    outcome.summary.skipped_kinds = r.skipped_kinds;
    outcome.findings = r.findings;
    outcome.input_errors = r.errors;
    finish(&mut outcome);
    outcome
}
