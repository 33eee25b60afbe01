//! `infera policy`: lint's rules as ValidatingAdmissionPolicies
//! (admissionregistration.k8s.io/v1), evaluated by the API server itself.
//!
//! For each kind lint reads, one policy per action: the rules (or the
//! severities of a rule) at or above `--fail-on` in a policy whose binding
//! denies, the others in one whose binding warns; both audit. Which rules
//! are enforced, and why the others cannot be, is [`coverage::COVERAGE`].

pub mod cases;
pub mod cel;
pub mod coverage;
pub mod kinds;

use infera_lint::finding::Severity;
use infera_model::generation::Generation;
use serde_json::{Value, json};

pub use coverage::{COVERAGE, Coverage};
pub use kinds::{Check, Target};

/// The severity from which a finding is refused (`--fail-on`, as lint's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailOn {
    Warning,
    #[default]
    Error,
    /// Nothing is refused: every rule warns.
    Never,
}

/// What the bindings do (`--action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Action {
    /// Deny at or above `--fail-on`, warn below; audit both.
    #[default]
    Severity,
    /// Warn and audit only (a dry run in production).
    Warn,
}

/// What to generate.
#[derive(Debug, Clone, Copy, Default)]
pub struct PolicyOptions {
    pub generation: Generation,
    pub fail_on: FailOn,
    pub action: Action,
}

/// How a binding acts on the validations of its policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bucket {
    Deny,
    Warn,
}

impl Bucket {
    fn suffix(self) -> &'static str {
        match self {
            Bucket::Deny => "deny",
            Bucket::Warn => "warn",
        }
    }

    fn actions(self) -> [&'static str; 2] {
        match self {
            Bucket::Deny => ["Deny", "Audit"],
            Bucket::Warn => ["Warn", "Audit"],
        }
    }
}

/// The bucket a check at `severity` goes to under `opts`.
pub fn bucket(severity: Severity, opts: &PolicyOptions) -> Bucket {
    let denies = match (opts.action, opts.fail_on) {
        (Action::Warn, _) | (_, FailOn::Never) => false,
        (Action::Severity, FailOn::Warning) => true,
        (Action::Severity, FailOn::Error) => severity == Severity::Error,
    };
    if denies { Bucket::Deny } else { Bucket::Warn }
}

/// One policy as the tests evaluate it: the target's variables and match
/// conditions, and its checks in one bucket.
#[derive(Debug, Clone)]
pub struct Policy {
    pub name: String,
    pub target: Target,
    pub bucket: Bucket,
    pub checks: Vec<Check>,
}

/// Every policy, in kind order, deny before warn; empty ones left out.
pub fn policies(opts: &PolicyOptions) -> Vec<Policy> {
    let mut out = Vec::new();
    for target in kinds::targets(opts.generation) {
        for b in [Bucket::Deny, Bucket::Warn] {
            let checks: Vec<Check> = target
                .checks
                .iter()
                .filter(|c| bucket(c.severity, opts) == b)
                .cloned()
                .collect();
            if checks.is_empty() {
                continue;
            }
            out.push(Policy {
                name: format!("infera-lint-{}-{}", target.resource, b.suffix()),
                target: target.clone(),
                bucket: b,
                checks,
            });
        }
    }
    out
}

/// The message of a refused or warned object: the rule, what it means and
/// what to write instead.
pub fn message(check: &Check) -> String {
    let meta = infera_lint::rules::rule(check.code);
    let (name, summary) = meta.map_or(("", ""), |m| (m.name, m.summary));
    let fix = match coverage::coverage(check.code) {
        Some(Coverage::Enforced { fix }) => fix,
        _ => "",
    };
    let severity = match check.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    format!(
        "{} {name} ({severity}): {summary}; {fix} (`infera rules {}`; to accept it, annotate the object infera.amd.com/lint-ignore: \"{}\")",
        check.code, check.code, check.code
    )
}

/// The CEL that names the object in front of [`message`].
pub fn message_expression(check: &Check) -> String {
    format!(
        "object.kind + ' ' + object.metadata.name + ': ' + {}",
        cel::lit(&message(check))
    )
}

fn policy_object(p: &Policy, opts: &PolicyOptions) -> Value {
    let t = &p.target;
    let validations: Vec<Value> = p
        .checks
        .iter()
        .map(|c| {
            json!({
                "expression": format!("!({})", c.condition),
                "message": message(c),
                "messageExpression": message_expression(c),
                "reason": "Invalid",
            })
        })
        .collect();
    let mut spec = json!({
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [{
            "apiGroups": [t.group],
            "apiVersions": ["*"],
            "resources": [t.resource],
            "operations": ["CREATE", "UPDATE"],
        }]},
        "validations": validations,
    });
    if !t.match_conditions.is_empty() {
        spec["matchConditions"] = t
            .match_conditions
            .iter()
            .map(|(name, e)| json!({"name": name, "expression": e}))
            .collect();
    }
    if !t.variables.is_empty() {
        spec["variables"] = t
            .variables
            .iter()
            .map(|(name, e)| json!({"name": name, "expression": e}))
            .collect();
    }
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {
            "name": p.name,
            "labels": labels(opts),
            "annotations": {NOT_ENFORCED_ANNOTATION: not_enforced()},
        },
        "spec": spec,
    })
}

/// The annotation on every policy naming the rules lint checks that the
/// policy cannot, and why.
pub const NOT_ENFORCED_ANNOTATION: &str = "infera.amd.com/not-enforced";

fn not_enforced() -> String {
    coverage::unenforced()
        .iter()
        .map(|(code, reason)| format!("{code}: {reason}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn labels(opts: &PolicyOptions) -> Value {
    json!({
        "app.kubernetes.io/managed-by": "infera",
        "infera.amd.com/operator-generation": opts.generation.as_str(),
    })
}

/// Every ValidatingAdmissionPolicy and its ValidatingAdmissionPolicyBinding.
pub fn objects(opts: &PolicyOptions) -> Vec<Value> {
    let mut out = Vec::new();
    for p in policies(opts) {
        out.push(policy_object(&p, opts));
        out.push(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": p.name, "labels": labels(opts)},
            "spec": {"policyName": p.name, "validationActions": p.bucket.actions()},
        }));
    }
    out
}

#[cfg(test)]
mod tests;
