//! `infera demo`: the simulator in-process, a rollout against it over HTTP.
//!
//! The rollout goes through the production path: a kubeconfig, `kube`'s
//! client, real HTTP to the simulated API server. The demo prints the
//! preflight verdict and then proceeds as with `--force`, so a predicted gap
//! or stall is shown happening. Durations are simulated time.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cli::{DemoArgs, OnStall, PauseBetween};
use crate::exit::Exit;
use crate::rollout::target::{Target, TargetKind};
use crate::rollout::{Options, Request, execute, progress};
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
    if let Some((name, ns)) = find("InferaDeployment") {
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

/// `infera demo`.
pub async fn run(args: DemoArgs) -> anyhow::Result<Exit> {
    let scenario = match Scenario::load(&args.scenario) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::Usage);
        }
    };
    let Some((target, ns)) = demo_target(&scenario) else {
        eprintln!(
            "error: scenario {} has no InferaDeployment or Deployment to roll",
            scenario.name
        );
        return Ok(Exit::Usage);
    };
    if !(args.speed.is_finite() && args.speed > 0.0) {
        eprintln!("error: --speed must be a positive number");
        return Ok(Exit::Usage);
    }
    let sim = RunningSim::start(SimOptions::new(scenario, args.speed)).await?;
    println!(
        "infera demo: scenario {} — {}",
        sim.scenario().name,
        sim.scenario().description
    );
    println!(
        "simulated cluster on {} at {}x (all durations below are simulated time)",
        sim.url(),
        sim.clock().speed()
    );
    println!("waiting for {target} in namespace {ns} to be serving…");
    if !wait_steady(sim.store(), &ns, STEADY_TIMEOUT).await {
        eprintln!("error: the scenario's workloads were not serving within {STEADY_TIMEOUT:?}");
        sim.shutdown().await;
        return Ok(Exit::Usage);
    }
    let config = sim.client_config().await?;
    let conn = crate::cluster::connect_with(config, Some(crate::sim::CONTEXT.into())).await?;

    let mut knobs = args.audit.clone();
    if knobs.timeline.is_empty() {
        knobs
            .timeline
            .push(std::env::temp_dir().join(format!("infera-demo-{}.svg", sim.scenario().name)));
    }
    let request = Request::restart(target.clone());
    let options = Options {
        dry_run: false,
        force: true,
        yes: true,
        abort: false,
        pause_between: PauseBetween::Never,
        step_timeout: Duration::from_secs(30 * 60),
        stall_after: args.stall_after,
        on_stall: OnStall::Abort,
        sample_interval: knobs.sample_interval,
        min_ready: knobs.min_ready,
        time_scale: sim.clock().speed(),
        simulated: true,
        bars: progress::interactive(),
        command_line: format!("infera rollout restart {target}"),
    };
    println!("$ infera rollout restart {target} --force   # against the simulator, over HTTP");
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let outcome = execute(&conn, request, options, interrupt).await;
    let exit = match outcome {
        Ok(outcome) => {
            crate::rollout::finish_outputs(&outcome, &knobs);
            outcome.exit
        }
        Err(e) => {
            eprintln!("error: {e}");
            Exit::Usage
        }
    };
    sim.shutdown().await;
    Ok(exit)
}
