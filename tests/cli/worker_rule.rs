//! The one is-a-worker rule (docs/operator-semantics.md §5) seen through
//! every view that decides it: the model (which the audit and the
//! simulator's ground truth count with), the simulated kubelet (which
//! reads pods as JSON), and lint (a Deployment with a `/health` readiness
//! probe is IR005 exactly when its pods are workers). The same pods must
//! get one answer from all three.

use infera_lint::engine::lint_source;
use infera_lint::options::LintOptions;
use infera_sim_world::kubelet;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

fn engine(name: &str, command: Value) -> Value {
    json!({"name": name, "image": "x", "command": command,
        "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}}})
}

/// (what the case is, containers, a worker).
fn cases() -> Vec<(&'static str, Value, bool)> {
    let infera = json!(["python3", "-m", "infera.engine.vllm"]);
    let sidecar = json!({"name": "proxy", "image": "envoy"});
    vec![
        (
            "engine module",
            json!([engine("main", infera.clone())]),
            true,
        ),
        (
            "in sh -c, quoted",
            json!([engine(
                "c",
                json!(["sh", "-c", "exec python3 -m 'infera.engine.sglang' --tp 8"])
            )]),
            true,
        ),
        (
            "by path",
            json!([engine(
                "c",
                json!(["python3", "/app/infera/engine/vllm.py"])
            )]),
            true,
        ),
        (
            "after a sidecar",
            json!([sidecar.clone(), engine("worker", infera.clone())]),
            true,
        ),
        (
            "main runs vLLM",
            json!([
                engine("main", json!(["vllm", "serve", "m"])),
                engine("side", infera)
            ]),
            false,
        ),
        (
            "text in a flag",
            json!([engine(
                "c",
                json!(["serve", "--config=/etc/infera.engine.yaml"])
            )]),
            false,
        ),
        ("no server", json!([sidecar]), false),
    ]
}

fn deployment(containers: &Value) -> String {
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "w"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "w"}},
            "template": {"metadata": {"labels": {"app": "w"}},
                "spec": {"containers": containers}}}});
    serde_json::to_string(&d).expect("json")
}

#[test]
fn lint_audit_and_the_sim_agree_on_which_pods_are_workers() {
    let options = LintOptions {
        node_gpus: 8,
        ..LintOptions::default()
    };
    for (case, containers, worker) in cases() {
        let pod_json = json!({"metadata": {"name": "p"}, "spec": {"containers": containers}});
        let pod: Pod = serde_json::from_value(pod_json.clone()).expect("a pod");
        let model = infera_model::pod::is_infera_worker(&pod);
        let kubelet = kubelet::is_infera_worker(&pod_json);
        let outcome = lint_source("w.yaml", deployment(&containers).as_bytes(), &options);
        let lint = outcome.findings.iter().any(|f| f.code == "IR005");
        assert_eq!(
            (model, kubelet, lint),
            (worker, worker, worker),
            "{case}: (model/audit, sim kubelet, lint) disagree with the rule"
        );
    }
}
