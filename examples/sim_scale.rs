//! Simulator scale benchmark: 1,000 nodes and 5,000 pods.
//!
//! ```text
//! cargo run --release --example sim_scale
//! cargo run --release --example sim_scale -- --nodes 1000 --deployments 100 --replicas 50 --speed 1000 --samples 100
//! ```
//!
//! Builds the scenario programmatically (N nodes with 8 GPUs each; D plain
//! Deployments of R small pods: 100m cpu, 128Mi memory, 1 GPU, no probes),
//! starts a [`RunningSim`] (store, controllers, HTTP API server), waits for
//! the steady state, then measures what a real client sees:
//!
//! - **list**: `GET /api/v1/pods` (all namespaces) with the kube-rs client,
//!   typed (`Api<Pod>::list`, decode included) and raw (`request_text`,
//!   server + transport only), and the client-side decode of that body on
//!   its own;
//! - **watch**: a cluster-wide kube-rs pod watch; the latency from a write
//!   (a direct store write, or the start of a kube-rs PATCH request) to the
//!   watcher holding the decoded event, at steady state and during the
//!   rolling restart (busy store);
//! - **rolling restart**: `kubectl rollout restart` of every Deployment (a
//!   PATCH of the template's `restartedAt` annotation over HTTP) until every
//!   rollout is complete as `kubectl rollout status` judges it, and until
//!   the old pods are gone;
//! - **RSS**: `VmHWM` (peak) and `VmRSS` from `/proc/self/status`, and the
//!   peak of each phase (sampled every 50 ms); the process holds the
//!   simulator and the client, so the list phase includes the client's
//!   decoded pods;
//! - **idle CPU**: what the settled simulator uses with no client.
//!
//! Numbers go in reports, never in the test suite: the machine's load
//! changes them.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::StreamExt;
use infera_sim::{RunningSim, SimOptions};
use infera_sim_core::faults::FaultConfig;
use infera_sim_core::kind::Kind;
use infera_sim_scenario::{NodeSpec, Scenario, Timings};
use infera_sim_store::Store;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, Patch, PatchParams, WatchEvent, WatchParams};
use kube::core::ObjectList;
use kube::{Api, Client};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const NAMESPACE: &str = "bench";
const PROBE_NAMESPACE: &str = "bench-watch";
const PROBE: &str = "watch-probe";
const SEQ_ANNOTATION: &str = "bench.infera.amd.com/seq";

#[derive(Debug, Clone)]
struct Args {
    nodes: u32,
    deployments: usize,
    replicas: i64,
    speed: f64,
    samples: usize,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args {
        nodes: 1000,
        deployments: 100,
        replicas: 50,
        speed: 1000.0,
        samples: 100,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--nodes" => args.nodes = value()?.parse()?,
            "--deployments" => args.deployments = value()?.parse()?,
            "--replicas" => args.replicas = value()?.parse()?,
            "--speed" => args.speed = value()?.parse()?,
            "--samples" => args.samples = value()?.parse()?,
            "-h" | "--help" => {
                println!(
                    "usage: sim_scale [--nodes N] [--deployments N] [--replicas N] [--speed X] [--samples N]"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other}"),
        }
    }
    Ok(args)
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
    let manifests = (0..args.deployments)
        .map(|i| {
            let app = format!("web-{i}");
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": app, "namespace": NAMESPACE},
                "spec": {
                    "replicas": args.replicas,
                    "selector": {"matchLabels": {"app": app}},
                    "template": {
                        "metadata": {"labels": {"app": app}},
                        "spec": {"containers": [{
                            "name": "main", "image": "registry.example/web:1",
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "128Mi"},
                                "limits": {"amd.com/gpu": "1"}
                            }
                        }]}
                    }
                }
            })
        })
        .collect();
    Scenario {
        name: "sim-scale".into(),
        description: "benchmark: many nodes, many small pods".into(),
        seed: 7,
        operator: Default::default(),
        nodes: vec![NodeSpec {
            name: "node".into(),
            count: Some(args.nodes),
            labels: Default::default(),
            allocatable,
            taints: Vec::new(),
        }],
        timings: Timings::default(),
        manifests,
        faults: FaultConfig::default(),
        pod_faults: Vec::new(),
        self_heal: None,
    }
}

fn i64_at(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// Every Deployment rolled out as `kubectl rollout status` judges it.
fn rolled_out(store: &Store, replicas: i64) -> bool {
    let (deployments, _) = store.list_stored(Kind::Deployment, Some(NAMESPACE));
    deployments.iter().all(|d| {
        let d = d.value();
        i64_at(d, "/status/observedGeneration") >= i64_at(d, "/metadata/generation")
            && i64_at(d, "/status/updatedReplicas") == replicas
            && i64_at(d, "/status/replicas") == replicas
            && i64_at(d, "/status/availableReplicas") == replicas
    })
}

/// Exactly `total` pods in the namespace, all Ready and none terminating.
fn pods_settled(store: &Store, total: usize) -> bool {
    let (pods, _) = store.list_stored(Kind::Pod, Some(NAMESPACE));
    pods.len() == total
        && pods.iter().all(|p| {
            let p = p.value();
            p.pointer("/metadata/deletionTimestamp").is_none()
                && p.pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    })
        })
}

async fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !f() {
        if start.elapsed() > limit {
            eprintln!("timed out after {limit:?} waiting for {what}");
            std::process::exit(1);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    start.elapsed()
}

fn memory_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Samples VmRSS every 50 ms; `take_peak` returns the highest since the
/// last call (the per-phase peak).
struct RssSampler {
    peak: Arc<std::sync::atomic::AtomicU64>,
}

impl RssSampler {
    fn start() -> RssSampler {
        let peak = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let p = Arc::clone(&peak);
        std::thread::spawn(move || {
            loop {
                p.fetch_max(memory_kb("VmRSS:"), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        RssSampler { peak }
    }

    fn take_peak(&self) -> u64 {
        self.peak
            .swap(memory_kb("VmRSS:"), Ordering::Relaxed)
            .max(memory_kb("VmRSS:"))
    }
}

/// CPU time (user + system) the process has used, in seconds (USER_HZ 100).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    ticks(11).unwrap_or(0.0) / 100.0 + ticks(12).unwrap_or(0.0) / 100.0
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Nearest-rank percentile.
fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

struct Row {
    what: String,
    samples: usize,
    p50: f64,
    p99: f64,
    max: f64,
    target: String,
}

fn row(what: &str, mut samples: Vec<Duration>, target: &str) -> Row {
    samples.sort();
    Row {
        what: what.to_string(),
        samples: samples.len(),
        p50: ms(percentile(&samples, 0.50)),
        p99: ms(percentile(&samples, 0.99)),
        max: ms(samples.last().copied().unwrap_or_default()),
        target: target.to_string(),
    }
}

/// A cluster-wide pod watch that reports (seq, arrival) for every probe event.
fn spawn_watcher(
    client: Client,
    store: Store,
    tx: mpsc::UnboundedSender<(u64, Instant)>,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let pods: Api<Pod> = Api::all(client);
        let mut restarts = 0u64;
        while !stop.load(Ordering::Relaxed) {
            // From the current version: no replay, only new events.
            let rv = store.resource_version().to_string();
            let stream = match pods.watch(&WatchParams::default().timeout(290), &rv).await {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("watch failed: {e}");
                    return restarts;
                }
            };
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                let pod = match event {
                    Ok(WatchEvent::Added(p) | WatchEvent::Modified(p)) => p,
                    Ok(_) => continue,
                    Err(e) => {
                        eprintln!("watch error: {e}");
                        break;
                    }
                };
                let at = Instant::now();
                if pod.metadata.name.as_deref() != Some(PROBE) {
                    continue;
                }
                let seq = pod
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(SEQ_ANNOTATION))
                    .and_then(|s| s.parse().ok());
                if let Some(seq) = seq {
                    let _ = tx.send((seq, at));
                }
            }
            // The stream ended (timeout, or too slow and dropped): watch again.
            restarts += 1;
        }
        restarts
    })
}

/// Wait for the watcher to report `seq`; events for older seqs are skipped.
async fn arrival(rx: &mut mpsc::UnboundedReceiver<(u64, Instant)>, seq: u64) -> Option<Instant> {
    let deadline = tokio::time::sleep(Duration::from_secs(10));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            got = rx.recv() => match got {
                Some((s, at)) if s == seq => return Some(at),
                Some(_) => continue,
                None => return None,
            },
            _ = &mut deadline => return None,
        }
    }
}

fn set_seq(store: &Store, seq: u64) -> anyhow::Result<()> {
    store
        .mutate(Kind::Pod, Some(PROBE_NAMESPACE), PROBE, |v| {
            v["metadata"]["annotations"][SEQ_ANNOTATION] = Value::from(seq.to_string());
        })
        .map(drop)
        .map_err(|e| anyhow::anyhow!("{e}"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let total_pods = args.deployments * usize::try_from(args.replicas)?;
    println!(
        "sim_scale: {} nodes, {} Deployments x {} replicas = {} pods, speed {}",
        args.nodes, args.deployments, args.replicas, total_pods, args.speed
    );

    // ---- setup -----------------------------------------------------------
    let rss = RssSampler::start();
    let started = Instant::now();
    let sim = RunningSim::start(SimOptions::new(scenario(&args), args.speed)).await?;
    let seeded = started.elapsed();
    let store = sim.store().clone();
    let replicas = args.replicas;
    wait_until("the steady state", Duration::from_secs(900), || {
        rolled_out(&store, replicas) && pods_settled(&store, total_pods)
    })
    .await;
    let steady = started.elapsed();
    println!(
        "steady state: {:.2} s (store seeded in {:.0} ms)",
        steady.as_secs_f64(),
        ms(seeded)
    );
    let rss_steady = memory_kb("VmRSS:");
    let mut phase_peaks = vec![("setup", rss.take_peak())];

    let client = Client::try_from(sim.client_config().await?)?;

    create_watch_probe(&store)?;
    // Let the controllers settle (the probe's kubelet, the last status writes).
    tokio::time::sleep(Duration::from_millis(500)).await;
    // What the settled simulator costs with no client (resyncs, timers).
    let cpu = cpu_seconds();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle_cpu = (cpu_seconds() - cpu) / 2.0;

    let mut rows = Vec::new();

    // ---- list ------------------------------------------------------------
    let pods: Api<Pod> = Api::all(client.clone());
    let expect = total_pods + 1;
    let body_len = measure_lists(&client, &pods, &args, expect, &mut rows).await?;

    phase_peaks.push(("list", rss.take_peak()));

    // ---- watch at steady state -------------------------------------------
    let (tx, mut rx) = mpsc::unbounded_channel();
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = spawn_watcher(client.clone(), store.clone(), tx, Arc::clone(&stop));
    let seq = watch_open(&store, &mut rx).await?;
    let seq = measure_steady_watch(&client, &store, &mut rx, seq, &args, &mut rows).await?;

    phase_peaks.push(("watch", rss.take_peak()));

    // ---- rolling restart of every Deployment -----------------------------
    let restart =
        measure_restart(&client, &store, &mut rx, seq, &args, total_pods, &mut rows).await?;
    let Restart {
        patched,
        complete,
        settled,
        lost,
        seq,
    } = restart;
    stop.store(true, Ordering::Relaxed);
    let _ = set_seq(&store, seq + 1);
    let watch_restarts = tokio::time::timeout(Duration::from_secs(2), watcher)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or(0);

    phase_peaks.push(("restart", rss.take_peak()));

    // Another list with the restart's fresh objects.
    let t = Instant::now();
    let list = pods.list(&ListParams::default()).await?;
    let first_list_after = t.elapsed();

    phase_peaks.push(("list after restart", rss.take_peak()));

    // ---- report ------------------------------------------------------------
    let hwm = memory_kb("VmHWM:");
    let rss = memory_kb("VmRSS:");
    println!();
    print_rows(&rows);
    println!();
    println!(
        "list body: {:.1} MB for {} pods ({} bytes/pod); first list after the restart: {:.1} ms ({} pods)",
        body_len as f64 / 1e6,
        expect,
        body_len / expect.max(1),
        ms(first_list_after),
        list.items.len()
    );
    println!(
        "steady state from start:                 {:>8.2} s   (store seeded in {:.0} ms)",
        steady.as_secs_f64(),
        ms(seeded)
    );
    println!(
        "simulator CPU when settled (no client):  {:>8.0} % of one core",
        idle_cpu * 100.0
    );
    print_restart(&args, patched, complete, settled);
    println!(
        "watch probes lost during the restart: {lost}; watch re-opened {watch_restarts} time(s)"
    );
    print_rss(hwm, rss_steady, rss, &phase_peaks);
    print_request_counts(&store);
    sim.shutdown().await;
    Ok(())
}

/// Write probe sequence numbers until one comes through the watch (it is
/// open then); the last number written.
async fn watch_open(
    store: &Store,
    rx: &mut mpsc::UnboundedReceiver<(u64, Instant)>,
) -> anyhow::Result<u64> {
    let mut seq = 0u64;
    loop {
        seq += 1;
        set_seq(store, seq)?;
        if arrival(rx, seq).await.is_some() {
            return Ok(seq);
        }
    }
}

fn print_restart(args: &Args, patched: Duration, complete: Duration, settled: Duration) {
    println!(
        "rolling restart of {} Deployments, speed {}: {:>8.2} s wall to rolled out (target < 60 s; {} PATCHes took {:.0} ms)",
        args.deployments,
        args.speed,
        complete.as_secs_f64(),
        args.deployments,
        ms(patched)
    );
    println!(
        "                                          {:>8.2} s wall until every old pod is gone",
        settled.as_secs_f64()
    );
}

/// Peak, steady and current RSS (kB), and the peak of each phase.
fn print_rss(hwm: u64, steady: u64, now: u64, phase_peaks: &[(&str, u64)]) {
    println!(
        "RSS: peak (VmHWM) {:.0} MB (target < 512 MB); at steady state {:.0} MB; now {:.0} MB",
        hwm as f64 / 1024.0,
        steady as f64 / 1024.0,
        now as f64 / 1024.0
    );
    let peaks: Vec<String> = phase_peaks
        .iter()
        .map(|(phase, kb)| format!("{phase} {:.0} MB", *kb as f64 / 1024.0))
        .collect();
    println!("RSS peak by phase: {}", peaks.join(", "));
}

/// The watch probe: a bare pod in its own namespace, bound to a node.
fn create_watch_probe(store: &Store) -> anyhow::Result<()> {
    store
        .create(
            Kind::Namespace,
            json!({"metadata": {"name": PROBE_NAMESPACE}}),
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    store
        .create(
            Kind::Pod,
            json!({"metadata": {"name": PROBE, "namespace": PROBE_NAMESPACE},
                   "spec": {"nodeName": "node-0", "containers": [{"name": "main", "image": "probe:1"}]}}),
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(())
}

/// What the rolling restart of every Deployment measured.
struct Restart {
    /// Time to PATCH every Deployment.
    patched: Duration,
    /// Until every Deployment is rolled out.
    complete: Duration,
    /// Until every old pod is gone.
    settled: Duration,
    /// Watch probes without an event during the restart.
    lost: usize,
    /// The last sequence number written.
    seq: u64,
}

/// Restart every Deployment at once and probe the watch while the
/// controllers are busy (a row); the timings in [`Restart`].
async fn measure_restart(
    client: &Client,
    store: &Store,
    rx: &mut mpsc::UnboundedReceiver<(u64, Instant)>,
    mut seq: u64,
    args: &Args,
    total_pods: usize,
    rows: &mut Vec<Row>,
) -> anyhow::Result<Restart> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    let restarted_at = jiff::Timestamp::now().to_string();
    let started = Instant::now();
    for i in 0..args.deployments {
        let patch = json!({"spec": {"template": {"metadata": {"annotations": {
            "kubectl.kubernetes.io/restartedAt": restarted_at}}}}});
        deployments
            .patch(
                &format!("web-{i}"),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await?;
    }
    let patched = started.elapsed();
    // Probe the watch while the controllers are busy.
    let mut busy = Vec::new();
    let mut lost = 0usize;
    let mut complete = None;
    while complete.is_none() {
        seq += 1;
        let t = Instant::now();
        set_seq(store, seq)?;
        match arrival(rx, seq).await {
            Some(at) => busy.push(at.duration_since(t)),
            None => lost += 1,
        }
        if rolled_out(store, args.replicas) {
            complete = Some(started.elapsed());
        }
        if started.elapsed() > Duration::from_secs(900) {
            bail!("the rolling restart did not complete in 900 s");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let complete = complete.unwrap_or_default();
    let settled = complete
        + wait_until("the old pods to go", Duration::from_secs(600), || {
            pods_settled(store, total_pods)
        })
        .await;
    rows.push(row(
        "watch: store write -> kube-rs watcher (during restart)",
        busy,
        "",
    ));
    Ok(Restart {
        patched,
        complete,
        settled,
        lost,
        seq,
    })
}

/// Typed lists of every pod, raw list bodies and their client-side decode,
/// as rows; returns the body's length.
async fn measure_lists(
    client: &Client,
    pods: &Api<Pod>,
    args: &Args,
    expect: usize,
    rows: &mut Vec<Row>,
) -> anyhow::Result<usize> {
    for _ in 0..3 {
        let list = pods.list(&ListParams::default()).await?;
        if list.items.len() != expect {
            bail!("listed {} pods, expected {expect}", list.items.len());
        }
    }
    let mut typed = Vec::with_capacity(args.samples);
    for _ in 0..args.samples {
        let t = Instant::now();
        let list = pods.list(&ListParams::default()).await?;
        typed.push(t.elapsed());
        if list.items.len() != expect {
            bail!("listed {} pods, expected {expect}", list.items.len());
        }
    }
    let mut raw = Vec::with_capacity(args.samples);
    let mut decode = Vec::with_capacity(args.samples);
    let mut body_len = 0;
    for _ in 0..args.samples {
        let t = Instant::now();
        let req = http::Request::get("/api/v1/pods").body(Vec::new())?;
        let text = client.request_text(req).await?;
        raw.push(t.elapsed());
        body_len = text.len();
        // What Api::list does with the body: the client-side share.
        let t = Instant::now();
        let list: ObjectList<Pod> = serde_json::from_str(&text)?;
        decode.push(t.elapsed());
        drop(list);
    }
    rows.push(row(
        "list all pods, kube-rs Api<Pod>::list (typed)",
        typed,
        "p99 < 50 ms",
    ));
    rows.push(row(
        "list all pods, kube-rs request_text (raw body)",
        raw,
        "",
    ));
    rows.push(row(
        "  client decode of that body into ObjectList<Pod>",
        decode,
        "",
    ));
    Ok(body_len)
}

/// Watch latency at steady state, from a store write and from a PATCH
/// request to the kube-rs watcher, as rows; returns the last sequence number.
async fn measure_steady_watch(
    client: &Client,
    store: &Store,
    rx: &mut mpsc::UnboundedReceiver<(u64, Instant)>,
    mut seq: u64,
    args: &Args,
    rows: &mut Vec<Row>,
) -> anyhow::Result<u64> {
    let probe_api: Api<Pod> = Api::namespaced(client.clone(), PROBE_NAMESPACE);
    let mut from_store = Vec::with_capacity(args.samples * 2);
    for _ in 0..args.samples * 2 {
        seq += 1;
        let t = Instant::now();
        set_seq(store, seq)?;
        let at = arrival(rx, seq).await.context("watch event lost")?;
        from_store.push(at.duration_since(t));
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let mut from_api = Vec::with_capacity(args.samples * 2);
    for _ in 0..args.samples * 2 {
        seq += 1;
        let patch = json!({"metadata": {"annotations": {SEQ_ANNOTATION: seq.to_string()}}});
        let t = Instant::now();
        probe_api
            .patch(PROBE, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        let at = arrival(rx, seq).await.context("watch event lost")?;
        from_api.push(at.duration_since(t));
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    rows.push(row(
        "watch: store write -> kube-rs watcher (steady)",
        from_store,
        "< 5 ms",
    ));
    rows.push(row(
        "watch: PATCH request -> kube-rs watcher (steady)",
        from_api,
        "< 5 ms",
    ));
    Ok(seq)
}

/// The measured rows as a table.
fn print_rows(rows: &[Row]) {
    println!(
        "{:<56} {:>7} {:>9} {:>9} {:>9}  target",
        "measure", "samples", "p50 ms", "p99 ms", "max ms"
    );
    for r in rows {
        println!(
            "{:<56} {:>7} {:>9.2} {:>9.2} {:>9.2}  {}",
            r.what, r.samples, r.p50, r.p99, r.max, r.target
        );
    }
}

/// The simulator's list and watch request counts.
fn print_request_counts(store: &Store) {
    let counts = store.request_counts();
    let interesting: HashMap<&str, u64> = counts
        .iter()
        .filter(|(k, _)| k.starts_with("list") || k.starts_with("watch"))
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    println!("API requests: {interesting:?}");
}
