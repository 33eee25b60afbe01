use super::{Around, Hit, RollKind, Workload, declare_rule};
use crate::finding::Severity;
use infera_model::manifest::node::Seg;
use infera_model::volume::{self, Reach};

declare_rule! {
    /// ## What it does
    /// Flags a surge-first serving worker (maxUnavailable 0: the old pod
    /// stays until its replacement is Ready) that mounts a
    /// PersistentVolumeClaim the replacement cannot attach while the old
    /// pod holds it:
    /// - a `ReadWriteOncePod` claim: one pod in the whole cluster;
    /// - a `ReadWriteOnce` claim when the replacement must land on another
    ///   node: a required pod anti-affinity on its own labels per hostname,
    ///   a GPU request of more than half a node, or a host port
    ///   (`hostPort`, `hostNetwork`).
    ///
    /// The access mode is read from the claim in the same input, or from
    /// the live claim (`lint --cluster`; a bound claim's volume modes).
    ///
    /// ## Why is this bad?
    /// The surge pod waits for the volume ("Multi-Attach error for volume
    /// … Volume is already used by pod(s) …", or unschedulable for a
    /// ReadWriteOncePod claim in use), the old pod waits for the surge pod
    /// to be Ready, and the roll stalls until someone deletes the old pod:
    /// then the role has no pod until the replacement has loaded its
    /// weights.
    ///
    /// ## Severity
    /// Declared an error: the claim's access mode is known.
    /// **Lowered to a warning** when the claim is neither in the input nor live and the
    /// replacement must land on another node: a `ReadWriteOnce` claim (the
    /// default of most storage classes) stalls it.
    ///
    /// ## Example
    /// ```yaml
    /// strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
    /// template:
    ///   spec:
    ///     containers: [{resources: {limits: {nvidia.com/gpu: 8}}}]
    ///     volumes: [{name: weights, persistentVolumeClaim: {claimName: weights}}]
    /// # kind: PersistentVolumeClaim … accessModes: [ReadWriteOnce]
    /// ```
    ///
    /// ## Use instead
    /// A `ReadOnlyMany` or `ReadWriteMany` claim for the weights (they are
    /// only read), a generic ephemeral volume (one claim per pod), or an
    /// image or node-local cache. Rolling old-pod-first instead trades the
    /// stall for a gap (IR008).
    ///
    /// ## What it cannot know
    /// A claim in another file (lint it with the workload, or `lint
    /// --cluster`); a CSI driver that attaches a ReadWriteOnce volume to
    /// several nodes anyway; whether the scheduler would place the surge
    /// pod on the old pod's node when nothing forces it elsewhere (then a
    /// ReadWriteOnce claim attaches, and the rule stays quiet).
    RULE, "IR015", "surge-volume-attach", Error,
    "surge-first worker with a claim its replacement cannot attach while the old pod holds it"
}

pub fn check(w: &Workload<'_>, around: &Around<'_>, out: &mut Vec<Hit>) {
    if w.roll != RollKind::SurgeFirst || !super::budget_blocks_drain::serves(w) {
        return;
    }
    for (index, name) in volume::mounted_claims(w.pod) {
        let claim = around.peers.claim(around.namespace, name);
        let reach = claim.and_then(|c| c.reach);
        let forced = forced_move(w);
        let (severity, what) = match (reach, &forced) {
            (Some(Reach::OnePod), _) => (
                Severity::Error,
                "ReadWriteOncePod: no second pod may use it".to_string(),
            ),
            (Some(Reach::OneNode), Some(why)) => (
                Severity::Error,
                format!(
                    "ReadWriteOnce: only pods of one node may use it, and the replacement must land on another node ({why})"
                ),
            ),
            // Unknown (not in the input, no modes): a ReadWriteOnce claim,
            // the common default, would stall it; a live list that lacks
            // it means the claim does not exist (the pod cannot start).
            (None, Some(why)) if claim.is_none() && !around.peers.every_claim => (
                Severity::Warning,
                format!(
                    "not in the input, so its access mode is unknown; if it is ReadWriteOnce (the default of most storage classes) the replacement, which must land on another node ({why}), cannot attach it"
                ),
            ),
            _ => continue,
        };
        let path = match &w.pod_path {
            Some(_) => {
                let mut p = w.pod_field(&["volumes"]);
                p.push(Seg::Index(index));
                p
            }
            None => w.base.clone(),
        };
        out.push(Hit::new(
            &RULE,
            severity,
            path,
            format!(
                "{} rolls surge-first and mounts claim {name}, {what}: the surge pod waits for the volume while the old pod waits for it to be Ready, and the roll stalls; use a ReadOnlyMany or ReadWriteMany claim for the weights or a generic ephemeral volume",
                w.who()
            ),
        ));
    }
}

/// Why the replacement cannot land on the old pod's node, if it cannot.
fn forced_move(w: &Workload<'_>) -> Option<String> {
    if w.pinned_host().is_some() {
        // Pinned to one node: the replacement lands beside the old pod
        // (or nowhere: IR002/IR003), so a ReadWriteOnce volume attaches.
        return None;
    }
    if w.anti_affine_to_itself(&w.pod_labels) {
        return Some("a required pod anti-affinity on its own labels per hostname".into());
    }
    let ports = w.host_ports();
    if let Some(port) = ports.first() {
        return Some(if w.pod.host_network == Some(true) {
            format!("hostNetwork, port {port}")
        } else {
            format!("host port {port}")
        });
    }
    let (node_gpus, _) = w.node_gpus();
    match w.gpu_request() {
        Some((name, n)) if 2 * n > i64::from(node_gpus) => Some(format!(
            "{n} {name} of the node's {node_gpus}: two such pods do not fit on one node"
        )),
        _ => None,
    }
}
