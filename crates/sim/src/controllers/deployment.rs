//! Deployment and ReplicaSet controllers, ported from upstream's
//! `pkg/controller/deployment` (rolling.go, recreate.go, sync.go,
//! progress.go, util/deployment_util.go) and `pkg/controller/replicaset`.
//!
//! Simplifications (documented): proportional scaling of several active
//! ReplicaSets during a scale event gives the whole difference to the newest
//! one; rollback (`rollbackTo`) and `ReplicaFailure` conditions are not
//! modelled; there are no expectations because writes go through the cache
//! at once.

#![allow(clippy::collapsible_if, clippy::collapsible_match)] // nested ifs mirror upstream Go control flow

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::Manager;
use super::cache::{Key, controller_uid, key_of};
use crate::events;
use crate::json::{i64_at, str_at};
use crate::store::Kind;

pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";
pub const DESIRED_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/desired-replicas";
pub const MAX_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/max-replicas";
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";

pub use infera_model::rolling::{resolve_fenceposts, scaled_value};

fn replicas(d: &Value) -> i64 {
    i64_at(d, "/spec/replicas").unwrap_or(1)
}

fn is_rolling(d: &Value) -> bool {
    str_at(d, "/spec/strategy/type") != "Recreate"
}

fn max_surge(d: &Value) -> i64 {
    if !is_rolling(d) {
        return 0;
    }
    resolve_fenceposts(
        d.pointer("/spec/strategy/rollingUpdate/maxSurge"),
        d.pointer("/spec/strategy/rollingUpdate/maxUnavailable"),
        replicas(d),
    )
    .0
}

fn max_unavailable(d: &Value) -> i64 {
    let desired = replicas(d);
    if !is_rolling(d) || desired == 0 {
        return 0;
    }
    let (_, unavailable) = resolve_fenceposts(
        d.pointer("/spec/strategy/rollingUpdate/maxSurge"),
        d.pointer("/spec/strategy/rollingUpdate/maxUnavailable"),
        desired,
    );
    unavailable.min(desired)
}

/// The new ReplicaSet count for a rolling update (upstream `NewRSNewReplicas`,
/// k8s.io/kubernetes@v1.37.2 pkg/controller/deployment/util/deployment_util.go).
pub fn new_rs_new_replicas(
    desired: i64,
    surge: i64,
    all_rs_replicas: i64,
    new_rs_replicas: i64,
) -> i64 {
    let max_total = desired + surge;
    if all_rs_replicas >= max_total {
        return new_rs_replicas;
    }
    let scale_up = (max_total - all_rs_replicas).min(desired - new_rs_replicas);
    new_rs_replicas + scale_up
}

fn rs_replicas(rs: &Value) -> i64 {
    i64_at(rs, "/spec/replicas").unwrap_or(0)
}
fn rs_available(rs: &Value) -> i64 {
    i64_at(rs, "/status/availableReplicas").unwrap_or(0)
}

/// Upstream's `ComputeHash`: FNV-32a of the template (and collision count),
/// rendered with `rand.SafeEncodeString` of its decimal form.
pub fn pod_template_hash(template: &Value, collision_count: Option<i64>) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            hash ^= u32::from(*b);
            hash = hash.wrapping_mul(0x0100_0193);
        }
    };
    feed(
        serde_json::to_string(template)
            .unwrap_or_default()
            .as_bytes(),
    );
    if let Some(c) = collision_count {
        feed(c.to_string().as_bytes());
    }
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    hash.to_string()
        .bytes()
        .map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()]))
        .collect()
}

fn template_without_hash(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(labels) = t
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(POD_TEMPLATE_HASH);
        if labels.is_empty()
            && let Some(meta) = t.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.remove("labels");
        }
    }
    normalize(&mut t);
    t
}

/// [`template_without_hash`] of a ReplicaSet's template, remembered by the
/// ReplicaSet's uid while the template stays the same (it does not change
/// after creation), so a resync does not rebuild every one.
fn normalized_template<'m>(memo: &'m mut HashMap<String, (Value, Value)>, rs: &Value) -> &'m Value {
    let raw = rs.pointer("/spec/template").unwrap_or(&Value::Null);
    let uid = str_at(rs, "/metadata/uid");
    if memo.get(uid).is_none_or(|(known, _)| known != raw) {
        memo.insert(uid.to_string(), (raw.clone(), template_without_hash(raw)));
    }
    memo.get(uid)
        .map_or(&Value::Null, |(_, normalized)| normalized)
}

/// Drop empty maps and nulls so defaulted and undefaulted forms compare equal.
fn normalize(v: &mut Value) {
    if let Some(map) = v.as_object_mut() {
        for child in map.values_mut() {
            normalize(child);
        }
        map.retain(|_, c| !(c.is_null() || c.as_object().is_some_and(|m| m.is_empty())));
    } else if let Some(items) = v.as_array_mut() {
        for child in items {
            normalize(child);
        }
    }
}

fn rv(v: &Value) -> u64 {
    str_at(v, "/metadata/resourceVersion").parse().unwrap_or(0)
}

fn revision(v: &Value) -> i64 {
    str_at(
        v,
        &format!(
            "/metadata/annotations/{}",
            REVISION_ANNOTATION.replace('/', "~1")
        ),
    )
    .parse()
    .unwrap_or(0)
}

fn condition<'a>(status: &'a Value, type_: &str) -> Option<&'a Value> {
    status
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

fn make_condition(type_: &str, status: &str, reason: &str, message: &str, now: &str) -> Value {
    json!({"type": type_, "status": status, "lastUpdateTime": now, "lastTransitionTime": now,
           "reason": reason, "message": message})
}

/// Upstream `SetDeploymentCondition`.
fn set_condition(status: &mut Value, mut cond: Value) {
    let type_ = str_at(&cond, "/type").to_string();
    if let Some(current) = condition(status, &type_) {
        if current.get("status") == cond.get("status")
            && current.get("reason") == cond.get("reason")
        {
            return;
        }
        if current.get("status") == cond.get("status")
            && let Some(t) = current.get("lastTransitionTime")
        {
            cond["lastTransitionTime"] = t.clone();
        }
    }
    remove_condition(status, &type_);
    if let Some(list) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        list.push(cond);
    } else {
        status["conditions"] = json!([cond]);
    }
}

fn remove_condition(status: &mut Value, type_: &str) {
    if let Some(list) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        list.retain(|c| c.get("type").and_then(Value::as_str) != Some(type_));
    }
}

fn has_progress_deadline(d: &Value) -> Option<i64> {
    i64_at(d, "/spec/progressDeadlineSeconds").filter(|s| *s != i64::from(i32::MAX))
}

impl Manager {
    /// `syncDeployment`.
    /// `syncDeployment`, skipped when nothing it reads changed since a run
    /// that changed nothing: a RollingUpdate sync reads only the Deployment
    /// and its ReplicaSets (identified by their resource versions, unique
    /// store-wide) and the clock, and a run that wrote nothing and set no
    /// timer had no time-dependent step pending, so it would do nothing
    /// again. This keeps the 15 s resync of a settled cluster cheap.
    pub(super) fn sync_deployment(&mut self, key: &Key) {
        let fingerprint = self.cache.deployments.get(key).and_then(|d| {
            if !is_rolling(d) {
                return None; // Recreate also reads pods
            }
            let mut versions = vec![rv(d)];
            versions.extend(
                self.cache
                    .replicasets
                    .owned_by(str_at(d, "/metadata/uid"))
                    .iter()
                    .map(|rs| rv(rs)),
            );
            Some(versions)
        });
        if fingerprint.is_some() && self.settled.get(key) == fingerprint.as_ref() {
            return;
        }
        let version = self.store.resource_version();
        let requeues = self.requeues;
        self.sync_deployment_now(key);
        match fingerprint {
            Some(f) if self.store.resource_version() == version && self.requeues == requeues => {
                self.settled.insert(key.clone(), f);
            }
            _ => {
                self.settled.remove(key);
            }
        }
    }

    fn sync_deployment_now(&mut self, key: &Key) {
        let Some(d) = self.cache.deployments.get(key).cloned() else {
            return;
        };
        if d.pointer("/metadata/deletionTimestamp").is_some() {
            return;
        }
        let uid = str_at(&d, "/metadata/uid").to_string();
        let selector = d.pointer("/spec/selector").cloned().unwrap_or(Value::Null);
        if selector.as_object().is_none_or(|m| m.is_empty()) {
            return; // upstream: an empty selector selects nothing and is skipped
        }
        let mut d = (*d).clone();
        self.check_paused_conditions(&mut d);
        let all: Vec<Arc<Value>> = self.cache.replicasets.owned_by(&uid);
        let paused = d
            .pointer("/spec/paused")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let scaling = all.iter().any(|rs| {
            rs_replicas(rs) > 0
                && str_at(
                    rs,
                    &format!(
                        "/metadata/annotations/{}",
                        DESIRED_REPLICAS_ANNOTATION.replace('/', "~1")
                    ),
                )
                .parse::<i64>()
                .ok()
                    != Some(replicas(&d))
        });
        if paused || scaling {
            self.sync_scale(&d, all, paused);
            return;
        }
        if is_rolling(&d) {
            self.rollout_rolling(&d, all);
        } else {
            self.rollout_recreate(&d, all);
        }
    }

    fn check_paused_conditions(&mut self, d: &mut Value) {
        if has_progress_deadline(d).is_none() {
            return;
        }
        let mut status = d.get("status").cloned().unwrap_or_else(|| json!({}));
        let cond = condition(&status, "Progressing").cloned();
        if cond
            .as_ref()
            .is_some_and(|c| str_at(c, "/reason") == "ProgressDeadlineExceeded")
        {
            return;
        }
        let paused_exists = cond
            .as_ref()
            .is_some_and(|c| str_at(c, "/reason") == "DeploymentPaused");
        let paused = d
            .pointer("/spec/paused")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let now = self.clock.timestamp();
        let new = if paused && !paused_exists {
            make_condition(
                "Progressing",
                "Unknown",
                "DeploymentPaused",
                "Deployment is paused",
                &now,
            )
        } else if !paused && paused_exists {
            make_condition(
                "Progressing",
                "Unknown",
                "DeploymentResumed",
                "Deployment is resumed",
                &now,
            )
        } else {
            return;
        };
        set_condition(&mut status, new);
        // Compare against the stored status, not the one just edited (which
        // would make the write a no-op and lose the condition).
        let stored = d.clone();
        self.write_status(Kind::Deployment, &stored, status.clone());
        d["status"] = status;
    }

    /// Create the new ReplicaSet for `d`'s template (the create half of
    /// `getNewReplicaSet`); on a hash collision bump `collisionCount` and
    /// requeue. Returns it and the Progressing reason to record.
    fn create_new_rs(
        &mut self,
        d: &Value,
        old: &[Arc<Value>],
        new_revision: i64,
        ns: &str,
        name: &str,
    ) -> (Option<Arc<Value>>, Option<(&'static str, String)>) {
        let template = d
            .pointer("/spec/template")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let collision = i64_at(d, "/status/collisionCount");
        let hash = pod_template_hash(&template, collision);
        let rs_name = format!("{name}-{hash}");
        let mut template = template;
        template["metadata"]["labels"][POD_TEMPLATE_HASH] = Value::from(hash.clone());
        let mut selector = d
            .pointer("/spec/selector")
            .cloned()
            .unwrap_or_else(|| json!({}));
        selector["matchLabels"][POD_TEMPLATE_HASH] = Value::from(hash.clone());
        let mut labels = d
            .pointer("/spec/template/metadata/labels")
            .cloned()
            .unwrap_or_else(|| json!({}));
        labels[POD_TEMPLATE_HASH] = Value::from(hash.clone());
        let desired = replicas(d);
        let new_replicas = if is_rolling(d) {
            let all_replicas: i64 = old.iter().map(|rs| rs_replicas(rs)).sum();
            new_rs_new_replicas(desired, max_surge(d), all_replicas, 0)
        } else {
            desired
        };
        let mut rs = json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": rs_name, "namespace": ns, "labels": labels,
                "annotations": {REVISION_ANNOTATION: new_revision.to_string(),
                    DESIRED_REPLICAS_ANNOTATION: desired.to_string(),
                    MAX_REPLICAS_ANNOTATION: (desired + max_surge(d)).to_string()},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                    "uid": str_at(d, "/metadata/uid"), "controller": true, "blockOwnerDeletion": true}]},
            "spec": {"replicas": new_replicas, "selector": selector, "template": template},
        });
        if let Some(m) = d.pointer("/spec/minReadySeconds") {
            rs["spec"]["minReadySeconds"] = m.clone();
        }
        match self.store.create_shared(Kind::ReplicaSet, rs) {
            Ok(created) => {
                let created = self.absorb(Kind::ReplicaSet, created);
                if new_replicas > 0 {
                    // k8s.io/kubernetes@v1.37.2 pkg/controller/deployment/sync.go:286
                    self.scaling_event(d, &created, 0, new_replicas);
                }
                let reason = Some((
                    "NewReplicaSetCreated",
                    format!(
                        "Created new replica set {:?}",
                        str_at(&created, "/metadata/name")
                    ),
                ));
                (Some(created), reason)
            }
            Err(crate::store::StoreError::AlreadyExists) => {
                // A hash collision with a foreign ReplicaSet: bump collisionCount and retry on the next sync.
                let count = collision.unwrap_or(0) + 1;
                let _ = self
                    .store
                    .mutate_shared(Kind::Deployment, Some(ns), name, |v| {
                        v["status"]["collisionCount"] = Value::from(count);
                    });
                self.requeue(super::Work::Deployment(key_of(d)), Duration::ZERO);
                (None, None)
            }
            Err(_) => (None, None),
        }
    }

    /// Copy the new ReplicaSet's revision annotation onto the Deployment.
    fn sync_deployment_revision(&mut self, d: &Value, ns: &str, name: &str, rs: &Value) {
        let rev = revision(rs).to_string();
        if str_at(
            d,
            &format!(
                "/metadata/annotations/{}",
                REVISION_ANNOTATION.replace('/', "~1")
            ),
        ) != rev
        {
            if let Ok(updated) = self
                .store
                .mutate_shared(Kind::Deployment, Some(ns), name, |v| {
                    v["metadata"]["annotations"][REVISION_ANNOTATION] = Value::from(rev.clone());
                })
            {
                self.absorb(Kind::Deployment, updated);
            }
        }
    }

    /// Split owned ReplicaSets into (new, old) and sync revision annotations,
    /// creating the new one when asked (`getAllReplicaSetsAndSyncRevision`).
    fn new_and_old(
        &mut self,
        d: &Value,
        mut all: Vec<Arc<Value>>,
        create: bool,
    ) -> (Option<Arc<Value>>, Vec<Arc<Value>>) {
        all.sort_by(|a, b| {
            str_at(a, "/metadata/creationTimestamp")
                .cmp(str_at(b, "/metadata/creationTimestamp"))
                .then_with(|| str_at(a, "/metadata/name").cmp(str_at(b, "/metadata/name")))
        });
        let wanted = template_without_hash(d.pointer("/spec/template").unwrap_or(&Value::Null));
        let memo = &mut self.rs_templates;
        let position = all
            .iter()
            .position(|rs| normalized_template(memo, rs) == &wanted);
        let mut new_rs = position.map(|i| all.remove(i));
        let old = all;
        let max_old_revision = old.iter().map(|rs| revision(rs)).max().unwrap_or(0);
        let new_revision = max_old_revision + 1;
        let ns = str_at(d, "/metadata/namespace").to_string();
        let name = str_at(d, "/metadata/name").to_string();
        let now = self.clock.timestamp();
        let mut progressing_reason = None;
        match new_rs.clone() {
            Some(rs) => {
                let rs: &Value = &rs;
                let desired = replicas(d).to_string();
                let max = (replicas(d) + max_surge(d)).to_string();
                let rs_revision = revision(rs);
                let needs = rs_revision < new_revision && rs_revision <= max_old_revision
                    || str_at(
                        rs,
                        &format!(
                            "/metadata/annotations/{}",
                            DESIRED_REPLICAS_ANNOTATION.replace('/', "~1")
                        ),
                    ) != desired
                    || str_at(
                        rs,
                        &format!(
                            "/metadata/annotations/{}",
                            MAX_REPLICAS_ANNOTATION.replace('/', "~1")
                        ),
                    ) != max
                    || i64_at(rs, "/spec/minReadySeconds") != i64_at(d, "/spec/minReadySeconds");
                if needs {
                    let rev = if rs_revision <= max_old_revision {
                        new_revision
                    } else {
                        rs_revision
                    };
                    let min_ready = d.pointer("/spec/minReadySeconds").cloned();
                    let rs_name = str_at(rs, "/metadata/name").to_string();
                    if let Ok(updated) =
                        self.store
                            .mutate_shared(Kind::ReplicaSet, Some(&ns), &rs_name, |v| {
                                v["metadata"]["annotations"][REVISION_ANNOTATION] =
                                    Value::from(rev.to_string());
                                v["metadata"]["annotations"][DESIRED_REPLICAS_ANNOTATION] =
                                    Value::from(desired.clone());
                                v["metadata"]["annotations"][MAX_REPLICAS_ANNOTATION] =
                                    Value::from(max.clone());
                                if let Some(m) = min_ready {
                                    v["spec"]["minReadySeconds"] = m;
                                }
                            })
                    {
                        new_rs = Some(self.absorb(Kind::ReplicaSet, updated));
                    }
                }
                let has_progressing = d
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .is_some_and(|cs| cs.iter().any(|c| str_at(c, "/type") == "Progressing"));
                if !has_progressing && has_progress_deadline(d).is_some() {
                    progressing_reason = Some((
                        "FoundNewReplicaSet",
                        format!("Found new replica set {:?}", str_at(rs, "/metadata/name")),
                    ));
                }
            }
            None if create => {
                let (created, reason) = self.create_new_rs(d, &old, new_revision, &ns, &name);
                new_rs = created;
                progressing_reason = reason;
            }
            None => {}
        }
        // The Deployment carries the new ReplicaSet's revision.
        if let Some(rs) = new_rs.as_ref() {
            self.sync_deployment_revision(d, &ns, &name, rs);
        }
        if let Some((reason, message)) = progressing_reason
            && let Some(current) = self.cache.deployments.get(&key_of(d)).cloned()
        {
            let mut status = current.get("status").cloned().unwrap_or_else(|| json!({}));
            set_condition(
                &mut status,
                make_condition("Progressing", "True", reason, &message, &now),
            );
            self.write_status(Kind::Deployment, &current, status);
        }
        (new_rs, old)
    }

    /// The cached Deployment (our status and annotation writes of this sync
    /// included) with the spec and generation of `synced`, the snapshot this
    /// sync acted on. A write of ours returns, and caches, the latest stored
    /// object, which may carry a newer spec from the API: reporting its
    /// generation as observed would claim a spec no one acted on (upstream
    /// writes status onto its snapshot). The newer spec gets its own sync.
    fn refreshed(&self, synced: &Value) -> Value {
        let mut d = self
            .cache
            .deployments
            .get(&key_of(synced))
            .map(|v| (**v).clone())
            .unwrap_or_else(|| synced.clone());
        if let Some(map) = d.as_object_mut() {
            match synced.get("spec") {
                Some(spec) => map.insert("spec".into(), spec.clone()),
                None => map.remove("spec"),
            };
        }
        if let Some(meta) = d.get_mut("metadata").and_then(Value::as_object_mut) {
            match synced.pointer("/metadata/generation") {
                Some(g) => meta.insert("generation".into(), g.clone()),
                None => meta.remove("generation"),
            };
        }
        d
    }

    fn scale_rs(&mut self, rs: &Value, to: i64, d: &Value) -> Arc<Value> {
        let ns = str_at(rs, "/metadata/namespace").to_string();
        let name = str_at(rs, "/metadata/name").to_string();
        let desired = replicas(d).to_string();
        let max = (replicas(d) + max_surge(d)).to_string();
        let from = rs_replicas(rs);
        match self
            .store
            .mutate_shared(Kind::ReplicaSet, Some(&ns), &name, |v| {
                v["spec"]["replicas"] = Value::from(to);
                v["metadata"]["annotations"][DESIRED_REPLICAS_ANNOTATION] = Value::from(desired);
                v["metadata"]["annotations"][MAX_REPLICAS_ANNOTATION] = Value::from(max);
            }) {
            Ok(updated) => {
                if from != to {
                    self.scaling_event(d, &updated, from, to);
                }
                self.absorb(Kind::ReplicaSet, updated)
            }
            Err(_) => Arc::new(rs.clone()),
        }
    }

    /// `ScalingReplicaSet`, worded as k8s.io/kubernetes@v1.37.2
    /// pkg/controller/deployment/sync.go (scaleReplicaSet, getNewReplicaSet).
    fn scaling_event(&self, d: &Value, rs: &Value, from: i64, to: i64) {
        let op = if from < to { "up" } else { "down" };
        let rs_name = str_at(rs, "/metadata/name");
        events::record(
            &self.store,
            &events::Event {
                component: "deployment-controller",
                involved: d,
                type_: "Normal",
                reason: "ScalingReplicaSet",
                message: format!("Scaled {op} replica set {rs_name} from {from} to {to}"),
                action: None,
            },
        );
    }

    /// `SuccessfulCreate` / `SuccessfulDelete` of the ReplicaSet controller
    /// (k8s.io/kubernetes@v1.37.2 pkg/controller/controller_utils.go:614,634).
    fn pod_event(&self, rs: &Value, reason: &str, message: String) {
        events::record(
            &self.store,
            &events::Event {
                component: "replicaset-controller",
                involved: rs,
                type_: "Normal",
                reason,
                message,
                action: None,
            },
        );
    }

    fn rollout_rolling(&mut self, d: &Value, all: Vec<Arc<Value>>) {
        let (new_rs, old) = self.new_and_old(d, all, true);
        let Some(mut new_rs) = new_rs else {
            return;
        };
        let d = self.refreshed(d);
        let desired = replicas(&d);
        // reconcileNewReplicaSet
        let new_count = rs_replicas(&new_rs);
        let mut scaled = false;
        if new_count > desired {
            new_rs = self.scale_rs(&new_rs, desired, &d);
            scaled = true;
        } else if new_count < desired {
            let all_replicas: i64 = old.iter().map(|rs| rs_replicas(rs)).sum::<i64>() + new_count;
            let target = new_rs_new_replicas(desired, max_surge(&d), all_replicas, new_count);
            if target != new_count {
                new_rs = self.scale_rs(&new_rs, target, &d);
                scaled = true;
            }
        }
        if !scaled {
            scaled = self.reconcile_old(&d, &new_rs, old.clone());
        }
        let old = old
            .iter()
            .map(|rs| {
                self.cache
                    .replicasets
                    .get(&key_of(rs))
                    .cloned()
                    .unwrap_or_else(|| rs.clone())
            })
            .collect::<Vec<_>>();
        let _ = scaled;
        self.sync_rollout_status(&d, Some(&new_rs), &old);
    }

    /// reconcileOldReplicaSets + cleanupUnhealthyReplicas + scaleDownOldReplicaSetsForRollingUpdate.
    fn reconcile_old(&mut self, d: &Value, new_rs: &Value, mut old: Vec<Arc<Value>>) -> bool {
        let old_pods: i64 = old.iter().map(|rs| rs_replicas(rs)).sum();
        if old_pods == 0 {
            return false;
        }
        let all_pods = old_pods + rs_replicas(new_rs);
        let min_available = replicas(d) - max_unavailable(d);
        let new_unavailable = rs_replicas(new_rs) - rs_available(new_rs);
        let max_scaled_down = all_pods - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return false;
        }
        // Oldest first (already sorted by creation).
        let mut cleaned = 0;
        for rs in old.iter_mut() {
            if cleaned >= max_scaled_down {
                break;
            }
            let count = rs_replicas(rs);
            let available = rs_available(rs);
            if count == 0 || count == available {
                continue;
            }
            let down = (max_scaled_down - cleaned).min(count - available);
            *rs = self.scale_rs(rs, count - down, d);
            cleaned += down;
        }
        // scaleDownOldReplicaSetsForRollingUpdate
        let available: i64 =
            old.iter().map(|rs| rs_available(rs)).sum::<i64>() + rs_available(new_rs);
        let mut scaled_down = 0;
        if available > min_available {
            let total = available - min_available;
            for rs in old.iter_mut() {
                if scaled_down >= total {
                    break;
                }
                let count = rs_replicas(rs);
                if count == 0 {
                    continue;
                }
                let down = count.min(total - scaled_down);
                *rs = self.scale_rs(rs, count - down, d);
                scaled_down += down;
            }
        }
        cleaned + scaled_down > 0
    }

    fn rollout_recreate(&mut self, d: &Value, all: Vec<Arc<Value>>) {
        let (mut new_rs, old) = self.new_and_old(d, all, false);
        let mut scaled = false;
        let mut old_now = Vec::new();
        for rs in &old {
            if rs_replicas(rs) > 0 {
                old_now.push(self.scale_rs(rs, 0, d));
                scaled = true;
            } else {
                old_now.push(rs.clone());
            }
        }
        let old_running = old.iter().any(|rs| {
            self.cache
                .pods
                .owned_by(str_at(rs, "/metadata/uid"))
                .iter()
                .any(|p| !matches!(str_at(p, "/status/phase"), "Succeeded" | "Failed"))
        });
        if !scaled && !old_running {
            if new_rs.is_none() {
                new_rs = self
                    .new_and_old(
                        d,
                        self.cache.replicasets.owned_by(str_at(d, "/metadata/uid")),
                        true,
                    )
                    .0;
            }
            if let Some(rs) = new_rs.clone()
                && rs_replicas(&rs) != replicas(d)
            {
                new_rs = Some(self.scale_rs(&rs, replicas(d), d));
            }
        }
        let d = self.refreshed(d);
        self.sync_rollout_status(&d, new_rs.as_deref(), &old_now);
    }

    /// `sync` for paused deployments and scaling events.
    fn sync_scale(&mut self, d: &Value, all: Vec<Arc<Value>>, _paused: bool) {
        let (new_rs, old) = self.new_and_old(d, all, false);
        let desired = replicas(d);
        let active: Vec<Arc<Value>> = new_rs
            .iter()
            .chain(old.iter())
            .filter(|rs| rs_replicas(rs) > 0)
            .cloned()
            .collect();
        let mut new_rs = new_rs;
        if active.len() <= 1 {
            let target = active.first().cloned().or_else(|| new_rs.clone());
            if let Some(rs) = target
                && rs_replicas(&rs) != desired
            {
                let updated = self.scale_rs(&rs, desired, d);
                if new_rs
                    .as_ref()
                    .is_some_and(|n| key_of(n) == key_of(&updated))
                {
                    new_rs = Some(updated);
                }
            }
        } else if let Some(rs) = new_rs.clone() {
            // Give the difference to the newest ReplicaSet (simplified
            // proportional scaling). Upstream (k8s.io/kubernetes@v1.37.2 pkg/controller/deployment/sync.go
            // `scale`, util/deployment_util.go `GetReplicaSetProportion`,
            // `getReplicaSetFraction`) shares it among the active
            // ReplicaSets by their size, rounding each share and giving
            // the leftover to the largest.
            let total: i64 = active.iter().map(|r| rs_replicas(r)).sum();
            let allowed = desired + max_surge(d);
            let target = (rs_replicas(&rs) + allowed - total).max(0);
            if target != rs_replicas(&rs) {
                new_rs = Some(self.scale_rs(&rs, target, d));
            }
        }
        let d = self.refreshed(d);
        let old: Vec<Arc<Value>> = old
            .iter()
            .map(|rs| {
                self.cache
                    .replicasets
                    .get(&key_of(rs))
                    .cloned()
                    .unwrap_or_else(|| rs.clone())
            })
            .collect();
        let status = self.calculate_status(&d, new_rs.as_deref(), &old);
        self.write_status(Kind::Deployment, &d, status);
    }

    fn calculate_status(&self, d: &Value, new_rs: Option<&Value>, old: &[Arc<Value>]) -> Value {
        let all: Vec<&Value> = new_rs
            .into_iter()
            .chain(old.iter().map(|v| v.as_ref()))
            .collect();
        let sum = |p: &str| all.iter().map(|rs| i64_at(rs, p).unwrap_or(0)).sum::<i64>();
        let available = sum("/status/availableReplicas");
        let total_spec = sum("/spec/replicas");
        let mut status = d.get("status").cloned().unwrap_or_else(|| json!({}));
        if !status.is_object() {
            status = json!({});
        }
        // As upstream's `calculateStatus` (k8s.io/kubernetes@v1.37.2 pkg/controller/deployment/sync.go): every
        // sync that writes status records the generation it acted on.
        status["observedGeneration"] = Value::from(i64_at(d, "/metadata/generation").unwrap_or(1));
        status["replicas"] = Value::from(sum("/status/replicas"));
        status["updatedReplicas"] = Value::from(
            new_rs
                .and_then(|rs| i64_at(rs, "/status/replicas"))
                .unwrap_or(0),
        );
        status["readyReplicas"] = Value::from(sum("/status/readyReplicas"));
        status["availableReplicas"] = Value::from(available);
        status["unavailableReplicas"] = Value::from((total_spec - available).max(0));
        // Omit zero counts as the API does (omitempty).
        if let Some(map) = status.as_object_mut() {
            for k in [
                "replicas",
                "updatedReplicas",
                "readyReplicas",
                "availableReplicas",
                "unavailableReplicas",
            ] {
                if map.get(k).and_then(Value::as_i64) == Some(0) {
                    map.remove(k);
                }
            }
        }
        let now = self.clock.timestamp();
        if available >= replicas(d) - max_unavailable(d) {
            set_condition(
                &mut status,
                make_condition(
                    "Available",
                    "True",
                    "MinimumReplicasAvailable",
                    "Deployment has minimum availability.",
                    &now,
                ),
            );
        } else {
            set_condition(
                &mut status,
                make_condition(
                    "Available",
                    "False",
                    "MinimumReplicasUnavailable",
                    "Deployment does not have minimum availability.",
                    &now,
                ),
            );
        }
        status
    }

    fn sync_rollout_status(&mut self, d: &Value, new_rs: Option<&Value>, old: &[Arc<Value>]) {
        let mut status = self.calculate_status(d, new_rs, old);
        let get = |s: &Value, k: &str| s.get(k).and_then(Value::as_i64).unwrap_or(0);
        let old_status = d.get("status").cloned().unwrap_or_else(|| json!({}));
        let desired = replicas(d);
        let deadline = has_progress_deadline(d);
        if deadline.is_none() {
            remove_condition(&mut status, "Progressing");
        }
        let current = condition(&status, "Progressing").cloned();
        let complete_already = get(&status, "replicas") == get(&status, "updatedReplicas")
            && current
                .as_ref()
                .is_some_and(|c| str_at(c, "/reason") == "NewReplicaSetAvailable");
        let rs_name = new_rs
            .map(|rs| str_at(rs, "/metadata/name").to_string())
            .unwrap_or_default();
        let now = self.clock.timestamp();
        if let Some(deadline) = deadline
            && !complete_already
        {
            let complete = get(&status, "updatedReplicas") == desired
                && get(&status, "replicas") == desired
                && get(&status, "availableReplicas") == desired
                && get(&status, "observedGeneration")
                    >= i64_at(d, "/metadata/generation").unwrap_or(1);
            let old_old = get(&old_status, "replicas") - get(&old_status, "updatedReplicas");
            let new_old = get(&status, "replicas") - get(&status, "updatedReplicas");
            let progressing = get(&status, "updatedReplicas") > get(&old_status, "updatedReplicas")
                || new_old < old_old
                || get(&status, "readyReplicas") > get(&old_status, "readyReplicas")
                || get(&status, "availableReplicas") > get(&old_status, "availableReplicas");
            if complete {
                set_condition(
                    &mut status,
                    make_condition(
                        "Progressing",
                        "True",
                        "NewReplicaSetAvailable",
                        &format!("ReplicaSet {rs_name:?} has successfully progressed."),
                        &now,
                    ),
                );
            } else if progressing {
                let mut cond = make_condition(
                    "Progressing",
                    "True",
                    "ReplicaSetUpdated",
                    &format!("ReplicaSet {rs_name:?} is progressing."),
                    &now,
                );
                if let Some(c) = current.as_ref() {
                    if str_at(c, "/status") == "True"
                        && let Some(t) = c.get("lastTransitionTime")
                    {
                        cond["lastTransitionTime"] = t.clone();
                    }
                    remove_condition(&mut status, "Progressing");
                }
                set_condition(&mut status, cond);
            } else if let Some(c) = current.as_ref() {
                let reason = str_at(c, "/reason");
                if reason != "NewReplicaSetAvailable"
                    && reason != "ProgressDeadlineExceeded"
                    && str_at(c, "/status") != "Unknown"
                {
                    // Upstream's `DeploymentTimedOut`
                    // (k8s.io/kubernetes@v1.37.2 pkg/controller/deployment/util/deployment_util.go, called
                    // from progress.go `syncRolloutStatus`) compares
                    // lastUpdateTime + progressDeadlineSeconds with the wall
                    // clock; the sim uses its scaled clock (a documented
                    // difference: 600 s at speed 20 is 30 s of wall time).
                    let since = self.clock.sim_since(str_at(c, "/lastUpdateTime"));
                    let limit = Duration::from_secs(u64::try_from(deadline.max(0)).unwrap_or(0));
                    if since > limit {
                        set_condition(
                            &mut status,
                            make_condition(
                                "Progressing",
                                "False",
                                "ProgressDeadlineExceeded",
                                &format!("ReplicaSet {rs_name:?} has timed out progressing."),
                                &now,
                            ),
                        );
                    } else {
                        // requeueStuckDeployment
                        self.requeue(
                            super::Work::Deployment(key_of(d)),
                            limit - since + Duration::from_millis(1),
                        );
                    }
                }
            }
        }
        self.write_status(Kind::Deployment, d, status);
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
        let want = rs_replicas(&rs);
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
                super::Work::ReplicaSet(key.clone()),
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

/// The controller uid helper re-exported for the manager.
pub fn owner(v: &Value) -> Option<&str> {
    controller_uid(v)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenceposts_round_as_upstream() {
        let v = |s: &str| Value::from(s);
        let cases: [(i64, Value, Value, (i64, i64)); 10] = [
            (1, v("25%"), v("25%"), (1, 0)),
            (4, v("25%"), v("25%"), (1, 1)),
            (10, v("25%"), v("25%"), (3, 2)),
            (3, v("50%"), v("50%"), (2, 1)),
            (1, json!(0), json!(0), (0, 1)),
            (1, json!(1), json!(0), (1, 0)),
            (1, json!(0), json!(1), (0, 1)),
            (5, v("0%"), v("10%"), (0, 1)),
            (10, v("10%"), json!(0), (1, 0)),
            (7, json!(2), v("30%"), (2, 2)),
        ];
        for (replicas, surge, unavailable, want) in cases {
            assert_eq!(
                resolve_fenceposts(Some(&surge), Some(&unavailable), replicas),
                want,
                "replicas {replicas} surge {surge} unavailable {unavailable}"
            );
        }
        assert_eq!(resolve_fenceposts(None, None, 1), (1, 0));
    }

    #[test]
    fn new_replica_set_scale_up() {
        // desired, surge, all, new -> target
        for (desired, surge, all, new, want) in [
            (1, 1, 1, 0, 1),
            (1, 0, 1, 0, 0),
            (3, 1, 3, 0, 1),
            (3, 1, 4, 1, 1),
            (3, 2, 3, 0, 2),
            (3, 5, 3, 0, 3),
        ] {
            assert_eq!(new_rs_new_replicas(desired, surge, all, new), want);
        }
    }

    #[test]
    fn template_hash_is_stable_and_safe() {
        let t = json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "m", "image": "a"}]}});
        let h = pod_template_hash(&t, None);
        assert_eq!(h, pod_template_hash(&t, None));
        assert_ne!(h, pod_template_hash(&t, Some(1)));
        assert!(h.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}
