//! Driving a rollout: trigger a leg, watch its pods step by step, detect a
//! stall, abort by undoing the trigger, resume after an interruption.
//!
//! Watches: one pod watch (label selector of the target, shared with the
//! Auditor) and one Deployment watch in the namespace, both through
//! `kube::runtime::watcher` with backoff: a dropped watch, a 410 or an API
//! restart is recovered by a re-list, which the step tracker and the Auditor
//! both reconcile. No request is made per sample. The driver never deletes a
//! pod: the operator / Deployment controller does the replacing, and an
//! abort puts the old template back so the old pods keep serving.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event as K8sEvent, Node, Pod};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::Value;

use super::plan::{
    Capacity, LegPlan, LegStrategy, Plan, PlanFinding, deployment_strategy, order_legs,
    ready_means_registered, replicas_of, surge_capacity, verdict,
};
use super::progress::{Progress, human_duration};
use super::record::{InFlight, LegRecord, combine};
use super::target::{Target, TargetKind};
use super::tracker::{LegTracker, Observation, StepKind};
use super::trigger::{
    self, Change, Original, deployment_patch, deployment_undo_patch, idep_patch, idep_undo_patch,
};
use crate::audit::{Auditor, Outcome, Report, RoleSpec, Step};
use crate::cli::{OnStall, PauseBetween};
use crate::cluster::{ClusterError, Connection};
use crate::exit::Exit;

const DEPLOYMENT_LABEL: &str = "infera.amd.com/deployment";
const SERVICE_LABEL: &str = "infera.amd.com/service";
const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
const DEFAULT_READINESS_PORT: u16 = 30090;
static LIST: std::sync::LazyLock<ListParams> = std::sync::LazyLock::new(ListParams::default);

/// What to roll.
#[derive(Debug, Clone)]
pub struct Request {
    pub target: Target,
    /// `--service` (empty: every worker service).
    pub services: Vec<String>,
    /// `--order`.
    pub order: Vec<String>,
    /// `restart` or `set-image`.
    pub command: &'static str,
    pub image: Option<String>,
    pub env: Vec<trigger::EnvSetting>,
    /// `--surge` (plain Deployment).
    pub surge: bool,
}

impl Request {
    /// `infera rollout restart TARGET` of every worker service, nothing else
    /// changed.
    pub fn restart(target: Target) -> Request {
        Request {
            target,
            services: Vec::new(),
            order: Vec::new(),
            command: "restart",
            image: None,
            env: Vec::new(),
            surge: false,
        }
    }
}

/// How to roll it.
#[derive(Debug, Clone)]
pub struct Options {
    pub dry_run: bool,
    pub force: bool,
    pub yes: bool,
    pub abort: bool,
    pub pause_between: PauseBetween,
    /// In reported time.
    pub step_timeout: Duration,
    /// In reported time.
    pub stall_after: Duration,
    pub on_stall: OnStall,
    pub sample_interval: Duration,
    pub min_ready: u32,
    /// Reported seconds per wall second (1 on a real cluster, the sim speed).
    pub time_scale: f64,
    /// Label durations as simulated time.
    pub simulated: bool,
    /// Draw progress bars (a TTY without NO_COLOR).
    pub bars: bool,
    /// The command line to print for resume / abort hints.
    pub command_line: String,
}

/// How it went.
#[derive(Debug)]
pub struct RolloutOutcome {
    pub exit: Exit,
    pub plan: Option<Plan>,
    pub report: Option<Report>,
    /// Every step observed, in order, with the instant this process saw it.
    pub steps: Vec<(String, Observation, Instant)>,
}

#[derive(Debug, thiserror::Error)]
pub enum RolloutError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error(transparent)]
    Trigger(#[from] trigger::TriggerError),
    #[error(transparent)]
    Record(#[from] super::record::RecordError),
    #[error("{0}")]
    Usage(String),
}

/// The InferaDeployment API resource.
pub fn inferadeployment_resource() -> ApiResource {
    crate::audit::inferadeployment_resource()
}

fn deployment_resource() -> ApiResource {
    ApiResource::erase::<Deployment>(&())
}

/// Retry a request through transient failures (5xx, 429, a restarting API
/// server): the faults a rollout must ride out.
async fn retrying<T, F, Fut>(what: &str, mut f: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut delay = Duration::from_millis(50);
    let mut attempt = 0;
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) if attempt < 12 && transient(&e) => {
                attempt += 1;
                tracing_note(what, &e, attempt, delay);
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
            }
            Err(e) => return Err(e),
        }
    }
}

fn tracing_note(what: &str, e: &kube::Error, attempt: u32, delay: Duration) {
    tracing::info!(
        attempt,
        backoff_ms = delay.as_millis() as u64,
        "retrying {what} after a transient error: {}",
        crate::cluster::redact::kube_error(e)
    );
}

fn transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s.code == 429 || s.code >= 500,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

struct Ctx<'a> {
    conn: &'a Connection,
    target: &'a Target,
    api: Api<DynamicObject>,
}

impl Ctx<'_> {
    fn resource(&self) -> &'static str {
        match self.target.kind {
            TargetKind::InferaDeployment => "inferadeployments.infera.amd.com",
            TargetKind::Deployment => "deployments.apps",
        }
    }

    async fn get(&self) -> Result<Value, RolloutError> {
        let obj = retrying("get", || self.api.get(&self.target.name))
            .await
            .map_err(|e| self.conn.error(&e, "get", self.resource()))?;
        Ok(serde_json::to_value(obj).unwrap_or_default())
    }

    async fn patch(&self, patch: &Value) -> Result<Value, kube::Error> {
        let params = PatchParams::default();
        let merge = Patch::Merge(patch);
        let obj = retrying("patch", || {
            self.api.patch(&self.target.name, &params, &merge)
        })
        .await?;
        Ok(serde_json::to_value(obj).unwrap_or_default())
    }

    /// Re-read and re-build on 409 (a concurrent writer, e.g. the operator).
    async fn patch_with<F>(&self, mut build: F) -> Result<Value, RolloutError>
    where
        F: FnMut(&Value) -> Result<Value, RolloutError>,
    {
        let mut attempts = 0;
        loop {
            let live = self.get().await?;
            let patch = build(&live)?;
            match self.patch(&patch).await {
                Ok(v) => return Ok(v),
                Err(kube::Error::Api(s)) if s.code == 409 && attempts < 10 => attempts += 1,
                Err(e) => return Err(self.conn.error(&e, "patch", self.resource()).into()),
            }
        }
    }
}

/// A leg as the driver needs it.
#[derive(Debug, Clone)]
struct Leg {
    name: String,
    role: String,
    replicas: u32,
    selector: BTreeMap<String, String>,
    readiness_port: u16,
    workload: String,
}

fn readiness_port_of(template: &Value) -> u16 {
    let containers = template
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let main = trigger::main_container_index(&containers).and_then(|i| containers.get(i).cloned());
    let env_port = main
        .as_ref()
        .and_then(|c| c.get("env"))
        .and_then(Value::as_array)
        .and_then(|env| {
            env.iter()
                .find(|e| e.get("name").and_then(Value::as_str) == Some("INFERA_READINESS_PORT"))
                .and_then(|e| e.get("value").and_then(Value::as_str))
                // The worker parses with Python int(): whitespace and `_` allowed.
                .and_then(|v| v.trim().replace('_', "").parse::<u16>().ok())
        });
    env_port.unwrap_or(DEFAULT_READINESS_PORT)
}

/// `infera rollout` as a library call (used by the CLI, `infera demo` and tests).
pub async fn execute(
    conn: &Connection,
    req: Request,
    opts: Options,
    interrupt: impl Future<Output = ()>,
) -> Result<RolloutOutcome, RolloutError> {
    let ns = conn.namespace.clone();
    let client = conn.client.clone();
    let resource = match req.target.kind {
        TargetKind::InferaDeployment => inferadeployment_resource(),
        TargetKind::Deployment => deployment_resource(),
    };
    let ctx = Ctx {
        conn,
        target: &req.target,
        api: Api::namespaced_with(client.clone(), &ns, &resource),
    };
    let live = ctx.get().await?;
    let is_idep = req.target.kind == TargetKind::InferaDeployment;
    if !is_idep {
        let managed = live
            .pointer("/metadata/labels")
            .and_then(|l| l.get(MANAGED_BY_LABEL))
            .and_then(Value::as_str)
            == Some("infera-operator");
        if managed {
            let idep = live
                .pointer("/metadata/labels")
                .and_then(|l| l.get(DEPLOYMENT_LABEL))
                .and_then(Value::as_str)
                .unwrap_or("NAME");
            let svc = live
                .pointer("/metadata/labels")
                .and_then(|l| l.get(SERVICE_LABEL))
                .and_then(Value::as_str)
                .unwrap_or("SERVICE");
            return Err(RolloutError::Usage(format!(
                "{} is managed by the infera operator, which reverts any change to it within seconds; \
                 roll it through its InferaDeployment: `infera rollout restart idep/{idep} --service {svc}`",
                req.target
            )));
        }
    }

    // --- the in-flight record: resume, abort, or refuse ---------------------
    let record = InFlight::from_object(&live)?;
    if opts.abort {
        return abort_in_flight(&ctx, record, is_idep).await;
    }

    // --- legs ----------------------------------------------------------------
    let (roles, mut legs) = legs_of(conn, &req, &live).await?;
    let requested: Vec<String> = legs.iter().map(|l| l.name.clone()).collect();
    let now_ts = jiff::Timestamp::now();
    let mut change = Change {
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
    let mut resumed: Option<InFlight> = None;
    if let Some(rec) = record {
        let explicit: Vec<String> = if req.services.is_empty() {
            Vec::new()
        } else {
            requested.clone()
        };
        if !rec.same_request(req.command, &change, &explicit) {
            return Err(RolloutError::Usage(format!(
                "another rollout is in flight on {}: {}. Rerun that command to resume it, or add `--abort` to undo its current leg",
                req.target,
                rec.describe()
            )));
        }
        println!("Resuming the interrupted rollout: {}", rec.describe());

        change = rec.change.clone();
        let order = rec.legs.clone();
        legs.retain(|l| rec.legs.contains(&l.name));
        legs.sort_by_key(|l| order.iter().position(|o| o == &l.name));
        resumed = Some(rec);
    }
    let mut record = resumed.clone().unwrap_or_else(|| InFlight {
        command: req.command.to_string(),
        change: change.clone(),
        legs: legs.iter().map(|l| l.name.clone()).collect(),
        done: Vec::new(),
        current: None,
        started_at: trigger::annotation_timestamp(now_ts),
    });

    // --- preflight -------------------------------------------------------------
    let plan = preflight(conn, &req, &live, &legs, &roles, opts.min_ready).await?;
    plan.print();
    if opts.pause_between == PauseBetween::Pods && is_idep {
        return Err(RolloutError::Usage(
            "`--pause-between pods` works through `spec.paused`, which the infera operator reverts on its Deployments; \
             use `--pause-between legs` to stop between services"
                .into(),
        ));
    }
    if opts.dry_run {
        println!("Dry run: nothing was changed.");
        return Ok(RolloutOutcome {
            exit: Exit::Ok,
            plan: Some(plan),
            report: None,
            steps: Vec::new(),
        });
    }
    let mut pause_pods = opts.pause_between == PauseBetween::Pods && !opts.yes;
    if pause_pods && !std::io::stdin().is_terminal() {
        println!(
            "--pause-between pods: no terminal to confirm on; rolling without pausing (use --yes to silence this)"
        );
        pause_pods = false;
    }
    let blocking = !plan.blocking().is_empty();
    if blocking && !opts.force && resumed.is_none() {
        println!(
            "Stopping before any change: the preflight predicts a stall or a gap (see above). \
             Fix the finding, or rerun with `--force` to roll anyway and watch it happen."
        );
        return Ok(RolloutOutcome {
            exit: Exit::Stalled,
            plan: Some(plan),
            report: None,
            steps: Vec::new(),
        });
    }
    if blocking {
        println!("Proceeding despite the predicted stall/gap (--force).");
    }
    if !opts.yes
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
        && !confirm("Start the rollout?")
    {
        println!("Nothing was changed.");
        return Ok(RolloutOutcome {
            exit: Exit::Ok,
            plan: Some(plan),
            report: None,
            steps: Vec::new(),
        });
    }

    // --- watches -------------------------------------------------------------
    let selector = match req.target.kind {
        TargetKind::InferaDeployment => format!("{DEPLOYMENT_LABEL}={}", req.target.name),
        TargetKind::Deployment => crate::audit::selector_string(
            &legs.first().map(|l| l.selector.clone()).unwrap_or_default(),
        ),
    };
    let pods_api: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let deps_api: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let pod_stream = watcher::watcher(pods_api, watcher::Config::default().labels(&selector))
        .backoff(crate::cluster::watch_backoff())
        .map(Watched::Pod);
    let dep_stream = watcher::watcher(deps_api, watcher::Config::default())
        .backoff(crate::cluster::watch_backoff())
        .map(Watched::Deployment);
    let mut events = futures::stream::select(pod_stream.boxed(), dep_stream.boxed());

    let mut auditor = Auditor::new(
        roles.clone(),
        opts.min_ready,
        opts.sample_interval,
        opts.time_scale,
    )
    .with_target(req.target.to_string());
    let bar_legs: Vec<(String, u64)> = legs
        .iter()
        .map(|l| (l.name.clone(), u64::from(l.replicas)))
        .collect();
    let mut progress = Progress::new(&bar_legs, opts.time_scale, opts.simulated, opts.bars);
    let mut trackers: Vec<LegTracker> = legs
        .iter()
        .map(|l| LegTracker::new(l.name.clone(), l.selector.clone(), change.clone(), is_idep))
        .collect();
    let mut deployments: HashMap<String, Deployment> = HashMap::new();
    let mut steps: Vec<(String, Observation, Instant)> = Vec::new();
    let (proxy_tx, mut proxy_rx) =
        tokio::sync::mpsc::unbounded_channel::<(String, String, Result<(), String>)>();
    let mut proxy_next: HashMap<String, Instant> = HashMap::new();
    let to_wall =
        |d: Duration| Duration::from_secs_f64(d.as_secs_f64() / opts.time_scale.max(1e-9));
    let sample_every = auditor.sample_wall_interval();
    // How often a running replacement's /ready is asked through the proxy
    // until it answers: every 5 s (reported), at most twice a wall second.
    let proxy_poll = Duration::from_millis(500)
        .max(to_wall(Duration::from_secs(5)))
        .min(Duration::from_secs(5));
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(interrupt);
    let mut warned_watch = false;

    // Wait for the first complete pod list, so old pods are known before
    // the trigger (and the Auditor's numbers start from a full picture).
    let sync_deadline = Instant::now() + Duration::from_secs(30);
    while !auditor.synced() {
        tokio::select! {
            ev = events.next() => match ev {
                Some(w) => { handle_watched(w, &mut auditor, &mut trackers, &mut deployments, &mut progress, &mut steps, None, &mut warned_watch, conn)?; }
                None => break,
            },
            _ = tokio::time::sleep_until(sync_deadline.into()) => {
                return Err(RolloutError::Cluster(ClusterError::Request {
                    verb: "watch".into(), resource: "pods".into(), namespace: Some(ns.clone()),
                    message: "no complete pod list within 30 s".into(),
                }));
            }
            _ = &mut interrupt => {
                println!("Interrupted before anything changed.");
                return Ok(RolloutOutcome { exit: Exit::Interrupted, plan: Some(plan), report: None, steps });
            }
        }
    }

    // Sample 1 is the state at the first complete list; then every period
    // (as `infera audit` and the field check count them).
    let synced_at = Instant::now();
    auditor.sample(synced_at);
    let mut next_sample = synced_at + sample_every;
    let mut outcome = Outcome::Complete;
    'legs: for (leg_index, leg) in legs.iter().enumerate() {
        if record.done.contains(&leg.name) {
            continue;
        }
        let now = Instant::now();
        // --- trigger (unless resuming this very leg) ---------------------------
        let in_flight_here = record.current.as_ref().is_some_and(|c| c.leg == leg.name);
        if !in_flight_here {
            let mut leg_original = Original::default();
            let leg_name = leg.name.clone();
            let rec_base = record.clone();
            let change_ref = &change;
            ctx.patch_with(|live| {
                let (patch, original) = if is_idep {
                    idep_patch(live, &leg_name, change_ref)?
                } else {
                    deployment_patch(live, change_ref, req.surge)?
                };
                leg_original = original.clone();
                let mut rec = rec_base.clone();
                rec.current = Some(LegRecord {
                    leg: leg_name.clone(),
                    original,
                });
                Ok(combine(patch, &rec.annotation_patch()))
            })
            .await?;
            record.current = Some(LegRecord {
                leg: leg.name.clone(),
                original: leg_original,
            });
            progress.event(
                &leg.name,
                &format!(
                    "trigger applied: {}",
                    describe_change(&change, is_idep, &leg.name)
                ),
                now,
            );
        } else {
            progress.event(&leg.name, "resuming: trigger already applied", now);
            if !is_idep && live.pointer("/spec/paused").and_then(Value::as_bool) == Some(true) {
                // Stopped between pods (`--pause-between pods`): go on.
                ctx.patch_with(|_| Ok(serde_json::json!({"spec": {"paused": false}})))
                    .await?;
                progress.event(&leg.name, "unpaused (it was stopped between pods)", now);
            }
        }
        auditor.step(Step {
            service: leg.name.clone(),
            kind: "trigger".into(),
            pod: None,
            node: None,
            at: now,
        });
        progress.activity(&leg.name, "waiting for the replacement pod", now);

        let mut paused = false;
        let mut paused_for = 0usize;
        let mut last_progress = Instant::now();
        let mut unschedulable_since: Option<(String, Instant)> = None;
        let mut stall_reported = false;
        loop {
            let now = Instant::now();
            if let Some(tracker) = trackers.get(leg_index)
                && tracker.complete(leg.replicas as usize)
            {
                break;
            }
            // --pause-between pods (plain Deployment): hold the Deployment
            // (`spec.paused`) as soon as a replacement exists, so the
            // controller neither retires an old pod nor starts the next
            // replacement; once it is Ready, ask, then let it go on.
            let (created, replaced) = trackers
                .get(leg_index)
                .map(|t| (t.new_live(), t.new_ready().min(leg.replicas as usize)))
                .unwrap_or((0, 0));
            if pause_pods && !paused && created > replaced && created > paused_for {
                ctx.patch_with(|_| Ok(serde_json::json!({"spec": {"paused": true}})))
                    .await?;
                paused = true;
                paused_for = created;
                progress.event(
                    &leg.name,
                    &format!(
                        "paused (spec.paused=true) while replacement {created} of {} comes up",
                        leg.replicas
                    ),
                    now,
                );
            }
            if pause_pods && paused && replaced >= paused_for {
                if replaced < leg.replicas as usize
                    && !progress.suspend(|| {
                        confirm(&format!(
                            "{replaced} of {} pods replaced. Go on with the next pod?",
                            leg.replicas
                        ))
                    })
                {
                    progress.event(
                        &leg.name,
                        "stopped between pods: the Deployment stays paused and its Ready pods keep serving; rerun the same command to go on, or add --abort to roll back",
                        Instant::now(),
                    );
                    outcome = Outcome::Interrupted;
                    break 'legs;
                }
                ctx.patch_with(|_| Ok(serde_json::json!({"spec": {"paused": false}})))
                    .await?;
                paused = false;
                progress.event(&leg.name, "unpaused (spec.paused=false)", Instant::now());
                last_progress = Instant::now();
            }
            // Stall: the surge pod Unschedulable for --stall-after.
            let unsched = trackers.get(leg_index).and_then(|t| {
                t.unschedulable()
                    .map(|(p, m)| (p.to_string(), m.to_string()))
            });
            match (&unsched, &unschedulable_since) {
                (Some((pod, _)), None) => unschedulable_since = Some((pod.clone(), now)),
                (None, Some(_)) => unschedulable_since = None,
                _ => {}
            }
            let deadline_msg = deployments
                .get(&leg.workload)
                .and_then(progress_deadline_exceeded);
            let stalled_for = unschedulable_since
                .as_ref()
                .map(|(_, t)| now.saturating_duration_since(*t));
            let stall = match (stalled_for, &unsched, &deadline_msg) {
                (Some(d), Some((pod, msg)), _) if d >= to_wall(opts.stall_after) => {
                    Some((Some(pod.clone()), msg.clone()))
                }
                (_, _, Some(msg)) => Some((None, msg.clone())),
                _ => None,
            };
            if let Some((pod, message)) = stall
                && !stall_reported
            {
                stall_reported = true;
                let quoted = match &pod {
                    Some(p) => failed_scheduling_event(&client, &ns, p)
                        .await
                        .unwrap_or(message.clone()),
                    None => message.clone(),
                };
                progress.event(
                    &leg.name,
                    &format!(
                        "STALLED: {} for {}: {quoted}",
                        pod.as_deref()
                            .map(|p| format!("surge pod {p} unschedulable"))
                            .unwrap_or_else(|| "progress deadline exceeded".into()),
                        human_duration(opts.stall_after),
                    ),
                    now,
                );
                auditor.step(Step {
                    service: leg.name.clone(),
                    kind: "stalled".into(),
                    pod: pod.clone(),
                    node: None,
                    at: now,
                });
                if opts.on_stall == OnStall::Abort {
                    progress.event(&leg.name, "aborting: restoring the previous pod template on the target so the old pods keep serving", now);
                    undo_leg(&ctx, &mut record, is_idep).await?;
                    auditor.step(Step {
                        service: leg.name.clone(),
                        kind: "aborted".into(),
                        pod: None,
                        node: None,
                        at: Instant::now(),
                    });
                    wait_surge_gone(
                        &mut events,
                        &mut auditor,
                        &mut trackers,
                        leg_index,
                        &mut deployments,
                        &mut progress,
                        &mut steps,
                        &mut warned_watch,
                        conn,
                        to_wall(opts.step_timeout),
                    )
                    .await?;
                    outcome = Outcome::Aborted;
                    break 'legs;
                }
                progress.event(
                    &leg.name,
                    "waiting (--on-stall wait): the old pods keep serving; Ctrl-C to stop",
                    now,
                );
            }
            if now.saturating_duration_since(last_progress) >= to_wall(opts.step_timeout)
                && !(stall_reported && opts.on_stall == OnStall::Wait)
            {
                progress.event(&leg.name, &format!("TIMEOUT: no step for {} (--step-timeout); stopping without touching anything that serves", human_duration(opts.step_timeout)), now);
                print_state(&progress, &trackers, &record, &opts);
                outcome = Outcome::Timeout;
                break 'legs;
            }
            tokio::select! {
                biased;
                _ = &mut interrupt => {
                    progress.event(&leg.name, "INTERRUPTED: stopped driving; nothing that serves was touched", Instant::now());
                    print_state(&progress, &trackers, &record, &opts);
                    outcome = Outcome::Interrupted;
                    break 'legs;
                }
                ev = events.next() => {
                    let Some(w) = ev else { break 'legs };
                    let before = steps.len();
                    let n = handle_watched(w, &mut auditor, &mut trackers, &mut deployments, &mut progress, &mut steps, Some(leg_index), &mut warned_watch, conn)?;
                    if n > 0 { last_progress = Instant::now(); }
                    // A replacement just turned Ready or registered: ask its
                    // /ready through the proxy now rather than at the next poll.
                    for (_, obs, at) in &steps[before..] {
                        if matches!(obs.kind, StepKind::Ready | StepKind::Routable)
                            && trackers.get(leg_index).is_some_and(|t| !t.has_seen(&obs.pod, StepKind::ReadyViaProxy))
                        {
                            proxy_next.insert(obs.pod.clone(), *at + proxy_poll);
                            spawn_proxy_probe(conn.probe_client.clone(), ns.clone(), leg.name.clone(), obs.pod.clone(), leg.readiness_port, proxy_tx.clone());
                        }
                    }
                }
                res = proxy_rx.recv() => {
                    if let Some((leg_name, pod, result)) = res
                        && let Some(t) = trackers.iter_mut().find(|t| t.leg == leg_name) {
                            let ok = result.is_ok();
                            let detail = match result { Ok(()) => "200".to_string(), Err(e) => e };
                            if let Some(obs) = t.proxy_result(&pod, ok, detail) {
                                let now = Instant::now();
                                progress.step(&leg_name, &obs, now);
                                auditor.step(Step { service: leg_name.clone(), kind: obs.kind.as_str().into(), pod: Some(obs.pod.clone()), node: obs.node.clone(), at: now });
                                steps.push((leg_name.clone(), obs, now));
                                last_progress = now;
                            }
                            if ok { proxy_next.remove(&pod); }
                        }
                }
                _ = tick.tick() => {
                    let now = Instant::now();
                    progress.tick(now);
                    if now >= next_sample {
                        auditor.sample(now);
                        next_sample += sample_every;
                        if next_sample < now { next_sample = now + sample_every; }
                    }
                    if let Some(t) = trackers.get(leg_index) {
                        for pod in t.awaiting_proxy() {
                            let due = proxy_next.get(&pod).is_none_or(|d| now >= *d);
                            if due {
                                proxy_next.insert(pod.clone(), now + proxy_poll);
                                spawn_proxy_probe(conn.probe_client.clone(), ns.clone(), leg.name.clone(), pod, leg.readiness_port, proxy_tx.clone());
                            }
                        }
                    }
                }
            }
        }
        let now = Instant::now();
        record.done.push(leg.name.clone());
        record.current = None;
        let rec = record.clone();
        ctx.patch_with(|_| Ok(rec.annotation_patch())).await?;
        auditor.step(Step {
            service: leg.name.clone(),
            kind: "leg-complete".into(),
            pod: None,
            node: None,
            at: now,
        });
        progress.event(
            &leg.name,
            if trackers.get(leg_index).is_some_and(LegTracker::registers) {
                "leg complete: every replacement Ready and routable, every old pod gone"
            } else {
                "leg complete: every replacement Ready, every old pod gone"
            },
            now,
        );
        progress.leg_done(&leg.name, "done");
        let more = legs
            .iter()
            .skip(leg_index + 1)
            .any(|l| !record.done.contains(&l.name));
        if more && opts.pause_between == PauseBetween::Legs && !opts.yes {
            if std::io::stdin().is_terminal() {
                if !progress.suspend(|| confirm("Leg done. Go on with the next leg?")) {
                    println!("Stopped between legs. Rerun the same command to go on.");
                    outcome = Outcome::Interrupted;
                    break;
                }
            } else {
                progress.event(&leg.name, "--pause-between legs: no terminal to confirm on; going on (use --yes to silence this)", now);
            }
        }
    }
    let now = Instant::now();
    progress.finish();
    if outcome == Outcome::Complete || outcome == Outcome::Aborted {
        ctx.patch_with(|_| Ok(InFlight::removal_patch())).await?;
    }
    let report = auditor.finish(outcome, now);
    let exit = report.exit();
    Ok(RolloutOutcome {
        exit,
        plan: Some(plan),
        report: Some(report),
        steps,
    })
}

#[allow(clippy::large_enum_variant)] // short-lived, one at a time
enum Watched {
    Pod(Result<Event<Pod>, watcher::Error>),
    Deployment(Result<Event<Deployment>, watcher::Error>),
}

/// Apply one watch event everywhere; returns how many steps it produced
/// on the current leg.
#[allow(clippy::too_many_arguments)]
fn handle_watched(
    w: Watched,
    auditor: &mut Auditor,
    trackers: &mut [LegTracker],
    deployments: &mut HashMap<String, Deployment>,
    progress: &mut Progress,
    steps: &mut Vec<(String, Observation, Instant)>,
    current: Option<usize>,
    warned: &mut bool,
    conn: &Connection,
) -> Result<usize, RolloutError> {
    let now = Instant::now();
    match w {
        Watched::Pod(Ok(ev)) => {
            auditor.apply(&ev, now);
            let mut produced = 0;
            for (i, t) in trackers.iter_mut().enumerate() {
                for obs in t.apply(&ev) {
                    // Pods of a leg not yet triggered cannot be replacements;
                    // only the current leg's steps are printed and recorded.
                    if Some(i) != current {
                        continue;
                    }
                    produced += 1;
                    progress.step(&t.leg, &obs, now);
                    auditor.step(Step {
                        service: t.leg.clone(),
                        kind: obs.kind.as_str().into(),
                        pod: Some(obs.pod.clone()),
                        node: obs.node.clone(),
                        at: now,
                    });
                    steps.push((t.leg.clone(), obs, now));
                }
            }
            Ok(produced)
        }
        Watched::Deployment(Ok(ev)) => {
            match ev {
                Event::Apply(d) | Event::InitApply(d) => {
                    deployments.insert(d.metadata.name.clone().unwrap_or_default(), d);
                }
                Event::Delete(d) => {
                    deployments.remove(d.metadata.name.as_deref().unwrap_or_default());
                }
                Event::Init | Event::InitDone => {}
            }
            Ok(0)
        }
        Watched::Pod(Err(e)) | Watched::Deployment(Err(e)) => {
            let err = ClusterError::from_watcher(&e, &conn.url, "pods", Some(&conn.namespace));
            if err.is_fatal() {
                return Err(err.into());
            }
            tracing::info!("watch restart: {err}; re-listing with backoff");
            if !*warned {
                *warned = true;
                progress.line(&format!(
                    "note: watch interrupted ({err}); re-listing with backoff"
                ));
            }
            Ok(0)
        }
    }
}

fn progress_deadline_exceeded(d: &Deployment) -> Option<String> {
    match crate::cluster::deployment_progress(d) {
        crate::cluster::DeploymentProgress::DeadlineExceeded(m) => Some(m),
        _ => None,
    }
}

fn spawn_proxy_probe(
    client: kube::Client,
    ns: String,
    leg: String,
    pod: String,
    port: u16,
    tx: tokio::sync::mpsc::UnboundedSender<(String, String, Result<(), String>)>,
) {
    tokio::spawn(async move {
        let path = format!("/api/v1/namespaces/{ns}/pods/{pod}:{port}/proxy/ready");
        let result = match http::Request::get(path).body(Vec::new()) {
            Ok(request) => {
                match tokio::time::timeout(Duration::from_secs(10), client.request_text(request))
                    .await
                {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(kube::Error::Api(s))) => Err(format!(
                        "HTTP {} {}",
                        s.code,
                        s.message.lines().next().unwrap_or("")
                    )),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err("no answer within 10 s".into()),
                }
            }
            Err(e) => Err(e.to_string()),
        };
        let _ = tx.send((leg, pod, result));
    });
}

/// The latest FailedScheduling event message of `pod` (one list request, at
/// stall time only).
async fn failed_scheduling_event(client: &kube::Client, ns: &str, pod: &str) -> Option<String> {
    let api: Api<K8sEvent> = Api::namespaced(client.clone(), ns);
    let list = retrying("list events", || api.list(&LIST)).await.ok()?;
    list.items
        .into_iter()
        .filter(|e| {
            e.involved_object.name.as_deref() == Some(pod)
                && e.reason.as_deref() == Some("FailedScheduling")
        })
        .filter_map(|e| e.message)
        .next_back()
        .map(|m| format!("FailedScheduling: {m}"))
}

async fn undo_leg(ctx: &Ctx<'_>, record: &mut InFlight, is_idep: bool) -> Result<(), RolloutError> {
    let Some(current) = record.current.clone() else {
        return Ok(());
    };
    let mut rec = record.clone();
    rec.current = None;
    ctx.patch_with(|live| {
        let undo = if is_idep {
            idep_undo_patch(live, &current.leg, &current.original)?
        } else {
            deployment_undo_patch(live, &current.original)?
        };
        Ok(combine(undo, &rec.annotation_patch()))
    })
    .await?;
    record.current = None;
    Ok(())
}

/// After an abort: wait (bounded) until the leg's replacement pods are gone.
#[allow(clippy::too_many_arguments)]
async fn wait_surge_gone(
    events: &mut (impl futures::Stream<Item = Watched> + Unpin),
    auditor: &mut Auditor,
    trackers: &mut [LegTracker],
    leg_index: usize,
    deployments: &mut HashMap<String, Deployment>,
    progress: &mut Progress,
    steps: &mut Vec<(String, Observation, Instant)>,
    warned: &mut bool,
    conn: &Connection,
    bound: Duration,
) -> Result<(), RolloutError> {
    let deadline = Instant::now() + bound.min(Duration::from_secs(60));
    loop {
        let surge_left = trackers
            .get(leg_index)
            .is_some_and(|t| t.pods().any(|p| p.new));
        if !surge_left {
            return Ok(());
        }
        tokio::select! {
            ev = events.next() => match ev {
                Some(w) => { handle_watched(w, auditor, trackers, deployments, progress, steps, Some(leg_index), warned, conn)?; }
                None => return Ok(()),
            },
            _ = tokio::time::sleep_until(deadline.into()) => return Ok(()),
        }
    }
}

/// `--abort`: undo the current leg of an in-flight rollout.
async fn abort_in_flight(
    ctx: &Ctx<'_>,
    record: Option<InFlight>,
    is_idep: bool,
) -> Result<RolloutOutcome, RolloutError> {
    let Some(mut record) = record else {
        println!(
            "No rollout is in flight on {}: nothing to abort.",
            ctx.target
        );
        return Ok(RolloutOutcome {
            exit: Exit::Ok,
            plan: None,
            report: None,
            steps: Vec::new(),
        });
    };
    println!("Aborting: {}", record.describe());
    if let Some(current) = record.current.clone() {
        undo_leg(ctx, &mut record, is_idep).await?;
        println!(
            "Restored the previous template of leg `{}`: its old pods keep serving and the replacement goes.",
            current.leg
        );
    }
    ctx.patch_with(|_| Ok(InFlight::removal_patch())).await?;
    if !record.done.is_empty() {
        println!(
            "Legs already finished stay rolled: {}.",
            record.done.join(", ")
        );
    }
    Ok(RolloutOutcome {
        exit: Exit::Stalled,
        plan: None,
        report: None,
        steps: Vec::new(),
    })
}

fn print_state(progress: &Progress, trackers: &[LegTracker], record: &InFlight, opts: &Options) {
    for t in trackers {
        let new = t.pods().filter(|p| p.new).count();
        progress.line(&format!(
            "  leg {:<10} ready {} (replacements Ready {}, replacements {}, old pods left {})",
            t.leg,
            t.ready_total(),
            t.new_ready(),
            new,
            t.old_remaining()
        ));
    }
    progress.line(&format!("  in flight: {}", record.describe()));
    progress.line("  The trigger stays on the target: a surge-first workload keeps its old pod serving until the replacement is Ready.");
    progress.line(&format!("  Resume: {}", opts.command_line));
    progress.line(&format!("  Abort:  {} --abort", opts.command_line));
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

fn confirm(question: &str) -> bool {
    use std::io::Write;
    print!("{question} [y/N] ");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).is_ok() && matches!(line.trim(), "y" | "Y" | "yes")
}

/// Roles to audit and legs to roll.
async fn legs_of(
    conn: &Connection,
    req: &Request,
    live: &Value,
) -> Result<(Vec<RoleSpec>, Vec<Leg>), RolloutError> {
    let deps_api: Api<Deployment> = Api::namespaced(conn.client.clone(), &conn.namespace);
    match req.target.kind {
        TargetKind::InferaDeployment => {
            let roles = crate::audit::roles_from_inferadeployment(live)
                .map_err(|e| RolloutError::Usage(e.to_string()))?;
            let services = live
                .pointer("/spec/services")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let workers: Vec<(String, String)> = services
                .iter()
                .filter(|(_, s)| {
                    s.get("componentType")
                        .and_then(Value::as_str)
                        .unwrap_or("worker")
                        .eq_ignore_ascii_case("worker")
                })
                .map(|(n, s)| {
                    (
                        n.clone(),
                        s.get("role")
                            .and_then(Value::as_str)
                            .unwrap_or("mixed")
                            .to_ascii_lowercase(),
                    )
                })
                .collect();
            for s in req.services.iter().chain(req.order.iter()) {
                if !services.contains_key(s) {
                    return Err(trigger::TriggerError::NoSuchService {
                        service: s.clone(),
                        known: services.keys().cloned().collect::<Vec<_>>().join(", "),
                    }
                    .into());
                }
            }
            let chosen: Vec<(String, String)> = if req.services.is_empty() {
                workers
            } else {
                req.services
                    .iter()
                    .map(|s| {
                        let role = services
                            .get(s)
                            .and_then(|v| v.get("role"))
                            .and_then(Value::as_str)
                            .unwrap_or("mixed")
                            .to_ascii_lowercase();
                        (s.clone(), role)
                    })
                    .collect()
            };
            let names = order_legs(chosen.clone(), &req.order);
            let mut legs = Vec::new();
            for name in names {
                let role = chosen
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, r)| r.clone())
                    .unwrap_or_default();
                let svc = services.get(&name).cloned().unwrap_or_default();
                let workload = format!("{}-{name}", req.target.name);
                let dep = retrying("get deployment", || deps_api.get_opt(&workload))
                    .await
                    .map_err(|e| conn.error(&e, "get", "deployments.apps"))?;
                let template = dep
                    .as_ref()
                    .and_then(|d| serde_json::to_value(&d.spec.as_ref()?.template).ok())
                    .unwrap_or_default();
                legs.push(Leg {
                    name: name.clone(),
                    role,
                    replicas: svc
                        .get("replicas")
                        .and_then(Value::as_u64)
                        .and_then(|n| u32::try_from(n).ok())
                        .unwrap_or(1),
                    selector: BTreeMap::from([
                        (DEPLOYMENT_LABEL.to_string(), req.target.name.clone()),
                        (SERVICE_LABEL.to_string(), name.clone()),
                    ]),
                    readiness_port: readiness_port_of(&template),
                    workload,
                });
            }
            Ok((roles, legs))
        }
        TargetKind::Deployment => {
            let dep: Deployment = serde_json::from_value(live.clone()).map_err(|e| {
                RolloutError::Usage(format!(
                    "deploy/{} does not parse as a Deployment: {e}",
                    req.target.name
                ))
            })?;
            let (_, labels) = crate::audit::deployment_selector(&dep);
            let template = live.pointer("/spec/template").cloned().unwrap_or_default();
            let role = RoleSpec {
                role: req.target.name.clone(),
                services: Vec::new(),
                selector: labels.clone(),
            };
            Ok((
                vec![role],
                vec![Leg {
                    name: req.target.name.clone(),
                    role: req.target.name.clone(),
                    replicas: replicas_of(live),
                    selector: labels,
                    readiness_port: readiness_port_of(&template),
                    workload: req.target.name.clone(),
                }],
            ))
        }
    }
}

/// Build the plan from the live objects.
async fn preflight(
    conn: &Connection,
    req: &Request,
    live: &Value,
    legs: &[Leg],
    roles: &[RoleSpec],
    min_ready: u32,
) -> Result<Plan, RolloutError> {
    let ns = &conn.namespace;
    let deps_api: Api<Deployment> = Api::namespaced(conn.client.clone(), ns);
    let nodes_api: Api<Node> = Api::all(conn.client.clone());
    let nodes: Vec<Node> = match retrying("list nodes", || nodes_api.list(&LIST)).await {
        Ok(l) => l.items,
        Err(_) => Vec::new(),
    };
    let all_pods: Api<Pod> = Api::all(conn.client.clone());
    let pods: Option<Vec<Pod>> = match retrying("list pods", || all_pods.list(&LIST)).await {
        Ok(l) => Some(l.items),
        Err(_) => {
            let ns_pods: Api<Pod> = Api::namespaced(conn.client.clone(), ns);
            retrying("list pods", || ns_pods.list(&LIST))
                .await
                .ok()
                .map(|l| l.items)
        }
    };
    let mut deployments = Vec::new();
    let mut plan_legs = Vec::new();
    for leg in legs {
        let dep = retrying("get deployment", || deps_api.get_opt(&leg.workload))
            .await
            .map_err(|e| conn.error(&e, "get", "deployments.apps"))?;
        let dep_value = dep.as_ref().and_then(|d| serde_json::to_value(d).ok());
        if let Some(v) = &dep_value {
            deployments.push(v.clone());
        }
        let number_of_nodes = live
            .pointer(&format!("/spec/services/{}/numberOfNodes", leg.name))
            .and_then(Value::as_u64)
            .unwrap_or(1);
        let (strategy, why) = match (&dep_value, req.target.kind) {
            (_, TargetKind::InferaDeployment) if number_of_nodes > 1 => (
                LegStrategy::Lws { surge: 0, unavailable: 1 },
                "numberOfNodes > 1: a LeaderWorkerSet group with no readiness probe rolls one group down first".to_string(),
            ),
            (Some(v), TargetKind::Deployment) if req.surge => {
                let mut v = v.clone();
                v["spec"]["strategy"] = trigger::surge_strategy();
                (deployment_strategy(&v), "--surge sets maxSurge 1 / maxUnavailable 0 first".to_string())
            }
            (Some(v), _) => (deployment_strategy(v), String::new()),
            (None, _) => (LegStrategy::Rolling { surge: 0, unavailable: 1 }, format!("{} does not exist yet", leg.workload)),
        };
        let template = dep_value
            .as_ref()
            .and_then(|v| v.pointer("/spec/template").cloned())
            .unwrap_or_default();
        let capacity = if !strategy.surges() {
            Capacity::NotNeeded
        } else {
            match &pods {
                Some(pods) if !nodes.is_empty() => surge_capacity(&template, ns, &nodes, pods),
                _ => Capacity::Unknown("nodes or pods could not be listed".into()),
            }
        };
        plan_legs.push(LegPlan {
            leg: leg.name.clone(),
            role: leg.role.clone(),
            workload: format!("deploy/{}", leg.workload),
            replicas: leg.replicas,
            strategy,
            why,
            ready_means_registered: ready_means_registered(&template),
            capacity,
            findings: Vec::new(),
            verdict: super::plan::Verdict::Ok,
            readiness_port: Some(leg.readiness_port),
            selector: leg.selector.clone(),
        });
    }
    let mut other_findings = Vec::new();
    let mut lint_objects = vec![live.clone()];
    lint_objects.extend(deployments);
    for f in lint_findings(&lint_objects) {
        match plan_legs
            .iter_mut()
            .find(|l| f.1.as_deref() == Some(l.leg.as_str()))
        {
            Some(l) => l.findings.push(f.0),
            None => other_findings.push(f.0),
        }
    }
    // Replicas of the role's other services (not rolled at the same time).
    let services = live
        .pointer("/spec/services")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let snapshot = plan_legs.clone();
    for l in plan_legs.iter_mut() {
        let others: u32 = roles
            .iter()
            .filter(|r| r.role == l.role)
            .flat_map(|r| r.services.iter())
            .filter(|s| **s != l.leg)
            .map(|s| {
                services
                    .get(s)
                    .and_then(|v| v.get("replicas"))
                    .and_then(Value::as_u64)
                    .unwrap_or(1) as u32
            })
            .sum();
        l.verdict = verdict(l, others, min_ready);
    }
    let _ = snapshot;
    Ok(Plan {
        target: req.target.to_string(),
        namespace: ns.clone(),
        what: match (req.command, &req.image) {
            (_, Some(image)) => format!("set-image {image}"),
            (c, None) => c.to_string(),
        },
        legs: plan_legs,
        other_findings,
    })
}

/// Lint findings for the live objects, with the service they belong to.
fn lint_findings(objects: &[Value]) -> Vec<(PlanFinding, Option<String>)> {
    super::lint_bridge::lint(objects)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn readiness_port_follows_the_workers_parser() {
        let t = |v: &str| json!({"spec": {"containers": [{"name": "infera", "env": [{"name": "INFERA_READINESS_PORT", "value": v}]}]}});
        assert_eq!(readiness_port_of(&t("31000")), 31000);
        assert_eq!(readiness_port_of(&t(" 30_091")), 30091);
        assert_eq!(readiness_port_of(&json!({})), DEFAULT_READINESS_PORT);
    }

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
