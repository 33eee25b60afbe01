//! One finding: the single stream every printer (human, JSON, SARIF, GitHub)
//! renders. Rules produce these; nothing else does.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

/// Where in which object a finding is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectRef {
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
    /// The InferaDeployment service, when the object is one.
    pub service: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Stable code, `IR001`..
    pub code: &'static str,
    /// Stable kebab-case name, `skip-probe-serving`..
    pub name: &'static str,
    pub severity: Severity,
    /// What will happen during a rollout, and how to fix it.
    pub message: String,
    /// Path as given on the command line (`-` for stdin).
    pub file: String,
    /// 1-based line and column of the offending field.
    pub line: usize,
    pub column: usize,
    pub object: ObjectRef,
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
