//! One read of the cluster for the drain plan: one list of nodes (a
//! second, server-side filtered, for `-l`), one list of pods (the live
//! capacity list rollout's preflight makes), one list of
//! PodDisruptionBudgets, then one GET per distinct owner of a pod on the
//! draining nodes (ReplicaSet → Deployment → InferaDeployment,
//! StatefulSet → LeaderWorkerSet): O(pods on the node) requests.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::Value;

use super::DrainError;
use super::plan::{Inventory, NodePod, OwnerKind, PodAction, Workload};
use crate::api::retrying;
use crate::plan::{deployment_strategy, replicas_of};
use infera_audit::RoleSpec;
use infera_cluster::{ClusterError, Connection, api_resource, inferadeployment_resource};
use infera_model::api::{LEADER_WORKER_SET, LWS_NAME_LABEL};
use infera_model::selector::Selector;
use infera_model::worker::{LABEL_DEPLOYMENT, LABEL_MANAGED_BY, LABEL_SERVICE, MANAGED_BY_VALUE};

const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// Which nodes, which pods, and kubectl drain's flags about pods.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub nodes: Vec<String>,
    /// `-l`: nodes by label.
    pub selector: Option<String>,
    /// `--pod-selector`: only these pods are drained (equality selector).
    pub pod_selector: Option<BTreeMap<String, String>>,
    pub ignore_daemonsets: bool,
    pub delete_emptydir_data: bool,
    /// `--force`: also pods that declare no controller.
    pub force: bool,
}

/// Reads the cluster, counting requests.
struct Reader<'a> {
    conn: &'a Connection,
    requests: u32,
    /// (kind, namespace, name) → the object (`None`: not found).
    cache: BTreeMap<(String, String, String), Option<Value>>,
}

fn cluster_error(conn: &Connection, e: &kube::Error, verb: &str, resource: &str) -> DrainError {
    DrainError::from(ClusterError::from_kube(e, &conn.url, verb, resource, None))
}

fn to_value<T: serde::Serialize>(obj: &T) -> Option<Value> {
    serde_json::to_value(obj).ok()
}

impl<'a> Reader<'a> {
    async fn list<K>(&mut self, params: &ListParams, resource: &str) -> Result<Vec<K>, DrainError>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
        K::DynamicType: Default,
    {
        self.requests += 1;
        let api: Api<K> = Api::all(self.conn.client.clone());
        retrying("list", || api.list(params))
            .await
            .map(|l| l.items)
            .map_err(|e| cluster_error(self.conn, &e, "list", resource))
    }

    /// GET an owner once (cached); not found is `None`.
    async fn owner(
        &mut self,
        kind: &str,
        ns: &str,
        name: &str,
    ) -> Result<Option<Value>, DrainError> {
        let key = (kind.to_string(), ns.to_string(), name.to_string());
        if let Some(hit) = self.cache.get(&key) {
            return Ok(hit.clone());
        }
        self.requests += 1;
        let client = self.conn.client.clone();
        let (got, resource) = match kind {
            "ReplicaSet" => {
                let api: Api<ReplicaSet> = Api::namespaced(client, ns);
                let r = retrying("get", || api.get_opt(name)).await;
                (r.map(|o| o.and_then(|o| to_value(&o))), "replicasets.apps")
            }
            "Deployment" => {
                let api: Api<Deployment> = Api::namespaced(client, ns);
                let r = retrying("get", || api.get_opt(name)).await;
                (r.map(|o| o.and_then(|o| to_value(&o))), "deployments.apps")
            }
            "StatefulSet" => {
                let api: Api<StatefulSet> = Api::namespaced(client, ns);
                let r = retrying("get", || api.get_opt(name)).await;
                (r.map(|o| o.and_then(|o| to_value(&o))), "statefulsets.apps")
            }
            _ => {
                let resource = if kind == "LeaderWorkerSet" {
                    api_resource(&LEADER_WORKER_SET)
                } else {
                    inferadeployment_resource()
                };
                let api: Api<DynamicObject> = Api::namespaced_with(client, ns, &resource);
                let r = retrying("get", || api.get_opt(name)).await;
                (r.map(|o| o.and_then(|o| to_value(&o))), "custom resources")
            }
        };
        let got = match got {
            Ok(v) => v,
            // A kind the cluster does not serve (no LWS CRD): no owner to read.
            Err(kube::Error::Api(s)) if s.code == 404 => None,
            Err(e) => {
                return Err(DrainError::from(ClusterError::from_kube(
                    &e,
                    &self.conn.url,
                    "get",
                    resource,
                    Some(ns),
                )));
            }
        };
        self.cache.insert(key, got.clone());
        Ok(got)
    }
}

fn controller_of(meta: &Value) -> Option<(String, String)> {
    meta.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
        .map(|o| {
            let s = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            (s("kind"), s("name"))
        })
}

fn label<'v>(obj: &'v Value, key: &str) -> Option<&'v str> {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
}

/// The selector of a Deployment's or StatefulSet's own pods (`matchLabels`
/// and `matchExpressions`); one that is missing, empty or does not convert
/// stops the drain before any change, naming the workload, rather than
/// counting every pod of the namespace as its own.
fn workload_selector(obj: &Value, what: &str) -> Result<Selector, DrainError> {
    let bad = |why: String| {
        DrainError::Usage(format!(
            "{what}: cannot read spec.selector: {why}; nothing was changed"
        ))
    };
    let sel: Option<LabelSelector> = obj
        .pointer("/spec/selector")
        .map(|s| serde_json::from_value(s.clone()))
        .transpose()
        .map_err(|e| bad(e.to_string()))?;
    Selector::of_workload(sel.as_ref()).map_err(|e| bad(e.to_string()))
}

/// Read everything the plan needs (see the module docs).
pub async fn gather(conn: &Connection, sel: &Selection) -> Result<Inventory, DrainError> {
    let mut reader = Reader {
        conn,
        requests: 0,
        cache: BTreeMap::new(),
    };
    let nodes: Vec<Node> = reader.list(&ListParams::default(), "nodes").await?;
    let draining = draining_nodes(&mut reader, &nodes, sel).await?;
    let pods: Vec<Pod> = reader.list(&ListParams::default(), "pods").await?;
    // A server without policy/v1 (an older simulator) has no budgets.
    let pdbs: Vec<PodDisruptionBudget> = match reader
        .list(&ListParams::default(), "poddisruptionbudgets.policy")
        .await
    {
        Err(DrainError::Cluster(ClusterError::NotFound { .. })) => Vec::new(),
        other => other?,
    };
    let mut inv = Inventory {
        draining,
        nodes,
        pdbs,
        ..Inventory::default()
    };
    let mut keys: Vec<String> = Vec::new();
    for pod in &pods {
        let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
            continue;
        };
        if !inv.draining.contains(&node) || pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let entry = classify(&mut reader, pod, node, sel, &mut inv.workloads, &mut keys).await?;
        inv.on_nodes.push(entry);
    }
    inv.pods = pods;
    inv.requests = reader.requests;
    Ok(inv)
}

/// The nodes named (each must exist) or selected by `-l` (one must match).
async fn draining_nodes(
    reader: &mut Reader<'_>,
    nodes: &[Node],
    sel: &Selection,
) -> Result<Vec<String>, DrainError> {
    let names: Vec<String> = nodes
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    if let Some(selector) = &sel.selector {
        let matched: Vec<Node> = reader
            .list(&ListParams::default().labels(selector), "nodes")
            .await?;
        if matched.is_empty() {
            return Err(DrainError::Usage(format!(
                "no node matches -l {selector} (of {} nodes); nothing was changed",
                names.len()
            )));
        }
        return Ok(matched
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect());
    }
    if sel.nodes.is_empty() {
        return Err(DrainError::Usage(
            "give NODE names or -l SELECTOR (as kubectl drain)".into(),
        ));
    }
    for n in &sel.nodes {
        if !names.contains(n) {
            return Err(DrainError::Usage(format!(
                "node \"{n}\" not found (known: {}); nothing was changed",
                names.join(", ")
            )));
        }
    }
    let mut out = sel.nodes.clone();
    out.dedup();
    Ok(out)
}

/// kubectl drain's filters, in its order, then the owner.
async fn classify(
    reader: &mut Reader<'_>,
    pod: &Pod,
    node: String,
    sel: &Selection,
    workloads: &mut Vec<Workload>,
    keys: &mut Vec<String>,
) -> Result<NodePod, DrainError> {
    let value = to_value(pod).unwrap_or(Value::Null);
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let mut entry = NodePod {
        namespace: namespace.clone(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        node,
        workload: None,
        owner: "none".into(),
        action: PodAction::Evict,
    };
    let annotations = pod.metadata.annotations.as_ref();
    if annotations.is_some_and(|a| a.contains_key(MIRROR_ANNOTATION)) {
        entry.action = PodAction::Skip("mirror pod: the kubelet's static pod".into());
        return Ok(entry);
    }
    if let Some(want) = &sel.pod_selector {
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        if !want.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            entry.action = PodAction::Skip("not selected by --pod-selector".into());
            return Ok(entry);
        }
    }
    let controller = controller_of(&value);
    if let Some((kind, name)) = &controller {
        entry.owner = format!("{kind}/{name}");
    }
    let finished = matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    );
    entry.action = match controller.as_ref().map(|(k, _)| k.as_str()) {
        Some("DaemonSet") if sel.ignore_daemonsets => {
            PodAction::Skip("DaemonSet-managed (--ignore-daemonsets)".into())
        }
        Some("DaemonSet") => PodAction::Refuse(
            "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore)".into(),
        ),
        None if !sel.force && !finished => PodAction::Refuse(
            "cannot delete Pods that declare no controller (use --force to override)".into(),
        ),
        _ if uses_empty_dir(&value) && !sel.delete_emptydir_data && !finished => PodAction::Refuse(
            "cannot delete Pods with local storage (use --delete-emptydir-data to override)".into(),
        ),
        _ => PodAction::Evict,
    };
    if entry.action != PodAction::Evict {
        return Ok(entry);
    }
    if let Some((kind, name)) = controller
        && let Some(w) = workload_of(reader, &namespace, &kind, &name, &value).await?
    {
        let key = w.key();
        entry.workload = Some(match keys.iter().position(|k| *k == key) {
            Some(i) => i,
            None => {
                keys.push(key);
                workloads.push(w);
                workloads.len() - 1
            }
        });
    }
    Ok(entry)
}

fn uses_empty_dir(pod: &Value) -> bool {
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(|v| v.get("emptyDir").is_some()))
}

/// The serving workload a pod's controller belongs to (`None`: a Job, a
/// bare ReplicaSet, an owner that is gone: the pod is simply evicted).
async fn workload_of(
    reader: &mut Reader<'_>,
    ns: &str,
    kind: &str,
    name: &str,
    pod: &Value,
) -> Result<Option<Workload>, DrainError> {
    match kind {
        "ReplicaSet" => {
            let Some(rs) = reader.owner("ReplicaSet", ns, name).await? else {
                return Ok(None);
            };
            match controller_of(&rs) {
                Some((k, dep)) if k == "Deployment" => deployment_workload(reader, ns, &dep).await,
                _ => Ok(None),
            }
        }
        "StatefulSet" => {
            let Some(sts) = reader.owner("StatefulSet", ns, name).await? else {
                return Ok(None);
            };
            if let Some(lws) = label(pod, LWS_NAME_LABEL)
                && let Some(obj) = reader.owner("LeaderWorkerSet", ns, lws).await?
            {
                return Ok(Some(lws_workload(ns, lws, &obj)));
            }
            statefulset_workload(ns, name, &sts).map(Some)
        }
        _ => Ok(None),
    }
}

async fn deployment_workload(
    reader: &mut Reader<'_>,
    ns: &str,
    name: &str,
) -> Result<Option<Workload>, DrainError> {
    let Some(dep) = reader.owner("Deployment", ns, name).await? else {
        return Ok(None);
    };
    let template = dep.pointer("/spec/template").cloned().unwrap_or_default();
    let typed: Option<Deployment> = serde_json::from_value(dep.clone()).ok();
    let selector = workload_selector(&dep, &format!("deploy/{name} in {ns}"))?;
    let mut w = Workload {
        namespace: ns.to_string(),
        kind: OwnerKind::Deployment,
        name: name.to_string(),
        leg: None,
        role: name.to_string(),
        replicas: replicas_of(&dep),
        strategy: Some(deployment_strategy(&dep)),
        template,
        role_spec: RoleSpec {
            role: name.to_string(),
            services: Vec::new(),
            selector: selector.clone(),
        },
        selector,
        generation: None,
    };
    let operator_owned = label(&dep, LABEL_MANAGED_BY) == Some(MANAGED_BY_VALUE);
    if let (true, Some(idep), Some(service)) = (
        operator_owned,
        label(&dep, LABEL_DEPLOYMENT),
        label(&dep, LABEL_SERVICE),
    ) && let Some(cr) = reader.owner("InferaDeployment", ns, idep).await?
    {
        w.kind = OwnerKind::InferaDeployment;
        w.name = idep.to_string();
        w.leg = Some(service.to_string());
        w.selector = Selector::from_labels(&BTreeMap::from([
            (LABEL_DEPLOYMENT.to_string(), idep.to_string()),
            (LABEL_SERVICE.to_string(), service.to_string()),
        ]));
        w.role_spec = infera_audit::roles_from_inferadeployment(&cr)
            .ok()
            .and_then(|roles| {
                roles
                    .into_iter()
                    .find(|r| r.services.iter().any(|s| s == service))
            })
            .unwrap_or_else(|| {
                // A server (the router): the role `rollout --service` prints.
                let spec = cr.pointer("/spec/services").and_then(|s| s.get(service));
                RoleSpec {
                    role: spec.map_or_else(
                        || service.to_string(),
                        |spec| infera_audit::service_role(service, spec),
                    ),
                    services: vec![service.to_string()],
                    selector: w.selector.clone(),
                }
            });
        w.role = w.role_spec.role.clone();
        w.generation = typed.as_ref().map(|d| {
            match infera_model::generation::detect_deployment(d).generation() {
                Some(g) => g.as_str().to_string(),
                None => "unknown".to_string(),
            }
        });
    }
    Ok(Some(w))
}

fn statefulset_workload(ns: &str, name: &str, sts: &Value) -> Result<Workload, DrainError> {
    let selector = workload_selector(sts, &format!("sts/{name} in {ns}"))?;
    Ok(Workload {
        namespace: ns.to_string(),
        kind: OwnerKind::StatefulSet,
        name: name.to_string(),
        leg: None,
        role: name.to_string(),
        replicas: replicas_of(sts),
        strategy: None,
        template: sts.pointer("/spec/template").cloned().unwrap_or_default(),
        role_spec: RoleSpec {
            role: name.to_string(),
            services: Vec::new(),
            selector: selector.clone(),
        },
        selector,
        generation: None,
    })
}

fn lws_workload(ns: &str, name: &str, lws: &Value) -> Workload {
    let selector = Selector::from_labels(&BTreeMap::from([(
        LWS_NAME_LABEL.to_string(),
        name.to_string(),
    )]));
    Workload {
        namespace: ns.to_string(),
        kind: OwnerKind::LeaderWorkerSet,
        name: name.to_string(),
        leg: None,
        role: name.to_string(),
        replicas: replicas_of(lws),
        strategy: Some(crate::plan::lws_strategy(lws)),
        template: lws
            .pointer("/spec/leaderWorkerTemplate/workerTemplate")
            .cloned()
            .unwrap_or_default(),
        role_spec: RoleSpec {
            role: name.to_string(),
            services: Vec::new(),
            selector: selector.clone(),
        },
        selector,
        generation: None,
    }
}
