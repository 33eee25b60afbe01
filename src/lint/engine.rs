//! The lint engine: paths → documents → typed views → rules → findings.
//! (Owned by the `core` work; `lint::run` and the printers call only this.)
//!
//! Interface contract (keep these names; add fields freely):

use std::path::PathBuf;

use serde::Serialize;

use super::finding::{Finding, Severity};

/// What the rules need to know that is not in the manifests.
#[derive(Debug, Clone, Default)]
pub struct LintOptions {
    /// GPUs per node assumed when no inventory is given (default 8).
    pub node_gpus: u32,
    /// Node inventory (`--nodes FILE`), if given.
    pub nodes: Option<PathBuf>,
    /// Rule codes to run (after config/--select/--ignore); empty = all.
    pub enabled: Vec<&'static str>,
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
    /// The source text of every file with findings, for code frames
    /// (path as reported → text). Only files with findings are kept.
    pub sources: std::collections::BTreeMap<String, String>,
}

/// One rule's metadata, as `infera rules` prints it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct RuleMeta {
    pub code: &'static str,
    pub name: &'static str,
    pub default_severity: Severity,
    /// One line: when it fires.
    pub summary: &'static str,
    /// The rule's doc comment (Markdown: What it does / Why is this bad? /
    /// Example / Use instead).
    pub doc: &'static str,
}
