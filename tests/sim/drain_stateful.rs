//! `infera drain` of a node holding a StatefulSet pod and a
//! LeaderWorkerSet group, on the simulator's StatefulSet and
//! LeaderWorkerSet controllers: each gets a verdict, their pods on the node
//! are evicted (never a restart of the whole workload), and the
//! controllers bring the replacements back elsewhere under the same names;
//! a LeaderWorkerSet worker evicted alone recreates its whole group.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use infera_model::api::LEADER_WORKER_SET;
use infera_sim_core::kind::Kind;
use infera_sim_store::Store;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DynamicObject, EvictParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::common::sim::{Sim, is_ready};
use crate::drain::{cordoned, node_of, run};

const NS: &str = "llm";

fn template(labels: Value) -> Value {
    json!({"metadata": {"labels": labels},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}})
}

/// (node, uid) of each live `tier=state` pod, by name.
fn state_pods(store: &Store) -> BTreeMap<String, (String, String, bool)> {
    (store.list(Kind::Pod, Some(NS)).0.iter())
        .filter(|p| p.pointer("/metadata/labels/tier") == Some(&json!("state")))
        .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
        .map(|p| {
            let s = |ptr: &str| p.pointer(ptr).and_then(Value::as_str).unwrap_or("");
            let entry = (node_of(p), s("/metadata/uid").to_string(), is_ready(p));
            (s("/metadata/name").to_string(), entry)
        })
        .collect()
}

/// Wait until these pods are all Ready (and bound).
async fn wait_ready(store: &Store, names: &[&str]) -> BTreeMap<String, (String, String, bool)> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pods = state_pods(store);
        if names.iter().all(|n| pods.get(*n).is_some_and(|p| p.2)) {
            return pods;
        }
        assert!(Instant::now() < deadline, "{names:?} never Ready: {pods:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn set_unschedulable(nodes: &Api<Node>, name: &str, on: bool) {
    let patch = json!({"spec": {"unschedulable": if on { json!(true) } else { Value::Null }}});
    nodes
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("cordon");
}

async fn scale<K>(api: &Api<K>, name: &str, replicas: i64)
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let patch = json!({"spec": {"replicas": replicas}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("scale {name}: {e}"));
}

/// `sts/db` (2 replicas) and `lws/grp` (2 groups of 2): `db-0` and group
/// 0 on `target`, `db-1` and group 1 elsewhere (the other nodes cordoned
/// while the first ones are placed, then the target).
async fn stateful_on(sim: &Sim, target: &str, others: &[String]) {
    let client = sim.client().await;
    let nodes: Api<Node> = Api::all(client.clone());
    for n in others {
        set_unschedulable(&nodes, n, true).await;
    }
    let labels = json!({"app": "db", "tier": "state"});
    let sts: StatefulSet = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": NS},
        "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": template(labels)}
    }))
    .expect("statefulset");
    let params = PostParams::default();
    Api::<StatefulSet>::namespaced(client.clone(), NS)
        .create(&params, &sts)
        .await
        .expect("create db");
    let lws: DynamicObject = serde_json::from_value(json!({
        "apiVersion": LEADER_WORKER_SET.api_version, "kind": LEADER_WORKER_SET.kind,
        "metadata": {"name": "grp", "namespace": NS},
        "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 2,
            "workerTemplate": template(json!({"tier": "state"}))}}
    }))
    .expect("lws");
    let resource = infera_cluster::api_resource(&LEADER_WORKER_SET);
    let lws_api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &resource);
    lws_api.create(&params, &lws).await.expect("create grp");
    wait_ready(sim.store(), &["db-0", "grp-0", "grp-0-1"]).await;
    set_unschedulable(&nodes, target, true).await;
    for n in others {
        set_unschedulable(&nodes, n, false).await;
    }
    scale(&Api::<StatefulSet>::namespaced(client, NS), "db", 2).await;
    scale(&lws_api, "grp", 2).await;
    wait_ready(sim.store(), &["db-1", "grp-1", "grp-1-1"]).await;
    set_unschedulable(&nodes, target, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statefulset_and_lws_pods_are_evicted_and_come_back_elsewhere() {
    let sim = Sim::start("pd-1p1d", 20.0).await;
    let mut nodes: Vec<String> = (sim.store().list(Kind::Node, None).0.iter())
        .filter_map(|n| n.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    nodes.sort();
    let target = nodes.remove(0);
    stateful_on(&sim, &target, &nodes).await;
    let before = state_pods(sim.store());
    for (name, on) in [
        ("db-0", true),
        ("grp-0", true),
        ("grp-0-1", true),
        ("db-1", false),
    ] {
        assert_eq!(before[name].0 == target, on, "{name}: {before:?}");
    }
    // A budget on db: the disruption controller's StatefulSet finder
    // counts its 2 replicas, so it allows 1.
    let budget: PodDisruptionBudget = serde_json::from_value(json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "db", "namespace": NS},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "db"}}}
    }))
    .expect("budget");
    Api::<PodDisruptionBudget>::namespaced(sim.client().await, NS)
        .create(&PostParams::default(), &budget)
        .await
        .expect("create budget");
    let deadline = Instant::now() + Duration::from_secs(30);
    let allowed = "/status/disruptionsAllowed";
    while sim
        .store()
        .get(Kind::PodDisruptionBudget, Some(NS), "db")
        .and_then(|b| b.pointer(allowed).cloned())
        != Some(json!(1))
    {
        assert!(Instant::now() < deadline, "the budget never allowed 1");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let args = [target.as_str(), "--pod-selector", "tier=state"];
    let (code, text) = run(sim.kubeconfig(), &args).await;
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("sts/db → evict"), "{text}");
    assert!(text.contains("db (1)"), "the budget in the plan: {text}");
    assert!(text.contains("lws/grp → evict"), "{text}");
    for pod in ["db-0", "grp-0", "grp-0-1"] {
        assert!(
            text.contains(&format!("evicted {NS}/{pod}")),
            "{pod}: {text}"
        );
    }
    assert!(
        !text.contains("moving"),
        "never restarted as a whole: {text}"
    );
    assert!(cordoned(sim.store(), &target));
    // The controllers bring them back, same names, elsewhere; the pods off
    // the node are the same pods.
    let after = wait_ready(sim.store(), &["db-0", "grp-0", "grp-0-1"]).await;
    for name in ["db-0", "grp-0", "grp-0-1"] {
        assert_ne!(after[name].0, target, "{name}: {after:?}");
        assert_ne!(after[name].1, before[name].1, "{name} replaced: {after:?}");
    }
    for name in ["db-1", "grp-1", "grp-1-1"] {
        assert_eq!(after[name].1, before[name].1, "{name} untouched: {after:?}");
    }
    // RecreateGroupOnPodRestart: a worker evicted alone takes its leader
    // with it, and the group comes back whole.
    let pods: Api<Pod> = Api::namespaced(sim.client().await, NS);
    pods.evict("grp-1-1", &EvictParams::default())
        .await
        .expect("evict grp-1-1");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = state_pods(sim.store());
        let renewed = |n: &str| now.get(n).is_some_and(|p| p.2 && p.1 != after[n].1);
        if renewed("grp-1") && renewed("grp-1-1") {
            assert_eq!(now["db-1"].1, after["db-1"].1);
            break;
        }
        assert!(Instant::now() < deadline, "group 1 not recreated: {now:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    sim.shutdown().await;
}
