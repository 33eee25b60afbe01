//! `infera monitor`'s state at scale, in process (not a test):
//!
//! ```text
//! cargo run --release --example monitor_scale -- --ideps 500 --replicas 10 --hours 6
//! ```
//!
//! 500 InferaDeployments of two roles (prefill, decode) with R replicas
//! each (10: 10,000 worker pods) across 10 namespaces, fed to
//! `infera_monitor::state::State` as the watchers would feed it (a list,
//! then events), then measured:
//!
//! - **list**: applying the first lists (InferaDeployments, then 10,000
//!   pods to 500 auditors);
//! - **event → metric**: how long one pod's Ready change takes to be
//!   applied (after which the next scrape shows it; the metrics are
//!   computed from the state at scrape time): p50/p99 of 2,000 changes;
//! - **scrape**: `encode_state` (what `/metrics` does under the lock),
//!   p50/p99 of 50 scrapes, and the body's size and series count;
//! - **RSS**: `VmRSS` after the lists, and after H simulated hours of
//!   churn (a pod's Ready flapping every simulated second, the auditors'
//!   histories settled every 10 s), to see it stay flat.
//!
//! The simulator is not involved: the watch transport is the simulator
//! benchmark's (`examples/sim_scale.rs`). Numbers go in docs/benchmarks.md,
//! never in a test.

use std::time::{Duration, Instant};

use infera_monitor::metrics::encode_state;
use infera_monitor::state::State;
use k8s_openapi::api::core::v1::Pod;
use kube::api::DynamicObject;
use kube::runtime::watcher::Event;
use serde_json::json;

struct Args {
    ideps: usize,
    replicas: usize,
    hours: u64,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args {
        ideps: 500,
        replicas: 10,
        hours: 6,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value: usize = it
            .next()
            .ok_or_else(|| anyhow::anyhow!("{flag} needs a value"))?
            .parse()?;
        match flag.as_str() {
            "--ideps" => args.ideps = value,
            "--replicas" => args.replicas = value,
            "--hours" => args.hours = value as u64,
            _ => anyhow::bail!("usage: monitor_scale [--ideps N] [--replicas N] [--hours H]"),
        }
    }
    Ok(args)
}

fn namespace(i: usize) -> String {
    format!("bench-{}", i % 10)
}

fn idep(i: usize, replicas: usize) -> anyhow::Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "infera.amd.com/v1alpha1", "kind": "InferaDeployment",
        "metadata": {"name": format!("m{i}"), "namespace": namespace(i), "uid": format!("u{i}")},
        "spec": {"services": {
            "router": {"componentType": "server", "replicas": 1},
            "prefill": {"componentType": "worker", "role": "prefill", "replicas": replicas},
            "decode": {"componentType": "worker", "role": "decode", "replicas": replicas}}}
    }))?)
}

fn pod(i: usize, service: &str, n: usize, ready: bool) -> anyhow::Result<Pod> {
    let name = format!("m{i}-{service}-{n}");
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": namespace(i), "uid": name,
            "labels": {"infera.amd.com/deployment": format!("m{i}"), "infera.amd.com/service": service},
            "annotations": {"infera.amd.com/worker-info": "{\"port\":30090}"}},
        "spec": {"nodeName": format!("node-{}", (i * 7 + n) % 1000),
            "containers": [{"name": "main", "image": "rocm/infera:0.9.1",
                "command": ["python3", "-m", "infera.engine.sglang"],
                "resources": {"limits": {"amd.com/gpu": "1"}}}]},
        "status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}
    }))?)
}

fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn percentile(samples: &mut [Duration], q: f64) -> Duration {
    samples.sort();
    let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
    samples.get(i).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// A cheap deterministic sequence (no RNG dependency in the example).
fn pick(seed: &mut u64, n: usize) -> usize {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*seed >> 33) as usize) % n.max(1)
}

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let t0 = Instant::now();
    let base = rss_mib();
    let mut state = State::new(1, infera_model::selector::Selector::default(), t0);
    let started = Instant::now();
    state.apply_idep(&Event::Init, t0);
    for i in 0..args.ideps {
        state.apply_idep(&Event::InitApply(idep(i, args.replicas)?), t0);
    }
    state.apply_idep(&Event::InitDone, t0);
    state.apply_deployment(&Event::Init, t0);
    state.apply_deployment(&Event::InitDone, t0);
    state.apply_statefulset(&Event::Init, t0);
    state.apply_statefulset(&Event::InitDone, t0);
    let mut pods = Vec::new();
    for i in 0..args.ideps {
        for service in ["prefill", "decode"] {
            for n in 0..args.replicas {
                pods.push((i, service, n));
            }
        }
    }
    state.apply_pod(&Event::Init, t0);
    for &(i, s, n) in &pods {
        state.apply_pod(&Event::InitApply(pod(i, s, n, true)?), t0);
    }
    state.apply_pod(&Event::InitDone, t0);
    let listed = started.elapsed();
    let after_list = rss_mib();
    println!(
        "monitor_scale: {} InferaDeployments, {} worker pods, {} workloads watched; lists applied in {}",
        args.ideps,
        pods.len(),
        state.workloads.len(),
        ms(listed)
    );

    // Event → state: one pod's Ready flips (each applied while the others hold).
    let mut seed = 7u64;
    let mut lags = Vec::new();
    let mut now = t0;
    for k in 0..2000 {
        now += Duration::from_millis(500);
        let (i, s, n) = pods[pick(&mut seed, pods.len())];
        let p = pod(i, s, n, k % 2 == 1)?;
        let t = Instant::now();
        state.apply_pod(&Event::Apply(p), now);
        lags.push(t.elapsed());
    }
    // Everything Ready again.
    for &(i, s, n) in &pods {
        state.apply_pod(&Event::Apply(pod(i, s, n, true)?), now);
    }
    let mut scrapes = Vec::new();
    let mut body = String::new();
    for _ in 0..50 {
        now += Duration::from_secs(1);
        let t = Instant::now();
        body = encode_state(&mut state, now);
        scrapes.push(t.elapsed());
    }
    let series = body.lines().filter(|l| !l.starts_with('#')).count();
    println!(
        "event -> state: p50 {} p99 {} (2000 Ready changes); scrape: p50 {} p99 {} ({} series, {} KiB)",
        ms(percentile(&mut lags.clone(), 0.5)),
        ms(percentile(&mut lags, 0.99)),
        ms(percentile(&mut scrapes.clone(), 0.5)),
        ms(percentile(&mut scrapes, 0.99)),
        series,
        body.len() / 1024
    );

    // Churn: H simulated hours, a Ready flip every simulated second, the
    // histories settled every 10 s, a scrape every 30 s.
    let steady = rss_mib();
    let mut peak = steady;
    let seconds = args.hours * 3600;
    for s in 0..seconds {
        now += Duration::from_secs(1);
        let (i, svc, n) = pods[pick(&mut seed, pods.len())];
        state.apply_pod(&Event::Apply(pod(i, svc, n, s % 2 == 1)?), now);
        if s % 10 == 0 {
            state.settle(now);
        }
        if s % 30 == 0 {
            let _ = encode_state(&mut state, now);
        }
        if s % 3600 == 0 {
            peak = peak.max(rss_mib());
        }
    }
    println!(
        "RSS: {:.1} MiB before, {:.1} MiB after the lists, {:.1} MiB steady, {:.1} MiB after {} simulated hours of churn (peak {:.1} MiB); run {:.0} s",
        base,
        after_list,
        steady,
        rss_mib(),
        args.hours,
        peak.max(rss_mib()),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}
