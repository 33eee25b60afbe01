//! `--traffic` against the simulator's ground truth: `infera rollout
//! --traffic` and `infera audit --traffic` (the binary, over real HTTP and
//! the simulated API server's service proxy) account for every request,
//! and their counts per class equal what the simulated router recorded: no
//! failure missed, none invented. Pod counts hold in `vllm-short-drain`;
//! only the requests show its cut streams.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::process::infera;
use crate::common::sim::{Sim, options};
use crate::common::traffic::{client_log, matches_truth};

/// `infera ARGS` against `sim`; (exit code, stdout).
async fn run(sim: &Sim, args: Vec<String>) -> (i32, String) {
    let kubeconfig = sim.kubeconfig().display().to_string();
    let out = tokio::task::spawn_blocking(move || {
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.extend(["--kubeconfig", &kubeconfig, "-n", "llm"]);
        infera(&all).output()
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"))
    .unwrap_or_else(|e| panic!("infera: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr);
    (
        out.status.code().unwrap_or(-1),
        format!("{stdout}\n--- stderr\n{stderr}"),
    )
}

/// `infera ARGS --traffic --traffic-rate RATE` on `sim`, with its
/// `--traffic-log` and its `--report` named `NAME.jsonl` and `NAME.json`;
/// the exit, the output, the client's log and the report.
async fn with_traffic(
    sim: &Sim,
    args: &[&str],
    rate: &str,
    name: &str,
) -> (i32, String, Vec<Value>, Value) {
    let log = sim.path(&format!("{name}.jsonl"));
    let report = sim.path(&format!("{name}.json"));
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.extend(["--traffic", "--traffic-rate", rate].map(str::to_string));
    all.extend(["--traffic-log".into(), log.display().to_string()]);
    all.extend(["--report".into(), report.display().to_string()]);
    let (code, out) = run(sim, all).await;
    let json: Value = std::fs::read_to_string(&report)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| panic!("no report: {out}"));
    (code, out, client_log(&log), json)
}

/// `infera rollout restart idep/llama --traffic` on `sim` at `rate`; the
/// exit, the output, the client's log and the report's `traffic`.
async fn roll(sim: &Sim, rate: &str) -> (i32, String, Vec<Value>, Value) {
    let args = ["rollout", "restart", "idep/llama", "--yes"];
    let (code, out, log, json) = with_traffic(sim, &args, rate, "roll").await;
    (code, out, log, json["traffic"].clone())
}

/// Every request the client logged succeeded, as the router recorded it;
/// the report counts no failure, the run exits 0 and says so.
fn every_request_succeeded(sim: &Sim, code: i32, out: &str, log: &[Value], traffic: &Value) {
    let counts = matches_truth(log, &sim.truth().requests().records());
    assert_eq!(counts.keys().collect::<Vec<_>>(), ["ok"], "{out}");
    assert_eq!((failed(traffic), code), (0, 0), "{out}");
    assert!(
        out.contains(&format!("requests: all {} requests succeeded", log.len())),
        "{out}"
    );
}

/// Some requests failed (the client's `counts` per class), and the report
/// counts exactly those, of every request sent, in its sentence. Returns
/// how many.
fn some_failed(counts: &BTreeMap<String, u64>, out: &str, log: &[Value], traffic: &Value) -> u64 {
    let bad = not_ok(counts);
    assert!(bad > 0, "no request failed: {counts:?}\n{out}");
    assert_eq!(failed(traffic), bad, "{traffic}");
    assert_eq!(
        traffic["sent"].as_u64(),
        Some(log.len() as u64),
        "{traffic}"
    );
    let sentence = format!("requests: {bad} of {} requests failed:", log.len());
    assert!(out.contains(&sentence), "{sentence:?} in\n{out}");
    bad
}

/// The requests that did not succeed, of the client's counts per class.
fn not_ok(counts: &BTreeMap<String, u64>) -> u64 {
    (counts.iter())
        .filter(|(class, _)| class.as_str() != "ok")
        .map(|(_, n)| n)
        .sum()
}

/// The failures the report counts against the roll, by label.
fn failed(traffic: &Value) -> u64 {
    traffic["failed"]
        .as_object()
        .map_or(0, |m| m.values().filter_map(Value::as_u64).sum())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_drain_cuts_streams_the_pod_counts_never_show() {
    let sim = Sim::start("vllm-short-drain", 5.0).await;
    let (code, out, log, traffic) = roll(&sim, "10").await;
    let counts = matches_truth(&log, &sim.truth().requests().records());
    // A request in flight on the old worker at SIGTERM fails: an error
    // event when its stream had begun, the router's 502 when it had not.
    some_failed(&counts, &out, &log, &traffic);
    assert!(
        out.contains("never fewer than 1 Ready and 1 routable pod per role"),
        "{out}"
    );
    assert!(
        out.contains("old-terminating llama-worker-"),
        "the cause names the deleted pod:\n{out}"
    );
    // Every failure names the worker it went to, the router's 502 too (it
    // once lost the name once the request was logged).
    for r in log.iter().filter(|r| r["class"] != "ok") {
        assert!(
            r["servedBy"].as_array().is_some_and(|s| !s.is_empty()),
            "{r}"
        );
    }
    let grace = crate::drain::grace_of_worker(&sim);
    let shutdown = format!("(grace period {grace} s, engine drain 0 s)");
    assert!(out.contains(&shutdown), "{shutdown:?} in\n{out}");
    assert_eq!(code, 1, "{out}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_drain_long_enough_no_request_fails() {
    let mut opts = options("vllm-short-drain", 5.0);
    let text = serde_json::to_string(&opts.scenario.manifests).unwrap_or_default();
    let fixed = text.replace(r#""--drain-timeout","0""#, r#""--drain-timeout","30""#);
    assert_ne!(text, fixed, "the scenario's drain flag moved");
    opts.scenario.manifests = serde_json::from_str(&fixed).unwrap_or_else(|e| panic!("{e}"));
    let sim = Sim::with(opts).await;
    let (code, out, log, traffic) = roll(&sim, "10").await;
    every_request_succeeded(&sim, code, &out, &log, &traffic);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_safe_pd_fleet_serves_every_request() {
    let sim = Sim::start("pd-1p1d", 50.0).await;
    let (code, out, log, traffic) = roll(&sim, "10").await;
    let counts = matches_truth(&log, &sim.truth().requests().records());
    assert_eq!(counts.keys().collect::<Vec<_>>(), ["ok"], "{out}");
    assert!(log.len() >= 10, "{out}");
    // Every request went through a prefill and a decode.
    assert!(
        log.iter()
            .all(|r| r["servedBy"].as_array().map(Vec::len) == Some(2)),
        "{log:?}"
    );
    assert_eq!((failed(&traffic), code), (0, 0), "{out}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_that_does_not_serve_refuses_to_start_the_roll() {
    let sim = Sim::start("vllm-short-drain", 5.0).await;
    let args = [
        "rollout",
        "restart",
        "idep/llama",
        "--yes",
        "--traffic",
        "--traffic-service",
        "nope:8000",
    ];
    let (code, out) = run(&sim, args.iter().map(|s| s.to_string()).collect()).await;
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("did not answer") || out.contains("cannot list the models"),
        "{out}"
    );
    assert!(!out.contains("trigger applied"), "the roll started: {out}");
    let (code, out) = run(
        &sim,
        [
            "audit",
            "idep/llama",
            "--for",
            "1s",
            "--traffic",
            "--traffic-rate",
            "51",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    )
    .await;
    assert_eq!(code, 2, "{out}");
    sim.shutdown().await;
}

/// A cut between infera and the API server in the middle of a safe roll:
/// the requests sent into it fail, and so does the control probe, so every
/// one of them is unattributed; none is counted against the roll, and the
/// requests' verdict stays clean (the pod-count proof is bounded as the
/// partition tests check).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_while_the_control_probe_fails_are_never_the_rolls() {
    use infera_sim_core::partition::PartitionKind;
    use std::time::Duration;
    let sim = Sim::start("pd-1p1d", 20.0).await;
    let conn = sim.connect().await;
    let traffic = crate::common::traffic::start(&conn, "llama", 10.0).await;
    let target = "idep/llama".parse().unwrap_or_else(|e| panic!("{e}"));
    let roll = infera_rollout::execute(
        &conn,
        infera_rollout::Request::restart(target),
        infera_rollout::Options::unattended(20.0),
        std::future::pending(),
    );
    let cut = async {
        tokio::time::sleep(Duration::from_secs(2)).await;
        sim.partition(PartitionKind::Cut, Duration::from_secs(4));
    };
    let (outcome, ()) = tokio::join!(roll, cut);
    let mut outcome = outcome.unwrap_or_else(|e| panic!("{e}"));
    let (run, exit, t) = crate::common::traffic::attach(traffic, &mut outcome).await;
    assert!(!t.blind.is_empty(), "the control probe never failed: {t:?}");
    assert!(
        t.total.unattributed > 0,
        "no request failed in the cut: {t:?}"
    );
    assert_eq!(t.total.failures(), 0, "a blind failure was counted: {t:?}");
    assert!(t.sentence().contains("unattributed"), "{}", t.sentence());
    assert!(
        !t.sentence().contains("requests failed"),
        "{}",
        t.sentence()
    );
    assert_eq!(exit, outcome.exit, "the requests changed the verdict");
    for r in run
        .records
        .iter()
        .filter(|r| r.class != infera_audit::traffic::Class::Ok)
    {
        assert!(r.unattributed, "failed outside every blind interval: {r:?}");
    }
    sim.shutdown().await;
}

/// `infera audit --traffic` while someone else restarts the worker: the
/// same accounting as the rollout's, against the same truth.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_accounts_for_the_requests_of_someone_elses_roll() {
    use infera_sim_core::kind::Kind;
    use std::time::Duration;
    let sim = Sim::start("vllm-short-drain", 5.0).await;
    let args = ["audit", "idep/llama", "--until-complete"];
    let restart = async {
        tokio::time::sleep(Duration::from_secs(3)).await;
        sim.store()
            .mutate(Kind::InferaDeployment, Some("llm"), "llama", |idep| {
                idep["spec"]["services"]["worker"]["podLabels"]["restarted"] = "now".into();
            })
            .unwrap_or_else(|e| panic!("{e}"));
    };
    let ((code, out, log, json), ()) =
        tokio::join!(with_traffic(&sim, &args, "10", "audit"), restart);
    let counts = matches_truth(&log, &sim.truth().requests().records());
    let bad = not_ok(&counts);
    assert_eq!(failed(&json["traffic"]), bad, "{out}");
    assert!(bad > 0, "no stream was cut: {counts:?}\n{out}");
    assert_eq!(code, 1, "{out}");
    sim.shutdown().await;
}

/// `infera drain NODE --traffic` on `sim`, the node holding `service`'s
/// pod; the exit, the output, the client's log and the fleet's `traffic`.
async fn drain(sim: &Sim, service: &str) -> (i32, String, Vec<Value>, Value) {
    let node = crate::drain::node_holding(sim.store(), service);
    let args = ["drain", &node, "--ignore-daemonsets"];
    let (code, out, log, json) = with_traffic(sim, &args, "10", "drain").await;
    let fleet = (json["targets"].as_array().into_iter().flatten())
        .find(|t| t["target"] == "idep/llama")
        .unwrap_or_else(|| panic!("no idep/llama in the report: {json}"));
    (code, out, log, fleet["traffic"].clone())
}

/// A drain moves the worker surge-first: the pod counts hold, and the old
/// worker's streams are cut all the same (engine drain 0 s). The drain's
/// report counts every one, as the router recorded it, and exits 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_cuts_streams_the_pod_counts_never_show() {
    let sim = Sim::start("vllm-short-drain", 5.0).await;
    let (code, out, log, traffic) = drain(&sim, "worker").await;
    let counts = matches_truth(&log, &sim.truth().requests().records());
    let bad = some_failed(&counts, &out, &log, &traffic);
    // The cause names the deletion and what the pod had to stop: the
    // scenario's engine drains 0 s (`--drain-timeout 0`), its grace as the
    // operator rendered it.
    let grace = crate::drain::grace_of_worker(&sim);
    let shutdown = format!("(grace period {grace} s, engine drain 0 s)");
    assert!(out.contains(&shutdown), "{shutdown:?} in\n{out}");
    // The pods held the floor: the overall line says so, and names the
    // requests as what failed.
    let overall = format!(
        "overall: 1 target, 1 held the floor of 1 Ready and routable per role; idep/llama failed {bad} request"
    );
    assert!(out.contains(&overall), "{overall:?} in\n{out}");
    assert_eq!(code, 1, "{out}");
    sim.shutdown().await;
}

/// The safe P/D fleet: draining the decode's node serves every request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draining_the_pd_fleet_serves_every_request() {
    let sim = Sim::start("pd-1p1d", 20.0).await;
    let (code, out, log, traffic) = drain(&sim, "decode").await;
    assert!(!log.is_empty(), "{out}");
    every_request_succeeded(&sim, code, &out, &log, &traffic);
    sim.shutdown().await;
}

/// The wall-clock windows (ms since the epoch) in which the simulator's
/// truth had a worker role of idep/llama with no routable pod.
fn no_routable_windows(sim: &Sim) -> Vec<(u64, u64)> {
    let mut windows = Vec::new();
    for role in ["prefill", "decode"] {
        let series = sim.truth().series().remove(&format!("llm/llama/{role}"));
        let mut from: Option<u64> = None;
        for p in series.into_iter().flatten() {
            match (p.routable == 0, from) {
                (true, None) => from = Some(p.at_ms),
                (false, Some(f)) => {
                    windows.push((f, p.at_ms));
                    from = None;
                }
                _ => {}
            }
        }
        windows.extend(from.map(|f| (f, u64::MAX)));
    }
    windows
}

/// Old pod first (no readiness probe, `--force` past the plan's GAP): each
/// role has no routable pod while its replacement loads, and requests fail
/// for that long: every failure overlaps a window in which the truth had a
/// role with nothing routable (give or take the router's lag), and no
/// request that ran wholly inside such a window succeeded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_skip_probe_gap_fails_requests_for_its_length() {
    /// Slack for the router's watch and the request's own length (wall ms);
    /// the gaps last about 8 s of wall time at 20x.
    const SLACK_MS: u64 = 2_000;
    let sim = Sim::start("pd-1p1d-skip-probe", 20.0).await;
    let args = ["rollout", "restart", "idep/llama", "--yes", "--force"];
    let (code, out, log, json) = with_traffic(&sim, &args, "5", "gap").await;
    let counts = matches_truth(&log, &sim.truth().requests().records());
    some_failed(&counts, &out, &log, &json["traffic"]);
    let gaps = no_routable_windows(&sim);
    assert!(!gaps.is_empty(), "the truth shows no gap\n{out}");
    let span = |r: &Value| {
        (
            r["startedMs"].as_u64().unwrap_or(0),
            r["endedMs"].as_u64().unwrap_or(0),
        )
    };
    for r in log.iter().filter(|r| r["class"] != "ok") {
        let (start, end) = span(r);
        assert!(
            gaps.iter()
                .any(|&(a, b)| start <= b.saturating_add(SLACK_MS) && end + SLACK_MS >= a),
            "{r} failed outside every gap {gaps:?}"
        );
    }
    for r in log.iter().filter(|r| r["class"] == "ok") {
        let (start, end) = span(r);
        assert!(
            !gaps
                .iter()
                .any(|&(a, b)| start >= a + SLACK_MS && end.saturating_add(SLACK_MS) <= b),
            "{r} succeeded inside a gap {gaps:?}"
        );
    }
    assert_eq!(code, 1, "{out}");
    sim.shutdown().await;
}
