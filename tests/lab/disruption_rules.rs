//! The disruption rules against the real kube-apiserver v1.37.2: `lint
//! --cluster` lists the namespace's PodDisruptionBudgets and
//! PersistentVolumeClaims as the server stores them (defaulted, wire form)
//! and judges the workloads with them: a budget that never allows an
//! eviction (IR013, pointing at the budget, its fix in the budget's
//! document), a ReadWriteOncePod claim on a surge-first worker (IR015, an
//! error: the live claim's mode is known), and the single replica no budget
//! covers (IR014, only the uncovered one). One lab, no kubelet: lint reads
//! objects, not pods.

use std::time::Instant;

use crate::common::lab::lab_or_skip;
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
}
