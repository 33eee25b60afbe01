//! The scenario's nodes, kept alive as a kubelet keeps its node: created
//! with their capacity, labels and taints, a `Ready` condition whose
//! `lastHeartbeatTime` is renewed every minute, and a Lease in
//! `kube-node-lease` renewed every 10 s (real time), so a real
//! node-lifecycle controller keeps them Ready. A server that does not serve
//! Leases (the embedded simulator) gets the Node heartbeats only.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::{SIMULATED_NODE_LABEL, Shared, WorldError, ok_if_gone, retry, status_code};
use infera_sim_scenario::Scenario;

const LEASE_NAMESPACE: &str = "kube-node-lease";
const LEASE_RENEW: Duration = Duration::from_secs(10);
const STATUS_EVERY: Duration = Duration::from_secs(60);
const LEASE_DURATION_SECONDS: i32 = 40;
/// Concurrent requests when touching every node.
const FAN_OUT: usize = 16;

fn api_err(what: String) -> impl FnOnce(kube::Error) -> WorldError {
    move |source| WorldError::Api { what, source }
}

/// The node objects to create: the scenario's, labelled (and tainted).
fn node_objects(shared: &Shared) -> Vec<Value> {
    let mut nodes = shared.scenario.node_objects();
    for node in &mut nodes {
        node["metadata"]["labels"][SIMULATED_NODE_LABEL] = Value::from("true");
        if shared.options.taint {
            let taint =
                json!({"key": SIMULATED_NODE_LABEL, "value": "true", "effect": "NoSchedule"});
            match node
                .pointer_mut("/spec/taints")
                .and_then(Value::as_array_mut)
            {
                Some(taints) => taints.push(taint),
                None => node["spec"]["taints"] = json!([taint]),
            }
        }
    }
    nodes
}

/// Create every node that does not exist yet, with its status.
pub(super) async fn create(shared: &Arc<Shared>) -> Result<(), WorldError> {
    let api: Api<Node> = Api::all(shared.client.clone());
    let results = futures::stream::iter(node_objects(shared))
        .map(|obj| create_one(&api, obj))
        .buffer_unordered(FAN_OUT)
        .collect::<Vec<_>>()
        .await;
    results.into_iter().collect()
}

async fn create_one(api: &Api<Node>, obj: Value) -> Result<(), WorldError> {
    let name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let node: Node = serde_json::from_value(obj.clone()).map_err(|e| WorldError::Manifest {
        scenario: String::new(),
        index: 0,
        what: format!("node {name}"),
        message: e.to_string(),
    })?;
    let pp = PostParams::default();
    match retry(|| api.create(&pp, &node)).await {
        Ok(_) => {}
        Err(e) if status_code(&e) == Some(409) => return Ok(()),
        Err(e) => return Err(api_err(format!("cannot create node {name}"))(e)),
    }
    // A real API server may drop status on create: post it as a kubelet does.
    let status = json!({"status": obj.get("status").cloned().unwrap_or_default()});
    let (pp, patch) = (PatchParams::default(), Patch::Merge(&status));
    retry(|| api.patch_status(&name, &pp, &patch))
        .await
        .map_err(api_err(format!("cannot post the status of node {name}")))?;
    Ok(())
}

fn ready_condition(ready: bool) -> Value {
    let now = infera_sim_core::clock::now_timestamp();
    let (status, reason, message) = if ready {
        ("True", "KubeletReady", "kubelet is posting ready status")
    } else {
        (
            "Unknown",
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
        )
    };
    json!({"type": "Ready", "status": status, "reason": reason, "message": message,
        "lastHeartbeatTime": now, "lastTransitionTime": now})
}

/// Post a node's Ready condition (a `nodeNotReady` fault posts Unknown, as
/// the node-lifecycle controller would once heartbeats stop).
pub(super) async fn set_ready(shared: &Shared, node: &str, ready: bool) {
    let api: Api<Node> = Api::all(shared.client.clone());
    let mut condition = ready_condition(ready);
    // Keep lastTransitionTime when the status does not change.
    if let Ok(current) = api.get_status(node).await
        && let Some(c) = current
            .status
            .and_then(|s| s.conditions)
            .and_then(|cs| cs.into_iter().find(|c| c.type_ == "Ready"))
        && c.status == condition["status"].as_str().unwrap_or_default()
        && let Some(t) = c.last_transition_time
    {
        condition["lastTransitionTime"] = json!(t);
    }
    let patch = json!({"status": {"conditions": [condition]}});
    let (pp, patch) = (PatchParams::default(), Patch::Strategic(&patch));
    let _ = retry(|| api.patch_status(node, &pp, &patch)).await;
}

/// Renew every Lease each [`LEASE_RENEW`] and every Ready heartbeat each
/// [`STATUS_EVERY`], skipping nodes a fault holds down.
pub(super) async fn heartbeat(shared: Arc<Shared>) {
    let names = shared.node_names();
    let mut leases = true;
    let mut since_status = Duration::ZERO;
    loop {
        let up: Vec<String> = names
            .iter()
            .filter(|n| !shared.node_not_ready(n))
            .cloned()
            .collect();
        if leases {
            let renewed = futures::stream::iter(up.clone())
                .map(|n| {
                    let shared = shared.clone();
                    async move { renew_lease(&shared, &n).await }
                })
                .buffer_unordered(FAN_OUT)
                .collect::<Vec<_>>()
                .await;
            // 404 for the resource itself: the server has no Leases.
            leases = !renewed.contains(&Some(404));
        }
        if leases && since_status < STATUS_EVERY {
            restore_ready(&shared, &up).await;
        }
        if since_status >= STATUS_EVERY {
            since_status = Duration::ZERO;
            futures::stream::iter(up)
                .map(|n| {
                    let shared = shared.clone();
                    async move { set_ready(&shared, &n, true).await }
                })
                .buffer_unordered(FAN_OUT)
                .collect::<Vec<_>>()
                .await;
        }
        tokio::time::sleep(LEASE_RENEW).await;
        since_status += LEASE_RENEW;
    }
}

/// Post Ready again on the nodes whose `Ready` condition someone else
/// changed — the node lifecycle controller sets it `Unknown` once
/// heartbeats have been missed for its grace period, e.g. while etcd was
/// unavailable. A real kubelet compares the API's node status with its own
/// every `nodeStatusUpdateFrequency` (10 s) and posts on any difference
/// (k8s.io/kubernetes@v1.37.2 pkg/kubelet/kubelet_node_status.go,
/// `tryUpdateNodeStatus`), rather than waiting for the minute's heartbeat.
/// One list per round; only where Leases are served (a real control plane).
async fn restore_ready(shared: &Shared, up: &[String]) {
    let api: Api<Node> = Api::all(shared.client.clone());
    let lp = ListParams::default().labels(&format!("{SIMULATED_NODE_LABEL}=true"));
    let Ok(nodes) = api.list(&lp).await else {
        return;
    };
    let stale: Vec<String> = nodes
        .items
        .iter()
        .filter(|n| {
            !n.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .filter_map(|n| n.metadata.name.clone())
        .filter(|n| up.contains(n))
        .collect();
    for node in stale {
        set_ready(shared, &node, true).await;
    }
}

fn micro_now() -> String {
    infera_sim_core::clock::server_now()
        .strftime("%Y-%m-%dT%H:%M:%S.%6fZ")
        .to_string()
}

/// Create or renew one node's Lease; the failing status code, if any.
async fn renew_lease(shared: &Shared, node: &str) -> Option<u16> {
    let api: Api<Lease> = Api::namespaced(shared.client.clone(), LEASE_NAMESPACE);
    let renew = json!({"spec": {"renewTime": micro_now(), "holderIdentity": node}});
    match api
        .patch(node, &PatchParams::default(), &Patch::Merge(&renew))
        .await
    {
        Ok(_) => return None,
        Err(e) if status_code(&e) != Some(404) => return status_code(&e),
        Err(_) => {}
    }
    let nodes: Api<Node> = Api::all(shared.client.clone());
    let uid = nodes
        .get_metadata(node)
        .await
        .ok()
        .and_then(|n| n.metadata.uid);
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": node, "namespace": LEASE_NAMESPACE,
            "ownerReferences": uid.map(|uid| json!([{"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid}]))},
        "spec": {"holderIdentity": node, "leaseDurationSeconds": LEASE_DURATION_SECONDS, "renewTime": micro_now()}});
    let lease: Lease = serde_json::from_value(lease).ok()?;
    match api.create(&PostParams::default(), &lease).await {
        Ok(_) => None,
        Err(e) => status_code(&e),
    }
}

/// Delete the scenario's simulated nodes: the pods still bound to them
/// (forced), their Leases, then the nodes. Nodes without the simulated
/// label are left alone.
pub(super) async fn remove(client: &kube::Client, scenario: &Scenario) -> Result<(), WorldError> {
    let nodes: Api<Node> = Api::all(client.clone());
    let pods: Api<Pod> = Api::all(client.clone());
    let leases: Api<Lease> = Api::namespaced(client.clone(), LEASE_NAMESPACE);
    let ours = ListParams::default().labels(&format!("{SIMULATED_NODE_LABEL}=true"));
    let listed = retry(|| nodes.list_metadata(&ours))
        .await
        .map_err(api_err("cannot list the simulated nodes".into()))?;
    let wanted: Vec<String> = scenario
        .node_objects()
        .iter()
        .filter_map(|n| {
            n.pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect();
    for node in listed
        .items
        .iter()
        .filter_map(|n| n.metadata.name.as_deref())
    {
        if !wanted.iter().any(|w| w == node) {
            continue;
        }
        let bound = ListParams::default().fields(&format!("spec.nodeName={node}"));
        let on_node = retry(|| pods.list_metadata(&bound))
            .await
            .map_err(api_err(format!("cannot list the pods on node {node}")))?;
        for pod in on_node.items {
            let (Some(ns), Some(name)) = (pod.metadata.namespace, pod.metadata.name) else {
                continue;
            };
            let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
            let dp = DeleteParams::default().grace_period(0);
            ok_if_gone(retry(|| api.delete(&name, &dp)).await)
                .map_err(api_err(format!("cannot delete pod {ns}/{name}")))?;
        }
        // A server without Leases answers 404 here too.
        let dp = DeleteParams::default();
        ok_if_gone(retry(|| leases.delete(node, &dp)).await)
            .map_err(api_err(format!("cannot delete the Lease of node {node}")))?;
        ok_if_gone(retry(|| nodes.delete(node, &dp)).await)
            .map_err(api_err(format!("cannot delete node {node}")))?;
    }
    Ok(())
}
