//! Helm charts and Kustomize directories: rendered by their tool, linted
//! as the objects they render, each finding placed in the template file
//! and line the object came from (`infera_model::manifest::render`).

use std::collections::BTreeMap;
use std::path::Path;

use infera_model::dra::Claims;
use infera_model::manifest::{self, render};

use super::engine::{
    FileOutcome, FileResult, InputError, LintOptions, SkippedInput, Stage, finding_lines,
    lint_document, source_claims,
};

/// Lint what `renderer` renders from `dir`: the directory's own outcome
/// (a skip when the tool is missing, an input error when it fails), and
/// one outcome per file the rendered objects came from, in name order.
pub(crate) fn lint_rendered(
    renderer: render::Renderer,
    dir: &Path,
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
        Err(render::Unrendered::NoTool) => {
            let flag = match renderer {
                render::Renderer::Helm => "--helm or INFERA_HELM",
                render::Renderer::Kustomize => "--kubectl or INFERA_KUBECTL",
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
        Err(render::Unrendered::Failed(said)) => {
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
    let claims = match stage {
        Stage::Lint(_) => source_claims(&name, &bytes),
        Stage::Load => Claims::new(),
    };
    let mut by_file: BTreeMap<String, (FileResult, Option<String>)> = BTreeMap::new();
    for raw in manifest::split_documents(&bytes) {
        let text = String::from_utf8_lossy(raw.bytes);
        let origin = render::origin(renderer, dir, &text);
        let (r, source) = by_file.entry(origin.file.clone()).or_default();
        lint_document(&origin.file, &raw, opts, stage, (&claims, Some(&origin)), r);
        if source.is_none() {
            *source = origin.text;
        }
    }
    let files = by_file
        .into_iter()
        .map(|(file, (r, text))| {
            let sources = match text {
                Some(t) if opts.keep_sources && !r.findings.is_empty() => {
                    finding_lines(t.as_bytes(), &r.findings)
                }
                _ => Default::default(),
            };
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
        })
        .collect();
    (head, files)
}
