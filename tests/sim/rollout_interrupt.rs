//! Ctrl-C during `infera rollout` (the real binary, SIGINT sent by the
//! test) at each step of a surge: exit 130, every role keeps a Ready pod,
//! and running the same command again resumes and completes.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use infera_sim_store::Store;

use crate::common::process::{infera, lines, read_until, wait_exit};
use crate::common::sim::{Sim, ready_pods};

/// Slow enough that each step is a separate moment in wall time.
const SPEED: f64 = 60.0;

fn ready_per_service(store: &Store, ns: &str) -> Vec<(String, usize)> {
    ["prefill", "decode"]
        .iter()
        .map(|service| (service.to_string(), ready_pods(store, ns, service).len()))
        .collect()
}

fn spawn_rollout(kubeconfig: &std::path::Path) -> Child {
    infera(&["rollout", "restart", "idep/llama", "--yes", "--kubeconfig"])
        .arg(kubeconfig)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn infera")
}

async fn interrupt_at(step: &str) {
    let sim = Sim::start("pd-1p1d", SPEED).await;
    let kubeconfig = sim.kubeconfig.clone();
    let store = sim.store().clone();

    let (code, seen, ready_after) = tokio::task::spawn_blocking({
        let kubeconfig = kubeconfig.clone();
        let step = step.to_string();
        move || {
            let mut child = spawn_rollout(&kubeconfig);
            let rx = lines(&mut child);
            let mut seen = read_until(&rx, &format!("`{step}`"), |line| {
                line.split_whitespace().any(|w| w == step)
            });
            let pid = child.id().to_string();
            let killed = Command::new("kill").args(["-INT", &pid]).status();
            assert!(killed.is_ok_and(|s| s.success()), "kill -INT {pid}");
            let code = wait_exit(&mut child, Duration::from_secs(30));
            while let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
                seen.push(line);
            }
            let ready_after = ready_per_service(&store, "llm");
            (code, seen, ready_after)
        }
    })
    .await
    .unwrap();
    let log = seen.join("\n");
    assert_eq!(code, 130, "interrupted at {step}:\n{log}");
    assert!(log.contains("INTERRUPTED"), "{log}");
    for (service, n) in &ready_after {
        assert!(
            *n >= 1,
            "{service} has no Ready pod after Ctrl-C at {step}:\n{log}"
        );
    }

    // The same command again resumes the interrupted rollout and completes.
    let (code, log) = tokio::task::spawn_blocking(move || {
        let mut child = spawn_rollout(&kubeconfig);
        let rx = lines(&mut child);
        let code = wait_exit(&mut child, Duration::from_secs(90));
        let mut seen = Vec::new();
        while let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            seen.push(line);
        }
        (code, seen.join("\n"))
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "resume after Ctrl-C at {step}:\n{log}");
    assert!(log.contains("resum"), "the rerun resumed:\n{log}");
    assert!(log.contains("never fewer than 1 Ready"), "{log}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_at_surge_created() {
    interrupt_at("surge-created").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_while_weights_load() {
    interrupt_at("weights-loading").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_at_ready() {
    interrupt_at("ready").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_while_old_pod_terminates() {
    interrupt_at("old-terminating").await;
}
