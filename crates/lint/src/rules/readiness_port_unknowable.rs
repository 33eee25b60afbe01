use super::{Hit, Workload, declare_rule};
use crate::finding::Severity;
use infera_model::worker::{READINESS_PORT_ENV, ReadinessPort};

declare_rule! {
    /// ## What it does
    /// Flags `INFERA_READINESS_PORT` set from `valueFrom`, or to a literal the
    /// operator rejects: anything but a plain base-10 integer in 1..65535
    /// (whitespace, `_`, `0`, `70000`, `abc`; a leading `+` is fine).
    ///
    /// ## Why is this bad?
    /// The operator cannot know the port, so it injects no readiness probe
    /// and rolls the worker old-pod-first. The worker's own parser (Python
    /// `int()`) is looser, so it still binds a port nobody probes.
    ///
    /// ## Severity
    /// Declared an error: with one replica (or on a plain workload) the role
    /// has no serving pod for the whole restart. **Lowered to a warning** on
    /// an InferaDeployment service with more than one replica (or a
    /// placeholder count), where each replacement costs one serving pod but
    /// the role keeps serving, as IR005 rates the same old-pod-first roll.
    ///
    /// ## Example
    /// ```yaml
    /// env:
    ///   - {name: INFERA_READINESS_PORT, value: " 30090"}
    /// ```
    ///
    /// ## Operator generation
    /// Not reported for an operator before PR #176: it never reads the
    /// variable (its probe is `/health` on the engine port).
    ///
    /// ## Use instead
    /// ```yaml
    /// env:
    ///   - {name: INFERA_READINESS_PORT, value: "30090"}
    /// ```
    RULE, "IR006", "readiness-port-unknowable", Error,
    "INFERA_READINESS_PORT from valueFrom, or a literal the operator rejects"
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    if !w.worker || !w.serving || w.skip_readiness_probe || w.pre_176() {
        return;
    }
    let why = match &w.readiness_port {
        ReadinessPort::ValueFrom => "is set from valueFrom".to_string(),
        ReadinessPort::Rejected { raw } => {
            format!("is {raw:?}, which the operator's parser rejects")
        }
        _ => return,
    };
    let path = env_path(w);
    let severity = if w.replicas == Some(1) || w.service.is_none() {
        Severity::Error
    } else {
        Severity::Warning
    };
    out.push(Hit::new(
        &RULE,
        severity,
        path,
        format!(
            "{}: {READINESS_PORT_ENV} {why}, so the operator cannot know the readiness port, injects no /ready probe and rolls old-pod-first: {} loses its serving pod for each replacement's restart; set it to a plain integer like \"30090\"",
            w.who(),
            w.role
        ),
    ));
}

fn env_path(w: &Workload<'_>) -> infera_model::manifest::node::Path {
    use infera_model::manifest::node::Seg;
    let env = w.main_container().and_then(|c| c.env.as_ref());
    let idx = env.and_then(|e| e.iter().position(|v| v.name == READINESS_PORT_ENV));
    match (&w.pod_path, idx) {
        (Some(_), Some(i)) => {
            let mut p = w.main_field(&["env"]);
            p.push(Seg::Index(i));
            p
        }
        _ => w.base_field(&["env"]),
    }
}
