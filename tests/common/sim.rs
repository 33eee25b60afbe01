//! The embedded simulator, started the way every sim test needs it: a
//! scenario at a speed, steady (every worker Ready), with a kubeconfig file
//! for the `infera` binary and a `kube` connection for the library.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::time::Duration;

use infera_cluster::{Connection, connect_with};
use infera_sim::{RunningSim, SimOptions};
use infera_sim_core::kind::Kind;
use infera_sim_scenario::Scenario;
use infera_sim_store::Store;
use serde_json::Value;

/// How long a scenario may take to reach its steady state (real time).
pub const STEADY_LIMIT: Duration = Duration::from_secs(60);

/// A running simulator with its kubeconfig in a temporary directory.
pub struct Sim {
    pub sim: RunningSim,
    pub kubeconfig: PathBuf,
    pub dir: tempfile::TempDir,
}

/// The options of `scenario` at `speed` (change fields, then `Sim::with`).
pub fn options(scenario: &str, speed: f64) -> SimOptions {
    let scenario = Scenario::load(scenario).unwrap_or_else(|e| panic!("{e}"));
    SimOptions::new(scenario, speed)
}

impl Sim {
    /// `scenario` at `speed`, steady.
    pub async fn start(scenario: &str, speed: f64) -> Sim {
        Sim::with(options(scenario, speed)).await
    }

    /// A simulator from `options`, steady, with its kubeconfig written.
    pub async fn with(options: SimOptions) -> Sim {
        let sim = Sim::unsteady(options).await;
        let ns = sim.namespace();
        assert!(
            infera::demo::wait_steady(sim.store(), &ns, STEADY_LIMIT).await,
            "scenario {} never reached its steady state",
            sim.scenario().name
        );
        sim
    }

    /// A simulator from `options` without waiting for anything.
    pub async fn unsteady(options: SimOptions) -> Sim {
        let sim = RunningSim::start(options)
            .await
            .unwrap_or_else(|e| panic!("starting the simulator: {e}"));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
        let kubeconfig = dir.path().join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig)
            .unwrap_or_else(|e| panic!("{e}"));
        Sim {
            sim,
            kubeconfig,
            dir,
        }
    }

    /// Stop the controllers and the API server.
    pub async fn shutdown(self) {
        self.sim.shutdown().await;
    }

    /// A file path inside the simulator's temporary directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// Connect through the simulator's kubeconfig. `connect_with` probes
    /// `/version` once; with `restart_api_every` that probe can land while
    /// the API server restarts (connection refused), so try a few times.
    pub async fn connect(&self) -> Connection {
        let mut attempt = 0;
        loop {
            let config = self
                .sim
                .client_config()
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            match connect_with(config, Some("infera-sim".into())).await {
                Ok(conn) => return conn,
                Err(e) if attempt < 5 => {
                    attempt += 1;
                    eprintln!("connect attempt {attempt}: {e}");
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// A `kube` client on the simulator.
    pub async fn client(&self) -> kube::Client {
        let config = self
            .sim
            .client_config()
            .await
            .unwrap_or_else(|e| panic!("client config: {e}"));
        kube::Client::try_from(config).unwrap_or_else(|e| panic!("client: {e}"))
    }

    /// Ready, non-terminating pods of `service` in the scenario's namespace.
    pub fn ready_pods(&self, service: &str) -> Vec<Value> {
        ready_pods(self.store(), &self.namespace(), service)
    }

    /// Names of every pod of `service` (terminating ones too).
    pub fn pod_names(&self, service: &str) -> Vec<String> {
        pods_of(self.store(), &self.namespace(), service)
            .iter()
            .filter_map(|p| p.pointer("/metadata/name").and_then(Value::as_str))
            .map(str::to_string)
            .collect()
    }
}

impl Deref for Sim {
    type Target = RunningSim;
    fn deref(&self) -> &RunningSim {
        &self.sim
    }
}

/// Ready and not terminating, as Endpoints and the audit count it.
pub fn is_ready(p: &Value) -> bool {
    p.pointer("/metadata/deletionTimestamp").is_none()
        && p.pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
}

/// Every pod of `service` (label `infera.amd.com/service`) in `ns`.
pub fn pods_of(store: &Store, ns: &str, service: &str) -> Vec<Value> {
    let label = format!(
        "/metadata/labels/{}",
        infera_model::worker::LABEL_SERVICE.replace('/', "~1")
    );
    store
        .list(Kind::Pod, Some(ns))
        .0
        .into_iter()
        .filter(|p| p.pointer(&label).and_then(Value::as_str) == Some(service))
        .collect()
}

/// Ready, non-terminating pods of `service` in the simulator right now.
pub fn ready_pods(store: &Store, ns: &str, service: &str) -> Vec<Value> {
    pods_of(store, ns, service)
        .into_iter()
        .filter(is_ready)
        .collect()
}

/// Milliseconds since the Unix epoch, the unit of the simulator's ground
/// truth (`RunningSim::truth`).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
