use super::{Hit, RollKind, Workload, declare_rule};
use crate::finding::Severity;

declare_rule! {
    /// ## What it does
    /// Flags a multi-node worker — an InferaDeployment service with
    /// `numberOfNodes > 1`, a LeaderWorkerSet with `size > 1`, a
    /// DynamoGraphDeployment service with `multinode.nodeCount > 1` — whose
    /// group rollout may leave no group serving: groups − maxUnavailable < 1
    /// (a LeaderWorkerSet rolls whole groups, maxUnavailable 1 and maxSurge
    /// 0 unless `rolloutStrategy.rollingUpdateConfiguration` says otherwise;
    /// the infera operator's and Dynamo's groups use those defaults), or a
    /// surge group (maxSurge > 0, maxUnavailable 0) with no readiness probe,
    /// which counts Ready as soon as it runs.
    ///
    /// ## Why is this bad?
    /// The only group is torn down before its replacement exists (or before
    /// it has loaded), so the role has nothing serving for the whole restart
    /// of a multi-node engine. A readiness probe does not help when the old
    /// group goes first.
    ///
    /// ## Example
    /// ```yaml
    /// worker:
    ///   numberOfNodes: 2
    ///   replicas: 1
    /// ```
    ///
    /// ## Use instead
    /// Run more groups than maxUnavailable (`replicas: 2`), or a surge group
    /// (`maxSurge: 1, maxUnavailable: 0`) with a readiness probe on the
    /// leader, or schedule the restart in a maintenance window.
    RULE, "IR012", "multinode-gap", Error,
    "a multi-node group rollout may leave no group serving"
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    if w.kind == "InferaDeployment" && !w.worker || w.roll != RollKind::Lws {
        return;
    }
    if w.number_of_nodes.is_some_and(|n| n <= 1) {
        return;
    }
    let (Some(nodes), Some(groups)) = (w.number_of_nodes, w.replicas) else {
        w.unknown(super::Slot::Count, RULE.code);
        return;
    };
    let unavailable = w.max_unavailable.unwrap_or(1);
    let probed = w
        .main_container()
        .is_some_and(|c| c.readiness_probe.is_some());
    let left = i64::from(groups) - unavailable;
    let why = if left < 1 {
        let probe = if probed {
            "its readiness probe cannot help: the old group goes before a replacement exists"
        } else {
            "and it has no readiness probe"
        };
        format!(
            "{groups} {nodes}-node group(s) rolled with maxUnavailable {unavailable} and maxSurge {}: {left} group(s) stay up, {probe}",
            w.max_surge
        )
    } else if w.max_surge > 0 && unavailable == 0 && !probed {
        format!(
            "{groups} {nodes}-node group(s) rolled by a surge group with no readiness probe: the surge group counts Ready as soon as it runs, and an old group is torn down while it loads"
        )
    } else {
        return;
    };
    let path = match w.kind {
        "InferaDeployment" => w.base_field(&["numberOfNodes"]),
        _ => w.base_field(&["replicas"]),
    };
    out.push(Hit::new(
        &RULE,
        Severity::Error,
        path,
        format!(
            "{} is {why}, so {} will have no serving pod for the whole restart of a group; run more groups than maxUnavailable (replicas: {}), or surge a group with a readiness probe",
            w.who(),
            w.role,
            unavailable + 1
        ),
    ));
}
