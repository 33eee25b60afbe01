use super::{Hit, RollKind, Workload, declare_rule};
use crate::finding::Severity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

declare_rule! {
    /// ## What it does
    /// Flags a multi-node worker — an InferaDeployment service with
    /// `numberOfNodes > 1`, a LeaderWorkerSet with `size > 1`, a
    /// DynamoGraphDeployment service with `multinode.nodeCount > 1`, an
    /// `LLMInferenceService` with `worker` (groups of `parallelism` data ÷
    /// dataLocal, else pipeline, pods: kserve/kserve `aaac4e2`,
    /// `pkg/controller/v1alpha2/llmisvc/workload_multi_node.go`,
    /// `expectedMainMultiNodeLWS`), a `NIMService` with `multiNode` (groups
    /// of `parallelism.pipeline` pods, maxSurge 0, maxUnavailable 1:
    /// NVIDIA/k8s-nim-operator `f63f74d`, `manifests/lws.yaml`) — whose
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

/// The fewest groups that keep one up while another is replaced: more
/// than maxUnavailable, re-rounded when it is a percentage (None when no
/// count does, e.g. 100%).
fn groups_for_one_up(w: &Workload<'_>, groups: i32, unavailable: i64) -> Option<i32> {
    let Some(spec) = w
        .max_unavailable_spec
        .as_ref()
        .filter(|v| matches!(v, IntOrString::String(_)))
    else {
        return i32::try_from(unavailable + 1).ok().filter(|&n| n > groups);
    };
    (groups + 1..=groups.saturating_add(64)).find(|&n| {
        let down = infera_model::rolling::scaled_value(spec, i64::from(n), false);
        i64::from(n) - down.max(1) >= 1
    })
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
    let gap = i64::from(groups) - unavailable < 1;
    let fix_to = groups_for_one_up(w, groups, unavailable).filter(|_| gap);
    let (why, advice) = if gap {
        let more = match fix_to {
            Some(n) => format!("run more groups than maxUnavailable (replicas: {n})"),
            None => "lower maxUnavailable below the groups".to_string(),
        };
        (
            format!(
                "{groups} {nodes}-node group(s) rolled with maxUnavailable {unavailable} and maxSurge {}: no group stays up while one is replaced, and no readiness probe can help, because the old group goes before its replacement exists",
                w.max_surge
            ),
            // A serving resource says which of its own fields can surge.
            match &w.crd {
                Some(crd) => format!("{more}, {}", crd.advice),
                None => format!("{more}, or surge a group with a readiness probe"),
            },
        )
    } else if w.max_surge > 0 && unavailable == 0 && !probed {
        (
            format!(
                "{groups} {nodes}-node group(s) rolled by a surge group with no readiness probe: the surge group counts Ready as soon as it runs, and an old group is torn down while it loads"
            ),
            "add a readiness probe to the leader on the endpoint that means serving".to_string(),
        )
    } else {
        return;
    };
    let path = match (&w.crd, w.kind) {
        (Some(crd), _) => crd.replicas.clone().unwrap_or_else(|| crd.field.clone()),
        (None, "InferaDeployment") => w.base_field(&["numberOfNodes"]),
        (None, _) => w.base_field(&["replicas"]),
    };
    // A serving resource's replicas are fixed only where it has the field.
    let replicas_field = match &w.crd {
        Some(crd) => crd.replicas.clone(),
        None => Some(w.base_field(&["replicas"])),
    };
    let hit = Hit::new(
        &RULE,
        Severity::Error,
        path,
        format!(
            "{} is {why}, so {} will have no serving pod for the whole restart of a group; {advice}",
            w.who(),
            w.subject(),
        ),
    );
    // The surge-group case is fixed by a probe on the leader, whose
    // endpoint depends on the engine: no structured fix for it here.
    out.push(match (fix_to, replicas_field) {
        (Some(n), Some(field)) => hit.with_fix(
            format!("set replicas to {n} ({n} groups of {nodes} nodes)"),
            vec![(field, serde_json::json!(n))],
        ),
        _ => hit,
    });
}
