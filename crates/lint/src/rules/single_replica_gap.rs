use super::{Hit, RollKind, Workload, declare_rule};
use crate::finding::Severity;
use infera_model::manifest::node::{Path, Seg};

declare_rule! {
    /// ## What it does
    /// Flags a plain Deployment (or a StatefulSet running a model server)
    /// whose rollout may leave no pod serving: replicas − maxUnavailable < 1,
    /// with maxUnavailable rounded as the controller rounds it (a Deployment
    /// rounds a percentage down and takes 1 when maxSurge and maxUnavailable
    /// are both 0; `Recreate` takes every pod; a StatefulSet deletes before
    /// it creates, 1 pod unless `maxUnavailable` says more). Covers
    /// `replicas: 1` with maxSurge 0, with `Recreate`, and with maxSurge 1
    /// *and* maxUnavailable 1.
    ///
    /// Also flags a serving resource whose operator renders such a rollout,
    /// told in the resource's own words and fixed, where a fix exists, in
    /// its own fields (`docs/serving-kinds.md` has each
    /// rendering and its source):
    ///
    /// - `VLLMRuntime` with `deploymentStrategy: Recreate`
    ///   (vllm-project/production-stack `a6c01db`,
    ///   `operator/internal/controller/vllmruntime_controller.go`,
    ///   `deploymentForVLLMRuntime`); fix: `RollingUpdate`.
    /// - `NIMService` with one replica: its Deployment rolls maxSurge 0,
    ///   maxUnavailable 25% (NVIDIA/k8s-nim-operator `f63f74d`,
    ///   `manifests/deployment.yaml`); fix: `replicas: 2`.
    /// - KServe `InferenceService` (RawDeployment/Standard) and
    ///   `LLMInferenceService` Deployments (kserve/kserve `aaac4e2`,
    ///   `createRawDefaultDeployment`, `applyDeploymentRolloutStrategy`);
    ///   fix: `predictor.deploymentStrategy` / `rolloutStrategy` surge-first.
    /// - a preset KAITO `Workspace`: one StatefulSet that deletes before it
    ///   creates (kaito-project/kaito `056b828`,
    ///   `pkg/workspace/inference/preset_inferences.go`,
    ///   `GeneratePresetInference`); no fix.
    /// - AIBrix `StormService` roles and `RayClusterFleet` clusters
    ///   (vllm-project/aibrix `e3e10f9`, `pkg/controller/stormservice/sync.go`
    ///   `rollingUpdate`/`inPlaceUpdate`, `pkg/controller/rayclusterfleet/util/fleet.go`
    ///   `ResolveFenceposts`: absent maxSurge and maxUnavailable are 0, then
    ///   maxUnavailable 1).
    ///
    /// Also flags an InferaDeployment worker service with one replica when
    /// the operator is the one before PR #176 (`--operator pre-176`, or
    /// detected live): it renders every worker Deployment surge-free.
    ///
    /// ## Why is this bad?
    /// The controller may kill the old pods before any replacement is Ready:
    /// nothing serves for the whole restart (image pull plus weight loading,
    /// minutes to hours). A surge pod does not help when the old pod may go
    /// at the same time.
    ///
    /// ## Example
    /// ```yaml
    /// spec:
    ///   replicas: 1
    ///   strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 1}}
    /// ```
    ///
    /// ## Use instead
    /// `rollingUpdate: {maxSurge: 1, maxUnavailable: 0}` with a readiness
    /// probe on the server's serving endpoint, or more replicas than
    /// maxUnavailable.
    RULE, "IR008", "single-replica-gap", Error,
    "the rollout may take every serving pod down before a replacement is Ready"
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    if w.pre_176() {
        pre_176_gap(w, out);
        return;
    }
    if let Some(crd) = &w.crd {
        crd_gap(w, crd, out);
        return;
    }
    if w.service.is_some() {
        return;
    }
    let field = match w.kind {
        "Deployment" => "strategy",
        "StatefulSet" if w.engine.is_some() => "updateStrategy",
        _ => return,
    };
    let Some((replicas, unavailable, left)) = gap(w) else {
        return;
    };
    let how = match (w.kind, w.roll) {
        (_, RollKind::Recreate) => "uses Recreate (every pod first)".to_string(),
        ("StatefulSet", _) => {
            format!("deletes {unavailable} pod(s) before creating each replacement")
        }
        _ => format!(
            "rolls with maxSurge {} and maxUnavailable {unavailable}",
            w.max_surge
        ),
    };
    let hit = Hit::new(
        &RULE,
        Severity::Error,
        vec![Seg::Key("spec".into()), Seg::Key(field.into())],
        format!(
            "{} has {replicas} replica(s) and {how}: replicas − maxUnavailable = {left}, so it may have no serving pod for the whole restart of a replacement; keep maxUnavailable below the replicas (maxSurge 1, maxUnavailable 0) with a readiness probe",
            w.who()
        ),
    );
    out.push(match surge_fix(w, field) {
        Some((description, changes)) => hit.with_fix(description, changes),
        None => hit,
    });
}

/// (replicas, maxUnavailable, replicas − maxUnavailable) when the rollout
/// may leave no pod: fewer than one left, and not scaled to zero (nothing
/// serves before or after, so no gap opens).
fn gap(w: &Workload<'_>) -> Option<(i32, i64, i64)> {
    let unavailable = w.max_unavailable?;
    let Some(replicas) = w.replicas else {
        w.unknown(super::Slot::Count, RULE.code);
        return None;
    };
    let left = i64::from(replicas) - unavailable;
    (replicas != 0 && left < 1).then_some((replicas, unavailable, left))
}

/// The fix: a Deployment rolls surge-first (maxSurge 1, maxUnavailable 0),
/// with the engine's serving probe when it has none (IR007's); a
/// StatefulSet, which cannot surge, runs one replica more than it takes
/// down. None when the surge would only trade the gap for another
/// hazard: no probe that infera can write (the replacement would count
/// Ready at Running), or a pod that cannot share a node with its
/// replacement (IR002/IR004).
fn surge_fix(w: &Workload<'_>, field: &str) -> Option<(String, Vec<(Path, serde_json::Value)>)> {
    use serde_json::json;
    if field == "updateStrategy" {
        let n = w.max_unavailable? + 1;
        return Some((
            format!("run {n} replicas, one more than the rollout takes down"),
            vec![(w.base_field(&["replicas"]), json!(n))],
        ));
    }
    if surge_blocked(w) {
        return None;
    }
    let strategy =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}});
    let mut changes = vec![(w.base_field(&["strategy"]), strategy)];
    let c = w.main_container()?;
    let mut description = "roll surge-first (maxSurge 1, maxUnavailable 0)".to_string();
    if c.readiness_probe.is_none() {
        let engine = w.engine?;
        let (probe, words) = super::surge_without_readiness::suggested_probe(w, &engine, c);
        changes.push((w.main_field(&["readinessProbe"]), probe?));
        description.push_str(&format!(" and add {words}"));
    }
    Some((description, changes))
}

/// True when a surge pod could not share a node with the pod it replaces
/// (more than half the node's GPUs, host ports, one pinned host): a
/// surge-first fix would trade the gap for a stall (IR002/IR004).
fn surge_blocked(w: &Workload<'_>) -> bool {
    let whole_node = w
        .gpu_request()
        .is_some_and(|(_, n)| 2 * n > i64::from(w.node_gpus().0));
    whole_node || !w.host_ports().is_empty() || w.pinned_host().is_some()
}

/// A serving resource whose operator's rollout may take every serving pod
/// down (multi-node groups are IR012's), told in the resource's words;
/// the fix writes the resource's own field, and only when the surge it
/// asks for can land and has a probe (the operator's, or the container's).
fn crd_gap(w: &Workload<'_>, crd: &super::CrdRollout, out: &mut Vec<Hit>) {
    if w.roll == RollKind::Lws {
        return;
    }
    let Some((replicas, unavailable, _)) = gap(w) else {
        return;
    };
    let goes = match crd.unit {
        Some(unit) => {
            format!("with {replicas} {unit}, {unavailable} may go before a replacement is Ready")
        }
        None => "it is replaced old pod first".to_string(),
    };
    let hit = Hit::new(
        &RULE,
        Severity::Error,
        crd.field.clone(),
        format!(
            "{}: {}; {goes}, so it may have no serving pod for the whole restart of a replacement; {}",
            w.who(),
            crd.renders,
            crd.advice
        ),
    );
    let probed = w
        .main_container()
        .is_some_and(|c| c.readiness_probe.is_some());
    let surges = crd.replicas.as_ref().is_none_or(|r| {
        crd.fix
            .as_ref()
            .is_some_and(|(_, changes)| changes.iter().all(|(p, _)| p != r))
    });
    out.push(match &crd.fix {
        Some((description, changes)) if !(surges && (surge_blocked(w) || !probed)) => {
            hit.with_fix(description.clone(), changes.clone())
        }
        _ => hit,
    });
}

/// Before PR #176 every single-node worker Deployment rolls maxSurge 0,
/// maxUnavailable 1: one replica is a certain gap (operator semantics §8).
fn pre_176_gap(w: &Workload<'_>, out: &mut Vec<Hit>) {
    use infera_model::operator::strategy::Strategy;
    if !w.worker || !w.serving || w.strategy != Some(Strategy::OldPodFirst) {
        return;
    }
    match w.replicas {
        Some(1) => {}
        Some(_) => return,
        None => {
            w.unknown(super::Slot::Count, RULE.code);
            return;
        }
    }
    out.push(
        Hit::new(
        &RULE,
        Severity::Error,
        w.base_field(&["replicas"]),
        format!(
            "{} has one replica and the operator before PR #176 rolls every worker surge-free (maxSurge 0, maxUnavailable 1): the old pod is deleted first, so {} has no Ready pod until the replacement has loaded its weights, and its GET /health probe turns Ready before the worker has registered with the router; run 2 replicas, or an operator with PR #176",
            w.who(),
            w.role
        ),
    )
        .with_fix(
            "run 2 replicas",
            vec![(w.base_field(&["replicas"]), serde_json::json!(2))],
        ),
    );
}
