use super::{Around, Hit, Workload, declare_rule};
use crate::finding::Severity;
use infera_model::pdb;

declare_rule! {
    /// ## What it does
    /// Flags a serving worker (a model server, or an InferaDeployment worker
    /// service) that runs one replica and that no PodDisruptionBudget
    /// selects. Reported only where every budget is visible: `lint
    /// --cluster`, which lists the budgets of the namespaces it lints, and
    /// the `infera drain` plan ([`message`],
    /// `infera_model::pdb::unprotected_single_replica`). Never on files: a
    /// manifest set rarely carries every budget of its namespace.
    ///
    /// ## Why is this bad?
    /// A drain, a node-pool upgrade or an autoscaler consolidation evicts
    /// the only pod at once: nothing serves until the replacement has been
    /// scheduled, pulled its image and loaded its weights (minutes). Nothing
    /// warns first, and no rollout is involved, so a surge-first strategy
    /// does not help.
    ///
    /// ## Example
    /// ```yaml
    /// kind: Deployment
    /// spec:
    ///   replicas: 1      # and no PodDisruptionBudget selects its pods
    /// ```
    ///
    /// ## Use instead
    /// Two replicas with a PodDisruptionBudget of `maxUnavailable: 1`, so a
    /// drain keeps one serving; or drain with `infera drain`, which moves
    /// the worker surge-first before the node empties.
    ///
    /// ## What it cannot know
    /// Budgets the linter may not list (it then says so and skips this
    /// rule), and whether the node will ever be drained. A budget that
    /// selects the pod but allows its eviction does not prevent the outage
    /// either; one that never allows it is IR013.
    RULE, "IR014", "single-replica-no-budget", Warning,
    "a single-replica serving worker no PodDisruptionBudget covers: a drain evicts its only pod (live only)"
}

pub fn check(w: &Workload<'_>, around: &Around<'_>, out: &mut Vec<Hit>) {
    if !around.peers.every_budget || !super::budget_blocks_drain::serves(w) {
        return;
    }
    let Some(replicas) = w.replicas else { return };
    let budgets = around.peers.budgets.iter().map(|p| &p.budget);
    if !pdb::unprotected_single_replica(replicas, budgets, around.namespace, &w.pod_labels) {
        return;
    }
    out.push(
        Hit::new(
            &RULE,
            Severity::Warning,
            w.base_field(&["replicas"]),
            message(&w.who()),
        )
        .with_fix(
            "run 2 replicas",
            vec![(w.base_field(&["replicas"]), serde_json::json!(2))],
        ),
    );
}

/// What the rule says of a single-replica serving worker that no budget
/// covers (`who`: how the workload is named); the drain plan says the
/// same.
pub fn message(who: &str) -> String {
    format!(
        "{who} runs one replica and no PodDisruptionBudget selects its pod: a drain, node-pool upgrade or autoscaler consolidation evicts it at once and nothing serves until the replacement has loaded its weights; run 2 replicas with a PodDisruptionBudget of maxUnavailable: 1, or drain with `infera drain`"
    )
}
