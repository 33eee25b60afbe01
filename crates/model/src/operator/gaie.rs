//! The Gateway API Inference Extension (GAIE) as the operator renders it:
//! with `spec.gaie.enabled`, every worker pod gets the `infera-frontend`
//! sidecar the InferencePool targets, and a pod label saying so.

use k8s_openapi::api::core::v1::{Container, ContainerPort, EnvVar, HTTPGetAction, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::discovery::{
    NATS_SERVER_ENV, discovery_env, k8s_discovery, nats_deployed, nats_flags, nats_url,
    push_discovery_flags, value_env,
};
use super::{Component, InferaDeployment};

/// The GAIE frontend sidecar of a worker pod, its port name and pod label.
pub const GAIE_FRONTEND_CONTAINER: &str = "infera-frontend";
pub const GAIE_FRONTEND_PORT_NAME: &str = "frontend";
pub const GAIE_FRONTEND_LABEL: &str = "infera.amd.com/gaie-frontend";
pub const DEFAULT_GAIE_FRONTEND_PORT: i32 = 8000;
pub const GAIE_READY_PATH: &str = "/v1/models";

/// `spec.gaie` when `enabled: true`.
pub(super) fn gaie_spec(idep: &InferaDeployment) -> Option<&serde_json::Value> {
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
pub(super) fn gaie_frontend(idep: &InferaDeployment, gaie: &serde_json::Value) -> Container {
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
