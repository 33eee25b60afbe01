//! The verdicts, on hand-built inventories (no cluster).

use super::*;
use serde_json::json;

fn node(name: &str, gpus: &str) -> Node {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"amd.com/gpu": gpus, "cpu": "64", "memory": "512Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]}}))
    .unwrap()
}

fn pod(name: &str, node: &str, labels: Value, ready: bool) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": "llm", "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "main",
            "resources": {"requests": {"amd.com/gpu": "8"}, "limits": {"amd.com/gpu": "8"}}}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}}))
    .unwrap()
}

fn template() -> Value {
    json!({"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [{"name": "main",
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 30090}},
        "resources": {"requests": {"amd.com/gpu": "8"}, "limits": {"amd.com/gpu": "8"}}}]}})
}

fn workload(kind: OwnerKind, replicas: u32, surge: u32) -> Workload {
    let labels = Selector::parse("app=w").unwrap();
    Workload {
        namespace: "llm".into(),
        kind,
        name: "w".into(),
        leg: None,
        role: "decode".into(),
        replicas,
        strategy: Some(Roll::rolling(i64::from(surge), i64::from(1 - surge.min(1)))),
        template: template(),
        role_spec: RoleSpec {
            role: "decode".into(),
            services: Vec::new(),
            selector: labels.clone(),
        },
        selector: labels,
        generation: None,
    }
}

/// `pods`: (name, node) of Ready pods labelled app=w; nodes n0 (draining)
/// and the others given, 8 GPUs each.
fn inventory(w: Workload, pods: &[(&str, &str)], spare_nodes: &[&str]) -> Inventory {
    let mut nodes = vec![node("n0", "8")];
    nodes.extend(spare_nodes.iter().map(|n| node(n, "8")));
    Inventory {
        draining: vec!["n0".into()],
        nodes,
        pods: pods
            .iter()
            .map(|(p, n)| pod(p, n, json!({"app": "w"}), true))
            .collect(),
        workloads: vec![w],
        ..Inventory::default()
    }
}

fn flags() -> PlanFlags {
    PlanFlags {
        min_ready: 1,
        moving: Vec::new(),
    }
}

fn budget(min_available: i32) -> PodDisruptionBudget {
    serde_json::from_value(json!({"metadata": {"name": "pdb", "namespace": "llm"},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": "w"}}},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}}))
    .unwrap()
}

#[test]
fn the_only_pod_with_room_elsewhere_moves() {
    let inv = inventory(
        workload(OwnerKind::Deployment, 1, 1),
        &[("a", "n0")],
        &["n1"],
    );
    let u = decide_unit(&inv, 0, &flags()).unwrap();
    assert_eq!(u.path, DrainPath::Move, "{}", u.why);
    assert_eq!((u.ready_now, u.ready_without), (1, 0));
    assert_eq!(u.capacity, Capacity::Room("n1".into()));
}

/// A Deployment selected by `matchExpressions` (`app in (w)`): another
/// app's Ready pod is neither its own nor its role's, so its only pod is
/// moved, not evicted as if the role kept a replica.
#[test]
fn a_set_based_selector_counts_only_its_own_pods() {
    let mut w = workload(OwnerKind::Deployment, 1, 1);
    w.selector = Selector::parse("app in (w)").unwrap();
    w.role_spec.selector = w.selector.clone();
    let mut inv = inventory(w, &[("a", "n0")], &["n1", "n2"]);
    inv.pods.push(pod("other", "n2", json!({"app": "x"}), true));
    let u = decide_unit(&inv, 0, &flags()).unwrap();
    assert_eq!(u.path, DrainPath::Move, "{}", u.why);
    assert_eq!((u.ready_now, u.ready_without), (1, 0));
    assert_eq!(u.capacity, Capacity::Room("n1".into()));
}

#[test]
fn no_room_anywhere_else_is_a_gap() {
    // n1 is full: its 8 GPUs are taken by another pod.
    let mut inv = inventory(
        workload(OwnerKind::Deployment, 1, 1),
        &[("a", "n0")],
        &["n1"],
    );
    inv.pods.push(pod("other", "n1", json!({"app": "x"}), true));
    let u = decide_unit(&inv, 0, &flags()).unwrap();
    assert_eq!(u.path, DrainPath::Gap, "{}", u.why);
    assert!(u.why.contains("no spare capacity"), "{}", u.why);
    // The draining node's own room does not count.
    assert!(u.why.contains("0/1 nodes"), "{}", u.why);
}

#[test]
fn a_surge_free_strategy_is_a_gap() {
    let inv = inventory(
        workload(OwnerKind::Deployment, 1, 0),
        &[("a", "n0")],
        &["n1"],
    );
    let u = decide_unit(&inv, 0, &flags()).unwrap();
    assert_eq!(u.path, DrainPath::Gap, "{}", u.why);
    assert!(u.why.contains("old-pod-first"), "{}", u.why);
}

#[test]
fn a_replica_elsewhere_means_evict_not_a_restart() {
    let inv = inventory(
        workload(OwnerKind::Deployment, 2, 1),
        &[("a", "n0"), ("b", "n1")],
        &["n1"],
    );
    let u = decide_unit(&inv, 0, &flags()).unwrap();
    assert_eq!(u.path, DrainPath::Evict, "{}", u.why);
    assert_eq!(u.ready_without, 1);
    // Unless the floor is 2.
    let two = PlanFlags {
        min_ready: 2,
        moving: Vec::new(),
    };
    assert_eq!(decide_unit(&inv, 0, &two).unwrap().path, DrainPath::Gap);
}

#[test]
fn a_budget_that_never_allows_is_a_stall() {
    let mut inv = inventory(
        workload(OwnerKind::Deployment, 2, 1),
        &[("a", "n0"), ("b", "n1")],
        &["n1"],
    );
    inv.pdbs.push(budget(2));
    let u = decide_unit(&inv, 0, &flags()).unwrap();
    assert_eq!(u.path, DrainPath::Stall, "{}", u.why);
    assert_eq!(u.budgets[0].allowed, 0);
    // minAvailable 1 of 2 allows one: evict.
    inv.pdbs[0] = budget(1);
    assert_eq!(
        decide_unit(&inv, 0, &flags()).unwrap().path,
        DrainPath::Evict
    );
}

#[test]
fn statefulsets_and_leaderworkersets_are_never_moved() {
    for kind in [OwnerKind::StatefulSet, OwnerKind::LeaderWorkerSet] {
        let inv = inventory(workload(kind, 1, 1), &[("a", "n0")], &["n1"]);
        let u = decide_unit(&inv, 0, &flags()).unwrap();
        assert_eq!(u.path, DrainPath::Gap, "{kind:?}: {}", u.why);
        assert!(u.why.contains("never restarted"), "{}", u.why);
        let inv = inventory(workload(kind, 2, 1), &[("a", "n0"), ("b", "n1")], &["n1"]);
        assert_eq!(
            decide_unit(&inv, 0, &flags()).unwrap().path,
            DrainPath::Evict
        );
    }
}

#[test]
fn a_move_started_by_an_earlier_run_is_resumed_whatever_the_counts() {
    // The surge pod is Ready elsewhere already: counts alone would say evict.
    let w = workload(OwnerKind::Deployment, 1, 1);
    let key = w.key();
    let inv = inventory(w, &[("a", "n0"), ("surge", "n1")], &["n1"]);
    assert_eq!(
        decide_unit(&inv, 0, &flags()).unwrap().path,
        DrainPath::Evict
    );
    let resumed = PlanFlags {
        min_ready: 1,
        moving: vec![key],
    };
    assert_eq!(
        decide_unit(&inv, 0, &resumed).unwrap().path,
        DrainPath::Move
    );
}

#[test]
fn a_workload_with_no_pod_on_the_node_has_no_line() {
    let inv = inventory(
        workload(OwnerKind::Deployment, 1, 1),
        &[("a", "n1")],
        &["n1"],
    );
    assert!(decide_unit(&inv, 0, &flags()).is_none());
}

#[test]
fn a_single_replica_no_budget_covers_is_reported_as_ir014_not_judged() {
    let mut inv = inventory(
        workload(OwnerKind::Deployment, 1, 1),
        &[("a", "n0")],
        &["n1"],
    );
    let u = decide_unit(&inv, 0, &flags()).unwrap();
    assert_eq!(u.path, DrainPath::Move, "the verdict stands: {}", u.why);
    assert_eq!(u.findings.len(), 1, "{:?}", u.findings);
    assert!(
        u.findings[0].starts_with("IR014 single-replica-no-budget: deploy/w runs one replica"),
        "{:?}",
        u.findings
    );
    assert!(decide(&inv, &flags()).render().contains("warning IR014"));
    // A budget selecting it (even one that allows the eviction) covers it.
    inv.pdbs.push(budget(0));
    let u = decide_unit(&inv, 0, &flags()).unwrap();
    assert_eq!(u.findings, Vec::<String>::new());
    // Two replicas: not a single replica.
    let inv = inventory(
        workload(OwnerKind::Deployment, 2, 1),
        &[("a", "n0"), ("b", "n1")],
        &["n1"],
    );
    let u = decide_unit(&inv, 0, &flags()).unwrap();
    assert_eq!(u.findings, Vec::<String>::new());
}
