//! `--until-complete`: watch the targets' Deployments (and InferaDeployments)
//! until each rollout is complete the way `kubectl rollout status` decides
//! it, and has stayed complete for [`SETTLE`](super::SETTLE).
//!
//! One Deployment watch and at most one InferaDeployment watch serve every
//! target of an audit, however many: each target keeps the view of its own
//! Deployments ([`Completion`]), fed from the shared streams.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::DynamicObject;
use kube::runtime::{WatchStreamExt, watcher};

use super::narrate::Step;
use super::report::Outcome;
use super::roles::Target;
use super::session::AuditSession;
use infera_cluster::reflect::{Reflector, name_key};
use infera_cluster::{
    ClusterError, Connection, DeploymentProgress, deployment_progress, inferadeployment_resource,
};
use infera_model::api::INFERA_DEPLOYMENT;
use infera_model::worker::{LABEL_DEPLOYMENT, LABEL_SERVICE};

/// Which Deployments (and InferaDeployment) make up one audited target.
#[derive(Debug, Clone)]
pub(crate) struct Owned {
    /// `None`: the watch is already confined to the target's namespace.
    pub namespace: Option<String>,
    pub target: Target,
    /// Prefix of this target's status lines (`idep/a: `), empty for one target.
    pub label: String,
}

impl Owned {
    fn in_namespace(&self, ns: Option<&str>) -> bool {
        self.namespace
            .as_deref()
            .is_none_or(|want| ns == Some(want))
    }

    /// Whether `d` is one of this target's Deployments.
    fn owns(&self, d: &Deployment) -> bool {
        if !self.in_namespace(d.metadata.namespace.as_deref()) {
            return false;
        }
        match &self.target {
            Target::InferaDeployment(name) => d
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(LABEL_DEPLOYMENT))
                .is_some_and(|v| v == name),
            Target::Deployment(name) => d.metadata.name.as_deref() == Some(name),
        }
    }

    /// Whether `o` is this target's InferaDeployment.
    fn is_idep(&self, o: &DynamicObject) -> bool {
        matches!(&self.target, Target::InferaDeployment(n) if o.metadata.name.as_deref() == Some(n))
            && self.in_namespace(o.metadata.namespace.as_deref())
    }
}

/// Per-target rollout state, watched until complete.
struct Completion {
    owned: Owned,
    deployments: Reflector<Deployment>,
    /// `None` = no generation check (plain Deployment, or no status on the CR).
    idep_generation_ok: Option<bool>,
    last_message: String,
    complete_since: Option<Instant>,
    /// Which Deployments have been seen not complete (rolling).
    rolling: BTreeMap<String, bool>,
}

enum Verdict {
    Waiting,
    Complete,
    Stalled(String),
}

impl Completion {
    fn new(owned: Owned) -> Self {
        Completion {
            owned,
            deployments: Reflector::new(),
            idep_generation_ok: None,
            last_message: String::new(),
            complete_since: None,
            rolling: BTreeMap::new(),
        }
    }

    fn apply(&mut self, event: &watcher::Event<Deployment>) {
        let owned = &self.owned;
        self.deployments
            .apply(event, name_key, |d| owned.owns(d).then(|| d.clone()));
    }

    /// The verdict at `now`, and step markers for Deployments that began or
    /// finished rolling.
    fn verdict(
        &mut self,
        now: Instant,
        settle_wall: Duration,
        steps: &mut Vec<(String, String)>,
        status: &dyn Fn(&str),
    ) -> Verdict {
        if !self.deployments.synced() {
            return Verdict::Waiting;
        }
        let mut waiting = Vec::new();
        for (name, d) in self.deployments.iter() {
            let service = d
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(LABEL_SERVICE))
                .cloned()
                .unwrap_or_else(|| name.clone());
            match deployment_progress(d) {
                DeploymentProgress::DeadlineExceeded(m) => return Verdict::Stalled(m),
                DeploymentProgress::Waiting(m) => {
                    if !self.rolling.get(name).copied().unwrap_or(false) {
                        self.rolling.insert(name.clone(), true);
                        steps.push((service, "rollout-progressing".to_string()));
                    }
                    waiting.push(m);
                }
                DeploymentProgress::Complete => {
                    if self.rolling.insert(name.clone(), false) == Some(true) {
                        steps.push((service, "rollout-complete".to_string()));
                    }
                }
            }
        }
        if self.idep_generation_ok == Some(false) {
            waiting.push(
                "Waiting for the operator to observe the InferaDeployment's new generation..."
                    .to_string(),
            );
        }
        let message = if waiting.is_empty() {
            format!("{} deployment(s) complete", self.deployments.len())
        } else {
            waiting.join(" ")
        };
        if message != self.last_message {
            status(&format!("{}{message}", self.owned.label));
            self.last_message = message;
        }
        if !waiting.is_empty() {
            self.complete_since = None;
            return Verdict::Waiting;
        }
        let since = *self.complete_since.get_or_insert(now);
        if now.saturating_duration_since(since) >= settle_wall {
            Verdict::Complete
        } else {
            Verdict::Waiting
        }
    }
}

fn idep_generation_ok(obj: &DynamicObject) -> Option<bool> {
    let generation = obj.metadata.generation?;
    let observed = obj
        .data
        .pointer("/status/observedGeneration")
        .and_then(serde_json::Value::as_i64)?;
    Some(observed >= generation)
}

/// The watches behind [`wait_complete`]: where, and how narrowly.
#[derive(Debug, Clone)]
pub(crate) struct Watches {
    /// `None`: cluster-wide.
    pub namespace: Option<String>,
    /// Server-side selection of the Deployments.
    pub deployments: watcher::Config,
    /// Server-side selection of the InferaDeployments (`None`: no target is one).
    pub ideps: Option<watcher::Config>,
}

type Stream<K> = futures::stream::BoxStream<'static, Result<watcher::Event<K>, watcher::Error>>;

impl Watches {
    /// The narrowest watches for one target in `namespace`.
    pub fn single(namespace: &str, target: &Target) -> Watches {
        let (deployments, ideps) = match target {
            Target::InferaDeployment(name) => (
                watcher::Config::default().labels(&format!("{LABEL_DEPLOYMENT}={name}")),
                Some(watcher::Config::default().fields(&format!("metadata.name={name}"))),
            ),
            Target::Deployment(name) => (
                watcher::Config::default().fields(&format!("metadata.name={name}")),
                None,
            ),
        };
        Watches {
            namespace: Some(namespace.to_string()),
            deployments,
            ideps,
        }
    }

    fn streams(&self, conn: &Connection) -> (Stream<Deployment>, Stream<DynamicObject>) {
        let client = conn.client.clone();
        let deploy_api: Api<Deployment> = match &self.namespace {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        };
        let resource = inferadeployment_resource();
        let idep_api: Api<DynamicObject> = match &self.namespace {
            Some(ns) => Api::namespaced_with(client, ns, &resource),
            None => Api::all_with(client, &resource),
        };
        let deployments = watcher(deploy_api, self.deployments.clone())
            .backoff(infera_cluster::watch_backoff())
            .boxed();
        let ideps = match &self.ideps {
            Some(config) => watcher(idep_api, config.clone())
                .backoff(infera_cluster::watch_backoff())
                .boxed(),
            None => futures::stream::pending().boxed(),
        };
        (deployments, ideps)
    }
}

/// A watch error: fatal ones end the wait, others are retried by the
/// watcher's backoff.
fn watch_error(
    e: &watcher::Error,
    conn: &Connection,
    resource: &str,
    namespace: Option<&str>,
) -> Result<(), ClusterError> {
    let err = ClusterError::from_watcher(e, &conn.url, resource, namespace);
    if err.is_fatal() {
        return Err(err);
    }
    tracing::info!(target: infera_cluster::trace::target::AUDIT_COMMAND, "watch restart: {err}; re-listing with backoff");
    Ok(())
}

/// Watch until every target's rollout is complete (or stalled): the outcome
/// of target `i` lands in `outcomes[i]` as soon as it is known (so a caller
/// that stops waiting — timeout, Ctrl-C — keeps the ones decided), and
/// begin/end markers go to auditor `i` of `session`. Returns when every
/// target is decided, or with `Interrupted` for the rest when a watch ends.
pub(crate) async fn wait_complete(
    conn: &Connection,
    watches: &Watches,
    targets: &[Owned],
    session: &AuditSession,
    time_scale: f64,
    status: &dyn Fn(&str),
    outcomes: &Mutex<Vec<Option<Outcome>>>,
) -> Result<(), ClusterError> {
    let (mut deploy_stream, mut idep_stream) = watches.streams(conn);
    let ns = watches.namespace.as_deref();
    let settle_wall = Duration::from_secs_f64(super::SETTLE.as_secs_f64() / time_scale);
    let mut states: Vec<Completion> = targets.iter().cloned().map(Completion::new).collect();
    let recheck = tokio::time::sleep(settle_wall);
    tokio::pin!(recheck);
    loop {
        tokio::select! {
            ev = deploy_stream.next() => match ev {
                Some(Ok(ev)) => states.iter_mut().for_each(|s| s.apply(&ev)),
                Some(Err(e)) => watch_error(&e, conn, "deployments.apps", ns)?,
                None => return Ok(()),
            },
            ev = idep_stream.next() => match ev {
                Some(Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o))) => {
                    for s in states.iter_mut().filter(|s| s.owned.is_idep(&o)) {
                        s.idep_generation_ok = idep_generation_ok(&o);
                    }
                }
                Some(Ok(_)) | None => {}
                Some(Err(e)) => watch_error(&e, conn, INFERA_DEPLOYMENT.qualified_plural, ns)?,
            },
            _ = &mut recheck => {}
        }
        let now = Instant::now();
        let mut wake = now + settle_wall;
        let mut outcomes = outcomes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (i, state) in states.iter_mut().enumerate() {
            if outcomes.get(i).is_none_or(Option::is_some) {
                continue;
            }
            match judge(state, i, session, now, settle_wall, status) {
                Some(outcome) => outcomes[i] = Some(outcome),
                None => {
                    if let Some(since) = state.complete_since {
                        wake = wake.min(since + settle_wall);
                    }
                }
            }
        }
        if outcomes.iter().all(Option::is_some) {
            return Ok(());
        }
        // Wake up when a settle period would end, even without events.
        recheck.as_mut().reset(tokio::time::Instant::from_std(
            wake.max(now + Duration::from_millis(5)),
        ));
    }
}

/// One target's verdict at `now`, with its step markers recorded; `Some`
/// once it is decided.
fn judge(
    state: &mut Completion,
    index: usize,
    session: &AuditSession,
    now: Instant,
    settle_wall: Duration,
    status: &dyn Fn(&str),
) -> Option<Outcome> {
    let mut steps = Vec::new();
    let verdict = state.verdict(now, settle_wall, &mut steps, status);
    for (service, kind) in steps {
        session.step_of(
            index,
            Step {
                service,
                kind,
                pod: None,
                node: None,
                at: now,
            },
        );
    }
    match verdict {
        Verdict::Complete => Some(Outcome::Complete),
        Verdict::Stalled(m) => {
            status(&format!("{}{m}", state.owned.label));
            Some(Outcome::Stalled)
        }
        Verdict::Waiting => None,
    }
}
