//! Auditor arithmetic with synthetic watcher events and synthetic instants.

use std::collections::BTreeMap;
use std::str::FromStr as _;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher::Event;

use super::*;
use infera_model::selector::Selector;
use infera_model::worker::{LABEL_DEPLOYMENT, LABEL_SERVICE, WORKER_INFO_ANNOTATION};

fn role(name: &str, service: &str) -> RoleSpec {
    RoleSpec {
        role: name.to_string(),
        services: vec![service.to_string()],
        selector: Selector::from_labels(&BTreeMap::from([(
            LABEL_DEPLOYMENT.to_string(),
            "llm".to_string(),
        )])),
    }
}

/// An infera worker pod of service `service`: `ready` sets the Ready
/// condition, `registered` the worker-info annotation; `terminating` a
/// deletionTimestamp.
fn pod(name: &str, service: &str, ready: bool, registered: bool, terminating: bool) -> Pod {
    let mut annotations = serde_json::Map::new();
    if registered {
        annotations.insert(WORKER_INFO_ANNOTATION.into(), r#"{"worker_id":"w"}"#.into());
    }
    let mut meta = serde_json::json!({
        "name": name, "namespace": "prod",
        "labels": {LABEL_DEPLOYMENT: "llm", LABEL_SERVICE: service},
        "annotations": annotations,
    });
    if terminating {
        // A deadline past any synthetic instant here: the deletion request
        // carries no usable time, so these prompt events are timed by
        // their arrival (the partition tests below use real timestamps).
        meta["deletionTimestamp"] = "2099-01-01T00:00:00Z".into();
    }
    serde_json::from_value(serde_json::json!({
        "metadata": meta,
        "spec": {"containers": [{"name": "infera", "image": "rocm/infera:1",
            "command": ["python3", "-m", "infera.engine.sglang"]}]},
        "status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": if ready { "True" } else { "False" }}
        ]}
    }))
    .unwrap()
}

/// A role selected by set-based requirements (a Deployment's
/// `matchExpressions`): its pods match, others do not, whatever the
/// service label.
#[test]
fn a_role_follows_set_based_requirements() {
    let spec = RoleSpec {
        role: "web".into(),
        services: Vec::new(),
        selector: Selector::parse("app in (web),!canary").unwrap(),
    };
    let labelled = |labels: serde_json::Value| -> Pod {
        serde_json::from_value(serde_json::json!({"metadata": {"name": "p", "labels": labels}}))
            .unwrap()
    };
    assert!(spec.matches(&labelled(serde_json::json!({"app": "web"}))));
    assert!(spec.matches(&labelled(
        serde_json::json!({"app": "web", LABEL_SERVICE: "x"})
    )));
    assert!(!spec.matches(&labelled(serde_json::json!({"app": "db"}))));
    assert!(!spec.matches(&labelled(serde_json::json!({"app": "web", "canary": "1"}))));
    assert!(!spec.matches(&labelled(serde_json::json!({}))));
}

fn secs(t0: Instant, s: f64) -> Instant {
    t0 + Duration::from_secs_f64(s)
}

fn list(a: &mut Auditor, pods: &[Pod], now: Instant) {
    a.apply(&Event::Init, now);
    for p in pods {
        a.apply(&Event::InitApply(p.clone()), now);
    }
    a.apply(&Event::InitDone, now);
}

fn decode_auditor() -> Auditor {
    Auditor::new(
        vec![role("decode", "decode")],
        1,
        Duration::from_secs(10),
        1.0,
    )
}

#[test]
fn gap_shorter_than_the_sample_interval_is_caught_exactly() {
    let t0 = Instant::now();
    let mut a = decode_auditor();
    list(&mut a, &[pod("old", "decode", true, true, false)], t0);
    a.sample(t0);
    // 12 s: the old pod goes; 15 s: the new one is Ready and registered.
    a.apply(
        &Event::Apply(pod("old", "decode", false, false, true)),
        secs(t0, 12.0),
    );
    a.apply(
        &Event::Apply(pod("new", "decode", true, true, false)),
        secs(t0, 15.0),
    );
    a.sample(secs(t0, 10.0 + 10.0));
    a.apply(
        &Event::Delete(pod("old", "decode", false, false, true)),
        secs(t0, 25.0),
    );
    a.sample(secs(t0, 30.0));
    let r = a.finish(Outcome::Complete, secs(t0, 30.0));
    let d = &r.roles[0];
    assert_eq!(d.min_ready_sampled, Some(1));
    assert_eq!(d.min_ready_exact, Some(0));
    assert_eq!(d.min_routable_exact, Some(0));
    assert_eq!(d.seconds_below_min_ready, 3.0);
    assert_eq!(d.seconds_below_min_routable, 3.0);
    assert_eq!(d.longest_gap_s, 3.0);
    assert_eq!(r.samples, 3);
    assert_eq!(r.duration_s, 30.0);
    assert_eq!(r.exit(), crate::exit::Exit::Findings);
    let sentence = r.sentence();
    assert!(
        sentence.starts_with("3 samples over 30s: decode fell to 0 Ready for 3s"),
        "{sentence}"
    );
    assert!(sentence.contains("which no sample saw"), "{sentence}");
}

#[test]
fn a_relist_that_finds_the_same_pods_stays_exact_and_says_why() {
    let t0 = Instant::now();
    let mut a = decode_auditor();
    let serving = pod("w-1", "decode", true, true, false);
    list(&mut a, std::slice::from_ref(&serving), t0);
    // The watch drops; the watcher re-lists. Between Init and InitDone the
    // buffer is being filled: the counts must not pass through 0, and a
    // sample taken meanwhile is not an observation.
    a.apply(&Event::Init, secs(t0, 5.0));
    assert!(!a.is_current());
    a.sample(secs(t0, 5.5));
    a.apply(&Event::InitApply(serving.clone()), secs(t0, 6.0));
    a.apply(&Event::InitDone, secs(t0, 6.0));
    assert!(a.is_current());
    assert_eq!(a.counts()[0].ready, 1);
    let r = a.finish(Outcome::Complete, secs(t0, 10.0));
    let d = &r.roles[0];
    assert_eq!(
        (d.min_ready_exact, d.min_routable_exact),
        (Some(1), Some(1))
    );
    assert_eq!(r.exit(), crate::exit::Exit::Ok);
    assert_eq!(r.samples_unobserved, 1);
    assert_eq!(r.unobserved.len(), 1);
    assert!(!r.unobserved[0].changed);
    assert_eq!(
        r.sentence(),
        "0 samples over 10s: never fewer than 1 Ready and 1 routable pod per role \
         (unobserved 6s in 1 interval; nothing changed while unobserved, so the figures stay exact)"
    );
}

/// The honest answer: a pod replaced while the watch was down, with no
/// timestamp to say when, leaves the minimum open (0 or 1), never "never
/// fewer than 1".
#[test]
fn relist_after_a_dropped_watch_bounds_what_it_did_not_see() {
    let t0 = Instant::now();
    let mut a = decode_auditor();
    list(&mut a, &[pod("w-1", "decode", true, true, false)], t0);
    a.sample(t0);
    a.apply(&Event::Init, secs(t0, 8.0));
    a.apply(
        &Event::InitApply(pod("w-2", "decode", true, true, false)),
        secs(t0, 8.0),
    );
    a.apply(&Event::InitDone, secs(t0, 8.0));
    assert_eq!(a.counts()[0].ready, 1);
    assert_eq!(
        a.unresolved_deletions(),
        [(Some("prod".to_string()), "w-1".to_string())]
    );
    let r = a.finish(Outcome::Complete, secs(t0, 10.0));
    let d = &r.roles[0];
    assert_eq!((d.min_ready_exact, d.min_routable_exact), (None, None));
    assert_eq!(
        (d.min_ready_range, d.min_routable_range),
        (Some((0, 1)), Some((0, 1)))
    );
    let b = d.bounds.as_ref().expect("bounds");
    assert_eq!(b.undecided.len(), 1);
    assert_eq!((b.undecided[0].from_s, b.undecided[0].to_s), (0.0, 8.0));
    assert_eq!(r.exit(), crate::exit::Exit::Unproven);
    assert_eq!(r.exit().code(), 4);
    let sentence = r.sentence();
    assert!(
        sentence
            .contains("the minimum cannot be established: decode 0–2 Ready and 0–2 routable from"),
        "{sentence}"
    );
    assert!(!sentence.contains("never fewer"), "{sentence}");
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(json["unobserved"][0]["watch"], "pods");
    assert_eq!(json["unobserved"][0]["changed"], true);
    assert_eq!(
        json["roles"][0]["bounds"]["min_ready"],
        serde_json::json!([0, 1])
    );
    assert!(json["roles"][0]["min_ready_exact"].is_null());
}

#[test]
fn relist_drops_pods_deleted_while_the_watch_was_down() {
    let t0 = Instant::now();
    let mut a = decode_auditor();
    list(
        &mut a,
        &[
            pod("a", "decode", true, true, false),
            pod("b", "decode", true, true, false),
        ],
        t0,
    );
    assert_eq!(a.counts()[0].ready, 2);
    list(
        &mut a,
        &[pod("b", "decode", true, true, false)],
        secs(t0, 4.0),
    );
    assert_eq!(a.counts()[0].ready, 1);
    assert_eq!(a.lists(), 2);
}

#[test]
fn ready_but_not_routable_is_a_silent_outage() {
    let t0 = Instant::now();
    let mut a = decode_auditor();
    list(&mut a, &[pod("old", "decode", true, true, false)], t0);
    a.sample(t0);
    // surge-no-readiness: the new pod is Ready at once but registers only
    // after loading weights; the old one is retired in between.
    a.apply(
        &Event::Apply(pod("new", "decode", true, false, false)),
        secs(t0, 2.0),
    );
    a.apply(
        &Event::Apply(pod("old", "decode", false, false, true)),
        secs(t0, 4.0),
    );
    a.sample(secs(t0, 10.0));
    a.apply(
        &Event::Apply(pod("new", "decode", true, true, false)),
        secs(t0, 144.0),
    );
    a.sample(secs(t0, 150.0));
    let r = a.finish(Outcome::Complete, secs(t0, 150.0));
    let d = &r.roles[0];
    assert_eq!(d.min_ready_exact, Some(1));
    assert_eq!(d.min_ready_sampled, Some(1));
    assert_eq!(d.min_routable_exact, Some(0));
    assert_eq!(d.min_routable_sampled, Some(0));
    assert_eq!(d.seconds_below_min_ready, 0.0);
    assert_eq!(d.seconds_below_min_routable, 140.0);
    assert_eq!(d.longest_gap_s, 140.0);
    assert_eq!(r.exit(), crate::exit::Exit::Findings);
    assert!(r.sentence().contains("silent outage"), "{}", r.sentence());
}

#[test]
fn a_pod_that_is_not_an_infera_worker_serves_when_ready() {
    let t0 = Instant::now();
    let mut a = decode_auditor();
    let mut web = pod("web", "decode", true, false, false);
    if let Some(spec) = web.spec.as_mut() {
        spec.containers[0].command = Some(vec!["nginx".into()]);
    }
    list(&mut a, &[web], t0);
    a.sample(t0);
    let r = a.finish(Outcome::Complete, secs(t0, 30.0));
    let d = &r.roles[0];
    assert_eq!(d.min_ready_exact, Some(1));
    assert_eq!(
        d.min_routable_exact,
        Some(1),
        "no registration exists for it"
    );
    assert_eq!(d.seconds_below_min_routable, 0.0);
    assert_eq!(r.exit(), crate::exit::Exit::Ok);
}

#[test]
fn time_below_min_sums_and_longest_gap_is_the_longest_interval() {
    let t0 = Instant::now();
    let mut a = Auditor::new(
        vec![role("decode", "decode")],
        2,
        Duration::from_secs(10),
        1.0,
    );
    let up = |n: &str| pod(n, "decode", true, true, false);
    let down = |n: &str| pod(n, "decode", false, false, false);
    list(&mut a, &[up("a"), up("b")], t0);
    a.apply(&Event::Apply(down("a")), secs(t0, 10.0)); // below 2 from 10 s
    a.apply(&Event::Apply(up("a")), secs(t0, 14.0)); // 4 s
    a.apply(&Event::Apply(down("b")), secs(t0, 20.0));
    a.apply(&Event::Apply(down("a")), secs(t0, 21.0)); // 0 Ready
    a.apply(&Event::Apply(up("a")), secs(t0, 27.0));
    a.apply(&Event::Apply(up("b")), secs(t0, 30.0)); // 10 s
    a.apply(&Event::Apply(down("b")), secs(t0, 40.0)); // open until the end: 5 s
    let r = a.finish(Outcome::Complete, secs(t0, 45.0));
    let d = &r.roles[0];
    assert_eq!(d.min_ready_exact, Some(0));
    assert_eq!(d.seconds_below_min_ready, 19.0);
    assert_eq!(d.seconds_below_min_routable, 19.0);
    assert_eq!(d.longest_gap_s, 10.0);
}

#[test]
fn time_scale_reports_simulated_seconds() {
    let t0 = Instant::now();
    let mut a = Auditor::new(
        vec![role("decode", "decode")],
        1,
        Duration::from_secs(10),
        70.0,
    );
    assert_eq!(
        a.sample_wall_interval(),
        Duration::from_secs_f64(10.0 / 70.0)
    );
    list(&mut a, &[pod("old", "decode", true, true, false)], t0);
    a.apply(
        &Event::Apply(pod("old", "decode", false, false, true)),
        secs(t0, 1.0),
    );
    a.apply(
        &Event::Apply(pod("new", "decode", true, true, false)),
        secs(t0, 3.0),
    );
    let r = a.finish(Outcome::Complete, secs(t0, 4.0));
    assert_eq!(r.roles[0].seconds_below_min_ready, 140.0);
    assert_eq!(r.duration_s, 280.0);
}

#[test]
fn roles_are_counted_separately_and_terminating_pods_do_not_count() {
    let t0 = Instant::now();
    let mut a = Auditor::new(
        vec![role("prefill", "prefill"), role("decode", "decode")],
        1,
        Duration::from_secs(10),
        1.0,
    );
    list(
        &mut a,
        &[
            pod("p", "prefill", true, true, false),
            pod("d", "decode", true, true, true),
            pod("other", "router", true, true, false),
        ],
        t0,
    );
    let c = a.counts();
    assert_eq!((c[0].ready, c[0].routable), (1, 1));
    assert_eq!((c[1].ready, c[1].routable), (0, 0));
}

#[test]
fn events_before_the_first_list_are_not_measured() {
    let t0 = Instant::now();
    let mut a = decode_auditor();
    a.sample(t0);
    let r = a.finish(Outcome::Interrupted, secs(t0, 1.0));
    assert_eq!(r.samples, 0);
    assert_eq!(r.roles[0].min_ready_exact, None);
    assert_eq!(r.exit(), crate::exit::Exit::Interrupted);
    assert!(r.sentence().contains("never arrived"));
}

#[test]
fn report_json_has_exactly_the_issue_shape() {
    let t0 = Instant::now();
    let mut a = decode_auditor().with_target("idep/llm");
    list(&mut a, &[pod("old", "decode", true, true, false)], t0);
    a.sample(t0);
    a.step(Step {
        service: "decode".into(),
        kind: "surge-created".into(),
        pod: Some("new".into()),
        node: Some("gpu-1".into()),
        at: secs(t0, 2.0),
    });
    let r = a.finish(Outcome::Complete, secs(t0, 5.0));
    let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&v),
        [
            "duration_s",
            "outcome",
            "roles",
            "sample_interval_s",
            "samples",
            "started_at",
            "steps",
            "target"
        ]
    );
    assert_eq!(
        keys(&v["roles"][0]),
        [
            "longest_gap_s",
            "min_ready_exact",
            "min_ready_sampled",
            "min_routable_exact",
            "role",
            "seconds_below_min_ready",
            "seconds_below_min_routable",
            "services"
        ]
    );
    assert_eq!(
        keys(&v["steps"][0]),
        ["at", "elapsed_s", "kind", "node", "pod", "service"]
    );
    assert_eq!(v["outcome"], "complete");
    assert_eq!(v["steps"][0]["elapsed_s"], 2.0);
    assert_eq!(v["target"], "idep/llm");
}

#[test]
fn memory_stays_bounded_over_a_long_churny_audit() {
    let t0 = Instant::now();
    let mut a = decode_auditor().with_samples_csv(Box::new(std::io::sink()));
    list(&mut a, &[pod("a", "decode", true, true, false)], t0);
    // 24 h of a flapping pod every 5 s and a sample every 10 s.
    for i in 0..(24 * 3600 / 5) {
        let now = secs(t0, f64::from(i) * 5.0);
        a.apply(
            &Event::Apply(pod("b", "decode", i % 2 == 0, true, false)),
            now,
        );
        if i % 2 == 0 {
            a.sample(now);
        }
    }
    let r = a.finish(Outcome::Complete, secs(t0, 86400.0));
    assert_eq!(r.samples, 8640);
    assert!(r.timeline.roles[0].1.len() <= 4097);
    assert!(r.timeline.samples.len() <= 4096);
    assert_eq!(r.roles[0].min_ready_exact, Some(1));
}

#[test]
fn timeline_files_are_written() {
    let t0 = Instant::now();
    let mut a = decode_auditor().with_target("idep/llm");
    list(&mut a, &[pod("old", "decode", true, true, false)], t0);
    a.sample(t0);
    a.apply(
        &Event::Apply(pod("old", "decode", false, false, true)),
        secs(t0, 12.0),
    );
    a.step(Step {
        service: "decode".into(),
        kind: "old-terminating".into(),
        pod: Some("old".into()),
        node: None,
        at: secs(t0, 12.0),
    });
    a.apply(
        &Event::Apply(pod("new", "decode", true, true, false)),
        secs(t0, 15.0),
    );
    a.sample(secs(t0, 20.0));
    let r = a.finish(Outcome::Complete, secs(t0, 20.0));
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("t.svg");
    let csv = dir.path().join("t.csv");
    r.write_timeline(&svg).unwrap();
    r.write_timeline(&csv).unwrap();
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
    assert!(svg.contains("role decode"));
    let csv = std::fs::read_to_string(csv).unwrap();
    assert!(csv.starts_with("elapsed_s,role,ready,routable,event\n"));
    assert!(csv.contains("12.000,decode,0,0,change"), "{csv}");
    assert!(
        csv.contains("12.000,,,,step:decode old-terminating"),
        "{csv}"
    );
    assert!(r.write_timeline(&dir.path().join("t.png")).is_err());
    assert!(r.table().contains("min Ready exact"));
    // The evidence starts at the first list, 12 s before the first step:
    // the report says so (the HTML page's `started` once showed the step).
    let started = r.started_at.clone().unwrap();
    let first = jiff::Timestamp::from_str(&r.steps[0].at).unwrap();
    let begun = jiff::Timestamp::from_str(&started).unwrap();
    assert_eq!(
        first.duration_since(begun).as_secs(),
        12,
        "{started} {}",
        r.steps[0].at
    );
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(json["started_at"], started.as_str());
}

#[test]
fn verdict_leads_with_the_outcome_when_the_run_did_not_complete() {
    let t0 = Instant::now();
    let mut a = decode_auditor();
    list(&mut a, &[pod("w-1", "decode", true, true, false)], t0);
    a.sample(secs(t0, 1.0));
    let held = "1 sample over 5s: never fewer than 1 Ready and 1 routable pod per role";
    let r = a.finish(Outcome::Reverted, secs(t0, 5.0));
    assert_eq!(r.sentence(), held);
    assert_eq!(r.verdict(), format!("reverted; {held}"));
    let mut complete = r.clone();
    complete.outcome = Outcome::Complete;
    assert_eq!(complete.verdict(), held);
}

/// The server's time of a synthetic instant, to the millisecond.
fn stamp(at: Instant) -> String {
    let now = Instant::now();
    let wall = match at.checked_duration_since(now) {
        Some(ahead) => std::time::SystemTime::now() + ahead,
        None => std::time::SystemTime::now() - now.saturating_duration_since(at),
    };
    let t = jiff::Timestamp::try_from(wall).expect("a timestamp");
    t.round(jiff::Unit::Millisecond).unwrap_or(t).to_string()
}

/// A worker created at `created`, its container started at `started`,
/// Ready from `ready`, registered by `registered` (managedFields).
fn timed_pod(
    name: &str,
    created: Instant,
    started: Instant,
    ready: Instant,
    registered: Instant,
) -> Pod {
    let mut p = pod(name, "decode", true, true, false);
    let extra: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"creationTimestamp": stamp(created), "uid": name, "managedFields": [
            {"manager": "worker", "operation": "Update", "time": stamp(registered),
             "fieldsType": "FieldsV1",
             "fieldsV1": {"f:metadata": {"f:annotations": {"f:infera.amd.com/worker-info": {}}}}}]},
        "status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": stamp(ready)}],
            "containerStatuses": [{"name": "infera", "image": "i", "imageID": "", "ready": true,
                "restartCount": 0, "state": {"running": {"startedAt": stamp(started)}}}]}
    }))
    .unwrap();
    p.metadata.creation_timestamp = extra.metadata.creation_timestamp;
    p.metadata.uid = extra.metadata.uid;
    p.metadata.managed_fields = extra.metadata.managed_fields;
    p.status = extra.status;
    p
}

/// A pod replaced during a partition: the re-list shows the new one, its
/// Ready and registration times; an Event dates the old one's deletion.
/// Ready is exact again (5 s below); routable is bounded by the
/// registration's window (certainly never below, possibly 6 s).
#[test]
fn a_partition_is_reconstructed_from_the_servers_timestamps() {
    let t0 = Instant::now();
    let mut a = decode_auditor();
    list(&mut a, &[pod("old", "decode", true, true, false)], t0);
    a.watch_error(secs(t0, 1.0), "connection refused");
    assert!(!a.is_current());
    let new = timed_pod(
        "new",
        secs(t0, 20.0),
        secs(t0, 21.0),
        secs(t0, 30.0),
        secs(t0, 31.0),
    );
    list(&mut a, &[new], secs(t0, 60.0));
    assert!(a.is_current());
    let deleted: jiff::Timestamp = stamp(secs(t0, 25.0)).parse().expect("a timestamp");
    assert!(a.deleted_at(Some("prod"), "old", deleted));
    let r = a.finish(Outcome::Complete, secs(t0, 90.0));
    let d = &r.roles[0];
    assert_eq!(d.min_ready_exact, Some(0), "{}", r.to_json());
    assert!(
        (d.seconds_below_min_ready - 5.0).abs() < 0.05,
        "{}",
        r.to_json()
    );
    assert_eq!(d.min_routable_range, Some((0, 1)), "{}", r.to_json());
    let b = d.bounds.as_ref().expect("bounds");
    assert_eq!(d.seconds_below_min_routable, 0.0);
    assert!(
        (b.seconds_possibly_below_min_routable - 6.0).abs() < 0.05,
        "{}",
        r.to_json()
    );
    assert_eq!(r.exit(), crate::exit::Exit::Findings);
    assert!(r.reconstructed_changes >= 2, "{}", r.to_json());
    assert!(
        r.sentence().contains("decode fell to 0 Ready for 5s"),
        "{}",
        r.sentence()
    );
}

/// `pod(…)` made by a `kubectl rollout restart` at `at`.
fn restarted(mut p: Pod, at: &str) -> Pod {
    p.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(crate::pods::RESTARTED_AT.into(), at.into());
    p
}

/// A restart's replacement deleted before it was Ready while the old pod
/// runs on (the operator reverted the template) is said; a restart that
/// went through (the old pod went, the replacement served) is not.
#[test]
fn a_restart_undone_before_it_served_is_said() {
    let t0 = Instant::now();
    let at = "2026-12-08T00:00:00Z";
    let mut a = decode_auditor().with_target("idep/llm");
    list(&mut a, &[pod("old", "decode", true, true, false)], t0);
    let new = || restarted(pod("new", "decode", false, false, false), at);
    a.apply(&Event::Apply(new()), secs(t0, 1.0));
    a.apply(&Event::Delete(new()), secs(t0, 2.0));
    let r = a.finish(Outcome::Complete, secs(t0, 5.0));
    assert_eq!(
        r.undone_restarts,
        [crate::report::UndoneRestart {
            pod: "new".into(),
            restarted_at: at.into()
        }]
    );
    assert!(
        r.sentence().ends_with(
            "; a restart was undone before it served: new (kubectl.kubernetes.io/restartedAt 2026-12-08T00:00:00Z) was deleted before it was Ready and the pods without that restart kept running; if the infera operator renders this Deployment it reverts edits to it: restart through the InferaDeployment (`infera rollout restart idep/NAME`)"
        ),
        "{}",
        r.sentence()
    );

    let mut b = decode_auditor().with_target("idep/llm");
    list(&mut b, &[pod("old", "decode", true, true, false)], t0);
    let ready = restarted(pod("new", "decode", true, true, false), at);
    b.apply(&Event::Apply(ready), secs(t0, 1.0));
    b.apply(
        &Event::Delete(pod("old", "decode", false, false, true)),
        secs(t0, 2.0),
    );
    let r = b.finish(Outcome::Complete, secs(t0, 5.0));
    assert!(r.undone_restarts.is_empty(), "{:?}", r.undone_restarts);
    assert!(!r.sentence().contains("undone"), "{}", r.sentence());
}

/// `pod(…)` running the engine image `image`.
fn on_image(mut p: Pod, image: &str) -> Pod {
    if let Some(c) = p.spec.as_mut().and_then(|s| s.containers.first_mut()) {
        c.image = Some(image.into());
    }
    p
}

/// A prefill/decode fleet rolled one role at a time to another engine
/// version: from the new decode's first serving instant to the old
/// prefill's deletion, a prefill and a decode of different KV identities
/// served together; the report says when and for how long.
#[test]
fn the_mixed_window_runs_from_the_first_new_to_the_last_old() {
    let t0 = Instant::now();
    let mut a = Auditor::new(
        vec![role("prefill", "prefill"), role("decode", "decode")],
        1,
        Duration::from_secs(10),
        1.0,
    )
    .with_target("idep/llm");
    let (v1, v2) = ("rocm/infera:0.9.1", "rocm/infera:0.9.2");
    let p = |name: &str, service: &str, image: &str| {
        on_image(pod(name, service, true, true, false), image)
    };
    list(
        &mut a,
        &[p("p-old", "prefill", v1), p("d-old", "decode", v1)],
        t0,
    );
    a.apply(&Event::Apply(p("d-new", "decode", v2)), secs(t0, 5.0));
    a.apply(&Event::Delete(p("d-old", "decode", v1)), secs(t0, 8.0));
    a.apply(&Event::Apply(p("p-new", "prefill", v2)), secs(t0, 12.0));
    a.apply(&Event::Delete(p("p-old", "prefill", v1)), secs(t0, 14.0));
    let r = a.finish(Outcome::Complete, secs(t0, 20.0));
    assert_eq!(
        r.mixed_windows,
        [crate::MixedWindow {
            from_s: 5.0,
            to_s: 14.0
        }]
    );
    assert!(
        r.sentence().contains(
            "; prefill and decode of different KV identities served together for 9s (+5s to +14s)"
        ),
        "{}",
        r.sentence()
    );
    // The same roll with one image throughout mixes nothing.
    let mut b = Auditor::new(
        vec![role("prefill", "prefill"), role("decode", "decode")],
        1,
        Duration::from_secs(10),
        1.0,
    );
    list(
        &mut b,
        &[p("p-old", "prefill", v1), p("d-old", "decode", v1)],
        t0,
    );
    b.apply(&Event::Apply(p("d-new", "decode", v1)), secs(t0, 5.0));
    let r = b.finish(Outcome::Complete, secs(t0, 20.0));
    assert!(r.mixed_windows.is_empty(), "{:?}", r.mixed_windows);
}
