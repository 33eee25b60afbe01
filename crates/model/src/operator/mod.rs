//! InferaDeployment → the workloads the infera operator would create.
//! The single source of truth shared by `lint`, `render`, `rollout` and `sim`.
//!
//! Everything here follows `operator-semantics.md` (§1 objects and labels, §2
//! what is injected into a worker pod, §3 the strategy). This file holds the
//! custom resource's typed view ([`typed`] parses it); [`workload::render`]
//! is the one render entry point. The simulator's operator creates exactly
//! the objects it returns, so they are complete, valid apps/v1 Deployments
//! (or LeaderWorkerSets).
//!
//! - `workload.rs`: the render entry point, the rendered Deployment or
//!   LeaderWorkerSet and its metadata;
//! - `flat.rs`: the pod the flat fields describe;
//! - `inject.rs`: what the operator writes into a worker's main container
//!   (probe, readiness-port env, preStop, grace period);
//! - `discovery.rs`: Kubernetes discovery (account, RBAC, env, flags) and
//!   the NATS broker's flags;
//! - `gaie.rs`: the GAIE frontend sidecar;
//! - `strategy.rs`: the predicted rolling strategy and why.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{EnvVar, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Deserializer, Serialize};

use crate::api::{INFERA_DEPLOYMENT, LEADER_WORKER_SET};
use crate::pod::{container_runs_engine, main_container_index};
use crate::worker::{LABEL_DEPLOYMENT, LABEL_MANAGED_BY, LABEL_SERVICE, MANAGED_BY_VALUE};

pub mod discovery;
pub mod flat;
pub mod gaie;
pub mod inject;
pub mod strategy;
pub mod workload;

/// The port of a service without `port`: a server's, a worker's engine.
pub const DEFAULT_SERVER_PORT: i32 = 8000;
pub const DEFAULT_WORKER_PORT: i32 = 30000;

// ---------------------------------------------------------------------------
// Typed view of the custom resource (lenient where the CRD is, and where
// manifests in the wild carry placeholders such as `replicas: ${N}`).
// ---------------------------------------------------------------------------

/// An InferaDeployment ([`INFERA_DEPLOYMENT`]).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InferaDeployment {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: InferaDeploymentSpec,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InferaDeploymentSpec {
    /// `sglang` (default) or `vllm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_framework: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovery_backend: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_endpoint: Option<String>,
    /// Environment applied to every service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envs: Option<Vec<EnvVar>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nats: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gaie: Option<serde_json::Value>,
    #[serde(default)]
    pub services: BTreeMap<String, ServiceSpec>,
}

/// One entry of `spec.services`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSpec {
    /// `server` or `worker`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component_type: Option<String>,
    /// `mixed` (default), `prefill` or `decode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<IntOrText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number_of_nodes: Option<IntOrText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_readiness_probe: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<IntOrText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ServiceResources>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_strings"
    )]
    pub args: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_labels: Option<BTreeMap<String, String>>,
    /// A full PodSpec used verbatim instead of the flat fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_pod_spec: Option<PodSpec>,
}

/// The flat `resources` block of a service.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceResources {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<IntOrText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Quantity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Quantity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_memory: Option<Quantity>,
}

/// An integer field that may hold text in manifests that are templates
/// (`replicas: ${REPLICAS}`). The API server would reject the text; the
/// linter reports it (IR011) instead of refusing the document.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum IntOrText {
    Int(i64),
    Text(String),
}

impl IntOrText {
    /// The integer, when the field holds one (text that is a plain integer
    /// counts too).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            IntOrText::Int(n) => Some(*n),
            IntOrText::Text(s) => s.trim().parse().ok(),
        }
    }

    pub fn raw(&self) -> String {
        match self {
            IntOrText::Int(n) => n.to_string(),
            IntOrText::Text(s) => s.clone(),
        }
    }
}

/// Accept numbers and booleans in a list of strings (`args: [--tp, 2]`), as
/// a template engine that forgot to quote would produce.
fn lenient_strings<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let raw: Option<Vec<serde_json::Value>> = Option::deserialize(d)?;
    Ok(raw.map(|items| {
        items
            .into_iter()
            .map(|v| match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            })
            .collect()
    }))
}

/// Disaggregation role of a service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Mixed,
    Prefill,
    Decode,
}

impl Role {
    pub fn parse(s: Option<&str>) -> Role {
        match s.map(str::trim) {
            Some("prefill") => Role::Prefill,
            Some("decode") => Role::Decode,
            _ => Role::Mixed,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Mixed => "mixed",
            Role::Prefill => "prefill",
            Role::Decode => "decode",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Component {
    Server,
    Worker,
}

impl Component {
    /// The one "is a worker service" rule (operator semantics §1): a
    /// service is the router exactly when its `componentType` is `server`;
    /// anything else, absent included, is a worker. The operator's CRD
    /// enum admits only `server` and `worker`, so the two agree on every
    /// object the API server accepts.
    pub fn parse(s: Option<&str>) -> Component {
        match s.map(str::trim) {
            Some("server") => Component::Server,
            _ => Component::Worker,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WorkloadKind {
    Deployment,
    LeaderWorkerSet,
}

impl WorkloadKind {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Deployment => "Deployment",
            WorkloadKind::LeaderWorkerSet => LEADER_WORKER_SET.kind,
        }
    }
}

/// A worker that serves: its main container starts `infera.engine.*`, or it
/// uses the flat fields (the operator then writes that entrypoint itself).
pub fn is_serving_worker(service: &ServiceSpec) -> bool {
    if Component::parse(service.component_type.as_deref()) != Component::Worker {
        return false;
    }
    match &service.extra_pod_spec {
        None => true,
        Some(pod) => pod
            .containers
            .get(main_container_index(pod))
            .is_some_and(container_runs_engine),
    }
}

/// The service's `port`, else its component's default.
pub fn service_port(svc: &ServiceSpec, component: Component) -> i32 {
    svc.port
        .as_ref()
        .and_then(IntOrText::as_i64)
        .and_then(|p| i32::try_from(p).ok())
        .unwrap_or(match component {
            Component::Server => DEFAULT_SERVER_PORT,
            Component::Worker => DEFAULT_WORKER_PORT,
        })
}

/// The operator's labels on every object it creates (and the workloads'
/// selector): managed-by, the InferaDeployment, the service.
pub fn operator_labels(idep_name: &str, service: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_MANAGED_BY.to_string(), MANAGED_BY_VALUE.to_string()),
        (LABEL_DEPLOYMENT.to_string(), idep_name.to_string()),
        (LABEL_SERVICE.to_string(), service.to_string()),
    ])
}

/// The core v1 Services the operator creates beside the workloads, one per
/// `componentType: server` service (infera-operator
/// `internal/controller/builders.go`, `buildServerService`): named
/// `<idep>-<service>`, labelled and selecting with [`operator_labels`], one
/// port named `http` on the service's port (8000 by default), targeting
/// the same port. Wire form, namespace set, no owner.
pub fn server_services(idep: &InferaDeployment) -> Vec<serde_json::Value> {
    let name = idep.metadata.name.as_deref().unwrap_or_default();
    let ns = idep.metadata.namespace.as_deref().unwrap_or_default();
    idep.spec
        .services
        .iter()
        .filter(|(_, svc)| Component::parse(svc.component_type.as_deref()) == Component::Server)
        .map(|(svc_name, svc)| {
            let labels = operator_labels(name, svc_name);
            let port = service_port(svc, Component::Server);
            serde_json::json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": format!("{name}-{svc_name}"), "namespace": ns, "labels": labels},
                "spec": {"selector": labels,
                    "ports": [{"name": "http", "port": port, "targetPort": port}]}})
        })
        .collect()
}

/// Why a document is not an InferaDeployment [`typed`] can read.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    #[error("not an InferaDeployment: {0}")]
    NotAnInferaDeployment(String),
    #[error("the InferaDeployment does not match its schema: {0}")]
    Invalid(String),
    #[error("service {service:?}: {message}")]
    Service { service: String, message: String },
}

/// The typed InferaDeployment of a wire-form object (its `kind` checked).
pub fn typed(idep: serde_json::Value) -> Result<InferaDeployment, OperatorError> {
    let kind = idep.get("kind").and_then(|k| k.as_str()).unwrap_or("");
    if kind != INFERA_DEPLOYMENT.kind {
        return Err(OperatorError::NotAnInferaDeployment(format!(
            "kind is {kind:?}"
        )));
    }
    serde_json::from_value(idep).map_err(|e| OperatorError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// One Service per server service, as `buildServerService`: name,
    /// labels = selector, one port `http` (the service's, 8000 by default).
    #[test]
    fn server_services_as_the_operator_builds_them() {
        let idep = typed(
            json!({"apiVersion": "infera.amd.com/v1alpha1", "kind": "InferaDeployment",
            "metadata": {"name": "llama", "namespace": "llm"},
            "spec": {"services": {"router": {"componentType": "server"},
                "api": {"componentType": "server", "port": 9000},
                "decode": {"componentType": "worker"}}}}),
        )
        .unwrap();
        let svcs = server_services(&idep);
        let names: Vec<&str> = svcs
            .iter()
            .filter_map(|s| s["metadata"]["name"].as_str())
            .collect();
        assert_eq!(names, ["llama-api", "llama-router"]);
        let router = &svcs[1];
        assert_eq!(router["metadata"]["namespace"], "llm");
        assert_eq!(router["spec"]["selector"], router["metadata"]["labels"]);
        assert_eq!(router["spec"]["selector"][LABEL_SERVICE], "router");
        assert_eq!(
            router["spec"]["ports"],
            json!([{"name": "http", "port": 8000, "targetPort": 8000}])
        );
        assert_eq!(svcs[0]["spec"]["ports"][0]["port"], 9000);
    }

    #[test]
    fn serving_worker_detection() {
        let svc = |cmd: serde_json::Value| -> ServiceSpec {
            serde_json::from_value(json!({"componentType": "worker",
                "extraPodSpec": {"containers": [{"name": "main", "command": cmd}]}}))
            .unwrap()
        };
        assert!(is_serving_worker(&svc(json!([
            "python3",
            "-m",
            "infera.engine.sglang"
        ]))));
        assert!(is_serving_worker(&svc(json!([
            "/bin/sh",
            "-c",
            "exec python3 -m infera.engine.vllm --x"
        ]))));
        assert!(!is_serving_worker(&svc(json!(["sleep", "infinity"]))));
        let flat: ServiceSpec = serde_json::from_value(json!({"componentType": "worker"})).unwrap();
        assert!(is_serving_worker(&flat));
        let server: ServiceSpec =
            serde_json::from_value(json!({"componentType": "server"})).unwrap();
        assert!(!is_serving_worker(&server));
    }
}
