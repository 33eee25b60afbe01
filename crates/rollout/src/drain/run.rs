//! Running a drain: plan, gate, cordon, move, evict, wait; audited per
//! fleet from before the cordon to the end.

use std::future::Future;
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::{LocalBoxFuture, Shared};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::Value;

use super::DrainError;
use super::dry_run::server_dry_run;
use super::evict::{EvictEnd, Victim, evict_all};
use super::gather::{Selection, gather};
use super::plan::{DrainPath, DrainPlan, Inventory, OwnerKind, PlanFlags, PodAction, decide};
use super::state::DrainState;
use super::traffic::DrainTraffic;
use crate::api::retrying;
use crate::options::{Options, PauseBetween, Request};
use crate::reporter::{Reporter, human_duration};
use crate::target::{Target, TargetKind};
use infera_audit::exit::Exit;
use infera_audit::{ManyReport, Outcome, Selected};
use infera_cluster::{ClusterError, Connection};

/// How to drain.
#[derive(Debug, Clone)]
pub struct DrainOptions {
    pub selection: Selection,
    /// `--grace-period` (`None`: each pod's own).
    pub grace_period: Option<i64>,
    /// `--timeout`, reported time (`None`: wait for ever, as kubectl's 0):
    /// one deadline for the whole run (move, evict, wait), from the cordon.
    pub timeout: Option<Duration>,
    pub dry_run: DryRun,
    /// `--force`: drain despite a GAP or a STALL (and pods without a controller).
    pub force: bool,
    /// What every move (a rollout restart) runs with: `--min-ready`, the
    /// sampling, stall and step limits, the time scale.
    pub rollout: Options,
    /// `--traffic`: requests through each fleet's serving path while the
    /// drain runs (`None`: nothing is sent).
    pub traffic: Option<DrainTraffic>,
}

/// `--dry-run`, kubectl's strategies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DryRun {
    /// Drain.
    #[default]
    None,
    /// Print the plan; send nothing that changes anything.
    Client,
    /// Send the cordon and the evictions with `dryRun=All`: the API server
    /// checks them (budgets included) and persists nothing. A move's
    /// restart is not sent.
    Server,
}

/// How it went.
#[derive(Debug)]
pub struct DrainOutcome {
    pub exit: Exit,
    pub plan: Option<DrainPlan>,
    /// The audit of every fleet that had a pod on the node(s).
    pub report: Option<ManyReport>,
    /// When this run resumed a drain: when that drain started (its report
    /// covers this run only, from the resume).
    pub resumed_from: Option<String>,
}

type Interrupt<'a> = Shared<LocalBoxFuture<'a, ()>>;

/// `infera drain` as a library call: everything it says goes to `out`;
/// `interrupt` resolving (Ctrl-C) stops it with the node(s) cordoned.
pub async fn drain(
    conn: &Connection,
    opts: &DrainOptions,
    out: &mut dyn Reporter,
    interrupt: impl Future<Output = ()>,
) -> Result<DrainOutcome, DrainError> {
    let interrupt: Interrupt<'_> = interrupt.boxed_local().shared();
    let inv = gather(conn, &opts.selection).await?;
    let state = read_state(&inv)?;
    let flags = PlanFlags {
        min_ready: opts.rollout.min_ready,
        moving: state.as_ref().map(|s| s.moving.clone()).unwrap_or_default(),
    };
    let plan = decide(&inv, &flags);
    out.drain_plan(&plan);
    let refusals = plan.refusals();
    if !refusals.is_empty() {
        return Err(DrainError::Usage(format!(
            "cannot drain {}; nothing was changed:\n  {}",
            plan.nodes.join(", "),
            refusals.join("\n  ")
        )));
    }
    if opts.dry_run == DryRun::Client {
        out.note("Dry run (client): nothing was sent; nothing was changed.");
        return Ok(early(Exit::Ok, plan));
    }
    if let Some(s) = &state {
        out.note(&format!(
            "Resuming the drain started at {}: {} workload(s) moved, {} in flight.",
            s.started_at,
            s.moved.len(),
            s.moving.iter().filter(|m| !s.moved.contains(m)).count()
        ));
    }
    // Also when resuming: a record left by a forced or narrower run (a
    // timeout, Ctrl-C) must not carry `--force` into this one. A move in
    // flight is never blocking (the plan resumes it).
    let blocking = !plan.blocking().is_empty();
    if blocking && !opts.force {
        out.note(&plan.refusal());
        return Ok(early(Exit::Stalled, plan));
    }
    if blocking {
        out.note("Proceeding despite the plan (--force).");
    }
    if opts.dry_run == DryRun::Server {
        let exit = server_dry_run(conn, opts.grace_period, &inv, &plan, out).await?;
        return Ok(early(exit, plan));
    }
    let fleets = fleets(&inv, &plan);
    let resumed_from = state.as_ref().map(|s| s.started_at.clone());
    let sending = match super::traffic::start(conn, opts.traffic.as_ref(), &fleets, out).await {
        Ok(sending) => sending,
        Err(DrainError::NotServing(why)) => {
            out.note(&format!("{why}; nothing was changed"));
            return Ok(early(Exit::Stalled, plan));
        }
        Err(e) => return Err(e),
    };
    let state = state.unwrap_or_else(|| DrainState {
        nodes: plan.nodes.clone(),
        started_at: crate::trigger::annotation_timestamp(jiff::Timestamp::now()),
        ..DrainState::default()
    });
    let run = Run {
        conn,
        opts,
        inv: &inv,
        plan: &plan,
        state,
        stop: interrupt,
        deadline: None,
    };
    let (report, outcome) = if fleets.is_empty() {
        (None, run.steps(out).await?)
    } else {
        let all = fleets.iter().any(|f| f.namespace != conn.namespace);
        let audit = audit_options(&opts.rollout);
        let status =
            |line: &str| tracing::info!(target: infera_cluster::trace::target::DRAIN, "{line}");
        let scale = opts.rollout.time_scale;
        let during = async {
            match run.steps(out).await {
                Ok(outcome) => (outcome, Ok(outcome)),
                Err(e) => (Outcome::Aborted, Err(e)),
            }
        };
        let (many, result) =
            infera_audit::audit_many_during(conn, &audit, &fleets, all, scale, &status, during)
                .await?;
        (Some(many), result?)
    };
    let report = super::traffic::finish(sending, report).await;
    let exit = match &report {
        Some(r) => r.exit(),
        None => outcome_exit(outcome),
    };
    Ok(DrainOutcome {
        exit,
        plan: Some(plan),
        report,
        resumed_from,
    })
}

fn early(exit: Exit, plan: DrainPlan) -> DrainOutcome {
    DrainOutcome {
        exit,
        plan: Some(plan),
        report: None,
        resumed_from: None,
    }
}

fn outcome_exit(outcome: Outcome) -> Exit {
    match outcome {
        Outcome::Complete => Exit::Ok,
        Outcome::Interrupted => Exit::Interrupted,
        _ => Exit::Stalled,
    }
}

fn audit_options(opts: &Options) -> infera_audit::Options {
    infera_audit::Options {
        target: String::new(),
        duration: None,
        until_complete: false,
        roles: Vec::new(),
        samples: None,
        sample_interval: opts.sample_interval,
        min_ready: opts.min_ready,
    }
}

/// The drain record of the draining nodes (the first found; all carry the
/// same).
fn read_state(inv: &Inventory) -> Result<Option<DrainState>, DrainError> {
    for node in &inv.nodes {
        let name = node.metadata.name.clone().unwrap_or_default();
        if !inv.draining.contains(&name) {
            continue;
        }
        let value = serde_json::to_value(node).unwrap_or(Value::Null);
        if let Some(state) = DrainState::from_node(&value).map_err(DrainError::Usage)? {
            return Ok(Some(state));
        }
    }
    Ok(None)
}

/// The InferaDeployments and Deployments that had a pod on the node(s):
/// what the closing audit covers.
fn fleets(inv: &Inventory, plan: &DrainPlan) -> Vec<Selected> {
    let mut out: Vec<Selected> = Vec::new();
    for u in &plan.units {
        let Some(w) = inv.workloads.get(u.workload) else {
            continue;
        };
        let target = match w.kind {
            OwnerKind::InferaDeployment => infera_audit::Target::InferaDeployment(w.name.clone()),
            OwnerKind::Deployment => infera_audit::Target::Deployment(w.name.clone()),
            _ => continue,
        };
        let s = Selected {
            namespace: w.namespace.clone(),
            target,
        };
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// A drain past its gate.
struct Run<'a> {
    conn: &'a Connection,
    opts: &'a DrainOptions,
    inv: &'a Inventory,
    plan: &'a DrainPlan,
    state: DrainState,
    /// Ctrl-C, and once armed the `--timeout` deadline.
    stop: Interrupt<'a>,
    deadline: Option<Instant>,
}

impl Run<'_> {
    /// Cordon, move, evict, wait: all within one `--timeout`, counted from
    /// the cordon.
    async fn steps(mut self, out: &mut dyn Reporter) -> Result<Outcome, DrainError> {
        let clock = crate::reporter::Clock {
            time_scale: self.opts.rollout.time_scale,
            simulated: self.opts.rollout.simulated,
        };
        out.start(&[("drain".to_string(), 0)], clock);
        self.write_state().await?;
        self.arm_timeout();
        out.event(
            "drain",
            &format!("cordoned {}", self.plan.nodes.join(", ")),
            Instant::now(),
        );
        if let Some(stopped) = self.moves(out).await? {
            return Ok(stopped);
        }
        if !self.state.moved.is_empty() {
            // Each move drew its own legs; the evictions get the drain's.
            out.start(&[("drain".to_string(), 0)], clock);
        }
        let victims = self.victims().await?;
        let mut stop = self.stop.clone();
        let end = evict_all(
            self.conn,
            &victims,
            self.opts.grace_period,
            self.deadline,
            out,
            &mut stop,
        )
        .await?;
        out.finish();
        match end {
            EvictEnd::Done => {
                self.patch_nodes(&DrainState::removal_patch()).await?;
                out.note(&format!(
                    "Drained {}: {} pod(s) evicted, {} workload(s) moved; the node(s) stay cordoned (`kubectl uncordon` when done).",
                    self.plan.nodes.join(", "),
                    victims.len(),
                    self.state.moved.len()
                ));
                Ok(Outcome::Complete)
            }
            EvictEnd::Timeout(phase) => Ok(self.timed_out(out, phase)),
            EvictEnd::Interrupted if self.past_deadline() => Ok(self.timed_out(out, "evicting")),
            EvictEnd::Interrupted => {
                self.say_cordoned(out, "interrupted");
                Ok(Outcome::Interrupted)
            }
        }
    }

    /// From now on, `stop` also fires at the `--timeout` deadline.
    fn arm_timeout(&mut self) {
        let Some(timeout) = self.opts.timeout else {
            return;
        };
        let wall = Duration::from_secs_f64(timeout.as_secs_f64() / self.opts.rollout.time_scale);
        let deadline = Instant::now() + wall;
        self.deadline = Some(deadline);
        let timer = tokio::time::sleep_until(deadline.into());
        self.stop = futures::future::select(self.stop.clone(), Box::pin(timer))
            .map(drop)
            .boxed_local()
            .shared();
    }

    fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    fn timed_out(&self, out: &mut dyn Reporter, phase: &str) -> Outcome {
        let limit = self.opts.timeout.map(human_duration).unwrap_or_default();
        self.say_cordoned(
            out,
            &format!("TIMEOUT (--timeout {limit}) while {phase}: pods are left on the node(s)"),
        );
        Outcome::Timeout
    }

    fn say_cordoned(&self, out: &mut dyn Reporter, what: &str) {
        out.note(&format!(
            "{what}. Node(s) {} stay cordoned; rerun the same command to resume, or `kubectl uncordon` to give up.",
            self.plan.nodes.join(", ")
        ));
    }

    async fn patch_nodes(&self, patch: &Value) -> Result<(), DrainError> {
        let api: Api<Node> = Api::all(self.conn.client.clone());
        let params = PatchParams::default();
        let merge = Patch::Merge(patch);
        for node in &self.plan.nodes {
            retrying("patch node", || api.patch(node, &params, &merge))
                .await
                .map_err(|e| ClusterError::from_kube(&e, &self.conn.url, "patch", "nodes", None))?;
        }
        Ok(())
    }

    /// Cordon and record the state on every draining node.
    async fn write_state(&self) -> Result<(), DrainError> {
        self.patch_nodes(&self.state.cordon_patch()).await
    }

    /// Move every `move` workload (and resume one in flight); `Some` when
    /// the drain stops here.
    async fn moves(&mut self, out: &mut dyn Reporter) -> Result<Option<Outcome>, DrainError> {
        for unit in &self.plan.units {
            let Some(w) = self.inv.workloads.get(unit.workload) else {
                continue;
            };
            let key = w.key();
            if unit.path != DrainPath::Move {
                continue;
            }
            if self.state.moved.contains(&key) {
                out.event(
                    "drain",
                    &format!("{}: moved by an earlier run", unit.label),
                    Instant::now(),
                );
                continue;
            }
            if !self.state.moving.contains(&key) {
                self.state.moving.push(key.clone());
                self.write_state().await?;
            }
            out.event(
                "drain",
                &format!("moving {}: {}", unit.label, unit.why),
                Instant::now(),
            );
            let mut conn = self.conn.clone();
            conn.namespace = w.namespace.clone();
            let kind = match w.kind {
                OwnerKind::InferaDeployment => TargetKind::InferaDeployment,
                _ => TargetKind::Deployment,
            };
            let mut req = Request::restart(Target {
                kind,
                name: w.name.clone(),
            });
            req.services = w.leg.iter().cloned().collect();
            let rollout =
                crate::execute_with(&conn, req, self.move_options(), out, self.stop.clone())
                    .await?;
            match rollout.exit {
                Exit::Ok | Exit::Findings | Exit::Unproven => {
                    self.state.moved.push(key.clone());
                    self.state.moving.retain(|k| *k != key);
                    self.write_state().await?;
                }
                Exit::Interrupted if self.past_deadline() => {
                    let phase = format!("moving {}", unit.label);
                    return Ok(Some(self.timed_out(out, &phase)));
                }
                Exit::Interrupted => {
                    self.say_cordoned(out, "interrupted");
                    return Ok(Some(Outcome::Interrupted));
                }
                _ => {
                    out.note(&format!("The move of {} did not complete.", unit.label));
                    self.say_cordoned(out, "the drain stopped");
                    return Ok(Some(Outcome::Aborted));
                }
            }
        }
        Ok(None)
    }

    fn move_options(&self) -> Options {
        Options {
            dry_run: false,
            force: true,
            yes: true,
            abort: false,
            pause_between: PauseBetween::Never,
            ..self.opts.rollout.clone()
        }
    }

    /// What is left to evict now (one pod list per draining node): the
    /// plan's evictable pods still there; terminating ones are only
    /// waited for.
    async fn victims(&self) -> Result<Vec<Victim>, DrainError> {
        let api: Api<Pod> = Api::all(self.conn.client.clone());
        let mut out = Vec::new();
        for node in &self.plan.nodes {
            let params = ListParams::default().fields(&format!("spec.nodeName={node}"));
            let pods = retrying("list pods", || api.list(&params))
                .await
                .map_err(|e| ClusterError::from_kube(&e, &self.conn.url, "list", "pods", None))?;
            for pod in pods.items {
                let ns = pod.metadata.namespace.clone().unwrap_or_default();
                let name = pod.metadata.name.clone().unwrap_or_default();
                let planned =
                    self.inv.on_nodes.iter().any(|p| {
                        p.namespace == ns && p.name == name && p.action == PodAction::Evict
                    });
                if planned {
                    out.push(Victim {
                        namespace: ns,
                        name,
                        uid: pod.metadata.uid.clone(),
                        terminating: pod.metadata.deletion_timestamp.is_some(),
                    });
                }
            }
        }
        Ok(out)
    }
}
