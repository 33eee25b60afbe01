//! The watches a rollout drives on (the target's pods, the namespace's
//! Deployments, the InferaDeployment itself: a trigger reverted by another
//! writer is seen there) and the `/ready` checks of replacements through the pod
//! proxy.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};

use super::api::spawn_proxy_probe;
use super::legs::{LABEL_DEPLOYMENT, Leg};
use super::options::Request;
use super::target::TargetKind;
use infera_cluster::Connection;

/// One event of either watch.
#[allow(clippy::large_enum_variant)] // short-lived, one at a time
pub(crate) enum Watched {
    Pod(Result<Event<Pod>, watcher::Error>),
    Deployment(Result<Event<Deployment>, watcher::Error>),
    /// The InferaDeployment itself (a plain Deployment target comes with
    /// the Deployment watch).
    Target(Result<Event<DynamicObject>, watcher::Error>),
    /// A heartbeat's outcome (whether the watches can be trusted).
    Beat(infera_cluster::sight::Beat),
}

/// The pod watch (the target's selector) and the Deployment watch of the
/// namespace, merged.
pub(crate) fn watch_streams(
    conn: &Connection,
    req: &Request,
    legs: &[Leg],
) -> BoxStream<'static, Watched> {
    let selector = match req.target.kind {
        TargetKind::InferaDeployment => format!("{LABEL_DEPLOYMENT}={}", req.target.name),
        TargetKind::Deployment => legs
            .first()
            .map(|l| l.selector.to_string())
            .unwrap_or_default(),
    };
    let pods_api: Api<Pod> = Api::namespaced(conn.client.clone(), &conn.namespace);
    let deps_api: Api<Deployment> = Api::namespaced(conn.client.clone(), &conn.namespace);
    let pod_stream = watcher::watcher(pods_api, watcher::Config::default().labels(&selector))
        .backoff(infera_cluster::watch_backoff())
        .map(Watched::Pod);
    let dep_stream = watcher::watcher(deps_api, watcher::Config::default())
        .backoff(infera_cluster::watch_backoff())
        .map(Watched::Deployment);
    let mut beats = infera_cluster::sight::spawn_heartbeat(
        conn.client.clone(),
        infera_cluster::sight::HEARTBEAT_PERIOD,
        infera_cluster::sight::HEARTBEAT_TIMEOUT,
    );
    let beat_stream = futures::stream::poll_fn(move |cx| beats.poll_recv(cx)).map(Watched::Beat);
    let merged = futures::stream::select(pod_stream.boxed(), dep_stream.boxed());
    let merged = futures::stream::select(merged, beat_stream.boxed());
    if req.target.kind != TargetKind::InferaDeployment {
        return merged.boxed();
    }
    let resource = infera_cluster::inferadeployment_resource();
    let idep_api: Api<DynamicObject> =
        Api::namespaced_with(conn.client.clone(), &conn.namespace, &resource);
    let by_name = format!("metadata.name={}", req.target.name);
    let target_stream = watcher::watcher(idep_api, watcher::Config::default().fields(&by_name))
        .backoff(infera_cluster::watch_backoff())
        .map(Watched::Target);
    futures::stream::select(merged, target_stream.boxed()).boxed()
}

/// (leg, pod, 200 or what went wrong).
pub(crate) type ProbeResult = (String, String, Result<(), String>);

/// `/ready` checks in flight and when each pod is due again.
pub(crate) struct Probes {
    client: kube::Client,
    pub namespace: String,
    tx: tokio::sync::mpsc::UnboundedSender<ProbeResult>,
    pub rx: tokio::sync::mpsc::UnboundedReceiver<ProbeResult>,
    next: HashMap<String, Instant>,
    /// How often a running replacement's /ready is asked until it answers:
    /// every 5 s (reported), at most twice a wall second.
    poll: Duration,
}

impl Probes {
    /// `five_seconds`: 5 s of reported time, as wall time.
    pub fn new(conn: &Connection, five_seconds: Duration) -> Self {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        Probes {
            client: conn.probe_client.clone(),
            namespace: conn.namespace.clone(),
            tx,
            rx,
            next: HashMap::new(),
            poll: Duration::from_millis(500)
                .max(five_seconds)
                .min(Duration::from_secs(5)),
        }
    }

    /// Whether `pod` should be asked again at `now`.
    pub fn due(&self, pod: &str, now: Instant) -> bool {
        self.next.get(pod).is_none_or(|d| now >= *d)
    }

    /// Ask `pod`'s `/ready` now; the next poll is due one period after `at`.
    pub fn ask(&mut self, leg: &Leg, pod: &str, at: Instant) {
        self.next.insert(pod.to_string(), at + self.poll);
        spawn_proxy_probe(
            self.client.clone(),
            self.namespace.clone(),
            leg.name.clone(),
            pod.to_string(),
            leg.readiness_port,
            self.tx.clone(),
        );
    }

    /// `pod` answered 200: no more polls.
    pub fn answered(&mut self, pod: &str) {
        self.next.remove(pod);
    }
}
