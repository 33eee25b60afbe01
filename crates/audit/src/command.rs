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

use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::DynamicObject;

use super::auditor::{Auditor, RoleSpec};
use super::complete::{Owned, Watches, wait_complete};
use super::report::{Outcome, Report};
use super::roles::{
    Target, TargetError, common_selector, deployment_selector, parse_role_flag,
    roles_from_inferadeployment,
};
use super::session::{AuditError, AuditSession};
use infera_cluster::{ClusterError, Connection, inferadeployment_resource};
use infera_model::api::INFERA_DEPLOYMENT;
use infera_model::worker::LABEL_DEPLOYMENT;

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

/// Resolve the roles and the pod watch selector of `target`.
pub(crate) async fn resolve_roles(
    conn: &Connection,
    namespace: &str,
    target: &Target,
    role_flags: &[String],
) -> Result<(Vec<RoleSpec>, Option<String>), AuditCommandError> {
    let mut flagged = role_flags
        .iter()
        .map(|r| parse_role_flag(r))
        .collect::<Result<Vec<_>, _>>()?;
    match target {
        Target::InferaDeployment(name) => {
            let api: Api<DynamicObject> =
                Api::namespaced_with(conn.client.clone(), namespace, &inferadeployment_resource());
            let idep = api.get(name).await.map_err(|e| {
                not_found_named(
                    get_error(conn, namespace, &e, INFERA_DEPLOYMENT.plural),
                    name,
                )
            })?;
            let selector = format!("{LABEL_DEPLOYMENT}={name}");
            if !flagged.is_empty() {
                return Ok((flagged, Some(selector)));
            }
            let value = serde_json::to_value(&idep).map_err(|e| {
                TargetError::Spec(format!("cannot read InferaDeployment {name}: {e}"))
            })?;
            Ok((roles_from_inferadeployment(&value)?, Some(selector)))
        }
        Target::Deployment(name) => {
            let api: Api<Deployment> = Api::namespaced(conn.client.clone(), namespace);
            let deploy = api.get(name).await.map_err(|e| {
                not_found_named(get_error(conn, namespace, &e, "deployments"), name)
            })?;
            if !flagged.is_empty() {
                for r in &mut flagged {
                    r.services = Vec::new();
                }
                let selector = common_selector(&flagged);
                return Ok((flagged, selector));
            }
            let selector = deployment_selector(&deploy)?;
            let watch = selector.to_string();
            let role = RoleSpec {
                role: name.clone(),
                services: vec![name.clone()],
                selector,
            };
            Ok((vec![role], Some(watch)))
        }
    }
}

fn get_error(conn: &Connection, namespace: &str, e: &kube::Error, resource: &str) -> ClusterError {
    ClusterError::from_kube(e, &conn.url, "get", resource, Some(namespace))
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
    let (roles, selector) = resolve_roles(conn, &conn.namespace, &target, &opts.roles).await?;
    let operator = operator_generation(conn, &target).await;
    if let Some(detection) = &operator {
        status(&format!("operator: {}", detection.describe()));
    }
    let label = |mut report: Report| {
        report.operator_generation = operator.as_ref().map(|d| d.label().to_string());
        report
    };
    let mut auditor = Auditor::new(
        roles.clone(),
        opts.min_ready,
        opts.sample_interval,
        time_scale,
    )
    .with_target(target.to_string())
    .narrating();
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
        _ = &mut interrupt => return Ok(label(session.finish(Outcome::Interrupted).await?)),
    }
    let deadline = deadline(opts, time_scale);
    let outcome = if opts.until_complete {
        let watches = Watches::single(&conn.namespace, &target);
        let owned = [Owned {
            namespace: None,
            target: target.clone(),
            label: String::new(),
        }];
        let decided = Mutex::new(vec![None]);
        let waited = tokio::select! {
            r = wait_complete(conn, &watches, &owned, &session, time_scale, status, &decided) => { r?; None }
            _ = deadline => Some(Outcome::Timeout),
            _ = &mut interrupt => Some(Outcome::Interrupted),
        };
        let decided = decided.into_inner().unwrap_or_else(PoisonError::into_inner);
        decided
            .into_iter()
            .next()
            .flatten()
            .or(waited)
            .unwrap_or(Outcome::Interrupted)
    } else {
        tokio::select! {
            _ = deadline => Outcome::Complete,
            _ = &mut interrupt => Outcome::Interrupted,
            () = narrate_live(&session, status) => Outcome::Interrupted,
        }
    };
    Ok(label(session.finish(outcome).await?))
}

/// Say each step as it is recorded (an audit `--for 30m` is otherwise
/// silent until its end); never returns.
async fn narrate_live(session: &AuditSession, status: &dyn Fn(&str)) {
    let mut told = 0;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let steps = session.steps_since(told);
        told += steps.len();
        for step in steps {
            status(&step.line());
        }
    }
}

/// For an InferaDeployment target: the generation its operator-rendered
/// worker Deployments show (unknown, with the reason, when they cannot be
/// listed or do not tell). None for a plain Deployment.
async fn operator_generation(
    conn: &Connection,
    target: &Target,
) -> Option<infera_model::generation::Detection> {
    use infera_model::generation::Detection;
    let Target::InferaDeployment(name) = target else {
        return None;
    };
    let api: Api<Deployment> = Api::namespaced(conn.client.clone(), &conn.namespace);
    let params = kube::api::ListParams::default().labels(&format!("{LABEL_DEPLOYMENT}={name}"));
    Some(match api.list(&params).await {
        Ok(list) => infera_model::generation::detect(
            list.items
                .iter()
                .filter(|d| infera_model::generation::operator_owned(d)),
        ),
        Err(e) => Detection::Unknown(format!(
            "cannot list its Deployments ({})",
            get_error(conn, &conn.namespace, &e, "deployments")
        )),
    })
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
    let mode = mode_text(opts);
    format!(
        "auditing {target} in namespace {namespace}: roles {}; a sample every {}, floor {}; {mode}",
        roles.join(", "),
        humantime::format_duration(opts.sample_interval),
        opts.min_ready,
    )
}

/// Ends when `--for` has passed (on the scaled clock); never without it.
pub(crate) async fn deadline(opts: &Options, time_scale: f64) {
    match opts.duration {
        Some(d) => tokio::time::sleep(Duration::from_secs_f64(d.as_secs_f64() / time_scale)).await,
        None => std::future::pending().await,
    }
}

/// `for 5m`, `until the rollout completes[, at most 1h]`.
pub(crate) fn mode_text(opts: &Options) -> String {
    match (opts.duration, opts.until_complete) {
        (Some(d), true) => format!(
            "until the rollout completes, at most {}",
            humantime::format_duration(d)
        ),
        (Some(d), false) => format!("for {}", humantime::format_duration(d)),
        _ => "until the rollout completes".to_string(),
    }
}
