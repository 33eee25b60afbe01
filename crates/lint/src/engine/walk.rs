//! The path walk: files, directories and `-` grouped into units by the
//! name reports give them, each unit linted in turn on the pool.

use std::path::Path as FsPath;

use super::rendered::{lint_by_origin, lint_rendered};
use super::summary::{InputError, merge_skipped_kinds};
use super::{
    FileOutcome, FileResult, LintOutcome, Stage, finding_lines, finish, lint_bytes, outcome,
};
use crate::options::LintOptions;
use infera_model::manifest;

/// Files (and input errors) that share a name in reports.
pub(super) struct Unit {
    name: String,
    files: Vec<manifest::Input>,
    errors: Vec<InputError>,
}

/// Expand the paths and group them, with the input errors known before any
/// file is read, by the name reports give them, in name order.
pub(super) fn units(paths: &[std::path::PathBuf], mut pre: Vec<InputError>) -> Vec<Unit> {
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
pub(super) fn lint_unit(u: &Unit, opts: &LintOptions, stage: Stage<'_>) -> Vec<FileOutcome> {
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
    into.silent += f.silent;
    into.unjudged.extend(f.unjudged);
    merge_skipped_kinds(&mut into.skipped_kinds, &f.skipped_kinds);
    into.findings.extend(f.findings);
    into.input_errors.extend(f.input_errors);
    into.sources.extend(f.sources);
}

pub(super) fn collect_paths(
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
    if let Err(e) = crate::pool::drive(
        &units,
        crate::pool::thread_count(opts.threads),
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
