//! `infera audit idep/a idep/b deploy/c` and `infera audit -l SEL [-A]`:
//! several targets, one run.
//!
//! The cost stays that of one audit: one pod watch (in the namespace, or
//! cluster-wide with `-A`) feeds one [`Auditor`] per target, all sampled on
//! one tick from their caches; `--until-complete` adds one Deployment watch
//! and one InferaDeployment watch for all targets. Each target gets its own
//! [`Report`] (its verdict, its exit code); the run's exit code is the worst.

mod report;
pub use report::ManyReport;

use std::future::Future;
use std::sync::{Mutex, PoisonError};

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::{DynamicObject, ListParams};
use kube::runtime::watcher;

use super::auditor::{Auditor, RoleSpec};
use super::command::{AuditCommandError, Options, resolve_roles};
use super::complete::{Owned, Watches, wait_complete};
use super::report::Outcome;
use super::roles::{Target, TargetError};
use super::session::AuditSession;
use infera_cluster::{ClusterError, Connection, inferadeployment_resource};
use infera_model::api::INFERA_DEPLOYMENT;
use infera_model::selector::{Operator, Requirement, Selector};
use infera_model::worker::LABEL_DEPLOYMENT;

/// What `infera audit` was asked to audit: TARGETs, or every
/// InferaDeployment and Deployment matching a label selector.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// `idep/NAME`, `deploy/NAME`, … (in the connection's namespace).
    pub targets: Vec<String>,
    /// `-l SELECTOR`.
    pub selector: Option<String>,
    /// `-A`: select in every namespace.
    pub all_namespaces: bool,
}

/// One selected target and its namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selected {
    pub namespace: String,
    pub target: Target,
}

impl Selection {
    /// Whether this is a several-target audit (its report has a `targets`
    /// array): more than one TARGET, or a selection by label / across
    /// namespaces (whose count is not known in advance).
    pub fn is_many(&self) -> bool {
        self.targets.len() > 1 || self.selector.is_some() || self.all_namespaces
    }

    /// Check the arguments without the cluster: every TARGET and the `-l`
    /// selector parse, and TARGETs are not mixed with `-l`/`-A`. Returns the targets, duplicates
    /// dropped.
    pub fn parse(&self) -> Result<Vec<Target>, TargetError> {
        if !self.targets.is_empty() && (self.selector.is_some() || self.all_namespaces) {
            return Err(TargetError::Spec(
                "give TARGETs or -l SELECTOR / -A, not both (as with kubectl: a name \
                 selects one object, a selector many)"
                    .into(),
            ));
        }
        if self.targets.is_empty() && self.selector.is_none() && !self.all_namespaces {
            return Err(TargetError::Spec(
                "give a TARGET (idep/NAME, deploy/NAME), or -l SELECTOR".into(),
            ));
        }
        if let Some(sel) = &self.selector {
            Selector::parse(sel)
                .map_err(|e| TargetError::Spec(format!("cannot read -l `{sel}`: {e}")))?;
        }
        let mut out: Vec<Target> = Vec::new();
        for t in &self.targets {
            let t = Target::parse(t)?;
            if !out.contains(&t) {
                out.push(t);
            }
        }
        Ok(out)
    }

    /// The targets in the cluster: the named ones in `conn.namespace`, or
    /// every InferaDeployment and every Deployment that no InferaDeployment
    /// owns (its own are audited through it) matching the selector, sorted
    /// by namespace, kind and name. Selecting nothing is an error.
    pub async fn resolve(&self, conn: &Connection) -> Result<Vec<Selected>, AuditCommandError> {
        let named = self.parse()?;
        if !named.is_empty() {
            return Ok(named
                .into_iter()
                .map(|target| Selected {
                    namespace: conn.namespace.clone(),
                    target,
                })
                .collect());
        }
        let namespace = (!self.all_namespaces).then_some(conn.namespace.as_str());
        let mut params = ListParams::default();
        if let Some(sel) = &self.selector {
            params = params.labels(sel);
        }
        let mut found = list_ideps(conn, namespace, &params).await?;
        found.extend(list_deployments(conn, namespace, &params).await?);
        found.sort_by(|a, b| {
            (&a.namespace, kind_rank(&a.target), a.target.name()).cmp(&(
                &b.namespace,
                kind_rank(&b.target),
                b.target.name(),
            ))
        });
        if found.is_empty() {
            let what = match &self.selector {
                Some(sel) => format!("matches -l {sel}"),
                None => "exists".to_string(),
            };
            let place = match namespace {
                Some(ns) => format!("in namespace {ns:?}"),
                None => "in any namespace".to_string(),
            };
            return Err(TargetError::Spec(format!(
                "no InferaDeployment or Deployment {what} {place}; check the labels with \
                 `kubectl get idep,deploy --show-labels`"
            ))
            .into());
        }
        Ok(found)
    }
}

fn kind_rank(t: &Target) -> u8 {
    match t {
        Target::InferaDeployment(_) => 0,
        Target::Deployment(_) => 1,
    }
}

async fn list_ideps(
    conn: &Connection,
    namespace: Option<&str>,
    params: &ListParams,
) -> Result<Vec<Selected>, ClusterError> {
    let resource = inferadeployment_resource();
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(conn.client.clone(), ns, &resource),
        None => Api::all_with(conn.client.clone(), &resource),
    };
    match api.list(params).await {
        Ok(list) => Ok(list
            .items
            .into_iter()
            .filter_map(|o| selected(&o.metadata, Target::InferaDeployment))
            .collect()),
        // No InferaDeployment CRD on this cluster: plain Deployments only.
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(Vec::new()),
        Err(e) => Err(ClusterError::from_kube(
            &e,
            &conn.url,
            "list",
            INFERA_DEPLOYMENT.plural,
            namespace,
        )),
    }
}

async fn list_deployments(
    conn: &Connection,
    namespace: Option<&str>,
    params: &ListParams,
) -> Result<Vec<Selected>, ClusterError> {
    let api: Api<Deployment> = match namespace {
        Some(ns) => Api::namespaced(conn.client.clone(), ns),
        None => Api::all(conn.client.clone()),
    };
    let list = api
        .list(params)
        .await
        .map_err(|e| ClusterError::from_kube(&e, &conn.url, "list", "deployments", namespace))?;
    Ok(list
        .items
        .into_iter()
        .filter(|d| !owned_by_inferadeployment(&d.metadata))
        .filter_map(|d| selected(&d.metadata, Target::Deployment))
        .collect())
}

fn selected(meta: &kube::api::ObjectMeta, kind: fn(String) -> Target) -> Option<Selected> {
    Some(Selected {
        namespace: meta.namespace.clone()?,
        target: kind(meta.name.clone()?),
    })
}

/// A Deployment the infera operator rendered (audited through its
/// InferaDeployment, never on its own).
fn owned_by_inferadeployment(meta: &kube::api::ObjectMeta) -> bool {
    meta.labels
        .as_ref()
        .is_some_and(|l| l.contains_key(LABEL_DEPLOYMENT))
        || meta
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.kind == INFERA_DEPLOYMENT.kind)
}

/// The one pod watch's label selector: `infera.amd.com/deployment in (…)`
/// when every target is an InferaDeployment, the one target's own selector,
/// else none (every pod in scope; each auditor keeps its own).
fn pod_selector(selected: &[Selected], selectors: &[Option<String>]) -> Option<String> {
    if let [only] = selectors {
        return only.clone();
    }
    let names = || {
        selected.iter().filter_map(|s| match &s.target {
            Target::InferaDeployment(n) => Some(n.as_str()),
            Target::Deployment(_) => None,
        })
    };
    let all_ideps = !selected.is_empty() && names().count() == selected.len();
    all_ideps.then(|| {
        let requirement = Requirement {
            key: LABEL_DEPLOYMENT.to_string(),
            operator: Operator::In,
            values: names().map(str::to_string).collect(),
        };
        Selector::from_iter([requirement]).to_string()
    })
}

/// The Deployment and InferaDeployment watches of `--until-complete` for
/// all targets.
fn completion_watches(selected: &[Selected], namespace: Option<&str>) -> Watches {
    let any_idep = selected
        .iter()
        .any(|s| matches!(s.target, Target::InferaDeployment(_)));
    // Every target an InferaDeployment: its Deployments carry its label.
    let deployments = match pod_selector(selected, &[]) {
        Some(sel) => watcher::Config::default().labels(&sel),
        None => watcher::Config::default(),
    };
    Watches {
        namespace: namespace.map(str::to_string),
        deployments,
        ideps: any_idep.then(watcher::Config::default),
    }
}

/// The label of target `s` in status lines, sentences and the chart:
/// `idep/a`, or `idep/a (ns)` when the audit spans namespaces.
pub fn target_label(s: &Selected, all_namespaces: bool) -> String {
    if all_namespaces {
        format!("{} ({})", s.target, s.namespace)
    } else {
        s.target.to_string()
    }
}

/// Audit every target of `selected` in one run (see the module doc). `opts`
/// gives the mode, floor and sampling (`opts.target`, `--role` and
/// `--samples` are single-target and ignored here); `all_namespaces`
/// makes the pod watch cluster-wide. `status` and `interrupt` as in
/// [`audit_target_with`](super::audit_target_with).
pub async fn audit_many_with(
    conn: &Connection,
    opts: &Options,
    selected: &[Selected],
    all_namespaces: bool,
    time_scale: f64,
    status: &dyn Fn(&str),
    interrupt: impl Future<Output = ()>,
) -> Result<ManyReport, AuditCommandError> {
    if opts.duration.is_none() && !opts.until_complete {
        return Err(AuditCommandError::NoMode);
    }
    let mut session =
        start_session(conn, opts, selected, all_namespaces, time_scale, status).await?;
    let time_scale = session.time_scale();
    let namespace = (!all_namespaces).then_some(conn.namespace.as_str());
    let decided = Mutex::new(vec![None; selected.len()]);
    tokio::pin!(interrupt);
    let fallback = tokio::select! {
        r = session.wait_synced() => { r?; None }
        _ = &mut interrupt => Some(Outcome::Interrupted),
    };
    let fallback = match fallback {
        Some(o) => o,
        None => {
            let deadline = super::command::deadline(opts, time_scale);
            if opts.until_complete {
                let owned: Vec<Owned> = selected
                    .iter()
                    .map(|s| Owned {
                        namespace: Some(s.namespace.clone()),
                        target: s.target.clone(),
                        label: format!("{}: ", target_label(s, all_namespaces)),
                    })
                    .collect();
                let watches = completion_watches(selected, namespace);
                tokio::select! {
                    r = wait_complete(conn, &watches, &owned, &session, time_scale, status, &decided) => { r?; Outcome::Interrupted }
                    _ = deadline => Outcome::Timeout,
                    _ = &mut interrupt => Outcome::Interrupted,
                }
            } else {
                tokio::select! {
                    _ = deadline => Outcome::Complete,
                    _ = &mut interrupt => Outcome::Interrupted,
                }
            }
        }
    };
    let decided = decided.into_inner().unwrap_or_else(PoisonError::into_inner);
    let reports = session
        .finish_each(|i| decided.get(i).copied().flatten().unwrap_or(fallback))
        .await?;
    Ok(ManyReport {
        namespaces: selected.iter().map(|s| s.namespace.clone()).collect(),
        all_namespaces,
        reports,
    })
}

/// One pod watch feeding one [`Auditor`] per target of `selected`, said
/// on `status` (shared by [`audit_many_with`] and [`audit_many_during`]).
async fn start_session(
    conn: &Connection,
    opts: &Options,
    selected: &[Selected],
    all_namespaces: bool,
    time_scale: f64,
    status: &dyn Fn(&str),
) -> Result<AuditSession, AuditCommandError> {
    let mut auditors = Vec::with_capacity(selected.len());
    let mut selectors = Vec::with_capacity(selected.len());
    let mut described = Vec::with_capacity(selected.len());
    for s in selected {
        let (roles, selector) = resolve_roles(conn, &s.namespace, &s.target, &[]).await?;
        described.push(format!(
            "{} ({})",
            target_label(s, all_namespaces),
            role_names(&roles)
        ));
        auditors.push(
            Auditor::new(roles, opts.min_ready, opts.sample_interval, time_scale)
                .narrating()
                .with_target(s.target.to_string())
                .with_namespace(s.namespace.clone()),
        );
        selectors.push(selector);
    }
    let namespace = (!all_namespaces).then_some(conn.namespace.as_str());
    status(&describe_many(namespace, &described, opts));
    Ok(AuditSession::start_group(
        conn.client.clone(),
        &conn.url,
        namespace,
        pod_selector(selected, &selectors),
        auditors,
    ))
}

/// Audit every target of `selected` while `during` runs (`infera drain`):
/// the pod watch is synced before `during` is first polled, and the
/// reports close with the [`Outcome`] it returns, when it returns.
pub async fn audit_many_during<T>(
    conn: &Connection,
    opts: &Options,
    selected: &[Selected],
    all_namespaces: bool,
    time_scale: f64,
    status: &dyn Fn(&str),
    during: impl Future<Output = (Outcome, T)>,
) -> Result<(ManyReport, T), AuditCommandError> {
    let mut session =
        start_session(conn, opts, selected, all_namespaces, time_scale, status).await?;
    session.wait_synced().await?;
    let (outcome, value) = during.await;
    let reports = session.finish_each(|_| outcome).await?;
    let report = ManyReport {
        namespaces: selected.iter().map(|s| s.namespace.clone()).collect(),
        all_namespaces,
        reports,
    };
    Ok((report, value))
}

fn role_names(roles: &[RoleSpec]) -> String {
    roles
        .iter()
        .map(|r| r.role.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `auditing 3 targets in namespace NS: idep/a (prefill, decode), …; a
/// sample every …, floor …; MODE`.
fn describe_many(namespace: Option<&str>, described: &[String], opts: &Options) -> String {
    let place = match namespace {
        Some(ns) => format!("in namespace {ns}"),
        None => "in all namespaces".to_string(),
    };
    format!(
        "auditing {} targets {place}: {}; a sample every {}, floor {}; {}",
        described.len(),
        described.join(", "),
        humantime::format_duration(opts.sample_interval),
        opts.min_ready,
        super::command::mode_text(opts),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(ns: &str, t: &str) -> Selected {
        Selected {
            namespace: ns.into(),
            target: Target::parse(t).unwrap(),
        }
    }

    #[test]
    fn selection_rules() {
        let s = |targets: &[&str], selector: Option<&str>, all: bool| Selection {
            targets: targets.iter().map(|t| t.to_string()).collect(),
            selector: selector.map(str::to_string),
            all_namespaces: all,
        };
        assert!(!s(&["idep/a"], None, false).is_many());
        assert!(s(&["idep/a", "deploy/b"], None, false).is_many());
        assert!(s(&[], Some("model=kimi"), false).is_many());
        assert_eq!(
            s(&["idep/a", "idep/a", "deploy/b"], None, false).parse(),
            Ok(vec![
                Target::InferaDeployment("a".into()),
                Target::Deployment("b".into())
            ])
        );
        assert!(s(&["idep/a", "pod/x"], None, false).parse().is_err());
        assert!(s(&["idep/a"], Some("x=y"), false).parse().is_err());
        assert!(s(&["idep/a"], None, true).parse().is_err());
        assert!(s(&[], None, false).parse().is_err());
        assert_eq!(s(&[], None, true).parse(), Ok(vec![]));
    }

    #[test]
    fn one_pod_selector_for_all_ideps_none_for_a_mix() {
        let ideps = [sel("a", "idep/x"), sel("b", "idep/y")];
        assert_eq!(
            pod_selector(&ideps, &[None, None]).as_deref(),
            Some("infera.amd.com/deployment in (x,y)")
        );
        let mixed = [sel("a", "idep/x"), sel("a", "deploy/w")];
        assert_eq!(pod_selector(&mixed, &[None, None]), None);
        let one = [sel("a", "deploy/w")];
        assert_eq!(
            pod_selector(&one, &[Some("app=w".into())]).as_deref(),
            Some("app=w")
        );
    }
}
