//! The default scheduler: fit via `infera_model::scheduling`, least-allocated
//! scoring, binding, and upstream's `FailedScheduling` condition and Event.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Manager;
use super::cache::{Key, NodeEntry, SCORED, SchedNode};
use infera_model::scheduling::{self, Candidate, UnfitReason};
use infera_sim_core::json::str_at;
use infera_sim_core::kind::Kind;

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
        let typed = match self.cache.sched_pods.get(key) {
            Some(sp) => match sp.typed.clone() {
                Some(typed) => typed,
                None => match Pod::deserialize(&**pod) {
                    Ok(typed) => Arc::new(typed),
                    Err(_) => return,
                },
            },
            None => return,
        };
        let empty_spec = PodSpec::default();
        let empty_labels = BTreeMap::new();
        let candidate = Candidate::new(
            typed.spec.as_ref().unwrap_or(&empty_spec),
            typed.metadata.labels.as_ref().unwrap_or(&empty_labels),
            typed.metadata.namespace.as_deref().unwrap_or("default"),
        );
        let wanted = SCORED.map(|r| candidate.request(r));
        // LeastAllocated-like score: the fraction of GPUs, then cpu, then
        // memory left free (every pod bound to the node counts, finished ones
        // too). It does not depend on the fit, so a node that cannot beat the
        // best so far (ties keep the first, in name order) is not checked:
        // the choice is the same as checking every node, at a fraction of
        // the cost. Per-node usage is kept by the cache as pods bind and go.
        let score = |entry: &NodeEntry, node: &SchedNode| {
            let free = |i: usize| {
                let a = node.scored_allocatable[i];
                let used = entry.pods.scored_used[i] + wanted[i];
                if a <= 0 { 0 } else { (a - used) * 1000 / a }
            };
            free(0) * 1_000_000 + free(1) * 1000 + free(2)
        };
        let mut best: Option<(i128, &str)> = None;
        for (name, entry) in &self.cache.node_entries {
            let Some(node) = entry.node.as_ref() else {
                continue;
            };
            let score = score(entry, node);
            if best.is_some_and(|(s, _)| score <= s) {
                continue;
            }
            let live = || self.cache.live_pods(&entry.pods);
            if scheduling::fit_candidate(
                &candidate,
                &node.node,
                &node.allocatable,
                &entry.pods.usage,
                live,
            )
            .is_ok()
            {
                best = Some((score, name));
            }
        }
        let best = best.map(|(s, n)| (s, n.to_string()));
        // No node fits: every node's reasons, for the message.
        let mut per_node: Vec<Vec<UnfitReason>> = Vec::new();
        if best.is_none() {
            for entry in self.cache.node_entries.values() {
                let Some(node) = entry.node.as_ref() else {
                    continue;
                };
                let live = || self.cache.live_pods(&entry.pods);
                if let Err(reasons) = scheduling::fit_candidate(
                    &candidate,
                    &node.node,
                    &node.allocatable,
                    &entry.pods.usage,
                    live,
                ) {
                    per_node.push(reasons);
                }
            }
        }
        match best {
            Some((_, node)) => self.bind(key, &node),
            None => self.unschedulable(key, pod, &per_node),
        }
    }

    /// Bind the pod to `node`: `spec.nodeName`, PodScheduled True and the
    /// `Scheduled` Event.
    fn bind(&mut self, key: &Key, node: &str) {
        let (ns, name) = key.clone();
        let now = self.clock.timestamp();
        let result = self.store.mutate_shared(Kind::Pod, Some(&ns), &name, |v| {
            v["spec"]["nodeName"] = Value::from(node);
            set_pod_condition(v, json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now}));
        });
        self.pending.remove(key);
        if let Ok(updated) = result {
            // k8s.io/kubernetes@v1.37.2 pkg/scheduler/schedule_one.go:1138
            infera_sim_store::recorder::record(
                &self.store,
                &infera_sim_store::recorder::Event {
                    component: "default-scheduler",
                    involved: &updated,
                    type_: "Normal",
                    reason: "Scheduled",
                    message: format!("Successfully assigned {ns}/{name} to {node}"),
                    action: Some("Binding"),
                },
            );
            self.absorb(Kind::Pod, updated);
        }
    }

    /// No node fits: PodScheduled False with the scheduler's message (every
    /// node's reasons, counted), written only when it changed, and the
    /// `FailedScheduling` Event.
    fn unschedulable(&mut self, key: &Key, pod: &Value, per_node: &[Vec<UnfitReason>]) {
        let (ns, name) = key.clone();
        let now = self.clock.timestamp();
        let counted = scheduling::count_reasons(per_node.iter().map(Vec::as_slice));
        let total = self.cache.node_count();
        let message = scheduling::failed_scheduling_message(total, &counted)
            + &scheduling::preemption_suffix(total, per_node);
        let current = pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| str_at(c, "/type") == "PodScheduled"))
            .map(|c| str_at(c, "/message").to_string());
        if current.as_deref() != Some(message.as_str()) {
            let msg = message.clone();
            if let Ok(updated) = self.store.mutate_shared(Kind::Pod, Some(&ns), &name, |v| {
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

    /// A `FailedScheduling` Warning Event, aggregated as the event correlator
    /// does: a repeat of the same message bumps `count` and `lastTimestamp`.
    fn record_failed_scheduling(&mut self, pod: &Value, message: &str) {
        let ns = str_at(pod, "/metadata/namespace").to_string();
        let name = str_at(pod, "/metadata/name").to_string();
        let uid = str_at(pod, "/metadata/uid").to_string();
        let dedup = (uid.clone(), message.to_string());
        let now = infera_sim_core::clock::now_rfc3339();
        if let Some(event_name) = self.events.get(&dedup).cloned()
            && let Ok(_) = self
                .store
                .mutate_shared(Kind::Event, Some(&ns), &event_name, |e| {
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
        if self.store.create_shared(Kind::Event, event).is_ok() {
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
