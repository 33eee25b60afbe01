//! Serving custom resources → what their operators render, as the
//! [`Workload`](super::rules::Workload) views the rules read. Each builder
//! follows its operator's published source (repository, file, function
//! and commit in `docs/serving-kinds.md`):
//!
//! - production-stack `VLLMRuntime`: one Deployment (`deploymentForVLLMRuntime`).
//! - NIM operator `NIMService`: a Deployment with maxSurge 0 and
//!   maxUnavailable 25% (`manifests/deployment.yaml`), or a
//!   LeaderWorkerSet of `multiNode.parallelism.pipeline` pods.
//! - KServe `InferenceService`: a Deployment (`createRawDefaultDeployment`)
//!   with `deploymentMode` RawDeployment/Standard, else a Knative Service
//!   whose new Revision takes traffic once Ready (`createKnativeService`).
//! - KServe `LLMInferenceService`: a Deployment, or a LeaderWorkerSet with
//!   `worker`, for the main workload and for `prefill`.
//! - KAITO `Workspace` (preset): one StatefulSet whose pods are one
//!   serving unit (`GeneratePresetInference`).
//! - AIBrix `StormService`: RoleSets replaced whole (RollingUpdate) or
//!   each role's pods replaced in place (InPlaceUpdate).
//! - AIBrix `RayClusterFleet` and KubeRay `RayService`: whole Ray clusters,
//!   rolled as a Deployment rolls pods / replaced by a new cluster.
//! - KubeAI `Model`: pods of its own, a surge pod first, an old pod
//!   deleted only when every pod is Ready (`calculatePodPlan`).
//! - llmaz `Service`: a LeaderWorkerSet of its `workloadTemplate`
//!   (`buildWorkloadApplyConfiguration`).
//! - kthena `ModelServing`: whole ServingGroups (or role replicas)
//!   deleted, then rebuilt (`manageRollingUpdate`).
//! - LWS `DisaggregatedSet`: a LeaderWorkerSet a role, a new revision's
//!   scaled up beside the old (`planner.go`).
//! - OME `InferenceService`: its runtime's `engineConfig` under the
//!   object's `engine` (`MergeEngineSpec`), a Deployment with maxSurge 1,
//!   maxUnavailable 0 unless `deploymentStrategy` says otherwise.

use k8s_openapi::api::core::v1::{PodSpec, Probe, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

mod aibrix;
mod disaggregated;
mod kaito;
mod kserve;
mod kthena;
mod kubeai;
mod llmaz;
mod nim;
mod ome;
mod production_stack;
mod ray;
#[cfg(test)]
mod tests;

use super::finding::ObjectRef;
use super::kinds::{Plain, plain_workload};
use super::rules::{CrdRollout, Hit};
use super::runner::Cx;
use infera_model::manifest::serving::{ServingKind, ServingObject};
use infera_model::manifest::{self, Seg};
use infera_model::rolling::{self, RollKind};

type Placeholders = Vec<(manifest::Path, String)>;
type Out = Vec<(Hit, ObjectRef)>;

/// A path from JSON-pointer-like segments (`"roles"`, `"0"` as an index).
fn path(segs: &[&str]) -> manifest::Path {
    segs.iter()
        .map(|s| match s.parse::<usize>() {
            Ok(i) => Seg::Index(i),
            Err(_) => Seg::Key((*s).to_string()),
        })
        .collect()
}

fn pointer(p: &manifest::Path) -> String {
    p.iter()
        .map(|s| match s {
            Seg::Key(k) => format!("/{}", k.replace('~', "~0").replace('/', "~1")),
            Seg::Index(i) => format!("/{i}"),
        })
        .collect()
}

fn dotted(p: &manifest::Path) -> String {
    manifest::path_string(p)
}

fn count(v: Option<&Value>, default: i32) -> Option<i32> {
    match v {
        None | Some(Value::Null) => Some(default),
        Some(v) => v
            .as_i64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .and_then(|n| i32::try_from(n).ok()),
    }
}

fn pod_at(obj: &ServingObject, p: &manifest::Path) -> Option<PodSpec> {
    serde_json::from_value(obj.at(&pointer(p))?.clone()).ok()
}

/// The rollout numbers of one unit.
struct Roll {
    replicas: Option<i32>,
    number_of_nodes: Option<i32>,
    roll: RollKind,
    max_surge: i64,
    max_unavailable: i64,
    max_unavailable_spec: Option<IntOrString>,
}

impl Roll {
    /// A Deployment's rolling update as its operator renders it: maxSurge
    /// and maxUnavailable as written (JSON), else the operator's defaults.
    fn deployment(
        replicas: Option<i32>,
        surge: Option<&Value>,
        unavailable: Option<&Value>,
        defaults: (&str, &str),
    ) -> Roll {
        let or_default = |v: Option<IntOrString>, default: &str| {
            v.unwrap_or_else(|| IntOrString::String(default.to_string()))
        };
        let spec = unavailable.and_then(rolling::int_or_string);
        let (max_surge, max_unavailable) = rolling::fenceposts(
            &or_default(surge.and_then(rolling::int_or_string), defaults.0),
            &or_default(spec.clone(), defaults.1),
            i64::from(replicas.unwrap_or(1)),
        );
        Roll {
            replicas,
            number_of_nodes: None,
            roll: rolling::Roll::rolling(max_surge, max_unavailable).kind,
            max_surge,
            max_unavailable,
            max_unavailable_spec: spec,
        }
    }

    /// A Deployment `strategy` as an operator writes it from a field of
    /// the resource: Recreate, or the `rollingUpdate` written (a field it
    /// leaves out is the API's 25%); without a `rollingUpdate`, the
    /// operator's own maxSurge and maxUnavailable (`defaults`).
    fn strategy(strategy: Option<&Value>, replicas: Option<i32>, defaults: (&str, &str)) -> Roll {
        if strategy.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("Recreate") {
            return Roll::recreate(replicas);
        }
        match strategy.and_then(|s| s.get("rollingUpdate")) {
            Some(r) => Roll::deployment(
                replicas,
                r.get("maxSurge"),
                r.get("maxUnavailable"),
                ("25%", "25%"),
            ),
            None => Roll::deployment(
                replicas,
                Some(&Value::from(defaults.0)),
                Some(&Value::from(defaults.1)),
                defaults,
            ),
        }
    }

    fn recreate(replicas: Option<i32>) -> Roll {
        Roll {
            replicas,
            number_of_nodes: None,
            roll: RollKind::Recreate,
            max_surge: 0,
            max_unavailable: i64::from(replicas.unwrap_or(1)),
            max_unavailable_spec: None,
        }
    }
}

/// One unit an operator renders, ready for the rules.
struct Unit<'a> {
    obj: &'a ServingObject,
    pod: PodSpec,
    pod_path: Option<manifest::Path>,
    base: manifest::Path,
    service: Option<String>,
    roll: Roll,
    crd: CrdRollout,
    /// A Ray pod's whole cluster's GPUs.
    ray_cluster_gpus: Option<i64>,
}

impl<'a> Unit<'a> {
    /// The whole resource as one workload (`spec` its base).
    fn whole(
        obj: &'a ServingObject,
        pod: PodSpec,
        pod_path: Option<manifest::Path>,
        roll: Roll,
        crd: CrdRollout,
    ) -> Unit<'a> {
        Unit {
            obj,
            pod,
            pod_path,
            base: path(&["spec"]),
            service: None,
            roll,
            crd,
            ray_cluster_gpus: None,
        }
    }
}

impl<'a> Unit<'a> {
    /// One named role of the resource (`role`'s `name`): its pod, where
    /// the pod is written, and the role's base.
    fn role(
        obj: &'a ServingObject,
        role: &Value,
        (pod, pod_path, base): (PodSpec, manifest::Path, manifest::Path),
        roll: Roll,
        crd: CrdRollout,
    ) -> Unit<'a> {
        let name = role.get("name").and_then(Value::as_str).unwrap_or("role");
        Unit {
            obj,
            pod,
            pod_path: Some(pod_path),
            base,
            service: Some(name.to_string()),
            roll,
            crd,
            ray_cluster_gpus: None,
        }
    }
}

fn run(unit: Unit<'_>, placeholders: &Placeholders, cx: Cx<'_>, out: &mut Out) {
    let labels = Default::default();
    let plain = Plain {
        kind: unit.obj.kind.name(),
        meta: &unit.obj.metadata,
        pod: &unit.pod,
        pod_path: unit.pod_path,
        pod_labels: labels,
        replicas: unit.roll.replicas,
        number_of_nodes: unit.roll.number_of_nodes,
        roll: unit.roll.roll,
        max_surge: unit.roll.max_surge,
        max_unavailable: Some(unit.roll.max_unavailable),
        max_unavailable_spec: unit.roll.max_unavailable_spec,
        base: unit.base,
        service: unit.service,
        crd: Some(unit.crd),
        ray_cluster_gpus: unit.ray_cluster_gpus,
    };
    out.extend(plain_workload(plain, placeholders.clone(), cx));
}

/// The object's units as its operator renders them, through the rules;
/// `Err` names what the render needs that the input does not hold.
pub(crate) fn lint_serving(
    obj: &ServingObject,
    placeholders: &Placeholders,
    cx: Cx<'_>,
) -> Result<Out, String> {
    let mut out = Vec::new();
    match obj.kind {
        ServingKind::VllmRuntime => production_stack::vllm_runtime(obj, placeholders, cx, &mut out),
        ServingKind::NimService => nim::nim_service(obj, placeholders, cx, &mut out)?,
        ServingKind::InferenceService => kserve::inference_service(obj, placeholders, cx, &mut out),
        ServingKind::LlmInferenceService => {
            kserve::llm_inference_service(obj, &path(&["spec"]), None, placeholders, cx, &mut out);
            if obj.at("/spec/prefill").is_some() {
                let base = path(&["spec", "prefill"]);
                kserve::llm_inference_service(
                    obj,
                    &base,
                    Some("prefill"),
                    placeholders,
                    cx,
                    &mut out,
                );
            }
        }
        ServingKind::KaitoWorkspace => kaito::kaito_workspace(obj, placeholders, cx, &mut out),
        ServingKind::StormService => aibrix::storm_service(obj, placeholders, cx, &mut out),
        ServingKind::RayClusterFleet => aibrix::ray_cluster_fleet(obj, placeholders, cx, &mut out),
        ServingKind::RayService => ray::ray_service(obj, placeholders, cx, &mut out),
        ServingKind::KubeAiModel => kubeai::model(obj, placeholders, cx, &mut out)?,
        ServingKind::KthenaModelServing => kthena::model_serving(obj, placeholders, cx, &mut out),
        ServingKind::DisaggregatedSet => {
            disaggregated::disaggregated_set(obj, placeholders, cx, &mut out);
        }
        ServingKind::LlmazService => llmaz::service(obj, placeholders, cx, &mut out)?,
        ServingKind::OmeInferenceService => {
            ome::inference_service(obj, placeholders, cx, &mut out)?;
        }
    }
    Ok(out)
}

/// The TCP readiness probe KServe and OME give their main container when
/// it has none: on its first port, else 8080 (`setDefaultReadinessProbe`).
fn default_tcp_probe(c: &mut k8s_openapi::api::core::v1::Container) {
    if c.readiness_probe.is_none() {
        let port = c
            .ports
            .iter()
            .flatten()
            .next()
            .map_or(8080, |p| p.container_port);
        c.readiness_probe = serde_json::from_value(json!({"tcpSocket": {"port": port}})).ok();
    }
}

fn http_probe(path: &str, port: Value) -> Probe {
    serde_json::from_value(json!({"httpGet": {"path": path, "port": port}})).unwrap_or_default()
}

fn gpu_resources(name: &str, n: &str) -> ResourceRequirements {
    let q = [(name.to_string(), Quantity(n.to_string()))]
        .into_iter()
        .collect::<std::collections::BTreeMap<_, _>>();
    ResourceRequirements {
        requests: Some(q.clone()),
        limits: Some(q),
        ..ResourceRequirements::default()
    }
}

/// The surge-first strategy a fix writes where the resource takes a
/// Deployment strategy of its own.
fn surge_strategy() -> Value {
    json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}})
}
