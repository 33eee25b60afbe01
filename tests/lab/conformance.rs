//! Scenario parity, the embedded sim held to the lab: every built-in scenario, the same `infera
//! rollout restart` on the embedded simulator and on the upstream lab (real
//! kube-apiserver, kube-controller-manager and kube-scheduler v1.37.2 with
//! `infera sim attach`), must give the same exit code, outcome, per-role
//! exact minima (Ready and routable) and ordered step kinds per service.
//!
//! One lab per scenario (a fresh `lab/up` is ~15 s; reusing one lab would
//! need the namespace controller to finish deleting `llm` between
//! scenarios), all scenarios in one test so two labs never compete for the
//! machine's cores. Skips with a reason unless `INFERA_LAB_BIN` is set and we
//! are root, like `tests/lab/smoke.rs`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::lab::{
    Attached, Lab, SCENARIO_NAMESPACE, SPEED, is_ready, json, lab_or_skip, wait_steady,
};
use infera_sim::{RunningSim, SimOptions};
use infera_sim_scenario::Scenario;
use serde_json::Value;

/// A scenario, what to roll in it, how many Deployments its steady state
/// has, and whether the preflight refuses it without `--force`.
struct Case {
    scenario: &'static str,
    target: &'static str,
    deployments: usize,
    refused_without_force: bool,
}

/// `pd-1p1d-gitops` is not here: what it is for (a `set-image` its
/// self-healing kustomize-controller reverts, a restart it keeps) is held
/// to the lab by `tests/lab/gitops.rs` and to the embedded sim by
/// `tests/sim/rollout_gitops.rs`, with the same assertions.
const CASES: [Case; 4] = [
    Case {
        scenario: "pd-1p1d",
        target: "idep/llama",
        deployments: 3,
        refused_without_force: false,
    },
    Case {
        scenario: "pd-1p1d-skip-probe",
        target: "idep/llama",
        deployments: 3,
        refused_without_force: true,
    },
    Case {
        scenario: "whole-node-pinned",
        target: "idep/kimi",
        deployments: 2,
        refused_without_force: true,
    },
    Case {
        scenario: "surge-no-readiness",
        target: "deploy/llama-worker",
        deployments: 1,
        refused_without_force: true,
    },
];

/// What must agree between the worlds.
#[derive(Debug, PartialEq)]
struct Summary {
    code: Option<i32>,
    outcome: Option<String>,
    /// role → (min Ready exact, min routable exact)
    minima: BTreeMap<String, (Option<u64>, Option<u64>)>,
    /// service → step kinds in order
    steps: BTreeMap<String, Vec<String>>,
    /// The scheduler's message as the `unschedulable` steps quote it (the
    /// embedded scheduler writes what kube-scheduler v1.37.2 writes,
    /// preemption clause included).
    unschedulable: Vec<String>,
}

/// One `infera rollout restart` and what it left.
struct Run {
    summary: Summary,
    stdout: String,
    stderr: String,
}

/// The step kinds of one service, normalised for what is a race in both
/// worlds (each was seen in both orders on the embedded sim and on the lab):
///
/// * the old pod's steps (`old-terminating`, `old-gone`) against the new
///   pod's: with maxSurge 0 the Deployment controller scales the old
///   ReplicaSet down and the new one up in one sync, and the old pod's grace
///   period runs while the new one loads weights — so the two chains are
///   compared each in its own order, not interleaved;
/// * `ready` (the kubelet's probe) and `ready-via-proxy` (the driver's own
///   GET through the pod proxy when the pod registers): two observations of
///   one moment, compared as a set;
/// * steps after `leg-complete` (a late `ready-via-proxy` answer) are
///   dropped.
fn normalise(kinds: &[String]) -> Vec<String> {
    let end = kinds
        .iter()
        .position(|k| k == "leg-complete")
        .map_or(kinds.len(), |i| i + 1);
    let kinds = &kinds[..end];
    let (old, mut new): (Vec<String>, Vec<String>) =
        kinds.iter().cloned().partition(|k| k.starts_with("old-"));
    for i in 1..new.len() {
        if new[i - 1] == "ready-via-proxy" && new[i] == "ready" {
            new.swap(i - 1, i);
        }
    }
    new.push("|".to_string());
    new.extend(old);
    new
}

fn summarise(out: &Output, report: &Path) -> Run {
    let report: Value = std::fs::read(report)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    let mut minima = BTreeMap::new();
    for r in report["roles"].as_array().into_iter().flatten() {
        let role = r["role"].as_str().unwrap_or("?").to_string();
        minima.insert(
            role,
            (
                r["min_ready_exact"].as_u64(),
                r["min_routable_exact"].as_u64(),
            ),
        );
    }
    let mut by_service: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for s in report["steps"].as_array().into_iter().flatten() {
        let service = s["service"].as_str().unwrap_or("?").to_string();
        let kind = s["kind"].as_str().unwrap_or("?").to_string();
        by_service.entry(service).or_default().push(kind);
    }
    let steps = by_service
        .into_iter()
        .map(|(s, k)| (s, normalise(&k)))
        .collect();
    Run {
        summary: Summary {
            code: out.status.code(),
            outcome: report["outcome"].as_str().map(str::to_string),
            minima,
            steps,
            unschedulable: unschedulable_quotes(&String::from_utf8_lossy(&out.stdout)),
        },
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The message after `unschedulable  POD  (… after the previous step): `.
fn unschedulable_quotes(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.split_whitespace().nth(3) == Some("unschedulable"))
        .filter_map(|l| l.split_once("): ").map(|(_, m)| m.to_string()))
        .collect()
}

fn rollout_args<'a>(case: &'a Case, force: bool, report: &'a Path) -> Vec<&'a str> {
    let mut args = vec!["rollout", "restart", case.target, "-n", SCENARIO_NAMESPACE];
    // The driver's stall clock is the wall clock in both worlds (the lab's
    // Deployment controller judges progressDeadlineSeconds in real time):
    // 20 s keeps the stall scenario short on both.
    args.extend(["--yes", "--stall-after", "20s"]);
    if force {
        args.push("--force");
    }
    args.push("--report");
    args.push(report.to_str().unwrap_or_default());
    args
}

/// The forced run, and before it the unforced one when the preflight is
/// expected to refuse.
fn run_case(case: &Case, dir: &Path, mut infera: impl FnMut(&[&str]) -> Output) -> Vec<Run> {
    let mut runs = Vec::new();
    let forces: &[bool] = if case.refused_without_force {
        &[false, true]
    } else {
        &[false]
    };
    for &force in forces {
        let report = dir.join(format!("report-{force}.json"));
        let out = infera(&rollout_args(case, force, &report));
        runs.push(summarise(&out, &report));
    }
    runs
}

async fn embedded(case: &Case) -> Vec<Run> {
    let scenario = Scenario::load(case.scenario).unwrap_or_else(|e| panic!("{e}"));
    let speed: f64 = SPEED.parse().unwrap_or(20.0);
    let sim = RunningSim::start(SimOptions::new(scenario, speed))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        infera::demo::wait_steady(sim.store(), SCENARIO_NAMESPACE, Duration::from_secs(120)).await,
        "{}: the embedded sim never reached its steady state",
        case.scenario
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig)
        .unwrap_or_else(|e| panic!("{e}"));
    let runs = tokio::task::block_in_place(|| {
        run_case(case, dir.path(), |args| {
            Command::new(env!("CARGO_BIN_EXE_infera"))
                .args(args)
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .stdin(Stdio::null())
                .output()
                .expect("run infera")
        })
    });
    sim.shutdown().await;
    runs
}

/// The Ready, not-terminating pods of the namespace, by name.
fn ready_pods(lab: &Lab) -> Vec<String> {
    let pods = json(&lab.kubectl(&["get", "pods", "-n", SCENARIO_NAMESPACE, "-o", "json"]));
    let mut names: Vec<String> = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| is_ready(p) && p["metadata"]["deletionTimestamp"].is_null())
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

/// The real kube-scheduler's FailedScheduling messages in the namespace.
fn failed_scheduling(lab: &Lab) -> Vec<String> {
    let events = json(&lab.kubectl(&[
        "get",
        "events",
        "-n",
        SCENARIO_NAMESPACE,
        "--field-selector",
        "reason=FailedScheduling",
        "-o",
        "json",
    ]));
    events["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["message"].as_str().map(str::to_string))
        .collect()
}

/// The lab run of one case, plus the stall checks that need the real
/// control plane.
fn on_lab(case: &Case) -> Option<Vec<Run>> {
    let lab = lab_or_skip("scenario_parity_on_both_worlds")?;
    let attached = Attached::start(&lab, case.scenario);
    wait_steady(&lab, SCENARIO_NAMESPACE, case.deployments);
    let before = ready_pods(&lab);
    let dir = lab.dir.path().to_path_buf();
    let runs = run_case(case, &dir, |args| {
        lab.infera(args).output().expect("run infera in the lab")
    });
    if case.scenario == "whole-node-pinned" {
        check_stall(&lab, &before, &runs);
    }
    drop(attached);
    Some(runs)
}

/// The stall: the preflight refused (exit 3, STALL), the forced run quotes
/// the real scheduler's FailedScheduling message, and the abort leaves
/// exactly the old pods Ready.
fn check_stall(lab: &Lab, before: &[String], runs: &[Run]) {
    let [refused, forced] = runs else {
        panic!("whole-node-pinned: expected two runs");
    };
    assert_eq!(refused.summary.code, Some(3), "{}", refused.stdout);
    assert!(refused.stdout.contains("STALL"), "{}", refused.stdout);
    let messages = failed_scheduling(lab);
    assert!(
        !messages.is_empty(),
        "the real scheduler emitted no FailedScheduling"
    );
    assert!(
        messages.iter().any(|m| {
            let head = m.split(". preemption").next().unwrap_or(m);
            forced.stdout.contains(head)
        }),
        "infera did not quote the real scheduler's message {messages:?}:\n{}",
        forced.stdout
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut after = ready_pods(lab);
    while after != before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_secs(1));
        after = ready_pods(lab);
    }
    assert_eq!(
        after, before,
        "the abort must leave exactly the old pods Ready"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenario_parity_on_both_worlds() {
    if lab_or_skip_probe() {
        return;
    }
    for case in &CASES {
        let started = Instant::now();
        let sim = embedded(case).await;
        let lab = tokio::task::block_in_place(|| on_lab(case)).expect("lab available");
        assert_eq!(sim.len(), lab.len());
        for (s, l) in sim.iter().zip(&lab) {
            assert_eq!(
                s.summary, l.summary,
                "{}: the worlds differ\n--- embedded stdout:\n{}\n{}\n--- lab stdout:\n{}\n{}",
                case.scenario, s.stdout, s.stderr, l.stdout, l.stderr
            );
        }
        if case.refused_without_force {
            assert_eq!(
                lab[0].summary.code,
                Some(3),
                "{}: {}",
                case.scenario,
                lab[0].stdout
            );
        }
        eprintln!(
            "{}: both worlds agree ({:?}) in {:.0?}",
            case.scenario,
            lab.iter().map(|r| r.summary.code).collect::<Vec<_>>(),
            started.elapsed()
        );
    }
}

/// True (after saying why) when the lab cannot run here.
fn lab_or_skip_probe() -> bool {
    crate::common::lab::skip_reason("scenario_parity_on_both_worlds").is_some()
}
