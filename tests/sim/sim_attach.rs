//! `infera sim attach` (the real binary, a child process) brings the world —
//! GPU nodes, kubelet with real `/ready` listeners, infera operator — to an
//! embedded simulator started without one, only through its kubeconfig; an
//! `infera rollout restart` (the real binary) then completes against it
//! with a Ready and routable pod per role at every instant, its
//! `ready-via-proxy` steps answered by the pods' real listeners through the
//! API's pod proxy; `--cleanup` removes the simulated nodes.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use infera_sim::{RunningSim, SimOptions};
use infera_sim_core::kind::Kind;
use infera_sim_scenario::Scenario;
use infera_sim_world::SIMULATED_NODE_LABEL;
use serde_json::Value;

use crate::common::process::{self, lines, wait_exit};

const SPEED: &str = "100";

fn infera(args: &[&str], kubeconfig: &Path) -> Command {
    let mut cmd = process::infera(args);
    cmd.arg("--kubeconfig").arg(kubeconfig).stdin(Stdio::null());
    cmd
}

fn simulated_nodes(sim: &RunningSim) -> Vec<Value> {
    sim.store()
        .list(Kind::Node, None)
        .0
        .into_iter()
        .filter(|n| {
            n.pointer(&format!(
                "/metadata/labels/{}",
                SIMULATED_NODE_LABEL.replace('/', "~1")
            ))
            .is_some()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_brings_the_world_and_a_rollout_completes() {
    let scenario = Scenario::load("pd-1p1d").unwrap_or_else(|e| panic!("{e}"));
    let mut options = SimOptions::new(scenario, 1.0).without_world();
    options.tls = false;
    let sim = RunningSim::start(options)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        sim.store().list(Kind::Node, None).0.is_empty(),
        "no world: no nodes"
    );
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig)
        .unwrap_or_else(|e| panic!("{e}"));

    let attach_args = [
        "sim",
        "attach",
        "--scenario",
        "pd-1p1d",
        "--speed",
        SPEED,
        "--pod-cidr",
        "127.77.0.0/16",
    ];
    let mut attach = infera(&attach_args, &kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn infera sim attach: {e}"));
    let attach_log = lines(&mut attach);
    let steady = infera::demo::wait_steady(sim.store(), "llm", Duration::from_secs(90)).await;
    let early: Vec<String> = attach_log.try_iter().collect();
    assert!(
        steady,
        "the attached world never reached steady state:\n{}",
        early.join("\n")
    );
    let nodes = simulated_nodes(&sim);
    assert_eq!(nodes.len(), 3, "pd-1p1d's three nodes, labelled");
    let taint = nodes[0]
        .pointer("/spec/taints")
        .map(Value::to_string)
        .unwrap_or_default();
    assert!(taint.contains(SIMULATED_NODE_LABEL), "{taint}");

    let report_path = dir.path().join("report.json");
    let report_arg = report_path.display().to_string();
    let kc = kubeconfig.clone();
    let (code, log) = tokio::task::spawn_blocking(move || {
        let mut child = infera(
            &[
                "rollout",
                "restart",
                "idep/llama",
                "--yes",
                "--report",
                &report_arg,
            ],
            &kc,
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn infera rollout: {e}"));
        let rx = lines(&mut child);
        let code = wait_exit(&mut child, Duration::from_secs(180));
        let mut seen = Vec::new();
        while let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            seen.push(line);
        }
        (code, seen.join("\n"))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(code, 0, "rollout against the attached world:\n{log}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap_or_default())
            .unwrap_or_else(|e| panic!("report.json: {e}\n{log}"));
    assert_eq!(report["outcome"], "complete", "{report}");
    for role in report["roles"].as_array().into_iter().flatten() {
        assert!(role["min_ready_exact"].as_u64() >= Some(1), "{role}");
        assert!(role["min_routable_exact"].as_u64() >= Some(1), "{role}");
    }
    let proxied = report["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["kind"] == "ready-via-proxy")
        .count();
    assert!(proxied >= 2, "a ready-via-proxy step per worker: {report}");

    // Ctrl-C: attach removes what it created and exits 0.
    let pid = attach.id().to_string();
    let killed = Command::new("kill").args(["-INT", &pid]).status();
    assert!(killed.is_ok_and(|s| s.success()), "kill -INT {pid}");
    let code =
        tokio::task::spawn_blocking(move || wait_exit(&mut attach, Duration::from_secs(120)))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(code, 0, "attach after Ctrl-C");
    assert!(
        simulated_nodes(&sim).is_empty(),
        "Ctrl-C removed the simulated nodes"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_removes_only_the_simulated_nodes() {
    let scenario = Scenario::load("pd-1p1d").unwrap_or_else(|e| panic!("{e}"));
    let mut options = SimOptions::new(scenario, 1.0).without_world();
    options.tls = false;
    let sim = RunningSim::start(options)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig)
        .unwrap_or_else(|e| panic!("{e}"));
    // A node that is not ours stays.
    let other =
        serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-0"}});
    sim.store()
        .create(Kind::Node, other)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut attach = infera(
        &[
            "sim",
            "attach",
            "--scenario",
            "pd-1p1d",
            "--speed",
            SPEED,
            "--pod-cidr",
            "127.77.0.0/16",
        ],
        &kubeconfig,
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap_or_else(|e| panic!("spawn: {e}"));
    let start = Instant::now();
    while simulated_nodes(&sim).len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "attach created no nodes"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = attach.kill();
    let _ = attach.wait();
    let kc = kubeconfig.clone();
    let code = tokio::task::spawn_blocking(move || {
        infera(
            &["sim", "attach", "--scenario", "pd-1p1d", "--cleanup"],
            &kc,
        )
        .status()
        .map(|s| s.code().unwrap_or(-1))
        .unwrap_or(-1)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(code, 0);
    assert!(
        simulated_nodes(&sim).is_empty(),
        "--cleanup removed the simulated nodes"
    );
    let names: Vec<String> = sim
        .store()
        .list(Kind::Node, None)
        .0
        .iter()
        .filter_map(|n| {
            n.pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect();
    assert_eq!(
        names,
        ["gpu-node-0"],
        "the node attach did not create is left alone"
    );
    assert!(
        sim.store()
            .get(Kind::InferaDeployment, Some("llm"), "llama")
            .is_none()
    );
    sim.shutdown().await;
}
