//! Node inventory and live free capacity, for the rollout preflight ("is
//! there room for the surge pod right now?"). The fit predicate itself
//! (selectors, affinity, host ports, taints) is `crate::scheduling::fit`;
//! this module fetches what it needs and does the resource arithmetic.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Api;
use kube::api::ListParams;

use super::{ClusterError, Connection};

/// Resource name → amount in milli-units (`cpu: 500m` → 500,
/// `memory: 1Gi` → 1073741824000, `amd.com/gpu: 8` → 8000).
pub type ResourceList = BTreeMap<String, i128>;

/// Parse a Kubernetes quantity into milli-units, rounding sub-milli values
/// up (as the scheduler does). `None` for a malformed quantity.
pub fn parse_quantity(q: &str) -> Option<i128> {
    let q = q.trim();
    if q.is_empty() {
        return None;
    }
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(q.len());
    let (number, suffix) = q.split_at(split);
    let (mantissa_exp10, mul_num): (i32, i128) = match suffix {
        "" => (0, 1),
        "n" => (-9, 1),
        "u" => (-6, 1),
        "m" => (-3, 1),
        "k" => (3, 1),
        "M" => (6, 1),
        "G" => (9, 1),
        "T" => (12, 1),
        "P" => (15, 1),
        "E" => (18, 1),
        "Ki" => (0, 1 << 10),
        "Mi" => (0, 1 << 20),
        "Gi" => (0, 1 << 30),
        "Ti" => (0, 1 << 40),
        "Pi" => (0, 1 << 50),
        "Ei" => (0, 1 << 60),
        s if s.starts_with(['e', 'E']) => (s.get(1..)?.parse::<i32>().ok()?, 1),
        _ => return None,
    };
    let negative = number.starts_with('-');
    let digits = number.trim_start_matches(['+', '-']);
    let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    if !int_part
        .chars()
        .chain(frac_part.chars())
        .all(|c| c.is_ascii_digit())
    {
        return None;
    }
    // value = int.frac × 10^exp × mul, in milli-units: × 10^3.
    let all_digits: String = format!("{int_part}{frac_part}");
    let mut value: i128 = all_digits.trim_start_matches('0').parse().unwrap_or(0);
    let mut exp10 = mantissa_exp10 + 3 - frac_part.len() as i32;
    value = value.checked_mul(mul_num)?;
    while exp10 > 0 {
        value = value.checked_mul(10)?;
        exp10 -= 1;
    }
    let mut rounded_up = false;
    while exp10 < 0 {
        if value % 10 != 0 {
            rounded_up = true;
        }
        value /= 10;
        exp10 += 1;
    }
    if rounded_up {
        value += 1;
    }
    Some(if negative { -value } else { value })
}

fn add_quantities(into: &mut ResourceList, from: Option<&BTreeMap<String, Quantity>>) {
    for (name, q) in from.into_iter().flatten() {
        if let Some(v) = parse_quantity(&q.0) {
            *into.entry(name.clone()).or_insert(0) += v;
        }
    }
}

/// The requests the scheduler charges a pod: the sum over its containers,
/// at least the largest init container's, plus the pod overhead.
pub fn pod_requests(spec: &PodSpec) -> ResourceList {
    let mut sum = ResourceList::new();
    for c in &spec.containers {
        add_quantities(
            &mut sum,
            c.resources.as_ref().and_then(|r| r.requests.as_ref()),
        );
    }
    for init in spec.init_containers.iter().flatten() {
        let mut one = ResourceList::new();
        add_quantities(
            &mut one,
            init.resources.as_ref().and_then(|r| r.requests.as_ref()),
        );
        for (k, v) in one {
            let e = sum.entry(k).or_insert(0);
            *e = (*e).max(v);
        }
    }
    add_quantities(&mut sum, spec.overhead.as_ref());
    sum
}

fn pod_is_terminal(p: &Pod) -> bool {
    matches!(
        p.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded") | Some("Failed")
    )
}

/// One node's allocatable, requested and free resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeCapacity {
    pub node: String,
    pub allocatable: ResourceList,
    pub requested: ResourceList,
    /// allocatable − requested (may be negative if overcommitted).
    pub free: ResourceList,
    pub pods: usize,
}

/// Nodes and the non-terminal pods bound to them, fetched in two list
/// requests (nodes; pods of every namespace).
#[derive(Debug, Clone, Default)]
pub struct NodeInventory {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
}

impl NodeInventory {
    /// List nodes and every bound, non-terminal pod (cluster-wide: needs the
    /// `infera-capacity` ClusterRole of `infera rbac`).
    pub async fn fetch(conn: &Connection) -> Result<Self, ClusterError> {
        let nodes: Api<Node> = Api::all(conn.client.clone());
        let pods: Api<Pod> = Api::all(conn.client.clone());
        let nodes = nodes
            .list(&ListParams::default())
            .await
            .map_err(|e| ClusterError::from_kube(&e, &conn.url, "list", "nodes", None))?
            .items;
        let pods = pods
            .list(&ListParams::default())
            .await
            .map_err(|e| ClusterError::from_kube(&e, &conn.url, "list", "pods", None))?
            .items
            .into_iter()
            .filter(|p| !pod_is_terminal(p))
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
            .collect();
        Ok(NodeInventory { nodes, pods })
    }

    /// From objects already in hand (tests, the simulator's store).
    pub fn from_objects(nodes: Vec<Node>, pods: Vec<Pod>) -> Self {
        NodeInventory {
            nodes,
            pods: pods.into_iter().filter(|p| !pod_is_terminal(p)).collect(),
        }
    }

    /// Pods bound to `node`.
    pub fn pods_on(&self, node: &str) -> Vec<&Pod> {
        self.pods
            .iter()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node))
            .collect()
    }

    /// Allocatable minus the requests of the pods bound there, per node.
    pub fn capacity(&self) -> Vec<NodeCapacity> {
        self.nodes
            .iter()
            .map(|n| {
                let name = n.metadata.name.clone().unwrap_or_default();
                let mut allocatable = ResourceList::new();
                add_quantities(
                    &mut allocatable,
                    n.status.as_ref().and_then(|s| s.allocatable.as_ref()),
                );
                let on_node = self.pods_on(&name);
                let mut requested = ResourceList::new();
                for p in &on_node {
                    if let Some(spec) = &p.spec {
                        for (k, v) in pod_requests(spec) {
                            *requested.entry(k).or_insert(0) += v;
                        }
                    }
                }
                let mut free = allocatable.clone();
                for (k, v) in &requested {
                    *free.entry(k.clone()).or_insert(0) -= v;
                }
                NodeCapacity {
                    node: name,
                    allocatable,
                    requested,
                    free,
                    pods: on_node.len(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_in_milli_units() {
        assert_eq!(parse_quantity("500m"), Some(500));
        assert_eq!(parse_quantity("2"), Some(2000));
        assert_eq!(parse_quantity("1.5"), Some(1500));
        assert_eq!(parse_quantity("1Gi"), Some(1_073_741_824_000));
        assert_eq!(parse_quantity("1k"), Some(1_000_000));
        assert_eq!(parse_quantity("1e3"), Some(1_000_000));
        assert_eq!(parse_quantity("1n"), Some(1)); // rounded up
        assert_eq!(parse_quantity("abc"), None);
        assert_eq!(parse_quantity("1Xi"), None);
        assert_eq!(parse_quantity(""), None);
    }

    #[test]
    fn free_is_allocatable_minus_bound_requests() {
        let node: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "gpu-1"},
            "status": {"allocatable": {"amd.com/gpu": "8", "cpu": "64", "memory": "512Gi"}}
        }))
        .unwrap();
        let pod = |name: &str, node: &str, gpus: &str, phase: &str| -> Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "a"},
                "spec": {"nodeName": node, "containers": [{"name": "m",
                    "resources": {"requests": {"amd.com/gpu": gpus, "cpu": "4"}}}]},
                "status": {"phase": phase}
            }))
            .unwrap()
        };
        let inv = NodeInventory::from_objects(
            vec![node],
            vec![
                pod("w1", "gpu-1", "4", "Running"),
                pod("w2", "gpu-1", "2", "Pending"),
                pod("done", "gpu-1", "8", "Succeeded"),
                pod("elsewhere", "gpu-2", "8", "Running"),
            ],
        );
        let cap = inv.capacity();
        assert_eq!(cap.len(), 1);
        assert_eq!(cap[0].free.get("amd.com/gpu"), Some(&2000));
        assert_eq!(cap[0].free.get("cpu"), Some(&56_000));
        assert_eq!(cap[0].pods, 2);
    }
}
