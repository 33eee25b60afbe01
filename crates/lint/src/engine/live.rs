//! Live objects (`infera lint --cluster`, the rollout's preflight): wire-form
//! JSON without source spans, with a live node inventory.

use super::capacity::load_capacity;
use super::context::add_peer;
use super::document::{Place, lint_node};
use super::summary::InputError;
use super::{FileResult, LintOutcome, Stage, finish};
use crate::options::LintOptions;
use crate::peers::Peers;
use crate::rules::InventoryNode;
use infera_model::api::INFERA_DEPLOYMENT;
use infera_model::dra::Claims;
use infera_model::manifest::{self, Node};
use infera_model::worker;

/// (namespace, name) of the InferaDeployments among live objects.
fn live_inferadeployments(objects: &[serde_json::Value]) -> Vec<(String, String)> {
    objects
        .iter()
        .filter(|v| v.get("kind").and_then(|k| k.as_str()) == Some(INFERA_DEPLOYMENT.kind))
        .map(|v| {
            let at = |p: &str| {
                v.pointer(p)
                    .and_then(|x| x.as_str())
                    .unwrap_or_default()
                    .to_string()
            };
            (at("/metadata/namespace"), at("/metadata/name"))
        })
        .collect()
}

/// A Deployment or LeaderWorkerSet the infera operator manages for one of
/// `owners` (labels `app.kubernetes.io/managed-by=infera-operator` and
/// `infera.amd.com/deployment=<owner>` in the owner's namespace).
fn rendered_by_linted_owner(v: &serde_json::Value, owners: &[(String, String)]) -> bool {
    let labels = v.pointer("/metadata/labels");
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(|x| x.as_str());
    if label(worker::LABEL_MANAGED_BY) != Some(worker::MANAGED_BY_VALUE) {
        return false;
    }
    let ns = v
        .pointer("/metadata/namespace")
        .and_then(|x| x.as_str())
        .unwrap_or_default();
    label(worker::LABEL_DEPLOYMENT)
        .is_some_and(|owner| owners.iter().any(|(n, o)| n == ns && o == owner))
}

/// Lint live objects (wire-form JSON, no source spans). Deployments and
/// LeaderWorkerSets the operator renders from an InferaDeployment in the same
/// list are skipped: their findings are the CR's.
pub fn lint_objects(
    objects: &[serde_json::Value],
    source: &str,
    opts: &LintOptions,
) -> LintOutcome {
    lint_live(objects, source, opts, None)
}

/// [`lint_objects`] with a live node inventory (`infera lint --cluster`:
/// allocatable and free GPUs per node), which takes the place of
/// `opts.nodes`.
pub fn lint_live(
    objects: &[serde_json::Value],
    source: &str,
    opts: &LintOptions,
    live: Option<Vec<InventoryNode>>,
) -> LintOutcome {
    let mut outcome = LintOutcome::default();
    let capacity = load_capacity(opts, live, &mut outcome.input_errors);
    let mut r = FileResult::default();
    let linted = manifest::with_parse_stack(|| {
        let mut r = FileResult::default();
        let owners = live_inferadeployments(objects);
        let mut claims = Claims::new();
        let mut peers = Peers {
            every_budget: opts.every_budget,
            every_claim: opts.every_claim,
            ..Peers::default()
        };
        let none = Claims::new();
        for (document, v) in objects.iter().enumerate() {
            let place = Place {
                document,
                base: Vec::new(),
                source: None,
                line_offset: 0,
                claims: &none,
                origin: None,
            };
            add_peer(v, &place, &mut claims, &mut peers);
        }
        for (document, v) in objects.iter().enumerate() {
            r.documents += 1;
            if rendered_by_linted_owner(v, &owners) {
                // The operator renders it from an InferaDeployment linted
                // here: one root cause, one finding (on the CR).
                r.skipped += 1;
                continue;
            }
            let node = Node::from_json(v);
            let place = Place {
                document,
                base: Vec::new(),
                source: None,
                line_offset: 0,
                claims: &claims,
                origin: None,
            };
            let context = (&place, &peers);
            lint_node(&node, source, opts, Stage::Lint(&capacity), context, &mut r);
        }
        r
    });
    match linted {
        Ok(done) => r = done,
        Err(e) => r.errors.push(InputError {
            file: source.to_string(),
            line: None,
            column: None,
            message: format!("cannot start the lint thread: {e}"),
        }),
    }
    outcome.summary.files = 0;
    outcome.summary.documents = r.documents;
    outcome.summary.objects = r.objects;
    outcome.summary.skipped = r.skipped;
    outcome.summary.silent = r.silent;
    outcome.summary.skipped_kinds = r.skipped_kinds;
    outcome.summary.unjudged = r.unjudged;
    outcome.findings = r.findings;
    outcome.input_errors = r.errors;
    finish(&mut outcome);
    outcome
}
