//! The infera operator over the API: InferaDeployment → Deployments through
//! `infera_model::operator::workload::render` (the function lint uses), as the
//! scenario's `operator` generation renders them, replacing the whole
//! spec when it differs (so hand edits revert), on every change of an
//! InferaDeployment or of a Deployment it owns and every 15 s of scenario
//! time; `status.services` (`kind`, `replicas`, `readyReplicas`) and
//! `status.state` (`pending` until every Deployment completed, then
//! `ready`), shaped as the InferaDeployment CRD's status schema, through
//! the status subresource. Beside the Deployments it applies the discovery
//! RBAC and the Service of every `componentType: server` service. It renders no LeaderWorkerSets (one created
//! directly is run by `infera_sim_controllers`' LeaderWorkerSet controller).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::{Value, json};

use super::{Shared, status_code, toleration};
use infera_model::api::INFERA_DEPLOYMENT;
use infera_sim_core::json::{i64_at, str_at};
use infera_sim_core::kind::Kind;

type Key = (String, String);

const RESYNC: Duration = Duration::from_secs(15);

fn key_of(v: &Value) -> Key {
    (
        str_at(v, "/metadata/namespace").to_string(),
        str_at(v, "/metadata/name").to_string(),
    )
}

struct Operator {
    shared: Arc<Shared>,
    idep_resource: ApiResource,
    deploy_resource: ApiResource,
    ideps: HashMap<Key, Value>,
    deployments: HashMap<Key, Value>,
    /// Deployment -> (the spec last applied or found equal, its generation).
    applied: HashMap<Key, (String, i64)>,
    /// InferaDeployment UIDs whose discovery ServiceAccount, Role and
    /// RoleBinding were applied (or are not served by this API server).
    discovery: BTreeSet<String>,
    /// `uid/generation` of the InferaDeployments whose Services were applied.
    services: BTreeSet<String>,
    dirty: BTreeSet<Key>,
}

/// Run the operator until aborted.
pub(super) async fn run(shared: Arc<Shared>) {
    let idep_resource = infera_cluster::inferadeployment_resource();
    let deploy_resource = ApiResource::erase::<Deployment>(&());
    let client = shared.client.clone();
    let ideps = watcher::watcher(
        Api::<DynamicObject>::all_with(client.clone(), &idep_resource),
        watcher::Config::default(),
    )
    .backoff(infera_cluster::watch_backoff());
    let deps = watcher::watcher(
        Api::<DynamicObject>::all_with(client, &deploy_resource),
        watcher::Config::default(),
    )
    .backoff(infera_cluster::watch_backoff());
    let (mut ideps, mut deps) = (std::pin::pin!(ideps), std::pin::pin!(deps));
    let mut tick = tokio::time::interval(shared.clock.to_wall(RESYNC));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut op = Operator {
        shared,
        idep_resource,
        deploy_resource,
        ideps: HashMap::new(),
        deployments: HashMap::new(),
        applied: HashMap::new(),
        discovery: BTreeSet::new(),
        services: BTreeSet::new(),
        dirty: BTreeSet::new(),
    };
    loop {
        tokio::select! {
            Some(e) = ideps.next() => if let Ok(e) = e { op.on_idep(e) },
            Some(e) = deps.next() => if let Ok(e) = e { op.on_deployment(e) },
            _ = tick.tick() => op.dirty.extend(op.ideps.keys().cloned()),
        }
        for key in std::mem::take(&mut op.dirty) {
            op.reconcile(&key).await;
        }
    }
}

fn to_value(o: DynamicObject) -> Option<Value> {
    serde_json::to_value(o).ok()
}

impl Operator {
    fn on_idep(&mut self, e: Event<DynamicObject>) {
        match e {
            Event::Apply(o) | Event::InitApply(o) => {
                if let Some(v) = to_value(o) {
                    let key = key_of(&v);
                    self.dirty.insert(key.clone());
                    self.ideps.insert(key, v);
                }
            }
            Event::Delete(o) => {
                if let Some(v) = to_value(o) {
                    self.ideps.remove(&key_of(&v));
                }
            }
            Event::Init => self.ideps.clear(),
            Event::InitDone => self.dirty.extend(self.ideps.keys().cloned()),
        }
    }

    fn on_deployment(&mut self, e: Event<DynamicObject>) {
        let (v, deleted) = match e {
            Event::Apply(o) | Event::InitApply(o) => (to_value(o), false),
            Event::Delete(o) => (to_value(o), true),
            Event::Init => {
                self.deployments.clear();
                return;
            }
            Event::InitDone => return,
        };
        let Some(v) = v else {
            return;
        };
        let key = key_of(&v);
        let owner = v
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|r| str_at(r, "/kind") == "InferaDeployment")
            .map(|r| (key.0.clone(), str_at(r, "/name").to_string()));
        if let Some(owner) = owner.filter(|o| self.ideps.contains_key(o)) {
            self.dirty.insert(owner);
        }
        if deleted {
            self.deployments.remove(&key);
            self.applied.remove(&key);
        } else {
            self.deployments.insert(key, v);
        }
    }

    /// The Deployment the operator wants for one rendered workload.
    fn desired(&self, idep: &Value, mut obj: Value) -> Value {
        if self.shared.options.taint {
            let spec = &mut obj["spec"]["template"]["spec"];
            match spec.get_mut("tolerations").and_then(Value::as_array_mut) {
                Some(list) => list.push(toleration()),
                None => spec["tolerations"] = json!([toleration()]),
            }
        }
        infera_sim_core::defaults::apply(Kind::Deployment, &mut obj);
        obj["metadata"]["namespace"] = Value::from(str_at(idep, "/metadata/namespace"));
        obj["metadata"]["ownerReferences"] = owner_references(idep);
        obj
    }

    async fn reconcile(&mut self, key: &Key) {
        let Some(idep) = self.ideps.get(key).cloned() else {
            return;
        };
        if idep.pointer("/metadata/deletionTimestamp").is_some() {
            return;
        }
        let generation = self.shared.scenario.operator;
        let Ok(typed) = infera_model::operator::typed(idep.clone()) else {
            return;
        };
        let workloads = infera_model::operator::workload::render(&typed, generation);
        self.ensure_discovery(&idep).await;
        self.ensure_services(&idep, &typed).await;
        let mut services = serde_json::Map::new();
        let mut all_ready = true;
        for w in workloads {
            if w.kind != infera_model::operator::WorkloadKind::Deployment {
                continue;
            }
            let want = self.desired(&idep, w.object());
            let d = self.ensure(&key.0, want).await.unwrap_or_default();
            let (ready, complete) = deployment_progress(&d);
            all_ready &= complete;
            services.insert(
                w.service.clone(),
                json!({"kind": "Deployment", "replicas": i64_at(&d, "/spec/replicas").unwrap_or(1),
                    "readyReplicas": ready}),
            );
        }
        // The CRD's enum: initializing | pending | ready | failed.
        let state = if all_ready { "ready" } else { "pending" };
        self.write_status(key, &idep, services, state).await;
    }

    /// Create the Deployment, or replace its spec, labels and owners when
    /// they differ from `want`; the Deployment as it now is.
    async fn ensure(&mut self, ns: &str, want: Value) -> Option<Value> {
        let key = (ns.to_string(), str_at(&want, "/metadata/name").to_string());
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.shared.client.clone(), ns, &self.deploy_resource);
        let desired_spec = want.get("spec").map(Value::to_string).unwrap_or_default();
        let Some(current) = self.deployments.get(&key).cloned() else {
            let obj: DynamicObject = serde_json::from_value(want).ok()?;
            let created = api
                .create(&PostParams::default(), &obj)
                .await
                .ok()
                .and_then(to_value)?;
            self.remember(&key, desired_spec, &created);
            return Some(created);
        };
        let generation = i64_at(&current, "/metadata/generation").unwrap_or(0);
        if self.applied.get(&key) == Some(&(desired_spec.clone(), generation)) {
            return Some(current);
        }
        let same = current.get("spec") == want.get("spec")
            && current.pointer("/metadata/labels") == want.pointer("/metadata/labels");
        if same {
            self.remember(&key, desired_spec, &current);
            return Some(current);
        }
        let mut obj = current.clone();
        for (path, field) in [
            ("spec", None),
            ("metadata", Some("labels")),
            ("metadata", Some("ownerReferences")),
        ] {
            let src = match field {
                None => want.get(path).cloned(),
                Some(f) => want.get(path).and_then(|m| m.get(f)).cloned(),
            };
            match (field, src) {
                (None, Some(v)) => obj[path] = v,
                (Some(f), Some(v)) => obj[path][f] = v,
                _ => {}
            }
        }
        // Unconditional, as the operator owns the spec.
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
        }
        let obj: DynamicObject = serde_json::from_value(obj).ok()?;
        match api.replace(&key.1, &PostParams::default(), &obj).await {
            Ok(updated) => {
                let updated = to_value(updated)?;
                self.remember(&key, desired_spec, &updated);
                Some(updated)
            }
            Err(e) => {
                if status_code(&e) != Some(404) {
                    self.dirty.insert((key.0.clone(), owner_name(&want)));
                }
                Some(current)
            }
        }
    }

    /// Apply the discovery ServiceAccount, Role and RoleBinding the
    /// operator creates beside the workloads (`<idep>-disc`, which the
    /// worker pods name as their `serviceAccountName`: a real API server's
    /// ServiceAccount admission refuses the pods until it exists). Once per
    /// InferaDeployment; a kind the API server does not serve (the embedded
    /// simulator has no RBAC and no ServiceAccount admission) is skipped.
    async fn ensure_discovery(&mut self, idep: &Value) {
        let uid = str_at(idep, "/metadata/uid").to_string();
        if self.discovery.contains(&uid) {
            return;
        }
        let Ok(typed) = infera_model::operator::typed(idep.clone()) else {
            return;
        };
        let owner = owner_references(idep);
        let mut done = true;
        for mut obj in infera_model::operator::discovery::discovery_objects(&typed) {
            obj["metadata"]["ownerReferences"] = owner.clone();
            done &= self.apply_object(obj).await;
        }
        if done {
            self.discovery.insert(uid);
        }
    }

    /// Apply the Service of every `componentType: server` service
    /// ([`infera_model::operator::server_services`]), owned by the
    /// InferaDeployment; once per InferaDeployment and generation.
    async fn ensure_services(
        &mut self,
        idep: &Value,
        typed: &infera_model::operator::InferaDeployment,
    ) {
        let key = format!(
            "{}/{}",
            str_at(idep, "/metadata/uid"),
            i64_at(idep, "/metadata/generation").unwrap_or(0)
        );
        if self.services.contains(&key) {
            return;
        }
        let owner = owner_references(idep);
        let mut done = true;
        for mut obj in infera_model::operator::server_services(typed) {
            obj["metadata"]["ownerReferences"] = owner.clone();
            done &= self.apply_object(obj).await;
        }
        if done {
            self.services.insert(key);
        }
    }

    /// Server-side apply one object; true when it is there now or its kind
    /// is not served here (404).
    async fn apply_object(&self, obj: Value) -> bool {
        let resource = ApiResource::from_gvk(&super::manifests::gvk_of(&obj));
        let (ns, name) = key_of(&obj);
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.shared.client.clone(), &ns, &resource);
        let params = PatchParams::apply("infera-operator").force();
        match api.patch(&name, &params, &Patch::Apply(&obj)).await {
            Ok(_) => true,
            Err(e) => status_code(&e) == Some(404),
        }
    }

    fn remember(&mut self, key: &Key, spec: String, d: &Value) {
        let generation = i64_at(d, "/metadata/generation").unwrap_or(0);
        self.applied.insert(key.clone(), (spec, generation));
    }

    async fn write_status(
        &mut self,
        key: &Key,
        idep: &Value,
        services: serde_json::Map<String, Value>,
        state: &str,
    ) {
        let mut status = idep
            .get("status")
            .cloned()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        status["services"] = Value::from(services);
        status["state"] = Value::from(state);
        status["observedGeneration"] =
            Value::from(i64_at(idep, "/metadata/generation").unwrap_or(1));
        if idep.get("status") == Some(&status) {
            return;
        }
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.shared.client.clone(), &key.0, &self.idep_resource);
        let patch = json!({"status": status});
        let pp = PatchParams::default();
        match api.patch_status(&key.1, &pp, &Patch::Merge(&patch)).await {
            Ok(updated) => {
                if let Some(v) = to_value(updated) {
                    self.ideps.insert(key.clone(), v);
                }
            }
            Err(e) if status_code(&e) == Some(404) => {}
            // Retried at the next change or resync.
            Err(_) => {}
        }
    }
}

/// The controller reference to the InferaDeployment every object the
/// operator creates carries.
fn owner_references(idep: &Value) -> Value {
    json!([{"apiVersion": INFERA_DEPLOYMENT.api_version, "kind": INFERA_DEPLOYMENT.kind,
        "name": str_at(idep, "/metadata/name"), "uid": str_at(idep, "/metadata/uid"),
        "controller": true, "blockOwnerDeletion": true}])
}

fn owner_name(d: &Value) -> String {
    str_at(d, "/metadata/ownerReferences/0/name").to_string()
}

/// (ready replicas, whether the Deployment completed its rollout).
fn deployment_progress(d: &Value) -> (i64, bool) {
    let want = i64_at(d, "/spec/replicas").unwrap_or(1);
    let ready = i64_at(d, "/status/readyReplicas").unwrap_or(0);
    let observed = i64_at(d, "/status/observedGeneration").unwrap_or(0)
        >= i64_at(d, "/metadata/generation").unwrap_or(1);
    let complete = observed
        && i64_at(d, "/status/updatedReplicas").unwrap_or(0) == want
        && i64_at(d, "/status/availableReplicas").unwrap_or(0) == want
        && i64_at(d, "/status/replicas").unwrap_or(0) == want;
    (ready, complete)
}
