//! The StatefulSet controller, as far as a drain needs it: one pod per
//! ordinal with a stable name (`NAME-ORDINAL`), a pod that is evicted or
//! deleted created again under the same name once the old one is gone, a
//! failed pod deleted and created again, surplus ordinals deleted from the
//! highest, then the status.
//!
//! Mirrors k8s.io/kubernetes@v1.37.2 pkg/controller/statefulset
//! (`stateful_set_control.go` `updateStatefulSet` and
//! `computeReplicaStatus`, `stateful_set_utils.go` `newStatefulSetPod`,
//! `initIdentity`, `getStartOrdinal`; `stateful_pod_control.go`'s events):
//! `OrderedReady` creates ordinal N only when every lower one is Running
//! and Ready, and waits while one of them terminates; `Parallel` does
//! neither. Not simulated: revisions (`controller-revision-hash`, rolling
//! updates of the template), volume claim templates, `minReadySeconds` in
//! `availableReplicas`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::Manager;
use crate::cache::{Key, key_of};
use crate::leaderworkerset::pod_webhook;
use crate::replicaset::pod_ready_since;
use infera_sim_core::json::{i64_at, str_at};
use infera_sim_core::kind::Kind;
use infera_sim_store::recorder;

/// The pod label naming the pod (`statefulset.kubernetes.io/pod-name`).
const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The pod label with the ordinal (`apps.kubernetes.io/pod-index`).
const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

fn terminating(p: &Value) -> bool {
    p.pointer("/metadata/deletionTimestamp").is_some()
}

fn running_and_ready(p: &Value) -> bool {
    str_at(p, "/status/phase") == "Running" && pod_ready_since(p).is_some()
}

/// The ordinal of `pod` in `set` (`getOrdinal`), if it is one of its names.
fn ordinal(set: &str, pod: &str) -> Option<i64> {
    pod.strip_prefix(set)?.strip_prefix('-')?.parse().ok()
}

impl Manager {
    /// `SuccessfulCreate` / `SuccessfulDelete` / `RecreatingFailedPod`.
    fn stateful_event(&self, set: &Value, reason: &str, message: String) {
        recorder::record(
            &self.store,
            &recorder::Event {
                component: "statefulset-controller",
                involved: set,
                type_: if reason == "RecreatingFailedPod" {
                    "Warning"
                } else {
                    "Normal"
                },
                reason,
                message,
                action: None,
            },
        );
    }

    /// The StatefulSet controller's sync of one set.
    pub(super) fn sync_statefulset(&mut self, key: &Key) {
        let Some(set) = self.cache.statefulsets.get(key).cloned() else {
            return;
        };
        let uid = str_at(&set, "/metadata/uid").to_string();
        let name = str_at(&set, "/metadata/name").to_string();
        let pods: BTreeMap<i64, Arc<Value>> = (self.cache.pods.owned_by(&uid).into_iter())
            .filter_map(|p| Some((ordinal(&name, str_at(&p, "/metadata/name"))?, p)))
            .collect();
        if set.pointer("/metadata/deletionTimestamp").is_none() {
            self.reconcile_ordinals(&set, &pods);
        }
        let pods: Vec<Arc<Value>> = self.cache.pods.owned_by(&uid);
        let ready = pods
            .iter()
            .filter(|p| !terminating(p) && running_and_ready(p))
            .count();
        let mut status = json!({
            "replicas": pods.len(), "readyReplicas": ready, "availableReplicas": ready,
            "currentReplicas": pods.len(), "updatedReplicas": pods.len(),
            "observedGeneration": i64_at(&set, "/metadata/generation").unwrap_or(1),
        });
        if let Some(map) = status.as_object_mut() {
            map.retain(|k, v| {
                k == "replicas" || k == "observedGeneration" || v.as_i64() != Some(0)
            });
        }
        let current = self.cache.statefulsets.get(key).cloned().unwrap_or(set);
        self.write_status(Kind::StatefulSet, &current, status);
    }

    /// Create the missing ordinals, recreate failed pods, delete condemned
    /// ones (`updateStatefulSet`, without revisions).
    fn reconcile_ordinals(&mut self, set: &Value, pods: &BTreeMap<i64, Arc<Value>>) {
        let start = i64_at(set, "/spec/ordinals/start").unwrap_or(0).max(0);
        let replicas = i64_at(set, "/spec/replicas").unwrap_or(1).max(0);
        let ordered = str_at(set, "/spec/podManagementPolicy") != "Parallel";
        for i in start..start + replicas {
            match pods.get(&i) {
                None => self.create_stateful_pod(set, i),
                Some(p) if str_at(p, "/status/phase") == "Failed" && !terminating(p) => {
                    self.delete_stateful_pod(set, p, "RecreatingFailedPod");
                    if ordered {
                        return;
                    }
                }
                Some(_) => {}
            }
            if ordered && pods.get(&i).is_none_or(|p| !running_and_ready(p)) {
                return;
            }
        }
        let condemned = (pods.iter().rev())
            .filter(|(i, p)| (**i < start || **i >= start + replicas) && !terminating(p));
        for (_, p) in condemned {
            self.delete_stateful_pod(set, p, "SuccessfulDelete");
            if ordered {
                return;
            }
        }
    }

    fn create_stateful_pod(&mut self, set: &Value, i: i64) {
        let pod = stateful_pod(set, i);
        let pod_name = str_at(&pod, "/metadata/name").to_string();
        if let Ok(created) = self.store.create_shared(Kind::Pod, pod) {
            let msg = format!(
                "create Pod {pod_name} in StatefulSet {} successful",
                str_at(set, "/metadata/name")
            );
            self.stateful_event(set, "SuccessfulCreate", msg);
            self.absorb(Kind::Pod, created);
        }
    }

    fn delete_stateful_pod(&mut self, set: &Value, pod: &Value, reason: &str) {
        let (ns, name) = key_of(pod);
        let Ok(updated) = self.store.delete(Kind::Pod, Some(&ns), &name, None) else {
            return;
        };
        let set_name = str_at(set, "/metadata/name");
        let msg = match reason {
            "RecreatingFailedPod" => {
                format!("StatefulSet {ns}/{set_name} is recreating failed Pod {name}")
            }
            _ => format!("delete Pod {name} in StatefulSet {set_name} successful"),
        };
        self.stateful_event(set, reason, msg);
        if self.store.get(Kind::Pod, Some(&ns), &name).is_some() {
            self.absorb(Kind::Pod, updated);
        } else {
            self.cache.remove(Kind::Pod, &(ns, name));
        }
    }
}

/// `newStatefulSetPod` and `initIdentity`: the template, named
/// `SET-ORDINAL`, labelled with its name and index, hostname and subdomain
/// set, owned by the set (then the LeaderWorkerSet pod webhook's labels).
fn stateful_pod(set: &Value, i: i64) -> Value {
    let set_name = str_at(set, "/metadata/name");
    let name = format!("{set_name}-{i}");
    let template = set.pointer("/spec/template").cloned().unwrap_or_default();
    let mut meta = match template.get("metadata") {
        Some(m) if m.is_object() => m.clone(),
        _ => json!({}),
    };
    meta["name"] = json!(name);
    meta["namespace"] = json!(str_at(set, "/metadata/namespace"));
    if !meta.get("labels").is_some_and(Value::is_object) {
        meta["labels"] = json!({});
    }
    meta["labels"][POD_NAME_LABEL] = json!(name);
    meta["labels"][POD_INDEX_LABEL] = json!(i.to_string());
    meta["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "StatefulSet",
        "name": set_name, "uid": str_at(set, "/metadata/uid"),
        "controller": true, "blockOwnerDeletion": true}]);
    let mut spec = match template.get("spec") {
        Some(s) if s.is_object() => s.clone(),
        _ => json!({}),
    };
    spec["hostname"] = json!(name);
    let service = str_at(set, "/spec/serviceName");
    if !service.is_empty() {
        spec["subdomain"] = json!(service);
    }
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
        "status": {"phase": "Pending"}});
    pod_webhook(&mut pod, i);
    pod
}
