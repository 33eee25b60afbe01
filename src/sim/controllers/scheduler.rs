//! The default scheduler: fit via `crate::scheduling`, least-allocated
//! scoring, binding, and upstream's `FailedScheduling` condition and Event.

use std::sync::Arc;

use serde_json::{Value, json};

use super::Manager;
use super::cache::{Key, str_at};
use crate::scheduling::{self, UnfitReason};
use crate::sim::store::Kind;

impl Manager {
    /// Try to place every pending pod (unbound, not deleting).
    pub(super) fn schedule_pending(&mut self) {
        let pending: Vec<Key> = self.pending.iter().cloned().collect();
        for key in pending {
            let Some(pod) = self.cache.pods.get(&key).cloned() else {
                self.pending.remove(&key);
                continue;
            };
            if !str_at(&pod, "/spec/nodeName").is_empty()
                || pod.pointer("/metadata/deletionTimestamp").is_some()
            {
                self.pending.remove(&key);
                continue;
            }
            self.schedule_one(&key, &pod);
        }
    }

    fn schedule_one(&mut self, key: &Key, pod: &Arc<Value>) {
        let Some(typed) = self.cache.typed_pods.get(key).cloned() else {
            return;
        };
        let mut best: Option<(i128, String)> = None;
        let mut per_node: Vec<Vec<UnfitReason>> = Vec::new();
        let requests = typed
            .spec
            .as_ref()
            .map(scheduling::pod_requests)
            .unwrap_or_default();
        for (name, node) in &self.cache.typed_nodes {
            let on_node = self.cache.pods_on_node(name);
            match scheduling::fit_pod(&typed, node, &on_node, &[]) {
                Ok(()) => {
                    // LeastAllocated-like score: the fraction of GPUs, then cpu, left free.
                    let alloc = |r: &str| {
                        node.status
                            .as_ref()
                            .and_then(|s| s.allocatable.as_ref())
                            .and_then(|a| a.get(r))
                            .and_then(|q| scheduling::parse_quantity_milli(&q.0))
                            .unwrap_or(0)
                    };
                    let used = |r: &str| {
                        on_node
                            .iter()
                            .filter_map(|p| p.spec.as_ref())
                            .map(|s| scheduling::pod_requests(s).get(r).copied().unwrap_or(0))
                            .sum::<i128>()
                            + requests.get(r).copied().unwrap_or(0)
                    };
                    let free = |r: &str| {
                        let a = alloc(r);
                        if a <= 0 { 0 } else { (a - used(r)) * 1000 / a }
                    };
                    let score =
                        free("amd.com/gpu") * 1_000_000 + free("cpu") * 1000 + free("memory");
                    if best.as_ref().is_none_or(|(s, _)| score > *s) {
                        best = Some((score, name.clone()));
                    }
                }
                Err(reasons) => per_node.push(reasons),
            }
        }
        let (ns, name) = key.clone();
        let now = self.clock.timestamp();
        match best {
            Some((_, node)) => {
                let result = self.store.mutate(Kind::Pod, Some(&ns), &name, |v| {
                    v["spec"]["nodeName"] = Value::from(node.clone());
                    set_pod_condition(v, json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now}));
                });
                self.pending.remove(key);
                if let Ok(updated) = result {
                    self.absorb(Kind::Pod, updated);
                }
            }
            None => {
                let counted = scheduling::count_reasons(per_node.iter().map(Vec::as_slice));
                let message =
                    scheduling::failed_scheduling_message(self.cache.typed_nodes.len(), &counted);
                let current = pod
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .and_then(|cs| cs.iter().find(|c| str_at(c, "/type") == "PodScheduled"))
                    .map(|c| str_at(c, "/message").to_string());
                if current.as_deref() != Some(message.as_str()) {
                    let msg = message.clone();
                    if let Ok(updated) = self.store.mutate(Kind::Pod, Some(&ns), &name, |v| {
                        set_pod_condition(
                            v,
                            json!({"type": "PodScheduled", "status": "False", "lastProbeTime": null,
                            "lastTransitionTime": now, "reason": "Unschedulable", "message": msg}),
                        );
                    }) {
                        self.absorb(Kind::Pod, updated);
                    }
                }
                self.record_failed_scheduling(pod, &message);
            }
        }
    }

    /// A `FailedScheduling` Warning Event, aggregated as the event correlator
    /// does: a repeat of the same message bumps `count` and `lastTimestamp`.
    fn record_failed_scheduling(&mut self, pod: &Value, message: &str) {
        let ns = str_at(pod, "/metadata/namespace").to_string();
        let name = str_at(pod, "/metadata/name").to_string();
        let uid = str_at(pod, "/metadata/uid").to_string();
        let dedup = (uid.clone(), message.to_string());
        let now = crate::sim::store::now_rfc3339();
        if let Some(event_name) = self.events.get(&dedup).cloned()
            && let Ok(_) = self.store.mutate(Kind::Event, Some(&ns), &event_name, |e| {
                let count = e.get("count").and_then(Value::as_i64).unwrap_or(1) + 1;
                e["count"] = Value::from(count);
                e["lastTimestamp"] = Value::from(now.clone());
            })
        {
            return;
        }
        self.event_seq += 1;
        let event_name = format!(
            "{name}.{:016x}",
            self.event_seq.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        );
        let event = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": event_name, "namespace": ns},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name, "uid": uid,
                "resourceVersion": str_at(pod, "/metadata/resourceVersion")},
            "reason": "FailedScheduling", "message": message, "type": "Warning",
            "source": {"component": "default-scheduler"},
            "reportingComponent": "default-scheduler", "reportingInstance": "default-scheduler",
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        });
        if self.store.create(Kind::Event, event).is_ok() {
            self.events.insert(dedup, event_name);
        }
    }
}

/// Set (replace) a pod condition, keeping lastTransitionTime when the status is unchanged.
pub fn set_pod_condition(pod: &mut Value, mut cond: Value) {
    let type_ = str_at(&cond, "/type").to_string();
    if !pod.get("status").is_some_and(Value::is_object) {
        pod["status"] = json!({});
    }
    let list = pod["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::with_capacity(list.len() + 1);
    let mut placed = false;
    for c in list {
        if str_at(&c, "/type") == type_ {
            if c.get("status") == cond.get("status")
                && let Some(t) = c.get("lastTransitionTime")
            {
                cond["lastTransitionTime"] = t.clone();
            }
            out.push(cond.clone());
            placed = true;
        } else {
            out.push(c);
        }
    }
    if !placed {
        out.push(cond);
    }
    pod["status"]["conditions"] = Value::from(out);
}
