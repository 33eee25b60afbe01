//! The upstream lab: real kube-apiserver, kube-controller-manager,
//! kube-scheduler and kubectl v1.37.2 built from Go modules (`lab/`), with
//! the simulated GPU nodes, kubelet and infera operator attached over the
//! API by `infera sim attach`. Everything runs inside the lab's own network
//! namespace (`ip netns exec`), so no packet leaves it. The roll sends
//! requests (`--traffic`) through the real kube-apiserver's service proxy
//! to the simulated router, each held against the router's own record.
//!
//! Needs root (network namespaces) and the lab's binaries: `lab/build`
//! prints their directory; export it as `INFERA_LAB_BIN`. Without them the
//! tests say why they skip; `.ci/run` sets `INFERA_LAB_REQUIRED=1`, which
//! turns that skip into a failure.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::lab::{Attached, Lab, SCENARIO_NAMESPACE, json, lab_or_skip, wait_steady};
use crate::common::traffic::{client_log, matches_truth};
use infera_sim_core::requests::RequestRecord;
use serde_json::Value;

fn pod_names(lab: &Lab) -> Vec<String> {
    let pods = json(&lab.kubectl(&["get", "pods", "-n", SCENARIO_NAMESPACE, "-o", "json"]));
    pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

/// A `kubectl get pods --watch --output-watch-events` line `EVENT NAME …`.
fn saw(events: &str, event: &str, pod: &str) -> bool {
    events.lines().any(|l| {
        let mut words = l.split_whitespace();
        words.next() == Some(event) && words.next() == Some(pod)
    })
}

#[test]
fn smoke_rollout_on_the_real_control_plane() {
    let Some(lab) = lab_or_skip("smoke_rollout_on_the_real_control_plane") else {
        return;
    };

    // The freshly built kubectl talks to the real API server.
    let version = json(&lab.kubectl(&["version", "-o", "json"]));
    assert_eq!(
        version["serverVersion"]["gitVersion"], "v1.37.2",
        "{version}"
    );
    assert_eq!(
        version["clientVersion"]["gitVersion"], "v1.37.2",
        "{version}"
    );

    let truth = lab.dir.path().join("truth.json");
    let truth_arg = truth.display().to_string();
    let attached = Attached::start_with(&lab, "pd-1p1d", &["--truth", &truth_arg]);
    // router, prefill, decode.
    wait_steady(&lab, SCENARIO_NAMESPACE, 3);

    // The lab's kubectl watches the pods while infera drives the rollout.
    let before = pod_names(&lab);
    let watch_log = lab.dir.path().join("kubectl-watch.log");
    let mut watcher = watch_pods(&lab, &watch_log, &before);

    let report = lab.dir.path().join("report.json");
    let log = lab.dir.path().join("traffic.jsonl");
    let out = lab
        .infera(&[
            "rollout",
            "restart",
            "idep/llama",
            "-n",
            SCENARIO_NAMESPACE,
            "--yes",
            "--traffic",
            "--traffic-rate",
            "5",
            "--report",
        ])
        .arg(&report)
        .arg("--traffic-log")
        .arg(&log)
        .output()
        .expect("infera rollout restart");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let attach_log = std::fs::read_to_string(lab.dir.path().join("attach.log")).unwrap_or_default();
    assert_eq!(
        out.status.code(),
        Some(0),
        "rollout on the lab failed\nstdout:\n{stdout}\nstderr:\n{stderr}\nattach log:\n{attach_log}"
    );

    assert_report_kept_every_role_serving(&report);

    // kubectl saw every old worker pod deleted and every replacement added
    // (the kubelet's final delete comes after the grace period).
    let deadline = Instant::now() + Duration::from_secs(90);
    while Instant::now() < deadline
        && pod_names(&lab)
            .iter()
            .any(|p| before.contains(p) && !p.contains("router"))
    {
        std::thread::sleep(Duration::from_secs(1));
    }
    let _ = watcher.kill();
    let _ = watcher.wait();
    let events = std::fs::read_to_string(&watch_log).unwrap_or_default();
    let after = pod_names(&lab);
    for old in before.iter().filter(|p| !p.contains("router")) {
        assert!(
            saw(&events, "DELETED", old),
            "kubectl's watch never saw {old} deleted:\n{events}"
        );
    }
    for new in after.iter().filter(|p| !before.contains(p)) {
        assert!(
            saw(&events, "ADDED", new),
            "kubectl's watch never saw {new} added:\n{events}"
        );
    }
    drop(attached);
    assert_every_request_served(&report, &log, &truth);
}

/// Requests through the real kube-apiserver's service proxy to the router
/// (Service → EndpointSlices of the real controller → the simulated
/// router): every one succeeded through a prefill and a decode, the report
/// counts each, and the router's own record matches the client's, id by id.
fn assert_every_request_served(
    report: &std::path::Path,
    log: &std::path::Path,
    truth: &std::path::Path,
) {
    let report: Value =
        serde_json::from_slice(&std::fs::read(report).expect("report written")).expect("JSON");
    let traffic = &report["traffic"];
    let log = client_log(log);
    assert!(log.len() >= 5, "{} requests: {traffic}", log.len());
    assert_eq!(
        traffic["sent"].as_u64(),
        Some(log.len() as u64),
        "{traffic}"
    );
    assert_eq!(traffic["succeeded"], traffic["sent"], "{traffic}");
    assert!(
        traffic["path"]
            .as_str()
            .is_some_and(|p| p.contains("through the API server's proxy")),
        "{traffic}"
    );
    assert!(
        log.iter()
            .all(|r| r["servedBy"].as_array().map(Vec::len) == Some(2)),
        "a request not served by a prefill and a decode: {log:?}"
    );
    let truth: Value =
        serde_json::from_slice(&std::fs::read(truth).expect("truth written")).expect("JSON");
    let records: Vec<RequestRecord> =
        serde_json::from_value(truth["requests"].clone()).expect("request records");
    let counts = matches_truth(&log, &records);
    assert_eq!(counts.keys().collect::<Vec<_>>(), ["ok"], "{counts:?}");
}

/// `kubectl get pods --watch` into `log`, returned once it has listed
/// every pod of `before`: kubectl lists first (an ADDED line per pod),
/// then watches from the list's resourceVersion, so no event is missed.
fn watch_pods(lab: &Lab, log: &std::path::Path, before: &[String]) -> std::process::Child {
    let kubectl = lab.dir.path().join("bin/kubectl");
    let watcher = lab
        .command(&kubectl)
        .args(["get", "pods", "-n", SCENARIO_NAMESPACE, "--watch"])
        // The table with an EVENT column (`-o name` drops the event type).
        .args(["--output-watch-events", "--no-headers"])
        .stdout(std::fs::File::create(log).expect("watch log"))
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get pods --watch");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !before.iter().all(|p| {
        saw(
            &std::fs::read_to_string(log).unwrap_or_default(),
            "ADDED",
            p,
        )
    }) {
        assert!(
            Instant::now() < deadline,
            "kubectl get pods --watch listed nothing"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    watcher
}

/// The rollout report: at least one Ready and routable pod per role, and
/// the `/ready` answer came through the real API server's pod proxy for
/// each surge pod.
fn assert_report_kept_every_role_serving(report: &std::path::Path) {
    let report: Value =
        serde_json::from_slice(&std::fs::read(report).expect("report written")).expect("JSON");
    for role in ["prefill", "decode"] {
        let r = report["roles"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["role"] == role))
            .unwrap_or_else(|| panic!("no role {role} in {report}"));
        assert!(r["min_ready_exact"].as_u64() >= Some(1), "{role}: {r}");
        assert!(r["min_routable_exact"].as_u64() >= Some(1), "{role}: {r}");
    }
    // The /ready answer came through the real API server's pod proxy, for
    // each surge pod.
    let proxied: Vec<&Value> = report["steps"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter(|s| s["kind"] == "ready-via-proxy")
                .collect()
        })
        .unwrap_or_default();
    assert!(
        proxied.iter().any(|s| s["service"] == "prefill")
            && proxied.iter().any(|s| s["service"] == "decode"),
        "no ready-via-proxy step per worker service: {}",
        report["steps"]
    );
}
