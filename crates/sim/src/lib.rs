//! `infera sim`: a simulated cluster speaking the real Kubernetes API.
//!
//! [`RunningSim`] ties the parts together: an [`infera_sim_store::Store`]
//! seeded from an [`infera_sim_scenario::Scenario`] (`seed.rs`, the one place
//! that names both), the [`infera_sim_controllers`] a real cluster has
//! (Deployment, ReplicaSet, scheduler, GC) on an
//! [`infera_sim_core::clock::SimClock`], the HTTP(S)
//! [`infera_sim_api::ApiServer`] on loopback, and the [`infera_sim_world`] —
//! nodes, kubelet, infera operator, podFaults — which reaches the API server
//! over HTTP through a `kube::Client` built from the simulator's own
//! kubeconfig (the same code `infera sim attach` runs against any cluster).
//! Clients — `kubectl`, `infera rollout`, tests — reach it only through a
//! kubeconfig and HTTP.
//!
//! Dependencies point one way, and the crate graph says so (Cargo refuses a
//! back-edge): `infera-sim-core` (kind, clock, faults, json, net, defaults,
//! partition, budget) knows nothing above it; `infera-sim-scenario` and
//! `infera-sim-store` (with its recorder and truth) stand on the core and not
//! on each other; the API server (`infera-sim-api`: core, store), the
//! controllers (`infera-sim-controllers`: core, store, scenario) and the
//! world (`infera-sim-world`: core, scenario; no store, so it reaches the
//! store only over HTTP) never depend on each other; this crate wires them.
//! Inside the API server only the accept loop names the dispatcher (its
//! `layering.rs` test checks that, which no crate boundary can express).

#[cfg(test)]
mod kubelet_probes;
mod seed;

use std::path::Path;

use base64::Engine as _;
use serde_json::json;

use infera_sim_api::{ApiConfig, ApiServer};
use infera_sim_controllers::ControllerHandle;
use infera_sim_core::clock::SimClock;
use infera_sim_core::faults::FaultConfig;
use infera_sim_scenario::Scenario;
use infera_sim_store::Store;

/// The kubeconfig context (and cluster and user) name the simulator writes.
pub const CONTEXT: &str = "infera-sim";

/// How to start a simulation. `Debug` leaves the token out.
#[derive(Clone)]
pub struct SimOptions {
    pub scenario: Scenario,
    /// Simulated seconds per wall second.
    pub speed: f64,
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// 0 picks a free port.
    pub port: u16,
    pub tls: bool,
    /// Bearer token; `None` generates a random one.
    pub token: Option<String>,
    /// Overrides the scenario's `faults:` field by field.
    pub faults: FaultConfig,
    /// Run the [`infera_sim_world`] (nodes, kubelet, operator) and seed the store from
    /// the scenario. Without it the cluster starts empty, for `infera sim
    /// attach` to bring the world.
    pub world: bool,
    /// How long an Event lives after its last write, in scenario time
    /// (kube-apiserver's `--event-ttl`, default 1 h; zero keeps Events).
    pub event_ttl: std::time::Duration,
}

impl std::fmt::Debug for SimOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimOptions")
            .field("scenario", &self.scenario.name)
            .field("speed", &self.speed)
            .field("seed", &self.seed)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("faults", &self.faults)
            .field("world", &self.world)
            .field("event_ttl", &self.event_ttl)
            .finish()
    }
}

impl SimOptions {
    pub fn new(scenario: Scenario, speed: f64) -> SimOptions {
        SimOptions {
            scenario,
            speed,
            seed: None,
            port: 0,
            tls: false,
            token: None,
            faults: FaultConfig::default(),
            world: true,
            event_ttl: infera_sim_store::lease::DEFAULT_EVENT_TTL,
        }
    }

    /// An empty cluster: API server and controllers, no nodes, no
    /// manifests, no kubelet or operator (see [`SimOptions::world`]).
    pub fn without_world(mut self) -> SimOptions {
        self.world = false;
        self
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Scenario(#[from] infera_sim_scenario::ScenarioError),
    #[error(transparent)]
    Api(#[from] infera_sim_api::ApiError),
    #[error(transparent)]
    World(#[from] infera_sim_world::WorldError),
    #[error("cannot build a client for the simulator's own API: {0}")]
    Client(String),
    #[error("cannot write the kubeconfig to {path}: {source}")]
    Kubeconfig {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// A simulated cluster: store, controllers and API server, all running.
pub struct RunningSim {
    api: ApiServer,
    /// Where clients reach the API server (partitions happen here).
    door: infera_sim_core::partition::FrontDoor,
    truth: infera_sim_store::truth::Truth,
    clock: SimClock,
    scenario: Scenario,
    token: String,
    controllers: Option<ControllerHandle>,
    world: Option<infera_sim_world::WorldHandle>,
    /// Kubelets stopped through [`RunningSim::stop_kubelet`].
    kubelets: infera_sim_controllers::StoppedKubelets,
    /// The Events' lease sweeper (none with a zero `event_ttl`).
    expiry: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for RunningSim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningSim")
            .field("url", &self.url())
            .field("scenario", &self.scenario.name)
            .field("speed", &self.clock.speed())
            .finish_non_exhaustive()
    }
}

fn random_token() -> String {
    use rand::Rng;
    let bytes: [u8; 24] = rand::rng().random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl RunningSim {
    /// Seed a store from the scenario, start the controllers and serve the API.
    pub async fn start(options: SimOptions) -> Result<RunningSim, SimError> {
        let mut scenario = options.scenario;
        if let Some(seed) = options.seed {
            scenario.seed = seed;
        }
        let faults = scenario.faults.overridden_by(&options.faults);
        let store = Store::with_options(scenario.seed, infera_sim_store::DEFAULT_HISTORY);
        if options.world {
            // Seeded directly (the world finds everything there already).
            seed::seed(&scenario, &store)?;
        }
        let token = options.token.unwrap_or_else(random_token);
        let mut config = ApiConfig::new(token.clone());
        config.tls = options.tls;
        config.faults = faults.clone();
        config.seed = scenario.seed;
        let api = ApiServer::start(store.clone(), config).await?;
        let door = infera_sim_core::partition::FrontDoor::start(options.port, api.addr()).map_err(
            |source| infera_sim_api::ApiError::Bind {
                port: options.port,
                source,
            },
        )?;
        for p in &faults.partitions {
            let (door, p) = (door.clone(), p.clone());
            tokio::spawn(async move {
                tokio::time::sleep(p.at).await;
                door.partition(p.kind, p.lasting);
            });
        }
        let truth = infera_sim_store::truth::Truth::start(&store);
        let clock = SimClock::new(options.speed);
        let expiry = infera_sim_store::lease::spawn_event_expiry(&store, options.event_ttl, &clock);
        let kubelets = infera_sim_controllers::StoppedKubelets::default();
        let controllers =
            infera_sim_controllers::start(store, clock.clone(), &scenario, kubelets.clone());
        let mut sim = RunningSim {
            api,
            door,
            truth,
            clock,
            scenario,
            token,
            controllers: Some(controllers),
            world: None,
            kubelets,
            expiry,
        };
        if options.world {
            match sim.start_world().await {
                Ok(w) => sim.world = Some(w),
                Err(e) => {
                    sim.shutdown().await;
                    return Err(e);
                }
            }
        }
        Ok(sim)
    }

    async fn start_world(&self) -> Result<infera_sim_world::WorldHandle, SimError> {
        // The world is inside the cluster: it reaches the API server
        // directly, not through the clients' front door.
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&self.kubeconfig_for(&self.api.url()))
            .map_err(|e| SimError::Client(e.to_string()))?;
        let mut config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .map_err(|e| SimError::Client(e.to_string()))?;
        config.headers.push((
            http::HeaderName::from_static(infera_sim_api::WORLD_HEADER),
            http::HeaderValue::from_static("embedded"),
        ));
        let client = kube::Client::try_from(config).map_err(|e| SimError::Client(e.to_string()))?;
        let mut options = infera_sim_world::WorldOptions::embedded();
        options.requests = self.truth.requests().clone();
        let handle =
            infera_sim_world::World::start(client, &self.scenario, self.clock.clone(), options)
                .await?;
        Ok(handle)
    }

    /// Where clients reach the API server (through the front door).
    pub fn url(&self) -> String {
        let scheme = if self.api.ca_pem().is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.door.addr())
    }

    /// Partition the clients from the API server for `duration` (a cut or
    /// a blackhole); the cluster itself goes on.
    pub fn partition(
        &self,
        kind: infera_sim_core::partition::PartitionKind,
        duration: std::time::Duration,
    ) {
        self.door.partition(kind, duration);
    }

    /// The ground truth: every InferaDeployment service's Ready and
    /// routable counts as the store saw them, and every request the
    /// simulated routers received (`truth().requests().records()`).
    pub fn truth(&self) -> &infera_sim_store::truth::Truth {
        &self.truth
    }

    pub fn api(&self) -> &ApiServer {
        &self.api
    }

    pub fn store(&self) -> &Store {
        self.api.store()
    }

    pub fn clock(&self) -> &SimClock {
        &self.clock
    }

    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// The namespace the scenario's workloads live in (the first namespaced
    /// manifest's), for the kubeconfig context.
    pub fn namespace(&self) -> String {
        self.scenario
            .manifests
            .iter()
            .find_map(|m| m.pointer("/metadata/namespace").and_then(|v| v.as_str()))
            .unwrap_or("default")
            .to_string()
    }

    /// A kubeconfig (YAML) with one context, `infera-sim`, whose namespace is
    /// the scenario's. It carries the bearer token: write it with mode 0600.
    pub fn kubeconfig_yaml(&self) -> String {
        self.kubeconfig_for(&self.url())
    }

    fn kubeconfig_for(&self, server: &str) -> String {
        let mut cluster = json!({"server": server});
        if let Some(pem) = self.api.ca_pem() {
            cluster["certificate-authority-data"] =
                base64::engine::general_purpose::STANDARD.encode(pem).into();
        }
        let config = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": CONTEXT, "cluster": cluster}],
            "users": [{"name": CONTEXT, "user": {"token": self.token}}],
            "contexts": [{"name": CONTEXT, "context": {
                "cluster": CONTEXT, "user": CONTEXT, "namespace": self.namespace()}}],
            "current-context": CONTEXT,
        });
        serde_saphyr::to_string(&config).unwrap_or_else(|_| config.to_string())
    }

    /// Write [`Self::kubeconfig_yaml`] to `path`, readable by the owner only.
    pub fn write_kubeconfig(&self, path: &Path) -> Result<(), SimError> {
        let err = |source| SimError::Kubeconfig {
            path: path.display().to_string(),
            source,
        };
        write_private(path, self.kubeconfig_yaml().as_bytes()).map_err(err)
    }

    /// A client `Config` built from the kubeconfig, exactly as `--kubeconfig`
    /// would build it.
    pub async fn client_config(&self) -> Result<kube::Config, kube::config::KubeconfigError> {
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&self.kubeconfig_yaml())?;
        kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await
    }

    /// Stop the controllers (Deployment, ReplicaSet, garbage collector,
    /// scheduler), as killing kube-controller-manager and kube-scheduler
    /// would: the API, the kubelets and the operator go on, nothing rolls.
    /// Idempotent.
    /// Stop `node`'s kubelet ("the node is shut down"): its heartbeats
    /// end now, and the node-lifecycle controller turns it `Ready=Unknown`
    /// after the node-monitor grace period (50 s scenario time; see
    /// `infera_sim_controllers::nodelifecycle`).
    pub fn stop_kubelet(&self, node: &str) {
        if let Some(world) = &self.world {
            world.stop_heartbeats(node);
        }
        self.kubelets.stop(node);
    }

    pub fn stop_controllers(&mut self) {
        if let Some(c) = self.controllers.take() {
            c.shutdown();
        }
    }

    /// Start the controllers again (they list everything afresh, like a
    /// restarted kube-controller-manager). Idempotent.
    pub fn start_controllers(&mut self) {
        if self.controllers.is_none() {
            let store = self.store().clone();
            let started = infera_sim_controllers::start(
                store,
                self.clock.clone(),
                &self.scenario,
                self.kubelets.clone(),
            );
            self.controllers = Some(started);
        }
    }

    /// Stop the controllers and the API server.
    pub async fn shutdown(mut self) {
        if let Some(w) = self.world.take() {
            w.shutdown();
        }
        if let Some(c) = self.controllers.take() {
            c.shutdown();
        }
        if let Some(expiry) = self.expiry.take() {
            expiry.abort();
        }
        self.api.shutdown().await;
    }
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    // `mode` applies only when the file is created: tighten an existing one
    // before the token goes in.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `{:?}` of the options (tracing, panics, error context) never carries
    /// the bearer token.
    #[test]
    fn debug_never_shows_the_token() {
        let scenario = Scenario::load("pd-1p1d").expect("built-in scenario");
        let mut options = SimOptions::new(scenario, 1.0);
        options.token = Some("CANARY-sim-token-42".into());
        let api = ApiConfig::new("CANARY-api-token-42".into());
        for text in [format!("{options:?}"), format!("{api:?}")] {
            assert!(!text.contains("CANARY"), "{text}");
            assert!(text.contains("<redacted>"), "{text}");
        }
    }
}
