use super::{Hit, InventoryNode, RollKind, Slot, Workload, declare_rule, is_placeholder};
use crate::finding::Severity;

declare_rule! {
    /// ## What it does
    /// Flags a surge-first worker whose replacement cannot share a node with
    /// the old pod (required pod anti-affinity on `kubernetes.io/hostname`
    /// matching its own pods, or host ports / `hostNetwork`) while it is not
    /// pinned to one node; or one requesting more than half of a node's GPUs
    /// (the common 8 of 8), which can never share a node with its own
    /// replacement: each surge pod needs a free node of that size while the
    /// old pod runs.
    ///
    /// Serving resources that surge whole units are judged the same way:
    /// a KServe `InferenceService` in Serverless mode starts a new Knative
    /// Revision of `initial-scale` pods beside the serving one (kserve/kserve
    /// `aaac4e2`, `createKnativeService`; knative/serving `98e5ef9`,
    /// `pkg/reconciler/route/traffic/traffic.go`, `addConfigurationTarget`);
    /// a KubeRay `RayService` starts a whole new Ray cluster (ray-project/kuberay
    /// `feeaf72`, `rayservice_controller.go`, `shouldPrepareNewCluster`), and
    /// an AIBrix `RayClusterFleet` surges whole clusters (vllm-project/aibrix
    /// `e3e10f9`, `pkg/controller/rayclusterfleet/util/fleet.go`): each pod of
    /// the cluster's GPU group is a surge pod (`docs/serving-kinds.md`).
    ///
    /// With `--nodes FILE` (allocatable GPUs; the old pods are taken to hold
    /// one such node each) or `--cluster` (live: allocatable minus the
    /// requests of the pods bound to each node, as the rollout preflight
    /// computes it) it says whether such a node exists, and **escalates to an
    /// error** when none can take the surge pod: the rollout would stall.
    ///
    /// ## Why is this bad?
    /// Each surge pod needs a node that none of the workload's pods occupy.
    /// If the cluster has no free node the replacement stays Pending and the
    /// rollout stalls; whether it does depends on cluster state the manifest
    /// does not show.
    ///
    /// ## Severity
    /// Declared a warning: without an inventory whether a free node exists
    /// depends on the cluster. **Escalates to an error** when `--nodes` or
    /// `--cluster` shows that no eligible node can take the surge pod.
    ///
    /// ## Example
    /// ```yaml
    /// extraPodSpec:
    ///   hostNetwork: true
    ///   containers:
    ///     - name: main
    ///       resources: {limits: {amd.com/gpu: 8}}
    /// ```
    ///
    /// ## Use instead
    /// Keep one spare eligible node per concurrently surging pod (infera rolls
    /// one pod at a time), or check with `infera rollout --dry-run`.
    RULE, "IR004", "surge-needs-spare-node", Warning,
    "surge-first, replacement cannot share a node with the old pod (host ports, anti-affinity, > half the node's GPUs): needs a free node"
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    // Pinned pods are IR002's and IR003's (a hostname placeholder pins too).
    if w.roll != RollKind::SurgeFirst || w.pinned_host().is_some() || w.pin_unknown(RULE.code) {
        return;
    }
    let ports = w.host_ports();
    let labels = own_labels(w);
    let anti = w.anti_affine_to_itself(&labels);
    if ports.is_empty() && !anti {
        whole_node(w, out);
        return;
    }
    let why = if !ports.is_empty() {
        format!("it binds host ports {ports:?}")
    } else {
        "its required pod anti-affinity keeps two of its pods off one node".to_string()
    };
    let pods = w.replicas.unwrap_or(1);
    let nodes = i64::from(pods) * i64::from(w.number_of_nodes.unwrap_or(1).max(1)) + 1;
    let path = if !ports.is_empty() && w.pod.host_network == Some(true) {
        w.pod_field(&["hostNetwork"])
    } else if !ports.is_empty() {
        w.main_field(&["ports"])
    } else {
        w.pod_field(&["affinity", "podAntiAffinity"])
    };
    out.push(Hit::new(
        &RULE,
        Severity::Warning,
        path,
        format!(
            "{} rolls surge-first but the replacement cannot share a node with the old pod ({why}): the roll of {pods} pod(s) needs {nodes} eligible nodes, one of them free; without a free node the surge pod stays Pending",
            w.who()
        ),
    ));
}

/// More than half a node's GPUs: the old pod and its replacement never share
/// a node, so each surge pod needs a node with that many GPUs free.
fn whole_node(w: &Workload<'_>, out: &mut Vec<Hit>) {
    if w.unknown(Slot::Gpu, RULE.code) {
        return;
    }
    let Some((resource, gpus)) = w.gpu_request() else {
        return;
    };
    let inventory = w.capacity.inventory.as_deref();
    let cap = |n: &InventoryNode| n.gpus.get(&resource).copied().unwrap_or(0);
    let (node, why_node) = match inventory {
        Some(nodes) => (nodes.iter().map(cap).max().unwrap_or(0), String::new()),
        None => match w.node_gpus() {
            (n, Some(label)) => (
                i64::from(n),
                format!(" (the pod pins `{label}`; `--node-gpus` overrides)"),
            ),
            (n, None) => (i64::from(n), String::new()),
        },
    };
    if gpus <= 0 || 2 * gpus <= node {
        return;
    }
    if inventory.is_some() && w.unknown(Slot::Selector, RULE.code) {
        return;
    }
    let surge = w.max_surge.max(1);
    let need = format!(
        "needs {surge} free node{} with {gpus} {resource} while the old pod runs",
        if surge == 1 { "" } else { "s" }
    );
    let (severity, verdict) = match inventory {
        None => (
            Severity::Warning,
            "whether one exists depends on the cluster (check with `--nodes FILE` or `--cluster`)"
                .to_string(),
        ),
        Some(nodes) => inventory_verdict(w, nodes, &resource, gpus, surge),
    };
    out.push(Hit::new(
        &RULE,
        severity,
        w.main_field(&["resources"]),
        format!(
            "{} requests {gpus} {resource}, more than half of a {node}-GPU node{why_node}, and rolls surge-first: it cannot share a node with its own replacement, so the roll {need}; {verdict}; without one the surge pod stays Pending and the rollout stalls",
            w.who()
        ),
    ));
}

/// Whether the inventory has the free nodes: live free GPUs (`--cluster`)
/// or allocatable GPUs of nodes the old pods do not hold (`--nodes`).
fn inventory_verdict(
    w: &Workload<'_>,
    nodes: &[InventoryNode],
    resource: &str,
    gpus: i64,
    surge: i64,
) -> (Severity, String) {
    let selector: Vec<_> = w
        .pod
        .node_selector
        .iter()
        .flatten()
        .filter(|(_, v)| !is_placeholder(v))
        .collect();
    let eligible = nodes
        .iter()
        .filter(|n| selector.iter().all(|(k, v)| n.labels.get(*k) == Some(*v)));
    let live = nodes.iter().any(|n| n.free.is_some());
    let room = |n: &InventoryNode| {
        let map = if live { n.free.as_ref() } else { Some(&n.gpus) };
        map.and_then(|m| m.get(resource)).copied().unwrap_or(0) >= gpus
    };
    let roomy: Vec<&str> = eligible
        .filter(|n| room(n))
        .map(|n| n.name.as_str())
        .collect();
    let pods = i64::from(w.replicas.unwrap_or(1).max(1))
        * i64::from(w.number_of_nodes.unwrap_or(1).max(1));
    // Static inventory: the old pods hold `pods` of the roomy nodes.
    let (wanted, what) = if live {
        (surge, format!("free now: [{}]", roomy.join(", ")))
    } else {
        (
            pods + surge,
            format!(
                "the inventory has {} eligible node(s) with {gpus} {resource} for {pods} old pod(s) and {surge} surge pod(s): [{}]",
                roomy.len(),
                roomy.join(", ")
            ),
        )
    };
    if (roomy.len() as i64) < wanted {
        (
            Severity::Error,
            format!("{what}, so none can take the surge pod"),
        )
    } else {
        (
            Severity::Warning,
            format!("{what}, so one can as long as it stays free"),
        )
    }
}

fn own_labels(w: &Workload<'_>) -> std::collections::BTreeMap<String, String> {
    let mut labels = std::collections::BTreeMap::new();
    if let Some(service) = &w.service {
        labels.insert(
            infera_model::worker::LABEL_DEPLOYMENT.to_string(),
            w.name.clone(),
        );
        labels.insert(
            infera_model::worker::LABEL_SERVICE.to_string(),
            service.clone(),
        );
        labels.insert(
            infera_model::worker::LABEL_MANAGED_BY.to_string(),
            infera_model::worker::MANAGED_BY_VALUE.to_string(),
        );
    }
    labels.extend(w.pod_labels.clone());
    labels
}
