use super::{Hit, Workload, declare_rule};
use crate::finding::Severity;
use infera_model::pod::container_probed_on_readiness_port;

declare_rule! {
    /// ## What it does
    /// Flags a worker whose main container has a readiness probe that is not
    /// `httpGet /ready` on the integer readiness port: `/health`, a named
    /// port, a `tcpSocket` or `exec` probe.
    ///
    /// ## Why is this bad?
    /// Only `/ready` on the readiness port means "weights loaded, PD barrier
    /// passed, registered". The operator does not count any other probe as
    /// one: it rolls the worker old-pod-first, and a `/health` probe turns
    /// Ready before the worker is routable.
    ///
    /// ## Severity
    /// Declared a warning. **Escalates to an error** on an InferaDeployment
    /// service with exactly one replica: old-pod-first then leaves the role
    /// with no serving pod for the whole restart, the gap IR001 reports as an
    /// error too.
    ///
    /// ## Operator generation
    /// Before PR #176 the operator's own probe is `GET /health` on the
    /// engine port, and it rolls every worker old-pod-first whatever the
    /// probe: that probe (injected or written out) is not reported; IR008
    /// reports the gap and that Ready comes before registration.
    ///
    /// ## Example
    /// ```yaml
    /// readinessProbe:
    ///   httpGet: {path: /health, port: 30000}
    /// ```
    ///
    /// ## Use instead
    /// Delete the hand-written probe (the operator injects the right one), or
    /// write `httpGet: {path: /ready, port: 30090}` with the readiness port as
    /// an integer.
    RULE, "IR005", "probe-not-registration", Warning,
    "a readiness probe that is not httpGet /ready on the integer readiness port"
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    if !w.worker || !w.serving {
        return;
    }
    let Some(c) = w.main_container() else { return };
    let Some(probe) = &c.readiness_probe else {
        return;
    };
    if container_probed_on_readiness_port(c) || operators_own_health_probe(w, probe) {
        return;
    }
    let what = if let Some(h) = &probe.http_get {
        let port = match &h.port {
            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(n) => n.to_string(),
            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s) => {
                format!("named port {s:?}")
            }
        };
        format!("httpGet {} on {port}", h.path.as_deref().unwrap_or("/"))
    } else if probe.tcp_socket.is_some() {
        "a tcpSocket probe".to_string()
    } else if probe.exec.is_some() {
        "an exec probe".to_string()
    } else {
        "a probe".to_string()
    };
    let port = w.readiness_port.describe();
    let (severity, outcome) = if w.service.is_some() {
        match w.replicas {
            Some(1) => (
                Severity::Error,
                format!(
                    "the operator rolls it old-pod-first, so {} will have no serving pod for the whole restart of its replacement",
                    w.role
                ),
            ),
            _ => (
                Severity::Warning,
                "the operator rolls it old-pod-first, one serving pod fewer per replacement"
                    .to_string(),
            ),
        }
    } else {
        (
            Severity::Warning,
            "pods count Ready before they are registered with the router".to_string(),
        )
    };
    let hit = Hit::new(
        &RULE,
        severity,
        w.main_field(&["readinessProbe"]),
        format!(
            "{}: the readiness probe is {what}, not httpGet /ready on the readiness port {port}: it does not mean \"registered\", and {outcome}; remove it or probe httpGet /ready on the readiness port",
            w.who()
        ),
    );
    out.push(match (w.readiness_port.known(), &w.pod_path) {
        (Some(ready), Some(_)) => {
            // Only one handler may be set; `/ready` needs 10 s (IR010).
            let mut probe = serde_json::json!({
                "httpGet": {"path": infera_model::worker::READY_PATH, "port": ready},
                "tcpSocket": null, "exec": null, "grpc": null,
            });
            if probe_timeout(c) <= 8 {
                probe["timeoutSeconds"] = serde_json::json!(10);
            }
            hit.with_fix(
                format!("probe httpGet /ready on the readiness port {ready}"),
                vec![(w.main_field(&["readinessProbe"]), probe)],
            )
        }
        _ => hit,
    });
}

fn probe_timeout(c: &k8s_openapi::api::core::v1::Container) -> i32 {
    c.readiness_probe
        .as_ref()
        .and_then(|p| p.timeout_seconds)
        .unwrap_or(1)
}

/// Before #176: `GET /health` on the engine port is the probe the operator
/// injects itself (operator semantics §8).
fn operators_own_health_probe(w: &Workload<'_>, probe: &k8s_openapi::api::core::v1::Probe) -> bool {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let Some(http) = probe.http_get.as_ref() else {
        return false;
    };
    let declared = |port: i32| {
        w.main_container()
            .and_then(|c| c.ports.as_ref())
            .is_some_and(|ps| ps.iter().any(|p| p.container_port == port))
    };
    w.pre_176()
        && http.path.as_deref() == Some(infera_model::generation::HEALTH_PATH)
        && matches!(http.port, IntOrString::Int(port) if declared(port))
}
