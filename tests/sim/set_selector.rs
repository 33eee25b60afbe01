//! A plain Deployment selected by `matchExpressions` only (`app in (web)`),
//! beside another app in its namespace: `infera audit deploy/web` counts
//! its two pods and no other, and `infera rollout restart deploy/web`
//! replaces exactly them (surge-first, never below two Ready) and
//! completes, the other app's pods untouched.

use infera_audit::{Outcome, Report};
use infera_rollout::Options;
use infera_sim::SimOptions;
use infera_sim_core::kind::Kind;
use infera_sim_scenario::Scenario;
use serde_json::Value;

use crate::common::sim::{Sim, is_ready};

const SPEED: f64 = 200.0;
const NS: &str = "app";

const SCENARIO: &str = r#"
name: set-selector
seed: 5
nodes: [{name: n, count: 2, allocatable: {cpu: "8", memory: 16Gi}}]
timings: {imagePull: 1}
manifests:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: app}
    spec:
      replicas: 2
      strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
      selector: {matchExpressions: [{key: app, operator: In, values: [web]}]}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: nginx}]}
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: other, namespace: app}
    spec:
      replicas: 3
      selector: {matchLabels: {app: other}}
      template:
        metadata: {labels: {app: other}}
        spec: {containers: [{name: other, image: nginx}]}
"#;

/// Names of the Ready pods labelled `app=APP`.
fn ready_of(sim: &Sim, app: &str) -> Vec<String> {
    let mut names: Vec<String> = (sim.store().list(Kind::Pod, Some(NS)).0.iter())
        .filter(|p| p.pointer("/metadata/labels/app").and_then(Value::as_str) == Some(app))
        .filter(|p| is_ready(p))
        .filter_map(|p| p.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    names.sort();
    names
}

/// The one role's (name, min Ready exact, min routable exact).
fn the_role(report: &Report) -> (String, Option<u32>, Option<u32>) {
    let [role] = report.roles.as_slice() else {
        panic!("one role: {}", report.to_json());
    };
    (
        role.role.clone(),
        role.min_ready_exact,
        role.min_routable_exact,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_selected_by_expressions_is_audited_and_rolled() {
    let scenario = Scenario::from_yaml("set-selector", SCENARIO).unwrap_or_else(|e| panic!("{e}"));
    let sim = Sim::with(SimOptions::new(scenario, SPEED)).await;
    let (web, other) = (ready_of(&sim, "web"), ready_of(&sim, "other"));
    assert_eq!((web.len(), other.len()), (2, 3), "{web:?} {other:?}");
    let conn = sim.connect().await;

    let args = crate::rollout::audit_args(&["deploy/web", "--for", "10s"]);
    let audited = infera_audit::audit_target(&conn, &args, SPEED, std::future::pending())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let want = ("web".to_string(), Some(2), Some(2));
    assert_eq!(the_role(&audited), want, "{}", audited.to_json());

    let outcome = crate::rollout::roll(&sim, "deploy/web", Options::unattended(SPEED)).await;
    let report = outcome.report.as_ref().expect("a report");
    assert_eq!(report.outcome, Outcome::Complete, "{}", report.to_json());
    assert_eq!(the_role(report), want, "{}", report.to_json());
    let rolled = ready_of(&sim, "web");
    assert_eq!(rolled.len(), 2, "{rolled:?}");
    assert!(
        rolled.iter().all(|p| !web.contains(p)),
        "{web:?} → {rolled:?}"
    );
    assert_eq!(ready_of(&sim, "other"), other, "the other app is untouched");
    sim.shutdown().await;
}
