use super::{Hit, RollKind, Workload, declare_rule};
use crate::finding::Severity;
use infera_model::catalogue::{Engine, EngineKind, ListenPort};
use k8s_openapi::api::core::v1::Container;
use serde_json::json;

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
    /// A readiness probe on the endpoint that means "serving", on the port
    /// the server listens on — its `--port` (`--http-port` for Triton),
    /// else its env (TGI: `PORT`, or `AIP_HTTP_PORT` in the Google Cloud
    /// builds; NIM: `NIM_SERVER_PORT`), else its default: vLLM `/health`
    /// on 8000, SGLang `/health` on 30000, TGI `/health` on 80, NIM
    /// `/v1/health/ready` on 8000, Triton `/v2/health/ready` on its HTTP
    /// port 8000 (not gRPC's 8001), the infera engine `/ready` on its
    /// readiness port (30090, `timeoutSeconds: 10`) — or manage the worker
    /// with an InferaDeployment. The finding's fix writes that probe.
    RULE, "IR007", "surge-without-readiness", Error,
    "model server rolls surge pods in but has no readiness probe"
}

/// The probe the message suggests and the fix writes: the engine's
/// serving path on the port it listens on, and what said so; None for the
/// port when its flags or env set it to something infera cannot read.
pub(crate) fn suggested_probe(
    w: &Workload<'_>,
    engine: &Engine,
    c: &Container,
) -> (Option<serde_json::Value>, String) {
    let listen = if engine.kind == EngineKind::Infera {
        match w.readiness_port.known() {
            Some(p) => ListenPort::Known {
                port: i32::from(p),
                from: "its readiness port".into(),
            },
            None => ListenPort::Unknown {
                from: "INFERA_READINESS_PORT".into(),
            },
        }
    } else {
        engine.listen_port(c)
    };
    match listen {
        ListenPort::Known { port, from } => {
            let mut probe = json!({"httpGet": {"path": engine.serving_path, "port": port}});
            if engine.kind == EngineKind::Infera {
                // `/ready` asks the engine's `/health` with an 8 s budget (IR010).
                probe["timeoutSeconds"] = json!(10);
            }
            let words = format!(
                "readinessProbe httpGet {} on port {port} ({from})",
                engine.serving_path
            );
            (Some(probe), words)
        }
        ListenPort::Unknown { from } => (
            None,
            format!(
                "readinessProbe httpGet {} on the port the server listens on ({from} sets it, to a value infera cannot read)",
                engine.serving_path
            ),
        ),
    }
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    // Services of an InferaDeployment or a Dynamo graph have their own
    // rules; a role of a serving resource is a workload of its own.
    if w.service.is_some() && w.crd.is_none() {
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
    let (probe, words) = suggested_probe(w, &engine, c);
    let hit = Hit::new(
        &RULE,
        Severity::Error,
        w.main_field(&[]),
        format!(
            "{} ({} container {:?}) {how} but has no readiness probe: each replacement counts Ready at Running, and the serving pod is retired for one still loading weights — nothing serves until the load ends; add {words}",
            w.who(),
            engine.name,
            c.name,
        ),
    );
    out.push(match probe.filter(|_| w.pod_path.is_some()) {
        Some(p) => hit.with_fix(
            format!("add {words} to container {:?}", c.name),
            vec![(w.main_field(&["readinessProbe"]), p)],
        ),
        None => hit,
    });
}
