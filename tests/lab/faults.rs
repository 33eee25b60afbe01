//! Faults on real components. On one upstream lab (real etcd,
//! kube-apiserver, kube-controller-manager and kube-scheduler v1.37.2, with
//! `infera sim attach --scenario pd-1p1d`), `infera rollout restart
//! idep/llama` is run fault-free once, then again with one fault injected
//! mid-rollout (`lab/ctl`):
//!
//! * kube-apiserver killed (SIGKILL) and started again with the same flags;
//! * etcd paused (SIGSTOP) past the apiserver's etcd keepalive (30 s + 10 s),
//!   then resumed;
//! * etcd compacted and kube-apiserver restarted: the driver's resumed
//!   watches get a real `410 Gone`, and a list at the old resourceVersion,
//!   which now reaches etcd, is refused as too old;
//! * kube-controller-manager killed for 30 s: nothing rolls meanwhile, the
//!   driver says the controller is not acting (neither a stall nor success)
//!   and completes once it is back;
//! * Ctrl-C (SIGINT) at each step kind in turn, each rerun resuming.
//!
//! Every run must end with the fault-free run's exact per-role minima
//! (Ready and routable) and leave every role a Ready pod. The same
//! controller outage on the embedded simulator (its controllers stopped) is
//! `controller_down_on_the_embedded_sim`, which needs no lab.
//!
//! Skips with a reason unless `INFERA_LAB_BIN` is set and we are root;
//! `INFERA_LAB_REQUIRED=1` turns the skip into a failure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::lab::{
    Attached, Lab, SCENARIO_NAMESPACE, is_ready, json, lab_or_skip_with, wait_steady,
};
use serde_json::Value;

const TARGET: &str = "idep/llama";
/// router, prefill, decode.
const DEPLOYMENTS: usize = 3;
const ROLES: [&str; 2] = ["prefill", "decode"];
/// How long kube-controller-manager stays down.
const KCM_DOWN: Duration = Duration::from_secs(30);
/// How long etcd stays paused: past the apiserver's etcd keepalive (ping
/// after 30 s idle, dead 10 s later: `keepaliveTime`/`keepaliveTimeout` in
/// k8s.io/apiserver@v0.37.2 pkg/storage/storagebackend/factory/etcd3.go).
const ETCD_PAUSE: Duration = Duration::from_secs(45);
/// No heartbeat (Lease, renewed every 10 s) can be written while etcd is
/// paused: 45 s of pause plus up to 10 s since the last renewal exceeds the
/// default 50 s grace, and the node lifecycle controller then marks a node
/// NotReady (seen on the lab) — as it would on a real cluster, and not
/// because of anything infera does. This lab gives it 120 s.
const KCM_ARGS: (&str, &str) = ("INFERA_LAB_KCM_ARGS", "--node-monitor-grace-period=120s");

/// role → (min Ready exact, min routable exact) from a `--report`.
type Minima = BTreeMap<String, (Option<u64>, Option<u64>)>;

/// One `infera rollout restart` in the lab, its output gathered line by line.
struct Rollout {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    report: PathBuf,
}

impl Rollout {
    fn start(lab: &Lab, name: &str) -> Rollout {
        let report = lab.dir.path().join(format!("report-{name}.json"));
        let _ = std::fs::remove_file(&report);
        let report_arg = report.to_string_lossy().into_owned();
        let mut cmd = lab.infera(&["-v", "rollout", "restart", TARGET, "-n", SCENARIO_NAMESPACE]);
        cmd.args(["--yes", "--report", &report_arg]);
        Rollout::spawn(cmd, report)
    }

    /// Run `cmd`, its stdout and stderr lines gathered in one channel.
    fn spawn(mut cmd: Command, report: PathBuf) -> Rollout {
        let mut child = cmd
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start infera rollout");
        let lines = crate::common::process::lines(&mut child);
        Rollout {
            child,
            lines,
            seen: Vec::new(),
            report,
        }
    }

    fn log(&self) -> String {
        self.seen.join("\n")
    }

    /// Wait for a line that `matches`; returns it.
    fn wait_for(&mut self, what: &str, matches: impl Fn(&str) -> bool, limit: Duration) -> String {
        match self.next_match(&matches, limit) {
            Some(line) => line,
            None => panic!("infera ended before {what}; saw:\n{}", self.log()),
        }
    }

    /// The next line that `matches`, or `None` once infera's output ends
    /// (it exited); panics after `limit`.
    fn next_match(&mut self, matches: impl Fn(&str) -> bool, limit: Duration) -> Option<String> {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let hit = matches(&line);
                    self.seen.push(line.clone());
                    if hit {
                        return Some(line);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return None,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    panic!("nothing expected within {limit:?}; saw:\n{}", self.log())
                }
            }
        }
    }

    fn wait_step(&mut self, kind: &str) -> String {
        self.wait_for(
            &format!("`{kind}` step"),
            |l| is_step(l, kind),
            Duration::from_secs(120),
        )
    }

    /// Whether infera is still running.
    fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Wait for the exit (killing it after `limit`); the exit code.
    fn finish(&mut self, limit: Duration) -> Option<i32> {
        let deadline = Instant::now() + limit;
        let code = loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                break status.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("infera did not exit within {limit:?}:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(300)) {
            self.seen.push(line);
        }
        code
    }

    fn interrupt(&mut self) -> Option<i32> {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-INT", &pid]).status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -INT {pid}");
        self.finish(Duration::from_secs(30))
    }

    /// The report's outcome and per-role exact minima.
    fn report(&self) -> (Option<String>, Minima) {
        read_report(&self.report)
    }
}

/// A `--report` file's outcome and per-role exact minima.
fn read_report(path: &Path) -> (Option<String>, Minima) {
    let report: Value = std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    let minima = report["roles"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["role"].as_str().unwrap_or("?").to_string(),
                (
                    r["min_ready_exact"].as_u64(),
                    r["min_routable_exact"].as_u64(),
                ),
            )
        })
        .collect();
    (report["outcome"].as_str().map(str::to_string), minima)
}

impl Drop for Rollout {
    fn drop(&mut self) {
        if self.running() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A step line: `TIME  +ELAPSED  LEG  KIND  POD  …`.
fn is_step(line: &str, kind: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    words
        .windows(2)
        .any(|w| ROLES.contains(&w[0]) && w[1] == kind)
}

fn ctl(lab: &Lab, action: &str, component: &str) -> String {
    lab.ctl(action, component)
}

/// Ready, not-terminating pods per role, as the lab's kubectl sees them.
fn ready_per_role(lab: &Lab) -> BTreeMap<String, usize> {
    let pods = json(&lab.kubectl(&["get", "pods", "-n", SCENARIO_NAMESPACE, "-o", "json"]));
    let mut n: BTreeMap<String, usize> = ROLES.iter().map(|r| (r.to_string(), 0)).collect();
    for p in pods["items"].as_array().into_iter().flatten() {
        let role = p["metadata"]["labels"]["infera.amd.com/service"]
            .as_str()
            .unwrap_or_default();
        if let Some(c) = n.get_mut(role)
            && is_ready(p)
            && p["metadata"]["deletionTimestamp"].is_null()
        {
            *c += 1;
        }
    }
    n
}

fn assert_every_role_ready(lab: &Lab, when: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut n = ready_per_role(lab);
    // Right after a fault the kubelet's status writes may still be queued.
    while n.values().any(|&c| c == 0) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_secs(1));
        n = ready_per_role(lab);
    }
    assert!(
        n.values().all(|&c| c >= 1),
        "{when}: a role has no Ready pod: {n:?}"
    );
}

/// Pods (name, terminating) of the namespace: what the controllers change.
fn pod_set(lab: &Lab) -> Vec<(String, bool)> {
    let pods = json(&lab.kubectl(&["get", "pods", "-n", SCENARIO_NAMESPACE, "-o", "json"]));
    let mut set: Vec<(String, bool)> = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let name = p["metadata"]["name"].as_str()?.to_string();
            Some((name, !p["metadata"]["deletionTimestamp"].is_null()))
        })
        .collect();
    set.sort();
    set
}

/// A rollout that must complete with the fault-free minima.
fn assert_completes(lab: &Lab, run: &mut Rollout, baseline: &Minima, case: &str) {
    let code = run.finish(Duration::from_secs(300));
    let (outcome, minima) = run.report();
    assert_eq!(code, Some(0), "{case}: exit\n{}", run.log());
    assert_eq!(
        outcome.as_deref(),
        Some("complete"),
        "{case}\n{}",
        run.log()
    );
    assert_eq!(&minima, baseline, "{case}: minima differ\n{}", run.log());
    assert!(
        !run.log().contains("STALL") && !run.log().contains("TIMEOUT"),
        "{case}: a fault is not a stall\n{}",
        run.log()
    );
    assert_every_role_ready(lab, case);
    wait_steady(lab, SCENARIO_NAMESPACE, DEPLOYMENTS);
}

fn timed(name: &str, started: Instant) {
    eprintln!("lab_faults: {name} in {:.0?}", started.elapsed());
}

fn apiserver_restart(lab: &Lab, baseline: &Minima) {
    let t = Instant::now();
    let mut run = Rollout::start(lab, "apiserver");
    run.wait_step("surge-created");
    ctl(lab, "restart", "kube-apiserver");
    assert_completes(lab, &mut run, baseline, "kube-apiserver restarted");
    timed("kube-apiserver restart", t);
}

fn etcd_pause(lab: &Lab, baseline: &Minima) {
    let t = Instant::now();
    let mut run = Rollout::start(lab, "etcd-pause");
    run.wait_step("surge-created");
    ctl(lab, "pause", "etcd");
    std::thread::sleep(ETCD_PAUSE);
    ctl(lab, "resume", "etcd");
    // The pause outlasted the apiserver's etcd keepalive: its etcd client
    // gave the connections up (client watches through the watch cache stay
    // open, silent meanwhile).
    let log =
        std::fs::read_to_string(lab.dir.path().join("logs/kube-apiserver.log")).unwrap_or_default();
    assert!(
        log.contains("keepalive ping failed to receive ACK"),
        "etcd was not paused long enough for the apiserver's etcd connections to break"
    );
    assert_completes(lab, &mut run, baseline, "etcd paused");
    timed("etcd pause", t);
}

/// The resourceVersion of the namespace's pod list now.
fn pods_resource_version(lab: &Lab) -> String {
    // `kubectl get -o json` prints a List without the server's version.
    let path = format!("/api/v1/namespaces/{SCENARIO_NAMESPACE}/pods");
    let list = json(&lab.kubectl(&["get", "--raw", &path]));
    list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn etcd_compaction(lab: &Lab, baseline: &Minima) {
    let t = Instant::now();
    let mut run = Rollout::start(lab, "compaction");
    run.wait_step("surge-created");
    let before = pods_resource_version(lab);
    run.wait_step("weights-loading");
    ctl(lab, "compact", "etcd");
    ctl(lab, "restart", "kube-apiserver");
    // The fresh apiserver has no cache snapshot at the old resourceVersion:
    // the list reaches etcd, which compacted it away.
    let path = format!(
        "/api/v1/namespaces/{SCENARIO_NAMESPACE}/pods?resourceVersion={before}&resourceVersionMatch=Exact"
    );
    let old = lab.kubectl(&["get", "--raw", &path]);
    let err = String::from_utf8_lossy(&old.stderr);
    assert!(
        !old.status.success() && err.contains("too old"),
        "a list at the compacted resourceVersion {before} must be refused: {err}"
    );
    assert_completes(lab, &mut run, baseline, "etcd compacted");
    let log = run.log();
    assert!(
        log.lines()
            .any(|l| l.contains("watch restart") && l.contains("410")),
        "the driver's resumed watch got no 410 Gone:\n{log}"
    );
    timed("etcd compaction", t);
}

fn controller_manager_down(lab: &Lab, baseline: &Minima) {
    let t = Instant::now();
    let mut run = Rollout::start(lab, "kcm");
    run.wait_step("surge-created");
    ctl(lab, "kill", "kube-controller-manager");
    let down = Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    let frozen = pod_set(lab);
    let note = run.wait_for(
        "the note that the controller is not acting",
        |l| l.contains("is kube-controller-manager running?"),
        KCM_DOWN,
    );
    eprintln!("lab_faults: {note}");
    std::thread::sleep(KCM_DOWN.saturating_sub(down.elapsed()));
    assert_eq!(
        pod_set(lab),
        frozen,
        "nothing may roll while kube-controller-manager is down"
    );
    assert!(
        run.running(),
        "the driver must wait for the controller, not end:\n{}",
        run.log()
    );
    ctl(lab, "start", "kube-controller-manager");
    assert_completes(lab, &mut run, baseline, "kube-controller-manager down 30 s");
    assert!(
        run.log().contains("the controller caught up"),
        "{}",
        run.log()
    );
    timed("kube-controller-manager down", t);
}

/// The step kinds of a pd-1p1d surge, in their order.
const STEP_KINDS: [&str; 8] = [
    "surge-created",
    "scheduled",
    "weights-loading",
    "routable",
    "ready-via-proxy",
    "ready",
    "old-terminating",
    "old-gone",
];

/// Ctrl-C at each step kind, each rerun resuming. A rerun reports only
/// what happens after it starts, so each run is interrupted at the first
/// step of a kind not yet covered; a rollout that completes meanwhile is
/// checked like any other and a new one started.
fn ctrl_c_each_step(lab: &Lab, baseline: &Minima) {
    let t = Instant::now();
    let mut left: Vec<&str> = STEP_KINDS.to_vec();
    let mut resuming = false;
    for i in 0..3 * STEP_KINDS.len() {
        if left.is_empty() && !resuming {
            timed("Ctrl-C at every step kind", t);
            return;
        }
        let mut run = Rollout::start(lab, &format!("ctrl-c-{i}"));
        let hit = run.next_match(
            |l| left.iter().any(|k| is_step(l, k)),
            Duration::from_secs(120),
        );
        let kind = hit.and_then(|l| left.iter().copied().find(|k| is_step(&l, k)));
        let code = match kind {
            Some(_) => run.interrupt(),
            None => run.finish(Duration::from_secs(60)),
        };
        let log = run.log();
        assert!(
            !resuming || log.contains("resum"),
            "run {i} resumed:\n{log}"
        );
        match (kind, code) {
            (Some(kind), Some(130)) => {
                assert!(log.contains("INTERRUPTED"), "Ctrl-C at {kind}:\n{log}");
                assert_every_role_ready(lab, &format!("Ctrl-C at {kind}"));
                left.retain(|k| *k != kind);
                resuming = true;
            }
            // Complete before (or despite) the Ctrl-C: the last step of the
            // last leg is followed by nothing to interrupt.
            (_, Some(0)) => {
                assert_completes(lab, &mut run, baseline, &format!("Ctrl-C run {i}"));
                resuming = false;
            }
            (kind, code) => panic!("Ctrl-C at {kind:?}: exit {code:?}\n{log}"),
        }
    }
    panic!(
        "Ctrl-C did not cover {left:?} in {} runs",
        3 * STEP_KINDS.len()
    );
}

#[test]
fn faults_on_real_components() {
    let started = Instant::now();
    let Some(lab) = lab_or_skip_with("faults_on_real_components", &[KCM_ARGS]) else {
        return;
    };
    let attached = Attached::start(&lab, "pd-1p1d");
    let deadline_created = lab_deadline_start(&lab);
    wait_steady(&lab, SCENARIO_NAMESPACE, DEPLOYMENTS);
    timed("lab up and steady", started);

    let t = Instant::now();
    let mut clean = Rollout::start(&lab, "fault-free");
    let code = clean.finish(Duration::from_secs(300));
    let (outcome, baseline) = clean.report();
    assert_eq!(code, Some(0), "fault-free run\n{}", clean.log());
    assert_eq!(outcome.as_deref(), Some("complete"));
    for role in ROLES {
        assert_eq!(
            baseline.get(role),
            Some(&(Some(1), Some(1))),
            "pd-1p1d keeps one Ready and routable pod per role\n{}",
            clean.log()
        );
    }
    wait_steady(&lab, SCENARIO_NAMESPACE, DEPLOYMENTS);
    timed("fault-free rollout", t);
    lab_deadline_check(&lab, deadline_created);

    apiserver_restart(&lab, &baseline);
    etcd_pause(&lab, &baseline);
    etcd_compaction(&lab, &baseline);
    controller_manager_down(&lab, &baseline);
    ctrl_c_each_step(&lab, &baseline);
    audit_parity(&lab);
    lab_deadline_check(&lab, deadline_created);
    // Last: the node lifecycle controller marks the node's pods NotReady.
    node_ready_restored(&lab);
    drop(attached);
    timed("all", started);
}

/// The embedded simulator with its controllers stopped (as with
/// kube-controller-manager and kube-scheduler killed): the driver says the
/// Deployment's new generation is not observed, neither stalls nor ends,
/// and completes once they run again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_down_on_the_embedded_sim() {
    let mut sim = crate::common::sim::Sim::start("pd-1p1d", 20.0).await;
    let kubeconfig = sim.kubeconfig.clone();
    sim.sim.stop_controllers();
    let store = sim.store().clone();
    let pods = move || {
        let mut names: Vec<String> = store
            .list(infera_sim_core::kind::Kind::Pod, Some(SCENARIO_NAMESPACE))
            .0
            .iter()
            .filter_map(|p| p.pointer("/metadata/name")?.as_str().map(str::to_string))
            .collect();
        names.sort();
        names
    };
    let before = pods();
    let (mut run, noted) = tokio::task::block_in_place(|| {
        let mut run = spawn_embedded(&kubeconfig, sim.dir.path());
        let line = run.wait_for(
            "the note that the controller is not acting",
            |l| l.contains("is kube-controller-manager running?"),
            Duration::from_secs(40),
        );
        (run, line)
    });
    assert!(
        noted.contains("generation") && noted.contains("not observed by the controller"),
        "{noted}"
    );
    assert_eq!(pods(), before, "nothing rolls without the controllers");
    assert!(run.running(), "neither a stall nor success:\n{}", run.log());
    sim.sim.start_controllers();
    let code = tokio::task::block_in_place(|| run.finish(Duration::from_secs(120)));
    let log = run.log();
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("the controller caught up"), "{log}");
    assert!(!log.contains("STALL") && !log.contains("TIMEOUT"), "{log}");
    let (outcome, minima) = run.report();
    assert_eq!(outcome.as_deref(), Some("complete"), "{log}");
    for role in ROLES {
        assert_eq!(minima.get(role), Some(&(Some(1), Some(1))), "{log}");
    }
    sim.shutdown().await;
}

/// `infera rollout restart` against the embedded sim's kubeconfig.
fn spawn_embedded(kubeconfig: &Path, dir: &Path) -> Rollout {
    let report = dir.join("report.json");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_infera"));
    cmd.args(["rollout", "restart", TARGET, "--yes", "--kubeconfig"])
        .arg(kubeconfig)
        .arg("--report")
        .arg(&report)
        .env_remove("KUBECONFIG");
    Rollout::spawn(cmd, report)
}

/// The documented difference (docs/lab.md, "Conformance"): the embedded
/// Deployment controller judges `progressDeadlineSeconds` on the scaled
/// clock, upstream's (`DeploymentTimedOut` in
/// k8s.io/kubernetes@v1.37.2 pkg/controller/deployment/util/deployment_util.go)
/// on the wall clock. A Deployment whose pod can never be scheduled, with a
/// 60 s deadline.
const DEADLINE_SECONDS: i64 = 60;

fn deadline_deployment(namespace: &str) -> Value {
    serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "deadline-pin", "namespace": namespace},
        "spec": {
            "replicas": 1,
            "progressDeadlineSeconds": DEADLINE_SECONDS,
            "selector": {"matchLabels": {"app": "deadline-pin"}},
            "template": {
                "metadata": {"labels": {"app": "deadline-pin"}},
                "spec": {
                    "nodeSelector": {"infera.amd.com/no-such-node": "true"},
                    "containers": [{"name": "c", "image": "registry.invalid/none:0"}],
                },
            },
        },
    })
}

/// The Progressing condition's (status, reason).
fn progressing(d: &Value) -> Option<(String, String)> {
    d["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Progressing")
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_string(),
                c["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
}

/// On the lab: create the Deployment (namespace `pin`, away from the
/// scenario); the creation time.
fn lab_deadline_start(lab: &Lab) -> Instant {
    let file = lab.dir.path().join("deadline-pin.json");
    let ns =
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "pin"}});
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [ns, deadline_deployment("pin")]});
    std::fs::write(&file, list.to_string()).expect("write the manifest");
    let out = lab.kubectl(&["apply", "-f", &file.to_string_lossy()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Instant::now()
}

fn lab_deadline(lab: &Lab) -> Option<(String, String)> {
    progressing(&json(&lab.kubectl(&[
        "get",
        "deploy",
        "deadline-pin",
        "-n",
        "pin",
        "-o",
        "json",
    ])))
}

/// On the lab the deadline runs in real time: still progressing long after
/// the embedded sim's (speed 20: 3 s) has passed, exceeded after 60 s.
fn lab_deadline_check(lab: &Lab, created: Instant) {
    let at = created.elapsed();
    let now = lab_deadline(lab);
    if at < Duration::from_secs(50) {
        assert_eq!(
            now.map(|(s, _)| s).as_deref(),
            Some("True"),
            "{at:?} after creation the lab's Deployment must still be progressing"
        );
        return;
    }
    let deadline = created + Duration::from_secs(DEADLINE_SECONDS as u64 + 30);
    let mut now = now;
    while now.as_ref().map(|(_, r)| r.as_str()) != Some("ProgressDeadlineExceeded")
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_secs(1));
        now = lab_deadline(lab);
    }
    assert_eq!(
        now,
        Some(("False".into(), "ProgressDeadlineExceeded".into())),
        "the lab's Deployment must exceed its deadline after {DEADLINE_SECONDS} s of real time"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_deadline_runs_on_the_scaled_clock_in_the_sim() {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::api::{Api, PostParams};

    let sim = crate::common::sim::Sim::unsteady(crate::common::sim::options("pd-1p1d", 20.0)).await;
    let client = sim.client().await;
    let api: Api<Deployment> = Api::namespaced(client, SCENARIO_NAMESPACE);
    let d: Deployment = serde_json::from_value(deadline_deployment(SCENARIO_NAMESPACE))
        .unwrap_or_else(|e| panic!("{e}"));
    let created = Instant::now();
    api.create(&PostParams::default(), &d)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // 60 s of deadline at speed 20: 3 s of wall time (the lab: 60 s).
    let mut now = None;
    while created.elapsed() < Duration::from_secs(20) {
        let d = api
            .get("deadline-pin")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        now = progressing(&serde_json::to_value(&d).unwrap_or_default());
        if now
            .as_ref()
            .is_some_and(|(_, r)| r == "ProgressDeadlineExceeded")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let took = created.elapsed();
    assert_eq!(
        now,
        Some(("False".into(), "ProgressDeadlineExceeded".into())),
        "the embedded deadline passes on the scaled clock"
    );
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(20),
        "60 s at speed 20 took {took:?}"
    );
    sim.shutdown().await;
}

/// What an `infera audit --until-complete` of an operator-driven roll gave:
/// exit code, outcome, per-role exact minima.
type AuditResult = (Option<i32>, Option<String>, Minima);

/// Change the InferaDeployment (both services' pod labels, as `kubectl
/// apply` of a new revision would), then `infera audit --until-complete`
/// the roll the operator drives. `kubectl` and `infera` build the commands
/// for one world.
fn operator_roll_audited(
    dir: &Path,
    kubectl: impl Fn(&[&str]) -> Command,
    infera: impl Fn(&[&str]) -> Command,
) -> AuditResult {
    let stamp = format!("{}", std::process::id());
    let patch = serde_json::json!({"spec": {"services": {
        "prefill": {"podLabels": {"infera.amd.com/audit-parity": &stamp}},
        "decode": {"podLabels": {"infera.amd.com/audit-parity": &stamp}},
    }}});
    let out = kubectl(&[
        "patch",
        "inferadeployments.infera.amd.com",
        "llama",
        "-n",
        SCENARIO_NAMESPACE,
        "--type",
        "merge",
        "-p",
        &patch.to_string(),
    ])
    .stdin(Stdio::null())
    .output()
    .expect("kubectl patch");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = dir.join("audit-parity.json");
    let report_arg = report.to_string_lossy().into_owned();
    let out = infera(&[
        "audit",
        TARGET,
        "-n",
        SCENARIO_NAMESPACE,
        "--until-complete",
        "--for",
        "5m",
        "--report",
        &report_arg,
    ])
    .stdin(Stdio::null())
    .output()
    .expect("infera audit");
    let (outcome, minima) = read_report(&report);
    (out.status.code(), outcome, minima)
}

/// Audit parity, as `conformance.rs` holds rollouts: the same operator-driven roll audited
/// on the lab and on `infera sim serve` (driven by the lab's kubectl from
/// outside the namespace) gives the same exit code, outcome and minima.
fn audit_parity(lab: &Lab) {
    let t = Instant::now();
    let kubectl_bin = lab.dir.path().join("bin/kubectl");
    let on_lab = operator_roll_audited(
        lab.dir.path(),
        |args| {
            let mut c = lab.command(&kubectl_bin);
            c.args(args);
            c
        },
        |args| lab.infera(args),
    );
    wait_steady(lab, SCENARIO_NAMESPACE, DEPLOYMENTS);

    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("sim.kubeconfig");
    let mut serve = Command::new(env!("CARGO_BIN_EXE_infera"))
        .args([
            "sim",
            "serve",
            "--scenario",
            "pd-1p1d",
            "--speed",
            crate::common::lab::SPEED,
        ])
        .arg("--kubeconfig-out")
        .arg(&kubeconfig)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("infera sim serve");
    let kubectl = |args: &[&str]| {
        let mut c = Command::new(&kubectl_bin);
        c.arg("--kubeconfig").arg(&kubeconfig).args(args);
        c
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !embedded_steady(&kubectl) {
        assert!(
            Instant::now() < deadline,
            "infera sim serve never got steady"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let embedded = operator_roll_audited(dir.path(), kubectl, |args| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_infera"));
        c.args(args)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .env_remove("KUBECONFIG");
        c
    });
    let _ = Command::new("kill")
        .args(["-INT", &serve.id().to_string()])
        .status();
    let _ = serve.wait();
    assert_eq!(
        on_lab, embedded,
        "the audited operator-driven roll differs between the worlds"
    );
    assert_eq!(on_lab.0, Some(0), "{on_lab:?}");
    for role in ROLES {
        assert_eq!(on_lab.2.get(role), Some(&(Some(1), Some(1))), "{on_lab:?}");
    }
    timed("audit --until-complete parity", t);
}

/// The embedded sim's three Deployments available and its workers Ready.
fn embedded_steady(kubectl: &impl Fn(&[&str]) -> Command) -> bool {
    let out = kubectl(&["get", "deploy", "-n", SCENARIO_NAMESPACE, "-o", "json"])
        .stdin(Stdio::null())
        .output();
    let Ok(out) = out else { return false };
    let deps: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let items = deps["items"].as_array().cloned().unwrap_or_default();
    items.len() == DEPLOYMENTS
        && items.iter().all(|d| {
            d["status"]["availableReplicas"] == d["spec"]["replicas"]
                && d["status"]["updatedReplicas"] == d["spec"]["replicas"]
        })
}

/// A node whose Ready condition was set Unknown behind the world's back (as
/// the node lifecycle controller does once heartbeats were missed, e.g. while
/// etcd was paused with the default grace period) is Ready again within a
/// heartbeat round (10 s), as a real kubelet restores it, not after the
/// minute's status heartbeat.
fn node_ready_restored(lab: &Lab) {
    let nodes = json(&lab.kubectl(&[
        "get",
        "nodes",
        "-l",
        "infera.amd.com/simulated-node=true",
        "-o",
        "json",
    ]));
    let node = nodes["items"]
        .as_array()
        .and_then(|items| items.last())
        .and_then(|n| n["metadata"]["name"].as_str())
        .expect("a simulated node")
        .to_string();
    let patch = serde_json::json!({"status": {"conditions": [{
        "type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.",
    }]}});
    let out = lab.kubectl(&[
        "patch",
        "node",
        &node,
        "--subresource=status",
        "--type=strategic",
        "-p",
        &patch.to_string(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = Instant::now();
    let ready = || {
        let n = json(&lab.kubectl(&["get", "node", &node, "-o", "json"]));
        n["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
    };
    while !ready() {
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "node {node} still not Ready 15 s after its condition was set Unknown"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    eprintln!(
        "lab_faults: node {node} Ready again after {:.1?}",
        t.elapsed()
    );
}
