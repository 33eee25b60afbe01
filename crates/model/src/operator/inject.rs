//! What the operator writes into a service's main container (§2, §8): the
//! service port, the discovery env of an `extraPodSpec` template, and for a
//! worker the readiness-port env and probe (#176) or the `/health` probe
//! (before #176), the preStop sleep and the grace period the drain needs.

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, ExecAction, HTTPGetAction, Lifecycle, LifecycleHandler,
    PodSpec, Probe,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::discovery::add_discovery_env;
use super::{Component, InferaDeployment, ServiceSpec};
use crate::generation::{Generation, HEALTH_PATH};
use crate::pod::{container_readiness_port, drain_timeout_seconds};
use crate::worker::{DEFAULT_READINESS_PORT, READINESS_PORT_ENV, READY_PATH, ReadinessPort};

/// Injected probe timings (§2).
pub const PROBE_INITIAL_DELAY_SECONDS: i32 = 15;
pub const PROBE_PERIOD_SECONDS: i32 = 15;
pub const PROBE_TIMEOUT_SECONDS: i32 = 10;
pub const PROBE_FAILURE_THRESHOLD: i32 = 6;
pub const PRESTOP_SLEEP_SECONDS: i64 = 15;
/// Teardown after the drain (§6).
pub const TEARDOWN_SECONDS: i64 = 50;
pub const MIN_GRACE_SECONDS: i64 = 120;

/// The grace period the operator guarantees: max(120, 15 + drain + 50).
pub fn required_grace_seconds(drain: i64) -> i64 {
    MIN_GRACE_SECONDS.max(PRESTOP_SLEEP_SECONDS + drain + TEARDOWN_SECONDS)
}

/// What the operator writes into a service's main container.
pub(super) struct MainSettings<'a> {
    pub(super) idep: &'a InferaDeployment,
    pub(super) svc: &'a ServiceSpec,
    pub(super) flat: bool,
    pub(super) component: Component,
    pub(super) multinode: bool,
    pub(super) port: i32,
    pub(super) generation: Generation,
}

impl MainSettings<'_> {
    /// Write them into container `main_idx` of `pod`: (its name, the
    /// readiness port, whether the operator injected the probe). Spec-level
    /// envs apply to every service; with extraPodSpec they are added to the
    /// main container when it does not set them itself.
    pub(super) fn apply(
        &self,
        pod: &mut PodSpec,
        main_idx: usize,
    ) -> (String, ReadinessPort, bool) {
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

/// The probe the operator before #176 injects: `GET /health` on the engine
/// port, with the same timings as [`ready_probe`] (§8).
pub fn health_probe(engine_port: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(HEALTH_PATH.to_string()),
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
