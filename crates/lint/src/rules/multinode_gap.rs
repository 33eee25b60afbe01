use super::{Hit, Workload, declare_rule};
use crate::finding::Severity;

declare_rule! {
    /// ## What it does
    /// Flags a multi-node worker (`numberOfNodes > 1`, a LeaderWorkerSet
    /// group) with a single group (`replicas: 1`).
    ///
    /// ## Why is this bad?
    /// LeaderWorkerSet workers get no readiness probe and roll by the LWS
    /// rolling update (maxUnavailable 1, maxSurge 0): the only group is torn
    /// down before its replacement exists, so the role has nothing serving
    /// for the whole restart of a multi-node engine.
    ///
    /// ## Example
    /// ```yaml
    /// worker:
    ///   numberOfNodes: 2
    ///   replicas: 1
    /// ```
    ///
    /// ## Use instead
    /// Run two groups (`replicas: 2`) so one serves while the other rolls, or
    /// schedule the restart in a maintenance window.
    RULE, "IR012", "multinode-gap", Error,
    "numberOfNodes > 1 with a single group: the group rolls with a gap"
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    if w.service.is_some() && !w.worker {
        return;
    }
    // A plain Deployment has no node count; None elsewhere is a placeholder.
    let nodes = if w.kind == "Deployment" && w.service.is_none() {
        Some(1)
    } else {
        w.number_of_nodes
    };
    if nodes.is_some_and(|n| n <= 1) {
        return;
    }
    let (Some(nodes), Some(replicas)) = (nodes, w.replicas) else {
        w.unknown(super::Slot::Count, RULE.code);
        return;
    };
    if replicas != 1 {
        return;
    }
    let path = if w.service.is_some() {
        w.base_field(&["numberOfNodes"])
    } else {
        w.base_field(&["replicas"])
    };
    out.push(Hit::new(
        &RULE,
        Severity::Error,
        path,
        format!(
            "{} is one {nodes}-node group with no readiness signal: the LeaderWorkerSet rolls it with maxUnavailable 1, so {} will have no serving pod for the whole restart of the group; run 2 groups (replicas: 2)",
            w.who(),
            w.role
        ),
    ));
}
