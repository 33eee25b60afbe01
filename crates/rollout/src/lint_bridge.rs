//! The preflight's view of the lint engine: findings for the live objects,
//! each with the InferaDeployment service it belongs to.

use serde_json::Value;

use super::plan::PlanFinding;
use infera_lint::engine::live::lint_objects;
use infera_lint::options::LintOptions;

/// Lint live objects (no spans) with every rule and keep what the plan
/// shows, rendering InferaDeployments as `generation` (the one the live
/// workers show; the latest when they do not tell). Capacity rules assume
/// 8 GPUs a node; the plan's own capacity column reads the live nodes.
pub fn lint(
    objects: &[Value],
    generation: Option<infera_model::generation::Generation>,
) -> Vec<(PlanFinding, Option<String>)> {
    let options = LintOptions {
        node_gpus: 8,
        nodes: None,
        enabled: Vec::new(),
        threads: 1,
        keep_sources: false,
        operator: generation.unwrap_or_default(),
        ..LintOptions::default()
    };
    lint_objects(objects, "cluster", &options)
        .findings
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
