use super::{Hit, RollKind, Workload, declare_rule};
use crate::finding::Severity;
use infera_model::engine::{Engine, EngineKind};

declare_rule! {
    /// ## What it does
    /// Flags a plain Deployment whose main container runs
    /// a model server the engine catalogue knows (vLLM, SGLang, TGI, NIM,
    /// Triton, the infera engine) and rolls surge pods in (maxSurge > 0
    /// after upstream rounding) with no readiness probe on that container.
    /// (A LeaderWorkerSet's surge groups are IR012's; a StatefulSet never
    /// surges.)
    ///
    /// ## Why is this bad?
    /// Without a probe a pod counts Ready the moment its containers run. The
    /// rollout retires the serving pod for one that is still loading weights:
    /// the Ready count never drops, yet nothing routable is left while the
    /// replacement loads — a silent outage. With maxUnavailable > 0 as well
    /// (the default 25% of 4 or more replicas), every old pod goes within
    /// seconds.
    ///
    /// ## Example
    /// ```yaml
    /// kind: Deployment
    /// spec:
    ///   replicas: 1   # default strategy: maxSurge 25% → 1, maxUnavailable 0
    ///   template: {spec: {containers: [{name: vllm, command: [vllm, serve, my/model]}]}}
    /// ```
    ///
    /// ## Use instead
    /// A readiness probe on the endpoint that means "serving": vLLM
    /// `httpGet /v1/models` on 8000 (or `/health`), SGLang `/health_generate`
    /// on 30000, TGI `/health`, NIM `/v1/health/ready` on 8000, Triton
    /// `/v2/health/ready` on 8000, the infera engine `/ready` on its
    /// readiness port (30090) — or manage the worker with an InferaDeployment.
    RULE, "IR007", "surge-without-readiness", Error,
    "model server rolls surge pods in but has no readiness probe"
}

/// The port a probe should use: the container's first declared port, else
/// the engine's default (the infera engine: its readiness port).
fn probe_port(w: &Workload<'_>, engine: &Engine) -> i32 {
    if engine.kind == EngineKind::Infera {
        return w
            .readiness_port
            .known()
            .map_or(engine.default_port, i32::from);
    }
    w.main_container()
        .and_then(|c| c.ports.as_ref()?.first().map(|p| p.container_port))
        .unwrap_or(engine.default_port)
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    if w.service.is_some() {
        return;
    }
    let Some(engine) = w.engine else { return };
    let how = match w.roll {
        RollKind::SurgeFirst => "surges with maxUnavailable 0".to_string(),
        RollKind::SurgeOrRetire => format!(
            "rolls with maxSurge {} and maxUnavailable {}",
            w.max_surge,
            w.max_unavailable.unwrap_or(1)
        ),
        _ => return,
    };
    let Some(c) = w.main_container() else { return };
    if c.readiness_probe.is_some() {
        return;
    }
    out.push(Hit::new(
        &RULE,
        Severity::Error,
        w.main_field(&[]),
        format!(
            "{} ({} container {:?}) {how} but has no readiness probe: each replacement counts Ready at Running, and the serving pod is retired for one still loading weights — nothing serves until the load ends; add readinessProbe httpGet {} on port {}",
            w.who(),
            engine.name,
            c.name,
            engine.serving_path,
            probe_port(w, &engine)
        ),
    ));
}
