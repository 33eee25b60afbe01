//! The upstream lab: real kube-apiserver, kube-controller-manager,
//! kube-scheduler and kubectl v1.37.2 built from Go modules (`lab/`), with
//! the simulated GPU nodes, kubelet and infera operator attached over the
//! API by `infera sim attach`. Everything runs inside the lab's own network
//! namespace (`ip netns exec`), so no packet leaves it.
//!
//! Needs root (network namespaces) and the lab's binaries: `lab/build`
//! prints their directory; export it as `INFERA_LAB_BIN`. Without them the
//! tests say why they skip; `.ci/run` sets `INFERA_LAB_REQUIRED=1`, which
//! turns that skip into a failure.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::lab::{Attached, Lab, SCENARIO_NAMESPACE, json, lab_or_skip, wait_steady};
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

    let attached = Attached::start(&lab, "pd-1p1d");
    // router, prefill, decode.
    wait_steady(&lab, SCENARIO_NAMESPACE, 3);

    // The lab's kubectl watches the pods while infera drives the rollout.
    let before = pod_names(&lab);
    let watch_log = lab.dir.path().join("kubectl-watch.log");
    let mut watcher = watch_pods(&lab, &watch_log, &before);

    let report = lab.dir.path().join("report.json");
    let out = lab
        .infera(&[
            "rollout",
            "restart",
            "idep/llama",
            "-n",
            SCENARIO_NAMESPACE,
            "--yes",
            "--report",
        ])
        .arg(&report)
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
