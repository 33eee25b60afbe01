//! `infera demo`: the simulator in-process, a rollout against it over HTTP.
//!
//! The rollout goes through the production path: a kubeconfig, `kube`'s
//! client, real HTTP to the simulated API server. The demo prints the
//! preflight verdict and then proceeds as with `--force`, so a predicted gap
//! or stall is shown happening. Durations are simulated time.

use std::future::Future;
use std::time::{Duration, Instant};

use serde_json::Value;

use infera_rollout::target::{Target, TargetKind};
use infera_rollout::{Reporter, Request, RolloutOutcome, execute_with};
use infera_sim::{RunningSim, SimOptions};
use infera_sim_core::kind::Kind;
use infera_sim_scenario::Scenario;
use infera_sim_store::Store;
use infera_sim_world::kubelet::is_infera_worker;

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
    /// Send requests through the router while rolling (`--no-traffic`
    /// turns it off), at [`DEMO_RATE`].
    pub traffic: bool,
}

/// Requests per second the demo sends through the router.
pub const DEMO_RATE: f64 = 5.0;

/// Errors of `infera demo` (all exit 2).
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error(transparent)]
    Scenario(#[from] infera_sim_scenario::ScenarioError),
    #[error("scenario {0} has no InferaDeployment or Deployment to roll")]
    NoTarget(String),
    #[error("--speed must be a positive number")]
    Speed,
    #[error("cannot start the simulator: {0}")]
    Sim(#[from] infera_sim::SimError),
    #[error("cannot read the simulator's kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    #[error(transparent)]
    Cluster(#[from] infera_cluster::ClusterError),
    #[error("the scenario's workloads were not serving within {0:?}")]
    NotSteady(Duration),
    #[error(transparent)]
    Rollout(#[from] infera_rollout::RolloutError),
    #[error(transparent)]
    Drain(#[from] infera_rollout::drain::DrainError),
    #[error(transparent)]
    Audit(#[from] infera_audit::AuditCommandError),
    #[error("{0}")]
    Traffic(String),
}

/// How the demo went: the scenario's name and the rollout's outcome.
#[derive(Debug)]
pub struct DemoOutcome {
    pub scenario: String,
    pub rollout: RolloutOutcome,
}

/// `infera demo`: start the simulator, wait until the scenario serves, roll
/// its target with [`Options::unattended`](infera_rollout::Options::unattended)
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
    let result = if name == "drain" {
        drain_demo(&sim, &target, &ns, opts, out, interrupt).await
    } else {
        roll(&sim, target, &ns, opts, out, interrupt).await
    };
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
    let conn = infera_cluster::connect_with(config, Some(infera_sim::CONTEXT.into())).await?;
    let options = infera_rollout::Options {
        stall_after: opts.stall_after,
        sample_interval: opts.sample_interval,
        min_ready: opts.min_ready,
        command_line: format!("infera rollout restart {target}"),
        ..infera_rollout::Options::unattended(sim.clock().speed())
    };
    out.note(&format!(
        "$ infera rollout restart {target} --force   # against the simulator, over HTTP"
    ));
    let traffic = start_traffic(&conn, &target, opts, out).await?;
    let request = Request::restart(target);
    let mut outcome = execute_with(&conn, request, options, out, interrupt).await?;
    if let Some(traffic) = traffic {
        let run = traffic.stop().await;
        if let Some(report) = outcome.report.as_mut() {
            outcome.exit = infera_traffic::attach(&run, report, outcome.exit);
        }
    }
    Ok(outcome)
}

/// Requests through the InferaDeployment's router while it rolls (none for
/// a plain Deployment: it has no router to send through, said so).
async fn start_traffic(
    conn: &infera_cluster::Connection,
    target: &Target,
    opts: &Options,
    out: &mut dyn Reporter,
) -> Result<Option<infera_traffic::Traffic>, DemoError> {
    if !opts.traffic {
        return Ok(None);
    }
    if target.kind != TargetKind::InferaDeployment {
        out.note("traffic: not sent (a plain Deployment has no router Service to send through)");
        return Ok(None);
    }
    let route = infera_traffic::route::of_inferadeployment(conn, &target.name)
        .await
        .map_err(DemoError::Traffic)?;
    out.note(&format!(
        "traffic: {DEMO_RATE} requests/s through {} (streaming chat and completions; --no-traffic sends none)",
        route.describe()
    ));
    infera_traffic::start_on(conn, demo_traffic().on(route))
        .await
        .map(Some)
        .map_err(|e| DemoError::Traffic(e.to_string()))
}

/// How the demo sends: [`DEMO_RATE`], 32 in flight, 30 s each.
fn demo_traffic() -> infera_traffic::Settings {
    infera_traffic::Settings {
        rate: DEMO_RATE,
        concurrency: 32,
        deadline: Duration::from_secs(30),
        model: None,
        log: None,
    }
}

/// The node of the scenario's (only) decode pod that is not terminating.
fn decode_node(store: &Store, ns: &str) -> Option<String> {
    let (pods, _) = store.list(Kind::Pod, Some(ns));
    pods.iter()
        .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
        .find(|p| {
            p.pointer("/metadata/labels/infera.amd.com~1service") == Some(&Value::from("decode"))
        })
        .and_then(|p| p.pointer("/spec/nodeName").and_then(Value::as_str))
        .map(str::to_string)
}

/// The `drain` scenario, on one cluster: `kubectl drain` of the decode
/// pod's node (cordon, every pod evicted at once), audited, so the gap is
/// measured; the node uncordoned; then `infera drain` of the node decode
/// was rescheduled to, whose report is the demo's.
async fn drain_demo(
    sim: &RunningSim,
    target: &Target,
    ns: &str,
    opts: &Options,
    out: &mut dyn Reporter,
    interrupt: impl Future<Output = ()>,
) -> Result<RolloutOutcome, DemoError> {
    if !wait_steady(sim.store(), ns, STEADY_TIMEOUT).await {
        return Err(DemoError::NotSteady(STEADY_TIMEOUT));
    }
    let config = sim.client_config().await?;
    let mut conn = infera_cluster::connect_with(config, Some(infera_sim::CONTEXT.into())).await?;
    conn.namespace = ns.to_string();
    let speed = sim.clock().speed();
    let first = decode_node(sim.store(), ns).ok_or(DemoError::NotSteady(STEADY_TIMEOUT))?;
    out.note(&format!(
        "$ kubectl drain {first} --ignore-daemonsets   # what kubectl does: cordon, then evict every pod at once"
    ));
    let kubectl = kubectl_drain(sim, &conn, target, &first, opts).await?;
    out.note(&kubectl.table());
    out.note(&format!("kubectl drain: {}", kubectl.sentence()));
    set_unschedulable(&conn, &first, false).await?;
    let second = decode_node(sim.store(), ns).ok_or(DemoError::NotSteady(STEADY_TIMEOUT))?;
    out.note(&format!(
        "$ kubectl uncordon {first}; infera drain {second} --ignore-daemonsets   # the node decode moved to"
    ));
    let options = infera_rollout::drain::DrainOptions {
        selection: infera_rollout::drain::Selection {
            nodes: vec![second.clone()],
            ignore_daemonsets: true,
            ..Default::default()
        },
        grace_period: None,
        timeout: None,
        dry_run: infera_rollout::drain::DryRun::None,
        force: false,
        rollout: infera_rollout::Options {
            stall_after: opts.stall_after,
            sample_interval: opts.sample_interval,
            min_ready: opts.min_ready,
            command_line: format!("infera drain {second}"),
            ..infera_rollout::Options::unattended(speed)
        },
        traffic: opts.traffic.then(|| infera_rollout::drain::DrainTraffic {
            named: None,
            settings: demo_traffic(),
        }),
    };
    let drained = infera_rollout::drain::drain(&conn, &options, out, interrupt).await?;
    Ok(RolloutOutcome {
        exit: drained.exit,
        plan: None,
        report: drained.report.and_then(|m| m.reports.into_iter().next()),
        steps: Vec::new(),
    })
}

async fn set_unschedulable(
    conn: &infera_cluster::Connection,
    node: &str,
    on: bool,
) -> Result<(), DemoError> {
    let api: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(conn.client.clone());
    let patch = serde_json::json!({"spec": {"unschedulable": on}});
    api.patch(
        node,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await
    .map_err(|e| conn.error(&e, "patch", "nodes"))?;
    Ok(())
}

/// What `kubectl drain` does (cordon, evict every pod on the node at once
/// through the Eviction API), audited until the role serves again.
async fn kubectl_drain(
    sim: &RunningSim,
    conn: &infera_cluster::Connection,
    target: &Target,
    node: &str,
    opts: &Options,
) -> Result<infera_audit::ManyReport, DemoError> {
    let ns = conn.namespace.clone();
    let selected = [infera_audit::Selected {
        namespace: ns.clone(),
        target: infera_audit::Target::InferaDeployment(target.name.clone()),
    }];
    let audit = infera_audit::Options {
        target: String::new(),
        duration: None,
        until_complete: false,
        roles: Vec::new(),
        samples: None,
        sample_interval: opts.sample_interval,
        min_ready: opts.min_ready,
    };
    let during = async {
        let evicted = evict_node(sim.store(), conn, node).await;
        if evicted.is_ok() {
            // The evicted pods leave, then the replacements load and serve.
            while decode_node(sim.store(), &ns).as_deref() == Some(node) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            wait_steady(sim.store(), &ns, STEADY_TIMEOUT).await;
        }
        (infera_audit::Outcome::Complete, evicted)
    };
    let speed = sim.clock().speed();
    let (many, evicted) =
        infera_audit::audit_many_during(conn, &audit, &selected, false, speed, &|_| {}, during)
            .await?;
    evicted?;
    Ok(many)
}

/// Cordon `node` and evict every pod on it at once, as kubectl drain does.
async fn evict_node(
    store: &Store,
    conn: &infera_cluster::Connection,
    node: &str,
) -> Result<(), DemoError> {
    set_unschedulable(conn, node, true).await?;
    let (pods, _) = store.list(Kind::Pod, None);
    for p in pods
        .iter()
        .filter(|p| p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node))
    {
        let (Some(ns), Some(name)) = (
            p.pointer("/metadata/namespace").and_then(Value::as_str),
            p.pointer("/metadata/name").and_then(Value::as_str),
        ) else {
            continue;
        };
        let api: kube::Api<k8s_openapi::api::core::v1::Pod> =
            kube::Api::namespaced(conn.client.clone(), ns);
        api.evict(name, &kube::api::EvictParams::default())
            .await
            .map_err(|e| conn.error(&e, "create", "pods/eviction"))?;
    }
    Ok(())
}
