//! PodDisruptionBudget cases shared by the sim's and the lab's disruption
//! tests: the same objects go to both worlds, which must answer alike.
//!
//! A Deployment `web` (3 replicas, light requests), then one budget per case; the
//! status the disruption controller writes is read back through `kube`.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, EvictParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// (expectedPods, desiredHealthy, disruptionsAllowed, currentHealthy).
pub type Counts = (i32, i32, i32, i32);

/// (name, minAvailable, maxUnavailable, selector app, counts).
pub type Case = (
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
    &'static str,
    Counts,
);

/// (name, minAvailable, maxUnavailable, selector app) → (expectedPods,
/// desiredHealthy, disruptionsAllowed, currentHealthy) with `web` at 3
/// Ready replicas, as k8s.io/kubernetes@v1.37.2
/// pkg/controller/disruption/disruption.go computes them.
pub const CASES: &[Case] = &[
    ("min-int", Some("2"), None, "web", (3, 2, 1, 3)),
    ("min-pct", Some("50%"), None, "web", (3, 2, 1, 3)),
    ("min-all", Some("100%"), None, "web", (3, 3, 0, 3)),
    ("max-zero", None, Some("0"), "web", (3, 3, 0, 3)),
    ("max-pct", None, Some("34%"), "web", (3, 1, 2, 3)),
    ("neither", None, None, "web", (0, 0, 0, 3)),
    ("nobody", Some("1"), None, "ghost", (0, 1, 0, 0)),
];

fn int_or_string(text: &str) -> Value {
    text.parse::<i64>()
        .map_or_else(|_| json!(text), |n| json!(n))
}

/// The budget of one case (all in `ns`).
pub fn budget(
    ns: &str,
    name: &str,
    min: Option<&str>,
    max: Option<&str>,
    app: &str,
) -> PodDisruptionBudget {
    let mut spec = json!({"selector": {"matchLabels": {"app": app}}});
    if let Some(min) = min {
        spec["minAvailable"] = int_or_string(min);
    }
    if let Some(max) = max {
        spec["maxUnavailable"] = int_or_string(max);
    }
    serde_json::from_value(
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": ns}, "spec": spec}),
    )
    .unwrap_or_else(|e| panic!("budget {name}: {e}"))
}

/// A Deployment of `replicas` light pods labelled `app: NAME`. `extra`
/// is merged into the pod spec (tolerations, for the lab's tainted nodes).
pub fn deployment(ns: &str, name: &str, replicas: i32, extra: &Value) -> Deployment {
    let container = json!({"name": name, "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}});
    let mut pod_spec = json!({"containers": [container], "terminationGracePeriodSeconds": 30});
    if let (Some(spec), Some(more)) = (pod_spec.as_object_mut(), extra.as_object()) {
        spec.extend(more.clone());
    }
    serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec}}}))
    .unwrap_or_else(|e| panic!("deployment {name}: {e}"))
}

/// Poll `f` every 25 ms until it gives `Some`, for at most `limit`.
pub async fn until<T, F, Fut>(what: &str, limit: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The pods of `app` in `ns` that are Ready and not terminating.
pub async fn ready(client: &kube::Client, ns: &str, app: &str) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let lp = ListParams::default().labels(&format!("app={app}"));
    pods.list(&lp)
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(infera_model::pod::is_ready)
        .collect()
}

/// (expectedPods, desiredHealthy, disruptionsAllowed, currentHealthy) once
/// the controller has observed the budget's generation.
pub async fn observed(client: &kube::Client, ns: &str, name: &str) -> (i32, i32, i32, i32) {
    let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), ns);
    until(
        &format!("budget {name} observed"),
        Duration::from_secs(60),
        || {
            let api = api.clone();
            async move {
                let b = api.get(name).await.ok()?;
                let status = b.status?;
                (status.observed_generation? >= b.metadata.generation?).then_some((
                    status.expected_pods,
                    status.desired_healthy,
                    status.disruptions_allowed,
                    status.current_healthy,
                ))
            }
        },
    )
    .await
}

/// Every case's status, the budgets created one at a time (each deleted
/// after it is read, so a pod is never selected by two of them).
pub async fn case_statuses(client: &kube::Client, ns: &str) -> Vec<(String, (i32, i32, i32, i32))> {
    let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), ns);
    let mut out = Vec::new();
    for (name, min, max, app, _) in CASES {
        let b = budget(ns, name, *min, *max, app);
        api.create(&PostParams::default(), &b)
            .await
            .unwrap_or_else(|e| panic!("create budget {name}: {e}"));
        out.push(((*name).to_string(), observed(client, ns, name).await));
        api.delete(name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete budget {name}: {e}"));
    }
    out
}

/// The HTTP code of an eviction of `pod` (201 allowed) and the message.
pub async fn evict(client: &kube::Client, ns: &str, pod: &str) -> (u16, String) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    match pods.evict(pod, &EvictParams::default()).await {
        Ok(_) => (201, String::new()),
        Err(kube::Error::Api(status)) => {
            let cause = status
                .details
                .as_ref()
                .and_then(|d| d.causes.first())
                .map(|c| format!(" ({})", c.message))
                .unwrap_or_default();
            (status.code, format!("{}{cause}", status.message))
        }
        Err(e) => panic!("evicting {pod}: {e}"),
    }
}

/// Set a budget's spec fields (a merge patch) and wait until the
/// controller has observed the new generation.
pub async fn patch_budget(client: &kube::Client, ns: &str, name: &str, spec: Value) {
    let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), ns);
    let patch = json!({"spec": spec});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("patch budget {name}: {e}"));
    observed(client, ns, name).await;
}

async fn create_budget(client: &kube::Client, b: &PodDisruptionBudget) {
    let api: Api<PodDisruptionBudget> = Api::namespaced(
        client.clone(),
        b.metadata.namespace.as_deref().unwrap_or_default(),
    );
    api.create(&PostParams::default(), b)
        .await
        .unwrap_or_else(|e| panic!("create budget: {e}"));
}

fn name_of(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

/// The Eviction API's answers, step by step, with `web` at 3 Ready pods:
/// (step, HTTP code, message and the first cause). The same
/// sequence on the sim and on the lab must give the same codes and
/// messages (`EVICTION_STEPS` holds upstream's).
pub async fn eviction_answers(client: &kube::Client, ns: &str) -> Vec<(String, u16, String)> {
    let mut out = Vec::new();
    let web = ready(client, ns, "web").await;
    let [a, b, ..] = web.as_slice() else {
        panic!("web has {} Ready pods, want 3", web.len());
    };
    create_budget(client, &budget(ns, "web", Some("3"), None, "web")).await;
    observed(client, ns, "web").await;
    let (code, msg) = evict(client, ns, &name_of(a)).await;
    out.push(("web at its budget".to_string(), code, msg));
    patch_budget(client, ns, "web", json!({"minAvailable": 2})).await;
    let (code, msg) = evict(client, ns, &name_of(a)).await;
    out.push(("web one above".to_string(), code, msg));
    // The controller has seen the evicted pod terminating (the cause of
    // the next refusal depends on it, on a real control plane too).
    let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), ns);
    until(
        "web counting 2 healthy",
        Duration::from_secs(30),
        || async {
            let status = api.get("web").await.ok()?.status?;
            (status.current_healthy == 2).then_some(())
        },
    )
    .await;
    let (code, msg) = evict(client, ns, &name_of(b)).await;
    out.push(("web spent".to_string(), code, msg));
    create_budget(client, &budget(ns, "web-too", None, Some("1"), "web")).await;
    observed(client, ns, "web-too").await;
    let (code, msg) = evict(client, ns, &name_of(b)).await;
    out.push(("web under two budgets".to_string(), code, msg));
    out
}

/// Upstream's answers to [`eviction_answers`]' steps.
pub const EVICTION_STEPS: &[(&str, u16, &str)] = &[
    (
        "web at its budget",
        429,
        "Cannot evict pod as it would violate the pod's disruption budget. \
         (The disruption budget web needs 3 healthy pods and has 3 currently)",
    ),
    ("web one above", 201, ""),
    (
        "web spent",
        429,
        "Cannot evict pod as it would violate the pod's disruption budget. \
         (The disruption budget web needs 2 healthy pods and has 2 currently)",
    ),
    (
        "web under two budgets",
        500,
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
    ),
];
