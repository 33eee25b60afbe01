//! Driving a rollout: trigger a leg, watch its pods step by step, detect a
//! stall, abort by undoing the trigger, resume after an interruption.
//!
//! [`execute_with`] reads the target, resumes or refuses an in-flight
//! record, builds the plan and asks the [`Reporter`] whether to go on; then
//! a [`Driver`] holds the state of the drive and has one method per phase:
//! `trigger` (or `resume_leg`), `watch_leg` until the leg is complete,
//! `check_stall`, `abort_leg`, `finish_leg`.
//!
//! Watches: one pod watch (label selector of the target, shared with the
//! Auditor) and one Deployment watch in the namespace, both through
//! `kube::runtime::watcher` with backoff: a dropped watch, a 410 or an API
//! restart is recovered by a re-list, which the step trackers, the Auditor
//! and the Deployment view reconcile through one
//! [`infera_cluster::reflect::Reflector`]. No request is made per
//! sample. The driver never deletes a pod: the operator / Deployment
//! controller does the replacing, and an abort puts the old template back so
//! the old pods keep serving. The driver never prints: everything goes to the
//! [`Reporter`].

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::BoxStream;
use infera_audit::Timed;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher::Event;
use serde_json::Value;

use super::api::{TargetApi, failed_scheduling_event};
use super::controller::{self, ControllerCheck, Verdict};
use super::gitops;
use super::leg_tracker::{LegTracker, Observation, StepKind};
use super::legs::{Leg, legs_of, preflight};
use super::options::{OnStall, Options, PauseBetween, Request, RolloutError, RolloutOutcome};
use super::plan::Plan;
use super::record::{InFlight, LegRecord, combine};
use super::reporter::{Clock, Question, Reporter, Silent, Stall, human_duration};
use super::revert::RevertWatch;
use super::target::TargetKind;
use super::trigger::{
    self, Change, Original, deployment_patch, deployment_undo_patch, idep_patch, idep_undo_patch,
};
use super::watch::{Probes, Watched, watch_streams};
use infera_audit::exit::Exit;
use infera_audit::{Auditor, Outcome, RoleSpec, Step};
use infera_cluster::reflect::{Reflector, name_key};
use infera_cluster::{ClusterError, Connection};

use infera_model::worker::{LABEL_MANAGED_BY, MANAGED_BY_VALUE};

/// `infera rollout` as a library call that reports nothing and asks
/// nobody (tests, benches).
pub async fn execute(
    conn: &Connection,
    req: Request,
    opts: Options,
    interrupt: impl Future<Output = ()>,
) -> Result<RolloutOutcome, RolloutError> {
    execute_with(conn, req, opts, &mut Silent, interrupt).await
}

/// `infera rollout` as a library call (used by the CLI, `infera demo` and
/// tests): everything it has to say and ask goes to `reporter`;
/// `interrupt` resolving (Ctrl-C) stops the drive without touching anything
/// that serves.
pub async fn execute_with(
    conn: &Connection,
    req: Request,
    opts: Options,
    reporter: &mut dyn Reporter,
    interrupt: impl Future<Output = ()>,
) -> Result<RolloutOutcome, RolloutError> {
    let api = TargetApi::new(conn, &req.target);
    let live = api.get().await?;
    let is_idep = req.target.kind == TargetKind::InferaDeployment;
    if !is_idep {
        refuse_operator_managed(&req, &live)?;
    }
    let record = InFlight::from_object(&live)?;
    if opts.abort {
        return abort_in_flight(&api, record, is_idep, reporter).await;
    }
    let prepared = prepare(conn, &req, &live, record, reporter).await?;
    let mut plan = preflight(
        conn,
        &req,
        &live,
        &prepared.legs,
        &prepared.roles,
        opts.min_ready,
    )
    .await?;
    let fields: Vec<_> = (prepared.legs.iter())
        .flat_map(|l| gitops::trigger_fields(&live, &l.name, &prepared.change, is_idep))
        .collect();
    plan.gitops = gitops::assess(&live, &fields);
    reporter.plan(&plan);
    let pause_pods = match gate(&plan, &opts, is_idep, prepared.resumed, reporter)? {
        Gate::Drive { pause_pods } => pause_pods,
        Gate::Stop(exit) => return Ok(RolloutOutcome::early(exit, Some(plan))),
    };
    let setup = Setup {
        api,
        req: &req,
        opts: &opts,
        live,
        pause_pods,
        prepared,
    };
    Driver::new(setup, reporter, Box::pin(interrupt))
        .run(plan)
        .await
}

/// A plain Deployment the operator owns cannot be rolled directly.
fn refuse_operator_managed(req: &Request, live: &Value) -> Result<(), RolloutError> {
    let label = |k: &str| {
        live.pointer("/metadata/labels")
            .and_then(|l| l.get(k))
            .and_then(Value::as_str)
    };
    if label(LABEL_MANAGED_BY) != Some(MANAGED_BY_VALUE) {
        return Ok(());
    }
    let idep = label(super::legs::LABEL_DEPLOYMENT).unwrap_or("NAME");
    let svc = label(super::legs::LABEL_SERVICE).unwrap_or("SERVICE");
    Err(RolloutError::Usage(format!(
        "{} is managed by the infera operator, which reverts any change to it within seconds; \
         roll it through its InferaDeployment: `infera rollout restart idep/{idep} --service {svc}`",
        req.target
    )))
}

/// Legs, roles, the change and the in-flight record of this drive.
struct Prepared {
    roles: Vec<RoleSpec>,
    legs: Vec<Leg>,
    change: Change,
    record: InFlight,
    /// Resuming an interrupted rollout of the same request.
    resumed: bool,
}

/// Work out the legs and the change; resume the in-flight rollout when it
/// is the same request, refuse when it is another.
async fn prepare(
    conn: &Connection,
    req: &Request,
    live: &Value,
    record: Option<InFlight>,
    out: &mut dyn Reporter,
) -> Result<Prepared, RolloutError> {
    let is_idep = req.target.kind == TargetKind::InferaDeployment;
    let (roles, mut legs) = legs_of(conn, req, live).await?;
    let now_ts = jiff::Timestamp::now();
    let change = Change {
        restart_at: (req.command == "restart").then(|| {
            if is_idep {
                trigger::label_timestamp(now_ts)
            } else {
                trigger::annotation_timestamp(now_ts)
            }
        }),
        image: req.image.clone(),
        env: req.env.clone(),
    };
    let Some(rec) = record else {
        let record = InFlight {
            command: req.command.to_string(),
            change: change.clone(),
            legs: legs.iter().map(|l| l.name.clone()).collect(),
            done: Vec::new(),
            current: None,
            started_at: trigger::annotation_timestamp(now_ts),
        };
        return Ok(Prepared {
            roles,
            legs,
            change,
            record,
            resumed: false,
        });
    };
    let explicit: Vec<String> = if req.services.is_empty() {
        Vec::new()
    } else {
        legs.iter().map(|l| l.name.clone()).collect()
    };
    if !rec.same_request(req.command, &change, &explicit) {
        return Err(RolloutError::Usage(format!(
            "another rollout is in flight on {}: {}. Rerun that command to resume it, or add `--abort` to undo its current leg",
            req.target,
            rec.describe()
        )));
    }
    out.note(&format!(
        "Resuming the interrupted rollout: {}",
        rec.describe()
    ));
    legs.retain(|l| rec.legs.contains(&l.name));
    legs.sort_by_key(|l| rec.legs.iter().position(|o| o == &l.name));
    Ok(Prepared {
        roles,
        legs,
        change: rec.change.clone(),
        record: rec,
        resumed: true,
    })
}

/// After the plan: drive, or stop here with this exit code.
enum Gate {
    Drive { pause_pods: bool },
    Stop(Exit),
}

fn gate(
    plan: &Plan,
    opts: &Options,
    is_idep: bool,
    resumed: bool,
    out: &mut dyn Reporter,
) -> Result<Gate, RolloutError> {
    if opts.pause_between == PauseBetween::Pods && is_idep {
        return Err(RolloutError::Usage(
            "`--pause-between pods` works through `spec.paused`, which the infera operator reverts on its Deployments; \
             use `--pause-between legs` to stop between services"
                .into(),
        ));
    }
    if opts.dry_run {
        out.note("Dry run: nothing was changed.");
        return Ok(Gate::Stop(Exit::Ok));
    }
    let mut pause_pods = opts.pause_between == PauseBetween::Pods && !opts.yes;
    if pause_pods && !out.interactive() {
        out.note(
            "--pause-between pods: no terminal to confirm on; rolling without pausing (use --yes to silence this)",
        );
        pause_pods = false;
    }
    let blocking = plan.refuses();
    if blocking && !opts.force && !resumed {
        out.note(&plan.refusal());
        return Ok(Gate::Stop(Exit::Stalled));
    }
    if blocking {
        out.note("Proceeding despite the preflight (--force).");
    }
    if !opts.yes && out.ask(&Question::Start) == Some(false) {
        out.note("Nothing was changed.");
        return Ok(Gate::Stop(Exit::Ok));
    }
    Ok(Gate::Drive { pause_pods })
}

/// `--abort`: undo the current leg of an in-flight rollout.
async fn abort_in_flight(
    api: &TargetApi<'_>,
    record: Option<InFlight>,
    is_idep: bool,
    out: &mut dyn Reporter,
) -> Result<RolloutOutcome, RolloutError> {
    let Some(mut record) = record else {
        out.note(&format!(
            "No rollout is in flight on {}: nothing to abort.",
            api.target
        ));
        return Ok(RolloutOutcome::early(Exit::Ok, None));
    };
    out.note(&format!("Aborting: {}", record.describe()));
    if let Some(current) = record.current.clone() {
        undo_leg(api, &mut record, is_idep).await?;
        out.note(&format!(
            "Restored the previous template of leg `{}`: its old pods keep serving and the replacement goes.",
            current.leg
        ));
    }
    api.patch_with(|_| Ok(InFlight::removal_patch())).await?;
    let entry = super::history::aborted_entry(&record, api.conn);
    if let Err(e) = super::history::record(api, &entry).await {
        out.note(&format!("could not record the rollout history: {e}"));
    }
    if !record.done.is_empty() {
        out.note(&format!(
            "Legs already finished stay rolled: {}.",
            record.done.join(", ")
        ));
    }
    Ok(RolloutOutcome::early(Exit::Stalled, None))
}

/// Put the leg's previous template back and clear it from the record.
async fn undo_leg(
    api: &TargetApi<'_>,
    record: &mut InFlight,
    is_idep: bool,
) -> Result<(), RolloutError> {
    let Some(current) = record.current.clone() else {
        return Ok(());
    };
    let mut rec = record.clone();
    rec.current = None;
    api.patch_with(|live| {
        let undo = if is_idep {
            idep_undo_patch(live, &current.leg, &current.original)?
        } else {
            deployment_undo_patch(live, &current.original)?
        };
        Ok(combine(undo, &rec.annotation_patch()?))
    })
    .await?;
    record.current = None;
    Ok(())
}

/// What [`Driver::new`] starts from.
struct Setup<'a> {
    api: TargetApi<'a>,
    req: &'a Request,
    opts: &'a Options,
    live: Value,
    pause_pods: bool,
    prepared: Prepared,
}

/// The state of one leg while it is watched.
struct LegWatch {
    index: usize,
    /// `--pause-between pods`: the Deployment is held (`spec.paused`).
    paused: bool,
    /// Replacements that existed when it was last paused.
    paused_for: usize,
    last_progress: Instant,
    unschedulable_since: Option<(String, Instant)>,
    stall_reported: bool,
    /// Whether the Deployment controller keeps up (see [`crate::controller`]).
    controller: ControllerCheck,
}

impl LegWatch {
    fn new(index: usize) -> Self {
        LegWatch {
            index,
            paused: false,
            paused_for: 0,
            last_progress: Instant::now(),
            unschedulable_since: None,
            stall_reported: false,
            controller: ControllerCheck::default(),
        }
    }
}

/// A rollout being driven: the watches, the trackers and the Auditor.
pub struct Driver<'a> {
    api: TargetApi<'a>,
    req: &'a Request,
    opts: &'a Options,
    out: &'a mut dyn Reporter,
    interrupt: Pin<Box<dyn Future<Output = ()> + 'a>>,
    is_idep: bool,
    live: Value,
    legs: Vec<Leg>,
    change: Change,
    record: InFlight,
    pause_pods: bool,
    events: BoxStream<'static, Watched>,
    auditor: Auditor,
    trackers: Vec<LegTracker>,
    deployments: Reflector<Deployment>,
    steps: Vec<(String, Observation, Instant)>,
    /// The note about an interrupted watch was printed.
    warned: bool,
    probes: Probes,
    tick: tokio::time::Interval,
    sample_every: Duration,
    next_sample: Instant,
    /// The current leg's trigger fields, checked on every target version.
    revert: RevertWatch,
    /// The API server's clock offset, from the heartbeats.
    skew: infera_cluster::sight::Skew,
    /// Blind since (the watches were not current): no step is taken.
    blind_since: Option<Instant>,
}

impl<'a> Driver<'a> {
    fn new(
        setup: Setup<'a>,
        out: &'a mut dyn Reporter,
        interrupt: Pin<Box<dyn Future<Output = ()> + 'a>>,
    ) -> Self {
        let Setup {
            api,
            req,
            opts,
            live,
            pause_pods,
            prepared,
        } = setup;
        let is_idep = req.target.kind == TargetKind::InferaDeployment;
        let events = watch_streams(api.conn, req, &prepared.legs);
        let auditor = Auditor::new(
            prepared.roles,
            opts.min_ready,
            opts.sample_interval,
            opts.time_scale,
        )
        .with_target(req.target.to_string());
        let bar_legs: Vec<(String, u64)> = prepared
            .legs
            .iter()
            .map(|l| (l.name.clone(), u64::from(l.replicas)))
            .collect();
        out.start(
            &bar_legs,
            Clock {
                time_scale: opts.time_scale,
                simulated: opts.simulated,
            },
        );
        let trackers = prepared
            .legs
            .iter()
            .map(|l| {
                let change = prepared.change.clone();
                LegTracker::new(l.name.clone(), l.selector.clone(), change, is_idep)
            })
            .collect();
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let sample_every = auditor.sample_wall_interval();
        Driver {
            probes: Probes::new(api.conn, wall(opts, Duration::from_secs(5))),
            api,
            req,
            opts,
            out,
            interrupt,
            is_idep,
            live,
            legs: prepared.legs,
            change: prepared.change,
            record: prepared.record,
            pause_pods,
            events,
            auditor,
            trackers,
            deployments: Reflector::new(),
            steps: Vec::new(),
            warned: false,
            tick,
            sample_every,
            next_sample: Instant::now(),
            revert: RevertWatch::default(),
            skew: infera_cluster::sight::Skew::default(),
            blind_since: None,
        }
    }

    /// Drive every leg not done yet; end with the report.
    async fn run(mut self, plan: Plan) -> Result<RolloutOutcome, RolloutError> {
        if !self.sync().await? {
            self.out.note("Interrupted before anything changed.");
            return Ok(RolloutOutcome {
                exit: Exit::Interrupted,
                plan: Some(plan),
                report: None,
                steps: self.steps,
            });
        }
        // Sample 1 is the state at the first complete list; then every
        // period (as `infera audit` and the field check count them).
        let synced_at = Instant::now();
        self.auditor.sample(synced_at);
        self.next_sample = synced_at + self.sample_every;
        let outcome = self.drive_legs().await?;
        let now = Instant::now();
        self.out.finish();
        if matches!(
            outcome,
            Outcome::Complete | Outcome::Aborted | Outcome::Reverted
        ) {
            self.api
                .patch_with(|_| Ok(InFlight::removal_patch()))
                .await?;
        }
        let report = self.auditor.finish(outcome, now);
        if let Err(e) = super::history::record_rollout(&self.api, &plan, &report).await {
            self.out
                .note(&format!("could not record the rollout history: {e}"));
        }
        Ok(RolloutOutcome {
            exit: report.exit(),
            plan: Some(plan),
            report: Some(report),
            steps: self.steps,
        })
    }

    /// Wait for the first complete pod list, so old pods are known before
    /// the trigger (and the Auditor's numbers start from a full picture).
    /// `false`: interrupted.
    async fn sync(&mut self) -> Result<bool, RolloutError> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.auditor.synced() {
            tokio::select! {
                ev = self.events.next() => match ev {
                    Some(w) => { self.handle(w, None)?; }
                    None => break,
                },
                _ = tokio::time::sleep_until(deadline.into()) => {
                    return Err(RolloutError::Cluster(ClusterError::Request {
                        verb: "watch".into(),
                        resource: "pods".into(),
                        namespace: Some(self.api.conn.namespace.clone()),
                        message: "no complete pod list within 30 s".into(),
                    }));
                }
                _ = self.interrupt.as_mut() => return Ok(false),
            }
        }
        Ok(true)
    }

    async fn drive_legs(&mut self) -> Result<Outcome, RolloutError> {
        for index in 0..self.legs.len() {
            if self.record.done.contains(&self.legs[index].name) {
                continue;
            }
            self.trigger(index).await?;
            if let Some(outcome) = self.watch_leg(index).await? {
                return Ok(outcome);
            }
            if !self.finish_leg(index).await? {
                return Ok(Outcome::Interrupted);
            }
        }
        Ok(Outcome::Complete)
    }

    /// Apply the change to leg `index` (or pick up where an interrupted run
    /// left it).
    async fn trigger(&mut self, index: usize) -> Result<(), RolloutError> {
        let now = Instant::now();
        let leg = self.legs[index].name.clone();
        let in_flight_here = self.record.current.as_ref().is_some_and(|c| c.leg == leg);
        if in_flight_here {
            self.resume_leg(&leg, now).await?;
            let live = self.live.clone();
            let original = self.record.current.as_ref().map(|c| c.original.clone());
            self.revert.arm(
                &leg,
                &live,
                &self.change,
                original.as_ref(),
                self.is_idep,
                now,
            );
            self.revert.check_resumed(&live);
        } else {
            let mut leg_original = Original::default();
            let (is_idep, surge) = (self.is_idep, self.req.surge);
            let (rec_base, change) = (&self.record, &self.change);
            let patched = self
                .api
                .patch_with(|live| {
                    let (patch, original) = if is_idep {
                        idep_patch(live, &leg, change)?
                    } else {
                        deployment_patch(live, change, surge)?
                    };
                    leg_original = original.clone();
                    let mut rec = rec_base.clone();
                    rec.current = Some(LegRecord {
                        leg: leg.clone(),
                        original,
                    });
                    Ok(combine(patch, &rec.annotation_patch()?))
                })
                .await?;
            self.revert
                .arm(&leg, &patched, change, Some(&leg_original), is_idep, now);
            self.record.current = Some(LegRecord {
                leg: leg.clone(),
                original: leg_original,
            });
            let text = format!(
                "trigger applied: {}",
                describe_change(&self.change, self.is_idep, &leg)
            );
            self.out.event(&leg, &text, now);
        }
        self.auditor.step(marker(&leg, "trigger", None, now));
        self.out
            .activity(&leg, "waiting for the replacement pod", now);
        Ok(())
    }

    /// The trigger of this leg is already on the target: go on watching;
    /// let a Deployment held between pods go on.
    async fn resume_leg(&mut self, leg: &str, now: Instant) -> Result<(), RolloutError> {
        self.out
            .event(leg, "resuming: trigger already applied", now);
        let paused = self.live.pointer("/spec/paused").and_then(Value::as_bool) == Some(true);
        if !self.is_idep && paused {
            // Stopped between pods (`--pause-between pods`): go on.
            self.api
                .patch_with(|_| Ok(serde_json::json!({"spec": {"paused": false}})))
                .await?;
            self.out
                .event(leg, "unpaused (it was stopped between pods)", now);
        }
        Ok(())
    }

    /// Watch leg `index` until it is complete (`None`) or the drive stops
    /// (`Some(outcome)`).
    async fn watch_leg(&mut self, index: usize) -> Result<Option<Outcome>, RolloutError> {
        let mut st = LegWatch::new(index);
        loop {
            let now = Instant::now();
            if !self.sighted(&mut st, now) {
                if let Some(outcome) = self.wait_event(&mut st).await? {
                    return Ok(Some(outcome));
                }
                continue;
            }
            let replicas = self.legs[index].replicas as usize;
            if self
                .trackers
                .get(index)
                .is_some_and(|t| t.complete(replicas))
            {
                return Ok(None);
            }
            if self.pause_pods
                && let Some(outcome) = self.pause_between_pods(&mut st, now).await?
            {
                return Ok(Some(outcome));
            }
            if let Some(outcome) = self.check_stall(&mut st, now).await? {
                return Ok(Some(outcome));
            }
            if let Some(outcome) = self.check_revert(index, now).await? {
                return Ok(Some(outcome));
            }
            self.check_controller(&mut st, now);
            let quiet_for = now.saturating_duration_since(st.last_progress);
            if quiet_for >= wall(self.opts, self.opts.step_timeout)
                && !(st.stall_reported && self.opts.on_stall == OnStall::Wait)
            {
                let text = format!(
                    "TIMEOUT: no step for {} (--step-timeout); stopping without touching anything that serves",
                    human_duration(self.opts.step_timeout)
                );
                self.out.event(&self.legs[index].name, &text, now);
                self.print_state();
                return Ok(Some(Outcome::Timeout));
            }
            if let Some(outcome) = self.wait_event(&mut st).await? {
                return Ok(Some(outcome));
            }
        }
    }

    /// Pods a re-list showed gone without saying when: the Events date
    /// their deletion for the audit.
    async fn date_vanished(&mut self) {
        let wanted = self.auditor.unresolved_deletions();
        if wanted.is_empty() {
            return;
        }
        for (ns, name, at) in infera_audit::date_deletions(&self.api.conn.client, &wanted).await {
            self.auditor.deleted_at(ns.as_deref(), &name, at);
        }
    }

    /// Whether the watches are current. While they are not, the driver
    /// takes no step whose safety depends on what it sees (completing the
    /// leg, the next trigger, a revert or an abort decision), and the stall
    /// and step timers do not count the blind time as time without
    /// progress.
    fn sighted(&mut self, st: &mut LegWatch, now: Instant) -> bool {
        let leg = self.legs[st.index].name.clone();
        match (self.auditor.is_current(), self.blind_since) {
            (true, None) => true,
            (false, Some(_)) => false,
            (false, None) => {
                self.blind_since = Some(now);
                let why = self
                    .auditor
                    .blind_reason()
                    .unwrap_or("the watch is not current")
                    .to_string();
                self.out.event(
                    &leg,
                    &format!("BLIND: {why}; taking no step until the watches are current again"),
                    now,
                );
                false
            }
            (true, Some(since)) => {
                self.blind_since = None;
                let blind = now.saturating_duration_since(since);
                st.last_progress += blind;
                if let Some((_, t)) = st.unschedulable_since.as_mut() {
                    *t += blind;
                }
                let text = format!(
                    "watches current again after {:.1}s blind; resuming",
                    blind.as_secs_f64() * self.opts.time_scale
                );
                self.out.event(&leg, &text, now);
                true
            }
        }
    }

    /// One event of the leg's watch, a `/ready` answer, a tick, or Ctrl-C.
    async fn wait_event(&mut self, st: &mut LegWatch) -> Result<Option<Outcome>, RolloutError> {
        let index = st.index;
        tokio::select! {
            biased;
            _ = self.interrupt.as_mut() => {
                let leg = &self.legs[index].name;
                self.out.event(leg, "INTERRUPTED: stopped driving; nothing that serves was touched", Instant::now());
                if let Some(why) = self.auditor.blind_reason() {
                    let text = format!("the cluster's state is unknown: the watches are not current ({why}); rerun the same command to resume once the API server answers");
                    self.out.event(leg, &text, Instant::now());
                }
                self.print_state();
                return Ok(Some(Outcome::Interrupted));
            }
            ev = self.events.next() => {
                // The watch stream never ends; if it did, stop driving.
                let Some(w) = ev else { return Ok(Some(Outcome::Complete)) };
                let before = self.steps.len();
                if self.handle(w, Some(index))? > 0 {
                    st.last_progress = Instant::now();
                }
                self.date_vanished().await;
                self.probe_new_ready(index, before);
            }
            res = self.probes.rx.recv() => {
                // A 403 on the pod proxy is missing RBAC, not a worker that
                // disagrees: stop with the verb and resource to grant.
                if let Some((_, _, Err(detail))) = &res
                    && detail.starts_with("HTTP 403 ")
                {
                    return Err(ClusterError::Forbidden {
                        verb: "get".into(),
                        resource: "pods/proxy".into(),
                        namespace: Some(self.probes.namespace.clone()),
                    }
                    .into());
                }
                if let Some((leg, pod, result)) = res
                    && self.on_probe(&leg, &pod, result)
                {
                    st.last_progress = Instant::now();
                }
            }
            _ = self.tick.tick() => self.on_tick(index),
        }
        Ok(None)
    }

    /// A replacement just turned Ready or registered: ask its `/ready`
    /// through the proxy now rather than at the next poll.
    fn probe_new_ready(&mut self, index: usize, since: usize) {
        let leg = &self.legs[index];
        let Some(tracker) = self.trackers.get(index) else {
            return;
        };
        for (_, obs, at) in &self.steps[since..] {
            if matches!(obs.kind, StepKind::Ready | StepKind::Routable)
                && !tracker.has_seen(&obs.pod, StepKind::ReadyViaProxy)
            {
                self.probes.ask(leg, &obs.pod, *at);
            }
        }
    }

    /// A `/ready` answer; `true` when it made a step.
    fn on_probe(&mut self, leg: &str, pod: &str, result: Result<(), String>) -> bool {
        let Some(t) = self.trackers.iter_mut().find(|t| t.leg == leg) else {
            return false;
        };
        let ok = result.is_ok();
        let detail = result.err().unwrap_or_else(|| "200".to_string());
        if ok {
            self.probes.answered(pod);
        }
        let Some(obs) = t.proxy_result(pod, ok, detail) else {
            return false;
        };
        let now = Instant::now();
        self.out.step(leg, &obs, now);
        self.auditor.step(marker(
            leg,
            obs.kind.as_str(),
            Some((obs.pod.clone(), obs.node.clone())),
            now,
        ));
        self.steps.push((leg.to_string(), obs, now));
        true
    }

    /// Every 100 ms: refresh the reporter, sample, poll `/ready` of
    /// replacements that have not answered yet.
    fn on_tick(&mut self, index: usize) {
        let now = Instant::now();
        self.out.tick(now);
        if now >= self.next_sample {
            self.auditor.sample(now);
            self.next_sample += self.sample_every;
            if self.next_sample < now {
                self.next_sample = now + self.sample_every;
            }
        }
        if let Some(t) = self.trackers.get(index) {
            for pod in t.awaiting_proxy() {
                if self.probes.due(&pod, now) {
                    self.probes.ask(&self.legs[index], &pod, now);
                }
            }
        }
    }

    /// `--pause-between pods` (plain Deployment): hold the Deployment
    /// (`spec.paused`) as soon as a replacement exists, so the controller
    /// neither retires an old pod nor starts the next replacement; once it
    /// is Ready, ask, then let it go on.
    async fn pause_between_pods(
        &mut self,
        st: &mut LegWatch,
        now: Instant,
    ) -> Result<Option<Outcome>, RolloutError> {
        let leg = self.legs[st.index].clone();
        let (created, replaced) = self
            .trackers
            .get(st.index)
            .map(|t| (t.new_live(), t.new_ready().min(leg.replicas as usize)))
            .unwrap_or((0, 0));
        if !st.paused && created > replaced && created > st.paused_for {
            self.set_paused(true).await?;
            st.paused = true;
            st.paused_for = created;
            let text = format!(
                "paused (spec.paused=true) while replacement {created} of {} comes up",
                leg.replicas
            );
            self.out.event(&leg.name, &text, now);
        }
        if !(st.paused && replaced >= st.paused_for) {
            return Ok(None);
        }
        let question = Question::NextPod {
            replaced,
            of: leg.replicas,
        };
        if replaced < leg.replicas as usize && self.out.ask(&question) == Some(false) {
            self.out.event(
                &leg.name,
                "stopped between pods: the Deployment stays paused and its Ready pods keep serving; rerun the same command to go on, or add --abort to roll back",
                Instant::now(),
            );
            return Ok(Some(Outcome::Interrupted));
        }
        self.set_paused(false).await?;
        st.paused = false;
        self.out
            .event(&leg.name, "unpaused (spec.paused=false)", Instant::now());
        st.last_progress = Instant::now();
        Ok(None)
    }

    async fn set_paused(&self, paused: bool) -> Result<(), RolloutError> {
        self.api
            .patch_with(|_| Ok(serde_json::json!({"spec": {"paused": paused}})))
            .await?;
        Ok(())
    }

    /// Stall: the surge pod Unschedulable for `--stall-after`, or the
    /// Deployment past its progress deadline. Reported once; then abort
    /// (`--on-stall abort`) or keep waiting.
    async fn check_stall(
        &mut self,
        st: &mut LegWatch,
        now: Instant,
    ) -> Result<Option<Outcome>, RolloutError> {
        let leg = self.legs[st.index].clone();
        let unsched = self.trackers.get(st.index).and_then(|t| {
            t.unschedulable()
                .map(|(p, m)| (p.to_string(), m.to_string()))
        });
        match (&unsched, &st.unschedulable_since) {
            (Some((pod, _)), None) => st.unschedulable_since = Some((pod.clone(), now)),
            (None, Some(_)) => st.unschedulable_since = None,
            _ => {}
        }
        let deadline_msg = self
            .deployments
            .get(&leg.workload)
            .and_then(progress_deadline_exceeded);
        let stalled_for = st
            .unschedulable_since
            .as_ref()
            .map(|(_, t)| now.saturating_duration_since(*t));
        let stall = match (stalled_for, unsched, deadline_msg) {
            (Some(d), Some((pod, msg)), _) if d >= wall(self.opts, self.opts.stall_after) => {
                Some((Some(pod), msg))
            }
            (_, _, Some(msg)) => Some((None, msg)),
            _ => None,
        };
        let Some((pod, message)) = stall.filter(|_| !st.stall_reported) else {
            return Ok(None);
        };
        st.stall_reported = true;
        self.report_stall(&leg.name, pod, message, now).await;
        if self.opts.on_stall == OnStall::Abort {
            self.abort_leg(st.index, now).await?;
            return Ok(Some(Outcome::Aborted));
        }
        self.out.event(
            &leg.name,
            "waiting (--on-stall wait): the old pods keep serving; Ctrl-C to stop",
            now,
        );
        Ok(None)
    }

    /// A trigger field put back by another writer: say who and when, undo
    /// the rest of the leg's change as an abort does (the old pods keep
    /// serving), and stop before any further leg.
    async fn check_revert(
        &mut self,
        index: usize,
        now: Instant,
    ) -> Result<Option<Outcome>, RolloutError> {
        let Some(revert) = self.revert.found.take() else {
            return Ok(None);
        };
        let leg = self.legs[index].name.clone();
        let text = format!(
            "REVERTED: {}; stopping: no further leg",
            revert.describe(self.opts.time_scale)
        );
        self.out.event(&leg, &text, now);
        self.auditor.step(marker(&leg, "reverted", None, now));
        self.abort_leg(index, now).await?;
        self.out.note(
            "The change was reverted by another writer: commit it to Git (or suspend the GitOps sync), then rerun.",
        );
        Ok(Some(Outcome::Reverted))
    }

    /// Say so when the Deployment controller has not caught up with the
    /// leg's Deployment for a while (kube-controller-manager down: nothing
    /// rolls, and no stall or deadline would ever be written), and when it
    /// is back; the quiet time does not count toward `--step-timeout`.
    fn check_controller(&mut self, st: &mut LegWatch, now: Instant) {
        let leg = &self.legs[st.index];
        let Some(tracker) = self.trackers.get(st.index).filter(|t| !t.relisting()) else {
            return;
        };
        let Some(d) = self.deployments.get(&leg.workload) else {
            return;
        };
        let lag = controller::lag(d, tracker.ready_total());
        let name = format!("{}/{}", self.api.conn.namespace, leg.workload);
        match st.controller.observe(&name, lag, now) {
            Some(Verdict::Absent(text)) => self.out.event(&leg.name, &text, now),
            Some(Verdict::Back(text)) => {
                self.out.event(&leg.name, &text, now);
                st.last_progress = now;
            }
            None => {}
        }
    }

    async fn report_stall(
        &mut self,
        leg: &str,
        pod: Option<String>,
        message: String,
        now: Instant,
    ) {
        let quoted = match &pod {
            Some(p) => {
                let conn = self.api.conn;
                failed_scheduling_event(&conn.client, &conn.namespace, p)
                    .await
                    .unwrap_or(message)
            }
            None => message,
        };
        let stall = Stall {
            pod: pod.clone(),
            message: quoted,
            after: self.opts.stall_after,
        };
        self.out.stall(leg, &stall, now);
        self.auditor
            .step(marker(leg, "stalled", pod.map(|p| (p, None)), now));
    }

    /// Put the leg's previous template back so its old pods keep serving,
    /// then wait (bounded) until its replacement pods are gone.
    /// Undo the leg's change, retrying through a partition (a transient
    /// error: the API server does not answer) until it is done; the cluster's
    /// state is unknown meanwhile and the output says so. Ctrl-C stops
    /// retrying (the rerun with `--abort` finishes the undo).
    async fn undo_until_answered(&mut self, leg: &str) -> Result<(), RolloutError> {
        let mut backoff = infera_cluster::watch_backoff();
        loop {
            match undo_leg(&self.api, &mut self.record, self.is_idep).await {
                Err(RolloutError::Cluster(e)) if !e.is_fatal() => {
                    let text = format!(
                        "abort: the API server does not answer ({e}); the cluster's state is unknown; retrying"
                    );
                    self.out.event(leg, &text, Instant::now());
                    let wait = backoff.next().unwrap_or(Duration::from_secs(5));
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = self.interrupt.as_mut() => {
                            self.out.event(leg, "INTERRUPTED while aborting: the undo was not applied; rerun with --abort", Instant::now());
                            return Err(RolloutError::Cluster(e));
                        }
                    }
                }
                other => return other,
            }
        }
    }

    async fn abort_leg(&mut self, index: usize, now: Instant) -> Result<(), RolloutError> {
        let leg = self.legs[index].name.clone();
        self.out.event(
            &leg,
            "aborting: restoring the previous pod template on the target so the old pods keep serving",
            now,
        );
        self.revert.disarm();
        self.undo_until_answered(&leg).await?;
        self.auditor
            .step(marker(&leg, "aborted", None, Instant::now()));
        let bound = wall(self.opts, self.opts.step_timeout);
        let deadline = Instant::now() + bound.min(Duration::from_secs(60));
        loop {
            let surge_left = self
                .trackers
                .get(index)
                .is_some_and(|t| t.pods().any(|p| p.new));
            if !surge_left {
                return Ok(());
            }
            tokio::select! {
                ev = self.events.next() => match ev {
                    Some(w) => { self.handle(w, Some(index))?; }
                    None => return Ok(()),
                },
                _ = tokio::time::sleep_until(deadline.into()) => return Ok(()),
            }
        }
    }

    /// The leg is complete: record it, and between legs ask to go on
    /// (`--pause-between legs`). `false`: stopped between legs.
    async fn finish_leg(&mut self, index: usize) -> Result<bool, RolloutError> {
        let now = Instant::now();
        let leg = self.legs[index].name.clone();
        self.revert.disarm();
        self.record.done.push(leg.clone());
        self.record.current = None;
        let rec = self.record.clone();
        self.api.patch_with(|_| Ok(rec.annotation_patch()?)).await?;
        self.auditor.step(marker(&leg, "leg-complete", None, now));
        let registers = self.trackers.get(index).is_some_and(LegTracker::registers);
        self.out.event(
            &leg,
            if registers {
                "leg complete: every replacement Ready and routable, every old pod gone"
            } else {
                "leg complete: every replacement Ready, every old pod gone"
            },
            now,
        );
        self.out.leg_done(&leg, "done");
        let more = self
            .legs
            .iter()
            .skip(index + 1)
            .any(|l| !self.record.done.contains(&l.name));
        if !(more && self.opts.pause_between == PauseBetween::Legs && !self.opts.yes) {
            return Ok(true);
        }
        match self.out.ask(&Question::NextLeg) {
            Some(true) => Ok(true),
            Some(false) => {
                self.out
                    .note("Stopped between legs. Rerun the same command to go on.");
                Ok(false)
            }
            None => {
                self.out.event(
                    &leg,
                    "--pause-between legs: no terminal to confirm on; going on (use --yes to silence this)",
                    now,
                );
                Ok(true)
            }
        }
    }

    /// Apply one watch event everywhere; returns how many steps it produced
    /// on the current leg.
    fn handle(&mut self, w: Watched, current: Option<usize>) -> Result<usize, RolloutError> {
        let now = Instant::now();
        match w {
            Watched::Pod(Ok(ev)) => {
                let blind = !self.auditor.is_current();
                self.auditor.apply(&ev, now);
                let clock = *self.auditor.server_clock();
                let mut produced = 0;
                for (i, t) in self.trackers.iter_mut().enumerate() {
                    for obs in t.apply(&ev) {
                        // Pods of a leg not yet triggered cannot be
                        // replacements; only the current leg's steps are
                        // reported and recorded.
                        if Some(i) != current {
                            continue;
                        }
                        produced += 1;
                        // A step that arrived late (blind, or a replay) is
                        // timed by the server's own timestamp.
                        let at = event_pod(&ev, &obs.pod)
                            .and_then(|p| step_time(obs.kind, p))
                            .map_or(now, |ts| match clock.when(Some(ts), now, blind) {
                                Timed::Server(at) | Timed::Window(at, _) => at,
                                Timed::Arrival(at) => at,
                                Timed::Unknown => now,
                            });
                        self.out.step(&t.leg, &obs, at);
                        let pod = Some((obs.pod.clone(), obs.node.clone()));
                        self.auditor
                            .step(marker(&t.leg, obs.kind.as_str(), pod, at));
                        self.steps.push((t.leg.clone(), obs, at));
                    }
                }
                Ok(produced)
            }
            Watched::Deployment(Ok(ev)) => {
                self.deployments.apply(&ev, name_key, |d| Some(d.clone()));
                if let Event::Apply(d) | Event::InitApply(d) = &ev
                    && !self.is_idep
                    && d.metadata.name.as_deref() == Some(self.req.target.name.as_str())
                {
                    let obj = serde_json::to_value(d).unwrap_or_default();
                    self.revert.observe(&obj, now);
                }
                Ok(0)
            }
            Watched::Target(Ok(Event::Apply(obj) | Event::InitApply(obj))) => {
                let obj = serde_json::to_value(&obj).unwrap_or_default();
                self.revert.observe(&obj, now);
                Ok(0)
            }
            Watched::Target(Ok(_)) => Ok(0),
            Watched::Beat(beat) => {
                if let Some(answer) = &beat.answered
                    && let Some(date) = answer.date
                {
                    self.skew.observe(beat.sent_wall, answer.at_wall, date);
                    self.auditor.set_skew(self.skew);
                }
                self.auditor.beat(&beat, now);
                if self.auditor.take_resync() {
                    // The old streams may stay silent after a partition
                    // while new requests succeed: watch afresh.
                    tracing::info!(target: infera_cluster::trace::target::ROLLOUT_DRIVER, "the API server answers again: watching afresh (a re-list)");
                    self.events = watch_streams(self.api.conn, self.req, &self.legs);
                }
                Ok(0)
            }
            Watched::Pod(Err(e)) => self.watch_error(&e, "pods"),
            Watched::Deployment(Err(e)) => self.watch_error(&e, "deployments.apps"),
            Watched::Target(Err(e)) => self.watch_error(&e, self.api.resource()),
        }
    }

    /// A watch error: fatal ones (403, 401, …) stop the rollout naming the
    /// resource whose watch failed; the rest re-list with backoff.
    fn watch_error(
        &mut self,
        e: &kube::runtime::watcher::Error,
        resource: &str,
    ) -> Result<usize, RolloutError> {
        let conn = self.api.conn;
        let err = ClusterError::from_watcher(e, &conn.url, resource, Some(&conn.namespace));
        if err.is_fatal() {
            return Err(err.into());
        }
        tracing::info!(target: infera_cluster::trace::target::ROLLOUT_DRIVER, "watch restart: {err}; re-listing with backoff");
        // Only the pod watch is the audit's evidence.
        if resource == "pods" {
            self.auditor.watch_error(Instant::now(), &err.to_string());
        }
        if !self.warned {
            self.warned = true;
            self.out.note(&format!(
                "note: watch interrupted ({err}); re-listing with backoff"
            ));
        }
        Ok(0)
    }

    /// Where every leg stands, and how to resume or abort.
    fn print_state(&mut self) {
        for t in &self.trackers {
            let new = t.pods().filter(|p| p.new).count();
            self.out.note(&format!(
                "  leg {:<10} ready {} (replacements Ready {}, replacements {}, old pods left {})",
                t.leg,
                t.ready_total(),
                t.new_ready(),
                new,
                t.old_remaining()
            ));
        }
        self.out
            .note(&format!("  in flight: {}", self.record.describe()));
        self.out.note("  The trigger stays on the target: a surge-first workload keeps its old pod serving until the replacement is Ready.");
        self.out
            .note(&format!("  Resume: {}", self.opts.command_line));
        self.out
            .note(&format!("  Abort:  {} --abort", self.opts.command_line));
    }
}

/// A reported duration as wall time.
/// The pod named `name` in a watch event, if it carries it.
fn event_pod<'e>(ev: &'e Event<Pod>, name: &str) -> Option<&'e Pod> {
    match ev {
        Event::Apply(p) | Event::Delete(p) | Event::InitApply(p) => {
            (p.metadata.name.as_deref() == Some(name)).then_some(p)
        }
        Event::Init | Event::InitDone => None,
    }
}

/// The server's own time of a step seen on a pod, where it has one.
fn step_time(kind: StepKind, pod: &Pod) -> Option<jiff::Timestamp> {
    use infera_model::pod as facts;
    let condition = |type_: &str| {
        pod.status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == type_)?
            .last_transition_time
            .as_ref()
            .map(|t| t.0)
    };
    match kind {
        StepKind::SurgeCreated => facts::created_at(pod),
        StepKind::Scheduled => condition("PodScheduled"),
        StepKind::WeightsLoading => facts::running_since(pod),
        StepKind::Ready | StepKind::NotReadyAgain => condition("Ready"),
        StepKind::Routable => facts::registered_by(pod),
        StepKind::OldTerminating => facts::deletion_requested_at(pod),
        _ => None,
    }
}

fn wall(opts: &Options, d: Duration) -> Duration {
    Duration::from_secs_f64(d.as_secs_f64() / opts.time_scale.max(1e-9))
}

/// A step for the Auditor's report; `pod`: (name, node).
fn marker(leg: &str, kind: &str, pod: Option<(String, Option<String>)>, at: Instant) -> Step {
    let (pod, node) = match pod {
        Some((p, n)) => (Some(p), n),
        None => (None, None),
    };
    Step {
        service: leg.to_string(),
        kind: kind.into(),
        pod,
        node,
        at,
    }
}

fn progress_deadline_exceeded(d: &Deployment) -> Option<String> {
    match infera_cluster::deployment_progress(d) {
        infera_cluster::DeploymentProgress::DeadlineExceeded(m) => Some(m),
        _ => None,
    }
}

fn describe_change(change: &Change, is_idep: bool, leg: &str) -> String {
    let mut parts = Vec::new();
    if let Some(at) = &change.restart_at {
        if is_idep {
            parts.push(format!(
                "services.{leg}.podLabels[\"{}\"]={at}",
                trigger::RESTARTED_AT_LABEL
            ));
        } else {
            parts.push(format!(
                "template annotation {}={at}",
                trigger::KUBECTL_RESTARTED_AT
            ));
        }
    }
    if let Some(image) = &change.image {
        parts.push(format!("image {image}"));
    }
    for e in &change.env {
        parts.push(format!("env {}={}", e.name, e.value));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_description_names_the_cr_field() {
        let c = Change {
            restart_at: Some("T".into()),
            image: None,
            env: vec![],
        };
        assert_eq!(
            describe_change(&c, true, "decode"),
            "services.decode.podLabels[\"infera.amd.com/restarted-at\"]=T"
        );
    }
}
