//! The operator generation over real HTTP: the simulator's operator renders
//! as its scenario's `operator`, and `infera lint --cluster` / `infera audit`
//! read the generation off the Deployments it rendered.

use std::time::Duration;

use serde_json::Value;

use crate::common::sim::Sim;

const SPEED: f64 = 200.0;

/// `infera lint --cluster -o json` against `sim`: (exit code, error findings
/// as (code, service), stderr).
async fn lint_cluster(sim: &Sim) -> (Option<i32>, Vec<(String, String)>, String) {
    lint_cluster_at(sim, "error").await
}

/// The same, with the findings of `severity`.
async fn lint_cluster_at(
    sim: &Sim,
    severity: &str,
) -> (Option<i32>, Vec<(String, String)>, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_infera"))
        .args(["lint", "--cluster", "-o", "json", "--kubeconfig"])
        .arg(&sim.kubeconfig)
        .env_remove("KUBECONFIG")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    let mut found: Vec<(String, String)> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == severity)
        .map(|f| {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
            (text(&f["code"]), text(&f["object"]["service"]))
        })
        .collect();
    found.sort();
    (out.status.code(), found, stderr)
}

/// A scenario, the exit code and error findings `lint --cluster` gives on
/// it, and the note it prints.
type LintCase = (
    &'static str,
    Option<i32>,
    &'static [(&'static str, &'static str)],
    &'static str,
);

/// The lab finding, rehearsed: on the operator before #176 a
/// single-replica worker is a certain gap, and `lint --cluster` says so
/// (IR008, once per worker: the operator's Deployments are not linted
/// again); on the #176 operator the same fleet is clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lint_cluster_lints_as_the_detected_generation() {
    #[rustfmt::skip]
    let cases: [LintCase; 2] = [
        ("pd-1p1d-pre176", Some(1), &[("IR008", "decode"), ("IR008", "prefill")], "operator pre-176"),
        ("pd-1p1d", Some(0), &[], "operator 176"),
    ];
    for (scenario, code, want, note) in cases {
        let sim = Sim::start(scenario, SPEED).await;
        let (exit, found, stderr) = lint_cluster(&sim).await;
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(c, s)| (c.to_string(), s.to_string()))
            .collect();
        assert_eq!(found, want, "{scenario}: {stderr}");
        assert_eq!(exit, code, "{scenario}: {stderr}");
        assert!(
            stderr.contains(&format!("InferaDeployment llm/llama: {note}")),
            "{scenario}: {stderr}"
        );
        sim.shutdown().await;
    }
}

/// `lint --cluster` lists the namespace's PodDisruptionBudgets (none here)
/// and warns of each single-replica worker none covers (IR014): a drain
/// would evict its only pod. Only live: the same InferaDeployment as a file
/// is quiet (`single_replica_without_a_budget_is_never_reported_on_files`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lint_cluster_warns_of_single_replicas_no_budget_covers() {
    let sim = Sim::start("pd-1p1d", SPEED).await;
    let (exit, found, stderr) = lint_cluster_at(&sim, "warning").await;
    let want: Vec<(String, String)> = [("IR014", "decode"), ("IR014", "prefill")]
        .iter()
        .map(|(c, s)| (c.to_string(), s.to_string()))
        .collect();
    assert_eq!(found, want, "{stderr}");
    assert_eq!(exit, Some(0), "warnings only: {stderr}");
    sim.shutdown().await;
}

/// `infera audit idep/llama` names the generation in its JSON report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_reports_the_operator_generation() {
    for (scenario, want) in [("pd-1p1d-pre176", "pre-176"), ("pd-1p1d", "176")] {
        let sim = Sim::start(scenario, SPEED).await;
        let conn = sim.connect().await;
        let opts = infera_audit::Options::for_duration("idep/llama", Duration::from_secs(20));
        let report = infera_audit::audit_target(&conn, &opts, SPEED, std::future::pending())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let json: Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["operator_generation"], want, "{scenario}");
        sim.shutdown().await;
    }
}
