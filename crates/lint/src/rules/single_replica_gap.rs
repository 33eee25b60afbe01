use super::{Hit, RollKind, Workload, declare_rule};
use crate::finding::Severity;

declare_rule! {
    /// ## What it does
    /// Flags a plain Deployment with `replicas: 1` that rolls old-pod-first
    /// (maxSurge 0 after upstream rounding) or uses `Recreate`.
    ///
    /// Also flags an InferaDeployment worker service with one replica when
    /// the operator is the one before PR #176 (`--operator pre-176`, or
    /// detected live): it renders every worker Deployment surge-free.
    ///
    /// ## Why is this bad?
    /// The only pod is killed before its replacement exists: nothing serves
    /// for the whole restart (image pull plus weight loading, minutes to hours).
    ///
    /// ## Example
    /// ```yaml
    /// spec:
    ///   replicas: 1
    ///   strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}
    /// ```
    ///
    /// ## Use instead
    /// `rollingUpdate: {maxSurge: 1, maxUnavailable: 0}` with a `/ready`
    /// readiness probe.
    RULE, "IR008", "single-replica-gap", Error,
    "plain Deployment with one replica rolling old-pod-first or Recreate"
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    if w.pre_176() {
        pre_176_gap(w, out);
        return;
    }
    if w.kind != "Deployment" {
        return;
    }
    let how = match w.roll {
        RollKind::OldPodFirst => "rolls old-pod-first (maxSurge 0)",
        RollKind::Recreate => "uses Recreate",
        _ => return,
    };
    match w.replicas {
        Some(1) => {}
        Some(_) => return,
        None => {
            w.unknown(super::Slot::Count, RULE.code);
            return;
        }
    }
    out.push(Hit::new(
        &RULE,
        Severity::Error,
        vec![infera_model::manifest::node::Seg::Key("spec".into()), infera_model::manifest::node::Seg::Key("strategy".into())],
        format!(
            "{} has one replica and {how}: it will have no serving pod for the whole restart of its replacement; use maxSurge 1, maxUnavailable 0 with a /ready readiness probe",
            w.who()
        ),
    ));
}

/// Before PR #176 every single-node worker Deployment rolls maxSurge 0,
/// maxUnavailable 1: one replica is a certain gap (operator semantics §8).
fn pre_176_gap(w: &Workload<'_>, out: &mut Vec<Hit>) {
    use infera_model::operator::Strategy;
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
    out.push(Hit::new(
        &RULE,
        Severity::Error,
        w.base_field(&["replicas"]),
        format!(
            "{} has one replica and the operator before PR #176 rolls every worker surge-free (maxSurge 0, maxUnavailable 1): the old pod is deleted first, so {} has no Ready pod until the replacement has loaded its weights, and its GET /health probe turns Ready before the worker has registered with the router; run 2 replicas, or an operator with PR #176",
            w.who(),
            w.role
        ),
    ));
}
