//! Rollout benchmark harness (`cargo bench --bench rollout`): how fast
//! `infera rollout` sees and acts on the event that makes a surge pod Ready,
//! side by side with `kubectl rollout status` on the same rollout; how many
//! API requests each pod replacement costs; and whether memory stays flat
//! over a 24-hour simulated audit.
//!
//! Everything runs against `infera sim` over real HTTP on loopback. The
//! Ready instant is taken from the simulator's store (the write that sets
//! the pod's Ready condition), so each latency covers: the API server's
//! watch fan-out, HTTP, kube's watcher, the step tracker and the print.
//!
//! Options (environment): `REPLICAS` per worker service (default 8),
//! `SPEED` (default 100), `AUDIT_HOURS` (default 24), `AUDIT_SPEED`
//! (default 4000). Prints a report; asserts nothing. Under `cargo test
//! --benches` (CI) it runs one replica and one simulated hour.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use infera::cli::Cli;
use infera_rollout::leg_tracker::{Observation, StepKind};
use infera_rollout::{Options, Request, execute};
use infera_sim::{RunningSim, SimOptions};
use infera_sim_core::kind::Kind;
use infera_sim_scenario::Scenario;
use infera_sim_store::EventType;
use serde_json::Value;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn summary(name: &str, mut v: Vec<f64>) {
    v.sort_by(f64::total_cmp);
    println!(
        "{name:<44} n={:<4} p50 {:>7.2} ms  p90 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms",
        v.len(),
        percentile(&v, 50.0),
        percentile(&v, 90.0),
        percentile(&v, 99.0),
        v.last().copied().unwrap_or(f64::NAN)
    );
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

fn is_ready(p: &Value) -> bool {
    p.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

fn scenario(replicas: u64) -> Scenario {
    let mut s = Scenario::load("pd-1p1d").expect("built-in scenario");
    s.name = format!("pd-{replicas}p{replicas}d");
    for m in &mut s.manifests {
        if m["kind"] == "InferaDeployment" {
            for service in ["prefill", "decode"] {
                m["spec"]["services"][service]["replicas"] = replicas.into();
            }
        }
    }
    // 2 × replicas one-GPU workers plus one surge pod.
    let gpus = 2 * replicas + 1;
    s.nodes[0].count = Some(gpus.div_ceil(8).max(3) as u32);
    s
}

async fn latency_run(replicas: u64, speed: f64) {
    // HTTPS: kubectl sends no bearer token over plain HTTP.
    let mut options = SimOptions::new(scenario(replicas), speed);
    options.tls = true;
    let sim = RunningSim::start(options)
        .await
        .expect("start the simulator");
    assert!(
        infera::demo::wait_steady(sim.store(), "llm", Duration::from_secs(120)).await,
        "steady state"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");

    let (ready_at, recorder) = record_ready(&sim);

    // kubectl rollout status on each worker Deployment, started once its
    // template changed (as an operator would after the trigger).
    let kubectl_lines: KubectlLines = Arc::default();
    let have_kubectl = Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok();
    let watchers = if have_kubectl {
        spawn_kubectl_watchers(&sim, &kubeconfig, &kubectl_lines)
    } else {
        Vec::new()
    };

    let config = sim.client_config().await.expect("client config");
    let conn = infera_cluster::connect_with(config, Some("infera-sim".into()))
        .await
        .expect("connect");
    let before = sim.store().request_counts();
    let request = Request::restart("idep/llama".parse().expect("target"));
    let options = Options {
        step_timeout: Duration::from_secs(3600),
        command_line: String::new(),
        ..Options::unattended(speed)
    };
    let started = Instant::now();
    let outcome = execute(&conn, request, options, std::future::pending())
        .await
        .expect("rollout");
    let wall = started.elapsed();
    let after = sim.store().request_counts();
    for w in watchers {
        let _ = w.await;
    }
    recorder.abort();

    let ready_at = ready_at.lock().unwrap().clone();
    let mut infera_ms = Vec::new();
    let mut replaced = 0u64;
    for (_, obs, at) in &outcome.steps {
        if obs.kind == StepKind::Ready {
            replaced += 1;
            if let Some(t) = ready_at.get(&obs.pod) {
                infera_ms.push(at.saturating_duration_since(*t).as_secs_f64() * 1e3);
            }
        }
    }
    // kubectl rollout status prints a line only when the Deployment status
    // it watches changes; after a surge pod turns Ready the next change is
    // its reaction (the next replacement counted, or old replicas pending
    // termination). Latency = first line after the Ready write.
    let kubectl_ms = kubectl_latencies(&outcome.steps, &ready_at, &kubectl_lines.lock().unwrap());

    println!(
        "rollout of {} pods ({} per service, speed {speed}x): {:.1}s wall, outcome {:?}",
        replaced,
        replicas,
        wall.as_secs_f64(),
        outcome.report.as_ref().map(|r| r.outcome)
    );
    summary("infera: store Ready write -> step reported", infera_ms);
    if have_kubectl {
        summary("kubectl rollout status: Ready -> line", kubectl_ms);
    } else {
        println!("kubectl not on PATH: no side-by-side figure");
    }
    print_requests(&before, &after, replaced);
    sim.shutdown().await;
}

/// The instant each pod first turned Ready in the store, recorded from the
/// store's own events until the task is aborted.
fn record_ready(sim: &RunningSim) -> (ReadyAt, tokio::task::JoinHandle<()>) {
    let ready_at: ReadyAt = Arc::default();
    let mut events = sim.store().subscribe();
    let recorder = {
        let ready_at = Arc::clone(&ready_at);
        tokio::spawn(async move {
            while let Ok(ev) = events.recv().await {
                let now = Instant::now();
                if ev.kind == Kind::Pod && ev.event == EventType::Modified && is_ready(&ev.object) {
                    let name = ev.object["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    ready_at.lock().unwrap().entry(name).or_insert(now);
                }
            }
        })
    };
    (ready_at, recorder)
}

type ReadyAt = Arc<Mutex<HashMap<String, Instant>>>;

/// Per Ready step: the time from the store's Ready write to the first line
/// `kubectl rollout status` printed after it (within a minute).
fn kubectl_latencies(
    steps: &[(String, Observation, Instant)],
    ready_at: &HashMap<String, Instant>,
    lines: &[(String, String, Instant)],
) -> Vec<f64> {
    let mut kubectl_ms = Vec::new();
    for service in ["decode", "prefill"] {
        let ready = steps
            .iter()
            .filter(|(leg, o, _)| leg == service && o.kind == StepKind::Ready)
            .filter_map(|(_, o, _)| ready_at.get(&o.pod).copied());
        for r in ready {
            let next = lines
                .iter()
                .filter(|(s, _, at)| s == service && *at >= r)
                .map(|(_, _, at)| *at)
                .min();
            if let Some(at) = next.filter(|at| at.duration_since(r) < Duration::from_secs(60)) {
                kubectl_ms.push(at.duration_since(r).as_secs_f64() * 1e3);
            }
        }
    }
    kubectl_ms
}

/// Lines `kubectl rollout status` prints, per service, with their time.
type KubectlLines = Arc<Mutex<Vec<(String, String, Instant)>>>;

/// One `kubectl rollout status` per worker Deployment, each started once
/// its template changed (as an operator would after the trigger).
fn spawn_kubectl_watchers(
    sim: &RunningSim,
    kubeconfig: &std::path::Path,
    kubectl_lines: &KubectlLines,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut watchers = Vec::new();
    for service in ["decode", "prefill"] {
        let store = sim.store().clone();
        let lines = Arc::clone(kubectl_lines);
        let kubeconfig = kubeconfig.to_path_buf();
        watchers.push(tokio::task::spawn_blocking(move || {
            let name = format!("llama-{service}");
            let generation = |s: &infera_sim_store::Store| {
                s.get(Kind::Deployment, Some("llm"), &name)
                    .and_then(|d| d.pointer("/metadata/generation").and_then(Value::as_i64))
                    .unwrap_or(0)
            };
            let start = generation(&store);
            let deadline = Instant::now() + Duration::from_secs(600);
            while generation(&store) == start && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            let Ok(mut child) = Command::new("kubectl")
                .args(["rollout", "status", &format!("deploy/{name}"), "-n", "llm"])
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
            else {
                return;
            };
            if let Some(out) = child.stdout.take() {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    lines
                        .lock()
                        .unwrap()
                        .push((service.to_string(), line, Instant::now()));
                }
            }
            let _ = child.wait();
        }));
    }
    watchers
}

/// The API requests between two counts, per pod replaced.
fn print_requests(
    before: &std::collections::BTreeMap<String, u64>,
    after: &std::collections::BTreeMap<String, u64>,
    replaced: u64,
) {
    println!("API requests during the rollout (all clients; kubectl included):");
    let mut total = 0;
    for (k, v) in after {
        let d = v - before.get(k).copied().unwrap_or(0);
        if d > 0 {
            total += d;
            println!(
                "  {k:<36} {d:>6}  ({:.2} per pod replaced)",
                d as f64 / replaced.max(1) as f64
            );
        }
    }
    println!(
        "  {:<36} {total:>6}  ({:.2} per pod replaced)",
        "total",
        total as f64 / replaced.max(1) as f64
    );
}

/// A long audit at high speed: RSS at each quarter of the window.
async fn audit_memory(hours: u64, speed: f64) {
    let mut s = Scenario::load("pd-1p1d").expect("built-in scenario");
    // Churn: crash a worker every simulated 30 minutes.
    s.timings.restart_backoff = 10.0;
    let faults: Vec<Value> = (1..(hours * 2))
        .map(|i| {
            serde_json::json!({"at": (i * 1800) as f64,
                "crash": {"namespace": "llm", "podPrefix": if i % 2 == 0 { "llama-decode" } else { "llama-prefill" }}})
        })
        .collect();
    s.pod_faults = serde_json::from_value(Value::from(faults)).expect("pod faults");
    let sim = RunningSim::start(SimOptions::new(s, speed))
        .await
        .expect("start the simulator");
    assert!(infera::demo::wait_steady(sim.store(), "llm", Duration::from_secs(120)).await);
    let config = sim.client_config().await.expect("client config");
    let conn = infera_cluster::connect_with(config, Some("infera-sim".into()))
        .await
        .expect("connect");
    let window = format!("{hours}h");
    let args = match Cli::try_parse_from(["infera", "audit", "idep/llama", "--for", &window])
        .expect("args")
        .command
    {
        infera::cli::Command::Audit(a) => infera_audit::Options::from(&a),
        _ => unreachable!(),
    };
    let rss: Arc<Mutex<Vec<(f64, u64)>>> = Arc::default();
    let sampler = {
        let rss = Arc::clone(&rss);
        let clock = sim.clock().clone();
        tokio::spawn(async move {
            loop {
                rss.lock()
                    .unwrap()
                    .push((clock.elapsed().as_secs_f64() / 3600.0, rss_kib()));
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    let report = infera_audit::audit_target(&conn, &args, speed, std::future::pending())
        .await
        .expect("audit");
    sampler.abort();
    let rss = rss.lock().unwrap().clone();
    println!(
        "{hours}h simulated audit at {speed}x: {} samples, {} change points and {} samples kept for the timeline",
        report.samples,
        report
            .timeline
            .roles
            .iter()
            .map(|(_, points)| points.len())
            .sum::<usize>(),
        report.timeline.samples.len()
    );
    for q in 1..=4u64 {
        let mark = hours as f64 * q as f64 / 4.0;
        if let Some((h, kib)) = rss.iter().rev().find(|(h, _)| *h <= mark) {
            println!(
                "  RSS at {h:>5.1} h simulated: {:>6.1} MiB",
                *kib as f64 / 1024.0
            );
        }
    }
    sim.shutdown().await;
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` (CI) does not:
    // then a small version runs (one replica, one simulated hour), so the
    // harness keeps building and running. The environment overrides both.
    let bench = std::env::args().any(|a| a == "--bench");
    let (replicas, hours) = if bench { (8, 24) } else { (1, 1) };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        latency_run(env_or("REPLICAS", replicas), env_or("SPEED", 100.0)).await;
        audit_memory(env_or("AUDIT_HOURS", hours), env_or("AUDIT_SPEED", 4000.0)).await;
    });
}
