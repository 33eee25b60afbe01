//! Helm charts and Kustomize directories: rendered by their tool, linted as
//! the objects they render, each finding placed in the template file and
//! line the object came from (`infera_model::manifest::render`).

use std::path::Path as FsPath;

use super::context::context;
use super::document::lint_document;
use super::summary::{InputError, SkippedInput};
use super::{FileOutcome, FileResult, Stage, finding_lines, outcome};
use crate::options::LintOptions;
use infera_model::manifest;

/// Lint what `renderer` renders from `dir`: the directory's own outcome
/// (a skip when the tool is missing, an input error when it fails), and
/// one outcome per file the rendered objects came from, in name order.
pub(super) fn lint_rendered(
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
pub(super) fn lint_by_origin(
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
