//! The world's kubelet in a running simulator: probes go to the port they
//! name (moved here from `infera_sim_world::kubelet`, whose crate cannot
//! start a `RunningSim`).

use std::time::{Duration, Instant};

use serde_json::Value;

use infera_sim_core::json::str_at;
use infera_sim_core::kind::Kind;
use infera_sim_core::net::http_get;
use infera_sim_scenario::Scenario;

use crate::{RunningSim, SimOptions};

/// A worker Deployment named `name` (its own InferaDeployment label, so
/// a prefill here never finds a decode: it loads but never registers)
/// with a readiness probe `GET path` on `port`.
fn worker(name: &str, role: &str, path: &str, port: u16) -> String {
    format!(
        r#"
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {{name: {name}, namespace: llm}}
    spec:
      replicas: 1
      selector: {{matchLabels: {{app: {name}}}}}
      template:
        metadata:
          labels: {{app: {name}, infera.amd.com/deployment: {name}}}
        spec:
          containers:
            - name: main
              image: rocm/infera:0.9.1
              command: [python3, -m, infera.engine.sglang, --port, "30000", --disaggregation-mode, {role}, --model-path, m]
              readinessProbe: {{httpGet: {{path: {path}, port: {port}}}, periodSeconds: 1}}"#
    )
}

fn pod<'a>(pods: &'a [Value], app: &str) -> Option<&'a Value> {
    pods.iter()
        .find(|p| p.pointer("/metadata/labels/app").and_then(Value::as_str) == Some(app))
}

fn ready(p: &Value) -> bool {
    p.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| str_at(c, "/type") == "Ready" && str_at(c, "/status") == "True")
        })
}

fn registered(p: &Value) -> bool {
    p.pointer("/metadata/annotations/infera.amd.com~1worker-info")
        .is_some()
}

async fn status(p: &Value, port: u16, path: &str) -> Option<u16> {
    let ip: std::net::Ipv4Addr = p.pointer("/status/podIP")?.as_str()?.parse().ok()?;
    let addr = std::net::SocketAddr::from((ip, port));
    http_get(addr, path, Duration::from_secs(2))
        .await
        .ok()
        .map(|r| r.status)
}

/// The kubelet answers the probe a pod carries: `/health` on the engine
/// port passes once weights are loaded, before the worker registers
/// (Ready, not routable: a prefill without a decode never passes its
/// barrier); `/ready` on the readiness port passes only once it
/// registered. Both are real listeners on the pod IP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_go_to_the_port_they_name() {
    // (app, role, probe path, probe port, Ready, registered)
    let cases = [
        ("health-prefill", "prefill", "/health", 30000, true, false),
        ("ready-prefill", "prefill", "/ready", 30090, false, false),
        ("ready-decode", "decode", "/ready", 30090, true, true),
        ("health-decode", "decode", "/health", 30000, true, true),
    ];
    let manifests: String = cases
        .iter()
        .map(|(app, role, path, port, ..)| worker(app, role, path, *port))
        .collect();
    let yaml = format!(
        "name: probes\nseed: 1\nnodes:\n  - name: n\n    count: 1\n    allocatable: {{cpu: \"64\", memory: 1Ti, pods: \"110\"}}\ntimings: {{imagePull: 1, weightLoad: 4, weightLoadJitter: 0, barrier: 1, teardown: 1}}\nmanifests:\n  - {{apiVersion: v1, kind: Namespace, metadata: {{name: llm}}}}{manifests}\n"
    );
    let scenario = Scenario::from_yaml("probes.yaml", &yaml).unwrap_or_else(|e| panic!("{e}"));
    let sim = RunningSim::start(SimOptions::new(scenario, 20.0))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let settled = |pods: &[Value]| {
        cases.iter().all(|(app, _, _, _, want_ready, want_reg)| {
            pod(pods, app)
                .is_some_and(|p| (!want_ready || ready(p)) && (!want_reg || registered(p)))
        })
    };
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30)
        && !settled(&sim.store().list(Kind::Pod, Some("llm")).0)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Ten more probe periods: what is not Ready yet stays so.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pods = sim.store().list(Kind::Pod, Some("llm")).0;
    for (app, _, _, _, want_ready, want_reg) in cases {
        let p = pod(&pods, app).unwrap_or_else(|| panic!("no pod for {app}"));
        assert_eq!(
            (ready(p), registered(p)),
            (want_ready, want_reg),
            "{app}: (Ready, registered)"
        );
        assert_eq!(
            status(p, 30000, "/health").await,
            Some(200),
            "{app}: the engine serves /health once loaded"
        );
        let ready_port = status(p, 30090, "/ready").await;
        assert_eq!(
            ready_port == Some(200),
            want_reg,
            "{app}: /ready answers iff registered ({ready_port:?})"
        );
    }
    sim.shutdown().await;
}
