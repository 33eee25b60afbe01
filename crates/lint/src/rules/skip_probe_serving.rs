use super::{Hit, Workload, declare_rule};
use crate::finding::Severity;

declare_rule! {
    /// ## What it does
    /// Flags `skipReadinessProbe: true` on an InferaDeployment worker that
    /// serves: its main container starts `infera.engine.*`, or it uses the
    /// flat fields (the operator then writes that entrypoint itself).
    /// Idle-deployed workers (`sleep`, `sshd`, `mn-idle.sh` entrypoints) are exempt.
    ///
    /// ## Why is this bad?
    /// Without the injected `/ready` probe the operator rolls the worker
    /// old-pod-first (maxSurge 0, maxUnavailable 1): the serving pod is killed
    /// before its replacement exists, and the replacement counts as Ready the
    /// moment its containers run, minutes before weights are loaded. With one
    /// replica the role has nothing serving for the whole restart.
    ///
    /// ## Example
    /// ```yaml
    /// decode:
    ///   componentType: worker
    ///   role: decode
    ///   skipReadinessProbe: true
    /// ```
    ///
    /// ## Operator generation
    /// Before PR #176 the operator rolls every worker old-pod-first, probe
    /// or not; removing `skipReadinessProbe` then brings back its own
    /// `GET /health` probe (Ready once weights are loaded), and the roll
    /// stays old-pod-first (IR008 reports the single-replica gap).
    ///
    /// ## Use instead
    /// Remove `skipReadinessProbe` (or set it to `false`): the operator injects
    /// `httpGet /ready` on the readiness port and rolls surge-first.
    RULE, "IR001", "skip-probe-serving", Error,
    "skipReadinessProbe: true on a worker that serves"
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    if w.service.is_none() || !w.worker || !w.serving || !w.skip_readiness_probe {
        return;
    }
    let gap = match w.replicas {
        Some(1) => format!(
            "{} will have no serving pod for the whole restart of its replacement (image pull + weight loading + barrier)",
            w.role
        ),
        Some(n) => format!(
            "{} drops to {} serving pods while each replacement restarts, and each replacement counts Ready minutes before it has loaded weights",
            w.role,
            n - 1
        ),
        None => format!(
            "{} loses a serving pod for each replacement's whole restart",
            w.role
        ),
    };
    if w.pre_176() {
        out.push(Hit::new(
            &RULE,
            Severity::Error,
            w.base_field(&["skipReadinessProbe"]),
            format!(
                "skipReadinessProbe drops the operator's GET /health probe from {}: each replacement counts Ready the moment its containers run, minutes before it has loaded weights, and {gap}; remove skipReadinessProbe (the operator before PR #176 still rolls it old-pod-first)",
                w.who()
            ),
        ));
        return;
    }
    let caveat = surge_caveat(w);
    let hit = Hit::new(
        &RULE,
        Severity::Error,
        w.base_field(&["skipReadinessProbe"]),
        format!(
            "skipReadinessProbe makes the operator roll {} old-pod-first: {gap}; remove skipReadinessProbe so the operator injects the /ready probe and rolls surge-first{caveat}",
            w.who(),
        ),
    );
    // Where surge-first would stall (the caveat), removing the key trades
    // the gap for a stall: no structured fix.
    out.push(if caveat.is_empty() {
        hit.with_fix(
            "remove skipReadinessProbe",
            vec![(
                w.base.clone(),
                serde_json::json!({"skipReadinessProbe": null}),
            )],
        )
    } else {
        hit
    });
}

/// What surge-first will then run into on a pinned pod (IR002/IR003's
/// stalls), so the fix does not trade the gap for a stall.
fn surge_caveat(w: &Workload<'_>) -> String {
    let Some((host, _)) = w.pinned_host() else {
        return String::new();
    };
    let ports = w.host_ports();
    let whole = w
        .gpu_request()
        .is_some_and(|(_, n)| n > i64::from(w.node_gpus().0) - n);
    let why = match (ports.is_empty(), whole) {
        (false, _) => format!("the old pod holds host ports {ports:?} there"),
        (true, true) => "the old pod holds more than half of its GPUs".to_string(),
        (true, false) => return String::new(),
    };
    format!(
        "; but it is pinned to {} and {why}, so surge-first would stall forever (IR002/IR003): allow a second node as well",
        Workload::pin_phrase(&host)
    )
}
