use super::{Hit, RollKind, Workload, declare_rule};
use crate::finding::Severity;

declare_rule! {
    /// ## What it does
    /// Flags a surge-first worker whose replacement cannot share a node with
    /// the old pod (required pod anti-affinity on `kubernetes.io/hostname`
    /// matching its own pods, or host ports / `hostNetwork`) while it is not
    /// pinned to one node.
    ///
    /// ## Why is this bad?
    /// Each surge pod needs a node that none of the workload's pods occupy.
    /// If the cluster has no free node the replacement stays Pending and the
    /// rollout stalls; whether it does depends on cluster state the manifest
    /// does not show.
    ///
    /// ## Example
    /// ```yaml
    /// extraPodSpec:
    ///   hostNetwork: true
    /// ```
    ///
    /// ## Use instead
    /// Keep one spare eligible node per concurrently surging pod (infera rolls
    /// one pod at a time), or check with `infera rollout --dry-run`.
    RULE, "IR004", "surge-needs-spare-node", Warning,
    "surge-first, replacement cannot share a node with the old pod: needs a free node"
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    if w.roll != RollKind::SurgeFirst
        || w.pinned_host().is_some()
        || w.placeholder_in("nodeSelector")
    {
        return;
    }
    let ports = w.host_ports();
    let labels = own_labels(w);
    let anti = w.anti_affine_to_itself(&labels);
    if ports.is_empty() && !anti {
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

fn own_labels(w: &Workload<'_>) -> std::collections::BTreeMap<String, String> {
    let mut labels = std::collections::BTreeMap::new();
    if let Some(service) = &w.service {
        labels.insert(
            infera_model::operator::LABEL_DEPLOYMENT.to_string(),
            w.name.clone(),
        );
        labels.insert(
            infera_model::operator::LABEL_SERVICE.to_string(),
            service.clone(),
        );
        labels.insert(
            infera_model::operator::LABEL_MANAGED_BY.to_string(),
            infera_model::operator::MANAGED_BY_VALUE.to_string(),
        );
    }
    labels.extend(w.pod_labels.clone());
    labels
}
