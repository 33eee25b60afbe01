//! `infera rollout` and `infera audit` against `infera sim` over real HTTP:
//! the kube client, a kubeconfig, the simulator's API server — the
//! production path. Each test starts its own simulated cluster.

use std::time::{Duration, Instant};

use clap::Parser;
use infera::cli::{Cli, Command};
use infera_audit::exit::Exit;
use infera_audit::{Outcome, Outputs, Report};
use infera_rollout::target::Target;
use infera_rollout::{
    Options, PauseBetween, Question, Recorder, Reported, Request, RolloutOutcome, execute,
    execute_with,
};
use infera_sim::SimOptions;
use infera_sim_core::faults::FaultConfig;
use infera_sim_core::kind::Kind;
use infera_sim_scenario::Scenario;
use infera_sim_store::Store;

use crate::common::sim::{self, Sim, now_ms};
use serde_json::Value;

/// Fast enough that a 140 s weight load takes under a second of wall time.
const SPEED: f64 = 200.0;

async fn start(scenario: &str, faults: FaultConfig) -> Sim {
    let mut options = sim::options(scenario, SPEED);
    options.faults = faults;
    Sim::with(options).await
}

fn options() -> Options {
    Options::unattended(SPEED)
}

fn restart(target: &str) -> Request {
    Request::restart(target.parse::<Target>().unwrap_or_else(|e| panic!("{e}")))
}

pub(crate) async fn roll(sim: &Sim, target: &str, opts: Options) -> RolloutOutcome {
    let conn = sim.connect().await;
    execute(&conn, restart(target), opts, std::future::pending())
        .await
        .unwrap_or_else(|e| panic!("rollout of {target} failed: {e}"))
}

fn report(outcome: &RolloutOutcome) -> &Report {
    outcome.report.as_ref().expect("a report")
}

/// (min Ready exact, min routable exact, min Ready sampled) of `role`.
fn minima(report: &Report, role: &str) -> (Option<u32>, Option<u32>, Option<u32>) {
    let r = report
        .roles
        .iter()
        .find(|r| r.role == role)
        .unwrap_or_else(|| panic!("no role {role} in {}", report.to_json()));
    (r.min_ready_exact, r.min_routable_exact, r.min_ready_sampled)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pd_1p1d_rolls_surge_first_and_never_drops_a_role() {
    let sim = start("pd-1p1d", FaultConfig::default()).await;
    let before_prefill = sim.pod_names("prefill");
    let outcome = roll(&sim, "idep/llama", options()).await;
    let report = report(&outcome);
    assert_eq!(report.outcome, Outcome::Complete, "{}", report.to_json());
    assert_eq!(outcome.exit, Exit::Ok);
    for role in ["prefill", "decode"] {
        assert_eq!(
            minima(report, role),
            (Some(1), Some(1), Some(1)),
            "{role}: {}",
            report.to_json()
        );
    }
    // Every pod was replaced, by a surge pod (created before the old one went).
    let after_prefill = sim.pod_names("prefill");
    assert!(after_prefill.iter().all(|p| !before_prefill.contains(p)));
    for leg in ["prefill", "decode"] {
        let kinds: Vec<&str> = outcome
            .steps
            .iter()
            .filter(|(l, _, _)| l == leg)
            .map(|(_, o, _)| o.kind.as_str())
            .collect();
        let pos = |k: &str| {
            kinds
                .iter()
                .position(|x| *x == k)
                .unwrap_or_else(|| panic!("{leg}: no {k} in {kinds:?}"))
        };
        assert!(pos("surge-created") < pos("ready"), "{kinds:?}");
        assert!(pos("ready") < pos("old-terminating"), "{kinds:?}");
        assert!(pos("routable") < pos("old-gone"), "{kinds:?}");
        assert!(kinds.contains(&"ready-via-proxy"), "{kinds:?}");
    }
    // The in-flight record is gone once the rollout completes (the history
    // stays).
    let idep = sim
        .store()
        .get(Kind::InferaDeployment, Some("llm"), "llama")
        .unwrap_or_default();
    let annotations = idep
        .pointer("/metadata/annotations")
        .cloned()
        .unwrap_or_default();
    assert!(
        annotations.as_object().is_none_or(|a| a
            .keys()
            .all(|k| !k.contains("rollout") || k == infera_rollout::history::HISTORY_ANNOTATION)),
        "{annotations}"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skip_probe_gap_is_reported_with_exit_1() {
    let sim = start("pd-1p1d-skip-probe", FaultConfig::default()).await;
    let outcome = roll(&sim, "idep/llama", options()).await;
    let report = report(&outcome);
    assert_eq!(report.outcome, Outcome::Complete, "{}", report.to_json());
    assert_eq!(outcome.exit, Exit::Findings);
    // The preflight lints the live objects: IR001 on each leg, once (the
    // operator's Deployments are not linted a second time).
    let plan = outcome.plan.as_ref().expect("a plan");
    for leg in &plan.legs {
        let codes: Vec<&str> = leg.findings.iter().map(|f| f.code.as_str()).collect();
        assert_eq!(codes, ["IR001"], "leg {}", leg.leg);
    }
    assert!(plan.other_findings.is_empty(), "{:?}", plan.other_findings);
    let weight_load = sim.scenario().timings.weight_load;
    for role in ["prefill", "decode"] {
        let (ready, routable, _) = minima(report, role);
        assert_eq!(ready, Some(0), "{role}: old-pod-first leaves no Ready pod");
        assert_eq!(routable, Some(0));
        let r = report.roles.iter().find(|r| r.role == role).unwrap();
        // Nothing routable from the old pod's deletion until the replacement
        // has loaded its weights and registered: about the weight-load time.
        assert!(
            r.longest_gap_s >= weight_load * 0.8 && r.longest_gap_s <= weight_load * 2.0,
            "{role}: longest gap {}s, weight load {weight_load}s",
            r.longest_gap_s
        );
        assert!(r.seconds_below_min_ready > 0.0);
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_node_pinned_stall_is_detected_and_abort_keeps_old_pods() {
    let sim = start("whole-node-pinned", FaultConfig::default()).await;
    let ns = sim.namespace();
    let idep = sim
        .store()
        .list(Kind::InferaDeployment, Some(&ns))
        .0
        .first()
        .and_then(|i| i.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_string)
        .expect("an InferaDeployment");
    let before: Vec<String> = ["prefill", "decode"]
        .iter()
        .flat_map(|s| sim.pod_names(s))
        .collect();
    // Through the Reporter the CLI implements, captured.
    let conn = sim.connect().await;
    let target = format!("idep/{idep}");
    let mut recorder = Recorder::default();
    let outcome = execute_with(
        &conn,
        restart(&target),
        options(),
        &mut recorder,
        std::future::pending(),
    )
    .await
    .unwrap_or_else(|e| panic!("rollout of {target} failed: {e}"));
    let lines = recorder.lines();
    let stalled_at = recorder.reported.iter().position(
        |r| matches!(r, Reported::Stall { stall, .. } if stall.pod.is_some() && stall.message.contains("FailedScheduling")),
    );
    let aborting_at = recorder.reported.iter().position(
        |r| matches!(r, Reported::Event { text, .. } if text.starts_with("aborting: restoring")),
    );
    assert!(
        matches!((stalled_at, aborting_at), (Some(s), Some(a)) if s < a),
        "stall, then abort: {lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("STALLED: surge pod")),
        "{lines:#?}"
    );
    assert!(matches!(
        recorder.reported.first(),
        Some(Reported::Plan { .. })
    ));
    assert_eq!(recorder.reported.last(), Some(&Reported::Finish));
    let report = report(&outcome);
    assert_eq!(report.outcome, Outcome::Aborted, "{}", report.to_json());
    assert_eq!(outcome.exit, Exit::Stalled);
    let stalled = report
        .steps
        .iter()
        .find(|s| s.kind == "stalled")
        .expect("a stalled step");
    assert!(stalled.pod.is_some(), "the stall names the surge pod");
    let unsched = outcome
        .steps
        .iter()
        .find(|(_, o, _)| o.kind.as_str() == "unschedulable")
        .and_then(|(_, o, _)| o.detail.clone())
        .unwrap_or_default();
    assert!(
        unsched.contains("Insufficient amd.com/gpu"),
        "FailedScheduling reason quoted: {unsched}"
    );
    // The old pods still serve and the surge pod is gone.
    let after: Vec<String> = ["prefill", "decode"]
        .iter()
        .flat_map(|s| sim.pod_names(s))
        .collect();
    assert_eq!(before, after, "exactly the old pods remain");
    for service in ["prefill", "decode"] {
        assert_eq!(sim.ready_pods(service).len(), 1, "{service}");
    }
    for role in ["prefill", "decode"] {
        let (ready, routable, _) = minima(report, role);
        assert_eq!((ready, routable), (Some(1), Some(1)), "{role}");
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn surge_without_readiness_is_a_silent_outage() {
    let sim = start("surge-no-readiness", FaultConfig::default()).await;
    let outcome = roll(&sim, "deploy/llama-worker", options()).await;
    let report = report(&outcome);
    assert_eq!(report.outcome, Outcome::Complete, "{}", report.to_json());
    assert_eq!(outcome.exit, Exit::Findings);
    let role = &report.roles[0];
    assert_eq!(role.min_ready_exact, Some(1), "{}", report.to_json());
    assert_eq!(role.min_routable_exact, Some(0), "{}", report.to_json());
    assert!(
        report.sentence().contains("silent outage"),
        "{}",
        report.sentence()
    );
    // A report file that cannot be written after the rollout (its directory
    // went away) makes the exit 2, though a role fell below (1).
    let gone = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let outputs = Outputs {
        report: Some(gone.path().join("report.json")),
        timeline: Vec::new(),
    };
    assert!(outputs.check().is_ok());
    drop(gone);
    assert_eq!(
        infera::console::finish_outputs(Some(report), &outputs, outcome.exit),
        Exit::Usage
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preflight_stops_a_predicted_stall_without_force() {
    let sim = start("whole-node-pinned", FaultConfig::default()).await;
    let ns = sim.namespace();
    let idep = sim.store().list(Kind::InferaDeployment, Some(&ns)).0[0]
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut opts = options();
    opts.force = false;
    let outcome = roll(&sim, &format!("idep/{idep}"), opts).await;
    assert_eq!(outcome.exit, Exit::Stalled);
    assert!(outcome.report.is_none() || outcome.steps.is_empty());
    let live = sim
        .store()
        .get(Kind::InferaDeployment, Some(&ns), &idep)
        .unwrap_or_default();
    let text = live.to_string();
    assert!(
        !text.contains("restarted-at"),
        "nothing was changed: {text}"
    );
    sim.shutdown().await;
}

/// The same rollout as `pd_1p1d_rolls_surge_first…`, through a flaky API:
/// watches dropped, bursts of 5xx/429, the API server restarted, history
/// compacted (410 on resume). The exact minima match the fault-free run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_never_invent_a_gap_and_the_minimum_contains_the_truth() {
    let faults = FaultConfig {
        drop_watches_every: Some(Duration::from_millis(250)),
        error_rate: Some(0.1),
        compact_every: Some(Duration::from_millis(700)),
        restart_api_every: Some(Duration::from_millis(1500)),
        ..FaultConfig::default()
    };
    let sim = start("pd-1p1d", faults).await;
    let from_ms = now_ms();
    let outcome = roll(&sim, "idep/llama", options()).await;
    let report = report(&outcome);
    assert_eq!(report.outcome, Outcome::Complete, "{}", report.to_json());
    // Where a fault left infera blind and the server's timestamps could not
    // settle it, the minimum is a bound (exit 4); it always contains the
    // truth (never fewer than 1: surge-first), and no gap is ever invented.
    assert!(
        matches!(outcome.exit, Exit::Ok | Exit::Unproven),
        "{:?}: {}",
        outcome.exit,
        report.to_json()
    );
    for role in ["prefill", "decode"] {
        let truth = sim
            .truth()
            .window(&format!("llm/llama/{role}"), from_ms, now_ms(), 1)
            .expect("the ground truth");
        assert_eq!((truth.0, truth.1), (1, 1), "{role}: the truth");
        let r = report.roles.iter().find(|r| r.role == role).expect("role");
        for (what, range) in [
            ("Ready", r.min_ready_range),
            ("routable", r.min_routable_range),
        ] {
            let (lo, hi) = range.expect("synced");
            assert!(
                lo <= 1 && 1 <= hi,
                "{role} {what}: {lo}–{hi}: {}",
                report.to_json()
            );
        }
    }
    // The faults did happen: errors were injected and the pod watch was
    // started again and again.
    let counts = sim.store().request_counts();
    let injected: u64 = counts
        .iter()
        .filter(|(k, _)| k.starts_with("injected"))
        .map(|(_, v)| v)
        .sum();
    assert!(injected > 0, "{counts:?}");
    assert!(
        counts.get("watch pods").copied().unwrap_or(0) > 3,
        "{counts:?}"
    );
    sim.shutdown().await;
}

/// `infera audit ARGV…` as library options.
pub(crate) fn audit_args(argv: &[&str]) -> infera_audit::Options {
    let mut full = vec!["infera", "audit"];
    full.extend_from_slice(argv);
    match Cli::try_parse_from(full)
        .unwrap_or_else(|e| panic!("{e}"))
        .command
    {
        Command::Audit(a) => infera_audit::Options::from(&a),
        _ => unreachable!(),
    }
}

/// `infera audit --until-complete` of a rollout the operator drives after a
/// change to the CR (as after `kubectl apply`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_until_complete_of_an_operator_driven_rollout() {
    let sim = start("pd-1p1d", FaultConfig::default()).await;
    let conn = sim.connect().await;
    let args = audit_args(&["idep/llama", "--until-complete", "--for", "1h"]);
    // As after `kubectl apply`: the CR changes, then the audit starts.
    sim.store()
        .mutate(Kind::InferaDeployment, Some("llm"), "llama", |v| {
            for s in ["prefill", "decode"] {
                v["spec"]["services"][s]["podLabels"]["infera.amd.com/restarted-at"] =
                    "20261203T000000Z".into();
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let report = infera_audit::audit_target(&conn, &args, SPEED, std::future::pending())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.outcome, Outcome::Complete, "{}", report.to_json());
    assert!(report.samples >= 10, "{}", report.to_json());
    for role in ["prefill", "decode"] {
        let (ready, routable, sampled) = minima(&report, role);
        assert_eq!(
            (ready, routable, sampled),
            (Some(1), Some(1), Some(1)),
            "{role}"
        );
    }
    // Both Deployments were seen rolling and finishing.
    assert!(
        report.steps.len() >= 2,
        "rolling/complete markers: {}",
        report.to_json()
    );
    sim.shutdown().await;
}

/// A 3 s (simulated) gap between two 10 s samples: the samples never see
/// it, the exact event-driven minimum does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gap_shorter_than_the_sample_interval_is_caught_exactly() {
    let yaml = r#"
name: short-gap
seed: 3
nodes: [{name: n, count: 1, allocatable: {cpu: "8", memory: 16Gi}}]
timings: {imagePull: 1, restartBackoff: 3}
manifests:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: app}
    spec:
      replicas: 1
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: nginx}]}
podFaults:
  - {at: 45, crash: {namespace: app, podPrefix: web}}
"#;
    let scenario = Scenario::from_yaml("short-gap", yaml).unwrap_or_else(|e| panic!("{e}"));
    // Slow enough that scheduling jitter on a loaded 2-core machine (up to
    // ~100 ms seen at load average 8) stays far below the 2 s of simulated
    // time (200 ms here) between the gap and the nearest sample.
    let speed = 10.0;
    let sim = Sim::unsteady(SimOptions::new(scenario, speed)).await;
    assert!(infera::demo::wait_steady(sim.store(), "app", Duration::from_secs(30)).await);
    // Start the audit at 20 s of scenario time: samples at 20, 30, 40, 50 …;
    // the crash at 45 leaves the pod NotReady for about 3 s (45–48).
    while sim.clock().elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let conn = sim.connect().await;
    let args = audit_args(&[
        "deploy/web",
        "--role",
        "web=app=web",
        "--for",
        "50s",
        "--sample-interval",
        "10s",
    ]);
    let started = Instant::now();
    let report = infera_audit::audit_target(&conn, &args, speed, std::future::pending())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // 50 simulated seconds at 10x: the audit ran on the scaled clock.
    assert!(started.elapsed() < Duration::from_secs(15));
    let role = &report.roles[0];
    assert_eq!(role.min_ready_sampled, Some(1), "{}", report.to_json());
    assert_eq!(role.min_ready_exact, Some(0), "{}", report.to_json());
    assert!(
        role.seconds_below_min_ready > 1.0 && role.seconds_below_min_ready < 8.0,
        "{}",
        report.to_json()
    );
    assert_eq!(report.exit(), Exit::Findings);
    sim.shutdown().await;
}

/// `infera lint --cluster` (the real binary) reads the live objects through
/// the API: the skip-probe InferaDeployment raises IR001 for both workers,
/// once each (its Deployments are the operator's and are not linted again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lint_cluster_reads_live_objects() {
    let sim = start("pd-1p1d-skip-probe", FaultConfig::default()).await;
    let kubeconfig = sim.kubeconfig.clone();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_infera"))
        .args(["lint", "--cluster", "-o", "json", "--kubeconfig"])
        .arg(&kubeconfig)
        .env_remove("KUBECONFIG")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let mut found: Vec<(String, String)> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| {
            (
                f["code"].as_str().unwrap_or_default().to_string(),
                f["object"]["service"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            ("IR001".to_string(), "decode".to_string()),
            ("IR001".to_string(), "prefill".to_string())
        ],
        "{stdout}"
    );
    sim.shutdown().await;
}

/// Write to a node every few milliseconds (a status heartbeat), so the
/// global resource version moves between compactions and a resumed watch
/// is always behind the history floor: every resume gets 410.
async fn heartbeat(store: &Store, stop: &tokio::sync::Notify) {
    let nodes: Vec<String> = store
        .list(Kind::Node, None)
        .0
        .iter()
        .filter_map(|n| n.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    let mut beat = 0u64;
    loop {
        beat += 1;
        for node in &nodes {
            let _ = store.mutate(Kind::Node, None, node, |n| {
                n["metadata"]["annotations"]["test/heartbeat"] = beat.to_string().into();
            });
        }
        tokio::select! {
            _ = stop.notified() => return,
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
}

/// The one reflector (`cluster::reflect`) through the 410 / re-list path:
/// watches dropped every 200 ms, history compacted every 150 ms, so each
/// resume is answered 410 and the watcher re-lists. Each re-list is swapped
/// in at `InitDone`: the exact minimum never dips below the steady count
/// (no spurious gap), and after the re-lists the cached counts are the
/// simulator's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relist_after_410_shows_no_spurious_gap() {
    let faults = FaultConfig {
        drop_watches_every: Some(Duration::from_millis(200)),
        compact_every: Some(Duration::from_millis(150)),
        ..FaultConfig::default()
    };
    let sim = start("pd-1p1d", faults).await;
    let ns = sim.namespace();
    let conn = sim.connect().await;
    let idep = sim
        .store()
        .get(Kind::InferaDeployment, Some(&ns), "llama")
        .expect("the scenario's InferaDeployment");
    let roles = infera_audit::roles_from_inferadeployment(&idep).unwrap_or_else(|e| panic!("{e}"));
    let auditor = infera_audit::Auditor::new(roles, 1, Duration::from_secs(10), SPEED);
    let mut session = infera_audit::AuditSession::start(
        conn.client.clone(),
        &conn.url,
        &conn.namespace,
        Some("infera.amd.com/deployment=llama".into()),
        auditor,
    );
    let stop = tokio::sync::Notify::new();
    let relisted = async {
        session
            .wait_synced()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let deadline = Instant::now() + Duration::from_secs(30);
        while session.lists() < 4 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        stop.notify_one();
    };
    tokio::join!(heartbeat(sim.store(), &stop), relisted);
    assert!(session.lists() >= 4, "re-lists: {}", session.lists());
    let lists = sim
        .store()
        .request_counts()
        .get("list pods")
        .copied()
        .unwrap_or(0);
    assert!(lists >= 4, "the watcher re-listed after 410s: {lists}");
    // Correct state after the re-lists: the cache matches the simulator.
    for counts in session.counts() {
        let ready = sim.ready_pods(&counts.role).len() as u32;
        assert_eq!(
            (counts.role.as_str(), counts.ready),
            (counts.role.as_str(), ready)
        );
        assert_eq!(counts.ready, 1, "{counts:?}");
    }
    let report = session
        .finish(Outcome::Complete)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    for role in ["prefill", "decode"] {
        let (ready, routable, _) = minima(&report, role);
        assert_eq!(
            (ready, routable),
            (Some(1), Some(1)),
            "{role}: {}",
            report.to_json()
        );
    }
    sim.shutdown().await;
}

/// `--pause-between legs` without `--yes`: the questions go to the
/// Reporter, not to a terminal. "Start? yes", then "next leg? no" stops
/// after the first leg (exit 130) with the in-flight record left on the CR;
/// the same request again resumes the remaining leg and completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_between_legs_asks_the_reporter_and_resumes() {
    let sim = start("pd-1p1d", FaultConfig::default()).await;
    let ns = sim.namespace();
    let conn = sim.connect().await;
    let opts = Options {
        yes: false,
        pause_between: PauseBetween::Legs,
        ..options()
    };
    let mut recorder = Recorder {
        answers: vec![Some(true), Some(false)],
        ..Recorder::default()
    };
    let outcome = execute_with(
        &conn,
        restart("idep/llama"),
        opts,
        &mut recorder,
        std::future::pending(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.exit, Exit::Interrupted);
    let asked: Vec<&Question> = recorder
        .reported
        .iter()
        .filter_map(|r| match r {
            Reported::Asked(q) => Some(q),
            _ => None,
        })
        .collect();
    assert_eq!(asked, [&Question::Start, &Question::NextLeg]);
    let done: Vec<&str> = recorder
        .reported
        .iter()
        .filter_map(|r| match r {
            Reported::LegDone { leg, .. } => Some(leg.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(done.len(), 1, "one leg rolled: {done:?}");
    let in_flight = |store: &Store| {
        store
            .get(Kind::InferaDeployment, Some(&ns), "llama")
            .and_then(|v| {
                v.pointer("/metadata/annotations/infera.amd.com~1rollout-in-flight")
                    .cloned()
            })
    };
    assert!(
        in_flight(sim.store()).is_some(),
        "the record stays for a resume"
    );
    // The same request resumes the other leg.
    let mut resumed = Recorder::default();
    let outcome = execute_with(
        &conn,
        restart("idep/llama"),
        options(),
        &mut resumed,
        std::future::pending(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.exit, Exit::Ok, "{}", report(&outcome).to_json());
    assert!(
        resumed
            .lines()
            .iter()
            .any(|l| l.starts_with("Resuming the interrupted rollout")),
        "{:#?}",
        resumed.lines()
    );
    let legs_rolled = resumed
        .reported
        .iter()
        .filter(|r| matches!(r, Reported::LegDone { .. }))
        .count();
    assert_eq!(legs_rolled, 1, "only the remaining leg");
    assert!(
        in_flight(sim.store()).is_none(),
        "the record is removed at the end"
    );
    sim.shutdown().await;
}
