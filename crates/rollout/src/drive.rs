//! Driving a rollout: trigger a leg, watch its pods step by step, detect a
//! stall, abort by undoing the trigger, resume after an interruption.
//!
//! [`execute_with`] reads the target, resumes or refuses an in-flight
//! record (`prepare.rs`), builds the plan and asks the [`Reporter`] whether
//! to go on; then a [`Driver`] holds the state of the drive and has one
//! method per phase: `trigger` (or `resume_leg`), `watch_leg` until the leg
//! is complete, `abort_leg`, `finish_leg`. What to do while a leg is
//! watched (blind, done, pause, stall, revert, the controller, the step
//! timeout, Ctrl-C) is decided by the pure leg monitor (`leg_monitor.rs`);
//! the Driver makes the requests, runs the watches and reports, and
//! `drive/watching.rs` applies what the watches deliver.
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

mod watching;
mod writes;

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::apps::v1::Deployment;
use serde_json::Value;

use super::abort::abort_in_flight;
use super::api::TargetApi;
use super::controller::{self, Verdict};
use super::gitops;
use super::leg_monitor::{Decision, Input, LegMonitor, Policy, Seen};
use super::leg_tracker::{LegTracker, Observation};
use super::legs::{Leg, preflight};
use super::options::{Options, Request, RolloutError, RolloutOutcome};
use super::plan::Plan;
use super::prepare::{Gate, Prepared, gate, prepare, refuse_operator_managed};
use super::record::InFlight;
use super::reporter::{Clock, Question, Reporter, Silent, human_duration};
use super::revert::RevertWatch;
use super::target::TargetKind;
use super::trigger::Change;
use super::watch::{Probes, Watched, watch_streams};
use infera_audit::exit::Exit;
use infera_audit::{Auditor, Outcome, Step};
use infera_cluster::reflect::Reflector;
use infera_cluster::{ClusterError, Connection};

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

/// What [`Driver::new`] starts from.
struct Setup<'a> {
    api: TargetApi<'a>,
    req: &'a Request,
    opts: &'a Options,
    live: Value,
    pause_pods: bool,
    prepared: Prepared,
}

/// Where a leg's watch goes after an event or a decision.
enum Next {
    Go,
    LegDone,
    Stop(Outcome),
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
        // A resumed roll's first run may have taken a role below: only a
        // fresh one begins before any change.
        let auditor = match prepared.resumed {
            true => auditor,
            false => auditor.with_activity("roll"),
        };
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

    fn policy(&self) -> Policy {
        Policy {
            step_timeout: wall(self.opts, self.opts.step_timeout),
            stall_after: wall(self.opts, self.opts.stall_after),
            on_stall: self.opts.on_stall,
            pause_pods: self.pause_pods,
        }
    }

    /// Watch leg `index` until it is complete (`None`) or the drive stops
    /// (`Some(outcome)`): after every event, answer and tick, show the leg
    /// to its monitor and do what it decides until it says wait.
    async fn watch_leg(&mut self, index: usize) -> Result<Option<Outcome>, RolloutError> {
        let workload = format!("{}/{}", self.api.conn.namespace, self.legs[index].workload);
        let mut monitor = LegMonitor::new(self.policy(), workload, Instant::now());
        loop {
            let seen = self.look(index, Instant::now());
            let mut next = Next::Go;
            while let Next::Go = next {
                match monitor.decide(Input::Look(&seen)) {
                    Decision::Wait => break,
                    decision => next = self.act(index, &mut monitor, decision, seen.now).await?,
                }
            }
            if let Next::Go = next {
                next = self.wait_event(index, &mut monitor).await?;
            }
            match next {
                Next::Go => {}
                Next::LegDone => return Ok(None),
                Next::Stop(outcome) => return Ok(Some(outcome)),
            }
        }
    }

    /// Leg `index` as the watches show it at `now`.
    fn look(&self, index: usize, now: Instant) -> Seen {
        let leg = &self.legs[index];
        let replicas = leg.replicas as usize;
        let tracker = self.trackers.get(index);
        let deployment = self.deployments.get(&leg.workload);
        let blind = (!self.auditor.is_current()).then(|| {
            (self.auditor.blind_reason())
                .unwrap_or("the watch is not current")
                .to_string()
        });
        let controller = match (tracker.filter(|t| !t.relisting()), deployment) {
            (Some(t), Some(d)) => Some(controller::lag(d, t.ready_total())),
            _ => None,
        };
        Seen {
            now,
            blind,
            complete: tracker.is_some_and(|t| t.complete(replicas)),
            replicas: leg.replicas,
            created: tracker.map_or(0, LegTracker::new_live),
            replaced: tracker.map_or(0, |t| t.new_ready().min(replicas)),
            unschedulable: (tracker.and_then(LegTracker::unschedulable))
                .map(|(pod, message)| (pod.to_string(), message.to_string())),
            deadline: deployment.and_then(progress_deadline_exceeded),
            reverted: self.revert.found.clone(),
            controller,
        }
    }

    /// Do what the leg monitor decided for leg `index`.
    async fn act(
        &mut self,
        index: usize,
        monitor: &mut LegMonitor,
        decision: Decision,
        now: Instant,
    ) -> Result<Next, RolloutError> {
        let leg = self.legs[index].name.clone();
        match decision {
            Decision::Wait => {}
            Decision::Blind(why) => {
                let text =
                    format!("BLIND: {why}; taking no step until the watches are current again");
                self.out.event(&leg, &text, now);
            }
            Decision::Sighted(blind) => {
                let text = format!(
                    "watches current again after {:.1}s blind; resuming",
                    blind.as_secs_f64() * self.opts.time_scale
                );
                self.out.event(&leg, &text, now);
            }
            Decision::LegDone => return Ok(Next::LegDone),
            Decision::Pause { created, of } => {
                // Hold the Deployment as soon as a replacement exists, so
                // the controller neither retires an old pod nor starts the
                // next replacement.
                self.set_paused(true).await?;
                let text = format!(
                    "paused (spec.paused=true) while replacement {created} of {of} comes up"
                );
                self.out.event(&leg, &text, now);
            }
            Decision::NextPod { replaced, of, ask } => {
                return self
                    .next_pod(&leg, Question::NextPod { replaced, of }, ask, monitor)
                    .await;
            }
            Decision::Stall {
                pod,
                message,
                abort,
            } => {
                return self.stalled(index, pod, message, abort, now).await;
            }
            Decision::Revert(revert) => return self.reverted(index, &revert, now).await,
            Decision::Controller(Verdict::Absent(text) | Verdict::Back(text)) => {
                self.out.event(&leg, &text, now);
            }
            Decision::Timeout => {
                let text = format!(
                    "TIMEOUT: no step for {} (--step-timeout); stopping without touching anything that serves",
                    human_duration(self.opts.step_timeout)
                );
                self.out.event(&leg, &text, now);
                self.print_state();
                return Ok(Next::Stop(Outcome::Timeout));
            }
            Decision::Interrupted => {
                self.interrupted(&leg);
                return Ok(Next::Stop(Outcome::Interrupted));
            }
        }
        Ok(Next::Go)
    }

    /// One event of the leg's watch, a `/ready` answer, a tick, or Ctrl-C.
    async fn wait_event(
        &mut self,
        index: usize,
        monitor: &mut LegMonitor,
    ) -> Result<Next, RolloutError> {
        tokio::select! {
            biased;
            _ = self.interrupt.as_mut() => {
                let decision = monitor.decide(Input::Interrupt);
                return self.act(index, monitor, decision, Instant::now()).await;
            }
            ev = self.events.next() => {
                // The watch stream never ends; if it did, stop driving.
                let Some(w) = ev else { return Ok(Next::Stop(Outcome::Complete)) };
                let before = self.steps.len();
                if self.handle(w, Some(index))? > 0 {
                    monitor.decide(Input::Progress(Instant::now()));
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
                    monitor.decide(Input::Progress(Instant::now()));
                }
            }
            _ = self.tick.tick() => self.on_tick(index),
        }
        Ok(Next::Go)
    }

    /// Ctrl-C while watching: say so, and where every leg stands.
    fn interrupted(&mut self, leg: &str) {
        self.out.event(
            leg,
            "INTERRUPTED: stopped driving; nothing that serves was touched",
            Instant::now(),
        );
        if let Some(why) = self.auditor.blind_reason() {
            let text = format!(
                "the cluster's state is unknown: the watches are not current ({why}); rerun the same command to resume once the API server answers"
            );
            self.out.event(leg, &text, Instant::now());
        }
        self.print_state();
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
