//! The disruption rules against the real kube-apiserver v1.37.2: `lint
//! --cluster` lists the namespace's PodDisruptionBudgets and
//! PersistentVolumeClaims as the server stores them (defaulted, wire form)
//! and judges the workloads with them: a budget that never allows an
//! eviction (IR013, pointing at the budget, its fix in the budget's
//! document), a ReadWriteOncePod claim on a surge-first worker (IR015, an
//! error: the live claim's mode is known), and the single replica no budget
//! covers (IR014, only the uncovered one). Then a serving custom resource:
//! once its CRD is installed, `lint --cluster` finds it by discovery and
//! gives the live object the findings the same manifest gets as a file.
//! One lab, no kubelet: lint reads objects, not pods.

use std::time::Instant;

use crate::common::case::root;
use crate::common::lab::{Lab, lab_or_skip};
use serde_json::Value;

const NS: &str = "rules";

/// A surge-first vLLM Deployment of one replica named `name`, mounting the
/// claim `weights` when `claim` is set.
fn deployment(name: &str, claim: bool) -> String {
    let volumes = if claim {
        ", volumes: [{name: w, persistentVolumeClaim: {claimName: weights}}]"
    } else {
        ""
    };
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: {NS}}}
spec:
  replicas: 1
  strategy: {{rollingUpdate: {{maxSurge: 1, maxUnavailable: 0}}}}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec: {{containers: [{{name: vllm, image: vllm/vllm-openai:v0.10.0, readinessProbe: {{httpGet: {{path: /health, port: 8000}}}}}}]{volumes}}}
"
    )
}

const BUDGET_AND_CLAIM: &str = "apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: guarded, namespace: rules}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: guarded}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: weights, namespace: rules}
spec:
  accessModes: [ReadWriteOncePod]
  resources: {requests: {storage: 1Gi}}
";

#[test]
fn lint_cluster_judges_workers_with_their_live_budgets_and_claims() {
    let Some(lab) = lab_or_skip("lint_cluster_judges_workers_with_their_live_budgets_and_claims")
    else {
        return;
    };
    let manifest = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n---\n{}---\n{}---\n{BUDGET_AND_CLAIM}",
        deployment("guarded", true),
        deployment("alone", false)
    );
    let file = lab.dir.path().join("disruption.yaml");
    std::fs::write(&file, manifest).expect("write the manifest");
    let applied = lab.kubectl(&["apply", "-f", file.to_str().unwrap_or_default()]);
    assert!(
        applied.status.success(),
        "kubectl apply: {}",
        String::from_utf8_lossy(&applied.stderr)
    );

    let started = Instant::now();
    let out = lab
        .infera(&["lint", "--cluster", "-n", NS, "-o", "json"])
        .output()
        .expect("run infera lint --cluster");
    eprintln!("lint --cluster -n {NS}: {:?}", started.elapsed());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let found: Vec<(String, String, String, String)> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
            (
                text(&f["code"]),
                text(&f["severity"]),
                text(&f["object"]["kind"]),
                text(&f["object"]["name"]),
            )
        })
        .collect();
    let want: Vec<(String, String, String, String)> = [
        ("IR013", "error", "PodDisruptionBudget", "guarded"),
        ("IR014", "warning", "Deployment", "alone"),
        ("IR015", "error", "Deployment", "guarded"),
    ]
    .iter()
    .map(|(c, s, k, n)| (c.to_string(), s.to_string(), k.to_string(), n.to_string()))
    .collect();
    let mut sorted = found.clone();
    sorted.sort();
    assert_eq!(sorted, want, "{stdout}");

    // The budget's fix is a merge patch on the budget's own object.
    let ir013 = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["code"] == "IR013")
        .expect("IR013");
    assert_eq!(ir013["fix"]["changes"][0]["path"], "/spec", "{ir013}");
    assert_eq!(
        ir013["fix"]["changes"][0]["value"]["maxUnavailable"], 1,
        "{ir013}"
    );
    serving_kind_found_by_discovery(&lab);
}

/// `lint -o json` findings as (code, severity, kind, name), sorted.
fn codes(out: &std::process::Output) -> Vec<(String, String, String, String)> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let mut found: Vec<_> = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            (
                text(&f["code"]),
                text(&f["severity"]),
                text(&f["object"]["kind"]),
                text(&f["object"]["name"]),
            )
        })
        .collect();
    found.sort();
    found
}

/// The production-stack sample of the public corpus, applied once its CRD
/// is served: linted live as it is linted as a file.
fn serving_kind_found_by_discovery(lab: &Lab) {
    const SERVING_NS: &str = "serving";
    let crd = root().join("lab/crd/production-stack.vllm.ai_vllmruntimes.minimal.yaml");
    let sample = root().join("tests/data/ecosystem/production-stack/vllmruntime-sample.yaml");
    let (crd, sample) = (crd.to_string_lossy(), sample.to_string_lossy());
    lab.kubectl_ok(&["apply", "--server-side", "-f", &crd]);
    // `kubectl wait` fails outright while the CRD has no conditions yet.
    let deadline = Instant::now() + std::time::Duration::from_secs(60);
    let established = "-o=jsonpath={.status.conditions[?(@.type==\"Established\")].status}";
    let name = "vllmruntimes.production-stack.vllm.ai";
    while lab.kubectl(&["get", "crd", name, established]).stdout != b"True" {
        assert!(Instant::now() < deadline, "CRD {name} never Established");
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    lab.kubectl_ok(&["create", "namespace", SERVING_NS]);
    lab.kubectl_ok(&["apply", "-n", SERVING_NS, "-f", &sample]);
    let as_file = lab
        .infera(&["lint", &sample, "-o", "json"])
        .output()
        .expect("run infera lint FILE");
    let live = lab
        .infera(&["lint", "--cluster", "-n", SERVING_NS, "-o", "json"])
        .output()
        .expect("run infera lint --cluster");
    let want = codes(&as_file);
    assert!(
        want.iter().any(|(_, _, kind, _)| kind == "VLLMRuntime"),
        "the sample has findings as a file: {want:?}"
    );
    assert_eq!(
        codes(&live),
        want,
        "live:\n{}\n{}",
        String::from_utf8_lossy(&live.stdout),
        String::from_utf8_lossy(&live.stderr)
    );
    assert_eq!(live.status.code(), as_file.status.code());
}
