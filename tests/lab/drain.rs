//! `infera drain` on the upstream lab (one lab, the phases in order): an
//! unknown node and a node selector matching nothing are one clear error
//! each with nothing changed; a ServiceAccount bound to the namespace Role
//! only is refused naming the missing verb, with nothing changed; bound to
//! `infera rbac --drain` it drains the node holding the only decode pod
//! with every role kept Ready and routable; a drain SIGKILLed while it moves decode, rerun, resumes
//! the restart in flight (decode's Deployment rolled exactly once); a
//! StatefulSet pod on the drained node is evicted (plan `evict`, its budget
//! counted by the real disruption controller) and the real StatefulSet
//! controller recreates it, same name, on another node, the set never
//! restarted; a PodDisruptionBudget that never allows is predicted STALL,
//! and forced it times out against the real disruption controller and
//! Eviction API with the node cordoned and the pod still there; with every
//! other node cordoned, draining decode's node is refused as GAP (and the
//! forced run's record left on that node does not force it).
//! LeaderWorkerSets are proven on the sim only (tests/sim/drain_stateful.rs,
//! the plan's unit tests): the lab has no LWS controller.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::lab::{
    Attached, Lab, SCENARIO_NAMESPACE, is_ready, json, lab_or_skip, wait_steady,
};
use crate::common::process::{Killed, lines, read_until, wait_exit};
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

    bad_input_is_one_clear_line_and_changes_nothing(&lab);

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

    let timed = |what: &str, t: Instant| eprintln!("[drain lab] {what}: {:?}", t.elapsed());
    let t = Instant::now();
    sigkill_then_rerun_resumes(&lab, &decode);
    timed("SIGKILL mid-move, rerun", t);
    let t = Instant::now();
    statefulset_pod_is_evicted_and_recreated(&lab);
    timed("StatefulSet pod", t);
    budget_blocks(&lab, &decode);
    no_capacity_is_a_gap(&lab, &decode);
}

/// An unknown node and a node selector that matches nothing, on the real
/// API server (admin rights): one `error:` line each, exit 2, and no node
/// cordoned or annotated.
fn bad_input_is_one_clear_line_and_changes_nothing(lab: &Lab) {
    let cases: [(&[&str], &str); 2] = [
        (&["gpu-node-9"], "node \"gpu-node-9\" not found"),
        (&["-l", "pool=none"], "no node matches -l pool=none"),
    ];
    for (args, expected) in cases {
        let (code, text) = drain(lab, &lab.kubeconfig(), args);
        assert_eq!(code, 2, "{args:?}: {text}");
        assert!(text.contains(expected), "{args:?}: {text}");
        let errors = text.lines().filter(|l| l.starts_with("error:")).count();
        assert_eq!(errors, 1, "{args:?}: {text}");
    }
    let nodes = json(&lab.kubectl(&["get", "nodes", "-o", "json"]));
    for n in nodes["items"].as_array().into_iter().flatten() {
        let name = n["metadata"]["name"].as_str().unwrap_or_default();
        assert!(!cordoned(lab, name), "{name} was cordoned");
        assert_eq!(drain_record(lab, name), None, "{name} has a drain record");
    }
}

/// The Deployment the operator renders for decode: its
/// `deployment.kubernetes.io/revision` (one more per rolled template) and
/// the restart label of the InferaDeployment's decode service (changes
/// once per restart trigger).
fn decode_restarts(lab: &Lab) -> (u64, Option<String>) {
    let dep = json(&lab.kubectl(&["get", "deploy", "llama-decode", "-n", NS, "-o", "json"]));
    let revision = dep["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
        .as_str()
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no revision on deploy/llama-decode: {dep}"));
    let idep = json(&lab.kubectl(&["get", "inferadeployment", "llama", "-n", NS, "-o", "json"]));
    let label = idep["spec"]["services"]["decode"]["podLabels"]["infera.amd.com/restarted-at"]
        .as_str()
        .map(str::to_string);
    (revision, label)
}

fn drain_record(lab: &Lab, node: &str) -> Option<String> {
    let n = json(&lab.kubectl(&["get", "node", node, "-o", "json"]));
    n["metadata"]["annotations"]["infera.amd.com/drain-in-flight"]
        .as_str()
        .map(str::to_string)
}

/// Live pods on `node` in any namespace, by name.
fn live_pods_on(lab: &Lab, node: &str) -> Vec<String> {
    let field = format!("spec.nodeName={node}");
    let all = json(&lab.kubectl(&[
        "get",
        "pods",
        "-A",
        "--field-selector",
        &field,
        "-o",
        "json",
    ]));
    (all["items"].as_array().into_iter().flatten())
        .filter(|p| live(p))
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

/// `infera drain NODE` (admin), SIGKILLed once decode's replacement loads
/// its weights (the move started: the trigger is applied); what it printed.
fn kill_mid_move(lab: &Lab, node: &str) -> String {
    let child = lab
        .infera(&["drain", node, "--kubeconfig"])
        .arg(lab.kubeconfig())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn infera drain");
    let mut child = Killed(child);
    let rx = lines(&mut child.0);
    let seen = read_until(&rx, "weights-loading", |l| l.contains("weights-loading"));
    // `ip netns exec` execs the command: the pid is infera's own.
    let pid = child.0.id().to_string();
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    assert_eq!(comm.trim(), "infera", "pid {pid} is not infera");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status();
    assert!(killed.is_ok_and(|s| s.success()), "kill -KILL {pid}");
    assert_eq!(
        wait_exit(&mut child.0, Duration::from_secs(10)),
        -1,
        "killed"
    );
    seen.join("\n")
}

/// Decode (moved by the first drain) drained again, SIGKILLed mid-move,
/// then the same command rerun: it resumes the restart in flight and
/// finishes; decode's Deployment rolled exactly once.
fn sigkill_then_rerun_resumes(lab: &Lab, first: &str) {
    kubectl_ok(lab, &["uncordon", first]);
    let target = node_with(lab, "infera.amd.com/service", "decode");
    let (revision, earlier) = decode_restarts(lab);
    let seen = kill_mid_move(lab, &target);
    let record = drain_record(lab, &target).unwrap_or_else(|| panic!("no record:\n{seen}"));
    assert!(record.contains("llm/idep/llama/decode"), "{record}");
    assert!(cordoned(lab, &target), "{seen}");
    let applied = decode_restarts(lab).1;
    assert!(
        applied.is_some() && applied != earlier,
        "no restart applied:\n{seen}"
    );
    let (code, text) = drain(lab, &lab.kubeconfig(), &[&target]);
    assert_eq!(code, 0, "rerun:\n{text}");
    assert!(text.contains("Resuming the drain"), "{text}");
    assert!(text.contains("resuming: trigger already applied"), "{text}");
    assert_eq!(
        decode_restarts(lab),
        (revision + 1, applied),
        "decode restarted exactly once\n{text}"
    );
    assert!(cordoned(lab, &target));
    assert_eq!(drain_record(lab, &target), None, "{text}");
    assert_eq!(live_pods_on(lab, &target), Vec::<String>::new(), "{text}");
    kubectl_ok(lab, &["uncordon", &target]);
}

/// (node, uid, Ready) of each live `app=db` pod, by name.
fn db_pods(lab: &Lab) -> BTreeMap<String, (String, String, bool)> {
    (pods(lab).iter())
        .filter(|p| live(p) && p["metadata"]["labels"]["app"] == "db")
        .map(|p| {
            let uid = p["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let name = p["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            (name, (node_of(p), uid, is_ready(p)))
        })
        .collect()
}

/// Until `db-0` and `db-1` are Ready and the budget allows one disruption
/// (the real disruption controller counts the set's 2 replicas).
fn wait_db(lab: &Lab, why: &str) -> BTreeMap<String, (String, String, bool)> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let db = db_pods(lab);
        let pdb = json(&lab.kubectl(&["get", "pdb", "db", "-n", NS, "-o", "json"]));
        let ready = ["db-0", "db-1"]
            .iter()
            .all(|n| db.get(*n).is_some_and(|p| p.2));
        if ready && pdb["status"]["disruptionsAllowed"] == 1 {
            return db;
        }
        assert!(Instant::now() < deadline, "{why}: {db:?} {}", pdb["status"]);
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `sts/db`: two plain pods on two nodes (required anti-affinity), a
/// budget of `maxUnavailable: 1`.
fn create_db(lab: &Lab) {
    let labels = j!({"app": "db"});
    apply(
        lab,
        &j!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": NS},
        "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {
                "tolerations": [{"key": "infera.amd.com/simulated-node", "operator": "Exists", "effect": "NoSchedule"}],
                "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}]}},
                "containers": [{"name": "db", "image": "nginx:1.27"}]}}}}),
    );
    apply(
        lab,
        &j!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "db", "namespace": NS},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}}}),
    );
}

/// A StatefulSet pod on the drained node: `evict` in the plan, evicted
/// through the Eviction API (the set never restarted: `db-1` keeps its
/// UID), and the real StatefulSet controller recreates `db-0` on another
/// node.
fn statefulset_pod_is_evicted_and_recreated(lab: &Lab) {
    create_db(lab);
    let before = wait_db(lab, "sts/db never settled");
    let target = before["db-0"].0.clone();
    assert_ne!(before["db-1"].0, target, "{before:?}");
    let args = [target.as_str(), "--pod-selector", "app=db"];
    let (code, text) = drain(lab, &lab.kubeconfig(), &args);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("sts/db → evict"), "{text}");
    assert!(text.contains("db (1)"), "the budget in the plan: {text}");
    assert!(text.contains(&format!("evicted {NS}/db-0")), "{text}");
    assert!(
        !text.contains("moving"),
        "never restarted as a whole: {text}"
    );
    assert!(cordoned(lab, &target));
    let after = wait_db(lab, "db-0 never came back");
    assert_ne!(
        after["db-0"].1, before["db-0"].1,
        "db-0 replaced: {after:?}"
    );
    assert_ne!(after["db-0"].0, target, "db-0 elsewhere: {after:?}");
    assert_eq!(
        after["db-1"].1, before["db-1"].1,
        "db-1 untouched: {after:?}"
    );
    kubectl_ok(lab, &["uncordon", &target]);
    kubectl_ok(lab, &["delete", "pdb", "db", "-n", NS]);
    let gone = [
        "delete",
        "sts",
        "db",
        "-n",
        NS,
        "--cascade=foreground",
        "--timeout=60s",
    ];
    kubectl_ok(lab, &gone);
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
