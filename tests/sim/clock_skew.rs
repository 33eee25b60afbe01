//! A control plane whose clock is five minutes behind infera's: the skew is
//! measured from the `Date` headers and corrected, so the rollout's report
//! still matches the simulator's ground truth (with no correction, every
//! prompt event would look five minutes late and be timed five minutes in
//! the past).

use std::process::Stdio;
use std::time::Duration;

use infera_rollout::target::Target;
use infera_rollout::{Options, Request, execute};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;

use crate::common::process::{infera, lines, wait_exit};
use crate::common::sim::now_ms;

const SPEED: f64 = 10.0;

/// Every pod of `llm` Ready (the scenario's steady state), within a minute.
async fn wait_steady(client: &kube::Client) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "llm");
    for _ in 0..600 {
        if let Ok(list) = pods.list(&Default::default()).await {
            let ready = list
                .items
                .iter()
                .filter(|p| infera_model::pod::is_ready(p))
                .count();
            if list.items.len() >= 3 && ready == list.items.len() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the skewed simulator never reached its steady state");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skewed_server_clock_is_measured_and_corrected() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = dir.path().join("kubeconfig");
    let truth = dir.path().join("truth.json");
    let speed = SPEED.to_string();
    let mut sim = infera(&[
        "sim",
        "serve",
        "--scenario",
        "pd-1p1d-skip-probe",
        "--speed",
        &speed,
        "--clock-skew=-300s",
        "--kubeconfig-out",
        &kubeconfig.display().to_string(),
        "--truth",
        &truth.display().to_string(),
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap_or_else(|e| panic!("spawn infera sim serve: {e}"));
    let log = lines(&mut sim);
    let ready = (0..300).any(|_| {
        log.recv_timeout(Duration::from_millis(100))
            .is_ok_and(|l| l.starts_with("kubeconfig:"))
    });
    assert!(ready, "the simulator did not start");
    let conn = infera_cluster::connect(&infera_cluster::ConnectOptions {
        kubeconfig: Some(kubeconfig.clone()),
        ..Default::default()
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    wait_steady(&conn.client).await;
    let from_ms = now_ms();
    let target: Target = "idep/llama".parse().unwrap_or_else(|e| panic!("{e}"));
    let outcome = execute(
        &conn,
        Request::restart(target),
        Options::unattended(SPEED),
        std::future::pending(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let to_ms = now_ms();
    let report = outcome.report.unwrap_or_else(|| panic!("no report"));
    // SIGINT: the simulator writes its ground truth and stops.
    let _ = std::process::Command::new("kill")
        .args(["-INT", &sim.id().to_string()])
        .status();
    assert_eq!(wait_exit(&mut sim, Duration::from_secs(20)), 0);
    let json = report.to_json();
    let skew = report
        .clock_skew_s
        .unwrap_or_else(|| panic!("no skew measured: {json}"));
    assert!((skew + 300.0).abs() <= 1.0, "measured skew {skew}: {json}");
    let truth: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&truth).unwrap_or_else(|e| panic!("{e}")))
            .unwrap_or_else(|e| panic!("{e}"));
    for role in ["prefill", "decode"] {
        let series = truth["pods"][format!("llm/llama/{role}")]
            .as_array()
            .unwrap_or_else(|| panic!("no truth for {role}: {truth}"));
        let below = below_ms(series, from_ms, to_ms) as f64 / 1000.0 * SPEED;
        let r = report
            .roles
            .iter()
            .find(|r| r.role == role)
            .expect("the role");
        assert_eq!(r.min_ready_exact, Some(0), "{role}: {json}");
        assert!(
            (r.seconds_below_min_ready - below).abs() <= 1.0 + 0.05 * below,
            "{role}: {}s below against the truth's {below:.1}s: {json}",
            r.seconds_below_min_ready
        );
    }
}

/// Milliseconds with Ready below 1 in `[from, to]` of a truth series.
fn below_ms(series: &[serde_json::Value], from: u64, to: u64) -> u64 {
    let at = |p: &serde_json::Value| p["at_ms"].as_u64().unwrap_or(0);
    let mut total = 0;
    for (i, p) in series.iter().enumerate() {
        let start = at(p).max(from);
        let end = series.get(i + 1).map_or(to, at).min(to);
        if p["ready"].as_u64() == Some(0) && end > start {
            total += end - start;
        }
    }
    total
}
