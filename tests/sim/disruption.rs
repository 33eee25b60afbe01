//! PodDisruptionBudgets, the Eviction API and the node lifecycle on the
//! embedded simulator: the budget's status as upstream's disruption
//! controller computes it, the Eviction API's answers (429, 500, the
//! unhealthy-pod policy), the real `kubectl drain` held back by a budget
//! and let through when it allows, and a stopped kubelet's node turning
//! `Ready=Unknown` after the 50 s grace period. `tests/lab/disruption.rs`
//! runs the same cases (`tests/common/disruption.rs`) on the lab.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use infera_sim_core::kind::Kind;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::common::disruption::{
    CASES, EVICTION_STEPS, case_statuses, deployment, eviction_answers, patch_budget, ready, until,
};
use crate::common::sim::Sim;

const NS: &str = "llm";

/// `pd-1p1d` at speed 20 over HTTPS (kubectl sends its token only over
/// TLS), with these Deployments (name, replicas) Ready.
async fn start_with(apps: &[(&str, i32)]) -> (Sim, kube::Client) {
    let mut options = crate::common::sim::options("pd-1p1d", 20.0);
    options.tls = true;
    let sim = Sim::with(options).await;
    // kube retries 429 itself (up to 15 times, backing off to 1000 s):
    // these tests read each answer, as kubectl drain does.
    let mut config = sim
        .sim
        .client_config()
        .await
        .unwrap_or_else(|e| panic!("client config: {e}"));
    config.default_retry = false;
    let client = kube::Client::try_from(config).unwrap_or_else(|e| panic!("client: {e}"));
    let api: Api<Deployment> = Api::namespaced(client.clone(), NS);
    for (name, replicas) in apps {
        let d = deployment(NS, name, *replicas, &json!({}));
        api.create(&PostParams::default(), &d)
            .await
            .unwrap_or_else(|e| panic!("create {name}: {e}"));
    }
    for (name, replicas) in apps {
        let want = usize::try_from(*replicas).unwrap_or(0);
        until(
            &format!("{name} Ready"),
            Duration::from_secs(60),
            || async { (ready(&client, NS, name).await.len() == want).then_some(()) },
        )
        .await;
    }
    (sim, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_status_is_what_upstream_computes() {
    let (sim, client) = start_with(&[("web", 3)]).await;
    let got = case_statuses(&client, NS).await;
    let want: Vec<(String, (i32, i32, i32, i32))> = CASES
        .iter()
        .map(|(name, .., counts)| ((*name).to_string(), *counts))
        .collect();
    assert_eq!(
        got, want,
        "(expectedPods, desiredHealthy, disruptionsAllowed, currentHealthy)"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evictions_honour_the_budget() {
    let (sim, client) = start_with(&[("web", 3)]).await;
    let answers = eviction_answers(&client, NS).await;
    let got: Vec<(&str, u16, &str)> = answers
        .iter()
        .map(|(step, code, msg)| (step.as_str(), *code, msg.as_str()))
        .collect();
    assert_eq!(got, EVICTION_STEPS);
    // The allowed eviction left upstream's marks: the pod's DisruptionTarget
    // condition, and the pod in the budget's disruptedPods until it went.
    let evicted: Vec<Value> = sim
        .store()
        .list(Kind::Pod, Some(NS))
        .0
        .into_iter()
        .filter(|p| {
            p.pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|c| {
                    c.iter().any(|c| {
                        c["type"] == "DisruptionTarget" && c["reason"] == "EvictionByEvictionAPI"
                    })
                })
        })
        .collect();
    assert!(
        evicted
            .iter()
            .all(|p| p.pointer("/metadata/deletionTimestamp").is_some()),
        "an evicted pod is terminating: {evicted:?}"
    );
    let budget = sim
        .store()
        .get(Kind::PodDisruptionBudget, Some(NS), "web")
        .unwrap_or_else(|| panic!("budget web"));
    assert_eq!(budget["status"]["desiredHealthy"], 2, "{budget}");
    sim.shutdown().await;
}

fn kubectl_bin() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("kubectl"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("INFERA_KUBECTL_REQUIRED").is_none(),
            "INFERA_KUBECTL_REQUIRED is set but kubectl is not on PATH"
        );
        eprintln!("skipping: kubectl is not on PATH (Debian: apt-get install kubernetes-client)");
    }
    found
}

/// `kubectl ARGS` against `sim`: (exit code, stdout, stderr).
async fn kubectl(bin: &PathBuf, sim: &Sim, args: &[&str]) -> (Option<i32>, String, String) {
    let output = tokio::process::Command::new(bin)
        .arg("--kubeconfig")
        .arg(sim.kubeconfig())
        .arg("--cache-dir")
        .arg(sim.path("kube-cache"))
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), output)
        .await
        .unwrap_or_else(|_| panic!("kubectl {args:?} did not finish in 120 s"))
        .unwrap_or_else(|e| panic!("kubectl: {e}"));
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

/// The `web` pods: (name, node), in name order.
fn web_pods(sim: &Sim) -> Vec<(String, String)> {
    let at = |p: &Value, ptr: &str| {
        p.pointer(ptr)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let mut pods: Vec<(String, String)> = sim
        .store()
        .list(Kind::Pod, Some(NS))
        .0
        .iter()
        .filter(|p| p.pointer("/metadata/labels/app") == Some(&json!("web")))
        .map(|p| (at(p, "/metadata/name"), at(p, "/spec/nodeName")))
        .collect();
    pods.sort();
    pods
}

/// The node every `web` pod is on (the sim's scheduler packs them).
fn web_node(sim: &Sim) -> String {
    let nodes: Vec<String> = web_pods(sim).into_iter().map(|(_, node)| node).collect();
    assert!(
        !nodes.is_empty() && nodes.iter().all(|n| *n == nodes[0]),
        "web pods on {nodes:?}"
    );
    nodes[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_drain_waits_for_the_budget() {
    let Some(bin) = kubectl_bin() else { return };
    let (sim, client) = start_with(&[("web", 2)]).await;
    let node = web_node(&sim);
    let budget = crate::common::disruption::budget(NS, "web", Some("2"), None, "web");
    let api: Api<k8s_openapi::api::policy::v1::PodDisruptionBudget> =
        Api::namespaced(client.clone(), NS);
    api.create(&PostParams::default(), &budget)
        .await
        .unwrap_or_else(|e| panic!("create budget: {e}"));
    crate::common::disruption::observed(&client, NS, "web").await;
    let (code, table, stderr) = kubectl(&bin, &sim, &["get", "pdb", "-n", NS]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let row: Vec<&str> = table
        .lines()
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(row.get(..4), Some(&["web", "2", "N/A", "0"][..]), "{table}");
    let before = web_pods(&sim);
    let drain = [
        "drain",
        &node,
        "--ignore-daemonsets",
        "--pod-selector=app=web",
    ];
    let (code, _, stderr) = kubectl(&bin, &sim, &[&drain[..], &["--timeout=7s"]].concat()).await;
    assert_ne!(code, Some(0), "a drain past the budget must not succeed");
    assert!(
        stderr.contains("Cannot evict pod as it would violate the pod's disruption budget.")
            && stderr.contains("will retry after 5s"),
        "{stderr}"
    );
    assert_eq!(web_pods(&sim), before, "nothing evicted");
    assert_eq!(ready(&client, NS, "web").await.len(), 2);
    // The budget allows one: the drain goes one pod at a time, each next
    // eviction refused until the replacement is Ready on another node.
    patch_budget(&client, NS, "web", json!({"minAvailable": 1})).await;
    let watcher = {
        let client = client.clone();
        tokio::spawn(async move {
            let mut least = usize::MAX;
            loop {
                least = least.min(ready(&client, NS, "web").await.len());
                if least == 0 {
                    return least;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let (code, stdout, stderr) =
        kubectl(&bin, &sim, &[&drain[..], &["--timeout=90s"]].concat()).await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("evicted") && stdout.contains("drained"),
        "{stdout}"
    );
    assert!(
        !watcher.is_finished(),
        "web fell to 0 Ready pods during the drain"
    );
    watcher.abort();
    let moved = sim.store().get(Kind::Node, None, &node).unwrap_or_default();
    assert_eq!(moved["spec"]["unschedulable"], true);
    assert!(
        moved["spec"]["taints"].as_array().is_some_and(|t| t
            .iter()
            .any(|t| t["key"] == "node.kubernetes.io/unschedulable")),
        "cordon taint: {moved}"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_kubelets_node_turns_unknown_after_the_grace_period() {
    let sim = Sim::start("pd-1p1d", 20.0).await;
    let node = "gpu-node-2";
    let stopped = infera_sim_core::clock::now_timestamp();
    sim.stop_kubelet(node);
    let ready = |sim: &Sim| {
        let n = sim.store().get(Kind::Node, None, node).unwrap_or_default();
        n.pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| c["type"] == "Ready").cloned())
            .unwrap_or_default()
    };
    let unknown = until("Ready=Unknown", Duration::from_secs(30), || async {
        let c = ready(&sim);
        (c["status"] == "Unknown").then_some(c)
    })
    .await;
    assert_eq!(unknown["reason"], "NodeStatusUnknown");
    assert_eq!(unknown["message"], "Kubelet stopped posting node status.");
    let at = unknown["lastTransitionTime"].as_str().unwrap_or_default();
    let silent = sim.clock().sim_between(&stopped, at);
    // The grace period is 50 s of scenario time; the controller looks at
    // least every 5 s (its monitor period) once a kubelet has stopped.
    assert!(
        silent >= Duration::from_secs(50) && silent < Duration::from_secs(60),
        "Unknown after {silent:?} of silence"
    );
    let n = sim.store().get(Kind::Node, None, node).unwrap_or_default();
    let taints: Vec<(&str, &str)> = n["spec"]["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            (
                t["key"].as_str().unwrap_or(""),
                t["effect"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(
        taints.contains(&("node.kubernetes.io/unreachable", "NoExecute")),
        "{taints:?}"
    );
    let events = sim.store().list(Kind::Event, Some("default")).0;
    assert!(
        events.iter().any(|e| e["reason"] == "NodeNotReady"
            && e["message"] == format!("Node {node} status is now: NodeNotReady")),
        "no NodeNotReady event"
    );
    let others = sim
        .store()
        .get(Kind::Node, None, "gpu-node-0")
        .unwrap_or_default();
    assert!(
        others["status"]["conditions"].as_array().is_some_and(|c| c
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")),
        "a running kubelet's node stays Ready"
    );
    sim.shutdown().await;
}

/// The step kinds of `service` in a JSON report, in order.
fn step_kinds(report: &Value, service: &str) -> Vec<String> {
    report["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["service"] == service)
        .filter_map(|s| s["kind"].as_str().map(str::to_string))
        .collect()
}

/// Whether `want` appears in `have` in this order (other steps between).
fn in_order(have: &[String], want: &[&str]) -> bool {
    let mut rest = have.iter();
    want.iter().all(|w| rest.any(|h| h == w))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_narrates_a_drain_and_its_gap() {
    let Some(bin) = kubectl_bin() else { return };
    let (sim, _client) = start_with(&[]).await;
    let decode = sim.ready_pods("decode");
    let node = decode
        .first()
        .and_then(|p| p.pointer("/spec/nodeName"))
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no Ready decode pod"))
        .to_string();
    let report = sim.path("audit.json");
    let audit = std::process::Command::new(env!("CARGO_BIN_EXE_infera"))
        .args(["audit", "idep/llama", "-n", NS, "--for", "20s", "--report"])
        .arg(&report)
        .arg("--kubeconfig")
        .arg(sim.kubeconfig())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("infera audit: {e}"));
    // The audit has listed the pods when it says what it audits.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let drain = ["drain", &node, "--ignore-daemonsets", "--timeout=60s"];
    let (code, stdout, stderr) = kubectl(&bin, &sim, &drain).await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    // "The node is shut down": NotReady 50 s (2.5 s real) later.
    sim.stop_kubelet(&node);
    let out = tokio::task::spawn_blocking(move || audit.wait_with_output())
        .await
        .unwrap_or_else(|e| panic!("join: {e}"))
        .unwrap_or_else(|e| panic!("infera audit: {e}"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "a gap is exit 1:\n{text}");
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(&report).unwrap_or_else(|e| panic!("report: {e}")),
    )
    .unwrap_or_else(|e| panic!("report JSON: {e}"));
    let role = report["roles"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["role"] == "decode")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (
            role["min_ready_exact"].as_u64(),
            role["min_routable_exact"].as_u64()
        ),
        (Some(0), Some(0)),
        "{role}"
    );
    let kinds = step_kinds(&report, "decode");
    for want in [
        &["cordoned", "evicted", "deleted", "gone"][..],
        // Ready and routable come in either order (the probe's and the
        // registration's timing).
        &["evicted", "created", "scheduled", "ready"],
        &["evicted", "created", "scheduled", "routable"],
        &["cordoned", "node-not-ready"],
    ] {
        assert!(in_order(&kinds, want), "{want:?} in {kinds:?}");
    }
    assert!(
        text.contains("evicted"),
        "the human output tells the steps:\n{text}"
    );
    sim.shutdown().await;
}
