use std::time::{Duration, Instant};

use kube::runtime::watcher::Event;

use super::*;
use crate::auditor::{Auditor, RoleSpec};
use crate::narrate::Step;
use crate::report::Outcome;

fn record(seq: u64, start: Instant, from_ms: u64, len_ms: u64, class: Class) -> RequestRecord {
    RequestRecord {
        id: format!("infera-t-{seq}"),
        path: "/v1/chat/completions".into(),
        stream: true,
        started_ms: 1_000_000 + from_ms,
        ended_ms: 1_000_000 + from_ms + len_ms,
        ttft_ms: (class == Class::Ok).then_some(len_ms / 4),
        class,
        status: (class == Class::Status).then_some(503),
        detail: None,
        served_by: vec!["w-old".into()],
        unattributed: false,
        mixed_pair: false,
        start: Some(start + Duration::from_millis(from_ms)),
    }
}

/// A report whose clock started at `origin`, with a step `w old-terminating
/// w-old` 10 s (wall) in and `w ready w-new` 0.1 s later; time scale 2.
fn report(origin: Instant) -> Report {
    let role = RoleSpec {
        role: "w".into(),
        services: vec!["w".into()],
        selector: infera_model::selector::Selector::parse("app=w")
            .unwrap_or_else(|e| panic!("{e}")),
    };
    let mut a = Auditor::new(vec![role], 1, Duration::from_secs(10), 2.0).with_target("idep/t");
    a.apply(&Event::Init, origin);
    a.apply(&Event::InitDone, origin);
    let steps = [
        (1_000, "surge-created", "w-new"),
        (10_000, "old-terminating", "w-old"),
        (10_100, "ready", "w-new"),
    ];
    for (at, kind, pod) in steps {
        a.step(Step {
            service: "w".into(),
            kind: kind.into(),
            pod: Some(pod.into()),
            node: None,
            at: origin + Duration::from_millis(at),
        });
    }
    a.finish(Outcome::Complete, origin + Duration::from_secs(20))
}

#[test]
fn tally_counts_classes_percentiles_and_the_longest_failure_run() {
    let t0 = Instant::now();
    let mut rs: Vec<RequestRecord> = (0..100)
        .map(|i| record(i, t0, i * 100, 100 + i, Class::Ok))
        .collect();
    rs.push(record(100, t0, 10_000, 500, Class::Cut));
    rs.push(record(101, t0, 10_100, 1_900, Class::Status));
    rs.push(record(102, t0, 12_100, 10, Class::Ok));
    let mut blind = record(103, t0, 13_000, 10, Class::Refused);
    blind.unattributed = true;
    rs.push(blind);
    let t = Tally::of(&rs);
    assert_eq!(
        (t.sent, t.succeeded, t.failures(), t.unattributed),
        (104, 101, 2, 1)
    );
    assert_eq!(t.failed.get("cut"), Some(&1));
    assert_eq!(t.failed.get("HTTP 503"), Some(&1));
    // The run: the cut from 10.0 s to the 503's end at 12.0 s.
    assert!((t.longest_failure_run_s - 2.0).abs() < 1e-9, "{t:?}");
    // TTFTs: (100+i)/4 for i in 0..100 and 10/4; nearest rank.
    assert_eq!((t.ttft_p50_ms, t.ttft_p99_ms), (Some(37), Some(49)));
}

#[test]
fn percentiles_by_nearest_rank() {
    assert_eq!(percentile(&[], 50), None);
    assert_eq!(percentile(&[7], 99), Some(7));
    let v: Vec<u64> = (1..=100).collect();
    assert_eq!(
        (percentile(&v, 50), percentile(&v, 99)),
        (Some(50), Some(99))
    );
}

#[test]
fn failures_while_blind_are_unattributed_and_only_those() {
    let t0 = Instant::now();
    let mut run = TrafficRun {
        records: vec![
            record(0, t0, 0, 100, Class::Refused),
            record(1, t0, 5_000, 100, Class::Refused),
            record(2, t0, 5_000, 100, Class::Ok),
            record(3, t0, 9_000, 100, Class::Cut),
        ],
        blind: vec![(t0 + Duration::from_secs(5), t0 + Duration::from_secs(6))],
        ..TrafficRun::default()
    };
    run.attribute(Duration::from_secs(1));
    let flags: Vec<bool> = run.records.iter().map(|r| r.unattributed).collect();
    assert_eq!(flags, [false, true, false, false]);
}

#[test]
fn failures_sit_beside_the_deletion_of_the_pod_that_served_them() {
    let t0 = Instant::now();
    let report = report(t0);
    let run = TrafficRun {
        path: "service ns/t-router:8000".into(),
        rate: 2.0,
        records: vec![
            record(0, t0, 0, 100, Class::Ok),
            record(1, t0, 2_000, 100, Class::Ok),
            record(2, t0, 9_500, 700, Class::Cut),
            record(3, t0, 9_800, 400, Class::Cut),
            record(4, t0, 11_000, 100, Class::Ok),
        ],
        ..TrafficRun::default()
    };
    let t = TrafficReport::build(&run, &report);
    assert_eq!(t.causes.len(), 1, "{:?}", t.causes);
    assert_eq!(
        (t.causes[0].count, t.causes[0].step.as_str()),
        (2, "w old-terminating w-old")
    );
    // Reported time: 10 s of wall at scale 2.
    assert_eq!(t.causes[0].step_elapsed_s, Some(20.0));
    assert_eq!(
        t.sentence(),
        "2 of 5 requests failed: 2 cut mid-answer after w old-terminating w-old at +20s \
         (TTFT p50 25 ms, p99 25 ms, wall clock)"
    );
    let steps: Vec<(&str, u64)> = t
        .steps
        .iter()
        .map(|s| (s.name.as_str(), s.tally.sent))
        .collect();
    assert_eq!(
        steps,
        [
            ("before the first step", 1),
            ("w surge-created w-new", 3),
            ("w ready w-new", 1)
        ]
    );
    assert!(t.has_failures());
    let mut with = report;
    with.traffic = Some(t);
    assert_eq!(with.exit(), crate::exit::Exit::Findings);
}

#[test]
fn all_succeeded_says_so_and_keeps_the_exit() {
    let t0 = Instant::now();
    let report = report(t0);
    let run = TrafficRun {
        records: vec![record(0, t0, 0, 100, Class::Ok)],
        ..TrafficRun::default()
    };
    let mut t = TrafficReport::build(&run, &report);
    assert_eq!(
        t.sentence(),
        "all 1 requests succeeded (TTFT p50 25 ms, p99 25 ms, wall clock)"
    );
    t.not_sent = 3;
    let said = t.sentence();
    assert!(
        said.ends_with("; 3 more were not sent: the concurrency limit was reached"),
        "{said}"
    );
    t.not_sent = 0;
    let exit = report.exit();
    let mut with = report;
    with.traffic = Some(t);
    assert_eq!(with.exit(), exit);
}

#[test]
fn every_request_is_a_compact_mark_in_reported_time_in_start_order() {
    let t0 = Instant::now();
    let report = report(t0);
    let mut blind = record(3, t0, 12_000, 100, Class::Refused);
    blind.unattributed = true;
    let mut unstarted = record(4, t0, 13_000, 100, Class::Ok);
    unstarted.start = None;
    let run = TrafficRun {
        records: vec![
            record(0, t0, 9_800, 400, Class::Cut),
            record(1, t0, 2_000, 100, Class::Ok),
            record(2, t0, 10_500, 100, Class::Status),
            blind,
            unstarted,
        ],
        ..TrafficRun::default()
    };
    let t = TrafficReport::build(&run, &report);
    let marks: Vec<(f64, String, bool)> = t
        .requests
        .iter()
        .map(|m| (m.elapsed_s, m.label(), m.counted_failure()))
        .collect();
    // Wall seconds × 2 (the report's time scale); the unstarted record
    // has no place on the timeline.
    assert_eq!(
        marks,
        [
            (4.0, "ok".to_string(), false),
            (19.6, "cut".to_string(), true),
            (21.0, "HTTP 503".to_string(), true),
            (24.0, "refused".to_string(), false),
        ]
    );
    let json = serde_json::to_string(&t.requests).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        json,
        r#"[{"t":4.0,"c":"ok"},{"t":19.6,"c":"cut"},{"t":21.0,"c":"status","s":503},{"t":24.0,"c":"refused","u":true}]"#
    );
}

#[test]
fn an_hour_of_marks_stays_small() {
    let mark = RequestMark {
        elapsed_s: 3599.999,
        class: Class::Ok,
        status: None,
        unattributed: false,
    };
    let json = serde_json::to_string(&vec![mark; 7_200]).unwrap_or_else(|e| panic!("{e}"));
    assert!(json.len() < 200_000, "{} bytes", json.len());
}
