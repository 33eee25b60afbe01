//! The Deployment sync steps every strategy shares: finding (or creating)
//! the new ReplicaSet and syncing revisions (`getAllReplicaSetsAndSyncRevision`,
//! `getNewReplicaSet`), scaling a ReplicaSet (`scaleReplicaSet`), paused and
//! scaling-event syncs (`sync`, `scale`), `checkPausedConditions` and
//! `calculateStatus`.
//!
//! Mirrors k8s.io/kubernetes `pkg/controller/deployment/sync.go`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::util::{
    DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION, POD_TEMPLATE_HASH, REVISION_ANNOTATION,
    condition, has_progress_deadline, is_rolling, make_condition, max_surge, max_unavailable,
    new_rs_new_replicas, normalized_template, pod_template_hash, replicas, revision, rs_replicas,
    set_condition, template_without_hash,
};
use crate::cache::key_of;
use crate::{Manager, Work};
use infera_sim_core::json::{i64_at, str_at};
use infera_sim_core::kind::Kind;
use infera_sim_store::recorder;

impl Manager {
    pub(super) fn check_paused_conditions(&mut self, d: &mut Value) {
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
            Err(infera_sim_store::StoreError::AlreadyExists) => {
                // A hash collision with a foreign ReplicaSet: bump collisionCount and retry on the next sync.
                let count = collision.unwrap_or(0) + 1;
                let _ = self
                    .store
                    .mutate_shared(Kind::Deployment, Some(ns), name, |v| {
                        v["status"]["collisionCount"] = Value::from(count);
                    });
                self.requeue(Work::Deployment(key_of(d)), Duration::ZERO);
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
    pub(super) fn new_and_old(
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
    pub(super) fn refreshed(&self, synced: &Value) -> Value {
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

    pub(super) fn scale_rs(&mut self, rs: &Value, to: i64, d: &Value) -> Arc<Value> {
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
        recorder::record(
            &self.store,
            &recorder::Event {
                component: "deployment-controller",
                involved: d,
                type_: "Normal",
                reason: "ScalingReplicaSet",
                message: format!("Scaled {op} replica set {rs_name} from {from} to {to}"),
                action: None,
            },
        );
    }

    /// `sync` for paused deployments and scaling events.
    pub(super) fn sync_scale(&mut self, d: &Value, all: Vec<Arc<Value>>, _paused: bool) {
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
        let old = self.cached(&old);
        let status = self.calculate_status(&d, new_rs.as_deref(), &old);
        self.write_status(Kind::Deployment, &d, status);
    }

    /// The cached (latest) version of each ReplicaSet in `replicasets`: this
    /// sync's own writes included.
    pub(super) fn cached(&self, replicasets: &[Arc<Value>]) -> Vec<Arc<Value>> {
        replicasets
            .iter()
            .map(|rs| {
                self.cache
                    .replicasets
                    .get(&key_of(rs))
                    .cloned()
                    .unwrap_or_else(|| rs.clone())
            })
            .collect()
    }

    pub(super) fn calculate_status(
        &self,
        d: &Value,
        new_rs: Option<&Value>,
        old: &[Arc<Value>],
    ) -> Value {
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
}
