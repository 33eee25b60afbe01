//! The preflight's view of the lint engine: findings for the live objects,
//! each with the InferaDeployment service it belongs to and its object.

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
) -> Vec<Attached> {
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
        .map(|f| Attached {
            object: object_label(&f.object.kind, &f.object.name),
            service: f.object.service,
            finding: PlanFinding {
                code: f.code.to_string(),
                severity: format!("{:?}", f.severity).to_lowercase(),
                message: f.message,
            },
        })
        .collect()
}

/// A finding of the preflight and where it belongs.
#[derive(Debug, Clone)]
pub struct Attached {
    pub finding: PlanFinding,
    /// The InferaDeployment service, when the object is one.
    pub service: Option<String>,
    /// `deploy/NAME` for a Deployment (as a leg names its workload), else
    /// `Kind/NAME`.
    pub object: String,
}

fn object_label(kind: &str, name: &str) -> String {
    match kind {
        "Deployment" => format!("deploy/{name}"),
        other => format!("{other}/{name}"),
    }
}
