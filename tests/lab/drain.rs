//! `infera drain` on the upstream lab (one lab, the phases in order): a
//! ServiceAccount bound to the namespace Role only is refused naming the
//! missing verb, with nothing changed; bound to `infera rbac --drain` it
//! drains the node holding the only decode pod with every role kept Ready
//! and routable; a PodDisruptionBudget that never allows is predicted
//! STALL, and forced it times out against the real disruption controller
//! and Eviction API with the node cordoned and the pod still there; with
//! every other node cordoned, draining decode's node is refused as GAP
//! (and the forced run's record left on that node does not force it).
//! SIGKILL and resume, and LeaderWorkerSets, are proven on the sim only
//! (tests/sim/drain.rs, the plan's unit tests): the lab has no LWS controller.

use std::path::Path;
use std::time::Instant;

use crate::common::lab::{Attached, Lab, SCENARIO_NAMESPACE, json, lab_or_skip, wait_steady};
use serde_json::{Value, json as j};

const NS: &str = SCENARIO_NAMESPACE;

fn kubectl_ok(lab: &Lab, args: &[&str]) -> Value {
    let out = lab.kubectl(args);
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn apply(lab: &Lab, object: &Value) {
    let file = lab.dir.path().join("object.json");
    std::fs::write(&file, object.to_string()).expect("write object");
    kubectl_ok(lab, &["apply", "-f", file.to_str().unwrap_or_default()]);
}

fn pods(lab: &Lab) -> Vec<Value> {
    json(&lab.kubectl(&["get", "pods", "-n", NS, "-o", "json"]))["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn node_of(p: &Value) -> String {
    p["spec"]["nodeName"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn live(p: &Value) -> bool {
    p["metadata"]["deletionTimestamp"].is_null()
}

fn node_with(lab: &Lab, label: &str, value: &str) -> String {
    pods(lab)
        .iter()
        .find(|p| live(p) && p["metadata"]["labels"][label] == value)
        .map(node_of)
        .unwrap_or_else(|| panic!("no pod {label}={value}"))
}

fn cordoned(lab: &Lab, node: &str) -> bool {
    json(&lab.kubectl(&["get", "node", node, "-o", "json"]))["spec"]["unschedulable"] == true
}

fn drain(lab: &Lab, kubeconfig: &Path, args: &[&str]) -> (i32, String) {
    let out = lab
        .infera(&["drain"])
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .output()
        .expect("run infera drain");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn rbac(lab: &Lab, args: &[&str]) -> Vec<Value> {
    let out = lab
        .infera(&["rbac", "-n", NS, "-o", "json"])
        .args(args)
        .output()
        .expect("infera rbac");
    json(&out)["items"].as_array().cloned().unwrap_or_default()
}

#[test]
fn drain_on_the_real_control_plane() {
    let Some(lab) = lab_or_skip("drain_on_the_real_control_plane") else {
        return;
    };
    let _attached = Attached::start(&lab, "pd-1p1d");
    wait_steady(&lab, NS, 3);
    kubectl_ok(&lab, &["create", "serviceaccount", "infera", "-n", NS]);
    let decode = node_with(&lab, "infera.amd.com/service", "decode");

    // Namespace Role only: no right on nodes. Refused, naming the verb.
    rbac(&lab, &[]).iter().take(2).for_each(|o| apply(&lab, o));
    let (sa, _) = lab.sa_kubeconfig(NS, "infera");
    let (code, text) = drain(&lab, &sa, &[&decode]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("forbidden: cannot list nodes"), "{text}");
    assert!(text.contains("infera rbac --drain"), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("error:")).count(),
        1,
        "{text}"
    );
    assert!(!cordoned(&lab, &decode));

    // `infera rbac --drain`: enough for the whole drain.
    rbac(&lab, &["--drain"]).iter().for_each(|o| apply(&lab, o));
    let report = lab.dir.path().join("drain.json");
    let started = Instant::now();
    let (code, text) = drain(
        &lab,
        &sa,
        &[&decode, "--report", report.to_str().unwrap_or_default()],
    );
    eprintln!(
        "drain of {decode} (only decode pod) took {:?}",
        started.elapsed()
    );
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("idep/llama decode → move"), "{text}");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap_or_default())
            .unwrap_or_else(|e| panic!("report: {e}"));
    for r in written
        .pointer("/targets/0/roles")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        assert_eq!(r["min_ready_exact"], 1, "{r}");
        assert_eq!(r["min_routable_exact"], 1, "{r}");
    }
    assert!(cordoned(&lab, &decode));
    assert!(
        !pods(&lab).iter().any(|p| live(p) && node_of(p) == decode),
        "pods left on {decode}"
    );

    budget_blocks(&lab, &decode);
    no_capacity_is_a_gap(&lab, &decode);
}

/// A budget of maxUnavailable 0 on the prefill worker, drained with
/// `--min-ready 0` so that eviction (not a move) is the path: the real
/// disruption controller and Eviction API refuse it.
fn budget_blocks(lab: &Lab, already: &str) {
    kubectl_ok(lab, &["uncordon", already]);
    apply(
        lab,
        &j!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "prefill", "namespace": NS},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"infera.amd.com/service": "prefill"}}}}),
    );
    let target = node_with(lab, "infera.amd.com/service", "prefill");
    let admin = lab.kubeconfig();
    let only = [
        "--pod-selector",
        "infera.amd.com/service=prefill",
        "--min-ready",
        "0",
    ];
    let mut args = vec![target.as_str()];
    args.extend(only);
    let (code, text) = drain(lab, &admin, &args);
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("idep/llama prefill → STALL"), "{text}");
    assert!(!cordoned(lab, &target), "{text}");
    let before = prefill_pods_on(lab, &target);
    args.extend(["--force", "--timeout", "12s"]);
    let (code, text) = drain(lab, &admin, &args);
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("refused (429)"), "{text}");
    assert!(text.contains("stay cordoned"), "{text}");
    assert!(cordoned(lab, &target));
    assert_eq!(prefill_pods_on(lab, &target), before, "{text}");
    kubectl_ok(lab, &["uncordon", &target]);
    kubectl_ok(lab, &["delete", "pdb", "prefill", "-n", NS]);
}

fn prefill_pods_on(lab: &Lab, node: &str) -> Vec<String> {
    pods(lab)
        .iter()
        .filter(|p| {
            live(p)
                && node_of(p) == node
                && p["metadata"]["labels"]["infera.amd.com/service"] == "prefill"
        })
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

/// Every other node cordoned: decode's replacement fits nowhere.
fn no_capacity_is_a_gap(lab: &Lab, _first: &str) {
    let decode = node_with(lab, "infera.amd.com/service", "decode");
    let nodes = json(&lab.kubectl(&["get", "nodes", "-o", "json"]));
    for n in nodes["items"].as_array().into_iter().flatten() {
        let name = n["metadata"]["name"].as_str().unwrap_or_default();
        if name != decode {
            kubectl_ok(lab, &["cordon", name]);
        }
    }
    let (code, text) = drain(lab, &lab.kubeconfig(), &[&decode]);
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("GAP"), "{text}");
    assert!(text.contains("no spare capacity"), "{text}");
    assert!(!cordoned(lab, &decode), "{text}");
    assert_eq!(node_with(lab, "infera.amd.com/service", "decode"), decode);
    assert!(!text.contains("evicted"), "{text}");
}
