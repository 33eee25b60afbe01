//! Files, directories and stdin → YAML/JSON documents with source spans →
//! typed views of the kinds infera analyses.
//!
//! One broken document never hides the others: a stream is split at its
//! column-0 document markers (`---`, `...`) here, before parsing, and each
//! document is decoded (UTF-8) and parsed on its own, with its line offset
//! kept so positions are those of the file. A document is read by the fast
//! loader ([`fast`]: the tree straight from the YAML parser's events) when
//! it uses only what manifests are made of, and by serde-saphyr otherwise
//! (tags, anchors, merge keys, rare number spellings, errors), so values and
//! error messages are serde-saphyr's either way. Parsing is bounded: a file
//! size cap, a per-document byte cap and serde-saphyr budgets (aliases,
//! anchors, depth, nodes, scalar bytes), which the fast loader leaves to
//! serde-saphyr well before they are reached.

pub mod de;
pub mod dynamo;
pub mod fast;
pub mod node;
pub mod render;
pub mod serving;
pub mod typed;

use std::io::Read;
use std::path::{Path as FsPath, PathBuf};

pub use node::{Key, Node, Path, Seg, Value, path_string};
pub use typed::{ConvertOutcome, TypedObject, convert, has_placeholder, text_may_hold_placeholder};

/// Largest file read at all (a larger one is refused with an error, so
/// memory stays bounded whatever is passed in).
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Largest single YAML document parsed.
pub const MAX_DOCUMENT_BYTES: usize = 8 * 1024 * 1024;
/// Deepest nesting accepted (Kubernetes objects stay far below it).
pub const MAX_DEPTH: usize = 64;
/// Stack for threads that parse: the recursive descent over a
/// [`MAX_DEPTH`]-deep document needs more than a default 2 MiB thread stack
/// in debug builds.
pub const PARSE_STACK_BYTES: usize = 32 * 1024 * 1024;

/// Run `f` on a thread with a [`PARSE_STACK_BYTES`] stack.
pub fn with_parse_stack<T: Send>(f: impl FnOnce() -> T + Send) -> std::io::Result<T> {
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .stack_size(PARSE_STACK_BYTES)
            .spawn_scoped(s, f)?;
        match handle.join() {
            Ok(v) => Ok(v),
            Err(p) => std::panic::resume_unwind(p),
        }
    })
}
pub const MAX_ALIASES: usize = 1_000;
pub const MAX_ANCHORS: usize = 1_000;
/// Events replayed through aliases per document: stops "billion laughs".
pub const MAX_REPLAYED_EVENTS: usize = 100_000;

/// A file or document that could not be read or parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", location(file, *line, *column))]
pub struct ManifestError {
    pub file: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// What is wrong and what to do.
    pub message: String,
}

fn location(file: &str, line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!("{file}:{l}:{c}"),
        (Some(l), None) => format!("{file}:{l}"),
        _ => file.to_string(),
    }
}

/// How a bad document's message ends where lint goes on with the others.
pub const OTHERS_STILL_LINTED: &str = " (the others are still linted)";

impl ManifestError {
    /// The message as `infera render` gives it: it renders the other
    /// documents, it does not lint them.
    pub fn rendering(mut self) -> Self {
        if let Some(head) = self.message.strip_suffix(OTHERS_STILL_LINTED) {
            self.message = format!("{head} (the others are still rendered)");
        }
        self
    }

    pub fn new(
        file: &str,
        line: Option<usize>,
        column: Option<usize>,
        message: impl Into<String>,
    ) -> Self {
        ManifestError {
            file: file.to_string(),
            line,
            column,
            message: message.into(),
        }
    }
}

/// How a path is shown in messages (`-` for stdin).
pub fn display_path(path: &FsPath) -> String {
    path.to_string_lossy().into_owned()
}

fn is_manifest_file(path: &FsPath) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    )
}

/// One input of a lint: a manifest file (or `-`), or a directory that a
/// tool renders (a Helm chart, a Kustomize directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    File(PathBuf),
    Rendered(render::Renderer, PathBuf),
}

impl Input {
    /// The path as given or found.
    pub fn path(&self) -> &FsPath {
        match self {
            Input::File(p) | Input::Rendered(_, p) => p,
        }
    }
}

/// Expand the command-line paths: files as given, directories recursively
/// (`*.yaml`, `*.yml`, `*.json`, sorted), `-` kept for stdin. Charts and
/// Kustomize directories are left out (see [`expand_inputs`]).
pub fn expand_paths(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<ManifestError>) {
    let (inputs, errors) = expand_inputs(paths);
    let files = inputs
        .into_iter()
        .filter_map(|i| match i {
            Input::File(p) => Some(p),
            Input::Rendered(..) => None,
        })
        .collect();
    (files, errors)
}

/// [`expand_paths`], with every directory holding `Chart.yaml` or
/// `kustomization.yaml` kept whole as an [`Input::Rendered`] (not descended:
/// its templates and patches are not manifests until rendered).
pub fn expand_inputs(paths: &[PathBuf]) -> (Vec<Input>, Vec<ManifestError>) {
    let mut inputs = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            inputs.push(Input::File(p.clone()));
            continue;
        }
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => walk_dir(p, &mut inputs, &mut errors, 0),
            Ok(_) => inputs.push(Input::File(p.clone())),
            Err(e) => errors.push(ManifestError::new(
                &display_path(p),
                None,
                None,
                format!("cannot read: {e}; check the path"),
            )),
        }
    }
    (inputs, errors)
}

fn walk_dir(dir: &FsPath, inputs: &mut Vec<Input>, errors: &mut Vec<ManifestError>, depth: usize) {
    if depth > 64 {
        errors.push(ManifestError::new(
            &display_path(dir),
            None,
            None,
            "directory nesting deeper than 64 levels (a symlink loop?); not descended",
        ));
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            errors.push(ManifestError::new(
                &display_path(dir),
                None,
                None,
                format!("cannot list directory: {e}"),
            ));
            return;
        }
    };
    let mut children: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    children.sort();
    let names = children
        .iter()
        .filter_map(|c| c.file_name().and_then(|n| n.to_str()));
    if let Some(renderer) = render::Renderer::of_dir(names) {
        inputs.push(Input::Rendered(renderer, dir.to_path_buf()));
        return;
    }
    for child in children {
        match std::fs::metadata(&child) {
            Ok(m) if m.is_dir() => walk_dir(&child, inputs, errors, depth + 1),
            Ok(_) if is_manifest_file(&child) => inputs.push(Input::File(child)),
            _ => {}
        }
    }
}

/// Read one source (`-` = stdin), refusing more than [`MAX_FILE_BYTES`].
pub fn read_source(path: &FsPath) -> Result<Vec<u8>, ManifestError> {
    let name = display_path(path);
    let too_big = |size: u64| {
        ManifestError::new(
            &name,
            None,
            None,
            format!(
                "{:.1} MiB is more than the {} MiB infera reads from one file; split the stream \
                 into several files (e.g. one per release) and lint those",
                size as f64 / (1024.0 * 1024.0),
                MAX_FILE_BYTES / (1024 * 1024)
            ),
        )
    };
    let mut buf = Vec::new();
    if path.as_os_str() == "-" {
        std::io::stdin()
            .lock()
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut buf)
            .map_err(|e| {
                ManifestError::new(
                    &name,
                    None,
                    None,
                    format!("cannot read standard input: {e}"),
                )
            })?;
        if buf.len() as u64 > MAX_FILE_BYTES {
            return Err(too_big(buf.len() as u64));
        }
        return Ok(buf);
    }
    let file = std::fs::File::open(path)
        .map_err(|e| ManifestError::new(&name, None, None, format!("cannot open: {e}")))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > MAX_FILE_BYTES {
        return Err(too_big(size));
    }
    // Sized from the metadata (one allocation, no regrowth); `+ 1` so a
    // file that grew since is still read to its end, and refused above.
    buf.reserve_exact(size as usize + 1);
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| ManifestError::new(&name, None, None, format!("cannot read: {e}")))?;
    if buf.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big(buf.len() as u64));
    }
    Ok(buf)
}

/// One document of a stream, before parsing.
#[derive(Debug, Clone, Copy)]
pub struct RawDocument<'a> {
    /// 0-based index in the stream (empty documents not counted).
    pub index: usize,
    /// Lines before the document's first line in the file.
    pub line_offset: usize,
    pub bytes: &'a [u8],
}

fn is_marker(line: &[u8], marker: &[u8; 3]) -> bool {
    line.starts_with(marker) && matches!(line.get(3), None | Some(b' ' | b'\t' | b'\r' | b'\n'))
}

/// True when a line carries YAML content (not blank, comment or directive).
fn line_has_content(line: &[u8]) -> bool {
    let trimmed = line
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map(|i| &line[i..]);
    match trimmed {
        None => false,
        Some(t) => !(t.starts_with(b"#") || (line.first() == Some(&b'%'))),
    }
}

/// Split a stream at column-0 document markers. Documents with no content
/// (only comments, blank lines or directives) are dropped.
pub fn split_documents(bytes: &[u8]) -> Vec<RawDocument<'_>> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut docs = Vec::new();
    let mut start = 0usize;
    let mut start_line = 0usize;
    let mut has_content = false;
    let mut has_marker = false;
    let mut pos = 0usize;
    let mut line_no = 0usize;
    fn push<'b>(
        docs: &mut Vec<RawDocument<'b>>,
        bytes: &'b [u8],
        from: usize,
        to: usize,
        line: usize,
        content: bool,
    ) {
        if content && from < to {
            let index = docs.len();
            docs.push(RawDocument {
                index,
                line_offset: line,
                bytes: &bytes[from..to],
            });
        }
    }
    while pos < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i + 1);
        let line = &bytes[pos..end];
        if is_marker(line, b"---") {
            if has_content || has_marker {
                push(&mut docs, bytes, start, pos, start_line, has_content);
                start = pos;
                start_line = line_no;
                has_content = false;
            }
            has_marker = true;
            if line_has_content(&line[3..]) {
                has_content = true;
            }
        } else if is_marker(line, b"...") {
            push(&mut docs, bytes, start, end, start_line, has_content);
            start = end;
            start_line = line_no + 1;
            has_content = false;
            has_marker = false;
        } else if !has_content && line_has_content(line) {
            has_content = true;
        }
        pos = end;
        line_no += 1;
    }
    push(
        &mut docs,
        bytes,
        start,
        bytes.len(),
        start_line,
        has_content,
    );
    docs
}

/// A parsed document: its tree and where it sits in the file.
#[derive(Debug, Clone)]
pub struct Document<'a> {
    pub index: usize,
    pub line_offset: usize,
    pub root: Node<'a>,
}

impl Document<'_> {
    /// File line/column of a path inside this document.
    pub fn locate(&self, path: &[Seg]) -> (usize, usize) {
        let (line, column) = self.root.locate(path);
        if line == 0 {
            (0, 0)
        } else {
            (line as usize + self.line_offset, column as usize)
        }
    }
}

fn parse_options() -> serde_saphyr::Options {
    let mut opts = serde_saphyr::Options::default();
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_DEPTH;
    budget.max_aliases = MAX_ALIASES;
    budget.max_anchors = MAX_ANCHORS;
    budget.max_documents = 1;
    budget.max_total_scalar_bytes = MAX_DOCUMENT_BYTES;
    budget.max_reader_input_bytes = Some(MAX_DOCUMENT_BYTES);
    opts.budget = Some(budget);
    opts.alias_limits.max_total_replayed_events = MAX_REPLAYED_EVENTS;
    opts.alias_limits.max_replay_stack_depth = 16;
    opts.duplicate_keys = serde_saphyr::options::DuplicateKeyPolicy::Error;
    opts.emit_comments = false;
    opts.with_snippet = false;
    // YAML 1.1 integers, as Kubernetes reads them (go-yaml v2): `0700` is
    // octal 448, not the float 700 YAML 1.2 makes of it (see the
    // `yaml11_integers` table).
    opts.legacy_octal_numbers = true;
    opts
}

/// Decode and parse one document. `Ok(None)` for a document that is null.
pub fn parse_document<'a>(
    file: &str,
    raw: &RawDocument<'a>,
) -> Result<Option<Document<'a>>, ManifestError> {
    let first_line = raw.line_offset + 1;
    if raw.bytes.len() > MAX_DOCUMENT_BYTES {
        return Err(ManifestError::new(
            file,
            Some(first_line),
            None,
            format!(
                "document {} is {:.1} MiB, more than the {} MiB infera parses; split it",
                raw.index + 1,
                raw.bytes.len() as f64 / (1024.0 * 1024.0),
                MAX_DOCUMENT_BYTES / (1024 * 1024)
            ),
        ));
    }
    if let Some(nul) = memchr::memchr(0, raw.bytes) {
        let line = first_line + raw.bytes[..nul].iter().filter(|&&b| b == b'\n').count();
        return Err(ManifestError::new(
            file,
            Some(line),
            None,
            "binary data (a NUL byte), not a YAML or JSON manifest; pass only manifest files \
             (or exclude this one)",
        ));
    }
    let text = match std::str::from_utf8(raw.bytes) {
        Ok(t) => t,
        Err(e) => {
            let prefix = &raw.bytes[..e.valid_up_to()];
            let line = first_line + prefix.iter().filter(|&&b| b == b'\n').count();
            let column = prefix.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
            return Err(ManifestError::new(
                file,
                Some(line),
                Some(column),
                "invalid UTF-8; manifests must be UTF-8 text: re-encode the file (e.g. `iconv -t \
                 UTF-8`) or remove the stray bytes",
            ));
        }
    };
    let root = match fast::tree(text) {
        Some(root) => root,
        None => parse_full(file, raw, text)?,
    };
    if root.value == Value::Null {
        return Ok(None);
    }
    Ok(Some(Document {
        index: raw.index,
        line_offset: raw.line_offset,
        root,
    }))
}

/// A document through serde-saphyr: every YAML feature, its budgets and
/// its error messages (the fast loader's fallback, see [`fast`]).
fn parse_full<'a>(
    file: &str,
    raw: &RawDocument<'a>,
    text: &'a str,
) -> Result<Node<'a>, ManifestError> {
    serde_saphyr::from_str_with_options::<Node>(text, parse_options()).map_err(|e| {
        let loc = e.location().filter(|l| l.line() > 0);
        let message = e.without_snippet().to_string();
        ManifestError::new(
            file,
            Some(loc.map_or(raw.line_offset + 1, |l| l.line() as usize + raw.line_offset)),
            loc.map(|l| l.column() as usize),
            format!(
                "invalid YAML: {}; fix this document{OTHERS_STILL_LINTED}",
                message.trim()
            ),
        )
    })
}

/// The objects of a document: the root, or each item of a `kind: List`.
/// Yields the path of each object inside the document.
pub fn objects<'b, 'a>(root: &'b Node<'a>) -> Vec<(Path, &'b Node<'a>)> {
    let is_list = root
        .get("kind")
        .and_then(Node::as_str)
        .is_some_and(|k| k == "List" || k.ends_with("List"))
        && root.get("items").is_some();
    if is_list {
        if let Some(Node {
            value: Value::Seq(items),
            ..
        }) = root.get("items")
        {
            return items
                .iter()
                .enumerate()
                .map(|(i, n)| (vec![Seg::Key("items".to_string()), Seg::Index(i)], n))
                .collect();
        }
        return Vec::new();
    }
    vec![(Vec::new(), root)]
}

/// One object of a source with its first line, or the error of its document.
pub type LoadedValue = Result<(usize, serde_json::Value), ManifestError>;

/// Why [`load_path_values`] could not read a source at all.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The parser thread could not be started.
    #[error(transparent)]
    Thread(#[from] std::io::Error),
    /// The file cannot be read.
    #[error(transparent)]
    Source(#[from] ManifestError),
}

/// Load every object of one source as wire-form JSON (for `infera render`):
/// each item is the object with its first line, or the error of its document.
pub fn load_path_values(path: &FsPath) -> Result<Vec<LoadedValue>, LoadError> {
    with_parse_stack(|| load_path_values_inner(path))?
}

fn load_path_values_inner(path: &FsPath) -> Result<Vec<LoadedValue>, LoadError> {
    let name = display_path(path);
    let bytes = read_source(path)?;
    let mut out = Vec::new();
    for raw in split_documents(&bytes) {
        match parse_document(&name, &raw) {
            Err(e) => out.push(Err(e)),
            Ok(None) => {}
            Ok(Some(doc)) => {
                for (p, node) in objects(&doc.root) {
                    out.push(Ok((doc.locate(&p).0, node.to_json())));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rendered_documents_error_does_not_promise_lint() {
        let e = ManifestError::new("f.yaml", Some(1), None, format!("bad{OTHERS_STILL_LINTED}"));
        assert_eq!(e.rendering().message, "bad (the others are still rendered)");
        let other = ManifestError::new("f.yaml", None, None, "unreadable");
        assert_eq!(other.rendering().message, "unreadable");
    }

    fn parse_all(text: &str) -> Vec<Result<Option<Document<'_>>, ManifestError>> {
        split_documents(text.as_bytes())
            .iter()
            .map(|d| parse_document("t.yaml", d))
            .collect()
    }

    #[test]
    fn splits_and_keeps_line_offsets() {
        let text = "# c\n---\na: 1\n---\n\nb:\n  c: 2\n...\n---\n# only a comment\n";
        let docs = split_documents(text.as_bytes());
        assert_eq!(docs.len(), 2);
        let d = parse_document("t", &docs[1]).unwrap().unwrap();
        assert_eq!(
            d.locate(&[Seg::Key("b".into()), Seg::Key("c".into())]),
            (7, 3)
        );
        let d0 = parse_document("t", &docs[0]).unwrap().unwrap();
        assert_eq!(d0.locate(&[Seg::Key("a".into())]), (3, 1));
    }

    #[test]
    fn broken_document_does_not_hide_others() {
        let res = parse_all("a: [1\n---\nb: 2\n---\nc: {d: 1, d: 2}\n");
        assert_eq!(res.len(), 3);
        let e = res[0].as_ref().unwrap_err();
        assert!(e.line.unwrap_or(0) >= 1);
        assert!(res[1].as_ref().unwrap().is_some());
        let dup = res[2].as_ref().unwrap_err();
        assert_eq!(dup.line, Some(5), "{dup}");
        assert!(
            dup.message.to_lowercase().contains("duplicate"),
            "{}",
            dup.message
        );
    }

    #[test]
    fn invalid_utf8_and_binary_are_clear_errors() {
        let mut bytes = b"a: 1\n---\nb: \xff\xfe\n---\nc: 3\n".to_vec();
        let docs = split_documents(&bytes);
        assert_eq!(docs.len(), 3);
        let e = parse_document("f.yaml", &docs[1]).unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("UTF-8"));
        assert!(parse_document("f.yaml", &docs[2]).unwrap().is_some());
        bytes = vec![0u8, 1, 2, 3, 0xff, 0x00, b'\n'];
        let docs = split_documents(&bytes);
        let e = parse_document("bin", &docs[0]).unwrap_err();
        assert!(e.message.contains("binary"));
    }

    #[test]
    fn alias_bomb_and_deep_nesting_are_bounded() {
        with_parse_stack(alias_bomb_and_deep_nesting_body).unwrap();
    }

    fn alias_bomb_and_deep_nesting_body() {
        let mut bomb = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        let names = ["b", "c", "d", "e", "f", "g", "h", "i", "j"];
        let mut prev = "a";
        for n in names {
            bomb.push_str(&format!("{n}: &{n} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"));
            prev = n;
        }
        let res = parse_all(&bomb);
        assert!(res[0].is_err());
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let res = parse_all(&deep);
        assert!(res[0].is_err());
        let deep_block: String = (0..200)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect();
        let res = parse_all(&deep_block);
        assert!(res[0].is_err());
    }

    #[test]
    fn list_items_are_objects() {
        let res = parse_all("kind: List\nitems:\n- kind: A\n- kind: B\n");
        let doc = res[0].as_ref().unwrap().as_ref().unwrap();
        let objs = objects(&doc.root);
        assert_eq!(objs.len(), 2);
        assert_eq!(doc.locate(&objs[1].0), (4, 3));
    }
}

/// Integers spelled as YAML 1.1 writes them, read as Kubernetes reads them:
/// `kubectl` and the API server decode YAML with sigs.k8s.io/yaml over
/// go-yaml v2 (YAML 1.1), whose resolver drops `_` and parses with Go's
/// `strconv.ParseInt(s, 0, 64)`: a leading `0` is octal, `0x`/`0o`/`0b`
/// pick the radix (serde-saphyr's `legacy_octal_numbers`). Known gaps: the
/// upper-case prefixes `0X`/`0O`/`0B`, which Go also accepts, stay text
/// here; and an integral float (`08`, `1e3`), which Kubernetes stores as an
/// integer, is refused in an integer field.
#[cfg(test)]
mod yaml11_integers {
    use super::*;
    use crate::manifest::typed::{ConvertOutcome, TypedObject, convert};

    fn default_mode(spelling: &str) -> Result<Option<i32>, String> {
        let text = format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d}}\nspec:\n  selector: {{}}\n  template:\n    spec:\n      containers: [{{name: c}}]\n      volumes:\n      - name: v\n        configMap: {{name: m, defaultMode: {spelling}}}\n"
        );
        let docs = split_documents(text.as_bytes());
        let doc = parse_document("t.yaml", &docs[0])
            .map_err(|e| e.message)?
            .ok_or("empty")?;
        let (_, node) = objects(&doc.root).into_iter().next().ok_or("no object")?;
        match convert(node) {
            ConvertOutcome::Typed {
                object: TypedObject::Deployment(d),
                ..
            } => Ok(d
                .spec
                .and_then(|s| s.template.spec)
                .and_then(|p| p.volumes)
                .and_then(|v| v.into_iter().next())
                .and_then(|v| v.config_map)
                .and_then(|c| c.default_mode)),
            other => Err(format!("{other:?}")),
        }
    }

    #[test]
    fn spellings_read_as_kubernetes_reads_them() {
        // (spelling, what kubectl apply stores)
        let table = [
            ("420", 420),
            ("0644", 420),
            ("0700", 448),
            ("0o700", 448),
            ("0x1C0", 448),
            ("0b111000000", 448),
            ("+0700", 448),
            ("0_700", 448),
            ("4_4_8", 448),
            ("0", 0),
            ("00", 0),
        ];
        for (spelling, want) in table {
            assert_eq!(default_mode(spelling), Ok(Some(want)), "{spelling}");
        }
    }
}
