//! The proof holds through a partition: each fault (a cut with the watch
//! history compacted, so the resume gets 410 and re-lists; a blackhole,
//! whose held events arrive late) × {audit, rollout} × {a surge-first
//! scenario, an old-pod-first one}. Every run's reported minimum, or bound,
//! must contain the simulator's own ground truth, and a run that did not
//! see a gap must never say "never fewer than 1".

use std::time::{Duration, Instant};

use infera_audit::{Options as AuditOptions, Report};
use infera_rollout::target::Target;
use infera_rollout::{Options, Request, execute};
use infera_sim_core::kind::Kind;
use infera_sim_core::partition::PartitionKind;

use crate::common::sim::{self, Sim, now_ms};

/// A 140 s weight load takes 14 s of wall time: long enough to fall inside
/// a 25 s partition, short against the heartbeat's 10 s bound.
const SPEED: f64 = 10.0;
const PARTITION: Duration = Duration::from_secs(25);

/// Restart `role`'s pods as someone else would (the cluster's side: the
/// store, not the partitioned network).
fn restart_in_cluster(sim: &Sim, role: &str) {
    let stamp = format!("{}", now_ms());
    sim.store()
        .mutate(Kind::InferaDeployment, Some("llm"), "llama", |idep| {
            idep["spec"]["services"][role]["podLabels"]["infera.amd.com/restarted-at"] =
                stamp.into();
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Start the fault: a cut also compacts the history mid-way (410 on
/// resume, a re-list); a blackhole holds everything and delivers it late.
fn fault(sim: &Sim, kind: PartitionKind) {
    sim.partition(kind, PARTITION);
    if kind == PartitionKind::Cut {
        let store = sim.store().clone();
        tokio::spawn(async move {
            tokio::time::sleep(PARTITION / 2).await;
            store.compact();
        });
    }
}

/// The report against the ground truth over the same window.
fn check(sim: &Sim, report: &Report, from_ms: u64, to_ms: u64, label: &str) {
    let json = report.to_json();
    assert!(
        !report.unobserved.is_empty(),
        "{label}: no unobserved interval: {json}"
    );
    let mut truth_gap = false;
    for role in ["prefill", "decode"] {
        let group = format!("llm/llama/{role}");
        let (ready, routable, below_ready, below_routable) = sim
            .truth()
            .window(&group, from_ms, to_ms, 1)
            .unwrap_or_else(|| panic!("{label}: no truth for {group}"));
        truth_gap |= ready < 1 || routable < 1;
        let r = report
            .roles
            .iter()
            .find(|r| r.role == role)
            .unwrap_or_else(|| panic!("{label}: no role {role}: {json}"));
        eprintln!(
            "{label} {role}: truth min {ready}/{routable}, below {:.1}s/{:.1}s; reported min \
             {:?}/{:?}, below {}s/{}s (possibly {:?}/{:?}); exit {}",
            below_ready.as_secs_f64() * SPEED,
            below_routable.as_secs_f64() * SPEED,
            r.min_ready_range,
            r.min_routable_range,
            r.seconds_below_min_ready,
            r.seconds_below_min_routable,
            r.bounds
                .as_ref()
                .map(|b| b.seconds_possibly_below_min_ready),
            r.bounds
                .as_ref()
                .map(|b| b.seconds_possibly_below_min_routable),
            report.exit().code(),
        );
        let (lo, hi) = r.min_ready_range.expect("synced");
        assert!(
            lo <= ready && ready <= hi,
            "{label} {role}: Ready truth {ready} outside {lo}–{hi}: {json}"
        );
        let (lo, hi) = r.min_routable_range.expect("synced");
        assert!(
            lo <= routable && routable <= hi,
            "{label} {role}: routable truth {routable} outside {lo}–{hi}: {json}"
        );
        // The time below the floor: certainly at least what is reported,
        // possibly up to the bound; to the server timestamps' precision (a
        // second of wall clock: SPEED reported seconds).
        let slack = SPEED;
        let possible = |certain: f64, pick: fn(&infera_audit::RoleBounds) -> f64| {
            r.bounds.as_ref().map_or(certain, pick)
        };
        let rows = [
            (
                "Ready",
                below_ready,
                r.seconds_below_min_ready,
                possible(r.seconds_below_min_ready, |b| {
                    b.seconds_possibly_below_min_ready
                }),
            ),
            (
                "routable",
                below_routable,
                r.seconds_below_min_routable,
                possible(r.seconds_below_min_routable, |b| {
                    b.seconds_possibly_below_min_routable
                }),
            ),
        ];
        for (what, truth, certain, possible) in rows {
            let truth = truth.as_secs_f64() * SPEED;
            assert!(
                certain <= truth + slack && truth <= possible + slack,
                "{label} {role}: {what} truly below for {truth:.1}s, reported {certain}s \
                 (possibly {possible}s): {json}"
            );
        }
    }
    if truth_gap {
        assert_ne!(
            report.exit(),
            infera_audit::exit::Exit::Ok,
            "{label}: a false all-clear: {json}"
        );
        assert!(
            !report.sentence().contains("never fewer"),
            "{label}: {}",
            report.sentence()
        );
    }
}

async fn audit_through(kind: PartitionKind, scenario: &str) {
    let label = format!("audit {kind:?} {scenario}");
    let sim = Sim::with(sim::options(scenario, SPEED)).await;
    let conn = sim.connect().await;
    // 60 s of wall time: the partition, the recovery, and settling.
    let opts = AuditOptions::for_duration("idep/llama", Duration::from_secs_f64(60.0 * SPEED));
    let from_ms = now_ms();
    let audit = infera_audit::audit_target(&conn, &opts, SPEED, std::future::pending());
    let world = async {
        tokio::time::sleep(Duration::from_secs(3)).await;
        fault(&sim, kind);
        tokio::time::sleep(Duration::from_millis(500)).await;
        restart_in_cluster(&sim, "decode");
        restart_in_cluster(&sim, "prefill");
    };
    let (report, ()) = tokio::join!(audit, world);
    let report = report.unwrap_or_else(|e| panic!("{label}: {e}"));
    check(&sim, &report, from_ms, now_ms(), &label);
    sim.shutdown().await;
}

async fn rollout_through(kind: PartitionKind, scenario: &str) {
    let label = format!("rollout {kind:?} {scenario}");
    let sim = Sim::with(sim::options(scenario, SPEED)).await;
    let conn = sim.connect().await;
    let from_ms = now_ms();
    let target: Target = "idep/llama".parse().unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    let drive = async {
        execute(
            &conn,
            Request::restart(target),
            Options::unattended(SPEED),
            std::future::pending(),
        )
        .await
    };
    let partition = async {
        tokio::time::sleep(Duration::from_secs(2)).await;
        fault(&sim, kind);
    };
    let (outcome, ()) = tokio::join!(drive, partition);
    let outcome = outcome.unwrap_or_else(|e| panic!("{label}: {e}"));
    let report = outcome
        .report
        .as_ref()
        .unwrap_or_else(|| panic!("{label}: no report"));
    assert!(
        started.elapsed() >= PARTITION,
        "{label}: finished inside the partition"
    );
    check(&sim, report, from_ms, now_ms(), &label);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_through_a_cut_safe() {
    audit_through(PartitionKind::Cut, "pd-1p1d").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_through_a_cut_gap() {
    audit_through(PartitionKind::Cut, "pd-1p1d-skip-probe").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_through_a_blackhole_safe() {
    audit_through(PartitionKind::Blackhole, "pd-1p1d").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_through_a_blackhole_gap() {
    audit_through(PartitionKind::Blackhole, "pd-1p1d-skip-probe").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_through_a_cut_safe() {
    rollout_through(PartitionKind::Cut, "pd-1p1d").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_through_a_cut_gap() {
    rollout_through(PartitionKind::Cut, "pd-1p1d-skip-probe").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_through_a_blackhole_safe() {
    rollout_through(PartitionKind::Blackhole, "pd-1p1d").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_through_a_blackhole_gap() {
    rollout_through(PartitionKind::Blackhole, "pd-1p1d-skip-probe").await;
}
