//! `infera audit TARGET --for D | --until-complete`.
//!
//! Modes (reported time; `time_scale` converts to wall time):
//! * `--for D`: audit for D; the outcome is `complete` (the window was
//!   audited to its end) and the exit code says whether every role held
//!   the floor (0) or not (1).
//! * `--until-complete`: audit until every Deployment of the target is
//!   complete the way `kubectl rollout status` decides it, and has stayed
//!   complete for [`SETTLE`] (longer than the operator's 15 s reconcile, so
//!   an audit started right after `kubectl apply` does not end before the
//!   operator has begun the rollout). For an InferaDeployment whose status
//!   reports `observedGeneration`, that must have caught up with its
//!   `metadata.generation` too. A Deployment past its progress deadline ends
//!   the audit as `stalled` (exit 3).
//! * both: as `--until-complete`, but give up after D with outcome
//!   `timeout` (exit 3).
//!
//! Ctrl-C prints the partial report (and writes the files) and exits 130.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::DynamicObject;
use kube::runtime::{WatchStreamExt, watcher};

use super::report::{Outcome, Report};
use super::roles::{
    Target, TargetError, common_selector, deployment_selector, parse_role_flag,
    roles_from_inferadeployment,
};
use super::session::{AuditError, AuditSession};
use super::tracker::{Auditor, DEPLOYMENT_LABEL, RoleSpec, SERVICE_LABEL, Step};
use infera_cluster::reflect::{Reflector, name_key};
use infera_cluster::{ClusterError, Connection, DeploymentProgress, deployment_progress};

/// How long (reported time) every Deployment must stay complete before
/// `--until-complete` ends.
pub const SETTLE: Duration = Duration::from_secs(20);

/// What to audit and how (library options; the command line converts its
/// flags in `crate::console`).
#[derive(Debug, Clone)]
pub struct Options {
    /// `idep/NAME` | `deploy/NAME`.
    pub target: String,
    /// `--for` (reported time).
    pub duration: Option<Duration>,
    pub until_complete: bool,
    /// `--role NAME=SELECTOR`.
    pub roles: Vec<String>,
    /// `--samples FILE.csv`.
    pub samples: Option<std::path::PathBuf>,
    /// Reported time.
    pub sample_interval: Duration,
    pub min_ready: u32,
}

impl Options {
    /// Audit `target` for `duration` (reported time), a sample every 10 s,
    /// floor 1.
    pub fn for_duration(target: impl Into<String>, duration: Duration) -> Options {
        Options {
            target: target.into(),
            duration: Some(duration),
            until_complete: false,
            roles: Vec::new(),
            samples: None,
            sample_interval: Duration::from_secs(10),
            min_ready: 1,
        }
    }
}

/// Errors of `infera audit` (all exit 2).
#[derive(Debug, thiserror::Error)]
pub enum AuditCommandError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error(transparent)]
    Audit(#[from] AuditError),
    #[error("give --for DURATION, --until-complete, or both")]
    NoMode,
    #[error("cannot create --samples file {path}: {source}")]
    Samples {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

pub use infera_cluster::inferadeployment_resource;

/// Resolve the roles and the pod watch selector of `target`.
async fn resolve_roles(
    conn: &Connection,
    target: &Target,
    role_flags: &[String],
) -> Result<(Vec<RoleSpec>, Option<String>), AuditCommandError> {
    let mut flagged = role_flags
        .iter()
        .map(|r| parse_role_flag(r))
        .collect::<Result<Vec<_>, _>>()?;
    match target {
        Target::InferaDeployment(name) => {
            let api: Api<DynamicObject> = Api::namespaced_with(
                conn.client.clone(),
                &conn.namespace,
                &inferadeployment_resource(),
            );
            let idep = api
                .get(name)
                .await
                .map_err(|e| not_found_named(conn.error(&e, "get", "inferadeployments"), name))?;
            let selector = format!("{DEPLOYMENT_LABEL}={name}");
            if !flagged.is_empty() {
                return Ok((flagged, Some(selector)));
            }
            let value = serde_json::to_value(&idep).map_err(|e| {
                TargetError::Spec(format!("cannot read InferaDeployment {name}: {e}"))
            })?;
            Ok((roles_from_inferadeployment(&value)?, Some(selector)))
        }
        Target::Deployment(name) => {
            let api: Api<Deployment> = Api::namespaced(conn.client.clone(), &conn.namespace);
            let deploy = api
                .get(name)
                .await
                .map_err(|e| not_found_named(conn.error(&e, "get", "deployments"), name))?;
            if !flagged.is_empty() {
                for r in &mut flagged {
                    r.services = Vec::new();
                }
                let selector = common_selector(&flagged);
                return Ok((flagged, selector));
            }
            let (selector, labels) = deployment_selector(&deploy);
            let role = RoleSpec {
                role: name.clone(),
                services: vec![name.clone()],
                selector: labels,
            };
            Ok((vec![role], (!selector.is_empty()).then_some(selector)))
        }
    }
}

fn not_found_named(err: ClusterError, name: &str) -> ClusterError {
    match err {
        ClusterError::NotFound {
            resource,
            namespace,
            ..
        } => ClusterError::NotFound {
            resource,
            name: name.to_string(),
            namespace,
        },
        other => other,
    }
}

/// Per-Deployment rollout state, watched until complete.
struct Completion {
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
    fn apply(&mut self, event: &watcher::Event<Deployment>, only: Option<&str>) {
        let keep = |d: &Deployment| only.is_none_or(|n| d.metadata.name.as_deref() == Some(n));
        self.deployments
            .apply(event, name_key, |d| keep(d).then(|| d.clone()));
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
                .and_then(|l| l.get(SERVICE_LABEL))
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
            status(&message);
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

/// The InferaDeployment itself (its generation), or nothing for a plain
/// Deployment.
fn idep_watch(
    conn: &Connection,
    target: &Target,
) -> futures::stream::BoxStream<'static, Result<watcher::Event<DynamicObject>, watcher::Error>> {
    match target {
        Target::InferaDeployment(name) => {
            let api: Api<DynamicObject> = Api::namespaced_with(
                conn.client.clone(),
                &conn.namespace,
                &inferadeployment_resource(),
            );
            watcher(
                api,
                watcher::Config::default().fields(&format!("metadata.name={name}")),
            )
            .backoff(infera_cluster::watch_backoff())
            .boxed()
        }
        Target::Deployment(_) => futures::stream::pending().boxed(),
    }
}

/// Watch the target's Deployments (and an InferaDeployment itself) until
/// the rollout is complete; record begin/end markers as steps.
async fn wait_complete(
    conn: &Connection,
    target: &Target,
    session: &AuditSession,
    time_scale: f64,
    status: &dyn Fn(&str),
) -> Result<Outcome, ClusterError> {
    let deployments: Api<Deployment> = Api::namespaced(conn.client.clone(), &conn.namespace);
    let (config, only) = match target {
        Target::InferaDeployment(name) => (
            watcher::Config::default().labels(&format!("{DEPLOYMENT_LABEL}={name}")),
            None,
        ),
        Target::Deployment(name) => (
            watcher::Config::default().fields(&format!("metadata.name={name}")),
            Some(name.as_str()),
        ),
    };
    let mut deploy_stream = watcher(deployments, config)
        .backoff(infera_cluster::watch_backoff())
        .boxed();
    let mut idep_stream = idep_watch(conn, target);
    let settle_wall = Duration::from_secs_f64(SETTLE.as_secs_f64() / time_scale);
    let mut state = Completion {
        deployments: Reflector::new(),
        idep_generation_ok: None,
        last_message: String::new(),
        complete_since: None,
        rolling: BTreeMap::new(),
    };
    let idep_name = match target {
        Target::InferaDeployment(n) => Some(n.clone()),
        Target::Deployment(_) => None,
    };
    let recheck = tokio::time::sleep(settle_wall);
    tokio::pin!(recheck);
    loop {
        tokio::select! {
            ev = deploy_stream.next() => match ev {
                Some(Ok(ev)) => state.apply(&ev, only),
                Some(Err(e)) => {
                    let err = ClusterError::from_watcher(&e, &conn.url, "deployments.apps", Some(&conn.namespace));
                    if err.is_fatal() { return Err(err); }
                    tracing::info!(target: "infera::audit::command", "watch restart: {err}; re-listing with backoff");
                }
                None => return Ok(Outcome::Interrupted),
            },
            ev = idep_stream.next() => match ev {
                Some(Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)))
                    if o.metadata.name == idep_name => state.idep_generation_ok = idep_generation_ok(&o),
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    let err = ClusterError::from_watcher(&e, &conn.url, "inferadeployments.infera.amd.com", Some(&conn.namespace));
                    if err.is_fatal() { return Err(err); }
                    tracing::info!(target: "infera::audit::command", "watch restart: {err}; re-listing with backoff");
                }
                None => {}
            },
            _ = &mut recheck => {}
        }
        let now = Instant::now();
        let mut steps = Vec::new();
        let verdict = state.verdict(now, settle_wall, &mut steps, status);
        for (service, kind) in steps {
            session.step(Step {
                service,
                kind,
                pod: None,
                node: None,
                at: now,
            });
        }
        match verdict {
            Verdict::Complete => return Ok(Outcome::Complete),
            Verdict::Stalled(m) => {
                status(&m);
                return Ok(Outcome::Stalled);
            }
            Verdict::Waiting => {
                // Wake up when the settle period would end, even without events.
                let wake = state
                    .complete_since
                    .map(|s| s + settle_wall)
                    .unwrap_or(now + settle_wall);
                recheck.as_mut().reset(tokio::time::Instant::from_std(
                    wake.max(now + Duration::from_millis(5)),
                ));
            }
        }
    }
}

/// Run the audit of `opts.target` over `conn` and return the report,
/// saying nothing (see [`audit_target_with`]).
pub async fn audit_target(
    conn: &Connection,
    opts: &Options,
    time_scale: f64,
    interrupt: impl Future<Output = ()>,
) -> Result<Report, AuditCommandError> {
    audit_target_with(conn, opts, time_scale, &|_| {}, interrupt).await
}

/// Run the audit of `opts.target` over `conn` and return the report.
/// `time_scale` is reported seconds per wall second (1.0 on a real cluster;
/// the simulator's speed in tests); `--for` and `--sample-interval` are in
/// reported time. `status` gets one line at the start and one each time the
/// rollout's state changes (`--until-complete`). `interrupt` resolving
/// (Ctrl-C) ends the audit with outcome `interrupted`. Files (`--report`,
/// `--timeline`) are not written here; see [`Outputs`](super::Outputs).
pub async fn audit_target_with(
    conn: &Connection,
    opts: &Options,
    time_scale: f64,
    status: &dyn Fn(&str),
    interrupt: impl Future<Output = ()>,
) -> Result<Report, AuditCommandError> {
    if opts.duration.is_none() && !opts.until_complete {
        return Err(AuditCommandError::NoMode);
    }
    let target = Target::parse(&opts.target)?;
    let (roles, selector) = resolve_roles(conn, &target, &opts.roles).await?;
    let mut auditor = Auditor::new(
        roles.clone(),
        opts.min_ready,
        opts.sample_interval,
        time_scale,
    )
    .with_target(target.to_string());
    if let Some(path) = &opts.samples {
        let file = std::fs::File::create(path).map_err(|source| AuditCommandError::Samples {
            path: path.display().to_string(),
            source,
        })?;
        auditor = auditor.with_samples_csv(Box::new(std::io::BufWriter::new(file)));
    }
    let time_scale = auditor.time_scale();
    status(&describe(&target, &conn.namespace, &roles, opts));
    let mut session = AuditSession::start(
        conn.client.clone(),
        &conn.url,
        &conn.namespace,
        selector,
        auditor,
    );
    tokio::pin!(interrupt);
    tokio::select! {
        r = session.wait_synced() => r?,
        _ = &mut interrupt => return Ok(session.finish(Outcome::Interrupted).await?),
    }
    let window = opts
        .duration
        .map(|d| Duration::from_secs_f64(d.as_secs_f64() / time_scale));
    let deadline = async {
        match window {
            Some(w) => tokio::time::sleep(w).await,
            None => std::future::pending().await,
        }
    };
    let outcome = if opts.until_complete {
        tokio::select! {
            r = wait_complete(conn, &target, &session, time_scale, status) => r?,
            _ = deadline => Outcome::Timeout,
            _ = &mut interrupt => Outcome::Interrupted,
        }
    } else {
        tokio::select! {
            _ = deadline => Outcome::Complete,
            _ = &mut interrupt => Outcome::Interrupted,
        }
    };
    Ok(session.finish(outcome).await?)
}

/// `auditing TARGET in namespace NS: roles …; a sample every …; MODE`.
fn describe(target: &Target, namespace: &str, roles: &[RoleSpec], opts: &Options) -> String {
    let roles: Vec<String> = roles
        .iter()
        .map(|r| {
            if r.services.is_empty() {
                r.role.clone()
            } else {
                format!("{} ({})", r.role, r.services.join(", "))
            }
        })
        .collect();
    let mode = match (opts.duration, opts.until_complete) {
        (Some(d), true) => format!(
            "until the rollout completes, at most {}",
            humantime::format_duration(d)
        ),
        (Some(d), false) => format!("for {}", humantime::format_duration(d)),
        _ => "until the rollout completes".to_string(),
    };
    format!(
        "auditing {target} in namespace {namespace}: roles {}; a sample every {}, floor {}; {mode}",
        roles.join(", "),
        humantime::format_duration(opts.sample_interval),
        opts.min_ready,
    )
}
