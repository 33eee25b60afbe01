//! What the simulator keeps has a bound (docs/simulator.md, "What the
//! simulator keeps"): Events expire after `--event-ttl` of scenario time,
//! as kube-apiserver's etcd leases do, and a watcher sees them go.

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

use crate::common::sim::{self, Sim};

/// An hour of Events' life at 3600×: one second of wall time.
const SPEED: f64 = 3600.0;
const TTL: Duration = Duration::from_secs(3600);

fn event(name: &str) -> Event {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web-0"},
        "reason": "Pulled", "message": "Successfully pulled image", "type": "Normal",
        "source": {"component": "kubelet"}, "count": 1,
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

/// An Event posted over the API is listed, then deleted once its TTL of
/// scenario time has passed since its write: a watcher sees ADDED, then
/// DELETED (etcd's lease revoke is a delete), never before the TTL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_expire_after_their_ttl_and_watchers_see_them_deleted() {
    let mut options = sim::options("pd-1p1d", SPEED).without_world();
    options.event_ttl = TTL;
    let sim = Sim::unsteady(options).await;
    let events: Api<Event> = Api::namespaced(sim.client().await, "default");
    let wp = WatchParams::default().timeout(60);
    let mut stream = events
        .watch(&wp, &sim.store().resource_version().to_string())
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .boxed();
    let posted = Instant::now();
    events
        .create(&PostParams::default(), &event("web-0.pulled"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut seen = Vec::new();
    while !seen.iter().any(|(t, _)| *t == "DELETED") {
        let next = tokio::time::timeout(Duration::from_secs(30), stream.try_next())
            .await
            .unwrap_or_else(|_| panic!("no DELETED within 30 s; saw {seen:?}"))
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("the watch ended; saw {seen:?}"));
        match next {
            WatchEvent::Added(e) => seen.push(("ADDED", e.metadata.name)),
            WatchEvent::Deleted(e) => seen.push(("DELETED", e.metadata.name)),
            other => panic!("unexpected {other:?}"),
        }
    }
    let lived = sim.clock().to_sim(posted.elapsed());
    let name = Some("web-0.pulled".to_string());
    assert_eq!(seen, [("ADDED", name.clone()), ("DELETED", name)]);
    assert!(lived + Duration::from_millis(5) >= TTL, "{lived:?}");
    let left = events
        .list(&ListParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(left.items.is_empty(), "{:?}", left.items);
    assert_eq!(sim.store().lease_count(), 0);
    sim.shutdown().await;
}

/// `event_ttl` zero keeps Events, as upstream's `--event-ttl 0`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_ttl_keeps_events() {
    let mut options = sim::options("pd-1p1d", SPEED).without_world();
    options.event_ttl = Duration::ZERO;
    let sim = Sim::unsteady(options).await;
    let events: Api<Event> = Api::namespaced(sim.client().await, "default");
    events
        .create(&PostParams::default(), &event("kept"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sim.store().lease_count(), 0);
    let now = Instant::now() + Duration::from_secs(86_400);
    assert_eq!(sim.store().expire_leases(now), 0);
    let listed = events
        .list(&ListParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed.items.len(), 1);
    sim.shutdown().await;
}
