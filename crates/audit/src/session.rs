//! The watch loop that feeds an [`Auditor`] from a cluster: one
//! `kube::runtime::watcher` on pods (list + watch, re-list on 410 / dropped
//! watch / API restart, backoff on errors) and a sampling tick served from the
//! auditor's cache. O(1) watches per audit, no request per sample — also
//! for several targets: one watch feeds every target's auditor
//! ([`AuditSession::start_group`]).

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::sync::{oneshot, watch};

use super::auditor::{Auditor, RoleCounts};
use super::narrate::Step;
use super::report::{Outcome, Report};
use infera_cluster::ClusterError;
use infera_cluster::sight::{self, Skew};

/// Errors of a running audit.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("the audit task ended unexpectedly: {0}")]
    Task(String),
}

/// A running audit: the auditor behind a mutex, fed by a background task.
///
/// ```no_run
/// # async fn f(client: kube::Client, auditor: infera_audit::Auditor) -> Result<(), infera_audit::AuditError> {
/// use infera_audit::{AuditSession, Outcome};
/// let session = AuditSession::start(client, "https://api", "prod", Some("infera.amd.com/deployment=llm".into()), auditor);
/// let mut session = session;
/// session.wait_synced().await?;          // initial pod list received
/// // ... drive a rollout, calling session.step(..) and session.counts() ...
/// let report = session.finish(Outcome::Complete).await?;
/// # Ok(()) }
/// ```
pub struct AuditSession {
    /// One auditor per target, all fed by the one watch (the single-target
    /// methods act on the first).
    auditors: Arc<Mutex<Vec<Auditor>>>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), ClusterError>>,
    /// The task's result once it has been awaited (a fatal error ends it early).
    ended: Option<Result<(), AuditError>>,
    synced: watch::Receiver<bool>,
    /// The node watch of a narrating audit ([`Auditor::narrating`]).
    nodes: Option<tokio::task::JoinHandle<()>>,
}

fn lock(m: &Mutex<Vec<Auditor>>) -> MutexGuard<'_, Vec<Auditor>> {
    // A panic while holding the lock leaves plain counters behind; keep going.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl AuditSession {
    /// Start watching pods in `namespace` matching `label_selector` (all
    /// pods of the namespace when `None`) and sampling every
    /// `auditor.sample_wall_interval()`. `url` is the API server (for error
    /// messages). Must be called inside a tokio runtime.
    pub fn start(
        client: Client,
        url: &str,
        namespace: &str,
        label_selector: Option<String>,
        auditor: Auditor,
    ) -> AuditSession {
        Self::start_group(client, url, Some(namespace), label_selector, vec![auditor])
    }

    /// Start one pod watch — in `namespace`, or cluster-wide when `None` —
    /// that feeds every auditor in `auditors` (one per target; give each
    /// [`Auditor::with_namespace`] for a cluster-wide watch), sampling them
    /// all on one tick. `label_selector` must match every target's pods.
    pub fn start_group(
        client: Client,
        url: &str,
        namespace: Option<&str>,
        label_selector: Option<String>,
        auditors: Vec<Auditor>,
    ) -> AuditSession {
        let narrating = auditors.iter().any(Auditor::is_narrating);
        let auditors = Arc::new(Mutex::new(auditors));
        let nodes = narrating.then(|| tokio::spawn(node_watch(client.clone(), auditors.clone())));
        let (stop_tx, stop_rx) = oneshot::channel();
        let (synced_tx, synced_rx) = watch::channel(false);
        let api = match namespace {
            Some(ns) => Api::namespaced(client, ns),
            None => Api::all(client),
        };
        let task = tokio::spawn(watch_loop(
            api,
            Scope {
                url: url.to_string(),
                namespace: namespace.map(str::to_string),
                label_selector,
            },
            auditors.clone(),
            stop_rx,
            synced_tx,
        ));
        AuditSession {
            auditors,
            stop: Some(stop_tx),
            task,
            ended: None,
            synced: synced_rx,
            nodes,
        }
    }

    /// Wait until the first complete pod list has been applied (from then on
    /// the numbers are meaningful). Fails if the watch hit a fatal error
    /// (403, 401) first.
    pub async fn wait_synced(&mut self) -> Result<(), AuditError> {
        let mut rx = self.synced.clone();
        loop {
            if *rx.borrow_and_update() {
                return Ok(());
            }
            if rx.changed().await.is_err() {
                // Sender dropped: the task ended before syncing; say why.
                self.join().await;
                return match self.ended.take() {
                    Some(Err(e)) => Err(e),
                    _ => Err(AuditError::Task(
                        "the pod watch stopped before the first list arrived".to_string(),
                    )),
                };
            }
        }
    }

    async fn join(&mut self) {
        if self.ended.is_none() {
            self.ended = Some(match (&mut self.task).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(e.into()),
                Err(e) => Err(AuditError::Task(e.to_string())),
            });
        }
    }

    /// Whether the watch task stopped (a fatal error; `finish` returns it).
    pub fn has_failed(&self) -> bool {
        self.task.is_finished()
    }

    /// Record a rollout step marker.
    pub fn step(&self, step: Step) {
        self.step_of(0, step);
    }

    /// Record a step marker on the `index`-th auditor of the group.
    pub fn step_of(&self, index: usize, step: Step) {
        if let Some(a) = lock(&self.auditors).get_mut(index) {
            a.step(step);
        }
    }

    /// Reported seconds per wall second (the first auditor's; 1 when none).
    pub fn time_scale(&self) -> f64 {
        lock(&self.auditors)
            .first()
            .map_or(1.0, Auditor::time_scale)
    }

    /// How many complete pod lists were applied (1: no re-list yet).
    pub fn lists(&self) -> u64 {
        lock(&self.auditors).first().map_or(0, Auditor::lists)
    }

    /// The first auditor's steps from the `n`-th on (what happened since
    /// the caller last looked).
    pub fn steps_since(&self, n: usize) -> Vec<crate::report::StepRecord> {
        lock(&self.auditors)
            .first()
            .map(|a| a.steps_from(n))
            .unwrap_or_default()
    }

    /// Current Ready/routable counts per role, from the cache.
    pub fn counts(&self) -> Vec<RoleCounts> {
        lock(&self.auditors)
            .first()
            .map(Auditor::counts)
            .unwrap_or_default()
    }

    /// A partial report as of now (e.g. to print on Ctrl-C before cleanup);
    /// the audit keeps running.
    pub fn snapshot(&self, outcome: Outcome) -> Report {
        let now = Instant::now();
        let mut auditors = lock(&self.auditors);
        match auditors.first_mut() {
            Some(a) => a.finish(outcome, now),
            None => Auditor::new(Vec::new(), 1, Duration::from_secs(10), 1.0).finish(outcome, now),
        }
    }

    /// Stop watching and build the final report. A fatal watch error
    /// (permissions, credentials) is returned instead.
    pub async fn finish(self, outcome: Outcome) -> Result<Report, AuditError> {
        let mut reports = self.finish_each(|_| outcome).await?;
        match reports.is_empty() {
            false => Ok(reports.swap_remove(0)),
            true => Err(AuditError::Task("the audit had no auditor".to_string())),
        }
    }

    /// Stop watching and build every auditor's report, each with the
    /// outcome `outcome(index)` gives it, all closed at the same instant.
    pub async fn finish_each(
        mut self,
        outcome: impl Fn(usize) -> Outcome,
    ) -> Result<Vec<Report>, AuditError> {
        let now = Instant::now();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(nodes) = self.nodes.take() {
            nodes.abort();
        }
        self.join().await;
        if let Some(Err(e)) = self.ended.take() {
            return Err(e);
        }
        let mut auditors = lock(&self.auditors);
        Ok(auditors
            .iter_mut()
            .enumerate()
            .map(|(i, a)| a.finish(outcome(i), now))
            .collect())
    }
}

impl Drop for AuditSession {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(nodes) = self.nodes.take() {
            nodes.abort();
        }
    }
}

/// Watch every node for a narrating audit: cordons and NotReady of the
/// nodes its pods are (or were) on. Best effort: nodes are cluster-scoped,
/// and a namespaced Role (what `infera rbac` prints for `audit`) cannot
/// list them; on 401/403 the node steps are left out (logged), the
/// audit's numbers are unaffected.
async fn node_watch(client: Client, auditors: Arc<Mutex<Vec<Auditor>>>) {
    let api: Api<k8s_openapi::api::core::v1::Node> = Api::all(client);
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => {
                let now = Instant::now();
                for a in lock(&auditors).iter_mut() {
                    a.apply_node(&event, now);
                }
            }
            Err(watcher::Error::InitialListFailed(kube::Error::Api(status)))
                if matches!(status.code, 401 | 403) =>
            {
                tracing::info!(
                    "no node steps in the narration: listing nodes was refused ({})",
                    status.code
                );
                return;
            }
            Err(_) => {}
        }
    }
}

/// Where the one pod watch looks.
struct Scope {
    /// The API server (for error messages).
    url: String,
    /// `None`: cluster-wide.
    namespace: Option<String>,
    label_selector: Option<String>,
}

async fn watch_loop(
    api: Api<Pod>,
    scope: Scope,
    auditors: Arc<Mutex<Vec<Auditor>>>,
    mut stop: oneshot::Receiver<()>,
    synced: watch::Sender<bool>,
) -> Result<(), ClusterError> {
    let mut config = watcher::Config::default();
    if let Some(sel) = scope.label_selector.as_deref().filter(|s| !s.is_empty()) {
        config = config.labels(sel);
    }
    let period = lock(&auditors)
        .first()
        .map_or(Duration::from_secs(10), Auditor::sample_wall_interval);
    let client = api.clone().into_client();
    let api = &api;
    let mut beats = sight::spawn_heartbeat(
        client.clone(),
        sight::HEARTBEAT_PERIOD,
        sight::HEARTBEAT_TIMEOUT,
    );
    let mut skew = Skew::default();
    let start = || {
        watcher(api.clone(), config.clone())
            .backoff(infera_cluster::watch_backoff())
            .boxed()
    };
    let mut stream = start();
    let mut ticker: Option<tokio::time::Interval> = None;
    loop {
        let tick = async {
            match ticker.as_mut() {
                Some(t) => {
                    t.tick().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            biased;
            _ = &mut stop => return Ok(()),
            event = stream.next() => match event {
                Some(Ok(event)) => {
                    let relisted = matches!(event, watcher::Event::InitDone);
                    if apply_event(&auditors, &event, period, &mut ticker) {
                        let _ = synced.send(true);
                    }
                    if relisted {
                        resolve_deletions(&client, &auditors).await;
                    }
                }
                Some(Err(e)) => {
                    let err = ClusterError::from_watcher(&e, &scope.url, "pods", scope.namespace.as_deref());
                    if err.is_fatal() {
                        return Err(err);
                    }
                    tracing::info!(target: infera_cluster::trace::target::AUDIT_SESSION, "watch restart: {err}; re-listing with backoff");
                    let now = Instant::now();
                    let reason = err.to_string();
                    lock(&auditors).iter_mut().for_each(|a| a.watch_error(now, &reason));
                }
                None => return Ok(()),
            },
            Some(beat) = beats.recv() => {
                if let Some(answer) = &beat.answered
                    && let Some(date) = answer.date
                {
                    skew.observe(beat.sent_wall, answer.at_wall, date);
                }
                let now = Instant::now();
                let mut resync = false;
                for a in lock(&auditors).iter_mut() {
                    a.set_skew(skew);
                    a.beat(&beat, now);
                    resync |= a.take_resync();
                }
                if resync {
                    tracing::info!(target: infera_cluster::trace::target::AUDIT_SESSION, "the API server answers again: watching afresh (a re-list)");
                    stream = start();
                }
            }
            _ = tick => {
                let now = Instant::now();
                lock(&auditors).iter_mut().for_each(|a| a.sample(now));
            }
        }
    }
}

/// Apply one watcher event to every auditor of the group; on the first
/// complete list, take sample 1 and start the sampling tick. Returns
/// whether the group just synced.
fn apply_event(
    auditors: &Mutex<Vec<Auditor>>,
    event: &watcher::Event<Pod>,
    period: Duration,
    ticker: &mut Option<tokio::time::Interval>,
) -> bool {
    let now = Instant::now();
    let mut group = lock(auditors);
    let was_synced = group.iter().all(Auditor::synced);
    for a in group.iter_mut() {
        a.apply(event, now);
    }
    if was_synced || !group.iter().all(Auditor::synced) {
        return false;
    }
    // Sample 1 is the state at the first list; then every period.
    group.iter_mut().for_each(|a| a.sample(now));
    let mut t = tokio::time::interval_at(tokio::time::Instant::from_std(now) + period, period);
    t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    *ticker = Some(t);
    true
}

/// After a re-list, ask the namespace's Events when the pods that vanished
/// meanwhile were deleted ([`date_deletions`]) and tell the auditors.
async fn resolve_deletions(client: &Client, auditors: &Mutex<Vec<Auditor>>) {
    let wanted: Vec<(Option<String>, String)> = lock(auditors)
        .iter_mut()
        .flat_map(Auditor::unresolved_deletions)
        .collect();
    if wanted.is_empty() {
        return;
    }
    let found = date_deletions(client, &wanted).await;
    let mut group = lock(auditors);
    for (ns, name, at) in found {
        for a in group.iter_mut() {
            a.deleted_at(ns.as_deref(), &name, at);
        }
    }
}

/// The deletion times the Events give for `wanted` pods ((namespace,
/// name)), one Events list per namespace, each retried briefly (a 5xx or
/// a dropped connection must not cost the reconstruction).
pub async fn date_deletions(
    client: &Client,
    wanted: &[(Option<String>, String)],
) -> Vec<(Option<String>, String, jiff::Timestamp)> {
    let mut namespaces: Vec<Option<String>> = wanted.iter().map(|w| w.0.clone()).collect();
    namespaces.sort();
    namespaces.dedup();
    let mut out = Vec::new();
    for ns in namespaces {
        let mut backoff = infera_cluster::watch_backoff();
        for attempt in 0..4 {
            match pod_deletions(client, ns.as_deref()).await {
                Ok(found) => {
                    out.extend(
                        found
                            .into_iter()
                            .filter(|(name, _)| wanted.iter().any(|w| w.0 == ns && &w.1 == name))
                            .map(|(name, at)| (ns.clone(), name, at)),
                    );
                    break;
                }
                Err(e) if attempt == 3 => {
                    tracing::info!(target: infera_cluster::trace::target::AUDIT_SESSION, "cannot read the Events to date vanished pods: {}", infera_cluster::redact::kube_error(&e));
                }
                Err(_) => {
                    tokio::time::sleep(backoff.next().unwrap_or(Duration::from_secs(1))).await
                }
            }
        }
    }
    out
}

/// When the namespace's Events say pods were deleted: the ReplicaSet
/// controller's `SuccessfulDelete` ("Deleted pod: NAME", recorded as it
/// deletes) and the kubelet's `Killing` (as it starts stopping the
/// container), the earliest per pod.
pub async fn pod_deletions(
    client: &Client,
    namespace: Option<&str>,
) -> Result<Vec<(String, jiff::Timestamp)>, kube::Error> {
    use k8s_openapi::api::core::v1::Event as CoreEvent;
    let api: Api<CoreEvent> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let mut found: std::collections::BTreeMap<String, jiff::Timestamp> = Default::default();
    for selector in ["reason=SuccessfulDelete", "reason=Killing"] {
        let list = api.list(&ListParams::default().fields(selector)).await?;
        for e in list.items {
            let pod = match selector {
                "reason=Killing" => e.involved_object.name.clone(),
                _ => e
                    .message
                    .as_deref()
                    .and_then(|m| m.strip_prefix("Deleted pod: "))
                    .map(str::to_string),
            };
            let at = e
                .event_time
                .as_ref()
                .map(|t| t.0)
                .or(e.first_timestamp.as_ref().map(|t| t.0))
                .or(e.metadata.creation_timestamp.as_ref().map(|t| t.0));
            if let (Some(pod), Some(at)) = (pod, at) {
                let slot = found.entry(pod).or_insert(at);
                *slot = (*slot).min(at);
            }
        }
    }
    Ok(found.into_iter().collect())
}

/// Run an audit until `stop` resolves, then return the report with the
/// outcome `stop` yielded. The one-call form of [`AuditSession`].
pub async fn run_auditor(
    client: Client,
    url: &str,
    namespace: &str,
    label_selector: Option<String>,
    auditor: Auditor,
    stop: impl Future<Output = Outcome>,
) -> Result<Report, AuditError> {
    let session = AuditSession::start(client, url, namespace, label_selector, auditor);
    let outcome = stop.await;
    session.finish(outcome).await
}
