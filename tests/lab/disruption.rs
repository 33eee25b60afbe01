//! PodDisruptionBudgets and the Eviction API on the lab's real control
//! plane (kube-controller-manager runs upstream's disruption controller,
//! kube-apiserver the Eviction API): the budgets of
//! `tests/common/disruption.rs` get the status the simulator gives them
//! (`CASES`), and the same evictions get the same answers (`EVICTION_STEPS`:
//! code, message and cause), as `tests/sim/disruption.rs` checks on the
//! embedded sim. One lab, `infera sim attach` for the nodes. The evictions
//! are sent with curl inside the lab's network namespace, so the answer's
//! code and cause are read as sent (kubectl prints only the message).
//! Skips with the reason without the lab (see `smoke.rs`).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::disruption::{CASES, EVICTION_STEPS, budget, deployment};
use crate::common::lab::{
    Attached, Lab, SCENARIO_NAMESPACE, is_ready, json, lab_or_skip, wait_steady,
};

const NS: &str = SCENARIO_NAMESPACE;

fn apply(lab: &Lab, object: &impl serde::Serialize) {
    let file = lab.dir.path().join("object.json");
    let text = serde_json::to_string(object).expect("object JSON");
    std::fs::write(&file, text).expect("write object");
    lab.kubectl_ok(&["apply", "-f", file.to_str().unwrap_or_default()]);
}

fn poll<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn get(lab: &Lab, what: &[&str]) -> Value {
    json(&lab.kubectl(&[&["get"], what, &["-n", NS, "-o", "json"]].concat()))
}

/// (expectedPods, desiredHealthy, disruptionsAllowed, currentHealthy) once observed.
fn observed(lab: &Lab, name: &str) -> (i32, i32, i32, i32) {
    poll(&format!("budget {name} observed"), || {
        let b = get(lab, &["pdb", name]);
        let s = &b["status"];
        let n = |k: &str| s[k].as_i64().and_then(|v| i32::try_from(v).ok());
        (s["observedGeneration"].as_i64()? >= b["metadata"]["generation"].as_i64()?).then_some((
            n("expectedPods")?,
            n("desiredHealthy")?,
            n("disruptionsAllowed")?,
            n("currentHealthy")?,
        ))
    })
}

fn ready_web(lab: &Lab) -> Vec<String> {
    let pods = get(lab, &["pods", "-l", "app=web"]);
    pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| is_ready(p) && p["metadata"]["deletionTimestamp"].is_null())
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

/// POST an Eviction for `pod`: (HTTP code, message and first cause).
fn evict(lab: &Lab, pod: &str) -> (u16, String) {
    let pki = lab.dir.path().join("pki");
    let body = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": pod, "namespace": NS}});
    let out = Command::new("ip")
        .args(["netns", "exec", &lab.netns, "curl", "-sS", "-X", "POST"])
        .arg("--cacert")
        .arg(pki.join("ca.crt"))
        .arg("--cert")
        .arg(pki.join("admin.crt"))
        .arg("--key")
        .arg(pki.join("admin.key"))
        .args([
            "-H",
            "Content-Type: application/json",
            "-w",
            "\n%{http_code}",
            "--data",
        ])
        .arg(body.to_string())
        .arg(format!(
            "https://127.0.0.1:6443/api/v1/namespaces/{NS}/pods/{pod}/eviction"
        ))
        .output()
        .expect("run curl in the lab's namespace");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (answer, code) = text.rsplit_once('\n').unwrap_or((&text, "0"));
    let code: u16 = code.trim().parse().unwrap_or(0);
    let status: Value = serde_json::from_str(answer).unwrap_or_default();
    if code == 201 {
        return (code, String::new());
    }
    let cause = status["details"]["causes"][0]["message"]
        .as_str()
        .map(|c| format!(" ({c})"))
        .unwrap_or_default();
    (
        code,
        format!("{}{cause}", status["message"].as_str().unwrap_or(answer)),
    )
}

fn case_statuses(lab: &Lab) -> Vec<(String, (i32, i32, i32, i32))> {
    CASES
        .iter()
        .map(|(name, min, max, app, _)| {
            apply(lab, &budget(NS, name, *min, *max, app));
            let status = observed(lab, name);
            lab.kubectl_ok(&["delete", "pdb", name, "-n", NS]);
            ((*name).to_string(), status)
        })
        .collect()
}

fn eviction_answers(lab: &Lab) -> Vec<(String, u16, String)> {
    let web = ready_web(lab);
    let [a, b, ..] = web.as_slice() else {
        panic!("web has {} Ready pods, want 3", web.len());
    };
    let mut out = Vec::new();
    apply(lab, &budget(NS, "web", Some("3"), None, "web"));
    observed(lab, "web");
    let (code, msg) = evict(lab, a);
    out.push(("web at its budget".to_string(), code, msg));
    apply(lab, &budget(NS, "web", Some("2"), None, "web"));
    observed(lab, "web");
    let (code, msg) = evict(lab, a);
    out.push(("web one above".to_string(), code, msg));
    poll("web counting 2 healthy", || {
        (observed(lab, "web").3 == 2).then_some(())
    });
    let (code, msg) = evict(lab, b);
    out.push(("web spent".to_string(), code, msg));
    apply(lab, &budget(NS, "web-too", None, Some("1"), "web"));
    observed(lab, "web-too");
    let (code, msg) = evict(lab, b);
    out.push(("web under two budgets".to_string(), code, msg));
    out
}

#[test]
fn budgets_and_evictions_answer_as_on_the_sim() {
    let Some(lab) = lab_or_skip("budgets_and_evictions_answer_as_on_the_sim") else {
        return;
    };
    let _attached = Attached::start(&lab, "pd-1p1d");
    wait_steady(&lab, NS, 3);
    let tolerate = json!({"tolerations": [{"key": "infera.amd.com/simulated-node",
        "operator": "Exists", "effect": "NoSchedule"}]});
    apply(&lab, &deployment(NS, "web", 3, &tolerate));
    poll("web Ready", || (ready_web(&lab).len() == 3).then_some(()));
    let want: Vec<(String, (i32, i32, i32, i32))> = CASES
        .iter()
        .map(|(name, .., counts)| ((*name).to_string(), *counts))
        .collect();
    assert_eq!(
        case_statuses(&lab),
        want,
        "(expectedPods, desiredHealthy, disruptionsAllowed, currentHealthy)"
    );
    let answers = eviction_answers(&lab);
    let got: Vec<(&str, u16, &str)> = answers
        .iter()
        .map(|(step, code, msg)| (step.as_str(), *code, msg.as_str()))
        .collect();
    assert_eq!(got, EVICTION_STEPS);
}
