//! Node inventory and live free capacity, for the rollout preflight ("is
//! there room for the surge pod right now?"). The fit predicate itself
//! (selectors, affinity, host ports, taints) is `infera_model::scheduling::fit`;
//! this module fetches what it needs and does the resource arithmetic.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Api;
use kube::api::ListParams;

use super::{ClusterError, Connection};

/// Resource name → amount in milli-units (`cpu: 500m` → 500,
/// `memory: 1Gi` → 1073741824000, `amd.com/gpu: 8` → 8000).
pub type ResourceList = BTreeMap<String, i128>;

/// Parse a Kubernetes quantity into milli-units (the scheduler's parser).
pub use infera_model::worker::parse_quantity_milli as parse_quantity;

fn add_quantities(into: &mut ResourceList, from: Option<&BTreeMap<String, Quantity>>) {
    for (name, q) in from.into_iter().flatten() {
        if let Some(v) = parse_quantity(&q.0) {
            *into.entry(name.clone()).or_insert(0) += v;
        }
    }
}

/// The requests the scheduler charges a pod (containers, init containers, overhead).
pub use infera_model::scheduling::pod_requests;

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

/// The answer to "is there room for this pod right now?".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SurgeRoom {
    /// Nodes the pod fits on now.
    pub fits_on: Vec<String>,
    /// Nodes it does not fit on, and why.
    pub unfit: Vec<(String, Vec<infera_model::scheduling::UnfitReason>)>,
    /// When it fits nowhere: the FailedScheduling message the scheduler
    /// would write (`0/2 nodes are available: 2 Insufficient amd.com/gpu.`).
    pub message: Option<String>,
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

    /// Whether some node has room for `pod` right now, by the scheduler's
    /// predicates (`infera_model::scheduling::fit_pod`: resources, selectors and
    /// affinity, host ports, taints, anti-affinity, node readiness).
    pub fn room_for(&self, pod: &Pod) -> SurgeRoom {
        let all: Vec<&Pod> = self.pods.iter().collect();
        let mut fits_on = Vec::new();
        let mut unfit = Vec::new();
        for node in &self.nodes {
            let name = node.metadata.name.clone().unwrap_or_default();
            let on_node = self.pods_on(&name);
            match infera_model::scheduling::fit_pod(pod, node, &on_node, &all) {
                Ok(()) => fits_on.push(name),
                Err(reasons) => unfit.push((name, reasons)),
            }
        }
        let message = (fits_on.is_empty()).then(|| {
            let counts =
                infera_model::scheduling::count_reasons(unfit.iter().map(|(_, r)| r.as_slice()));
            infera_model::scheduling::failed_scheduling_message(self.nodes.len(), &counts)
        });
        SurgeRoom {
            fits_on,
            unfit,
            message,
        }
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

        // Room for one more 2-GPU pod, not for a 4-GPU one.
        let mut surge = pod("surge", "", "2", "Pending");
        if let Some(spec) = surge.spec.as_mut() {
            spec.node_name = None;
        }
        assert_eq!(inv.room_for(&surge).fits_on, ["gpu-1"]);
        let mut big = pod("big", "", "4", "Pending");
        if let Some(spec) = big.spec.as_mut() {
            spec.node_name = None;
        }
        let room = inv.room_for(&big);
        assert!(room.fits_on.is_empty());
        assert_eq!(
            room.message.as_deref(),
            Some("0/1 nodes are available: 1 Insufficient amd.com/gpu.")
        );
    }
}
