//! `infera monitor` at scale, the simulator and the monitor each a process
//! of its own (not a test):
//!
//! ```text
//! cargo build --release --bin infera --example monitor_scale
//! target/release/examples/monitor_scale --infera target/release/infera \
//!     --nodes 1000 --ideps 500 --replicas 5 --filler 5000 --speed 1000 --changes 400 --hours 24
//! ```
//!
//! It writes a scenario and starts `infera sim serve` on it: N GPU nodes
//! (8 GPUs each), I InferaDeployments of two roles (prefill, decode) with R
//! replicas each across 10 namespaces, and F plain pods (50 Deployments of
//! a web server, in namespace `filler`: pods the monitor's pod watch
//! carries but no workload has). Each simulated infera worker opens two
//! real sockets (engine and `/ready` listeners), so the open-file limit
//! bounds the workers (20,000 here: 500 × 2 × 5 workers and 5,000 plain
//! pods make the 10,000 pods). Then it starts the real `infera monitor -A`
//! on the simulator's kubeconfig, scrapes it over HTTP on loopback as
//! Prometheus does (OpenMetrics), and measures:
//!
//! - **RSS**: the monitor's `VmRSS` (`/proc/PID/status`) once every role is
//!   exported (steady), and every simulated hour of the long run;
//! - **scrape**: one `GET /metrics`, p50/p99 of 50;
//! - **lag**: from a pod's Ready condition written through the simulator's
//!   API (`PATCH pods/status`, timed from before the request) to the end of
//!   the first scrape that shows the role's new count (scrapes back to
//!   back), p50/p99 over C changes (a pod of a namespace no fault touches,
//!   set NotReady, then Ready again);
//! - **long run**: H simulated hours with a crash of one role's pods every
//!   30 simulated minutes (the scenario's `podFaults`) and a surge-first
//!   restart of one role every 20 simulated minutes (the `restarted-at` pod
//!   label, as `infera rollout restart` writes it), scraped every 100 ms.
//!
//! This process is only the client (it may be a debug build); the numbers
//! are the monitor's own. They go in docs/benchmarks.md, never in a test.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use infera_sim_scenario::{CrashTarget, NodeSpec, PodFault, Scenario, Timings};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Client, Config};
use serde_json::{Value, json};

const NAMESPACES: usize = 10;
/// Simulated seconds between crashes, and between restarts.
const CRASH_EVERY: f64 = 1800.0;
const ROLL_EVERY: f64 = 1200.0;

struct Args {
    infera: PathBuf,
    nodes: u32,
    ideps: usize,
    replicas: usize,
    filler: usize,
    speed: f64,
    changes: usize,
    hours: u64,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args {
        infera: PathBuf::from("target/release/infera"),
        nodes: 1000,
        ideps: 500,
        replicas: 5,
        filler: 5000,
        speed: 1000.0,
        changes: 400,
        hours: 24,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--infera" => args.infera = PathBuf::from(value),
            "--nodes" => args.nodes = value.parse()?,
            "--ideps" => args.ideps = value.parse()?,
            "--replicas" => args.replicas = value.parse()?,
            "--filler" => args.filler = value.parse()?,
            "--speed" => args.speed = value.parse()?,
            "--changes" => args.changes = value.parse()?,
            "--hours" => args.hours = value.parse()?,
            _ => bail!(
                "usage: monitor_scale [--infera PATH] [--nodes N] [--ideps N] [--replicas N] [--filler N] [--speed X] [--changes N] [--hours H]"
            ),
        }
    }
    Ok(args)
}

fn namespace(i: usize) -> String {
    format!("bench-{}", i % NAMESPACES)
}

const FILLER_DEPLOYMENTS: usize = 50;

/// Deployment `d` of the plain pods (`filler` of them in all).
fn filler(d: usize, filler: usize) -> Value {
    let replicas = filler / FILLER_DEPLOYMENTS + usize::from(d < filler % FILLER_DEPLOYMENTS);
    let app = format!("web-{d}");
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": app, "namespace": "filler"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}},
            "template": {"metadata": {"labels": {"app": app}},
                "spec": {"containers": [{"name": "main", "image": "registry.example/web:1",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}}
    })
}

fn idep(i: usize, replicas: usize) -> Value {
    let worker = |role: &str| {
        json!({"componentType": "worker", "role": role, "replicas": replicas,
            "args": ["--model-path", "meta-llama/Llama-3.1-8B-Instruct"]})
    };
    json!({
        "apiVersion": "infera.amd.com/v1alpha1", "kind": "InferaDeployment",
        "metadata": {"name": format!("m{i}"), "namespace": namespace(i)},
        "spec": {"backendFramework": "sglang", "image": "rocm/infera:0.9.1",
            "services": {"prefill": worker("prefill"), "decode": worker("decode")}}
    })
}

/// The InferaDeployments a fault or restart may touch: every one outside
/// namespace `bench-0`, where the lag is measured.
fn churned(ideps: usize) -> Vec<usize> {
    (0..ideps).filter(|i| i % NAMESPACES != 0).collect()
}

fn scenario(args: &Args) -> Scenario {
    let allocatable = [
        ("cpu", "128"),
        ("memory", "2Ti"),
        ("amd.com/gpu", "8"),
        ("pods", "110"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut manifests: Vec<Value> = (0..NAMESPACES.min(args.ideps))
        .map(|n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace(n)}}))
        .collect();
    manifests.extend((0..args.ideps).map(|i| idep(i, args.replicas)));
    if args.filler > 0 {
        manifests
            .push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "filler"}}));
        manifests.extend((0..FILLER_DEPLOYMENTS).map(|d| filler(d, args.filler)));
    }
    // Crashes every 30 simulated minutes from the start (the setup and the
    // lag phase take a few simulated hours at 1000×: 48 h of spare), none
    // in bench-0.
    let targets = churned(args.ideps);
    let crashes = (args.hours + 48) * 2;
    let pod_faults = (0..crashes)
        .filter_map(|k| {
            let i = *targets.get((k as usize * 7) % targets.len().max(1))?;
            Some(PodFault {
                at: CRASH_EVERY * (k + 1) as f64,
                crash: Some(CrashTarget {
                    namespace: namespace(i),
                    pod_prefix: format!("m{i}-decode"),
                }),
                node_not_ready: None,
            })
        })
        .collect();
    Scenario {
        name: "monitor-scale".into(),
        description: "benchmark: infera monitor over many InferaDeployments".into(),
        seed: 7,
        operator: Default::default(),
        nodes: vec![NodeSpec {
            name: "gpu-node".into(),
            count: Some(args.nodes),
            labels: Default::default(),
            allocatable,
            taints: Vec::new(),
        }],
        timings: Timings::default(),
        manifests,
        faults: Default::default(),
        pod_faults,
        self_heal: None,
    }
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// `infera sim serve` on the scenario, with its kubeconfig written in `dir`.
fn spawn_sim(args: &Args, dir: &std::path::Path) -> anyhow::Result<(Child, PathBuf)> {
    let file = dir.join("scenario.json");
    std::fs::write(&file, serde_json::to_string(&scenario(args))?)?;
    let kubeconfig = dir.join("kubeconfig");
    let child = Command::new(&args.infera)
        .args([
            "sim",
            "serve",
            "--speed",
            &args.speed.to_string(),
            "--scenario",
        ])
        .arg(&file)
        .arg("--kubeconfig-out")
        .arg(&kubeconfig)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {}", args.infera.display()))?;
    Ok((child, kubeconfig))
}

async fn client(kubeconfig: &std::path::Path) -> anyhow::Result<Client> {
    let started = Instant::now();
    while !kubeconfig.exists() {
        if started.elapsed() > Duration::from_secs(300) {
            bail!("infera sim serve wrote no kubeconfig");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let config = Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(kubeconfig)?,
        &Default::default(),
    )
    .await?;
    Ok(Client::try_from(config)?)
}

/// `VmRSS` of a process, in MiB.
fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// `GET /metrics` as Prometheus asks for it: the body.
fn scrape(addr: SocketAddr) -> anyhow::Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        s,
        "GET /metrics HTTP/1.0\r\nHost: {addr}\r\nAccept: application/openmetrics-text;version=1.0.0\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    if !head.starts_with("HTTP/1.0 200") && !head.starts_with("HTTP/1.1 200") {
        bail!("scrape answered {}", head.lines().next().unwrap_or(""));
    }
    Ok(body.to_string())
}

/// The value of one series in a scrape.
fn value_of(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn role_series(i: usize, role: &str) -> String {
    format!(
        "infera_role_ready_pods{{namespace=\"{}\",workload=\"idep/m{i}\",role=\"{role}\"}}",
        namespace(i)
    )
}

/// The monitor, started on the simulator's kubeconfig: the child and the
/// address it serves.
fn spawn_monitor(args: &Args, kubeconfig: &std::path::Path) -> anyhow::Result<(Child, SocketAddr)> {
    let mut child = Command::new(&args.infera)
        .args(["monitor", "-A", "--listen", "127.0.0.1:0", "--kubeconfig"])
        .arg(kubeconfig)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", args.infera.display()))?;
    let stderr = child.stderr.take().context("no stderr")?;
    let mut lines = BufReader::new(stderr).lines();
    let addr = loop {
        let Some(line) = lines.next().transpose()? else {
            bail!("infera monitor exited before it served");
        };
        if let Some(addr) = line
            .strip_prefix("infera monitor: serving http://")
            .and_then(|rest| rest.strip_suffix("/metrics"))
        {
            break addr.parse()?;
        }
    };
    // Keep reading its log so the pipe never fills.
    std::thread::spawn(move || lines.for_each(drop));
    Ok((child, addr))
}

fn percentile(samples: &mut [Duration], q: f64) -> f64 {
    samples.sort();
    let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len().max(1));
    samples
        .get(rank - 1)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// Set the Ready condition of `pod` through the API (`pods/status`); the
/// instant just before the request.
async fn set_ready(pods: &Api<Pod>, name: &str, ready: bool) -> anyhow::Result<Instant> {
    let mut pod = pods.get_status(name).await?;
    let conditions = pod
        .status
        .as_mut()
        .and_then(|s| s.conditions.as_mut())
        .context("a pod without conditions")?;
    for c in conditions.iter_mut().filter(|c| c.type_ == "Ready") {
        c.status = if ready { "True" } else { "False" }.to_string();
    }
    let patch = json!({"status": {"conditions": conditions}});
    let from = Instant::now();
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(from)
}

/// Scrape back to back until `series` reads `want`: the time from `from`
/// to the end of that scrape, or `None` after 5 s.
fn seen_after(addr: SocketAddr, series: &str, want: f64, from: Instant) -> Option<Duration> {
    while from.elapsed() < Duration::from_secs(5) {
        let body = scrape(addr).ok()?;
        if value_of(&body, series) == Some(want) {
            return Some(from.elapsed());
        }
    }
    None
}

/// The lag phase: Ready changes of pods in `bench-0`, each measured.
async fn measure_lag(args: &Args, client: &Client, addr: SocketAddr) -> anyhow::Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace(0));
    let mut targets: Vec<(usize, String, String)> = Vec::new();
    for p in pods.list(&ListParams::default()).await? {
        let label = |k: &str| p.metadata.labels.as_ref().and_then(|l| l.get(k)).cloned();
        let (Some(dep), Some(svc), Some(name)) = (
            label("infera.amd.com/deployment"),
            label("infera.amd.com/service"),
            p.metadata.name.clone(),
        ) else {
            continue;
        };
        if let Ok(i) = dep.trim_start_matches('m').parse::<usize>() {
            targets.push((i, svc, name));
        }
    }
    if targets.is_empty() {
        bail!("no worker in {} to change", namespace(0));
    }
    let mut lags = Vec::new();
    let mut missed = 0;
    for k in 0..args.changes.div_ceil(2) {
        let (i, role, name) = &targets[(k * 7919) % targets.len()];
        let series = role_series(*i, role);
        let full = args.replicas as f64;
        for (ready, want) in [(false, full - 1.0), (true, full)] {
            let from = set_ready(&pods, name, ready).await?;
            let seen = tokio::task::block_in_place(|| seen_after(addr, &series, want, from));
            match seen {
                Some(lag) => lags.push(lag),
                None => missed += 1,
            }
        }
    }
    println!(
        "lag, store write -> scrape shows it: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} changes, {} not seen within 5 s)",
        percentile(&mut lags, 0.5),
        percentile(&mut lags, 0.99),
        percentile(&mut lags, 1.0),
        lags.len(),
        missed
    );
    Ok(())
}

/// One role's surge-first restart, as `infera rollout restart` triggers it.
async fn restart(client: &Client, i: usize, at: u64) -> anyhow::Result<()> {
    let resource = infera_cluster::inferadeployment_resource();
    let ideps: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace(i), &resource);
    let patch = json!({"spec": {"services": {"prefill": {"podLabels":
        {"infera.amd.com/restarted-at": format!("bench-{at}")}}}}});
    ideps
        .patch(
            &format!("m{i}"),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    Ok(())
}

/// The long run: crashes (scenario faults) and restarts for `hours`
/// simulated hours, a scrape every 100 ms, the monitor's RSS every
/// simulated hour. `sim_now` is the simulator's clock.
async fn long_run(
    args: &Args,
    client: &Client,
    pid: u32,
    addr: SocketAddr,
    sim_now: impl Fn() -> f64,
) -> anyhow::Result<()> {
    let start = sim_now();
    let end = start + args.hours as f64 * 3600.0;
    let targets = churned(args.ideps);
    let (mut next_roll, mut next_hour) = (start + ROLL_EVERY, start);
    let (mut rolls, mut scrapes, mut slowest) = (0u64, 0u64, Duration::ZERO);
    let mut rss = Vec::new();
    loop {
        let now = sim_now();
        if now >= next_hour {
            rss.push(rss_mib(pid));
            next_hour += 3600.0;
        }
        if now >= end {
            break;
        }
        if now >= next_roll && !targets.is_empty() {
            restart(
                client,
                targets[(rolls as usize * 13) % targets.len()],
                rolls,
            )
            .await?;
            rolls += 1;
            next_roll += ROLL_EVERY;
        }
        let t = Instant::now();
        tokio::task::block_in_place(|| scrape(addr))?;
        slowest = slowest.max(t.elapsed());
        scrapes += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let shown: Vec<String> = rss.iter().map(|r| format!("{r:.0}")).collect();
    println!(
        "long run: {} simulated hours, {} restarts, {} crashes, {} scrapes (slowest {:.1} ms); monitor RSS per simulated hour (MiB): {}",
        args.hours,
        rolls,
        ((end / CRASH_EVERY).floor() - (start / CRASH_EVERY).floor()) as u64,
        scrapes,
        slowest.as_secs_f64() * 1000.0,
        shown.join(" ")
    );
    Ok(())
}

/// Until every role is exported, then the steady RSS and 50 scrapes.
fn steady(args: &Args, pid: u32, addr: SocketAddr, t: Instant) -> anyhow::Result<()> {
    let roles = args.ideps * 2;
    let mut body = String::new();
    while body.matches("infera_role_ready_pods{").count() < roles {
        if t.elapsed() > Duration::from_secs(600) {
            bail!("the monitor never exported {roles} roles");
        }
        std::thread::sleep(Duration::from_millis(200));
        body = scrape(addr).unwrap_or_default();
    }
    println!(
        "monitor: every role exported {:.1} s after start; RSS {:.1} MiB",
        t.elapsed().as_secs_f64(),
        rss_mib(pid)
    );
    let mut times = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        body = scrape(addr)?;
        times.push(t.elapsed());
    }
    println!(
        "scrape over HTTP: p50 {:.1} ms, p99 {:.1} ms ({} series, {} KiB); RSS {:.1} MiB steady",
        percentile(&mut times, 0.5),
        percentile(&mut times, 0.99),
        body.lines().filter(|l| !l.starts_with('#')).count(),
        body.len() / 1024,
        rss_mib(pid)
    );
    Ok(())
}

async fn run(args: &Args, sim: &Child, kubeconfig: &std::path::Path) -> anyhow::Result<()> {
    let started = Instant::now();
    let sim_now = move || started.elapsed().as_secs_f64() * args.speed;
    let client = client(kubeconfig).await?;
    let pods: Api<Pod> = Api::all(client.clone());
    let want = args.ideps * 2 * args.replicas + args.filler;
    loop {
        let ready = pods
            .list(&ListParams::default())
            .await
            .map_or(0, |l| l.items.iter().filter(|p| is_ready(p)).count());
        if ready >= want {
            break;
        }
        if started.elapsed() > Duration::from_secs(1800) {
            bail!("the simulator never had {want} Ready pods ({ready})");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    println!(
        "simulator steady: {:.1} s; its RSS {:.1} MiB",
        started.elapsed().as_secs_f64(),
        rss_mib(sim.id())
    );
    let t = Instant::now();
    let (mut monitor, addr) = spawn_monitor(args, kubeconfig)?;
    let pid = monitor.id();
    let outcome = async {
        tokio::task::block_in_place(|| steady(args, pid, addr, t))?;
        measure_lag(args, &client, addr).await?;
        long_run(args, &client, pid, addr, sim_now).await
    }
    .await;
    let _ = monitor.kill();
    let _ = monitor.wait();
    outcome
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let workers = args.ideps * 2 * args.replicas;
    println!(
        "monitor_scale: {} nodes, {} InferaDeployments x 2 roles x {} replicas = {} worker pods, {} plain pods, speed {}",
        args.nodes, args.ideps, args.replicas, workers, args.filler, args.speed
    );
    let dir = tempfile::tempdir()?;
    let (mut sim, kubeconfig) = spawn_sim(&args, dir.path())?;
    let outcome = run(&args, &sim, &kubeconfig).await;
    let _ = sim.kill();
    let _ = sim.wait();
    outcome
}
