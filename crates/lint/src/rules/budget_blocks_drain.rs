use super::{Around, Hit, RollKind, Workload, declare_rule};
use crate::finding::Severity;
use infera_model::pdb;

declare_rule! {
    /// ## What it does
    /// Flags a PodDisruptionBudget that selects the pods of a serving
    /// worker (a model server, or an InferaDeployment worker service) and
    /// never allows a disruption of them, even with every pod healthy:
    /// `minAvailable` at or above the pod count, or `maxUnavailable: 0`
    /// (or `0%`). The arithmetic is the disruption controller's
    /// (`infera_model::pdb`, upstream v1.37.2). The budget comes from the
    /// same input (a file, `-`), or from the cluster under `lint --cluster`.
    /// The finding points at the budget, where the fix goes.
    ///
    /// ## Why is this bad?
    /// The Eviction API refuses every eviction of those pods (429, "Cannot
    /// evict pod as it would violate the pod's disruption budget"), so
    /// `kubectl drain`, a node-pool upgrade, the cluster autoscaler's or
    /// Karpenter's consolidation and GPU-health remediation all block on
    /// that node for as long as the budget stands; someone ends up deleting
    /// the pod by hand, which is the outage the budget was meant to prevent.
    ///
    /// ## Example
    /// ```yaml
    /// kind: PodDisruptionBudget
    /// spec:
    ///   minAvailable: 1          # the Deployment runs 1 replica
    ///   selector: {matchLabels: {app: vllm}}
    /// ```
    ///
    /// ## Use instead
    /// `maxUnavailable: 1` (one pod at a time), and two replicas, so a drain
    /// keeps one serving while the other moves; or `infera drain`, which
    /// moves a single-replica worker surge-first before it evicts.
    ///
    /// ## What it cannot know
    /// Budgets in other files or only in the cluster (lint a directory or
    /// `-` with everything, or `lint --cluster`). The replica count when a
    /// placeholder holds it (IR011 says so), and a HorizontalPodAutoscaler
    /// that changes it. A budget that selects the pods of several
    /// workloads is judged against each workload alone (the controller
    /// counts them together: `minAvailable` may then allow some).
    RULE, "IR013", "budget-blocks-drain", Error,
    "a PodDisruptionBudget never allows a serving worker's pod to be evicted: every drain blocks"
}

pub fn check(w: &Workload<'_>, around: &Around<'_>, out: &mut Vec<Hit>) {
    if !serves(w) {
        return;
    }
    let selecting: Vec<(usize, &pdb::Budget)> = around
        .peers
        .budgets
        .iter()
        .enumerate()
        .map(|(i, peer)| (i, &peer.budget))
        .filter(|(_, b)| b.namespace == around.namespace && pdb::selects(&b.spec, &w.pod_labels))
        .collect();
    if selecting.is_empty() {
        return;
    }
    let Some(pods) = pod_count(w) else {
        w.unknown(super::Slot::Count, RULE.code);
        return;
    };
    for (i, b) in selecting {
        if !pdb::never_allows(&b.spec, pods) {
            continue;
        }
        let hit = Hit::new(
            &RULE,
            Severity::Error,
            w.base_field(&["replicas"]),
            format!(
                "PodDisruptionBudget {} selects the {pods} pod(s) of {} and {}: it never allows an eviction, so every drain, node-pool upgrade and autoscaler consolidation of their nodes blocks until someone deletes the pod by hand; allow one disruption at a time (maxUnavailable: 1){}",
                b.name,
                w.who(),
                why(b, pods),
                if pods < 2 {
                    " and run 2 replicas so a drain keeps one serving"
                } else {
                    ""
                }
            ),
        );
        out.push(Hit {
            at_budget: Some(i),
            ..hit
        });
    }
}

/// A model server's pods, or an InferaDeployment worker that serves.
pub(super) fn serves(w: &Workload<'_>) -> bool {
    if w.kind == "InferaDeployment" {
        w.worker && w.serving
    } else {
        w.engine.is_some()
    }
}

/// The pods a budget may select: replicas, times the nodes of a group for
/// a multi-node worker (the most a budget can count, so `minAvailable` is
/// judged against the most it could allow).
fn pod_count(w: &Workload<'_>) -> Option<i32> {
    let replicas = w.replicas?;
    Some(match (w.roll, w.number_of_nodes) {
        (RollKind::Lws, Some(n)) => replicas.saturating_mul(n.max(1)),
        _ => replicas,
    })
}

/// Why a budget allows nothing, in the manifest's words.
fn why(b: &pdb::Budget, pods: i32) -> String {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let text = |v: &IntOrString| match v {
        IntOrString::Int(n) => n.to_string(),
        IntOrString::String(s) => s.clone(),
    };
    match (&b.spec.max_unavailable, &b.spec.min_available) {
        (Some(max), _) => format!("sets maxUnavailable {}", text(max)),
        (None, Some(min)) => format!("sets minAvailable {} of {pods}", text(min)),
        (None, None) => "allows nothing".to_string(),
    }
}
