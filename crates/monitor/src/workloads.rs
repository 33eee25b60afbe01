//! What the monitor watches over: every InferaDeployment (its roles, from
//! the audit's own reading of the CR) and every catalogued serving workload
//! (a Deployment, StatefulSet or LeaderWorkerSet whose pod template runs an
//! engine of the model's catalogue, `infera_model::catalogue`), each with its roles, their
//! desired replicas and whether a rollout is in progress.
//!
//! Pure functions of the watched objects, so they are table-tested without
//! a cluster.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use infera_audit::{RoleSpec, roles_from_inferadeployment};
use infera_cluster::{DeploymentProgress, deployment_progress};
use infera_model::api::{LWS_NAME_LABEL, LWS_WORKER_INDEX_LABEL};
use infera_model::generation::{self, Detection};
use infera_model::selector::Selector;
use infera_model::worker::{LABEL_DEPLOYMENT, LABEL_SERVICE};

/// `namespace` and the workload's audit spelling (`idep/NAME`,
/// `deploy/NAME`, `sts/NAME`, `lws/NAME`): the identity of a watched
/// workload.
pub type WorkloadKey = (String, String);

/// One watched workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    pub namespace: String,
    /// `idep/NAME`, `deploy/NAME`, `sts/NAME` or `lws/NAME` (the
    /// `workload` label).
    pub name: String,
    /// Its roles, as the audit reads them (the `role` label).
    pub roles: Vec<RoleSpec>,
    /// Desired replicas per role, in `roles` order.
    pub desired: Vec<i64>,
}

/// The `workload` label's kinds.
pub const IDEP: &str = "idep";
pub const DEPLOY: &str = "deploy";
pub const STS: &str = "sts";
pub const LWS: &str = "lws";

/// The key of the workload of `kind` that the object under reflector key
/// `namespace/name` describes.
pub fn key_of(kind: Option<&str>, reflector_key: &str) -> Option<WorkloadKey> {
    let (namespace, name) = reflector_key.split_once('/')?;
    Some((namespace.to_string(), workload_label(kind?, name)))
}

/// The `workload` label of the object `name` of `kind` (`idep/NAME`).
fn workload_label(kind: &str, name: &str) -> String {
    format!("{kind}/{name}")
}

impl Workload {
    pub fn key(&self) -> WorkloadKey {
        (self.namespace.clone(), self.name.clone())
    }
}

/// An InferaDeployment's workload: roles from its worker services, each
/// role's desired replicas the sum of its services' `replicas` (default 1).
/// `None` when it has no worker service (nothing to watch over).
pub fn of_inferadeployment(idep: &Value) -> Option<Workload> {
    let namespace = idep.pointer("/metadata/namespace")?.as_str()?.to_string();
    let name = idep.pointer("/metadata/name")?.as_str()?;
    let roles = roles_from_inferadeployment(idep).ok()?;
    let desired = roles
        .iter()
        .map(|r| {
            r.services
                .iter()
                .map(|s| {
                    idep.pointer(&format!("/spec/services/{}/replicas", escape(s)))
                        .and_then(Value::as_i64)
                        .unwrap_or(1)
                })
                .sum()
        })
        .collect();
    Some(Workload {
        namespace,
        name: workload_label(IDEP, name),
        roles,
        desired,
    })
}

/// A JSON pointer token.
fn escape(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// Whether a pod template runs an engine of the catalogue.
fn runs_catalogued_engine(template: &PodTemplateSpec) -> bool {
    template.spec.as_ref().is_some_and(|spec| {
        spec.containers
            .iter()
            .any(|c| infera_model::catalogue::recognize(c).is_some())
    })
}

/// A workload the infera operator rendered: watched through its
/// InferaDeployment, never on its own.
fn operator_rendered(meta: &ObjectMeta) -> bool {
    meta.labels
        .as_ref()
        .is_some_and(|l| l.contains_key(LABEL_DEPLOYMENT))
        || meta
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.kind == infera_model::api::INFERA_DEPLOYMENT.kind)
}

/// One role named after the workload, selected by its `spec.selector`
/// (`matchLabels` and `matchExpressions`, as `infera audit deploy/NAME`
/// reads a Deployment). A selector that is empty or does not convert (the
/// API server refuses both) is skipped with a warning naming the
/// workload, never watched as "every pod".
fn single_role(
    meta: &ObjectMeta,
    kind: &str,
    selector: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    replicas: Option<i32>,
) -> Option<Workload> {
    let name = meta.name.clone()?;
    let namespace = meta.namespace.clone()?;
    let label = workload_label(kind, &name);
    let selector = match Selector::of_workload(selector) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(target: infera_cluster::trace::target::MONITOR, "{namespace}/{label} not watched: cannot read spec.selector: {e}");
            return None;
        }
    };
    Some(Workload {
        namespace,
        name: label,
        roles: vec![RoleSpec {
            role: name.clone(),
            services: vec![name],
            selector,
        }],
        desired: vec![i64::from(replicas.unwrap_or(1))],
    })
}

/// A Deployment running a catalogued engine, not rendered by the operator.
pub fn of_deployment(d: &Deployment) -> Option<Workload> {
    let spec = d.spec.as_ref()?;
    if operator_rendered(&d.metadata) || !runs_catalogued_engine(&spec.template) {
        return None;
    }
    single_role(&d.metadata, DEPLOY, Some(&spec.selector), spec.replicas)
}

/// A StatefulSet running a catalogued engine, not rendered by the operator.
pub fn of_statefulset(s: &StatefulSet) -> Option<Workload> {
    let spec = s.spec.as_ref()?;
    if operator_rendered(&s.metadata) || !runs_catalogued_engine(&spec.template) {
        return None;
    }
    single_role(&s.metadata, STS, Some(&spec.selector), spec.replicas)
}

/// A LeaderWorkerSet whose leader or worker template runs a catalogued
/// engine, not rendered by the operator: one role named after it, counted
/// by its groups' leaders (labels `leaderworkerset.sigs.k8s.io/name` and
/// `worker-index` `"0"`: the pods a Service routes to, one per group), its
/// desired replicas `spec.replicas` (groups, default 1).
pub fn of_leaderworkerset(lws: &Value) -> Option<Workload> {
    let meta: ObjectMeta = serde_json::from_value(lws.get("metadata")?.clone()).ok()?;
    let template = |which: &str| {
        lws.pointer(&format!("/spec/leaderWorkerTemplate/{which}"))
            .and_then(|t| serde_json::from_value::<PodTemplateSpec>(t.clone()).ok())
    };
    let engine = ["leaderTemplate", "workerTemplate"]
        .iter()
        .filter_map(|w| template(w))
        .any(|t| runs_catalogued_engine(&t));
    if operator_rendered(&meta) || !engine {
        return None;
    }
    let name = meta.name.clone()?;
    let selector = Selector::from_labels(&BTreeMap::from([
        (LWS_NAME_LABEL.to_string(), name.clone()),
        (LWS_WORKER_INDEX_LABEL.to_string(), "0".to_string()),
    ]));
    Some(Workload {
        namespace: meta.namespace?,
        name: workload_label(LWS, &name),
        roles: vec![RoleSpec {
            role: name.clone(),
            services: vec![name],
            selector,
        }],
        desired: vec![
            lws.pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(i64::from(infera_model::lws::DEFAULT_REPLICAS)),
        ],
    })
}

/// Where one role's rollout stands: rolling, and which legs (services).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rolling {
    pub legs: Vec<String>,
}

fn rolling_deployment(d: &Deployment) -> bool {
    !matches!(deployment_progress(d), DeploymentProgress::Complete)
}

fn rolling_statefulset(s: &StatefulSet) -> bool {
    let Some(status) = s.status.as_ref() else {
        return true;
    };
    let want = s.spec.as_ref().and_then(|sp| sp.replicas).unwrap_or(1);
    status.observed_generation.unwrap_or(0) < s.metadata.generation.unwrap_or(0)
        || status.updated_replicas.unwrap_or(0) < want
        || (status.update_revision.is_some() && status.update_revision != status.current_revision)
}

/// A LeaderWorkerSet rolls until its controller reports every group
/// updated (`status.updatedReplicas`) and no `UpdateInProgress` condition.
fn rolling_leaderworkerset(lws: &Value) -> bool {
    let Some(status) = lws.get("status") else {
        return true;
    };
    let want = lws
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let updating = status
        .get("conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "UpdateInProgress" && c["status"] == "True")
        });
    updating
        || status
            .get("updatedReplicas")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            < want
}

/// The watched objects that carry rollout state (of one namespace, or only
/// those of one workload: `rolling` filters them either way).
#[derive(Default)]
pub struct Objects<'a> {
    pub deployments: Vec<&'a Deployment>,
    pub statefulsets: Vec<&'a StatefulSet>,
    pub leaderworkersets: Vec<&'a Value>,
}

/// Per role of `w`, the legs rolling now: for an InferaDeployment, the
/// services whose operator-rendered Deployment (labels
/// `infera.amd.com/deployment`, `infera.amd.com/service`) is not complete as
/// `kubectl rollout status` decides; for a Deployment, StatefulSet or
/// LeaderWorkerSet, itself.
pub fn rolling(w: &Workload, objects: &Objects<'_>) -> Vec<Rolling> {
    let (deployments, statefulsets) = (&objects.deployments, &objects.statefulsets);
    let (kind, name) = w.name.split_once('/').unwrap_or(("", &w.name));
    w.roles
        .iter()
        .map(|role| {
            let legs = match kind {
                IDEP => role
                    .services
                    .iter()
                    .filter(|svc| {
                        deployments.iter().any(|d| {
                            let l = d.metadata.labels.as_ref();
                            let label = |k: &str| l.and_then(|l| l.get(k)).map(String::as_str);
                            label(LABEL_DEPLOYMENT) == Some(name)
                                && label(LABEL_SERVICE) == Some(svc.as_str())
                                && rolling_deployment(d)
                        })
                    })
                    .cloned()
                    .collect(),
                DEPLOY => deployments
                    .iter()
                    .filter(|d| d.metadata.name.as_deref() == Some(name) && rolling_deployment(d))
                    .map(|_| name.to_string())
                    .collect(),
                LWS => objects
                    .leaderworkersets
                    .iter()
                    .filter(|l| {
                        l.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
                            && rolling_leaderworkerset(l)
                    })
                    .map(|_| name.to_string())
                    .collect(),
                _ => statefulsets
                    .iter()
                    .filter(|s| s.metadata.name.as_deref() == Some(name) && rolling_statefulset(s))
                    .map(|_| name.to_string())
                    .collect(),
            };
            Rolling { legs }
        })
        .collect()
}

/// The operator generation an InferaDeployment's rendered workers show
/// (`pre-176`, `176` or `unknown`); `None` for other workloads.
pub fn operator_generation(w: &Workload, deployments: &[&Deployment]) -> Option<&'static str> {
    let name = w.name.strip_prefix(IDEP)?.strip_prefix('/')?;
    let workers = deployments.iter().copied().filter(|d| {
        d.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL_DEPLOYMENT))
            .is_some_and(|v| v == name)
    });
    let detection: Detection = generation::detect(workers);
    Some(detection.label())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(v: Value) -> Deployment {
        serde_json::from_value(v).unwrap()
    }

    fn vllm_deploy(name: &str, labels: Value) -> Deployment {
        deployment(json!({
            "metadata": {"name": name, "namespace": "llm", "labels": labels, "generation": 2},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [
                    {"name": "main", "image": "vllm/vllm-openai:v0.9", "args": ["--model", "m"]}]}}},
            "status": {"observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 3}
        }))
    }

    #[test]
    fn inferadeployment_roles_and_desired_replicas() {
        let idep = json!({
            "metadata": {"name": "llm", "namespace": "prod"},
            "spec": {"services": {
                "router": {"componentType": "server", "replicas": 2},
                "prefill": {"componentType": "worker", "role": "prefill", "replicas": 2},
                "decode-a": {"componentType": "worker", "role": "decode", "replicas": 3},
                "decode-b": {"componentType": "worker", "role": "decode"}
            }}
        });
        let w = of_inferadeployment(&idep).unwrap();
        assert_eq!(w.name, "idep/llm");
        let roles: Vec<_> = w.roles.iter().map(|r| r.role.as_str()).collect();
        assert_eq!(roles, ["prefill", "decode"]);
        assert_eq!(w.desired, [2, 4]);
        assert!(
            of_inferadeployment(&json!({"metadata": {"name": "x", "namespace": "n"}, "spec": {}}))
                .is_none()
        );
    }

    #[test]
    fn only_catalogued_workloads_the_operator_did_not_render() {
        let w = of_deployment(&vllm_deploy("chat", json!({}))).unwrap();
        assert_eq!(
            (w.name.as_str(), w.desired.as_slice()),
            ("deploy/chat", &[3][..])
        );
        assert_eq!(w.roles[0].selector.to_string(), "app=chat");
        // Rendered by the operator: watched through its InferaDeployment.
        assert!(
            of_deployment(&vllm_deploy("llm-decode", json!({LABEL_DEPLOYMENT: "llm"}))).is_none()
        );
        // No engine of the catalogue: not a serving workload.
        let mut web = vllm_deploy("web", json!({}));
        if let Some(spec) = web.spec.as_mut().and_then(|s| s.template.spec.as_mut()) {
            spec.containers[0].image = Some("nginx:1".into());
        }
        assert!(of_deployment(&web).is_none());
    }

    /// A Deployment selected by `matchExpressions` only is monitored: its
    /// role matches its pods and no other app's. One whose selector does
    /// not convert is skipped, never watched as every pod.
    #[test]
    fn a_deployment_selected_by_expressions_is_monitored() {
        let mut d = vllm_deploy("chat", json!({}));
        let exprs =
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["chat"]}]});
        if let Some(spec) = d.spec.as_mut() {
            spec.selector = serde_json::from_value(exprs).unwrap();
        }
        let w = of_deployment(&d).unwrap();
        let pod = |app: &str| -> k8s_openapi::api::core::v1::Pod {
            serde_json::from_value(json!({"metadata": {"name": "p", "labels": {"app": app}}}))
                .unwrap()
        };
        assert!(w.roles[0].matches(&pod("chat")));
        assert!(!w.roles[0].matches(&pod("web")));
        if let Some(spec) = d.spec.as_mut() {
            spec.selector = serde_json::from_value(json!({"matchExpressions": [
                {"key": "app", "operator": "Gt", "values": ["1"]}]}))
            .unwrap();
        }
        assert!(of_deployment(&d).is_none());
    }

    #[test]
    fn rolling_legs_follow_the_rendered_deployments() {
        let idep = json!({"metadata": {"name": "llm", "namespace": "llm"}, "spec": {"services": {
            "prefill": {"componentType": "worker", "role": "prefill"},
            "decode": {"componentType": "worker", "role": "decode"}}}});
        let w = of_inferadeployment(&idep).unwrap();
        let done = vllm_deploy(
            "llm-prefill",
            json!({LABEL_DEPLOYMENT: "llm", LABEL_SERVICE: "prefill"}),
        );
        let mut rolling_one = vllm_deploy(
            "llm-decode",
            json!({LABEL_DEPLOYMENT: "llm", LABEL_SERVICE: "decode"}),
        );
        if let Some(s) = rolling_one.status.as_mut() {
            s.updated_replicas = Some(1);
        }
        let objects = Objects {
            deployments: vec![&done, &rolling_one],
            ..Objects::default()
        };
        let legs = rolling(&w, &objects);
        assert_eq!(legs[0], Rolling::default());
        assert_eq!(legs[1].legs, ["decode"]);
        assert_eq!(operator_generation(&w, &[&done]), Some("unknown"));
    }

    #[test]
    fn a_leaderworkerset_is_one_role_of_leaders_rolling_until_updated() {
        let mut lws = json!({
            "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "big", "namespace": "llm", "generation": 2},
            "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 2,
                "workerTemplate": {"spec": {"containers": [{"name": "main",
                    "image": "vllm/vllm-openai:v0.9", "args": ["--model", "m"]}]}}}},
            "status": {"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2}
        });
        let w = of_leaderworkerset(&lws).unwrap();
        assert_eq!(
            (w.name.as_str(), w.desired.as_slice()),
            ("lws/big", &[2][..])
        );
        assert_eq!(w.roles[0].role, "big");
        assert_eq!(
            w.roles[0].selector.to_string(),
            format!("{LWS_NAME_LABEL}=big,{LWS_WORKER_INDEX_LABEL}=0")
        );
        fn objects(l: &Value) -> Objects<'_> {
            Objects {
                leaderworkersets: vec![l],
                ..Objects::default()
            }
        }
        assert_eq!(rolling(&w, &objects(&lws))[0], Rolling::default());
        lws["status"]["updatedReplicas"] = json!(1);
        assert_eq!(rolling(&w, &objects(&lws))[0].legs, ["big"]);
        // Rendered by the operator, or no engine of the catalogue: not watched.
        let mut rendered = lws.clone();
        rendered["metadata"]["labels"] = json!({LABEL_DEPLOYMENT: "llm"});
        assert!(of_leaderworkerset(&rendered).is_none());
        lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] =
            json!("nginx:1");
        assert!(of_leaderworkerset(&lws).is_none());
    }
}
