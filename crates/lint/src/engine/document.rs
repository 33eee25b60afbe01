//! A document's objects and their place (document, path, text, template),
//! each converted to its typed view and, when linting, run through the
//! rules.

use super::summary::{InputError, merge_skipped_kinds, missing_kind, skipped_kind};
use super::{FileResult, Stage};
use crate::finding::Finding;
use crate::options::LintOptions;
use crate::peers::Peers;
use crate::rules::{Around, rule};
use infera_model::dra::Claims;
use infera_model::manifest::{self, ConvertOutcome, Node, Seg};

/// One object of a document with its place, or the document's parse error.
type Item<'n, 'p> = Result<(&'n Node<'n>, &'p Place<'p>), InputError>;

/// Every object of one document, with its place (`claims`: the source's DRA
/// claims, for the rules; `origin`: a rendered document's template), in
/// order; a document that does not parse comes as its error.
pub(super) fn each_object(
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

/// Lint one document of a source; `origin` (a rendered document) moves
/// positions to the template it came from.
pub(super) fn lint_document(
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
pub(super) struct Place<'d> {
    pub(super) document: usize,
    pub(super) base: manifest::Path,
    pub(super) source: Option<(&'d Node<'d>, &'d str)>,
    pub(super) line_offset: usize,
    /// The DRA claims of the same source.
    pub(super) claims: &'d Claims,
    /// For a rendered document: the template file's lines.
    pub(super) origin: Option<&'d manifest::render::Origin>,
}

impl Place<'_> {
    fn full(&self, p: &[Seg]) -> manifest::Path {
        let mut full = self.base.clone();
        full.extend_from_slice(p);
        full
    }

    /// File line/column of a path inside the object ((0, 0) when unknown).
    pub(super) fn locate(&self, p: &[Seg]) -> (usize, usize) {
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
    pub(super) fn fix(&self, hit: crate::rules::HitFix) -> crate::finding::Fix {
        let mut edits = Vec::new();
        let mut complete = self.source.is_some();
        let changes = hit
            .changes
            .into_iter()
            .map(|(path, value)| {
                let full = self.full(&path);
                if let Some((root, text)) = self.source.filter(|_| complete) {
                    match crate::fix::text_edits(root, text, &full, &value) {
                        Some(e) => edits.extend(e),
                        None => complete = false,
                    }
                }
                crate::finding::Change {
                    path: crate::fix::pointer(&full),
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
        crate::finding::Fix {
            description: hit.description,
            document: self.document,
            changes,
            edits,
        }
    }
}

pub(super) fn lint_node(
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
            match skipped_kind(node) {
                Some(k) => merge_skipped_kinds(&mut r.skipped_kinds, &[k]),
                None => r.silent += 1,
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
            collect_placeholders(node, place.source.map(|(_, text)| text), &mut placeholders);
            let namespace = node
                .get("metadata")
                .and_then(|m| m.get("namespace"))
                .and_then(Node::as_str)
                .unwrap_or_default();
            let unjudged = std::cell::RefCell::new(Vec::new());
            let cx = crate::runner::Cx {
                opts,
                capacity,
                claims: place.claims,
                around: Around {
                    peers,
                    namespace,
                    progress: crate::rules::Progress::of(node),
                },
                unjudged: &unjudged,
            };
            let hits = match crate::kinds::lint_typed(object, placeholders, cx) {
                Ok(hits) => hits,
                Err(missing) => {
                    r.objects -= 1;
                    r.skipped += 1;
                    merge_skipped_kinds(&mut r.skipped_kinds, &[missing_kind(node, missing)]);
                    return;
                }
            };
            for (hit, mut object_ref) in hits {
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
            for mut u in unjudged.into_inner() {
                u.file = file.to_string();
                r.unjudged.push(u);
            }
        }
    }
}

/// Placeholders in the fields rules need. `text`, the document's own
/// source when there is one, lets most documents skip the walk.
fn collect_placeholders(node: &Node, text: Option<&str>, out: &mut Vec<(manifest::Path, String)>) {
    if text.is_some_and(|t| !manifest::text_may_hold_placeholder(t)) {
        return;
    }
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
