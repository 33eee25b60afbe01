//! The LeaderWorkerSet controller (kubernetes-sigs/lws), as far as a drain
//! needs it: a leader StatefulSet named after the set, one leader pod per
//! group; per leader pod a worker StatefulSet named after it (ordinals from
//! 1, `size - 1` replicas) that the leader pod owns; and
//! `RecreateGroupOnPodRestart` (the default): a pod of a group deleted —
//! evicted — deletes its leader, the garbage collector takes the worker
//! StatefulSet and its pods with it, and the leader StatefulSet creates
//! the group again under the same names.
//!
//! Mirrors kubernetes-sigs/lws v0.7 pkg/controllers
//! (`leaderworkerset_controller.go` `constructLeaderStatefulSetApplyConfiguration`,
//! `pod_controller.go` `constructWorkerStatefulSetApplyConfiguration` and
//! `handleRestartPolicy`) and pkg/webhooks `pod_webhook.go` (`Default`: the
//! group index, group key and worker index labels). Both StatefulSets use
//! `Parallel` pod management, as upstream. Not simulated: rolling updates
//! (template revisions), the `LeaderReady` startup policy, subgroups,
//! exclusive placement, status conditions, and a restart counted from a
//! container restart (only a deleted pod restarts its group).

use infera_model::lws::{
    DEFAULT_REPLICAS, DEFAULT_RESTART_POLICY, DEFAULT_SIZE, RECREATE_GROUP_ON_POD_RESTART,
};
use ring::digest::{SHA1_FOR_LEGACY_USE_ONLY, digest};
use serde_json::{Value, json};

use crate::Manager;
use crate::cache::Key;
use infera_sim_core::json::{i64_at, str_at};
use infera_sim_core::kind::Kind;

/// `leaderworkerset.sigs.k8s.io/name` on every object of a set.
pub const NAME_LABEL: &str = "leaderworkerset.sigs.k8s.io/name";
const GROUP_INDEX_LABEL: &str = "leaderworkerset.sigs.k8s.io/group-index";
const GROUP_KEY_LABEL: &str = "leaderworkerset.sigs.k8s.io/group-key";
const WORKER_INDEX_LABEL: &str = "leaderworkerset.sigs.k8s.io/worker-index";
const SIZE_ANNOTATION: &str = "leaderworkerset.sigs.k8s.io/size";
const LEADER_NAME_ANNOTATION: &str = "leaderworkerset.sigs.k8s.io/leader-name";

fn label<'v>(v: &'v Value, key: &str) -> &'v str {
    v.pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn deleting(v: &Value) -> bool {
    v.pointer("/metadata/deletionTimestamp").is_some()
}

/// The webhook's labels on a pod a StatefulSet creates with ordinal `i`:
/// a leader gets its group's index and key, a worker its index.
pub fn pod_webhook(pod: &mut Value, i: i64) {
    if label(pod, NAME_LABEL).is_empty() {
        return;
    }
    let labels = &mut pod["metadata"]["labels"];
    if label_is(labels, WORKER_INDEX_LABEL, "0") {
        let key = format!(
            "{}/{}",
            str_at(pod, "/metadata/namespace"),
            str_at(pod, "/metadata/name")
        );
        let hash = digest(&SHA1_FOR_LEGACY_USE_ONLY, key.as_bytes());
        let hex: String = hash.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        pod["metadata"]["labels"][GROUP_INDEX_LABEL] = json!(i.to_string());
        pod["metadata"]["labels"][GROUP_KEY_LABEL] = json!(hex);
    } else {
        labels[WORKER_INDEX_LABEL] = json!(i.to_string());
    }
}

fn label_is(labels: &Value, key: &str, value: &str) -> bool {
    labels.get(key).and_then(Value::as_str) == Some(value)
}

/// `template` with `labels` and `annotations` merged into its metadata.
fn with_meta(template: &Value, labels: &Value, annotations: &Value) -> Value {
    let mut t = if template.is_object() {
        template.clone()
    } else {
        json!({})
    };
    for (field, add) in [("labels", labels), ("annotations", annotations)] {
        if !t["metadata"][field].is_object() {
            t["metadata"][field] = json!({});
        }
        for (k, v) in add.as_object().into_iter().flatten() {
            t["metadata"][field][k] = v.clone();
        }
    }
    t
}

impl Manager {
    /// Reconcile one LeaderWorkerSet: its leader StatefulSet, a worker
    /// StatefulSet per leader pod, and the restart policy.
    pub(super) fn sync_leaderworkerset(&mut self, key: &Key) {
        let Some(lws) = self.cache.lws.get(key).cloned() else {
            return;
        };
        if deleting(&lws) {
            return;
        }
        let uid = str_at(&lws, "/metadata/uid").to_string();
        let (ns, name) = key.clone();
        let leader_set = (self.cache.statefulsets.owned_by(&uid).into_iter())
            .find(|s| str_at(s, "/metadata/name") == name);
        if leader_set.is_none() {
            let set = leader_statefulset(&lws);
            if let Ok(created) = self.store.create_shared(Kind::StatefulSet, set) {
                self.absorb(Kind::StatefulSet, created);
            }
            return;
        }
        if let Some(set) = &leader_set {
            let want = i64_at(&lws, "/spec/replicas").unwrap_or(DEFAULT_REPLICAS.into());
            if i64_at(set, "/spec/replicas") != Some(want) {
                let updated = self
                    .store
                    .mutate_shared(Kind::StatefulSet, Some(&ns), &name, |s| {
                        s["spec"]["replicas"] = json!(want);
                    });
                if let Ok(updated) = updated {
                    self.absorb(Kind::StatefulSet, updated);
                }
            }
        }
        let leader_uid = leader_set.map(|s| str_at(&s, "/metadata/uid").to_string());
        let leaders = leader_uid.map(|u| self.cache.pods.owned_by(&u));
        for leader in leaders.unwrap_or_default() {
            if deleting(&leader) {
                continue;
            }
            self.sync_group(&lws, &leader);
        }
    }

    /// One group: the worker StatefulSet of `leader`, and the group
    /// recreated when one of its pods is being deleted.
    fn sync_group(&mut self, lws: &Value, leader: &Value) {
        let ns = str_at(leader, "/metadata/namespace").to_string();
        let leader_name = str_at(leader, "/metadata/name").to_string();
        let leader_uid = str_at(leader, "/metadata/uid");
        let group_key = label(leader, GROUP_KEY_LABEL).to_string();
        let size = i64_at(lws, "/spec/leaderWorkerTemplate/size").unwrap_or(DEFAULT_SIZE.into());
        let policy = lws
            .pointer("/spec/leaderWorkerTemplate/restartPolicy")
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_RESTART_POLICY);
        let workers = self.cache.statefulsets.owned_by(leader_uid);
        let worker_pods: Vec<_> = (workers.iter())
            .flat_map(|s| self.cache.pods.owned_by(str_at(s, "/metadata/uid")))
            .collect();
        if policy == RECREATE_GROUP_ON_POD_RESTART && worker_pods.iter().any(|p| deleting(p)) {
            let _ = self.store.delete(Kind::Pod, Some(&ns), &leader_name, None);
            return;
        }
        if size <= 1 || !workers.is_empty() {
            return;
        }
        // The worker set of an earlier leader of the same name goes first
        // (the garbage collector takes it once that leader is gone).
        if self
            .store
            .get(Kind::StatefulSet, Some(&ns), &leader_name)
            .is_some()
        {
            return;
        }
        let set = worker_statefulset(lws, leader, &group_key, size);
        if let Ok(created) = self.store.create_shared(Kind::StatefulSet, set) {
            self.absorb(Kind::StatefulSet, created);
        }
    }

    /// Mark the StatefulSet controlling `v` (a pod) and the LeaderWorkerSet
    /// `v` belongs to (a pod or a StatefulSet), when there are.
    pub(super) fn mark_stateful_owners(&mut self, v: &Value, owner: Option<&str>) {
        if let Some(set) = owner.and_then(|u| self.cache.statefulsets.by_uid(u)) {
            let key = crate::cache::key_of(set);
            self.dirty.insert(crate::Work::StatefulSet(key));
        }
        let lws = label(v, NAME_LABEL);
        if !lws.is_empty() {
            let ns = str_at(v, "/metadata/namespace").to_string();
            let work = crate::Work::LeaderWorkerSet((ns, lws.to_string()));
            self.dirty.insert(work);
        }
    }
}

/// `constructLeaderStatefulSetApplyConfiguration`.
fn leader_statefulset(lws: &Value) -> Value {
    let name = str_at(lws, "/metadata/name");
    let size = i64_at(lws, "/spec/leaderWorkerTemplate/size").unwrap_or(DEFAULT_SIZE.into());
    let template = lws
        .pointer("/spec/leaderWorkerTemplate/leaderTemplate")
        .filter(|t| t.is_object())
        .or_else(|| lws.pointer("/spec/leaderWorkerTemplate/workerTemplate"))
        .cloned()
        .unwrap_or_default();
    let selector = json!({NAME_LABEL: name, WORKER_INDEX_LABEL: "0"});
    let annotations = json!({SIZE_ANNOTATION: size.to_string()});
    json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": str_at(lws, "/metadata/namespace"),
            "labels": {NAME_LABEL: name}, "annotations": annotations.clone(),
            "ownerReferences": [{"apiVersion": "leaderworkerset.x-k8s.io/v1",
                "kind": "LeaderWorkerSet", "name": name, "uid": str_at(lws, "/metadata/uid"),
                "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"replicas": i64_at(lws, "/spec/replicas").unwrap_or(DEFAULT_REPLICAS.into()),
            "podManagementPolicy": "Parallel", "serviceName": name,
            "selector": {"matchLabels": selector.clone()},
            "template": with_meta(&template, &selector, &annotations)},
    })
}

/// `constructWorkerStatefulSetApplyConfiguration`.
fn worker_statefulset(lws: &Value, leader: &Value, group_key: &str, size: i64) -> Value {
    let lws_name = str_at(lws, "/metadata/name");
    let leader_name = str_at(leader, "/metadata/name");
    let template = lws
        .pointer("/spec/leaderWorkerTemplate/workerTemplate")
        .cloned()
        .unwrap_or_default();
    let selector = json!({NAME_LABEL: lws_name, GROUP_KEY_LABEL: group_key});
    let mut labels = selector.clone();
    labels[GROUP_INDEX_LABEL] = json!(label(leader, GROUP_INDEX_LABEL));
    let annotations =
        json!({SIZE_ANNOTATION: size.to_string(), LEADER_NAME_ANNOTATION: leader_name});
    json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": leader_name, "namespace": str_at(leader, "/metadata/namespace"),
            "labels": labels.clone(),
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": leader_name,
                "uid": str_at(leader, "/metadata/uid"), "controller": true,
                "blockOwnerDeletion": true}]},
        "spec": {"replicas": size - 1, "ordinals": {"start": 1},
            "podManagementPolicy": "Parallel", "serviceName": lws_name,
            "selector": {"matchLabels": selector},
            "template": with_meta(&template, &labels, &annotations)},
    })
}
