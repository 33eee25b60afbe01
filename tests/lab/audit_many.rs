//! `infera audit -l model=kimi -A --until-complete` on the upstream lab
//! (real kube-apiserver v1.37.2, `infera sim attach` for the world): the
//! selector picks the four labelled targets of two namespaces (not the
//! unlabelled InferaDeployment, not the operator's Deployments), one
//! cluster-wide watch per resource, a verdict per target, exit = the worst.
//! Skips with the reason without the lab (see `smoke.rs`).

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::lab::{Attached, Lab, is_ready, json, lab_or_skip, registered};
use serde_json::Value;

/// The scenario's 8 pods Ready, the infera workers registered.
fn wait_settled(lab: &Lab) {
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut last = String::new();
    while Instant::now() < deadline {
        let pods = json(&lab.kubectl(&["get", "pods", "-A", "-o", "json"]));
        let pods = pods["items"].as_array().cloned().unwrap_or_default();
        let worker = |p: &Value| p["metadata"]["labels"]["infera.amd.com/service"].is_string();
        let ready = pods
            .iter()
            .filter(|p| is_ready(p) && (!worker(p) || registered(p)))
            .count();
        if pods.len() == 8 && ready == 8 {
            return;
        }
        last = format!("{ready}/{} pods ready", pods.len());
        std::thread::sleep(Duration::from_secs(1));
    }
    panic!("the scenario never settled on the lab: {last}");
}

#[test]
fn selector_across_namespaces_on_the_real_control_plane() {
    let Some(lab) = lab_or_skip("selector_across_namespaces_on_the_real_control_plane") else {
        return;
    };
    let scenario = lab.dir.path().join("audit-many.yaml");
    std::fs::write(&scenario, include_str!("../data/audit-many.yaml")).expect("scenario file");
    let _attached = Attached::start(&lab, &scenario.display().to_string());
    wait_settled(&lab);

    let report = lab.dir.path().join("many.json");
    let err_log = lab.dir.path().join("audit.err");
    let report_arg = report.display().to_string();
    let audit = lab
        .infera(&[
            "-v",
            "audit",
            "-l",
            "model=kimi",
            "-A",
            "--until-complete",
            "--for",
            "5m",
            "--report",
            &report_arg,
        ])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&err_log).expect("log"))
        .spawn()
        .expect("infera audit");
    // Roll once the audit watches every target (its first status lines).
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&err_log)
        .unwrap_or_default()
        .contains("deploy/side (side): 1 deployment(s) complete")
    {
        assert!(Instant::now() < deadline, "the audit never started");
        std::thread::sleep(Duration::from_millis(200));
    }
    let patch = r#"{"spec":{"services":{"prefill":{"podLabels":{"infera.amd.com/restarted-at":"lab"}},"decode":{"podLabels":{"infera.amd.com/restarted-at":"lab"}}}}}"#;
    for idep in ["good", "gap"] {
        lab.kubectl_ok(&[
            "-n",
            "llm",
            "patch",
            "inferadeployments.infera.amd.com",
            idep,
            "--type",
            "merge",
            "-p",
            patch,
        ]);
    }
    lab.kubectl_ok(&["-n", "llm", "rollout", "restart", "deploy/web"]);
    lab.kubectl_ok(&["-n", "side", "rollout", "restart", "deploy/side"]);
    let out = audit.wait_with_output().expect("infera audit ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = std::fs::read_to_string(&err_log).unwrap_or_default();
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("overall: 4 targets, 3 held the floor of 1 Ready and routable per role; idep/gap (llm) fell below"),
        "{stdout}"
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let targets: Vec<(String, String, String)> = doc["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            (
                t["namespace"].as_str().unwrap_or_default().to_string(),
                t["target"].as_str().unwrap_or_default().to_string(),
                t["outcome"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let want = [
        ("llm", "idep/gap"),
        ("llm", "idep/good"),
        ("llm", "deploy/web"),
        ("side", "deploy/side"),
    ];
    assert_eq!(targets.len(), want.len(), "{doc}");
    for ((ns, target, outcome), (want_ns, want_target)) in targets.iter().zip(want) {
        assert_eq!(
            (ns.as_str(), target.as_str()),
            (want_ns, want_target),
            "{doc}"
        );
        assert_eq!(outcome, "complete", "{doc}");
    }
    for (i, min) in [(0, 0), (1, 1)] {
        for role in doc["targets"][i]["roles"].as_array().into_iter().flatten() {
            assert_eq!(role["min_ready_exact"], min, "{doc}");
            assert_eq!(role["min_routable_exact"], min, "{doc}");
        }
    }
    // One cluster-wide watch per resource, whatever the number of targets.
    let watches: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("infera::http: GET") && l.contains("watch=true"))
        .collect();
    let count = |path: &str| watches.iter().filter(|l| l.contains(path)).count();
    assert_eq!(count("GET /api/v1/pods?"), 1, "{stderr}");
    assert_eq!(count("GET /apis/apps/v1/deployments?"), 1, "{stderr}");
    assert_eq!(
        count("GET /apis/infera.amd.com/v1alpha1/inferadeployments?"),
        1,
        "{stderr}"
    );
    // The nodes, for the narration of cordons and nodes NotReady: one
    // cluster-wide watch too.
    assert_eq!(count("GET /api/v1/nodes?"), 1, "{stderr}");
    assert_eq!(watches.len(), 4, "{stderr}");
}
