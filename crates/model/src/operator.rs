//! InferaDeployment → the workloads the infera operator would create.
//! The single source of truth shared by `lint`, `render`, `rollout` and `sim`.
//!
//! Everything here follows `operator-semantics.md` (§1 objects and labels, §2
//! what is injected into a worker pod, §3 the strategy). The simulator's
//! operator creates exactly the objects [`render`] returns, so they are
//! complete, valid apps/v1 Deployments (or LeaderWorkerSets).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource, ExecAction,
    HTTPGetAction, HostPathVolumeSource, Lifecycle, LifecycleHandler, ObjectFieldSelector, PodSpec,
    PodTemplateSpec, Probe, ResourceRequirements, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Deserializer, Serialize};

use crate::api::{INFERA_DEPLOYMENT, LEADER_WORKER_SET};
use crate::catalogue::parse_seconds;

pub use crate::generation::{Detection, Generation};
pub use crate::pod::{
    container_probed_on_readiness_port, container_readiness_port, container_runs_engine,
    main_container_index,
};
pub use crate::worker::{
    DEFAULT_GPU_TYPE, DEFAULT_READINESS_PORT, LABEL_DEPLOYMENT, LABEL_MANAGED_BY, LABEL_SERVICE,
    MANAGED_BY_VALUE, READINESS_PORT_ENV, READY_PATH, ReadinessPort, WORKER_INFO_ANNOTATION,
    go_atoi, readiness_port,
};
/// Annotations `infera render` adds to the printed objects (not part of what
/// the operator creates).
pub const PREDICTED_STRATEGY_ANNOTATION: &str = "infera.amd.com/predicted-strategy";
pub const PREDICTED_STRATEGY_REASON_ANNOTATION: &str = "infera.amd.com/predicted-strategy-reason";

pub const DRAIN_TIMEOUT_ENV: &str = match crate::catalogue::INFERA_DRAIN.env {
    Some(name) => name,
    None => "",
};
pub const DRAIN_TIMEOUT_FLAG: &str = crate::catalogue::INFERA_DRAIN.flags[0];
/// The env var with which the operator tells a server which pods to watch.
pub const LABEL_SELECTOR_ENV: &str = "INFERA_K8S_LABEL_SELECTOR";
pub const DEFAULT_SERVER_PORT: i32 = 8000;
/// Env naming the operator-managed NATS broker (`nats://<idep>-nats:4222`).
pub const NATS_SERVER_ENV: &str = "NATS_SERVER";
pub const NATS_CLIENT_PORT: u16 = 4222;
/// The node's `/boot`, mounted read-only into every flat pod as `boot-config`.
pub const BOOT_VOLUME: &str = "boot-config";
pub const BOOT_PATH: &str = "/boot";
/// The GAIE frontend sidecar of a worker pod, its port name and pod label.
pub const GAIE_FRONTEND_CONTAINER: &str = "infera-frontend";
pub const GAIE_FRONTEND_PORT_NAME: &str = "frontend";
pub const GAIE_FRONTEND_LABEL: &str = "infera.amd.com/gaie-frontend";
pub const DEFAULT_GAIE_FRONTEND_PORT: i32 = 8000;
pub const GAIE_READY_PATH: &str = "/v1/models";
pub const DEFAULT_WORKER_PORT: i32 = 30000;
/// Injected probe timings (§2).
pub const PROBE_INITIAL_DELAY_SECONDS: i32 = 15;
pub const PROBE_PERIOD_SECONDS: i32 = 15;
pub const PROBE_TIMEOUT_SECONDS: i32 = 10;
pub const PROBE_FAILURE_THRESHOLD: i32 = 6;
pub const PRESTOP_SLEEP_SECONDS: i64 = 15;
pub const DEFAULT_DRAIN_SECONDS: i64 = crate::catalogue::INFERA_DRAIN.default_seconds;
pub const MAX_DRAIN_SECONDS: i64 = 3600;
/// Teardown after the drain (§6).
pub const TEARDOWN_SECONDS: i64 = 50;
pub const MIN_GRACE_SECONDS: i64 = 120;

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

/// How the rendered workload will roll (§3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// RollingUpdate maxSurge 1 / maxUnavailable 0: replacement first.
    SurgeFirst,
    /// RollingUpdate maxSurge 0 / maxUnavailable 1: the old pod goes first.
    OldPodFirst,
    /// LeaderWorkerSet rolling update (maxUnavailable 1, maxSurge 0).
    Lws,
    /// Servers keep the apps/v1 default 25 % / 25 %.
    ServerDefault,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::SurgeFirst => "surge-first",
            Strategy::OldPodFirst => "old-pod-first",
            Strategy::Lws => "lws",
            Strategy::ServerDefault => "server-default",
        }
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Command and args of a container as one token list (the engine
/// catalogue's reading, [`crate::catalogue::command_tokens`]).
pub fn command_tokens(c: &Container) -> Vec<String> {
    crate::catalogue::command_tokens(c)
}

/// True when the container is idle-deployed: its entrypoint is `sleep`,
/// `sshd` or `mn-idle.sh`, and the engine is launched out of band (§4).
pub fn container_is_idle(c: &Container) -> bool {
    if container_runs_engine(c) {
        return false;
    }
    command_tokens(c).iter().any(|t| {
        let base = t.rsplit('/').next().unwrap_or(t);
        base == "sleep" || base == "sshd" || base.starts_with("mn-idle")
    })
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

/// The drain timeout of a container in seconds: `--drain-timeout` in its
/// command/args, else `INFERA_DRAIN_TIMEOUT`, else 30; capped at 3600.
pub fn drain_timeout_seconds(c: &Container) -> i64 {
    let tokens = command_tokens(c);
    let mut from_flag = None;
    for (i, t) in tokens.iter().enumerate() {
        if t == DRAIN_TIMEOUT_FLAG {
            from_flag = tokens.get(i + 1).and_then(|v| parse_seconds(v));
        } else if let Some(v) = t.strip_prefix("--drain-timeout=") {
            from_flag = parse_seconds(v);
        }
    }
    let from_env = || {
        c.env
            .iter()
            .flatten()
            .find(|e| e.name == DRAIN_TIMEOUT_ENV)
            .and_then(|e| e.value.as_deref())
            .and_then(parse_seconds)
    };
    from_flag
        .or_else(from_env)
        .unwrap_or(DEFAULT_DRAIN_SECONDS)
        .clamp(0, MAX_DRAIN_SECONDS)
}

/// The grace period the operator guarantees: max(120, 15 + drain + 50).
pub fn required_grace_seconds(drain: i64) -> i64 {
    MIN_GRACE_SECONDS.max(PRESTOP_SLEEP_SECONDS + drain + TEARDOWN_SECONDS)
}

/// True when some container of the pod is probed on its readiness port: a
/// `readinessProbe.httpGet` with path exactly `/ready` and an integer port
/// equal to that container's knowable readiness port (§3).
pub fn probed_on_readiness_port(pod: &PodSpec) -> bool {
    pod.containers
        .iter()
        .any(container_probed_on_readiness_port)
}

// ---------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------

#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    #[error("not an InferaDeployment: {0}")]
    NotAnInferaDeployment(String),
    #[error("the InferaDeployment does not match its schema: {0}")]
    Invalid(String),
    #[error("service {service:?}: {message}")]
    Service { service: String, message: String },
}

/// One workload the operator renders for one service.
#[derive(Debug, Clone, Serialize)]
pub struct RenderedWorkload {
    pub service: String,
    pub role: Role,
    pub component: Component,
    pub kind: WorkloadKind,
    /// The complete apps/v1 Deployment or LeaderWorkerSet, as the operator
    /// creates it.
    pub object: serde_json::Value,
    /// The readiness port of the main container (before injection: what the
    /// operator resolves).
    pub readiness_port: ReadinessPort,
    pub probe_injected: bool,
    pub strategy: Strategy,
    /// Why this strategy, in one sentence.
    pub why: String,
    /// Name of the main container.
    pub main_container: String,
    /// `replicas` when known (None: a placeholder; the object carries 1).
    pub replicas: Option<i32>,
    /// `numberOfNodes` when known.
    pub number_of_nodes: Option<i32>,
    /// True when the service uses the flat fields (no extraPodSpec).
    pub flat: bool,
    /// The rendered pod template spec (also inside `object`).
    pub pod: PodSpec,
    /// The rendered pod template labels.
    pub pod_labels: BTreeMap<String, String>,
}

/// Render every service of an InferaDeployment (wire form) as the latest
/// operator generation does.
pub fn render(idep: &serde_json::Value) -> Result<Vec<RenderedWorkload>, OperatorError> {
    render_as(idep, Generation::LATEST)
}

/// [`render`] as the operator of `generation` does.
pub fn render_as(
    idep: &serde_json::Value,
    generation: Generation,
) -> Result<Vec<RenderedWorkload>, OperatorError> {
    Ok(render_typed(&typed(idep.clone())?, generation))
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

/// Render every service of a typed InferaDeployment, in service-name order.
pub fn render_typed(idep: &InferaDeployment, generation: Generation) -> Vec<RenderedWorkload> {
    idep.spec
        .services
        .iter()
        .map(|(name, svc)| render_service(idep, name, svc, true, generation))
        .collect()
}

/// [`render_typed`] without the workload objects (`object` is null): the
/// pods, strategies and ports, which is all the linter reads.
pub fn render_pods(idep: &InferaDeployment, generation: Generation) -> Vec<RenderedWorkload> {
    idep.spec
        .services
        .iter()
        .map(|(name, svc)| render_service(idep, name, svc, false, generation))
        .collect()
}

/// True unless `discoveryBackend` is `etcd` (§1: `kubernetes` by default).
fn k8s_discovery(idep: &InferaDeployment) -> bool {
    idep.spec.discovery_backend.as_deref() != Some("etcd")
}

/// The ServiceAccount (and Role, RoleBinding) the operator provisions for
/// Kubernetes discovery: `<idep>-disc` (§8).
pub fn discovery_account(idep_name: &str) -> String {
    format!("{idep_name}-disc")
}

/// The label selector the server watches worker pods with.
fn discovery_selector(idep_name: &str) -> String {
    format!("{LABEL_DEPLOYMENT}={idep_name}")
}

/// Env the operator adds for Kubernetes discovery: the pod's identity, and
/// for a server the selector it watches workers with (§8).
fn discovery_env(idep_name: &str, component: Component) -> Vec<EnvVar> {
    let field = |name: &str, path: &str| EnvVar {
        name: name.to_string(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.to_string(),
                ..ObjectFieldSelector::default()
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    };
    let mut env = vec![
        field("POD_NAME", "metadata.name"),
        field("POD_NAMESPACE", "metadata.namespace"),
        field("POD_IP", "status.podIP"),
    ];
    if component == Component::Server {
        env.push(EnvVar {
            name: LABEL_SELECTOR_ENV.to_string(),
            value: Some(discovery_selector(idep_name)),
            ..EnvVar::default()
        });
    }
    env
}

/// A literal env var.
fn value_env(name: &str, value: String) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: Some(value),
        ..EnvVar::default()
    }
}

/// True unless `spec.nats` is given without `deploy: true` (the operator
/// deploys a NATS broker by default).
fn nats_deployed(idep: &InferaDeployment) -> bool {
    idep.spec.nats.as_ref().is_none_or(|n| {
        n.is_null() || n.get("deploy").and_then(serde_json::Value::as_bool) == Some(true)
    })
}

/// The operator-managed broker's client URL.
fn nats_url(idep_name: &str) -> String {
    format!("nats://{idep_name}-nats:{NATS_CLIENT_PORT}")
}

/// `spec.gaie` when `enabled: true`.
fn gaie_spec(idep: &InferaDeployment) -> Option<&serde_json::Value> {
    idep.spec
        .gaie
        .as_ref()
        .filter(|g| g.get("enabled").and_then(serde_json::Value::as_bool) == Some(true))
}

/// The `infera-frontend` sidecar the operator adds to every worker pod of a
/// GAIE-enabled InferaDeployment (flat or `extraPodSpec`): a
/// `infera.server --router-mode direct` on `gaie.frontendPort` (8000) that
/// the InferencePool targets, with its own discovery flags, NATS transport
/// and env, ready on `GET /v1/models`.
fn gaie_frontend(idep: &InferaDeployment, gaie: &serde_json::Value) -> Container {
    let name = idep.metadata.name.as_deref().unwrap_or_default();
    let text = |key: &str| gaie.get(key).and_then(serde_json::Value::as_str);
    let port = gaie
        .get("frontendPort")
        .and_then(serde_json::Value::as_i64)
        .and_then(|p| i32::try_from(p).ok())
        .filter(|p| *p != 0)
        .unwrap_or(DEFAULT_GAIE_FRONTEND_PORT);
    let mut cmd: Vec<String> = [
        "python3",
        "-m",
        "infera.server",
        "--router-mode",
        "direct",
        "--host",
        "0.0.0.0",
        "--port",
    ]
    .map(String::from)
    .to_vec();
    cmd.push(port.to_string());
    cmd.push("--router-tokenizer-path".to_string());
    cmd.push(text("tokenizerPath").unwrap_or_default().to_string());
    let mut env: Vec<EnvVar> = idep.spec.envs.clone().unwrap_or_default();
    push_discovery_flags(&mut cmd, idep, true);
    let transport = if nats_deployed(idep) {
        cmd.extend(nats_flags(name));
        env.push(value_env(NATS_SERVER_ENV, nats_url(name)));
        "nats"
    } else {
        "http"
    };
    cmd.extend(["--request-transport", transport].map(String::from));
    if k8s_discovery(idep) {
        // Pod identity without POD_IP (the sidecar registers nothing), and
        // the selector it watches workers with.
        let discovery = discovery_env(name, Component::Server);
        env.extend(discovery.into_iter().filter(|e| e.name != "POD_IP"));
    }
    let image = text("eppImage")
        .filter(|i| !i.is_empty())
        .map(str::to_string)
        .or_else(|| idep.spec.image.clone());
    Container {
        name: GAIE_FRONTEND_CONTAINER.to_string(),
        image,
        command: Some(cmd),
        env: (!env.is_empty()).then_some(env),
        ports: Some(vec![ContainerPort {
            name: Some(GAIE_FRONTEND_PORT_NAME.to_string()),
            container_port: port,
            ..ContainerPort::default()
        }]),
        readiness_probe: Some(Probe {
            http_get: Some(HTTPGetAction {
                path: Some(GAIE_READY_PATH.to_string()),
                port: IntOrString::Int(port),
                ..HTTPGetAction::default()
            }),
            initial_delay_seconds: Some(5),
            period_seconds: Some(10),
            ..Probe::default()
        }),
        ..Container::default()
    }
}

/// The objects besides the workloads that the operator creates for an
/// InferaDeployment with Kubernetes discovery: the ServiceAccount, Role and
/// RoleBinding `<idep>-disc` (§8). Empty with `discoveryBackend: etcd`.
pub fn discovery_objects(idep: &InferaDeployment) -> Vec<serde_json::Value> {
    if !k8s_discovery(idep) {
        return Vec::new();
    }
    let name = idep.metadata.name.clone().unwrap_or_default();
    let account = discovery_account(&name);
    let metadata = serde_json::json!({
        "name": account,
        "namespace": idep.metadata.namespace.clone().unwrap_or_else(|| "default".to_string()),
        "labels": operator_labels(&name, "disc"),
    });
    let namespace = metadata["namespace"].clone();
    vec![
        serde_json::json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata}),
        serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": metadata,
        "rules": [
            {"apiGroups": [""], "resources": ["pods"],
             "verbs": ["get", "list", "watch", "patch"]},
            {"apiGroups": ["infera.amd.com"], "resources": ["inferadeployments"],
             "resourceNames": [name], "verbs": ["get", "patch"]}
        ]}),
        serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": metadata,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]}),
    ]
}

fn operator_labels(idep_name: &str, service: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_MANAGED_BY.to_string(), MANAGED_BY_VALUE.to_string()),
        (LABEL_DEPLOYMENT.to_string(), idep_name.to_string()),
        (LABEL_SERVICE.to_string(), service.to_string()),
    ])
}

/// Pod template labels: `podLabels`, then the operator's keys (they win).
pub fn pod_labels(
    idep_name: &str,
    service_name: &str,
    svc: &ServiceSpec,
) -> BTreeMap<String, String> {
    let mut labels = svc.pod_labels.clone().unwrap_or_default();
    labels.extend(operator_labels(idep_name, service_name));
    labels
}

fn service_port(svc: &ServiceSpec, component: Component) -> i32 {
    svc.port
        .as_ref()
        .and_then(IntOrText::as_i64)
        .and_then(|p| i32::try_from(p).ok())
        .unwrap_or(match component {
            Component::Server => DEFAULT_SERVER_PORT,
            Component::Worker => DEFAULT_WORKER_PORT,
        })
}

/// The pod the flat fields describe: one container `infera` whose whole
/// entrypoint is its `command` ([`flat_command`]; no `args`), the env of
/// [`flat_env`], and the volumes of [`flat_volumes`].
fn flat_pod(
    idep: &InferaDeployment,
    svc: &ServiceSpec,
    component: Component,
    role: Role,
) -> PodSpec {
    let port = service_port(svc, component);
    let command = flat_command(idep, svc, component, role, port);
    let env = flat_env(idep, svc, component);
    let (volumes, mounts) = flat_volumes(svc);
    let mut requests = BTreeMap::new();
    let mut limits = BTreeMap::new();
    if let Some(res) = &svc.resources {
        if let Some(cpu) = &res.cpu {
            requests.insert("cpu".to_string(), cpu.clone());
        }
        if let Some(mem) = &res.memory {
            requests.insert("memory".to_string(), mem.clone());
        }
        if let Some(gpu) = &res.gpu {
            let zero = gpu.as_i64() == Some(0);
            if !zero {
                let gpu_type = res
                    .gpu_type
                    .clone()
                    .unwrap_or_else(|| DEFAULT_GPU_TYPE.to_string());
                requests.insert(gpu_type.clone(), Quantity(gpu.raw()));
                limits.insert(gpu_type, Quantity(gpu.raw()));
            }
        }
    }
    let resources = (!requests.is_empty() || !limits.is_empty()).then(|| ResourceRequirements {
        requests: (!requests.is_empty()).then_some(requests),
        limits: (!limits.is_empty()).then_some(limits),
        ..ResourceRequirements::default()
    });

    let container = Container {
        name: "infera".to_string(),
        image: svc.image.clone().or_else(|| idep.spec.image.clone()),
        command: Some(command),
        env: (!env.is_empty()).then_some(env),
        resources,
        volume_mounts: Some(mounts),
        ..Container::default()
    };
    PodSpec {
        containers: vec![container],
        volumes: Some(volumes),
        ..PodSpec::default()
    }
}

/// The flat container's entrypoint, all of it in `command` as the operator
/// writes it (§8.1): `python3 -m <module> --host 0.0.0.0 --port P`, the
/// discovery flags (a server adds the selector it watches workers with), a
/// prefill/decode worker's `--disaggregation-mode`, the NATS KV-event flags
/// when NATS is deployed, then the service's `args`.
fn flat_command(
    idep: &InferaDeployment,
    svc: &ServiceSpec,
    component: Component,
    role: Role,
    port: i32,
) -> Vec<String> {
    let name = idep.metadata.name.as_deref().unwrap_or_default();
    let module = match component {
        Component::Server => "infera.server".to_string(),
        Component::Worker => format!(
            "infera.engine.{}",
            if idep.spec.backend_framework.as_deref() == Some("vllm") {
                "vllm"
            } else {
                "sglang"
            }
        ),
    };
    let mut cmd: Vec<String> = ["python3", "-m"].map(String::from).to_vec();
    cmd.push(module);
    cmd.extend(["--host", "0.0.0.0", "--port"].map(String::from));
    cmd.push(port.to_string());
    push_discovery_flags(&mut cmd, idep, component == Component::Server);
    if component == Component::Worker && role != Role::Mixed {
        cmd.push("--disaggregation-mode".to_string());
        cmd.push(role.as_str().to_string());
    }
    if nats_deployed(idep) {
        cmd.extend(nats_flags(name));
    }
    cmd.extend(svc.args.iter().flatten().cloned());
    cmd
}

/// The discovery flags of an entrypoint: `--discovery-backend kubernetes`
/// (with `--k8s-label-selector <selector>` for what watches workers), or
/// `--etcd-endpoint <endpoint>` with `discoveryBackend: etcd`.
fn push_discovery_flags(cmd: &mut Vec<String>, idep: &InferaDeployment, watches_workers: bool) {
    if k8s_discovery(idep) {
        cmd.extend(["--discovery-backend", "kubernetes"].map(String::from));
        if watches_workers {
            let name = idep.metadata.name.as_deref().unwrap_or_default();
            cmd.push("--k8s-label-selector".to_string());
            cmd.push(discovery_selector(name));
        }
    } else {
        cmd.push("--etcd-endpoint".to_string());
        cmd.push(idep.spec.etcd_endpoint.clone().unwrap_or_default());
    }
}

/// `--kv-event-transport nats --nats-server <url>`: the KV-event plane over
/// the operator-managed broker.
fn nats_flags(idep_name: &str) -> [String; 4] {
    [
        "--kv-event-transport".to_string(),
        "nats".to_string(),
        "--nats-server".to_string(),
        nats_url(idep_name),
    ]
}

/// The flat container's env: spec-level `envs`, `NATS_SERVER` when NATS is
/// deployed, the discovery env, then the service's `env` (which replaces a
/// variable of the same name, where the operator appends a duplicate whose
/// last occurrence wins: the same value in the container).
fn flat_env(idep: &InferaDeployment, svc: &ServiceSpec, component: Component) -> Vec<EnvVar> {
    let name = idep.metadata.name.as_deref().unwrap_or_default();
    let mut env: Vec<EnvVar> = idep.spec.envs.clone().unwrap_or_default();
    if nats_deployed(idep) {
        env.push(value_env(NATS_SERVER_ENV, nats_url(name)));
    }
    if k8s_discovery(idep) {
        env.extend(discovery_env(name, component));
    }
    for e in svc.env.iter().flatten() {
        if let Some(existing) = env.iter_mut().find(|x| x.name == e.name) {
            *existing = e.clone();
        } else {
            env.push(e.clone());
        }
    }
    env
}

/// The flat pod's volumes and the main container's mounts: `dshm` (a memory
/// `emptyDir` at `/dev/shm`) with `sharedMemory`, then always the node's
/// `/boot` (hostPath, type `Directory`, read-only), which the engine reads
/// the kernel config from.
fn flat_volumes(svc: &ServiceSpec) -> (Vec<Volume>, Vec<VolumeMount>) {
    let mut volumes = Vec::with_capacity(2);
    let mut mounts = Vec::with_capacity(2);
    if let Some(shm) = svc
        .resources
        .as_ref()
        .and_then(|r| r.shared_memory.as_ref())
    {
        volumes.push(Volume {
            name: "dshm".to_string(),
            empty_dir: Some(EmptyDirVolumeSource {
                medium: Some("Memory".to_string()),
                size_limit: Some(shm.clone()),
            }),
            ..Volume::default()
        });
        mounts.push(VolumeMount {
            name: "dshm".to_string(),
            mount_path: "/dev/shm".to_string(),
            ..VolumeMount::default()
        });
    }
    volumes.push(Volume {
        name: BOOT_VOLUME.to_string(),
        host_path: Some(HostPathVolumeSource {
            path: BOOT_PATH.to_string(),
            type_: Some("Directory".to_string()),
        }),
        ..Volume::default()
    });
    mounts.push(VolumeMount {
        name: BOOT_VOLUME.to_string(),
        mount_path: BOOT_PATH.to_string(),
        read_only: Some(true),
        ..VolumeMount::default()
    });
    (volumes, mounts)
}

/// With extraPodSpec, the discovery env is added to the main container
/// where it does not set the variable itself (spec-level `envs` are not:
/// the template is passed through as written, §8).
fn add_discovery_env(main: &mut Container, idep: &InferaDeployment, component: Component) {
    if !k8s_discovery(idep) {
        return;
    }
    let name = idep.metadata.name.as_deref().unwrap_or_default();
    let env = main.env.get_or_insert_with(Vec::new);
    for e in discovery_env(name, component) {
        if !env.iter().any(|x| x.name == e.name) {
            env.push(e);
        }
    }
}

/// The service port, unnamed, when the main container does not declare it.
fn add_service_port(main: &mut Container, port: i32) {
    let ports = main.ports.get_or_insert_with(Vec::new);
    if !ports.iter().any(|p| p.container_port == port) {
        ports.push(ContainerPort {
            container_port: port,
            ..ContainerPort::default()
        });
    }
}

/// What the operator injects into a worker's main container (§2, §8): the
/// readiness port env and the /ready probe (#176), or the /health probe on
/// the engine port (before #176); the preStop sleep. Returns the readiness
/// port, whether the probe was injected, and the grace period the pod needs.
fn inject_worker_settings(
    main: &mut Container,
    svc: &ServiceSpec,
    multinode: bool,
    engine_port: i32,
    generation: Generation,
) -> (ReadinessPort, bool, i64) {
    let readiness = container_readiness_port(main);
    let surges = generation.surges();
    if surges && matches!(readiness, ReadinessPort::Default { .. }) {
        main.env.get_or_insert_with(Vec::new).push(EnvVar {
            name: READINESS_PORT_ENV.to_string(),
            value: Some(DEFAULT_READINESS_PORT.to_string()),
            ..EnvVar::default()
        });
    }
    let skip = svc.skip_readiness_probe.unwrap_or(false);
    let probe = if multinode || skip || main.readiness_probe.is_some() {
        None
    } else if surges {
        readiness.known().map(ready_probe)
    } else {
        Some(health_probe(engine_port))
    };
    let probe_injected = probe.is_some();
    if probe.is_some() {
        main.readiness_probe = probe;
    }
    let has_prestop = main
        .lifecycle
        .as_ref()
        .is_some_and(|l| l.pre_stop.is_some());
    if !has_prestop {
        main.lifecycle
            .get_or_insert_with(Lifecycle::default)
            .pre_stop = Some(LifecycleHandler {
            exec: Some(ExecAction {
                command: Some(vec![
                    "/bin/sh".to_string(),
                    "-c".to_string(),
                    format!("sleep {PRESTOP_SLEEP_SECONDS}"),
                ]),
            }),
            ..LifecycleHandler::default()
        });
    }
    let required = required_grace_seconds(drain_timeout_seconds(main));
    (readiness, probe_injected, required)
}

/// The rendered object's metadata: `<idep>-<service>`, the operator's
/// labels, owned by the InferaDeployment when it has a uid.
fn object_metadata(
    idep: &InferaDeployment,
    idep_name: &str,
    name: &str,
    namespace: String,
) -> ObjectMeta {
    let owner = idep.metadata.uid.as_ref().map(|uid| {
        vec![OwnerReference {
            api_version: INFERA_DEPLOYMENT.api_version.to_string(),
            kind: INFERA_DEPLOYMENT.kind.to_string(),
            name: idep_name.to_string(),
            uid: uid.clone(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]
    });
    ObjectMeta {
        name: Some(format!("{idep_name}-{name}")),
        namespace: Some(namespace),
        labels: Some(operator_labels(idep_name, name)),
        owner_references: owner,
        ..ObjectMeta::default()
    }
}

/// An apps/v1 Deployment rolling with `strategy`'s surge/unavailable.
fn deployment_object(
    metadata: ObjectMeta,
    template: PodTemplateSpec,
    selector: BTreeMap<String, String>,
    replicas: i32,
    strategy: Strategy,
) -> serde_json::Value {
    let (surge, unavailable) = match strategy {
        Strategy::SurgeFirst => (IntOrString::Int(1), IntOrString::Int(0)),
        Strategy::OldPodFirst | Strategy::Lws => (IntOrString::Int(0), IntOrString::Int(1)),
        Strategy::ServerDefault => (
            IntOrString::String("25%".to_string()),
            IntOrString::String("25%".to_string()),
        ),
    };
    let d = Deployment {
        metadata,
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(selector),
                ..LabelSelector::default()
            },
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".to_string()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(surge),
                    max_unavailable: Some(unavailable),
                }),
            }),
            template,
            ..DeploymentSpec::default()
        }),
        status: None,
    };
    let mut v = serde_json::to_value(&d).unwrap_or(serde_json::Value::Null);
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), "apps/v1".into());
        m.insert("kind".into(), "Deployment".into());
    }
    v
}

/// A LeaderWorkerSet of `number_of_nodes`-pod groups (§3: old-group-first).
fn lws_object(
    metadata: ObjectMeta,
    template: PodTemplateSpec,
    replicas: i32,
    number_of_nodes: i32,
) -> serde_json::Value {
    let lws = LeaderWorkerSet {
        api_version: Some(LEADER_WORKER_SET.api_version.to_string()),
        kind: Some(LEADER_WORKER_SET.kind.to_string()),
        metadata,
        spec: LeaderWorkerSetSpec {
            replicas: Some(IntOrText::Int(i64::from(replicas))),
            leader_worker_template: LeaderWorkerTemplate {
                size: Some(IntOrText::Int(i64::from(number_of_nodes))),
                leader_template: None,
                worker_template: Some(template),
                restart_policy: Some("RecreateGroupOnPodRestart".to_string()),
            },
            rollout_strategy: Some(LwsRolloutStrategy {
                type_: Some("RollingUpdate".to_string()),
                rolling_update_configuration: Some(LwsRollingUpdate {
                    max_unavailable: Some(IntOrString::Int(1)),
                    max_surge: Some(IntOrString::Int(0)),
                }),
            }),
            startup_policy: Some("LeaderCreated".to_string()),
        },
    };
    serde_json::to_value(&lws).unwrap_or(serde_json::Value::Null)
}

fn render_service(
    idep: &InferaDeployment,
    name: &str,
    svc: &ServiceSpec,
    with_object: bool,
    generation: Generation,
) -> RenderedWorkload {
    let idep_name = idep.metadata.name.clone().unwrap_or_default();
    let namespace = idep
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_string());
    let component = Component::parse(svc.component_type.as_deref());
    let role = Role::parse(svc.role.as_deref());
    let replicas = count_or_one(svc.replicas.as_ref());
    let number_of_nodes = count_or_one(svc.number_of_nodes.as_ref());
    let multinode = number_of_nodes.is_some_and(|n| n > 1);
    let kind = if multinode {
        WorkloadKind::LeaderWorkerSet
    } else {
        WorkloadKind::Deployment
    };
    let flat = svc.extra_pod_spec.is_none();
    let mut pod = match &svc.extra_pod_spec {
        Some(p) => p.clone(),
        None => flat_pod(idep, svc, component, role),
    };
    if pod.containers.is_empty() {
        // A PodSpec without containers is invalid; give the operator's
        // container so the rendered object stays a valid Deployment.
        pod.containers = flat_pod(idep, svc, component, role).containers;
    }
    let main_idx = main_container_index(&pod).min(pod.containers.len().saturating_sub(1));
    let port = service_port(svc, component);

    let main = MainSettings {
        idep,
        svc,
        flat,
        component,
        multinode,
        port,
        generation,
    };
    let (main_name, readiness, probe_injected) = main.apply(&mut pod, main_idx);

    if k8s_discovery(idep)
        && pod
            .service_account_name
            .as_deref()
            .is_none_or(str::is_empty)
    {
        pod.service_account_name = Some(discovery_account(&idep_name));
    }
    let gaie = gaie_spec(idep).filter(|_| component == Component::Worker);
    if let Some(gaie) = gaie {
        pod.containers.push(gaie_frontend(idep, gaie));
    }
    let facts = StrategyFacts {
        component,
        multinode,
        generation,
        probe_injected,
    };
    let (strategy, why) = predict_strategy(&facts, svc, &pod, &readiness);
    let mut labels = pod_labels(&idep_name, name, svc);
    if gaie.is_some() {
        labels.insert(GAIE_FRONTEND_LABEL.to_string(), "true".to_string());
    }
    let object = if with_object {
        let rendered = Rendered {
            kind,
            labels: &labels,
            pod: &pod,
            replicas,
            number_of_nodes,
            strategy,
        };
        workload_object(idep, &idep_name, name, namespace, rendered)
    } else {
        serde_json::Value::Null
    };

    RenderedWorkload {
        service: name.to_string(),
        role,
        component,
        kind,
        object,
        readiness_port: readiness,
        probe_injected,
        strategy,
        why,
        main_container: main_name,
        replicas,
        number_of_nodes,
        flat,
        pod,
        pod_labels: labels,
    }
}

/// A count field of a service (`replicas`, `numberOfNodes`): 1 when
/// absent, `None` when it is not a whole number the API would take.
fn count_or_one(v: Option<&IntOrText>) -> Option<i32> {
    match v {
        None => Some(1),
        Some(n) => n.as_i64().and_then(|n| i32::try_from(n).ok()),
    }
}

/// What the operator writes into a service's main container.
struct MainSettings<'a> {
    idep: &'a InferaDeployment,
    svc: &'a ServiceSpec,
    flat: bool,
    component: Component,
    multinode: bool,
    port: i32,
    generation: Generation,
}

impl MainSettings<'_> {
    /// Write them into container `main_idx` of `pod`: (its name, the
    /// readiness port, whether the operator injected the probe). Spec-level
    /// envs apply to every service; with extraPodSpec they are added to the
    /// main container when it does not set them itself.
    fn apply(&self, pod: &mut PodSpec, main_idx: usize) -> (String, ReadinessPort, bool) {
        let mut readiness = ReadinessPort::Default {
            port: DEFAULT_READINESS_PORT,
        };
        let Some(main) = pod.containers.get_mut(main_idx) else {
            return (String::new(), readiness, false);
        };
        let name = main.name.clone();
        if !self.flat {
            add_discovery_env(main, self.idep, self.component);
        }
        add_service_port(main, self.port);
        let mut probe_injected = false;
        if self.component == Component::Worker {
            let (port, injected, required) =
                inject_worker_settings(main, self.svc, self.multinode, self.port, self.generation);
            readiness = port;
            probe_injected = injected;
            let current = pod.termination_grace_period_seconds;
            if current.is_none_or(|g| g < required) {
                pod.termination_grace_period_seconds = Some(required);
            }
        }
        (name, readiness, probe_injected)
    }
}

/// What [`workload_object`] needs of a rendered service.
struct Rendered<'a> {
    kind: WorkloadKind,
    labels: &'a BTreeMap<String, String>,
    pod: &'a PodSpec,
    replicas: Option<i32>,
    number_of_nodes: Option<i32>,
    strategy: Strategy,
}

/// The Deployment or LeaderWorkerSet the operator creates for one service.
fn workload_object(
    idep: &InferaDeployment,
    idep_name: &str,
    name: &str,
    namespace: String,
    r: Rendered<'_>,
) -> serde_json::Value {
    let selector = operator_labels(idep_name, name);
    let metadata = object_metadata(idep, idep_name, name, namespace);
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(r.labels.clone()),
            ..ObjectMeta::default()
        }),
        spec: Some(r.pod.clone()),
    };
    match r.kind {
        WorkloadKind::Deployment => deployment_object(
            metadata,
            template,
            selector,
            r.replicas.unwrap_or(1),
            r.strategy,
        ),
        WorkloadKind::LeaderWorkerSet => lws_object(
            metadata,
            template,
            r.replicas.unwrap_or(1),
            r.number_of_nodes.unwrap_or(2),
        ),
    }
}

/// The probe the operator before #176 injects: `GET /health` on the engine
/// port, with the same timings as [`ready_probe`] (§8).
pub fn health_probe(engine_port: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(crate::generation::HEALTH_PATH.to_string()),
            port: IntOrString::Int(engine_port),
            ..HTTPGetAction::default()
        }),
        ..ready_probe(DEFAULT_READINESS_PORT)
    }
}

/// The probe the operator injects (§2).
pub fn ready_probe(port: u16) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(READY_PATH.to_string()),
            port: IntOrString::Int(i32::from(port)),
            ..HTTPGetAction::default()
        }),
        initial_delay_seconds: Some(PROBE_INITIAL_DELAY_SECONDS),
        period_seconds: Some(PROBE_PERIOD_SECONDS),
        timeout_seconds: Some(PROBE_TIMEOUT_SECONDS),
        failure_threshold: Some(PROBE_FAILURE_THRESHOLD),
        ..Probe::default()
    }
}

/// What decides a rendered workload's strategy besides its pod.
struct StrategyFacts {
    component: Component,
    multinode: bool,
    generation: Generation,
    probe_injected: bool,
}

fn predict_strategy(
    facts: &StrategyFacts,
    svc: &ServiceSpec,
    pod: &PodSpec,
    readiness: &ReadinessPort,
) -> (Strategy, String) {
    let StrategyFacts {
        component,
        multinode,
        generation,
        probe_injected,
    } = *facts;
    if multinode {
        return (
            Strategy::Lws,
            "numberOfNodes > 1: a LeaderWorkerSet without a readiness probe, rolled by the LWS \
             rolling update (maxUnavailable 1, maxSurge 0)"
                .to_string(),
        );
    }
    if component == Component::Server {
        return (
            Strategy::ServerDefault,
            "a server keeps the apps/v1 default rolling update (maxSurge 25%, maxUnavailable 25%)"
                .to_string(),
        );
    }
    if !generation.surges() {
        return (
            Strategy::OldPodFirst,
            "the operator before PR #176 rolls every worker surge-free → maxSurge 0, \
             maxUnavailable 1"
                .to_string(),
        );
    }
    if probed_on_readiness_port(pod) {
        let how = if probe_injected {
            format!(
                "the operator injects httpGet {READY_PATH} on readiness port {}",
                readiness.describe()
            )
        } else {
            format!(
                "a container's own readinessProbe is httpGet {READY_PATH} on its readiness port"
            )
        };
        return (
            Strategy::SurgeFirst,
            format!("probed on the readiness port ({how}) → maxSurge 1, maxUnavailable 0"),
        );
    }
    let cause = if svc.skip_readiness_probe.unwrap_or(false) {
        "skipReadinessProbe: true, so no probe is injected".to_string()
    } else if !readiness.is_knowable() {
        format!(
            "{READINESS_PORT_ENV} is {}, so no probe is injected",
            readiness.describe()
        )
    } else {
        "the main container has its own readinessProbe that is not httpGet /ready on the integer \
         readiness port, so none is injected"
            .to_string()
    };
    (
        Strategy::OldPodFirst,
        format!("not probed on the readiness port ({cause}) → maxSurge 0, maxUnavailable 1"),
    )
}

// ---------------------------------------------------------------------------
// A minimal LeaderWorkerSet ([`LEADER_WORKER_SET`])
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaderWorkerSet {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: LeaderWorkerSetSpec,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaderWorkerSetSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<IntOrText>,
    #[serde(default)]
    pub leader_worker_template: LeaderWorkerTemplate,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_strategy: Option<LwsRolloutStrategy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_policy: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaderWorkerTemplate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<IntOrText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_template: Option<PodTemplateSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_template: Option<PodTemplateSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LwsRolloutStrategy {
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update_configuration: Option<LwsRollingUpdate>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LwsRollingUpdate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,
}

// ---------------------------------------------------------------------------
// `infera render`
// ---------------------------------------------------------------------------

/// The printed form of a rendered workload: the object plus the predicted
/// strategy annotations.
pub fn annotated_object(w: &RenderedWorkload) -> serde_json::Value {
    let mut obj = w.object.clone();
    if let Some(meta) = obj.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        let ann = meta
            .entry("annotations")
            .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
        if let Some(ann) = ann.as_object_mut() {
            ann.insert(
                PREDICTED_STRATEGY_ANNOTATION.into(),
                w.strategy.as_str().into(),
            );
            ann.insert(
                PREDICTED_STRATEGY_REASON_ANNOTATION.into(),
                w.why.clone().into(),
            );
        }
    }
    obj
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(name: &str, value: &str) -> EnvVar {
        EnvVar {
            name: name.to_string(),
            value: Some(value.to_string()),
            ..EnvVar::default()
        }
    }

    #[test]
    fn readiness_port_edge_cases() {
        let knowable = |v: &str| readiness_port(&[env(READINESS_PORT_ENV, v)]).known();
        assert_eq!(knowable("+30091"), Some(30091));
        assert_eq!(knowable("30091"), Some(30091));
        assert_eq!(knowable("030090"), Some(30090));
        assert_eq!(knowable("1"), Some(1));
        assert_eq!(knowable("65535"), Some(65535));
        assert_eq!(knowable(" 30090"), None);
        assert_eq!(knowable("30090 "), None);
        assert_eq!(knowable("30_090"), None);
        assert_eq!(knowable("0"), None);
        assert_eq!(knowable("-30090"), None);
        assert_eq!(knowable("70000"), None);
        assert_eq!(knowable("65536"), None);
        assert_eq!(knowable("abc"), None);
        assert_eq!(knowable(""), None);
        assert_eq!(knowable("+"), None);
        assert_eq!(knowable("99999999999999999999999"), None);
        assert_eq!(readiness_port(&[]), ReadinessPort::Default { port: 30090 });
        let from = EnvVar {
            name: READINESS_PORT_ENV.to_string(),
            value_from: Some(Default::default()),
            ..EnvVar::default()
        };
        assert_eq!(readiness_port(&[from]), ReadinessPort::ValueFrom);
    }

    fn idep(services: serde_json::Value) -> serde_json::Value {
        json!({"apiVersion": INFERA_DEPLOYMENT.api_version, "kind": INFERA_DEPLOYMENT.kind,
               "metadata": {"name": "demo", "namespace": "ns"},
               "spec": {"backendFramework": "sglang", "image": "img:1", "services": services}})
    }

    #[test]
    fn flat_worker_gets_probe_and_surge_first() {
        let ws = render(&idep(json!({
            "prefill": {"componentType": "worker", "role": "prefill",
                        "resources": {"gpu": 2, "memory": "64Gi", "sharedMemory": "32Gi"},
                        "args": ["--tp-size", "2"]}
        })))
        .unwrap();
        let w = &ws[0];
        assert_eq!(w.strategy, Strategy::SurgeFirst);
        assert!(w.probe_injected);
        let o = &w.object;
        assert_eq!(o["kind"], "Deployment");
        assert_eq!(o["apiVersion"], "apps/v1");
        assert_eq!(o["metadata"]["name"], "demo-prefill");
        assert_eq!(o["metadata"]["namespace"], "ns");
        assert_eq!(o["spec"]["replicas"], 1);
        assert_eq!(o["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 1);
        assert_eq!(o["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 0);
        let sel = o["spec"]["selector"]["matchLabels"].as_object().unwrap();
        let tl = &o["spec"]["template"]["metadata"]["labels"];
        for (k, v) in sel {
            assert_eq!(&tl[k], v, "selector must match template labels");
        }
        let c = &o["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["name"], "infera");
        assert_eq!(
            c["command"],
            json!([
                "python3",
                "-m",
                "infera.engine.sglang",
                "--host",
                "0.0.0.0",
                "--port",
                "30000",
                "--discovery-backend",
                "kubernetes",
                "--disaggregation-mode",
                "prefill",
                "--kv-event-transport",
                "nats",
                "--nats-server",
                "nats://demo-nats:4222",
                "--tp-size",
                "2"
            ])
        );
        assert!(c.get("args").is_none(), "the operator sets no args");
        assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/ready");
        assert_eq!(c["readinessProbe"]["httpGet"]["port"], 30090);
        assert_eq!(c["readinessProbe"]["timeoutSeconds"], 10);
        assert_eq!(c["readinessProbe"]["failureThreshold"], 6);
        assert_eq!(
            c["lifecycle"]["preStop"]["exec"]["command"],
            json!(["/bin/sh", "-c", "sleep 15"])
        );
        assert_eq!(c["ports"], json!([{"containerPort": 30000}]));
        assert_eq!(
            o["spec"]["selector"]["matchLabels"][LABEL_MANAGED_BY],
            MANAGED_BY_VALUE
        );
        assert_eq!(
            o["spec"]["template"]["spec"]["serviceAccountName"],
            "demo-disc"
        );
        assert_eq!(c["resources"]["requests"]["amd.com/gpu"], "2");
        assert_eq!(c["resources"]["limits"]["amd.com/gpu"], "2");
        assert!(
            c["env"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["name"] == READINESS_PORT_ENV && e["value"] == "30090")
        );
        assert_eq!(
            o["spec"]["template"]["spec"]["terminationGracePeriodSeconds"],
            120
        );
        // Typed round trip: a valid apps/v1 Deployment.
        let d: Deployment = serde_json::from_value(o.clone()).unwrap();
        assert_eq!(d.spec.unwrap().replicas, Some(1));
    }

    /// Before #176 (the published operator's `buildDeployment` and
    /// `injectWorkerRolloutDefaults`): every worker surge-free, `/health`
    /// on the engine port, no readiness-port env; the rest as in #176.
    #[test]
    fn pre_176_renders_surge_free_with_health_probe() {
        let spec = idep(json!({
            "decode": {"componentType": "worker", "role": "decode", "port": 31000},
            "lws": {"componentType": "worker", "numberOfNodes": 2},
            "own": {"componentType": "worker", "extraPodSpec": {"containers": [
                {"name": "main", "image": "x", "command": ["python3", "-m", "infera.engine.vllm"],
                 "ports": [{"containerPort": 9, "name": "metrics"}],
                 "readinessProbe": {"httpGet": {"path": "/ready", "port": 30090}}}]}},
            "router": {"componentType": "server"}
        }));
        let ws = render_as(&spec, Generation::SurgeFree).unwrap();
        let by = |n: &str| ws.iter().find(|w| w.service == n).unwrap();
        let decode = by("decode");
        assert_eq!(decode.strategy, Strategy::OldPodFirst);
        assert!(decode.probe_injected);
        let o = &decode.object;
        assert_eq!(o["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 0);
        assert_eq!(o["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 1);
        let c = &o["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(
            c["readinessProbe"]["httpGet"],
            json!({"path": "/health", "port": 31000})
        );
        assert_eq!(c["readinessProbe"]["periodSeconds"], 15);
        assert!(
            !c["env"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["name"] == READINESS_PORT_ENV),
            "no readiness-port env before #176"
        );
        let own = by("own");
        assert_eq!(own.strategy, Strategy::OldPodFirst, "even probed /ready");
        assert!(!own.probe_injected);
        let main = &own.object["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(
            main["ports"],
            json!([{"containerPort": 9, "name": "metrics"}, {"containerPort": 30000}])
        );
        let env_names: Vec<_> = main["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].clone())
            .collect();
        assert_eq!(
            env_names,
            json!(["POD_NAME", "POD_NAMESPACE", "POD_IP"])
                .as_array()
                .unwrap()
                .clone()
        );
        let lws = by("lws");
        assert_eq!(lws.strategy, Strategy::Lws);
        assert!(!lws.probe_injected);
        let router = by("router");
        assert_eq!(router.strategy, Strategy::ServerDefault);
        let env = router.object["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array()
            .unwrap()
            .clone();
        assert!(
            env.iter().any(|e| e["name"] == LABEL_SELECTOR_ENV
                && e["value"] == "infera.amd.com/deployment=demo")
        );
        // #176 renders the same fixture surge-first on /ready.
        let latest = render(&spec).unwrap();
        let decode = latest.iter().find(|w| w.service == "decode").unwrap();
        assert_eq!(decode.strategy, Strategy::SurgeFirst);
        let typed: InferaDeployment = serde_json::from_value(spec).unwrap();
        let extra = discovery_objects(&typed);
        let kinds: Vec<_> = extra.iter().map(|o| o["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["ServiceAccount", "Role", "RoleBinding"]);
        assert!(extra.iter().all(|o| o["metadata"]["name"] == "demo-disc"));
        assert_eq!(extra[2]["subjects"][0]["name"], "demo-disc");
    }

    #[test]
    fn skip_probe_is_old_pod_first() {
        let ws = render(&idep(json!({
            "decode": {"componentType": "worker", "role": "decode", "skipReadinessProbe": true}
        })))
        .unwrap();
        assert_eq!(ws[0].strategy, Strategy::OldPodFirst);
        assert!(!ws[0].probe_injected);
        assert_eq!(
            ws[0].object["spec"]["strategy"]["rollingUpdate"]["maxSurge"],
            0
        );
        assert_eq!(
            ws[0].object["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"],
            1
        );
    }

    #[test]
    fn unknowable_port_and_own_probe_are_old_pod_first() {
        let ws = render(&idep(json!({
            "a": {"componentType": "worker", "env": [{"name": READINESS_PORT_ENV, "value": " 30090"}]},
            "b": {"componentType": "worker", "extraPodSpec": {"containers": [
                {"name": "main", "image": "x", "command": ["python3", "-m", "infera.engine.vllm"],
                 "readinessProbe": {"httpGet": {"path": "/health", "port": 30000}}}]}},
            "c": {"componentType": "worker", "extraPodSpec": {"containers": [
                {"name": "sidecar", "image": "y"},
                {"name": "main", "image": "x", "env": [{"name": READINESS_PORT_ENV, "value": "+30091"}],
                 "readinessProbe": {"httpGet": {"path": "/ready", "port": 30091}}}]}}
        })))
        .unwrap();
        assert_eq!(ws[0].strategy, Strategy::OldPodFirst);
        assert!(!ws[0].probe_injected);
        assert_eq!(ws[1].strategy, Strategy::OldPodFirst);
        assert_eq!(ws[1].main_container, "main");
        assert_eq!(ws[2].strategy, Strategy::SurgeFirst);
        assert!(!ws[2].probe_injected);
        assert_eq!(ws[2].main_container, "main");
        assert_eq!(ws[2].readiness_port.known(), Some(30091));
    }

    #[test]
    fn server_default_and_multinode_lws() {
        let ws = render(&idep(json!({
            "server": {"componentType": "server", "replicas": 2},
            "worker": {"componentType": "worker", "numberOfNodes": 2}
        })))
        .unwrap();
        let server = ws.iter().find(|w| w.service == "server").unwrap();
        assert_eq!(server.strategy, Strategy::ServerDefault);
        assert_eq!(
            server.object["spec"]["strategy"]["rollingUpdate"]["maxSurge"],
            "25%"
        );
        assert_eq!(server.object["spec"]["replicas"], 2);
        let worker = ws.iter().find(|w| w.service == "worker").unwrap();
        assert_eq!(worker.kind, WorkloadKind::LeaderWorkerSet);
        assert_eq!(worker.strategy, Strategy::Lws);
        assert!(!worker.probe_injected);
        assert_eq!(worker.object["kind"], "LeaderWorkerSet");
        assert_eq!(worker.object["spec"]["leaderWorkerTemplate"]["size"], 2);
        assert!(
            worker.object["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"]
                [0]
            .get("readinessProbe")
            .is_none()
        );
    }

    /// The pod facts outside PR #176, alike in both generations and checked
    /// against the published operator by the lab's render differential:
    /// the whole entrypoint in `command`, `NATS_SERVER` after `envs`, the
    /// `/boot` mount, the GAIE frontend sidecar and its pod label.
    #[test]
    fn entrypoint_env_boot_and_gaie_as_the_operator_writes_them() {
        for case in &fidelity_cases() {
            for generation in [Generation::SurgeFree, Generation::LATEST] {
                check_fidelity(case, generation);
            }
        }
    }

    struct FidelityCase {
        name: &'static str,
        spec: serde_json::Value,
        service: &'static str,
        command_has: &'static [&'static str],
        command_lacks: &'static [&'static str],
        env_names: &'static [&'static str],
        mounts: &'static [&'static str],
        sidecar: bool,
    }

    /// A flat server's env with NATS and Kubernetes discovery, in order.
    const SERVER_ENV: &[&str] = &[
        NATS_SERVER_ENV,
        "POD_NAME",
        "POD_NAMESPACE",
        "POD_IP",
        LABEL_SELECTOR_ENV,
    ];

    fn fidelity_cases() -> Vec<FidelityCase> {
        let worker = json!({"componentType": "worker", "args": ["--tp-size", "2"],
                            "resources": {"sharedMemory": "1Gi"}});
        let extra = json!({"componentType": "worker",
            "extraPodSpec": {"containers": [{"name": "main", "image": "x",
                "command": ["python3", "-m", "infera.engine.sglang"]}]}});
        vec![
            FidelityCase {
                name: "default NATS: flags after discovery, env after envs",
                spec: json!({"envs": [{"name": "A", "value": "1"}],
                             "services": {"w": worker.clone()}}),
                service: "w",
                command_has: &["--discovery-backend kubernetes --kv-event-transport nats \
                                --nats-server nats://demo-nats:4222 --tp-size 2"],
                command_lacks: &["--k8s-label-selector", "--router-mode"],
                env_names: &["A", NATS_SERVER_ENV, "POD_NAME", "POD_NAMESPACE", "POD_IP"],
                mounts: &["dshm", BOOT_VOLUME],
                sidecar: false,
            },
            FidelityCase {
                name: "nats given without deploy: no broker, no flags",
                spec: json!({"nats": {"storageSize": "1Gi"}, "services": {"w": worker.clone()}}),
                service: "w",
                command_has: &["--discovery-backend kubernetes --tp-size 2"],
                command_lacks: &["--kv-event-transport", NATS_SERVER_ENV],
                env_names: &["POD_NAME", "POD_NAMESPACE", "POD_IP"],
                mounts: &["dshm", BOOT_VOLUME],
                sidecar: false,
            },
            FidelityCase {
                name: "server: selector flag after the discovery backend",
                spec: json!({"services": {"s": {"componentType": "server"}}}),
                service: "s",
                command_has: &["python3 -m infera.server --host 0.0.0.0 --port 8000 \
                    --discovery-backend kubernetes --k8s-label-selector \
                    infera.amd.com/deployment=demo --kv-event-transport nats"],
                command_lacks: &["--disaggregation-mode"],
                env_names: SERVER_ENV,
                mounts: &[BOOT_VOLUME],
                sidecar: false,
            },
            FidelityCase {
                name: "GAIE flat worker: sidecar and label",
                spec: json!({"gaie": {"enabled": true, "tokenizerPath": "tok"},
                             "services": {"w": worker.clone()}}),
                service: "w",
                command_has: &["--kv-event-transport nats"],
                command_lacks: &["--router-mode"],
                env_names: &[NATS_SERVER_ENV, "POD_NAME", "POD_NAMESPACE", "POD_IP"],
                mounts: &["dshm", BOOT_VOLUME],
                sidecar: true,
            },
            FidelityCase {
                name: "GAIE extraPodSpec worker: sidecar, template untouched otherwise",
                spec: json!({"gaie": {"enabled": true, "tokenizerPath": "tok"},
                             "services": {"w": extra}}),
                service: "w",
                command_has: &["python3 -m infera.engine.sglang"],
                command_lacks: &["--nats-server", "--discovery-backend"],
                env_names: &["POD_NAME", "POD_NAMESPACE", "POD_IP"],
                mounts: &[],
                sidecar: true,
            },
            FidelityCase {
                name: "GAIE server: no sidecar",
                spec: json!({"gaie": {"enabled": true, "tokenizerPath": "tok"},
                             "services": {"s": {"componentType": "server"}}}),
                service: "s",
                command_has: &["--k8s-label-selector"],
                command_lacks: &["--router-mode"],
                env_names: SERVER_ENV,
                mounts: &[BOOT_VOLUME],
                sidecar: false,
            },
        ]
    }

    fn check_fidelity(case: &FidelityCase, generation: Generation) {
        let mut doc = idep(json!({}));
        let spec = doc["spec"].as_object_mut().unwrap();
        for (k, v) in case.spec.as_object().unwrap() {
            spec.insert(k.clone(), v.clone());
        }
        let ws = render_as(&doc, generation).unwrap();
        let w = ws.iter().find(|w| w.service == case.service).unwrap();
        let at = format!("{} ({generation:?})", case.name);
        let main = &w.pod.containers[main_container_index(&w.pod)];
        assert!(main.args.is_none(), "{at}: no args");
        let command = main.command.clone().unwrap_or_default().join(" ");
        for want in case.command_has {
            let want = want.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(command.contains(&want), "{at}: {command:?} lacks {want:?}");
        }
        for not in case.command_lacks {
            assert!(!command.contains(not), "{at}: {command:?} has {not:?}");
        }
        let names: Vec<&str> = main
            .env
            .iter()
            .flatten()
            .map(|e| e.name.as_str())
            .filter(|n| *n != READINESS_PORT_ENV)
            .collect();
        assert_eq!(names, case.env_names, "{at}: env order");
        let mounts: Vec<&str> = main
            .volume_mounts
            .iter()
            .flatten()
            .map(|m| m.name.as_str())
            .collect();
        assert_eq!(mounts, case.mounts, "{at}: mounts");
        let sidecar = w
            .pod
            .containers
            .iter()
            .find(|c| c.name == GAIE_FRONTEND_CONTAINER);
        assert_eq!(sidecar.is_some(), case.sidecar, "{at}: sidecar");
        assert_eq!(
            w.pod_labels.get(GAIE_FRONTEND_LABEL).map(String::as_str),
            case.sidecar.then_some("true"),
            "{at}: label"
        );
        let tmpl = &w.object["spec"]["template"];
        assert_eq!(
            tmpl["metadata"]["labels"][GAIE_FRONTEND_LABEL].as_str(),
            case.sidecar.then_some("true"),
            "{at}: object label"
        );
        if let Some(s) = sidecar {
            check_gaie_sidecar(s, &at);
        }
        if case.mounts.contains(&BOOT_VOLUME) {
            check_boot(&w.pod, main, &at);
        }
    }

    fn check_gaie_sidecar(s: &Container, at: &str) {
        assert_eq!(
            s.command.clone().unwrap().join(" "),
            "python3 -m infera.server --router-mode direct --host 0.0.0.0 \
     --port 8000 --router-tokenizer-path tok --discovery-backend kubernetes \
     --k8s-label-selector infera.amd.com/deployment=demo \
     --kv-event-transport nats --nats-server nats://demo-nats:4222 \
     --request-transport nats",
            "{at}: sidecar command"
        );
        let env: Vec<&str> = s.env.iter().flatten().map(|e| e.name.as_str()).collect();
        assert_eq!(
            env,
            [
                NATS_SERVER_ENV,
                "POD_NAME",
                "POD_NAMESPACE",
                LABEL_SELECTOR_ENV
            ],
            "{at}: sidecar env"
        );
        let probe = s
            .readiness_probe
            .as_ref()
            .unwrap()
            .http_get
            .as_ref()
            .unwrap();
        assert_eq!(
            (probe.path.as_deref(), &probe.port),
            (Some(GAIE_READY_PATH), &IntOrString::Int(8000)),
            "{at}"
        );
        assert_eq!(
            s.ports.as_ref().unwrap()[0].name.as_deref(),
            Some("frontend")
        );
    }

    fn check_boot(pod: &PodSpec, main: &Container, at: &str) {
        let boot = pod
            .volumes
            .iter()
            .flatten()
            .find(|v| v.name == BOOT_VOLUME)
            .unwrap();
        let hp = boot.host_path.as_ref().unwrap();
        assert_eq!(
            (hp.path.as_str(), hp.type_.as_deref()),
            ("/boot", Some("Directory"))
        );
        let m = main
            .volume_mounts
            .iter()
            .flatten()
            .find(|m| m.name == BOOT_VOLUME)
            .unwrap();
        assert_eq!(
            (m.mount_path.as_str(), m.read_only),
            ("/boot", Some(true)),
            "{at}"
        );
    }

    #[test]
    fn pod_labels_operator_keys_win() {
        let ws = render(&idep(json!({
            "w": {"componentType": "worker", "podLabels": {"team": "a", LABEL_SERVICE: "evil"}}
        })))
        .unwrap();
        assert_eq!(ws[0].pod_labels.get("team").map(String::as_str), Some("a"));
        assert_eq!(
            ws[0].pod_labels.get(LABEL_SERVICE).map(String::as_str),
            Some("w")
        );
    }

    #[test]
    fn grace_period_from_drain_timeout() {
        let ws = render(&idep(json!({
            "a": {"componentType": "worker", "args": ["--drain-timeout", "600"]},
            "b": {"componentType": "worker", "env": [{"name": DRAIN_TIMEOUT_ENV, "value": "100000"}]},
            "c": {"componentType": "worker", "args": ["--drain-timeout=10"]}
        })))
        .unwrap();
        assert_eq!(ws[0].pod.termination_grace_period_seconds, Some(665));
        assert_eq!(ws[1].pod.termination_grace_period_seconds, Some(3665));
        assert_eq!(ws[2].pod.termination_grace_period_seconds, Some(120));
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
