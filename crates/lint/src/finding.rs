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
    /// What to change so the finding goes away, when the rule knows one
    /// that is right for this manifest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<Fix>,
}

/// A structured fix: JSON merge patches (RFC 7386) at paths of the
/// document, and the same change as text edits of the file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fix {
    /// What applying it does, in words.
    pub description: String,
    /// 0-based index of the document in the file (of the object in a live
    /// list).
    pub document: usize,
    pub changes: Vec<Change>,
    /// The changes as edits of the file's text; empty for live objects, or
    /// when the YAML's layout is not one infera edits.
    pub edits: Vec<crate::fix::TextEdit>,
}

/// Merge `value` into what is at `path` (a JSON pointer from the
/// document's root): objects merge key by key, `null` removes a key,
/// anything else replaces.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub path: String,
    pub value: serde_json::Value,
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
