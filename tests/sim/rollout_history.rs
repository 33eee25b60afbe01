//! The rollout history against the embedded simulator: rollouts driven
//! through the library (connected with the simulator's kubeconfig, as the
//! CLI connects), read back by the real `infera rollout history` binary.

use std::path::Path;
use std::process::Output;

use infera::cli::ClusterArgs;
use infera_cluster::{Connection, connect};
use infera_rollout::history::{HISTORY_ANNOTATION, HistoryEntry, KEEP, sha256_hex};
use infera_rollout::target::Target;
use infera_rollout::{Options, Request, RolloutOutcome, execute};
use infera_sim_core::kind::Kind;
use serde_json::Value;

use crate::common::sim::Sim;

const SPEED: f64 = 200.0;

async fn start(scenario: &str) -> Sim {
    Sim::start(scenario, SPEED).await
}

async fn conn(kubeconfig: &Path) -> Connection {
    let args = ClusterArgs {
        kubeconfig: Some(kubeconfig.to_path_buf()),
        ..ClusterArgs::default()
    };
    connect(&args.options())
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn roll(s: &Sim, target: &str, services: &[&str], force: bool) -> RolloutOutcome {
    let target: Target = target.parse().unwrap_or_else(|e| panic!("{e}"));
    let mut req = Request::restart(target);
    req.services = services.iter().map(|s| s.to_string()).collect();
    let mut opts = Options::unattended(SPEED);
    opts.force = force;
    execute(
        &conn(&s.kubeconfig).await,
        req,
        opts,
        std::future::pending(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
}

async fn history(s: &Sim, target: &str, json: bool) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_infera"));
    cmd.args(["rollout", "history", target, "--kubeconfig"])
        .arg(&s.kubeconfig)
        .env_remove("KUBECONFIG");
    if json {
        cmd.args(["-o", "json"]);
    }
    let out = cmd.output().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

async fn history_json(s: &Sim, target: &str) -> Vec<HistoryEntry> {
    let out = history(s, target, true).await;
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn minima(e: &HistoryEntry) -> Vec<(String, Option<u32>, Option<u32>)> {
    e.minima
        .iter()
        .map(|m| (m.role.clone(), m.ready, m.routable))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_rollouts_leave_two_entries_newest_first() {
    let s = start("pd-1p1d-skip-probe").await;
    let empty = history(&s, "idep/llama", false).await;
    let text = String::from_utf8_lossy(&empty.stdout);
    assert!(text.contains("no rollout history on idep/llama"), "{text}");
    assert_eq!(history_json(&s, "idep/llama").await, Vec::new());

    let first = roll(&s, "idep/llama", &[], true).await;
    let second = roll(&s, "idep/llama", &["decode"], true).await;
    let entries = history_json(&s, "idep/llama").await;
    assert_eq!(entries.len(), 2, "{entries:?}");
    let (newest, oldest) = (&entries[0], &entries[1]);
    assert_eq!(oldest.change, "restart of decode, prefill");
    assert_eq!(newest.change, "restart of decode");
    for (entry, outcome) in [(oldest, &first), (newest, &second)] {
        let report = outcome.report.as_ref().expect("a report");
        assert_eq!(entry.outcome, "complete");
        assert_eq!(entry.context.as_deref(), Some(infera_sim::CONTEXT));
        assert_eq!(entry.user.as_deref(), Some(infera_sim::CONTEXT));
        let expected: Vec<_> = report
            .roles
            .iter()
            .map(|r| (r.role.clone(), r.min_ready_exact, r.min_routable_exact))
            .collect();
        assert_eq!(minima(entry), expected);
        let json = report.try_to_json().unwrap_or_else(|e| panic!("{e}")) + "\n";
        assert_eq!(
            entry.report_digest,
            format!("sha256:{}", sha256_hex(json.as_bytes()))
        );
        assert!(
            entry.at.ends_with('Z') && entry.at.len() == 20,
            "{}",
            entry.at
        );
    }
    // skip-probe: old-pod-first leaves each rolled role with nothing Ready.
    assert!(minima(oldest).iter().all(|(_, r, _)| *r == Some(0)));
    let table = String::from_utf8_lossy(&history(&s, "idep/llama", false).await.stdout).to_string();
    let (a, b) = (
        table
            .find("restart of decode ")
            .or(table.find("restart of decode\n")),
        table.find("restart of decode, prefill"),
    );
    assert!(
        a.is_some() && b.is_some() && a < b,
        "newest first:\n{table}"
    );
    assert!(table.contains("decode 0/0"), "{table}");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_keeps_the_last_ten() {
    let s = start("pd-1p1d").await;
    let ns = s.sim.namespace();
    let store = s.sim.store();
    let old: Vec<Value> = (0..KEEP)
        .map(|n| {
            serde_json::json!({"at": format!("2026-01-01T00:00:{n:02}Z"), "change": format!("old {n}"),
                "outcome": "complete", "minima": [], "duration_s": 1.0, "report_digest": "sha256:0"})
        })
        .collect();
    // The world's operator writes the object too (its status): read, modify,
    // write, and start over on a conflict, as any client must.
    let mut attempts = 0;
    loop {
        let mut live = store
            .get(Kind::InferaDeployment, Some(&ns), "llama")
            .unwrap_or_else(|| panic!("no idep/llama"));
        live["metadata"]["annotations"][HISTORY_ANNOTATION] =
            Value::from(serde_json::to_string(&old).unwrap_or_default());
        match store.update(Kind::InferaDeployment, live) {
            Ok(_) => break,
            Err(e) if attempts < 20 => {
                attempts += 1;
                eprintln!("retrying the seed write after {e:?}");
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    let outcome = roll(&s, "idep/llama", &["decode"], true).await;
    assert_eq!(outcome.exit, infera_audit::exit::Exit::Ok);
    let entries = history_json(&s, "idep/llama").await;
    assert_eq!(entries.len(), KEEP);
    assert_eq!(entries[0].change, "restart of decode");
    // Every role is audited, the rolled one and the other; pd-1p1d holds both.
    let roles = minima(&entries[0]);
    assert_eq!(roles.len(), 2, "{roles:?}");
    assert!(
        roles.iter().all(|(_, r, t)| *r == Some(1) && *t == Some(1)),
        "{roles:?}"
    );
    assert_eq!(entries[KEEP - 1].change, "old 1", "the oldest went first");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_rollout_is_recorded_too() {
    let s = start("whole-node-pinned").await;
    let ns = s.sim.namespace();
    let idep = s.sim.store().list(Kind::InferaDeployment, Some(&ns)).0[0]
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let target = format!("idep/{idep}");
    let outcome = roll(&s, &target, &[], true).await;
    let report = outcome.report.as_ref().expect("a report");
    let entries = history_json(&s, &target).await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].outcome, report.outcome.as_str());
    assert_ne!(entries[0].outcome, "complete");
    s.shutdown().await;
}

/// Flags the first applied trigger (a rollout to interrupt mid-leg).
struct FlagTrigger(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl infera_rollout::Reporter for FlagTrigger {
    fn plan(&mut self, _: &infera_rollout::plan::Plan) {}
    fn note(&mut self, _: &str) {}
    fn start(&mut self, _: &[(String, u64)], _: infera_rollout::Clock) {}
    fn event(&mut self, _: &str, text: &str, _: std::time::Instant) {
        if text.starts_with("trigger applied") {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
    fn step(
        &mut self,
        _: &str,
        _: &infera_rollout::leg_tracker::Observation,
        _: std::time::Instant,
    ) {
    }
    fn stall(&mut self, _: &str, _: &infera_rollout::Stall, _: std::time::Instant) {}
    fn activity(&mut self, _: &str, _: &str, _: std::time::Instant) {}
    fn tick(&mut self, _: std::time::Instant) {}
    fn leg_done(&mut self, _: &str, _: &str) {}
    fn finish(&mut self) {}
    fn interactive(&self) -> bool {
        false
    }
    fn ask(&mut self, _: &infera_rollout::Question) -> Option<bool> {
        None
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_of_an_interrupted_rollout_is_recorded() {
    let s = start("pd-1p1d").await;
    let target: Target = "idep/llama".parse().unwrap_or_else(|e| panic!("{e}"));
    let conn = conn(&s.kubeconfig).await;
    // Interrupted right after the first leg's trigger: the record stays.
    let triggered = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = triggered.clone();
    let interrupt = async move {
        while !flag.load(std::sync::atomic::Ordering::SeqCst) {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    let mut reporter = FlagTrigger(triggered);
    let opts = Options::unattended(SPEED);
    let req = Request::restart(target.clone());
    let interrupted =
        infera_rollout::execute_with(&conn, req.clone(), opts.clone(), &mut reporter, interrupt)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(interrupted.exit, infera_audit::exit::Exit::Interrupted);
    // `--abort` undoes the leg and leaves its own record.
    let mut abort = opts;
    abort.abort = true;
    let aborted = execute(&conn, req, abort, std::future::pending())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(aborted.exit, infera_audit::exit::Exit::Stalled);
    let entries = history_json(&s, "idep/llama").await;
    let outcomes: Vec<&str> = entries.iter().map(|e| e.outcome.as_str()).collect();
    assert_eq!(outcomes, ["aborted", "interrupted"], "{entries:?}");
    assert_eq!(entries[0].change, "restart of decode, prefill (--abort)");
    assert_eq!(entries[0].context.as_deref(), Some(infera_sim::CONTEXT));
    assert!(entries[0].minima.is_empty() && entries[0].report_digest.is_empty());
    // Nothing in flight any more: a second --abort has nothing to do and
    // records nothing.
    let mut again = Options::unattended(SPEED);
    again.abort = true;
    let nothing = execute(
        &conn,
        Request::restart(target),
        again,
        std::future::pending(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(nothing.exit, infera_audit::exit::Exit::Ok);
    assert_eq!(history_json(&s, "idep/llama").await.len(), 2);
    s.shutdown().await;
}
