//! The simulated cluster (in-store controllers plus the world — kubelet,
//! operator — over its HTTP API), observed through the Store: a scenario
//! reaches its steady state, a restart rolls as the strategy says,
//! scheduling failures read like upstream.

use std::time::Duration;

use infera_sim::SimOptions;
use infera_sim_core::kind::Kind;
use infera_sim_scenario::Scenario;
use infera_sim_store::Store;
use serde_json::Value;

use crate::common::sim::Sim;

/// The simulator with its world, on plain HTTP, and its store.
async fn start_sim(scenario: Scenario, speed: f64) -> (Sim, Store) {
    let mut options = SimOptions::new(scenario, speed);
    options.tls = false;
    let sim = Sim::unsteady(options).await;
    let store = sim.store().clone();
    (sim, store)
}

fn pods(store: &Store, ns: &str) -> Vec<Value> {
    store.list(Kind::Pod, Some(ns)).0
}

fn ready(p: &Value) -> bool {
    p.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

fn routable(p: &Value) -> bool {
    p.pointer("/metadata/annotations/infera.amd.com~1worker-info")
        .is_some()
        && p.pointer("/status/phase").and_then(Value::as_str) == Some("Running")
        && p.pointer("/metadata/deletionTimestamp").is_none()
}

async fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn surge_no_readiness_steady_state_and_restart() {
    let scenario = Scenario::load("surge-no-readiness").unwrap_or_else(|e| panic!("{e}"));
    // 50×: the gap this test must see (the old pod retired, the replacement
    // still loading its 140 s of weights) lasts 2.8 s of wall time, which
    // a loaded machine's late controller cannot skip over; at 200× it was
    // 0.7 s, and one CI run under the whole sim suite's load missed it.
    let (sim, store) = start_sim(scenario, 50.0).await;
    wait_for("a Ready, routable worker", Duration::from_secs(30), || {
        let p = pods(&store, "llm");
        p.len() == 1 && ready(&p[0]) && routable(&p[0])
    })
    .await;
    let d = store
        .get(Kind::Deployment, Some("llm"), "llama-worker")
        .unwrap_or_default();
    assert_eq!(
        d.pointer("/status/availableReplicas")
            .and_then(Value::as_i64),
        Some(1)
    );
    assert_eq!(
        d.pointer("/metadata/annotations/deployment.kubernetes.io~1revision")
            .and_then(Value::as_str),
        Some("1")
    );

    // kubectl rollout restart: a template annotation.
    store
        .mutate(Kind::Deployment, Some("llm"), "llama-worker", |v| {
            v["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] =
                "now".into();
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let mut min_ready = usize::MAX;
    let mut saw_zero_routable = false;
    wait_for("the rollout to complete", Duration::from_secs(40), || {
        let p = pods(&store, "llm");
        let r = p
            .iter()
            .filter(|p| ready(p) && p.pointer("/metadata/deletionTimestamp").is_none())
            .count();
        min_ready = min_ready.min(p.iter().filter(|p| ready(p)).count());
        if p.iter().filter(|p| routable(p)).count() == 0 {
            saw_zero_routable = true;
        }
        let d = store
            .get(Kind::Deployment, Some("llm"), "llama-worker")
            .unwrap_or_default();
        r == 1
            && p.len() == 1
            && d.pointer("/status/updatedReplicas").and_then(Value::as_i64) == Some(1)
            && d.pointer("/metadata/annotations/deployment.kubernetes.io~1revision")
                .and_then(Value::as_str)
                == Some("2")
            && routable(&p[0])
    })
    .await;
    assert!(
        min_ready >= 1,
        "surge-first never drops below one Ready pod"
    );
    assert!(
        saw_zero_routable,
        "without a probe the replacement is Ready before it registers"
    );
    let rs = store.list(Kind::ReplicaSet, Some("llm")).0;
    assert_eq!(rs.len(), 2, "old and new ReplicaSets kept for history");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unschedulable_pod_gets_upstream_failed_scheduling() {
    let yaml = r#"
name: pinned
nodes:
  - {name: gpu-node, count: 2, allocatable: {cpu: "128", memory: 2Ti, amd.com/gpu: "8"}}
manifests:
  - apiVersion: v1
    kind: Pod
    metadata: {name: holder, namespace: default}
    spec:
      nodeSelector: {kubernetes.io/hostname: gpu-node-0}
      containers: [{name: main, image: x, resources: {limits: {amd.com/gpu: "8"}}}]
  - apiVersion: v1
    kind: Pod
    metadata: {name: surge, namespace: default}
    spec:
      nodeSelector: {kubernetes.io/hostname: gpu-node-0}
      containers: [{name: main, image: x, resources: {limits: {amd.com/gpu: "8"}}}]
"#;
    let scenario = Scenario::from_yaml("pinned.yaml", yaml).unwrap_or_else(|e| panic!("{e}"));
    let (sim, store) = start_sim(scenario, 100.0).await;
    let want = "0/2 nodes are available: 1 Insufficient amd.com/gpu, 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.";
    wait_for("a FailedScheduling event", Duration::from_secs(20), || {
        store
            .list(Kind::Event, Some("default"))
            .0
            .iter()
            .any(|e| e["reason"] == "FailedScheduling" && e["message"] == want)
    })
    .await;
    let surge = store
        .get(Kind::Pod, Some("default"), "surge")
        .unwrap_or_default();
    let cond = surge
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    assert!(cond.iter().any(|c| c["type"] == "PodScheduled"
        && c["status"] == "False"
        && c["reason"] == "Unschedulable"));
    assert_eq!(surge.pointer("/spec/nodeName"), None);
    sim.shutdown().await;
}

fn role_counts(store: &Store, role: &str) -> (usize, usize) {
    let p: Vec<Value> = pods(store, "llm")
        .into_iter()
        .filter(|p| {
            p.pointer("/metadata/labels/infera.amd.com~1service")
                .and_then(Value::as_str)
                == Some(role)
        })
        .collect();
    (
        p.iter().filter(|p| ready(p)).count(),
        p.iter().filter(|p| routable(p)).count(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pd_1p1d_restart_is_surge_first_and_operator_reverts_hand_edits() {
    let scenario = Scenario::load("pd-1p1d").unwrap_or_else(|e| panic!("{e}"));
    let (sim, store) = start_sim(scenario, 200.0).await;
    wait_for(
        "the InferaDeployment to be Ready",
        Duration::from_secs(40),
        || {
            let idep = store
                .get(Kind::InferaDeployment, Some("llm"), "llama")
                .unwrap_or_default();
            idep.pointer("/status/state").and_then(Value::as_str) == Some("ready")
                && role_counts(&store, "prefill") == (1, 1)
                && role_counts(&store, "decode") == (1, 1)
        },
    )
    .await;
    // A hand edit of the operator's Deployment reverts.
    store
        .mutate(Kind::Deployment, Some("llm"), "llama-decode", |v| {
            v["spec"]["paused"] = true.into();
        })
        .unwrap_or_else(|e| panic!("{e}"));
    wait_for(
        "the operator to revert the edit",
        Duration::from_secs(20),
        || {
            let d = store
                .get(Kind::Deployment, Some("llm"), "llama-decode")
                .unwrap_or_default();
            d.pointer("/spec/paused").and_then(Value::as_bool) != Some(true)
        },
    )
    .await;
    // A restart through the InferaDeployment rolls surge-first.
    store
        .mutate(Kind::InferaDeployment, Some("llm"), "llama", |v| {
            for svc in ["prefill", "decode"] {
                v["spec"]["services"][svc]["podLabels"] = serde_json::json!({"restart": "1"});
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let mut min = (usize::MAX, usize::MAX);
    let mut saw_two = false;
    wait_for("the restart to complete", Duration::from_secs(50), || {
        for role in ["prefill", "decode"] {
            let (r, rt) = role_counts(&store, role);
            min = (min.0.min(r), min.1.min(rt));
        }
        let all = pods(&store, "llm");
        if all.len() > 3 {
            saw_two = true;
        }
        let done = all
            .iter()
            .filter(|p| p.pointer("/metadata/labels/restart").is_some() && ready(p) && routable(p))
            .count()
            == 2;
        done && all.len() == 3
    })
    .await;
    assert!(saw_two, "a surge pod existed beside the old one");
    assert!(
        min.0 >= 1 && min.1 >= 1,
        "every role kept a Ready and a routable pod: {min:?}"
    );
    sim.shutdown().await;
}

async fn restart_idep(store: &Store, name: &str) {
    store
        .mutate(Kind::InferaDeployment, Some("llm"), name, |v| {
            for svc in ["prefill", "decode"] {
                v["spec"]["services"][svc]["podLabels"] = serde_json::json!({"restart": "1"});
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skip_probe_restart_has_a_gap_per_role() {
    let scenario = Scenario::load("pd-1p1d-skip-probe").unwrap_or_else(|e| panic!("{e}"));
    let (sim, store) = start_sim(scenario, 200.0).await;
    wait_for("steady state", Duration::from_secs(40), || {
        role_counts(&store, "prefill") == (1, 1) && role_counts(&store, "decode") == (1, 1)
    })
    .await;
    restart_idep(&store, "llama").await;
    let mut min_routable = usize::MAX;
    wait_for("the restart to complete", Duration::from_secs(50), || {
        for role in ["prefill", "decode"] {
            min_routable = min_routable.min(role_counts(&store, role).1);
        }
        let all = pods(&store, "llm");
        all.len() == 3
            && all
                .iter()
                .filter(|p| p.pointer("/metadata/labels/restart").is_some() && routable(p))
                .count()
                == 2
    })
    .await;
    assert_eq!(
        min_routable, 0,
        "old-pod-first leaves a role with nothing routable"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_node_pinned_surge_stays_pending_then_deadline() {
    let mut scenario = Scenario::load("whole-node-pinned").unwrap_or_else(|e| panic!("{e}"));
    scenario.timings.weight_load = 20.0;
    let (sim, store) = start_sim(scenario, 400.0).await;
    wait_for("steady state", Duration::from_secs(40), || {
        role_counts(&store, "prefill") == (1, 1) && role_counts(&store, "decode") == (1, 1)
    })
    .await;
    restart_idep(&store, "kimi").await;
    let want = "0/2 nodes are available: 1 Insufficient amd.com/gpu, 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.";
    wait_for("FailedScheduling", Duration::from_secs(20), || {
        store
            .list(Kind::Event, Some("llm"))
            .0
            .iter()
            .any(|e| e["reason"] == "FailedScheduling" && e["message"] == want)
    })
    .await;
    // The old pods keep serving; the rollout stalls until the 600 s deadline.
    assert_eq!(role_counts(&store, "prefill"), (1, 1));
    wait_for("ProgressDeadlineExceeded", Duration::from_secs(30), || {
        let d = store
            .get(Kind::Deployment, Some("llm"), "kimi-decode")
            .unwrap_or_default();
        d.pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c["type"] == "Progressing"
                        && c["status"] == "False"
                        && c["reason"] == "ProgressDeadlineExceeded"
                })
            })
    })
    .await;
    sim.shutdown().await;
}

/// Scale harness (not a timing assert): 1,000 nodes, 100 Deployments x 50
/// replicas. Run with `cargo test --release --test sim sim_controllers -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "scale harness; prints numbers"]
async fn scale_1000_nodes_5000_pods() {
    let mut yaml = String::from(
        "name: scale\nnodes:\n  - {name: n, count: 1000, allocatable: {cpu: '128', memory: 2Ti, amd.com/gpu: '8'}}\nmanifests:\n",
    );
    for i in 0..100 {
        yaml.push_str(&format!(
            "  - {{apiVersion: apps/v1, kind: Deployment, metadata: {{name: d{i}, namespace: default}}, spec: {{replicas: 50, selector: {{matchLabels: {{app: d{i}}}}}, template: {{metadata: {{labels: {{app: d{i}}}}}, spec: {{containers: [{{name: main, image: x, resources: {{limits: {{amd.com/gpu: '1'}}}}}}]}}}}}}}}\n"
        ));
    }
    let scenario = Scenario::from_yaml("scale", &yaml).unwrap_or_else(|e| panic!("{e}"));
    let start = std::time::Instant::now();
    let (sim, store) = start_sim(scenario, 1000.0).await;
    let complete = |store: &Store| {
        store.list(Kind::Deployment, None).0.iter().all(|d| {
            d.pointer("/status/updatedReplicas").and_then(Value::as_i64) == Some(50)
                && d.pointer("/status/availableReplicas")
                    .and_then(Value::as_i64)
                    == Some(50)
                && d.pointer("/status/replicas").and_then(Value::as_i64) == Some(50)
        })
    };
    wait_for("5000 pods available", Duration::from_secs(600), || {
        complete(&store)
    })
    .await;
    println!("initial: 5000 pods available after {:?}", start.elapsed());
    let start = std::time::Instant::now();
    for i in 0..100 {
        let _ = store.mutate(Kind::Deployment, Some("default"), &format!("d{i}"), |v| {
            v["spec"]["template"]["metadata"]["annotations"]["restartedAt"] = "1".into();
        });
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    wait_for("restart complete", Duration::from_secs(600), || {
        complete(&store)
    })
    .await;
    println!(
        "rolling restart of 100 Deployments at speed 1000: {:?}",
        start.elapsed()
    );
    sim.shutdown().await;
}
