//! The pod the flat fields of a service describe (no `extraPodSpec`): one
//! container `infera` whose whole entrypoint the operator writes (§8.1),
//! its env, resources and volumes.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, EnvVar, HostPathVolumeSource, PodSpec, ResourceRequirements,
    Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::discovery::{
    NATS_SERVER_ENV, discovery_env, k8s_discovery, nats_deployed, nats_flags, nats_url,
    push_discovery_flags, value_env,
};
use super::{Component, InferaDeployment, Role, ServiceSpec, service_port};
use crate::worker::DEFAULT_GPU_TYPE;

/// The node's `/boot`, mounted read-only into every flat pod as `boot-config`.
pub const BOOT_VOLUME: &str = "boot-config";
pub const BOOT_PATH: &str = "/boot";

/// The pod the flat fields describe: one container `infera` whose whole
/// entrypoint is its `command` ([`flat_command`]; no `args`), the env of
/// [`flat_env`], and the volumes of [`flat_volumes`].
pub(super) fn flat_pod(
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
