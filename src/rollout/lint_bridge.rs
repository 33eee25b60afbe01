//! The preflight's view of the lint engine: findings for the live objects,
//! each with the InferaDeployment service it belongs to.

use serde_json::Value;

use super::plan::PlanFinding;
/// Lint live objects (no spans) and keep what the plan shows.
/// (The engine's `lint_objects` is not in main yet: no findings until it is.)
pub fn lint(objects: &[Value]) -> Vec<(PlanFinding, Option<String>)> {
    let _ = objects;
    let findings: Vec<crate::lint::finding::Finding> = Vec::new();
    findings
        .into_iter()
        .map(|f| {
            (
                PlanFinding {
                    code: f.code.to_string(),
                    severity: format!("{:?}", f.severity).to_lowercase(),
                    message: f.message,
                },
                f.object.service.clone(),
            )
        })
        .collect()
}
