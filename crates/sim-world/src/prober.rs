//! What the kubelet reads from a pod spec — the infera engine a container
//! runs, its readiness and engine ports, the readiness/startup probes,
//! preStop — and the probe itself, sent for real to the port the pod's probe
//! names: on the worker's readiness port to its `/ready` listener (open once
//! registered: routable), on the engine port to the engine's listener (open
//! once weights are loaded: `GET /health` answers 200 before the worker
//! registers — Ready before routable, as the operator before PR #176
//! probes). A probe on any other port of a worker passes once weights are
//! loaded (modelled, nothing listens there); exec and other probes once the
//! container runs.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use serde_json::Value;

use infera_sim_core::json::str_at;
use infera_sim_core::net::http_get;

use infera_model::catalogue;
use infera_model::kv::{KvIdentity, LoadFailurePolicy, load_failure_policy};
use infera_model::pod::{self as pod_facts, engine_container_index, launches_infera_worker};
use infera_model::worker::main_container_position;
use k8s_openapi::api::core::v1::PodSpec;

/// What a probe checks.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Check {
    /// `httpGet` (a real request for `path`) or `tcpSocket` (`None`: a
    /// real connect) on the readiness port.
    ReadinessPort {
        path: Option<String>,
    },
    /// The same on the engine port.
    EnginePort {
        path: Option<String>,
    },
    /// Another port of a worker: passes once weights are loaded.
    EngineUp,
    Running,
}

#[derive(Debug, Clone)]
pub(super) struct Probe {
    pub check: Check,
    pub initial: f64,
    pub period: f64,
    pub timeout: f64,
    pub success: u32,
    pub failure: u32,
}

#[derive(Debug, Clone)]
pub(super) struct Engine {
    pub role: String,
    pub engine: String,
    pub model: String,
    pub port: i64,
    pub readiness_port: u16,
    /// Seconds the engine finishes in-flight requests after SIGTERM (the
    /// catalogue's: the infera engine's `--drain-timeout`).
    pub drain: f64,
    /// Its KV compatibility identity.
    pub kv: KvIdentity,
    /// What it does as a decode when a prefill's identity differs.
    pub kv_policy: LoadFailurePolicy,
}

pub(super) fn main_container(pod: &Value) -> Value {
    let containers = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    main_container_position(containers.iter().map(|c| str_at(c, "/name")))
        .and_then(|i| containers.get(i))
        .cloned()
        .unwrap_or(Value::Null)
}

/// Whether the simulated kubelet runs `pod` as an infera worker, which
/// registers once loaded: the model's one rule
/// ([`infera_model::pod::launches_infera_worker`]; a kubelet starts what the
/// spec says, so a registration alone does not make one).
pub fn is_infera_worker(pod: &Value) -> bool {
    engine_of(pod).is_some()
}

pub(super) fn engine_of(pod: &Value) -> Option<Engine> {
    let spec: PodSpec = serde_json::from_value(pod.get("spec")?.clone()).ok()?;
    if !launches_infera_worker(&spec) {
        return None;
    }
    let main = spec.containers.get(engine_container_index(&spec))?;
    let engine = catalogue::infera_backend(main)?;
    let toks = catalogue::command_tokens(main);
    let flags = catalogue::Flags::parse(&toks);
    let role = flags.value(&["--disaggregation-mode"]).unwrap_or("mixed");
    let model = flags
        .value(&["--served-model-name"])
        .or_else(|| flags.value(&["--model-path"]))
        .or_else(|| flags.value(&["--model"]))
        .unwrap_or("unknown");
    let port = flags
        .value(&["--port"])
        .and_then(|p| p.parse().ok())
        .or_else(|| {
            let ports = main.ports.as_deref().unwrap_or_default();
            ports.first().map(|p| i64::from(p.container_port))
        })
        .unwrap_or(30000);
    Some(Engine {
        kv: KvIdentity::of(main)?,
        kv_policy: load_failure_policy(main),
        role: role.to_string(),
        engine,
        model: model.to_string(),
        port,
        readiness_port: pod_facts::readiness_port(&spec),
        #[allow(clippy::cast_precision_loss)]
        drain: catalogue::recognize(main)
            .and_then(|e| e.drain(main))
            .map_or(0.0, |d| d.seconds as f64),
    })
}

fn probe_port(p: &Value, container: &Value) -> Option<i64> {
    let port_value = p
        .pointer("/httpGet/port")
        .or_else(|| p.pointer("/tcpSocket/port"));
    port_value.and_then(|v| {
        v.as_i64().or_else(|| {
            let name = v.as_str()?;
            name.parse().ok().or_else(|| {
                container
                    .get("ports")?
                    .as_array()?
                    .iter()
                    .find(|cp| str_at(cp, "/name") == name)
                    .and_then(|cp| cp.get("containerPort")?.as_i64())
            })
        })
    })
}

pub(super) fn probe_of(p: &Value, container: &Value, engine: Option<&Engine>) -> Probe {
    let port = probe_port(p, container);
    let http = p.get("httpGet").is_some_and(Value::is_object);
    let path = || {
        let path = str_at(p, "/httpGet/path");
        let path = if path.is_empty() { "/" } else { path };
        http.then(|| path.to_string())
    };
    let check = match (engine, port) {
        (Some(e), Some(port)) if port == i64::from(e.readiness_port) => {
            Check::ReadinessPort { path: path() }
        }
        (Some(e), Some(port)) if port == e.port => Check::EnginePort { path: path() },
        (Some(_), Some(_)) => Check::EngineUp,
        _ => Check::Running,
    };
    let num = |k: &str, d: f64| p.get(k).and_then(Value::as_f64).unwrap_or(d);
    let count = |k: &str, d: u32| {
        p.get(k)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(d)
            .max(1)
    };
    Probe {
        check,
        initial: num("initialDelaySeconds", 0.0),
        period: num("periodSeconds", 10.0).max(1.0),
        timeout: num("timeoutSeconds", 1.0).max(1.0),
        success: count("successThreshold", 1),
        failure: count("failureThreshold", 3),
    }
}

/// The preStop hook's duration: a `sleep N` exec or a `sleep` action.
pub(super) fn prestop_seconds(main: &Value) -> Option<f64> {
    main.pointer("/lifecycle/preStop").map(|h| {
        let cmd: Vec<&str> = h
            .pointer("/exec/command")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .flat_map(str::split_whitespace)
            .collect();
        let after_sleep = cmd.iter().position(|t| *t == "sleep").map(|i| i + 1);
        after_sleep
            .and_then(|i| cmd.get(i))
            .and_then(|s| s.parse::<f64>().ok())
            .or_else(|| h.pointer("/sleep/seconds").and_then(Value::as_f64))
            .unwrap_or(0.0)
    })
}

/// The worker's state a probe sees (besides its real listener).
#[derive(Debug, Clone, Copy)]
pub(super) struct Seen {
    pub registered: bool,
    pub loaded: bool,
    pub running: bool,
}

impl Check {
    /// What the probe should find: the model's expectation.
    pub fn expected(&self, s: Seen) -> bool {
        match self {
            Check::ReadinessPort { .. } => s.registered,
            Check::EnginePort { .. } | Check::EngineUp => s.loaded,
            Check::Running => s.running,
        }
    }
}

impl Engine {
    /// Where a probe of `check` on a pod at `ip` goes, if it goes anywhere.
    pub fn target(&self, check: &Check, ip: Ipv4Addr) -> Option<SocketAddr> {
        let port = match check {
            Check::ReadinessPort { .. } => self.readiness_port,
            Check::EnginePort { .. } => u16::try_from(self.port).ok()?,
            Check::EngineUp | Check::Running => return None,
        };
        Some(SocketAddr::from((ip, port)))
    }
}

/// Run one probe. `addr` is where it goes ([`Engine::target`]);
/// `wall_timeout` is the probe's timeout in wall time. An HTTP probe
/// succeeds on 200..399 (as the kubelet's), and fails on a refused
/// connection or a timeout.
pub(super) async fn run(
    check: &Check,
    addr: Option<SocketAddr>,
    wall_timeout: Duration,
    s: Seen,
) -> bool {
    let path = match check {
        Check::ReadinessPort { path } | Check::EnginePort { path } => path,
        other => return other.expected(s),
    };
    let Some(addr) = addr else {
        return false;
    };
    match path {
        Some(path) => http_get(addr, path, wall_timeout)
            .await
            .is_ok_and(|r| (200..400).contains(&r.status)),
        None => {
            let connect = tokio::net::TcpStream::connect(addr);
            matches!(tokio::time::timeout(wall_timeout, connect).await, Ok(Ok(_)))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A probe is classified by the port it names: the readiness port, the
    /// engine port (by number or by the container port's name), another port,
    /// or no port at all.
    #[test]
    fn probes_are_classified_by_their_port() {
        let container = json!({"ports": [{"name": "http", "containerPort": 30000}]});
        let engine = Engine {
            role: "decode".into(),
            engine: "sglang".into(),
            model: "m".into(),
            port: 30000,
            readiness_port: 30090,
            drain: 0.0,
            kv: KvIdentity::of(&k8s_openapi::api::core::v1::Container {
                image: Some("vllm/vllm-openai:v0.11.0".into()),
                ..Default::default()
            })
            .unwrap_or_else(|| panic!("vLLM by its image")),
            kv_policy: LoadFailurePolicy::Fail,
        };
        let path = |p: &str| Some(p.to_string());
        let cases = [
            (
                json!({"httpGet": {"path": "/ready", "port": 30090}}),
                Check::ReadinessPort {
                    path: path("/ready"),
                },
            ),
            (
                json!({"tcpSocket": {"port": 30090}}),
                Check::ReadinessPort { path: None },
            ),
            (
                json!({"httpGet": {"path": "/health", "port": 30000}}),
                Check::EnginePort {
                    path: path("/health"),
                },
            ),
            (
                json!({"httpGet": {"path": "/health", "port": "http"}}),
                Check::EnginePort {
                    path: path("/health"),
                },
            ),
            (
                json!({"httpGet": {"port": 30000}}),
                Check::EnginePort { path: path("/") },
            ),
            (
                json!({"httpGet": {"path": "/metrics", "port": 9400}}),
                Check::EngineUp,
            ),
            (json!({"exec": {"command": ["true"]}}), Check::Running),
        ];
        for (probe, want) in cases {
            assert_eq!(
                probe_of(&probe, &container, Some(&engine)).check,
                want,
                "{probe}"
            );
        }
        let ip = Ipv4Addr::new(10, 244, 0, 7);
        let health = Check::EnginePort {
            path: path("/health"),
        };
        assert_eq!(
            engine.target(&health, ip),
            Some(SocketAddr::from((ip, 30000)))
        );
        let ready = Check::ReadinessPort { path: None };
        assert_eq!(
            engine.target(&ready, ip),
            Some(SocketAddr::from((ip, 30090)))
        );
        assert_eq!(engine.target(&Check::EngineUp, ip), None);
    }
}
