use super::{Hit, RollKind, Workload, declare_rule};
use crate::finding::Severity;

declare_rule! {
    /// ## What it does
    /// Flags a worker that rolls surge-first although no node it may land on
    /// can hold the old pod and the replacement at once: pinned to one host
    /// (`nodeSelector` `kubernetes.io/hostname`, or required node affinity to
    /// one host) with a GPU request larger than the node's GPUs minus that
    /// request. With `--nodes`, any selector is checked against the inventory.
    ///
    /// ## Why is this bad?
    /// Surge-first creates the replacement before retiring the old pod. If
    /// the replacement cannot fit, it stays Pending forever
    /// (`FailedScheduling: Insufficient amd.com/gpu`) and the rollout never
    /// finishes on its own.
    ///
    /// ## Example
    /// ```yaml
    /// extraPodSpec:
    ///   nodeSelector: {kubernetes.io/hostname: gpu-7}
    ///   containers:
    ///     - name: main
    ///       resources: {limits: {amd.com/gpu: 8}}
    /// ```
    ///
    /// ## Use instead
    /// Let the worker land on any of several GPU nodes (a pool label instead
    /// of a hostname), keep a spare node in the pool, or request at most half
    /// the node's GPUs.
    RULE, "IR002", "surge-stall-gpu", Error,
    "surge-first, but no eligible node can hold the old pod and the replacement at once"
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    if w.roll != RollKind::SurgeFirst
        || w.placeholder_in("nodeSelector")
        || w.placeholder_in("resources")
    {
        return;
    }
    let Some((resource, gpus)) = w.gpu_request() else {
        return;
    };
    if gpus <= 0 {
        return;
    }
    let pinned = w.pinned_host();
    if let Some(inventory) = &w.capacity.inventory {
        let selector = w.pod.node_selector.clone().unwrap_or_default();
        let eligible: Vec<_> = inventory
            .iter()
            .filter(|n| selector.iter().all(|(k, v)| n.labels.get(k) == Some(v)))
            .filter(|n| pinned.as_ref().is_none_or(|(h, _)| &n.name == h))
            .collect();
        let cap = |n: &super::InventoryNode| n.gpus.get(&resource).copied().unwrap_or(0);
        let roomy = eligible.iter().filter(|n| cap(n) >= gpus).count();
        let fits = eligible.iter().any(|n| cap(n) >= 2 * gpus) || roomy >= 2;
        if fits {
            return;
        }
        let path = pinned
            .map(|(_, p)| p)
            .unwrap_or_else(|| w.main_field(&["resources"]));
        let names: Vec<_> = eligible
            .iter()
            .map(|n| format!("{} ({} {resource})", n.name, cap(n)))
            .collect();
        out.push(Hit::new(
            &RULE,
            Severity::Error,
            path,
            format!(
                "{} rolls surge-first but the replacement will stay Pending forever: it needs {gpus} {resource} beside the old pod's {gpus}, and the eligible nodes are [{}]; widen the node selection or keep a spare node",
                w.who(),
                names.join(", ")
            ),
        ));
        return;
    }
    let Some((host, path)) = pinned else { return };
    let node = i64::from(w.capacity.node_gpus);
    if gpus > node - gpus {
        out.push(Hit::new(
            &RULE,
            Severity::Error,
            path,
            format!(
                "{} rolls surge-first but the replacement will stay Pending forever: node {host} has {node} GPUs and the old pod holds {gpus}; pin to a pool label instead of one hostname, or request at most {} GPUs",
                w.who(),
                node / 2
            ),
        ));
    }
}
