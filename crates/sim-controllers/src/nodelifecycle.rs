//! The node-lifecycle controller: a node whose kubelet has stopped turns
//! `Ready=Unknown` once the node-monitor grace period has passed, is
//! tainted unreachable, and its pods are marked NotReady; a cordoned node
//! (`spec.unschedulable`) carries the `node.kubernetes.io/unschedulable`
//! taint.
//!
//! Mirrors k8s.io/kubernetes@v1.37.2
//! pkg/controller/nodelifecycle/node_lifecycle_controller.go
//! (`monitorNodeHealth`, `tryUpdateNodeHealth`: Ready, MemoryPressure,
//! DiskPressure and PIDPressure set `Unknown`, reason `NodeStatusUnknown`,
//! "Kubelet stopped posting node status."; `doNoScheduleTaintingPass`,
//! `doNoExecuteTaintingPass`), its grace period
//! (pkg/controller/nodelifecycle/config/v1alpha1/defaults.go:
//! `NodeMonitorGracePeriod` 50 s) and
//! pkg/controller/util/node/controller_utils.go (`RecordNodeStatusChange`:
//! `NodeNotReady` "Node N status is now: NodeNotReady"; `MarkPodsNotReady`:
//! the pods' Ready False and a Warning `NodeNotReady` "Node is not ready").
//!
//! Heartbeats: upstream watches each node's Lease, renewed every 10 s. The
//! embedded server serves no Leases; the embedded world tells this
//! controller directly when a node's kubelet stops ([`StoppedKubelets`], a
//! documented shortcut like the controllers' direct store access), and the
//! instant it stopped is its last heartbeat, so the node turns Unknown
//! exactly 50 s (scenario time) later, where upstream's lands 40–50 s after
//! the last renewal plus up to one 5 s monitor period. Not simulated: the
//! taint-eviction controller's NoExecute evictions (the sim runs no
//! DefaultTolerationSeconds admission, so every pod would go at once).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::{Manager, Work};
use infera_sim_core::json::str_at;
use infera_sim_core::kind::Kind;
use infera_sim_store::recorder;

/// `--node-monitor-grace-period`'s default in v1.37.2.
pub const NODE_MONITOR_GRACE_PERIOD: Duration = Duration::from_secs(50);
/// `--node-monitor-period`'s default: how often health is looked at.
const NODE_MONITOR_PERIOD: Duration = Duration::from_secs(5);

pub const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";
use infera_model::scheduling::UNSCHEDULABLE_TAINT;

/// The nodes whose kubelet has stopped, and when (an object timestamp),
/// shared by the embedded world (which stops them) and this controller.
#[derive(Debug, Clone, Default)]
pub struct StoppedKubelets(Arc<Mutex<BTreeMap<String, String>>>);

impl StoppedKubelets {
    /// The kubelet of `node` stops now (its last heartbeat).
    pub fn stop(&self, node: &str) {
        self.lock()
            .entry(node.to_string())
            .or_insert_with(infera_sim_core::clock::now_timestamp);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, String>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn snapshot(&self) -> BTreeMap<String, String> {
        self.lock().clone()
    }
}

impl Manager {
    /// `monitorNodeHealth` over every node, and the NoSchedule taints that
    /// follow `spec.unschedulable`.
    pub(super) fn monitor_nodes(&mut self) {
        let stopped = self.kubelets.snapshot();
        let mut next: Option<Duration> = None;
        for key in self.cache.nodes.keys() {
            let Some(node) = self.cache.nodes.get(&key).cloned() else {
                continue;
            };
            self.sync_unschedulable_taint(&node);
            let Some(at) = stopped.get(&key.1) else {
                continue;
            };
            let silent = self.clock.sim_since(at);
            if silent < NODE_MONITOR_GRACE_PERIOD {
                let left = NODE_MONITOR_GRACE_PERIOD - silent;
                next = Some(next.map_or(left, |n| n.min(left)));
            } else if ready_status(&node) != "Unknown" {
                self.mark_unknown(&key.1);
            }
        }
        if !stopped.is_empty() {
            let after = next.unwrap_or(NODE_MONITOR_PERIOD).min(NODE_MONITOR_PERIOD);
            if !self.timers.contains(&Work::NodeHealth) {
                self.requeue(Work::NodeHealth, after);
            }
        }
    }

    /// `doNoScheduleTaintingPass` for `spec.unschedulable`.
    fn sync_unschedulable_taint(&mut self, node: &Value) {
        let cordoned = node.pointer("/spec/unschedulable") == Some(&json!(true));
        let tainted = has_taint(node, UNSCHEDULABLE_TAINT, "NoSchedule");
        if cordoned == tainted {
            return;
        }
        let name = str_at(node, "/metadata/name").to_string();
        let updated = self.store.mutate_shared(Kind::Node, None, &name, |n| {
            set_taint(n, UNSCHEDULABLE_TAINT, "NoSchedule", cordoned);
        });
        if let Ok(updated) = updated {
            self.absorb(Kind::Node, updated);
        }
    }

    /// `tryUpdateNodeHealth` past the grace period, then the unreachable
    /// taints, the `NodeNotReady` event and `MarkPodsNotReady`.
    fn mark_unknown(&mut self, name: &str) {
        let now = infera_sim_core::clock::now_timestamp();
        let updated = self.store.mutate_shared(Kind::Node, None, name, |n| {
            conditions_unknown(n, &now);
            set_taint(n, UNREACHABLE_TAINT, "NoSchedule", true);
            set_taint(n, UNREACHABLE_TAINT, "NoExecute", true);
        });
        let Ok(node) = updated else {
            return;
        };
        self.absorb(Kind::Node, node.clone());
        recorder::record(
            &self.store,
            &recorder::Event {
                component: "node-controller",
                involved: &node,
                type_: "Normal",
                reason: "NodeNotReady",
                message: format!("Node {name} status is now: NodeNotReady"),
                action: None,
            },
        );
        let pods: Vec<Arc<Value>> = self
            .cache
            .pods
            .values()
            .filter(|p| str_at(p, "/spec/nodeName") == name)
            .cloned()
            .collect();
        for pod in pods {
            self.mark_pod_not_ready(&pod, &now);
        }
    }

    fn mark_pod_not_ready(&mut self, pod: &Value, now: &str) {
        let ready = pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| str_at(c, "/type") == "Ready"));
        if ready.is_none_or(|c| str_at(c, "/status") == "False") {
            return;
        }
        let ns = str_at(pod, "/metadata/namespace").to_string();
        let name = str_at(pod, "/metadata/name").to_string();
        let updated = self.store.mutate_shared(Kind::Pod, Some(&ns), &name, |p| {
            if let Some(list) = p
                .pointer_mut("/status/conditions")
                .and_then(Value::as_array_mut)
            {
                for c in list.iter_mut().filter(|c| str_at(c, "/type") == "Ready") {
                    c["status"] = json!("False");
                    c["lastTransitionTime"] = json!(now);
                }
            }
        });
        if let Ok(updated) = updated {
            self.absorb(Kind::Pod, updated.clone());
            recorder::record(
                &self.store,
                &recorder::Event {
                    component: "node-controller",
                    involved: &updated,
                    type_: "Warning",
                    reason: "NodeNotReady",
                    message: "Node is not ready".into(),
                    action: None,
                },
            );
        }
    }
}

fn ready_status(node: &Value) -> &str {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| str_at(c, "/type") == "Ready"))
        .map_or("", |c| str_at(c, "/status"))
}

/// The kubelet-owned conditions set `Unknown` (absent ones added as never
/// posted), keeping `lastHeartbeatTime`.
fn conditions_unknown(node: &mut Value, now: &str) {
    if !node["status"]["conditions"].is_array() {
        node["status"]["conditions"] = json!([]);
    }
    let created = str_at(node, "/metadata/creationTimestamp").to_string();
    let Some(list) = node["status"]["conditions"].as_array_mut() else {
        return;
    };
    for kind in ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"] {
        match list.iter_mut().find(|c| str_at(c, "/type") == kind) {
            Some(c) if str_at(c, "/status") != "Unknown" => {
                c["status"] = json!("Unknown");
                c["reason"] = json!("NodeStatusUnknown");
                c["message"] = json!("Kubelet stopped posting node status.");
                c["lastTransitionTime"] = json!(now);
            }
            Some(_) => {}
            None => list.push(json!({
                "type": kind, "status": "Unknown", "reason": "NodeStatusNeverUpdated",
                "message": "Kubelet never posted node status.",
                "lastHeartbeatTime": created, "lastTransitionTime": now,
            })),
        }
    }
}

fn has_taint(node: &Value, key: &str, effect: &str) -> bool {
    node.pointer("/spec/taints")
        .and_then(Value::as_array)
        .is_some_and(|t| {
            t.iter()
                .any(|t| str_at(t, "/key") == key && str_at(t, "/effect") == effect)
        })
}

/// Add (with `timeAdded`, as the controller writes it) or remove a taint.
fn set_taint(node: &mut Value, key: &str, effect: &str, present: bool) {
    if present == has_taint(node, key, effect) {
        return;
    }
    if !node["spec"]["taints"].is_array() {
        node["spec"]["taints"] = json!([]);
    }
    let Some(taints) = node["spec"]["taints"].as_array_mut() else {
        return;
    };
    if present {
        taints.push(json!({"key": key, "effect": effect,
            "timeAdded": infera_sim_core::clock::now_rfc3339()}));
    } else {
        taints.retain(|t| !(str_at(t, "/key") == key && str_at(t, "/effect") == effect));
    }
    if taints.is_empty()
        && let Some(spec) = node["spec"].as_object_mut()
    {
        spec.remove("taints");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silent_node_reads_unknown_and_keeps_its_last_heartbeat() {
        let mut node = json!({"metadata": {"name": "n", "creationTimestamp": "t0"},
            "status": {"conditions": [{"type": "Ready", "status": "True",
                "reason": "KubeletReady", "lastHeartbeatTime": "t1", "lastTransitionTime": "t1"}]}});
        conditions_unknown(&mut node, "t2");
        let ready = &node["status"]["conditions"][0];
        assert_eq!(ready["status"], "Unknown");
        assert_eq!(ready["reason"], "NodeStatusUnknown");
        assert_eq!(ready["lastHeartbeatTime"], "t1");
        assert_eq!(ready["lastTransitionTime"], "t2");
        assert_eq!(
            node["status"]["conditions"][1]["reason"],
            "NodeStatusNeverUpdated"
        );
        assert_eq!(ready_status(&node), "Unknown");
    }

    #[test]
    fn the_cordon_taint_comes_and_goes_once() {
        let mut node = json!({"spec": {}});
        set_taint(&mut node, UNSCHEDULABLE_TAINT, "NoSchedule", true);
        set_taint(&mut node, UNSCHEDULABLE_TAINT, "NoSchedule", true);
        assert_eq!(node["spec"]["taints"].as_array().map(Vec::len), Some(1));
        set_taint(&mut node, UNSCHEDULABLE_TAINT, "NoSchedule", false);
        assert!(node["spec"].get("taints").is_none());
    }
}
