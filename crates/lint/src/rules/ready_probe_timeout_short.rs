use super::{Hit, Workload, declare_rule};
use crate::finding::Severity;
use infera_model::manifest::node::Seg;
use infera_model::worker::READY_PATH;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

declare_rule! {
    /// ## What it does
    /// Flags a `/ready` readiness probe of the infera engine whose
    /// `timeoutSeconds` is 8 or less (the Kubernetes default is 1). Only the
    /// container that runs the infera engine (the engine catalogue's
    /// reading), or the main container probed on the readiness port (30090
    /// unless `INFERA_READINESS_PORT` says otherwise), counts: a sidecar's
    /// own `/ready` (AIBrix's `aibrix-runtime` on 8080, say) has other
    /// semantics.
    ///
    /// ## Why is this bad?
    /// Each `/ready` request also asks the engine's `/health`, with an 8 s
    /// budget. A shorter probe timeout fails healthy-but-busy workers: they
    /// flap NotReady under load and a rollout waits on them for nothing.
    ///
    /// ## Example
    /// ```yaml
    /// readinessProbe:
    ///   httpGet: {path: /ready, port: 30090}
    ///   timeoutSeconds: 5
    /// ```
    ///
    /// ## Use instead
    /// `timeoutSeconds: 10` (what the operator injects), or omit the probe.
    RULE, "IR010", "ready-probe-timeout-short", Warning,
    "a /ready probe with timeoutSeconds <= 8"
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    for (i, c) in w.pod.containers.iter().enumerate() {
        let Some(p) = &c.readiness_probe else {
            continue;
        };
        let Some(h) = &p.http_get else { continue };
        // The infera engine's `/ready`: its container, or the main container
        // probed on the readiness port — not a sidecar's own `/ready`.
        let on_readiness_port = matches!(
            (&h.port, w.readiness_port.known()),
            (IntOrString::Int(p), Some(r)) if *p == i32::from(r)
        );
        let infera = infera_model::catalogue::runs_infera(c)
            || i == w.main && (w.worker || on_readiness_port);
        if !infera {
            continue;
        }
        if h.path.as_deref() != Some(READY_PATH) {
            continue;
        }
        let timeout = p.timeout_seconds.unwrap_or(1);
        if timeout > 8 {
            continue;
        }
        let probe_path = w.pod_path.as_ref().map(|pp| {
            let mut path = pp.clone();
            path.push(Seg::Key("containers".into()));
            path.push(Seg::Index(i));
            path.push(Seg::Key("readinessProbe".into()));
            path
        });
        let path = match &probe_path {
            Some(pp) if p.timeout_seconds.is_some() => {
                let mut path = pp.clone();
                path.push(Seg::Key("timeoutSeconds".into()));
                path
            }
            Some(pp) => pp.clone(),
            None => w.base.clone(),
        };
        let hit = Hit::new(
            &RULE,
            Severity::Warning,
            path,
            format!(
                "{}: the /ready probe of container {:?} times out after {timeout} s, but /ready may spend 8 s asking the engine's /health: busy workers will flap NotReady and a rollout waits on them; set timeoutSeconds: 10",
                w.who(),
                c.name
            ),
        );
        out.push(match probe_path {
            Some(pp) => hit.with_fix(
                format!(
                    "set timeoutSeconds: 10 on the /ready probe of container {:?}",
                    c.name
                ),
                vec![(pp, serde_json::json!({"timeoutSeconds": 10}))],
            ),
            None => hit,
        });
    }
}
