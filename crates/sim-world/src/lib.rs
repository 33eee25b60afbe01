//! The simulated world: what only `infera sim` can provide to a cluster —
//! GPU nodes (kept alive as a kubelet keeps them), the kubelet's view of an
//! infera worker (with a real `/ready` listener on the pod IP and the
//! engine's OpenAI API), the router pod (forwarding to the workers it
//! watches), the infera operator, and the scenario's `podFaults` — running over the Kubernetes
//! API through a `kube::Client`, exactly as against a production cluster.
//!
//! One implementation, two users: `infera sim attach` runs it against any
//! API server (a real control plane supplies the Deployment/ReplicaSet
//! controllers, scheduler and GC); the embedded simulator (`sim serve`,
//! `demo`) runs it against its own API server over HTTP beside its in-store
//! controllers.
//!
//! Time: the world runs on the scenario's scaled clock ([`SimClock`]); node
//! heartbeats and Lease renewals run in real time, because a real
//! node-lifecycle controller judges them in real time.
//!
//! Nodes the world creates carry the label [`SIMULATED_NODE_LABEL`]`=true`
//! and (with [`WorldOptions::taint`]) a `NoSchedule` taint with that key, so
//! real workloads stay off them; the Deployments the world applies or
//! renders get the matching toleration ([`toleration`]).

mod engine;
mod faults;
mod kubelet_events;
pub mod listener;
mod manifests;
mod nodes;
mod operator;
mod pods;
mod prober;
mod registry;
mod router;
mod selfheal;
mod serve;

pub mod kubelet;

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use infera_sim_core::clock::SimClock;
use infera_sim_core::requests::RequestLog;
use infera_sim_scenario::Scenario;
pub use listener::{Cidr, LOOPBACK_POD_CIDR};

/// Label (value `true`) and taint key of every node the world creates.
pub const SIMULATED_NODE_LABEL: &str = "infera.amd.com/simulated-node";
/// Field manager of the world's writes.
pub const FIELD_MANAGER: &str = "infera-sim-world";

/// The toleration that lets a pod onto the simulated nodes' taint.
pub fn toleration() -> Value {
    json!({"key": SIMULATED_NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"})
}

/// Errors starting or cleaning up the world.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    #[error("{what}: {source}")]
    Api {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("scenario {scenario}: manifest {index} ({what}): {message}")]
    Manifest {
        scenario: String,
        index: usize,
        what: String,
        message: String,
    },
}

/// How to run the world.
#[derive(Debug, Clone)]
pub struct WorldOptions {
    /// Pod IPs come from here.
    pub pod_cidr: Cidr,
    /// Run the infera operator (off when a real one runs in the cluster).
    pub operator: bool,
    /// Taint the nodes with [`SIMULATED_NODE_LABEL`] (and tolerate it in
    /// what the world applies and renders).
    pub taint: bool,
    /// Where the simulated routers record every request they receive.
    pub requests: RequestLog,
}

impl WorldOptions {
    /// The embedded simulator's: loopback pod IPs, operator on, no taint
    /// (nothing else runs there).
    pub fn embedded() -> WorldOptions {
        WorldOptions {
            pod_cidr: Cidr::parse(LOOPBACK_POD_CIDR).unwrap_or_else(|_| unreachable!()),
            operator: true,
            taint: false,
            requests: RequestLog::default(),
        }
    }
}

/// What the world's tasks share.
pub(crate) struct Shared {
    pub client: kube::Client,
    pub clock: SimClock,
    pub scenario: Scenario,
    pub options: WorldOptions,
    /// Nodes a `nodeNotReady` fault holds down.
    pub not_ready: Mutex<BTreeSet<String>>,
    /// Faults for the kubelet's pods.
    pub faults: mpsc::UnboundedSender<PodFault>,
}

/// A fault the kubelet applies to its pods.
#[derive(Debug, Clone)]
pub(crate) enum PodFault {
    /// Every current pod of `namespace` whose name starts with `prefix`
    /// crashes once.
    Crash { namespace: String, prefix: String },
    /// A node's readiness changed: its pods follow.
    Node,
}

impl Shared {
    pub fn node_names(&self) -> Vec<String> {
        self.scenario
            .node_objects()
            .iter()
            .filter_map(|n| n.pointer("/metadata/name").and_then(Value::as_str))
            .map(str::to_string)
            .collect()
    }

    pub fn node_not_ready(&self, node: &str) -> bool {
        lock(&self.not_ready).contains(node)
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The running world; `shutdown` (or dropping it) stops every task.
pub struct WorldHandle {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for WorldHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorldHandle")
            .field("scenario", &self.shared.scenario.name)
            .field("tasks", &self.tasks.len())
            .finish_non_exhaustive()
    }
}

/// The world for `scenario` on the cluster behind `client`.
pub struct World;

impl World {
    /// Create the scenario's nodes (with their Leases) and apply its
    /// manifests (objects that already exist are left as they are), then
    /// start the node heartbeats, the kubelet, the operator and the faults.
    pub async fn start(
        client: kube::Client,
        scenario: &Scenario,
        clock: SimClock,
        options: WorldOptions,
    ) -> Result<WorldHandle, WorldError> {
        let (faults, fault_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            client,
            clock,
            scenario: scenario.clone(),
            options,
            not_ready: Mutex::default(),
            faults,
        });
        nodes::create(&shared).await?;
        manifests::apply(&shared).await?;
        let mut tasks = vec![
            tokio::spawn(nodes::heartbeat(shared.clone())),
            tokio::spawn(pods::run(shared.clone(), fault_rx)),
            tokio::spawn(faults::run(shared.clone())),
            tokio::spawn(selfheal::run(shared.clone())),
        ];
        if shared.options.operator {
            tasks.push(tokio::spawn(operator::run(shared.clone())));
        }
        Ok(WorldHandle { shared, tasks })
    }

    /// Remove what [`World::start`] creates for `scenario`: the scenario's
    /// manifests (in reverse order; the operator's Deployments go with their
    /// InferaDeployment by garbage collection), pods left on the simulated
    /// nodes (forced), the Leases and the nodes. Absent objects are skipped.
    pub async fn cleanup(client: kube::Client, scenario: &Scenario) -> Result<(), WorldError> {
        manifests::remove(&client, scenario).await?;
        nodes::remove(&client, scenario).await
    }
}

impl WorldHandle {
    /// `node`'s heartbeats (Lease and Ready) end: its kubelet has stopped.
    pub fn stop_heartbeats(&self, node: &str) {
        lock(&self.shared.not_ready).insert(node.to_string());
    }

    /// Stop every task (open listeners close with them).
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
    }
}

impl Drop for WorldHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// HTTP status of an API error, if it is one.
pub(crate) fn status_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// Whether a failed request may succeed when sent again: server errors,
/// throttling, conflicts (the caller re-reads or its patch has no
/// precondition; not AlreadyExists) and transport errors (an API server
/// restarting).
fn retriable(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) if s.code == 409 => s.reason != "AlreadyExists",
        kube::Error::Api(s) => s.code >= 500 || s.code == 429,
        kube::Error::SerdeError(_) | kube::Error::BuildRequest(_) => false,
        _ => true,
    }
}

/// Run `f` until it succeeds or fails for good (4xx other than 409/429),
/// with a capped exponential backoff; gives up after about a minute.
pub(crate) async fn retry<T, F, Fut>(mut f: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut delay = Duration::from_millis(20);
    let mut waited = Duration::ZERO;
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) if retriable(&e) && waited < Duration::from_secs(60) => {
                tokio::time::sleep(delay).await;
                waited += delay;
                delay = (delay * 2).min(Duration::from_secs(1));
            }
            Err(e) => return Err(e),
        }
    }
}

/// `Ok` for success or 404 (already gone), as a cleanup wants.
pub(crate) fn ok_if_gone<T>(r: Result<T, kube::Error>) -> Result<(), kube::Error> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if status_code(&e) == Some(404) => Ok(()),
        Err(e) => Err(e),
    }
}
