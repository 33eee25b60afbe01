//! `infera drain` (the real binary) on the embedded simulator: the node
//! holding the only decode pod drained with every role kept serving (the
//! simulator's ground truth, not only infera's report); SIGKILL mid-move and
//! a rerun that resumes without a second restart; no capacity anywhere →
//! GAP, exit 3, nothing changed; a PodDisruptionBudget that never allows →
//! STALL, and forced, a timeout with the node cordoned and the pod still
//! there; bad input → one clear line, exit 2, nothing changed; a rerun
//! after a manual uncordon still resumes; `--timeout` bounds the moves too
//! and names the phase; `--dry-run=server` sends everything with
//! `dryRun=All` and changes nothing; a moved router's role is `router` in
//! the plan and in the move's preflight.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use infera_sim_core::kind::Kind;
use infera_sim_store::Store;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::common::process::{infera, lines, read_until, wait_exit};
use crate::common::sim::{Sim, is_ready, now_ms, pods_of};

const NS: &str = "llm";
const DRAIN_ANNOTATION: &str = "infera.amd.com/drain-in-flight";

pub(crate) fn node_of(pod: &Value) -> String {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The grace period of the worker's rendered Deployment (the operator's).
pub(crate) fn grace_of_worker(sim: &Sim) -> i64 {
    sim.store()
        .get(Kind::Deployment, Some(NS), "llama-worker")
        .and_then(|d| {
            d.pointer("/spec/template/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or_else(|| panic!("no grace period on deploy/llama-worker"))
}

/// The node of the (only) pod of `service`.
pub(crate) fn node_holding(store: &Store, service: &str) -> String {
    let pods = pods_of(store, NS, service);
    assert_eq!(pods.len(), 1, "one {service} pod: {pods:?}");
    node_of(&pods[0])
}

fn node(store: &Store, name: &str) -> Value {
    store
        .get(Kind::Node, None, name)
        .unwrap_or_else(|| panic!("node {name}"))
}

pub(crate) fn cordoned(store: &Store, name: &str) -> bool {
    node(store, name).pointer("/spec/unschedulable") == Some(&json!(true))
}

fn drain_record(store: &Store, name: &str) -> Option<String> {
    node(store, name)
        .pointer(&format!(
            "/metadata/annotations/{}",
            DRAIN_ANNOTATION.replace('/', "~1")
        ))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Pods on `node` not being deleted, by name.
fn live_pods_on(store: &Store, node: &str) -> Vec<String> {
    let mut names: Vec<String> = (store.list(Kind::Pod, None).0.iter())
        .filter(|p| node_of(p) == node && p.pointer("/metadata/deletionTimestamp").is_none())
        .filter_map(|p| p.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    names.sort();
    names
}

fn drain_cmd(kubeconfig: &Path, args: &[&str]) -> Command {
    let mut cmd = infera(&["drain"]);
    cmd.args(args).arg("--kubeconfig").arg(kubeconfig);
    cmd.stdin(Stdio::null());
    cmd
}

pub(crate) async fn run(kubeconfig: &Path, args: &[&str]) -> (i32, String) {
    let mut cmd = drain_cmd(kubeconfig, args);
    let out: Output = tokio::task::spawn_blocking(move || cmd.output().expect("run infera"))
        .await
        .expect("join");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// The simulator's own minimum of Ready and routable per role of
/// idep/llama between `from` and `to` (ms).
fn truth_minima(sim: &Sim, from: u64, to: u64) -> Vec<(String, u32, u32)> {
    ["prefill", "decode"]
        .iter()
        .map(|role| {
            let (ready, routable, _, _) = sim
                .truth()
                .window(&format!("{NS}/llama/{role}"), from, to, 1)
                .unwrap_or_else(|| panic!("no truth for {role}"));
            (role.to_string(), ready, routable)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draining_the_only_decode_pods_node_keeps_every_role_serving() {
    let sim = Sim::start("pd-1p1d", 20.0).await;
    let target = node_holding(sim.store(), "decode");
    let report = sim.path("drain.json");
    let from = now_ms();
    let (code, text) = run(
        sim.kubeconfig(),
        &[
            &target,
            "--ignore-daemonsets",
            "-o",
            "json",
            "--report",
            report.to_str().unwrap_or_default(),
        ],
    )
    .await;
    let to = now_ms();
    assert_eq!(code, 0, "{text}");
    // The plan said move, and the replacement came up elsewhere first.
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let plan = events
        .iter()
        .find(|e| e["event"] == "drain-plan")
        .unwrap_or_else(|| panic!("no drain-plan event: {text}"));
    assert_eq!(plan["nodes"], json!([target]), "{plan}");
    let decode = (plan["workloads"].as_array().into_iter().flatten())
        .find(|w| w["workload"] == "idep/llama decode")
        .unwrap_or_else(|| panic!("{plan}"));
    assert_eq!(decode["verdict"], "move", "{decode}");
    // One replica, no budget: lint's live-only IR014, the verdict unchanged.
    let finding = decode["findings"][0].as_str().unwrap_or_default();
    assert!(
        finding.starts_with("IR014 single-replica-no-budget"),
        "{decode}"
    );
    assert_eq!(
        (
            decode["ready_now"].as_u64(),
            decode["ready_without"].as_u64()
        ),
        (Some(1), Some(0))
    );
    let result = events
        .last()
        .unwrap_or_else(|| panic!("no JSON line: {text}"));
    assert_eq!(result["event"], "result", "{text}");
    assert_eq!(result["exit"], 0, "{text}");
    for (role, ready, routable) in truth_minima(&sim, from, to) {
        let series = sim.truth().series().remove(&format!("{NS}/llama/{role}"));
        assert!(
            ready >= 1 && routable >= 1,
            "truth: {role} fell to {ready} Ready / {routable} routable between {from} and {to}: \
             {series:?}\n{text}"
        );
    }
    // infera's own report says the same, per role.
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap_or_default())
            .unwrap_or_else(|e| panic!("report: {e}"));
    let roles = written
        .pointer("/targets/0/roles")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    assert_eq!(roles.len(), 2, "{written}");
    for r in &roles {
        assert_eq!(r["min_ready_exact"], 1, "{r}");
        assert_eq!(r["min_routable_exact"], 1, "{r}");
    }
    assert!(cordoned(sim.store(), &target));
    assert_eq!(
        drain_record(sim.store(), &target),
        None,
        "the record is cleared"
    );
    assert_eq!(live_pods_on(sim.store(), &target), Vec::<String>::new());
    let decode = pods_of(sim.store(), NS, "decode");
    assert!(decode.iter().any(|p| is_ready(p) && node_of(p) != target));
    sim.shutdown().await;
}

/// The value of the restart label the rollout trigger put on the decode
/// service (changes once per restart).
fn restart_label(store: &Store) -> Option<String> {
    store
        .get(Kind::InferaDeployment, Some(NS), "llama")?
        .pointer("/spec/services/decode/podLabels/infera.amd.com~1restarted-at")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Start `infera drain TARGET`, SIGKILL it once the decode replacement
/// loads its weights; what it printed.
async fn kill_mid_move(kubeconfig: &Path, target: &str) -> String {
    let (kubeconfig, target) = (kubeconfig.to_path_buf(), target.to_string());
    tokio::task::spawn_blocking(move || {
        let mut child = drain_cmd(&kubeconfig, &[&target])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn infera");
        let rx = lines(&mut child);
        let seen = read_until(&rx, "weights-loading", |line| {
            line.contains("weights-loading")
        });
        let pid = child.id().to_string();
        let killed = Command::new("kill").args(["-KILL", &pid]).status();
        assert!(killed.is_ok_and(|s| s.success()), "kill -KILL {pid}");
        wait_exit(&mut child, Duration::from_secs(10));
        seen.join("\n")
    })
    .await
    .expect("join")
}

/// pd-1p1d with a drain of the decode pod's node SIGKILLed mid-move:
/// the simulator, the node, and the restart label the move applied.
async fn killed_mid_move() -> (Sim, String, String) {
    let sim = Sim::start("pd-1p1d", 30.0).await;
    let target = node_holding(sim.store(), "decode");
    let seen = kill_mid_move(sim.kubeconfig(), &target).await;
    let store = sim.store();
    let first = restart_label(store).unwrap_or_else(|| panic!("no restart applied:\n{seen}"));
    let record = drain_record(store, &target).unwrap_or_else(|| panic!("no record:\n{seen}"));
    assert!(record.contains("llm/idep/llama/decode"), "{record}");
    (sim, target, first)
}

/// A rerun's output: it resumed the move in flight and restarted nothing
/// again.
fn assert_resumed(code: i32, text: &str, store: &Store, first: &str) {
    assert_eq!(code, 0, "rerun:\n{text}");
    assert!(text.contains("Resuming the drain"), "{text}");
    assert!(text.contains("resuming: trigger already applied"), "{text}");
    assert_eq!(
        restart_label(store).as_deref(),
        Some(first),
        "restarted a second time:\n{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_move_then_rerun_resumes_without_a_second_restart() {
    let (sim, target, first) = killed_mid_move().await;
    let store = sim.store();
    assert!(cordoned(store, &target));
    // The killed run's report file, where the rerun writes its own.
    let report = sim.path("drain.json");
    std::fs::write(&report, "{}").unwrap_or_else(|e| panic!("{e}"));
    let report_arg = report.display().to_string();
    let from = now_ms();
    let (code, text) = run(sim.kubeconfig(), &[&target, "--report", &report_arg]).await;
    let to = now_ms();
    assert_resumed(code, &text, store, &first);
    // It says its report covers only itself, and that it replaced the file.
    assert!(
        text.contains("note: this run resumed the drain started at "),
        "{text}"
    );
    let replaced = format!("note: {report_arg} already exists and is replaced");
    assert!(text.contains(&replaced), "{replaced:?} in\n{text}");
    for (role, ready, routable) in truth_minima(&sim, from, to) {
        assert!(
            ready >= 1 && routable >= 1,
            "{role} fell to {ready}/{routable}\n{text}"
        );
    }
    assert_eq!(live_pods_on(store, &target), Vec::<String>::new());
    assert_eq!(drain_record(store, &target), None);
    // A third run finds nothing to do and restarts nothing.
    let (code, text) = run(sim.kubeconfig(), &[&target]).await;
    assert_eq!(code, 0, "{text}");
    assert_eq!(restart_label(store), Some(first), "{text}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_after_a_manual_uncordon_resumes_without_a_second_restart() {
    let (sim, target, first) = killed_mid_move().await;
    let store = sim.store();
    // What `kubectl uncordon` sends (its two-way merge patch).
    let uncordon = json!({"spec": {"unschedulable": null}});
    Api::<Node>::all(sim.client().await)
        .patch(&target, &PatchParams::default(), &Patch::Merge(&uncordon))
        .await
        .expect("uncordon");
    assert!(!cordoned(store, &target));
    let record = drain_record(store, &target).unwrap_or_default();
    assert!(
        record.contains("llm/idep/llama/decode"),
        "record lost: {record}"
    );
    let (code, text) = run(sim.kubeconfig(), &[&target]).await;
    assert_resumed(code, &text, store, &first);
    assert!(cordoned(store, &target), "the rerun cordons again\n{text}");
    assert_eq!(live_pods_on(store, &target), Vec::<String>::new());
    assert_eq!(drain_record(store, &target), None);
    sim.shutdown().await;
}

/// The router (`componentType: server`, no `role`) moved off its node:
/// the drain plan and the move's rollout preflight both call its role
/// `router`, the manifest's word, never the workers' default `mixed`, and
/// both count its Ready as serving (no GAP for a missing `/ready`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moving_the_router_prints_its_own_role() {
    let sim = Sim::start("pd-1p1d", 20.0).await;
    let target = node_holding(sim.store(), "router");
    let only = "infera.amd.com/service=router";
    let args = [target.as_str(), "--pod-selector", only, "-o", "json"];
    let (code, text) = run(sim.kubeconfig(), &args).await;
    assert_eq!(code, 0, "{text}");
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let of = |kind: &'static str| events.iter().filter(move |e| e["event"] == kind);
    let units: Vec<&Value> = (of("drain-plan").flat_map(|p| p["workloads"].as_array()))
        .flatten()
        .collect();
    let router = units
        .iter()
        .find(|u| u["workload"] == "idep/llama router")
        .unwrap_or_else(|| panic!("no router in the plan: {text}"));
    assert_eq!(
        (&router["verdict"], &router["role"]),
        (&json!("move"), &json!("router"))
    );
    let legs: Vec<&Value> = (of("plan").flat_map(|p| p["legs"].as_array()))
        .flatten()
        .collect();
    assert_eq!(legs.len(), 1, "one move, one leg: {text}");
    assert_eq!(
        (&legs[0]["leg"], &legs[0]["role"]),
        (&json!("router"), &json!("router"))
    );
    // One "serving" rule: the router loads nothing and registers nowhere,
    // so its Ready means serving and the move's preflight sees no gap.
    assert_eq!(legs[0]["verdict"], "ok", "{text}");
    let routers = pods_of(sim.store(), NS, "router");
    assert!(
        routers.iter().all(|p| node_of(p) != target) && routers.iter().any(is_ready),
        "the router moved: {routers:?}"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_bounds_the_whole_drain_and_names_the_phase() {
    let sim = Sim::start("pd-1p1d", 20.0).await;
    let target = node_holding(sim.store(), "decode");
    let before = live_pods_on(sim.store(), &target);
    // The decode replacement loads weights for about 154 s simulated
    // (7.7 s wall at speed 20): the drain is still moving it at 2 s.
    let (code, text) = run(sim.kubeconfig(), &[&target, "--timeout", "2s"]).await;
    assert_eq!(code, 3, "{text}");
    assert!(
        text.contains("TIMEOUT (--timeout 2.0s) while moving idep/llama decode"),
        "{text}"
    );
    assert!(text.contains("stay cordoned"), "{text}");
    assert!(cordoned(sim.store(), &target), "{text}");
    assert!(drain_record(sim.store(), &target).is_some(), "{text}");
    // Surge-first: the old decode pod is still there, nothing evicted.
    assert_eq!(live_pods_on(sim.store(), &target), before, "{text}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_dry_run_sends_everything_with_dry_run_and_changes_nothing() {
    let sim = Sim::start("pd-1p1d", 20.0).await;
    web_with_budget(&sim, 1).await;
    let store = sim.store();
    let target = web_node(store);
    let before = live_pods_on(store, &target);
    let args = [
        target.as_str(),
        "--pod-selector",
        "app=web",
        "--dry-run=server",
    ];
    let (code, text) = run(sim.kubeconfig(), &args).await;
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(&format!("node/{target} cordoned (server dry run)")),
        "{text}"
    );
    assert!(text.contains("evicting pod llm/web-"), "{text}");
    assert!(
        text.contains("accepted the cordon and 1 eviction(s), refused 0; nothing was changed"),
        "{text}"
    );
    assert!(!cordoned(store, &target), "{text}");
    assert_eq!(drain_record(store, &target), None);
    assert_eq!(live_pods_on(store, &target), before, "{text}");
    // A move is planned, not sent.
    let decode_node = node_holding(store, "decode");
    let (code, text) = run(sim.kubeconfig(), &[&decode_node, "--dry-run=server"]).await;
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("idep/llama decode would be moved (a restart through its owner) (server dry run): not sent"),
        "{text}"
    );
    assert_eq!(restart_label(store), None, "{text}");
    assert!(!cordoned(store, &decode_node), "{text}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_capacity_anywhere_is_refused_as_gap_with_nothing_changed() {
    // Each worker is pinned to its node and takes all 8 GPUs.
    let sim = Sim::start("whole-node-pinned", 20.0).await;
    let target = node_holding(sim.store(), "decode");
    let before = live_pods_on(sim.store(), &target);
    let (code, text) = run(sim.kubeconfig(), &[&target]).await;
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("GAP"), "{text}");
    assert!(text.contains("no spare capacity"), "{text}");
    assert!(text.contains("Stopping before any change"), "{text}");
    assert!(!cordoned(sim.store(), &target));
    assert_eq!(drain_record(sim.store(), &target), None);
    assert_eq!(live_pods_on(sim.store(), &target), before);
    sim.shutdown().await;
}

/// Two `web` pods on two nodes (required anti-affinity) and a budget
/// with this `maxUnavailable` (0: it allows no disruption).
async fn web_with_budget(sim: &Sim, max_unavailable: i32) {
    let client = sim.client().await;
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}},
                "containers": [{"name": "web", "image": "nginx:1.27"}]}}}
    }))
    .expect("deployment");
    let budget: PodDisruptionBudget = serde_json::from_value(json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": "web"}}}
    }))
    .expect("budget");
    let params = PostParams::default();
    Api::<Deployment>::namespaced(client.clone(), NS)
        .create(&params, &deployment)
        .await
        .expect("create web");
    Api::<PodDisruptionBudget>::namespaced(client, NS)
        .create(&params, &budget)
        .await
        .expect("create budget");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = (sim.store().list(Kind::Pod, Some(NS)).0.iter())
            .filter(|p| p.pointer("/metadata/labels/app") == Some(&json!("web")) && is_ready(p))
            .count();
        if ready == 2 {
            return;
        }
        assert!(Instant::now() < deadline, "web never had 2 Ready pods");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn web_node(store: &Store) -> String {
    (store.list(Kind::Pod, Some(NS)).0.iter())
        .find(|p| p.pointer("/metadata/labels/app") == Some(&json!("web")))
        .map(node_of)
        .unwrap_or_else(|| panic!("no web pod"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_that_never_allows_is_stall_and_forced_times_out_cordoned() {
    let sim = Sim::start("pd-1p1d", 20.0).await;
    web_with_budget(&sim, 0).await;
    let target = web_node(sim.store());
    let before = live_pods_on(sim.store(), &target);
    let only_web = ["--pod-selector", "app=web"];
    let (code, text) = run(sim.kubeconfig(), &[&target, only_web[0], only_web[1]]).await;
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("deploy/web → STALL"), "{text}");
    assert!(
        text.contains("PodDisruptionBudget web allows no disruption"),
        "{text}"
    );
    assert!(
        !cordoned(sim.store(), &target),
        "refused: nothing changed\n{text}"
    );
    // Forced: the evictions are refused (429) until --timeout; the node
    // stays cordoned and the pod is still there.
    let (code, text) = run(
        sim.kubeconfig(),
        &[
            &target,
            only_web[0],
            only_web[1],
            "--force",
            "--timeout",
            "8s",
        ],
    )
    .await;
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("refused (429)"), "{text}");
    assert!(text.contains("TIMEOUT"), "{text}");
    assert!(text.contains("stay cordoned"), "{text}");
    assert!(cordoned(sim.store(), &target));
    assert_eq!(live_pods_on(sim.store(), &target), before, "{text}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_one_clear_line_and_changes_nothing() {
    let sim = Sim::start("pd-1p1d", 20.0).await;
    let nodes: Vec<String> = (sim.store().list(Kind::Node, None).0.iter())
        .filter_map(|n| n.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    let cases: [(&[&str], &str); 5] = [
        (&["gpu-node-9"], "node \"gpu-node-9\" not found"),
        (&["-l", "pool=none"], "no node matches -l pool=none"),
        (&["gpu-node-0", "-l", "pool=none"], "not both"),
        (
            &["gpu-node-0", "--pod-selector", "app in (a)"],
            "--pod-selector",
        ),
        (
            &["gpu-node-0", "--dry-run=maybe"],
            "Invalid dry-run value (maybe). Must be \"none\", \"server\", or \"client\".",
        ),
    ];
    for (args, expected) in cases {
        let (code, text) = run(sim.kubeconfig(), args).await;
        assert_eq!(code, 2, "{args:?}: {text}");
        assert!(text.contains(expected), "{args:?}: {text}");
        let errors: Vec<&str> = text.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{args:?}: {text}");
    }
    for n in &nodes {
        assert!(!cordoned(sim.store(), n), "{n} was cordoned");
        assert_eq!(drain_record(sim.store(), n), None);
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rbac_drain_prints_the_verbs_drain_uses() {
    let out = infera(&["rbac", "--drain", "-n", "ops", "-o", "json"])
        .output()
        .expect("run infera rbac");
    assert!(out.status.success());
    let list: Value = serde_json::from_slice(&out.stdout).expect("JSON list");
    let items = list["items"].as_array().cloned().unwrap_or_default();
    let drain = items
        .iter()
        .find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == "infera-drain")
        .unwrap_or_else(|| panic!("{list}"));
    let grants = |resource: &str, verb: &str| {
        drain["rules"].as_array().into_iter().flatten().any(|r| {
            r["resources"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|x| x == resource)
                && r["verbs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|x| x == verb)
        })
    };
    for (resource, verb) in [
        ("nodes", "patch"),
        ("nodes", "list"),
        ("pods/eviction", "create"),
        ("poddisruptionbudgets", "list"),
    ] {
        assert!(grants(resource, verb), "{resource} {verb}: {drain}");
    }
    // The rollout rules come cluster-wide: a move may be in any namespace.
    assert!(
        items
            .iter()
            .any(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == "infera")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_drain_measures_kubectls_gap_and_infera_has_none() {
    let dir = tempfile::tempdir().expect("temp dir");
    let timeline = dir.path().join("drain.svg");
    let mut cmd = infera(&["demo", "--scenario", "drain", "--speed", "40", "--timeline"]);
    cmd.arg(&timeline).stdin(Stdio::null());
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("run infera demo"))
        .await
        .expect("join");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{text}");
    // kubectl's way: decode fell to 0 for the weight load (measured).
    let kubectl = text
        .lines()
        .find(|l| l.starts_with("kubectl drain: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(kubectl.contains("fell below"), "{kubectl}");
    let decode_row = text
        .lines()
        .find(|l| l.contains("idep/llama") && l.contains(" decode "))
        .unwrap_or_else(|| panic!("{text}"));
    let cells: Vec<&str> = decode_row.split('┆').map(str::trim).collect();
    assert_eq!(
        cells.get(6),
        Some(&"0"),
        "min Ready exact of decode: {decode_row}"
    );
    // infera's way, on the same cluster: no gap.
    assert!(text.contains("idep/llama decode → move"), "{text}");
    assert!(
        text.contains("never fewer than 1 Ready and 1 routable pod per role"),
        "{text}"
    );
    assert!(timeline.exists());
}
