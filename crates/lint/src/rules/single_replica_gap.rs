use super::{Hit, RollKind, Workload, declare_rule};
use crate::finding::Severity;
use infera_model::manifest::node::Seg;

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
    if w.service.is_some() {
        return;
    }
    let field = match w.kind {
        "Deployment" => "strategy",
        "StatefulSet" if w.engine.is_some() => "updateStrategy",
        _ => return,
    };
    let Some(unavailable) = w.max_unavailable else {
        return;
    };
    let Some(replicas) = w.replicas else {
        w.unknown(super::Slot::Count, RULE.code);
        return;
    };
    let left = i64::from(replicas) - unavailable;
    if left >= 1 {
        return;
    }
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
    out.push(Hit::new(
        &RULE,
        Severity::Error,
        vec![Seg::Key("spec".into()), Seg::Key(field.into())],
        format!(
            "{} has {replicas} replica(s) and {how}: replicas − maxUnavailable = {left}, so it may have no serving pod for the whole restart of a replacement; keep maxUnavailable below the replicas (maxSurge 1, maxUnavailable 0) with a readiness probe",
            w.who()
        ),
    ));
}
