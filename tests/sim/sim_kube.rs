//! kube-rs against the simulator over plain HTTP, exactly as `infera` talks
//! to a cluster: typed reads, selectors, watches (resume, 410 Gone,
//! bookmarks), optimistic concurrency, the patch types, deletion and garbage
//! collection, `Status` errors, the `scale`/`status` subresources and the pod
//! proxy.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions, WatchEvent,
    WatchParams,
};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use infera_sim::{RunningSim, SimOptions};
use infera_sim_scenario::Scenario;

use crate::common::sim::{self, Sim};

/// The simulator (not waited on) and a kube-rs client on it.
async fn start(scenario: &str, speed: f64) -> (Sim, Client) {
    let sim = Sim::unsteady(sim::options(scenario, speed)).await;
    let client = sim.client().await;
    (sim, client)
}

/// Poll `f` until it yields `Some`, for at most 30 s.
async fn eventually<T, F, Fut>(what: &str, f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    crate::common::disruption::until(what, Duration::from_secs(30), f).await
}

/// The API error of a failed call (panics on success or a transport error).
#[track_caller]
fn api_error<T: std::fmt::Debug>(r: kube::Result<T>) -> kube::core::Status {
    match r {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn deployment(name: &str, replicas: i32, labels: &[(&str, &str)]) -> Deployment {
    let labels: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.27",
                    "ports": [{"containerPort": 80, "name": "http"}],
                    "env": [{"name": "A", "value": "1"}]}]}
            }
        }
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

async fn running_pods(pods: &Api<Pod>, n: usize) -> Vec<Pod> {
    eventually(&format!("{n} Ready pods"), || async {
        let list = pods.list(&ListParams::default()).await.ok()?;
        let live: Vec<Pod> = list
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none() && ready(p))
            .collect();
        (live.len() == n).then_some(live)
    })
    .await
}

fn names<K: ResourceExt>(items: &[K]) -> Vec<String> {
    let mut n: Vec<String> = items.iter().map(ResourceExt::name_any).collect();
    n.sort();
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_reads_and_selectors() {
    let (sim, client) = start("pd-1p1d", 200.0).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "llm");
    let live = running_pods(&pods, 3).await;
    for p in &live {
        let got = pods
            .get(&p.name_any())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got.uid(), p.uid());
        assert_eq!(got.namespace().as_deref(), Some("llm"));
    }
    let all: Api<Pod> = Api::all(client.clone());
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "llm");
    assert_eq!(
        all.list(&ListParams::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .items
            .len(),
        3
    );

    chunked_lists_and_expired_tokens(&sim, &client, &all, &live).await;
    typed_deployments_and_nodes(&client, &deployments).await;
    label_and_field_selectors(&pods, &all, &deployments, &live).await;
    sim.shutdown().await;
}

/// Chunked lists, and a continue token expired by a compaction.
async fn chunked_lists_and_expired_tokens(
    sim: &Sim,
    client: &Client,
    all: &Api<Pod>,
    live: &[Pod],
) {
    // Chunked lists: `limit` and `continue`.
    let full = names(live);
    let mut paged = Vec::new();
    let mut lp = ListParams::default().limit(1);
    loop {
        let page = all.list(&lp).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(page.items.len() <= 1);
        paged.extend(page.items.iter().map(ResourceExt::name_any));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => {
                assert_eq!(
                    page.metadata.remaining_item_count,
                    Some(i64::try_from(full.len() - paged.len()).unwrap_or_default())
                );
                lp = lp.continue_token(&token);
            }
            None => break,
        }
    }
    paged.sort();
    assert_eq!(paged, full);
    // A continue token from before a compaction has expired.
    let first = all
        .list(&ListParams::default().limit(1))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let token = first.metadata.continue_.unwrap_or_default();
    let scratch: Api<Deployment> = Api::namespaced(client.clone(), "default");
    scratch
        .create(&PostParams::default(), &deployment("bump", 0, &[]))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    sim.store().compact();
    let err = api_error(
        all.list(&ListParams::default().limit(1).continue_token(&token))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (410, "Expired"));
}

/// Typed lists and gets of Deployments and Nodes.
async fn typed_deployments_and_nodes(client: &Client, deployments: &Api<Deployment>) {
    let list = deployments
        .list(&ListParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        names(&list.items),
        ["llama-decode", "llama-prefill", "llama-router"]
    );
    assert!(
        list.metadata
            .resource_version
            .is_some_and(|rv| !rv.is_empty())
    );
    let decode = deployments
        .get("llama-decode")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(decode.spec.as_ref().and_then(|s| s.replicas), Some(1));

    let nodes: Api<Node> = Api::all(client.clone());
    let list = nodes
        .list(&ListParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        names(&list.items),
        ["gpu-node-0", "gpu-node-1", "gpu-node-2"]
    );
    let node = nodes
        .get("gpu-node-1")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        node.labels()
            .get("kubernetes.io/hostname")
            .map(String::as_str),
        Some("gpu-node-1")
    );
}

/// Label and field selectors; unsupported ones are 400.
async fn label_and_field_selectors(
    pods: &Api<Pod>,
    all: &Api<Pod>,
    deployments: &Api<Deployment>,
    live: &[Pod],
) {
    // Label selectors: equality, set-based, existence.
    let count = |lp: ListParams| {
        let pods = pods.clone();
        async move {
            pods.list(&lp)
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .items
                .len()
        }
    };
    assert_eq!(
        count(ListParams::default().labels("infera.amd.com/service=decode")).await,
        1
    );
    assert_eq!(
        count(ListParams::default().labels("infera.amd.com/service in (decode,prefill)")).await,
        2
    );
    assert_eq!(
        count(ListParams::default().labels("infera.amd.com/service!=router,pod-template-hash"))
            .await,
        2
    );
    assert_eq!(count(ListParams::default().labels("!absent")).await, 3);
    assert_eq!(count(ListParams::default().labels("absent")).await, 0);

    // Field selectors.
    let decode_pod = live
        .iter()
        .find(|p| p.labels().get("infera.amd.com/service").map(String::as_str) == Some("decode"))
        .unwrap_or_else(|| panic!("no decode pod"));
    let name = decode_pod.name_any();
    let node_name = decode_pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default();
    let by_name = pods
        .list(&ListParams::default().fields(&format!("metadata.name={name}")))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(names(&by_name.items), std::slice::from_ref(&name));
    let on_node = all
        .list(&ListParams::default().fields(&format!("spec.nodeName={node_name}")))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(names(&on_node.items).contains(&name));
    assert!(
        on_node
            .items
            .iter()
            .all(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref())
                == Some(node_name.as_str()))
    );
    assert_eq!(
        count(ListParams::default().fields("status.phase=Running")).await,
        3
    );
    assert_eq!(
        count(ListParams::default().fields("status.phase!=Running")).await,
        0
    );
    assert_eq!(
        count(
            ListParams::default()
                .fields("status.phase=Running")
                .labels("infera.amd.com/service=router")
        )
        .await,
        1
    );
    // Upstream serves only the field labels each kind registers.
    let err = api_error(
        deployments
            .list(&ListParams::default().fields("spec.replicas=1"))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
    assert!(
        err.message
            .contains("field label not supported: spec.replicas"),
        "{}",
        err.message
    );
    let err = api_error(pods.list(&ListParams::default().labels("a in b")).await);
    assert_eq!(err.code, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_added_modified_deleted_and_the_watcher() {
    let (sim, client) = start("pd-1p1d", 200.0).await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let wp = WatchParams::default().labels("suite=watch").timeout(60);
    let mut stream = api
        .watch(&wp, "0")
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .boxed();
    // The runtime watcher, on the same selection.
    let mut runtime = watcher(
        api.clone(),
        watcher::Config::default().labels("suite=watch"),
    )
    .boxed();
    // It is lazy: drive it through its initial (empty) list first.
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(10), runtime.try_next())
            .await
            .unwrap_or_else(|_| panic!("no watcher event"))
            .unwrap_or_else(|e| panic!("{e}"));
        match ev {
            Some(watcher::Event::Init) => {}
            Some(watcher::Event::InitDone) => break,
            other => panic!("unexpected {other:?}"),
        }
    }

    api.create(
        &PostParams::default(),
        &deployment("w1", 1, &[("suite", "watch")]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    api.patch(
        "w1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"touched": "yes"}}})),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    // Leaves the selection: a watcher of `suite=watch` sees it DELETED.
    api.create(
        &PostParams::default(),
        &deployment("w2", 1, &[("suite", "watch")]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    api.patch(
        "w2",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"suite": "other"}}})),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    api.delete("w1", &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let mut seen: Vec<(String, String)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(seen.contains(&("DELETED".into(), "w1".into()))
        && seen.contains(&("DELETED".into(), "w2".into())))
    {
        let left = deadline.saturating_duration_since(Instant::now());
        let ev = tokio::time::timeout(left, stream.try_next())
            .await
            .unwrap_or_else(|_| panic!("watch events so far: {seen:?}"))
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("the watch ended; events so far: {seen:?}"));
        match ev {
            WatchEvent::Added(d) => seen.push(("ADDED".into(), d.name_any())),
            WatchEvent::Modified(d) => seen.push(("MODIFIED".into(), d.name_any())),
            WatchEvent::Deleted(d) => {
                // Leaving the selection: the last state that matched it.
                assert_eq!(
                    d.labels().get("suite").map(String::as_str),
                    Some("watch"),
                    "{:?}",
                    d.metadata
                );
                seen.push(("DELETED".into(), d.name_any()));
            }
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("watch error: {e:?}"),
        }
    }
    let pos = |t: &str, n: &str| {
        seen.iter()
            .position(|(a, b)| a == t && b == n)
            .unwrap_or_else(|| panic!("no {t} for {n}: {seen:?}"))
    };
    assert!(pos("ADDED", "w1") < pos("MODIFIED", "w1"));
    assert!(pos("MODIFIED", "w1") < pos("DELETED", "w1"));
    assert!(pos("ADDED", "w2") < pos("DELETED", "w2"));

    // The runtime watcher converges on the same story.
    let mut applied = Vec::new();
    let mut deleted = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !deleted.contains(&"w1".to_string()) || !deleted.contains(&"w2".to_string()) {
        let left = deadline.saturating_duration_since(Instant::now());
        let ev = tokio::time::timeout(left, runtime.try_next())
            .await
            .unwrap_or_else(|_| panic!("watcher: applied {applied:?} deleted {deleted:?}"))
            .unwrap_or_else(|e| panic!("{e}"));
        match ev {
            Some(watcher::Event::Apply(d) | watcher::Event::InitApply(d)) => {
                applied.push(d.name_any());
            }
            Some(watcher::Event::Delete(d)) => deleted.push(d.name_any()),
            Some(_) => {}
            None => panic!("the watcher ended"),
        }
    }
    assert!(applied.contains(&"w1".to_string()) && applied.contains(&"w2".to_string()));
    sim.shutdown().await;
}

/// A watch from `rv` gets one ERROR event: 410 Expired, "too old
/// resource version".
async fn expect_expired(api: &Api<Deployment>, wp: &WatchParams, rv: &str) {
    let mut stream = api
        .watch(wp, rv)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .boxed();
    let ev = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
        .await
        .unwrap_or_else(|_| panic!("no event after compaction"))
        .unwrap_or_else(|e| panic!("{e}"));
    match ev {
        Some(WatchEvent::Error(status)) => {
            assert_eq!(status.code, 410, "{status:?}");
            assert_eq!(status.reason, "Expired", "{status:?}");
            assert!(
                status.message.contains("too old resource version"),
                "{status:?}"
            );
        }
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_resume_and_gone_after_compaction() {
    let (sim, client) = start("pd-1p1d", 200.0).await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let a = api
        .create(
            &PostParams::default(),
            &deployment("a", 0, &[("suite", "resume")]),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let rv_a = a.resource_version().unwrap_or_default();
    for name in ["b", "c"] {
        api.create(
            &PostParams::default(),
            &deployment(name, 0, &[("suite", "resume")]),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    }
    // Resume after `a`: exactly what came later, in order.
    let wp = WatchParams::default().labels("suite=resume").timeout(30);
    let mut stream = api
        .watch(&wp, &rv_a)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .boxed();
    let mut added = Vec::new();
    while added.len() < 2 {
        let ev = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
            .await
            .unwrap_or_else(|_| panic!("resume events so far: {added:?}"))
            .unwrap_or_else(|e| panic!("{e}"));
        match ev {
            Some(WatchEvent::Added(d)) => added.push(d.name_any()),
            // The controller's status writes, a's included, came later.
            Some(WatchEvent::Modified(_) | WatchEvent::Bookmark(_)) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(added, ["b", "c"]);
    drop(stream);

    // After a compaction the old version is gone: an ERROR event with 410.
    sim.store().compact();
    expect_expired(&api, &wp, &rv_a).await;

    // The runtime watcher recovers from that by relisting. (No bookmarks:
    // its version must stay the last event it saw.)
    let mut runtime = watcher(
        api.clone(),
        watcher::Config::default()
            .labels("suite=resume")
            .disable_bookmarks(),
    )
    .boxed();
    let mut listed = Vec::new();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(10), runtime.try_next())
            .await
            .unwrap_or_else(|_| panic!("watcher init"))
            .unwrap_or_else(|e| panic!("{e}"));
        match ev {
            Some(watcher::Event::InitApply(d)) => listed.push(d.name_any()),
            Some(watcher::Event::InitDone) => break,
            Some(_) => {}
            None => panic!("the watcher ended"),
        }
    }
    listed.sort();
    assert_eq!(listed, ["a", "b", "c"]);
    // A write outside its selection moves the store on; after a compaction
    // and a dropped connection the watcher's version is too old.
    api.create(
        &PostParams::default(),
        &deployment("elsewhere", 0, &[("suite", "other")]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    sim.store().compact();
    sim.api().drop_watches();
    api.create(
        &PostParams::default(),
        &deployment("d", 0, &[("suite", "resume")]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut gone = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ev = tokio::time::timeout(left, runtime.next())
            .await
            .unwrap_or_else(|_| panic!("the watcher never saw d"))
            .unwrap_or_else(|| panic!("the watcher ended"));
        match ev {
            Err(e) => {
                assert!(e.to_string().contains("too old resource version"), "{e}");
                gone = true;
            }
            Ok(watcher::Event::Apply(d) | watcher::Event::InitApply(d)) if d.name_any() == "d" => {
                break;
            }
            Ok(_) => {}
        }
    }
    assert!(gone, "the re-watch got 410 Gone");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookmarks() {
    let (sim, client) = start("pd-1p1d", 200.0).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "llm");
    running_pods(&pods, 3).await;

    // A streaming list: the current objects, then a bookmark marking the
    // end of the initial events.
    let mut stream = pods
        .watch(&WatchParams::streaming_lists().timeout(30), "")
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .boxed();
    let mut initial = 0;
    let bookmark = loop {
        let ev = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
            .await
            .unwrap_or_else(|_| panic!("no initial-events-end bookmark"))
            .unwrap_or_else(|e| panic!("{e}"));
        match ev {
            Some(WatchEvent::Added(_)) => initial += 1,
            Some(WatchEvent::Bookmark(b)) => break b,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(initial, 3);
    assert_eq!(
        bookmark
            .metadata
            .annotations
            .get("k8s.io/initial-events-end")
            .map(String::as_str),
        Some("true")
    );
    drop(stream);

    // A plain watch that allows bookmarks gets periodic ones carrying a
    // version no older than where it started.
    let list = pods
        .list(&ListParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let rv: u64 = list
        .metadata
        .resource_version
        .unwrap_or_default()
        .parse()
        .unwrap_or_default();
    let mut stream = pods
        .watch(&WatchParams::default().timeout(30), &rv.to_string())
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .boxed();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ev = tokio::time::timeout(left, stream.try_next())
            .await
            .unwrap_or_else(|_| panic!("no periodic bookmark"))
            .unwrap_or_else(|e| panic!("{e}"));
        if let Some(WatchEvent::Bookmark(b)) = ev {
            let at: u64 = b.metadata.resource_version.parse().unwrap_or_default();
            assert!(at >= rv, "bookmark {at} older than the list's {rv}");
            break;
        }
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_replace_and_status_errors() {
    let (sim, client) = start("pd-1p1d", 200.0).await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let created = api
        .create(&PostParams::default(), &deployment("cas", 1, &[]))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(created.metadata.generation, Some(1));
    assert!(created.uid().is_some());

    // 409 AlreadyExists.
    let err = api_error(
        api.create(&PostParams::default(), &deployment("cas", 1, &[]))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(err.message, "deployments.apps \"cas\" already exists");
    let details = err.details.unwrap_or_else(|| panic!("no details"));
    assert_eq!(
        (
            details.name.as_str(),
            details.group.as_str(),
            details.kind.as_str()
        ),
        ("cas", "apps", "deployments")
    );

    // Replace with the current version: accepted, generation bumped. The
    // deployment controller writes status meanwhile, so (as against any
    // cluster) read-modify-write until no one wrote in between.
    let mut stale = created.clone();
    let replaced = eventually("a replace without a conflict", || async {
        let mut fresh = api.get("cas").await.ok()?;
        if let Some(spec) = fresh.spec.as_mut() {
            spec.replicas = Some(2);
        }
        match api.replace("cas", &PostParams::default(), &fresh).await {
            Ok(d) => Some(d),
            Err(kube::Error::Api(s)) if s.code == 409 => None,
            Err(e) => panic!("{e}"),
        }
    })
    .await;
    assert_eq!(replaced.metadata.generation, Some(2));
    assert_ne!(replaced.resource_version(), created.resource_version());
    // ... with a stale one: 409 Conflict.
    if let Some(spec) = stale.spec.as_mut() {
        spec.replicas = Some(5);
    }
    let err = api_error(api.replace("cas", &PostParams::default(), &stale).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(
        err.message
            .starts_with("Operation cannot be fulfilled on deployments.apps \"cas\""),
        "{}",
        err.message
    );
    let current = api.get("cas").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(current.spec.as_ref().and_then(|s| s.replicas), Some(2));

    not_found_and_invalid(&client, &api).await;
    bad_requests_and_dry_run(&client, &api).await;
    sim.shutdown().await;
}

/// 404 NotFound (object, namespace) and 422 Invalid.
async fn not_found_and_invalid(client: &Client, api: &Api<Deployment>) {
    // 404 NotFound, for an object and for a namespace.
    let err = api_error(api.get("nope").await);
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    assert_eq!(err.message, "deployments.apps \"nope\" not found");
    let in_missing_ns: Api<Deployment> = Api::namespaced(client.clone(), "missing");
    let err = api_error(
        in_missing_ns
            .create(&PostParams::default(), &deployment("x", 1, &[]))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    assert_eq!(err.message, "namespaces \"missing\" not found");
    let err = api_error(api.delete("nope", &DeleteParams::default()).await);
    assert_eq!(err.code, 404);

    // 422 Invalid.
    let err = api_error(
        api.create(&PostParams::default(), &deployment("Not_A_Name", 1, &[]))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert!(
        err.message
            .starts_with("Deployment.apps \"Not_A_Name\" is invalid: metadata.name"),
        "{}",
        err.message
    );
    let mut negative = deployment("negative", 1, &[]);
    if let Some(spec) = negative.spec.as_mut() {
        spec.replicas = Some(-1);
    }
    let err = api_error(api.create(&PostParams::default(), &negative).await);
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert!(err.message.contains("spec.replicas"), "{}", err.message);
}

/// 400 for a wrong type and for an unknown field under Strict; Warn stores without it; dry run stores nothing.
async fn bad_requests_and_dry_run(client: &Client, api: &Api<Deployment>) {
    // 400: a field of the wrong type; an unknown field with Strict.
    let mut wrong_type =
        serde_json::to_value(deployment("typed", 1, &[])).unwrap_or_else(|e| panic!("{e}"));
    wrong_type["spec"]["replicas"] = json!("three");
    let raw: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &kube::api::ApiResource::erase::<Deployment>(&()),
    );
    let as_dynamic = |v: Value| -> kube::api::DynamicObject {
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    };
    let err = api_error(
        raw.create(&PostParams::default(), &as_dynamic(wrong_type))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
    assert!(
        err.message.starts_with(
            "Deployment in version \"v1\" cannot be handled as a Deployment: spec.replicas"
        ),
        "{}",
        err.message
    );
    let mut unknown =
        serde_json::to_value(deployment("unknown", 1, &[])).unwrap_or_else(|e| panic!("{e}"));
    unknown["spec"]["replicass"] = json!(1);
    let err = api_error(
        client
            .request::<Value>(
                http::Request::post(
                    "/apis/apps/v1/namespaces/default/deployments?fieldValidation=Strict",
                )
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&unknown).unwrap_or_default())
                .unwrap_or_else(|e| panic!("{e}")),
            )
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
    assert!(
        err.message
            .ends_with(r#"strict decoding error: unknown field "spec.replicass""#),
        "{}",
        err.message
    );
    // Without Strict (the default is Warn) it is stored without the field.
    let stored = raw
        .create(&PostParams::default(), &as_dynamic(unknown))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        stored.data.pointer("/spec/replicass").is_none(),
        "{:?}",
        stored.data
    );
    assert_eq!(stored.data.pointer("/spec/replicas"), Some(&json!(1)));

    // dry run: nothing stored.
    let preview = api
        .create(
            &PostParams {
                dry_run: true,
                ..PostParams::default()
            },
            &deployment("dry", 1, &[]),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(preview.name_any(), "dry");
    assert!(
        api.get_opt("dry")
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_types() {
    let (sim, client) = start("pd-1p1d", 200.0).await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    api.create(
        &PostParams::default(),
        &deployment("p", 1, &[("team", "a")]),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let pp = PatchParams::default();

    // JSON merge patch: labels and annotations (null deletes).
    let d = api
        .patch(
            "p",
            &pp,
            &Patch::Merge(
                json!({"metadata": {"labels": {"team": null, "tier": "gold"},
                "annotations": {"note": "merge"}}}),
            ),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!d.labels().contains_key("team"));
    assert_eq!(d.labels().get("tier").map(String::as_str), Some("gold"));
    assert_eq!(
        d.annotations().get("note").map(String::as_str),
        Some("merge")
    );
    assert_eq!(d.metadata.generation, Some(1), "metadata is not the spec");

    // JSON patch: replicas; a failing `test` op is refused.
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/spec/replicas", "value": 1},
        {"op": "replace", "path": "/spec/replicas", "value": 3}
    ]))
    .unwrap_or_else(|e| panic!("{e}"));
    let d = api
        .patch("p", &pp, &Patch::Json::<()>(patch))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(d.spec.as_ref().and_then(|s| s.replicas), Some(3));
    assert_eq!(d.metadata.generation, Some(2));
    let bad: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/spec/replicas", "value": 1}
    ]))
    .unwrap_or_else(|e| panic!("{e}"));
    let err = api_error(api.patch("p", &pp, &Patch::Json::<()>(bad)).await);
    assert_eq!(err.code, 422, "{err:?}");

    // Merge patch: pause.
    let d = api
        .patch("p", &pp, &Patch::Merge(json!({"spec": {"paused": true}})))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(d.spec.as_ref().and_then(|s| s.paused), Some(true));

    // Strategic merge patch: the container merges by name (ports, env kept).
    let d = api
        .patch(
            "p",
            &pp,
            &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "main", "image": "nginx:1.28"}]}}}})),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let c = &d
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .map(|s| s.containers.clone())
        .unwrap_or_default();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].image.as_deref(), Some("nginx:1.28"));
    assert_eq!(c[0].ports.as_ref().map(Vec::len), Some(1));
    assert_eq!(c[0].env.as_ref().map(Vec::len), Some(1));
    // A merge patch of the same list replaces it (no merge keys).
    let d = api
        .patch(
            "p",
            &pp,
            &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "main", "image": "nginx:1.29"}]}}}})),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let c = &d
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .map(|s| s.containers.clone())
        .unwrap_or_default();
    assert_eq!(c[0].image.as_deref(), Some("nginx:1.29"));
    assert!(c[0].ports.is_none() && c[0].env.is_none());

    paused_then_resumed(&client, &api, &pp).await;
    conflicts_apply_and_media_types(&client, &api, &pp).await;
    sim.shutdown().await;
}

/// A paused Deployment observes a template change without rolling it; resumed, it rolls.
async fn paused_then_resumed(client: &Client, api: &Api<Deployment>, pp: &PatchParams) {
    // Paused: the template change is observed but not rolled out.
    let d = eventually("the paused deployment observed", || async {
        let d = api.get("p").await.ok()?;
        let observed = d.status.as_ref()?.observed_generation?;
        (Some(observed) == d.metadata.generation).then_some(d)
    })
    .await;
    let progressing = d
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Progressing").cloned())
        .unwrap_or_else(|| panic!("no Progressing condition: {:?}", d.status));
    assert_eq!(
        (progressing.status.as_str(), progressing.reason.as_deref()),
        ("Unknown", Some("DeploymentPaused"))
    );
    let rs: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let sets = rs
        .list(&ListParams::default().labels("app=p"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // (Whether the first template's ReplicaSet exists depends on whether
    // the controller saw the deployment before the pause, as upstream.)
    let images: Vec<Option<String>> = sets
        .items
        .iter()
        .map(|rs| {
            rs.spec
                .as_ref()
                .and_then(|s| s.template.as_ref())
                .and_then(|t| t.spec.as_ref())
                .and_then(|s| s.containers[0].image.clone())
        })
        .collect();
    assert!(
        images.iter().all(|i| i.as_deref() == Some("nginx:1.27")),
        "no ReplicaSet for the new template while paused: {images:?}"
    );

    // Resume: the new template rolls out.
    api.patch("p", pp, &Patch::Merge(json!({"spec": {"paused": false}})))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    eventually("the rollout after resume", || async {
        let d = api.get("p").await.ok()?;
        let s = d.status.as_ref()?;
        (s.updated_replicas == Some(3) && s.available_replicas == Some(3) && s.replicas == Some(3))
            .then_some(())
    })
    .await;
}

/// A stale resourceVersion conflicts, server-side apply creates, an unknown patch type is 415.
async fn conflicts_apply_and_media_types(client: &Client, api: &Api<Deployment>, pp: &PatchParams) {
    // A patch carrying a stale resourceVersion is a conflict.
    let err = api_error(
        api.patch(
            "p",
            pp,
            &Patch::Merge(json!({"metadata": {"resourceVersion": "1", "labels": {"x": "y"}}})),
        )
        .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));

    // Server-side apply creates and updates.
    let applied = api
        .patch(
            "ssa",
            &PatchParams::apply("sim-test"),
            &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "ssa"},
                "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "ssa"}},
                    "template": {"metadata": {"labels": {"app": "ssa"}},
                        "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}}}})),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(applied.name_any(), "ssa");
    // Unknown patch media type: 415.
    let err = api_error(
        client
            .request::<Value>(
                http::Request::patch("/apis/apps/v1/namespaces/default/deployments/p")
                    .header("content-type", "application/xml")
                    .body(b"<x/>".to_vec())
                    .unwrap_or_else(|e| panic!("{e}")),
            )
            .await,
    );
    assert_eq!(err.code, 415);
}

/// Deleting a Deployment with `orphan` propagation: its ReplicaSet stays,
/// without its owner reference.
async fn orphan_keeps_its_replicaset(deployments: &Api<Deployment>, replicasets: &Api<ReplicaSet>) {
    deployments
        .create(&PostParams::default(), &deployment("orphan", 0, &[]))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    eventually("the orphan's ReplicaSet", || async {
        let l = replicasets
            .list(&ListParams::default().labels("app=orphan"))
            .await
            .ok()?;
        (l.items.len() == 1).then_some(())
    })
    .await;
    deployments
        .delete("orphan", &DeleteParams::orphan())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let l = replicasets
        .list(&ListParams::default().labels("app=orphan"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(l.items.len(), 1);
    assert!(l.items[0].owner_references().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_with_grace_and_garbage_collection() {
    let (sim, client) = start("pd-1p1d", 100.0).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let replicasets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let mut d = deployment("gc", 2, &[]);
    if let Some(t) = d.spec.as_mut().and_then(|s| s.template.spec.as_mut()) {
        // 900 s of preStop: 9 s of wall time, time enough to look.
        t.termination_grace_period_seconds = Some(1200);
        t.containers[0].lifecycle =
            serde_json::from_value(json!({"preStop": {"exec": {"command": ["sleep", "900"]}}}))
                .ok();
    }
    deployments
        .create(&PostParams::default(), &d)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let live = running_pods(&pods, 2).await;

    // A graceful pod delete returns the pod, marked, still present.
    let victim = live[0].name_any();
    let marked = pods
        .delete(&victim, &DeleteParams::default().grace_period(1000))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .left()
        .unwrap_or_else(|| panic!("a graceful delete returns the pod"));
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(1000));
    let still = pods.get(&victim).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(still.metadata.deletion_timestamp.is_some());
    // A second delete may shorten the grace period, never extend it.
    let again = pods
        .delete(&victim, &DeleteParams::default().grace_period(2000))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .left()
        .unwrap_or_else(|| panic!("the pod"));
    assert_eq!(again.metadata.deletion_grace_period_seconds, Some(1000));
    // A uid precondition that does not match: 409.
    let err = api_error(
        pods.delete(
            &live[1].name_any(),
            &DeleteParams::default().preconditions(Preconditions {
                uid: Some("not-the-uid".into()),
                resource_version: None,
            }),
        )
        .await,
    );
    assert_eq!(err.code, 409);

    // Deleting the Deployment (background): its ReplicaSet and pods follow.
    let owner_uid = deployments
        .get("gc")
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .uid()
        .unwrap_or_default();
    let rs_list = replicasets
        .list(&ListParams::default().labels("app=gc"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rs_list.items.len(), 1);
    assert!(
        rs_list.items[0]
            .owner_references()
            .iter()
            .any(|o| o.uid == owner_uid && o.controller == Some(true))
    );
    let status = deployments
        .delete("gc", &DeleteParams::background())
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .right()
        .unwrap_or_else(|| panic!("deleting a deployment returns a Status"));
    assert!(status.is_success(), "{status:?}");
    assert!(
        deployments
            .get_opt("gc")
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_none()
    );
    eventually("the ReplicaSet collected", || async {
        let l = replicasets
            .list(&ListParams::default().labels("app=gc"))
            .await
            .ok()?;
        l.items.is_empty().then_some(())
    })
    .await;
    eventually("every pod marked for deletion", || async {
        let l = pods
            .list(&ListParams::default().labels("app=gc"))
            .await
            .ok()?;
        l.items
            .iter()
            .all(|p| p.metadata.deletion_timestamp.is_some())
            .then_some(())
    })
    .await;

    orphan_keeps_its_replicaset(&deployments, &replicasets).await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_and_status_subresources() {
    let (sim, client) = start("pd-1p1d", 200.0).await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &deployment("s", 1, &[]))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let scale = eventually("status.replicas 1 in the scale", || async {
        let s = api.get_scale("s").await.ok()?;
        (s.status.as_ref()?.replicas == 1).then_some(s)
    })
    .await;
    assert_eq!(scale.spec.as_ref().and_then(|s| s.replicas), Some(1));
    assert_eq!(
        scale.status.as_ref().and_then(|s| s.selector.as_deref()),
        Some("app=s")
    );

    // replace_scale with the current version. The Deployment controller
    // may write the status between the read and the write (a new
    // resourceVersion: 409), so read again until one write lands.
    let mut want = scale.clone();
    let mut replaced = None;
    for _ in 0..20 {
        if let Some(spec) = want.spec.as_mut() {
            spec.replicas = Some(2);
        }
        match api.replace_scale("s", &PostParams::default(), &want).await {
            Ok(r) => {
                replaced = Some(r);
                break;
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                want = api.get_scale("s").await.unwrap_or_else(|e| panic!("{e}"));
            }
            Err(e) => panic!("{e}"),
        }
    }
    let replaced = replaced.unwrap_or_else(|| panic!("replace_scale conflicted 20 times"));
    assert_eq!(replaced.spec.as_ref().and_then(|s| s.replicas), Some(2));
    // ... and with the old one: 409.
    let err = api_error(api.replace_scale("s", &PostParams::default(), &want).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    // patch_scale
    let patched = api
        .patch_scale(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(patched.spec.as_ref().and_then(|s| s.replicas), Some(3));
    let d = api.get("s").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(d.spec.as_ref().and_then(|s| s.replicas), Some(3));
    let err = api_error(
        api.patch_scale(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": -1}})),
        )
        .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    eventually("3 available replicas", || async {
        let d = api.get("s").await.ok()?;
        (d.status.as_ref()?.available_replicas == Some(3)).then_some(())
    })
    .await;

    // The status subresource writes only the status.
    let status_view = api.get_status("s").await.unwrap_or_else(|e| panic!("{e}"));
    assert!(status_view.status.is_some());
    let pp = PatchParams::default();
    let after = api
        .patch_status(
            "s",
            &pp,
            &Patch::Merge(json!({"spec": {"replicas": 7}, "status": {"collisionCount": 4}})),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(after.spec.as_ref().and_then(|s| s.replicas), Some(3));
    assert_eq!(
        after.status.as_ref().and_then(|s| s.collision_count),
        Some(4)
    );
    // The main resource ignores status.
    let after = api
        .patch(
            "s",
            &pp,
            &Patch::Merge(json!({"status": {"collisionCount": 9}})),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        after.status.as_ref().and_then(|s| s.collision_count),
        Some(4)
    );
    // replace_status with a stale version conflicts.
    let err = api_error(
        api.replace_status("s", &PostParams::default(), &status_view)
            .await,
    );
    assert_eq!(err.code, 409);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_proxy_ready_follows_the_port() {
    let (sim, _) = start("pd-1p1d", 200.0).await;
    // kube retries 503 (up to 15 times, backing off to minutes): ask once.
    let mut config = sim.client_config().await.unwrap_or_else(|e| panic!("{e}"));
    config.default_retry = false;
    let client = Client::try_from(config).unwrap_or_else(|e| panic!("{e}"));
    let pods: Api<Pod> = Api::namespaced(client.clone(), "llm");
    let live = running_pods(&pods, 3).await;
    let by_role = |role: &str| {
        live.iter()
            .find(|p| p.labels().get("infera.amd.com/service").map(String::as_str) == Some(role))
            .map(ResourceExt::name_any)
            .unwrap_or_else(|| panic!("no {role} pod"))
    };
    let proxy = |pod: String| {
        let client = client.clone();
        async move {
            client
                .request_text(
                    http::Request::get(format!(
                        "/api/v1/namespaces/llm/pods/{pod}:30090/proxy/ready"
                    ))
                    .body(Vec::new())
                    .unwrap_or_else(|e| panic!("{e}")),
                )
                .await
        }
    };
    let decode = by_role("decode");
    proxy(decode.clone())
        .await
        .unwrap_or_else(|e| panic!("the ready decode worker's port: {e}"));
    let err = api_error(proxy(by_role("router")).await);
    assert_eq!((err.code, err.reason.as_str()), (503, "ServiceUnavailable"));
    let err = api_error(proxy("no-such-pod".into()).await);
    assert_eq!(err.code, 404);

    // Terminating: the worker closes its port.
    pods.delete(&decode, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    eventually("the port to close", || async {
        match proxy(decode.clone()).await {
            Err(kube::Error::Api(s)) if s.code == 503 || s.code == 404 => Some(()),
            _ => None,
        }
    })
    .await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_token_is_401() {
    let (sim, _client) = start("pd-1p1d", 200.0).await;
    let mut config = sim.client_config().await.unwrap_or_else(|e| panic!("{e}"));
    config.auth_info.token = Some("not-the-token".to_string().into());
    let client = Client::try_from(config).unwrap_or_else(|e| panic!("{e}"));
    let pods: Api<Pod> = Api::namespaced(client, "llm");
    let err = api_error(pods.list(&ListParams::default()).await);
    assert_eq!((err.code, err.reason.as_str()), (401, "Unauthorized"));
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_the_generated_ca() {
    let scenario = Scenario::load("pd-1p1d").unwrap_or_else(|e| panic!("{e}"));
    let mut options = SimOptions::new(scenario, 200.0);
    options.tls = true;
    let sim = RunningSim::start(options)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(sim.url().starts_with("https://"));
    let config = sim.client_config().await.unwrap_or_else(|e| panic!("{e}"));
    let client = Client::try_from(config).unwrap_or_else(|e| panic!("{e}"));
    let nodes: Api<Node> = Api::all(client.clone());
    let list = nodes
        .list(&ListParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(list.items.len(), 3);
    let version = client
        .apiserver_version()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (version.major.as_str(), version.minor.as_str()),
        ("1", "33")
    );
    // A client that does not trust the simulator's CA is refused.
    let mut untrusting = sim.client_config().await.unwrap_or_else(|e| panic!("{e}"));
    untrusting.root_cert = None;
    let client = Client::try_from(untrusting).unwrap_or_else(|e| panic!("{e}"));
    let nodes: Api<Node> = Api::all(client);
    assert!(nodes.list(&ListParams::default()).await.is_err());
    sim.shutdown().await;
}
