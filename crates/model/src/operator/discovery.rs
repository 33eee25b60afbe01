//! Kubernetes discovery as the operator provisions it (§8): the
//! ServiceAccount, Role and RoleBinding `<idep>-disc`, the pod-identity env,
//! the selector a server watches workers with, and the flags of an
//! entrypoint; and the operator-managed NATS broker the KV-event plane uses.

use k8s_openapi::api::core::v1::{Container, EnvVar, EnvVarSource, ObjectFieldSelector};

use super::{Component, InferaDeployment, operator_labels};
use crate::worker::LABEL_DEPLOYMENT;

/// The env var with which the operator tells a server which pods to watch.
pub const LABEL_SELECTOR_ENV: &str = "INFERA_K8S_LABEL_SELECTOR";
/// Env naming the operator-managed NATS broker (`nats://<idep>-nats:4222`).
pub const NATS_SERVER_ENV: &str = "NATS_SERVER";
pub const NATS_CLIENT_PORT: u16 = 4222;

/// True unless `discoveryBackend` is `etcd` (§1: `kubernetes` by default).
pub(super) fn k8s_discovery(idep: &InferaDeployment) -> bool {
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
pub(super) fn discovery_env(idep_name: &str, component: Component) -> Vec<EnvVar> {
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
pub(super) fn value_env(name: &str, value: String) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: Some(value),
        ..EnvVar::default()
    }
}

/// True unless `spec.nats` is given without `deploy: true` (the operator
/// deploys a NATS broker by default).
pub(super) fn nats_deployed(idep: &InferaDeployment) -> bool {
    idep.spec.nats.as_ref().is_none_or(|n| {
        n.is_null() || n.get("deploy").and_then(serde_json::Value::as_bool) == Some(true)
    })
}

/// The operator-managed broker's client URL.
pub(super) fn nats_url(idep_name: &str) -> String {
    format!("nats://{idep_name}-nats:{NATS_CLIENT_PORT}")
}

/// The discovery flags of an entrypoint: `--discovery-backend kubernetes`
/// (with `--k8s-label-selector <selector>` for what watches workers), or
/// `--etcd-endpoint <endpoint>` with `discoveryBackend: etcd`.
pub(super) fn push_discovery_flags(
    cmd: &mut Vec<String>,
    idep: &InferaDeployment,
    watches_workers: bool,
) {
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
pub(super) fn nats_flags(idep_name: &str) -> [String; 4] {
    [
        "--kv-event-transport".to_string(),
        "nats".to_string(),
        "--nats-server".to_string(),
        nats_url(idep_name),
    ]
}

/// With extraPodSpec, the discovery env is added to the main container
/// where it does not set the variable itself (spec-level `envs` are not:
/// the template is passed through as written, §8).
pub(super) fn add_discovery_env(
    main: &mut Container,
    idep: &InferaDeployment,
    component: Component,
) {
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
