//! The ReplicaSet controller: create or delete pods until the ReplicaSet
//! has `spec.replicas` active ones (surplus pods deleted in upstream's
//! rank order), then write its status (ready and available replicas, with
//! a requeue when a pod's `minReadySeconds` will have passed).
//!
//! Mirrors k8s.io/kubernetes `pkg/controller/replicaset/replica_set.go`
//! (`syncReplicaSet`, `manageReplicas`, `getPodsToDelete`) and
//! `replica_set_utils.go` (`calculateStatus`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::cache::{Key, key_of};
use crate::{Manager, Work};
use infera_sim_core::json::{i64_at, str_at};
use infera_sim_core::kind::Kind;
use infera_sim_store::recorder;

impl Manager {
    /// `SuccessfulCreate` / `SuccessfulDelete` of the ReplicaSet controller
    /// (k8s.io/kubernetes@v1.37.2 pkg/controller/controller_utils.go:614,634).
    fn pod_event(&self, rs: &Value, reason: &str, message: String) {
        recorder::record(
            &self.store,
            &recorder::Event {
                component: "replicaset-controller",
                involved: rs,
                type_: "Normal",
                reason,
                message,
                action: None,
            },
        );
    }

    /// The ReplicaSet controller's `syncReplicaSet`.
    pub(super) fn sync_replicaset(&mut self, key: &Key) {
        let Some(rs) = self.cache.replicasets.get(key).cloned() else {
            return;
        };
        let uid = str_at(&rs, "/metadata/uid").to_string();
        let pods: Vec<Arc<Value>> = self.cache.pods.owned_by(&uid);
        let active: Vec<Arc<Value>> = pods
            .iter()
            .filter(|p| {
                p.pointer("/metadata/deletionTimestamp").is_none()
                    && !matches!(str_at(p, "/status/phase"), "Succeeded" | "Failed")
            })
            .cloned()
            .collect();
        let want = i64_at(&rs, "/spec/replicas").unwrap_or(0);
        let have = i64::try_from(active.len()).unwrap_or(i64::MAX);
        let deleting = rs.pointer("/metadata/deletionTimestamp").is_some();
        if !deleting && have < want {
            for _ in 0..(want - have) {
                let pod = pod_from_template(&rs);
                if let Ok(created) = self.store.create_shared(Kind::Pod, pod) {
                    let msg = format!("Created pod: {}", str_at(&created, "/metadata/name"));
                    self.pod_event(&rs, "SuccessfulCreate", msg);
                    self.absorb(Kind::Pod, created);
                }
            }
        } else if !deleting && have > want {
            let mut ranked = active.clone();
            // Stable, like sort_by_key, with each pod's rank computed once.
            ranked.sort_by_cached_key(|p| deletion_rank(p));
            for p in ranked
                .iter()
                .take(usize::try_from(have - want).unwrap_or(0))
            {
                let (ns, name) = key_of(p);
                if let Ok(updated) = self.store.delete(Kind::Pod, Some(&ns), &name, None) {
                    self.pod_event(&rs, "SuccessfulDelete", format!("Deleted pod: {name}"));
                    if self.store.get(Kind::Pod, Some(&ns), &name).is_some() {
                        self.absorb(Kind::Pod, updated);
                    } else {
                        self.cache.remove(Kind::Pod, &(ns, name));
                    }
                }
            }
        }
        // Status from the pods as they are now.
        let pods: Vec<Arc<Value>> = self
            .cache
            .pods
            .owned_by(&uid)
            .into_iter()
            .filter(|p| {
                p.pointer("/metadata/deletionTimestamp").is_none()
                    && !matches!(str_at(p, "/status/phase"), "Succeeded" | "Failed")
            })
            .collect();
        let min_ready = Duration::from_secs(
            u64::try_from(i64_at(&rs, "/spec/minReadySeconds").unwrap_or(0).max(0)).unwrap_or(0),
        );
        let template_labels = rs
            .pointer("/spec/template/metadata/labels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut ready = 0;
        let mut available = 0;
        let mut fully_labeled = 0;
        let mut next_check: Option<Duration> = None;
        for p in &pods {
            if template_labels
                .iter()
                .all(|(k, v)| p.pointer("/metadata/labels").and_then(|l| l.get(k)) == Some(v))
            {
                fully_labeled += 1;
            }
            if let Some(since) = pod_ready_since(p) {
                ready += 1;
                if min_ready.is_zero() {
                    available += 1;
                    continue;
                }
                let elapsed = self.clock.sim_since(since);
                if elapsed >= min_ready {
                    available += 1;
                } else {
                    let left = min_ready - elapsed;
                    next_check = Some(next_check.map_or(left, |n| n.min(left)));
                }
            }
        }
        if let Some(left) = next_check {
            self.requeue(
                Work::ReplicaSet(key.clone()),
                left + Duration::from_millis(1),
            );
        }
        let mut status = json!({
            "replicas": pods.len(), "fullyLabeledReplicas": fully_labeled, "readyReplicas": ready,
            "availableReplicas": available, "observedGeneration": i64_at(&rs, "/metadata/generation").unwrap_or(1),
        });
        if let Some(map) = status.as_object_mut() {
            map.retain(|k, v| {
                k == "replicas" || k == "observedGeneration" || v.as_i64() != Some(0)
            });
        }
        let current = self.cache.replicasets.get(key).cloned().unwrap_or(rs);
        self.write_status(Kind::ReplicaSet, &current, status);
    }
}

/// When the pod's Ready condition turned True (None when not Ready).
pub fn pod_ready_since(p: &Value) -> Option<&str> {
    p.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| str_at(c, "/type") == "Ready" && str_at(c, "/status") == "True")
        .map(|c| str_at(c, "/lastTransitionTime"))
}

fn pod_from_template(rs: &Value) -> Value {
    let template = rs
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut meta = template
        .get("metadata")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if !meta.is_object() {
        meta = json!({});
    }
    meta["generateName"] = Value::from(format!("{}-", str_at(rs, "/metadata/name")));
    meta["namespace"] = Value::from(str_at(rs, "/metadata/namespace"));
    if let Some(m) = meta.as_object_mut() {
        m.remove("name");
    }
    meta["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "name": str_at(rs, "/metadata/name"), "uid": str_at(rs, "/metadata/uid"),
        "controller": true, "blockOwnerDeletion": true}]);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
           "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
           "status": {"phase": "Pending"}})
}

/// The order a ReplicaSet deletes surplus pods in (upstream's
/// `ActivePodsWithRanks`): unscheduled, pending, not ready, ready for the
/// shortest time, most restarts, newest first.
#[allow(clippy::type_complexity)]
fn deletion_rank(
    p: &Value,
) -> (
    bool,
    i32,
    bool,
    Option<std::cmp::Reverse<String>>,
    std::cmp::Reverse<i64>,
    std::cmp::Reverse<String>,
) {
    let node = str_at(p, "/spec/nodeName").is_empty();
    let phase = match str_at(p, "/status/phase") {
        "Pending" | "" => 0,
        "Unknown" => 1,
        _ => 2,
    };
    let ready = pod_ready_since(p).is_some();
    let restarts: i64 = p
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map(|cs| cs.iter().filter_map(|c| i64_at(c, "/restartCount")).sum())
        .unwrap_or(0);
    (
        !node,
        phase,
        ready,
        pod_ready_since(p).map(|s| std::cmp::Reverse(s.to_string())),
        std::cmp::Reverse(restarts),
        std::cmp::Reverse(str_at(p, "/metadata/creationTimestamp").to_string()),
    )
}
