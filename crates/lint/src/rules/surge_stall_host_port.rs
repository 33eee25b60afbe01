use super::{Hit, RollKind, Workload, declare_rule};
use crate::finding::Severity;

declare_rule! {
    /// ## What it does
    /// Flags a surge-first worker that binds host ports (`hostNetwork: true`
    /// turns every container port into a host port, or an explicit
    /// `hostPort`) while pinned to one node. A placeholder hostname
    /// (`<NODE>`, `${NODE}`, `{{ .Values.node }}`) still pins to one node.
    ///
    /// ## Why is this bad?
    /// The replacement must land on the same node as the old pod, where its
    /// ports are taken: it stays Pending (`node(s) didn't have free ports for
    /// the requested pod ports`) and the rollout never finishes.
    ///
    /// ## Example
    /// ```yaml
    /// extraPodSpec:
    ///   hostNetwork: true
    ///   nodeSelector: {kubernetes.io/hostname: gpu-7}
    /// ```
    ///
    /// ## Use instead
    /// Allow a second node (a pool label), or drop `hostNetwork` if your CNI
    /// exposes the RDMA rail.
    RULE, "IR003", "surge-stall-host-port", Error,
    "surge-first with host ports, pinned to one node"
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    if w.roll != RollKind::SurgeFirst {
        return;
    }
    let ports = w.host_ports();
    if ports.is_empty() {
        return;
    }
    // A hostname placeholder still pins to one node; only a placeholder
    // standing for the whole node selection might pin an unpinned pod.
    let Some((host, _)) = w.pinned_host() else {
        w.pin_unknown(RULE.code);
        return;
    };
    let path = if w.pod.host_network == Some(true) {
        w.pod_field(&["hostNetwork"])
    } else {
        w.main_field(&["ports"])
    };
    out.push(Hit::new(
        &RULE,
        Severity::Error,
        path,
        format!(
            "{} rolls surge-first but the replacement will stay Pending forever: it is pinned to {}, where the old pod holds host ports {ports:?}; allow a second node or stop binding host ports",
            w.who(),
            Workload::pin_phrase(&host)
        ),
    ));
}
