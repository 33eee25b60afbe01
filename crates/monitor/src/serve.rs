//! The running monitor: one `kube` watcher per resource feeding the
//! [`State`], a heartbeat proving the watches current, and the HTTP
//! endpoints (`/metrics`, `/healthz`, `/readyz`), until shutdown.
//!
//! A watch error that retrying fixes (connection refused or reset, 5xx,
//! 410 Gone) is retried by the watcher with infera's backoff and re-lists;
//! one that it does not (403 Forbidden, 401, a missing resource type) is
//! logged once, naming the verb and resource, and the watch is tried again
//! every [`FATAL_RETRY`]: the process stays up with `infera_watch_up` 0,
//! never a crash loop.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State as AxumState;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use kube::api::DynamicObject;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};

use infera_cluster::sight;
use infera_cluster::{ClusterError, Connection, api_resource, inferadeployment_resource};
use infera_model::api::LEADER_WORKER_SET;

use crate::state::{Resource, SAMPLE_INTERVAL, State};

/// How long a watch refused for good (403, 401, 404) waits before trying
/// again.
pub const FATAL_RETRY: Duration = Duration::from_secs(30);

/// The OpenMetrics content type of `/metrics`.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The classic Prometheus text format, for clients that do not ask for
/// OpenMetrics.
pub const CLASSIC_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Errors that stop the monitor before it serves.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// The cause is in the message, so it is not also a `source` (an error
    /// chain printed with `{:#}` would say it twice).
    #[error("cannot listen on {addr}: {cause}; pick another address with --listen")]
    Listen {
        addr: SocketAddr,
        cause: std::io::Error,
    },
    #[error("the HTTP server failed: {0}")]
    Serve(std::io::Error),
}

/// What to watch and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// `Some(ns)`: one namespace; `None`: every namespace (`-A`).
    pub namespace: Option<String>,
    /// `-l`: the label selector a workload's labels must match.
    pub selector: infera_model::selector::Selector,
    pub min_ready: u32,
    pub listen: SocketAddr,
    /// `--probe-interval`; `None`: `--no-probe`.
    pub probe: Option<Duration>,
}

type Shared = Arc<Mutex<State>>;

fn lock(s: &Mutex<State>) -> MutexGuard<'_, State> {
    s.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Serve until `shutdown` resolves. `on_listening` is told the bound
/// address (with `--listen 127.0.0.1:0`, the port picked).
pub async fn run(
    conn: &Connection,
    opts: &Options,
    on_listening: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()>,
) -> Result<(), MonitorError> {
    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .map_err(|cause| MonitorError::Listen {
            addr: opts.listen,
            cause,
        })?;
    let addr = listener
        .local_addr()
        .map_err(|cause| MonitorError::Listen {
            addr: opts.listen,
            cause,
        })?;
    let state: Shared = Arc::new(Mutex::new(State::new(
        opts.min_ready,
        opts.selector.clone(),
        Instant::now(),
    )));
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(state.clone());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let server = tokio::spawn(async move {
        let mut rx = stop_rx;
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = rx.wait_for(|stop| *stop).await;
            })
            .await
    });
    tracing::info!(target: infera_cluster::trace::target::MONITOR, "serving /metrics, /healthz and /readyz on http://{addr}");
    on_listening(addr);
    tokio::select! {
        () = watch_loop(conn, opts, state.clone()) => {}
        () = probe_loop(conn, opts.probe, state) => {}
        () = shutdown => {
            tracing::info!(target: infera_cluster::trace::target::MONITOR, "shutting down");
        }
    }
    let _ = stop_tx.send(true);
    match server.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(MonitorError::Serve(e)),
        Err(e) => Err(MonitorError::Serve(std::io::Error::other(e.to_string()))),
    }
}

async fn metrics(
    AxumState(state): AxumState<Shared>,
    headers: axum::http::HeaderMap,
) -> impl IntoResponse {
    let snapshot = crate::metrics::Snapshot::of(&mut lock(&state), Instant::now());
    let body = snapshot.encode();
    let openmetrics = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    if openmetrics {
        ([(header::CONTENT_TYPE, CONTENT_TYPE)], body)
    } else {
        (
            [(header::CONTENT_TYPE, CLASSIC_CONTENT_TYPE)],
            crate::metrics::classic_text(&body),
        )
    }
}

async fn readyz(AxumState(state): AxumState<Shared>) -> impl IntoResponse {
    match lock(&state).ready() {
        Ok(()) => (StatusCode::OK, "ok\n".to_string()),
        Err(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not current: {why}\n"),
        ),
    }
}

/// Probe every InferaDeployment in scope with a router each `interval`
/// ([`crate::probe`]); never returns (pending forever with `--no-probe`).
async fn probe_loop(conn: &Connection, interval: Option<Duration>, state: Shared) {
    let Some(interval) = interval else {
        return std::future::pending().await;
    };
    let interval = interval.max(crate::probe::MIN_INTERVAL);
    let metrics = lock(&state).probe.clone();
    let mut prober = crate::probe::Prober::new(conn.probe_client.clone(), metrics);
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let targets = lock(&state).probe_targets();
                prober.round(&targets);
            }
            () = prober.next() => {}
        }
    }
}

type Stream<K> = BoxStream<'static, Result<Event<K>, watcher::Error>>;

/// The watcher of `api`, started after `delay`.
fn start<K>(api: &Api<K>, delay: Duration) -> Stream<K>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let api = api.clone();
    futures::stream::once(tokio::time::sleep(delay))
        .map(move |()| {
            watcher::watcher(api.clone(), watcher::Config::default())
                .backoff(infera_cluster::watch_backoff())
        })
        .flatten()
        .boxed()
}

/// One watch: its API, its stream, and where errors are reported.
struct Watch<K: 'static> {
    resource: Resource,
    api: Api<K>,
    stream: Stream<K>,
}

impl<K> Watch<K>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    fn new(resource: Resource, api: Api<K>) -> Watch<K> {
        let stream = start(&api, Duration::ZERO);
        Watch {
            resource,
            api,
            stream,
        }
    }

    fn restart(&mut self, delay: Duration) {
        self.stream = start(&self.api, delay);
    }

    /// A watcher error: logged when the watch goes down (once), restarted
    /// after [`FATAL_RETRY`] when retrying will not fix it.
    fn error(&mut self, e: &watcher::Error, conn: &Connection, ns: Option<&str>, state: &Shared) {
        let err = ClusterError::from_watcher(e, &conn.url, self.resource.plural(), ns);
        if matches!(err, ClusterError::NotFound { .. }) {
            // The API server does not serve the resource (no CRD, a
            // simulator): nothing to watch, which is current; ask again later.
            if lock(state).not_served(self.resource, Instant::now()) {
                tracing::info!(target: infera_cluster::trace::target::MONITOR, "the API server does not serve {}: none watched; asking again every {}s", self.resource.plural(), FATAL_RETRY.as_secs());
            }
            self.restart(FATAL_RETRY);
            return;
        }
        let reason = err.to_string();
        let went_down = lock(state).watch_error(self.resource, &reason, Instant::now());
        if err.is_fatal() {
            if went_down {
                tracing::warn!(target: infera_cluster::trace::target::MONITOR, "watch {} down: {reason}; infera_watch_up is 0, trying again every {}s", self.resource.plural(), FATAL_RETRY.as_secs());
            }
            self.restart(FATAL_RETRY);
        } else if went_down {
            tracing::warn!(target: infera_cluster::trace::target::MONITOR, "watch {} down: {reason}; re-listing with backoff, infera_watch_up is 0 until it is current", self.resource.plural());
        }
    }
}

fn api<K>(client: &Client, ns: Option<&str>) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match ns {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Feed the state from the five watches, the heartbeat and the sampling
/// tick (never returns on its own).
async fn watch_loop(conn: &Connection, opts: &Options, state: Shared) {
    let ns = opts.namespace.as_deref();
    let client = &conn.client;
    let dynamic = |resource: &kube::api::ApiResource| -> Api<DynamicObject> {
        match ns {
            Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
            None => Api::all_with(client.clone(), resource),
        }
    };
    let idep_api = dynamic(&inferadeployment_resource());
    let mut pods: Watch<Pod> = Watch::new(Resource::Pods, api(client, ns));
    let mut ideps = Watch::new(Resource::InferaDeployments, idep_api);
    let mut deploys: Watch<Deployment> = Watch::new(Resource::Deployments, api(client, ns));
    let mut sets: Watch<StatefulSet> = Watch::new(Resource::StatefulSets, api(client, ns));
    let mut lws = Watch::new(
        Resource::LeaderWorkerSets,
        dynamic(&api_resource(&LEADER_WORKER_SET)),
    );
    let mut beats = sight::spawn_heartbeat(
        client.clone(),
        sight::HEARTBEAT_PERIOD,
        sight::HEARTBEAT_TIMEOUT,
    );
    let mut tick = tokio::time::interval(SAMPLE_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            Some(e) = pods.stream.next() => match e {
                Ok(e) => lock(&state).apply_pod(&e, Instant::now()),
                Err(e) => pods.error(&e, conn, ns, &state),
            },
            Some(e) = ideps.stream.next() => match e {
                Ok(e) => lock(&state).apply_idep(&e, Instant::now()),
                Err(e) => ideps.error(&e, conn, ns, &state),
            },
            Some(e) = deploys.stream.next() => match e {
                Ok(e) => lock(&state).apply_deployment(&e, Instant::now()),
                Err(e) => deploys.error(&e, conn, ns, &state),
            },
            Some(e) = sets.stream.next() => match e {
                Ok(e) => lock(&state).apply_statefulset(&e, Instant::now()),
                Err(e) => sets.error(&e, conn, ns, &state),
            },
            Some(e) = lws.stream.next() => match e {
                Ok(e) => lock(&state).apply_leaderworkerset(&e, Instant::now()),
                Err(e) => lws.error(&e, conn, ns, &state),
            },
            Some(beat) = beats.recv() => {
                let resync = lock(&state).beat(&beat, Instant::now());
                for r in resync {
                    tracing::info!(target: infera_cluster::trace::target::MONITOR, "the API server answers again: watching {} afresh (a re-list)", r.plural());
                    match r {
                        Resource::Pods => pods.restart(Duration::ZERO),
                        Resource::InferaDeployments => ideps.restart(Duration::ZERO),
                        Resource::Deployments => deploys.restart(Duration::ZERO),
                        Resource::StatefulSets => sets.restart(Duration::ZERO),
                        Resource::LeaderWorkerSets => lws.restart(Duration::ZERO),
                    }
                }
            }
            _ = tick.tick() => lock(&state).settle(Instant::now()),
        }
    }
}

#[cfg(test)]
mod listen_tests {
    use super::*;

    /// The error and its chain of sources (as the binary prints them, `{:#}`)
    /// name the cause once.
    #[test]
    fn a_listen_error_says_its_cause_once() {
        let err = MonitorError::Listen {
            addr: SocketAddr::from(([127, 0, 0, 1], 8491)),
            cause: std::io::Error::from(std::io::ErrorKind::AddrInUse),
        };
        let mut text = err.to_string();
        let mut source = std::error::Error::source(&err);
        while let Some(s) = source {
            text.push_str(&format!(": {s}"));
            source = s.source();
        }
        let cause = std::io::Error::from(std::io::ErrorKind::AddrInUse).to_string();
        assert_eq!(text.matches(&cause).count(), 1, "{text}");
    }
}
