//! `infera demo`: the simulator in-process, a rollout against it over HTTP.
//!
//! The rollout goes through the production path: a kubeconfig, `kube`'s
//! client, real HTTP to the simulated API server. The demo prints the
//! preflight verdict and then proceeds as with `--force`, so a predicted gap
//! or stall is shown happening. Durations are simulated time.

use std::future::Future;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::rollout::target::{Target, TargetKind};
use crate::rollout::{Reporter, Request, RolloutOutcome, execute_with};
use crate::sim::scenario::Scenario;
use crate::sim::store::{Kind, Store};
use crate::sim::world::kubelet::is_infera_worker;
use crate::sim::{RunningSim, SimOptions};

/// How long (wall) the demo waits for the scenario's workloads to be serving
/// before it starts the rollout.
const STEADY_TIMEOUT: Duration = Duration::from_secs(120);

/// What the demo rolls: the scenario's first InferaDeployment, else its
/// first Deployment.
pub fn demo_target(scenario: &Scenario) -> Option<(Target, String)> {
    let find = |kind: &str| {
        scenario.manifests.iter().find_map(|m| {
            (m.get("kind").and_then(Value::as_str) == Some(kind)).then(|| {
                let name = m.pointer("/metadata/name").and_then(Value::as_str)?;
                let ns = m
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or("default");
                Some((name.to_string(), ns.to_string()))
            })?
        })
    };
    if let Some((name, ns)) = find(infera_model::api::INFERA_DEPLOYMENT.kind) {
        return Some((
            Target {
                kind: TargetKind::InferaDeployment,
                name,
            },
            ns,
        ));
    }
    find("Deployment").map(|(name, ns)| {
        (
            Target {
                kind: TargetKind::Deployment,
                name,
            },
            ns,
        )
    })
}

/// Every Deployment in `ns` has all its replicas available and every infera
/// worker pod has registered (the scenario has reached its steady state: the
/// operator has rendered its workers and they serve). Without a probe a
/// worker is Ready minutes before it registers, so availability alone is not
/// enough.
pub fn steady(store: &Store, ns: &str) -> bool {
    let (pods, _) = store.list(Kind::Pod, Some(ns));
    let loading = pods.iter().any(|p| {
        p.pointer("/metadata/deletionTimestamp").is_none()
            && is_infera_worker(p)
            && p.pointer("/metadata/annotations/infera.amd.com~1worker-info")
                .is_none()
    });
    if loading {
        return false;
    }
    let (deployments, _) = store.list(Kind::Deployment, Some(ns));
    let idep_count = store.list(Kind::InferaDeployment, Some(ns)).0.len();
    if deployments.is_empty() || (idep_count > 0 && deployments.len() < 2) {
        return false;
    }
    deployments.iter().all(|d| {
        let want = d
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let available = d
            .pointer("/status/availableReplicas")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        available >= want
    })
}

/// Wait (wall clock) until [`steady`], or give up.
pub async fn wait_steady(store: &Store, ns: &str, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if steady(store, ns) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// What `infera demo` runs (library options; the command line converts
/// its flags in `crate::console`).
#[derive(Debug, Clone)]
pub struct Options {
    /// A built-in scenario name or a scenario file.
    pub scenario: String,
    /// Simulated seconds per wall second.
    pub speed: f64,
    /// `--stall-after` (simulated time).
    pub stall_after: Duration,
    pub sample_interval: Duration,
    pub min_ready: u32,
}

/// Errors of `infera demo` (all exit 2).
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error(transparent)]
    Scenario(#[from] crate::sim::scenario::ScenarioError),
    #[error("scenario {0} has no InferaDeployment or Deployment to roll")]
    NoTarget(String),
    #[error("--speed must be a positive number")]
    Speed,
    #[error("cannot start the simulator: {0}")]
    Sim(#[from] crate::sim::SimError),
    #[error("cannot read the simulator's kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterError),
    #[error("the scenario's workloads were not serving within {0:?}")]
    NotSteady(Duration),
    #[error(transparent)]
    Rollout(#[from] crate::rollout::RolloutError),
}

/// How the demo went: the scenario's name and the rollout's outcome.
#[derive(Debug)]
pub struct DemoOutcome {
    pub scenario: String,
    pub rollout: RolloutOutcome,
}

/// `infera demo`: start the simulator, wait until the scenario serves, roll
/// its target with [`Options::unattended`](crate::rollout::Options::unattended)
/// over HTTP. The narrative and the rollout go to `out`.
pub async fn run(
    opts: &Options,
    out: &mut dyn Reporter,
    interrupt: impl Future<Output = ()>,
) -> Result<DemoOutcome, DemoError> {
    let scenario = Scenario::load(&opts.scenario)?;
    let Some((target, ns)) = demo_target(&scenario) else {
        return Err(DemoError::NoTarget(scenario.name));
    };
    if !(opts.speed.is_finite() && opts.speed > 0.0) {
        return Err(DemoError::Speed);
    }
    let sim = RunningSim::start(SimOptions::new(scenario, opts.speed)).await?;
    let name = sim.scenario().name.clone();
    out.note(&format!(
        "infera demo: scenario {name} — {}",
        sim.scenario().description
    ));
    out.note(&format!(
        "simulated cluster on {} at {}x (all durations below are simulated time)",
        sim.url(),
        sim.clock().speed()
    ));
    out.note(&format!(
        "waiting for {target} in namespace {ns} to be serving…"
    ));
    let result = roll(&sim, target, &ns, opts, out, interrupt).await;
    sim.shutdown().await;
    Ok(DemoOutcome {
        scenario: name,
        rollout: result?,
    })
}

async fn roll(
    sim: &RunningSim,
    target: Target,
    ns: &str,
    opts: &Options,
    out: &mut dyn Reporter,
    interrupt: impl Future<Output = ()>,
) -> Result<RolloutOutcome, DemoError> {
    if !wait_steady(sim.store(), ns, STEADY_TIMEOUT).await {
        return Err(DemoError::NotSteady(STEADY_TIMEOUT));
    }
    let config = sim.client_config().await?;
    let conn = crate::cluster::connect_with(config, Some(crate::sim::CONTEXT.into())).await?;
    let options = crate::rollout::Options {
        stall_after: opts.stall_after,
        sample_interval: opts.sample_interval,
        min_ready: opts.min_ready,
        command_line: format!("infera rollout restart {target}"),
        ..crate::rollout::Options::unattended(sim.clock().speed())
    };
    out.note(&format!(
        "$ infera rollout restart {target} --force   # against the simulator, over HTTP"
    ));
    let request = Request::restart(target);
    Ok(execute_with(&conn, request, options, out, interrupt).await?)
}
