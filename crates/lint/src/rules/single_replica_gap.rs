use super::{Hit, RollKind, Workload, declare_rule};
use crate::finding::Severity;

declare_rule! {
    /// ## What it does
    /// Flags a plain Deployment with `replicas: 1` that rolls old-pod-first
    /// (maxSurge 0 after upstream rounding) or uses `Recreate`.
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
