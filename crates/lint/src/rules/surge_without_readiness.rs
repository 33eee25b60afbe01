use super::{Hit, RollKind, Workload, declare_rule};
use crate::finding::Severity;

declare_rule! {
    /// ## What it does
    /// Flags a plain Deployment or LeaderWorkerSet running the infera engine
    /// whose strategy surges with maxUnavailable 0 but whose main container
    /// has no readiness probe.
    ///
    /// ## Why is this bad?
    /// Without a probe a pod counts Ready the moment its containers run. The
    /// rollout retires the serving pod for one that is still loading weights:
    /// the Ready count never drops, yet nothing routable is left while the
    /// replacement loads — a silent outage.
    ///
    /// ## Example
    /// ```yaml
    /// kind: Deployment
    /// spec:
    ///   replicas: 1   # default strategy: maxSurge 25% → 1, maxUnavailable 0
    ///   template: {spec: {containers: [{name: engine, command: [python3, -m, infera.engine.sglang]}]}}
    /// ```
    ///
    /// ## Use instead
    /// Add `readinessProbe: {httpGet: {path: /ready, port: 30090}}`, or manage
    /// the worker with an InferaDeployment.
    RULE, "IR007", "surge-without-readiness", Error,
    "plain workload surges with maxUnavailable 0 but has no readiness probe"
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    if w.service.is_some() || !w.worker || w.roll != RollKind::SurgeFirst {
        return;
    }
    let Some(c) = w.main_container() else { return };
    if c.readiness_probe.is_some() {
        return;
    }
    out.push(Hit::new(
        &RULE,
        Severity::Error,
        w.main_field(&[]),
        format!(
            "{} surges with maxUnavailable 0 but has no readiness probe: each replacement counts Ready at Running, and the serving pod is retired for one still loading weights — zero routable workers until it registers; add readinessProbe httpGet /ready on port {}",
            w.who(),
            w.readiness_port.known().unwrap_or(infera_model::operator::DEFAULT_READINESS_PORT)
        ),
    ));
}
