//! The [`Auditor`]: exact, event-driven Ready/routable counts per role, plus
//! the periodic samples the field check takes.
//!
//! Routable follows the router (operator-semantics §5) for infera workers;
//! a pod that runs no infera worker has no registration and counts as
//! routable exactly when it is Ready ([`pod_is_serving`]).
//!
//! Everything here is synchronous and takes `now: Instant` explicitly, so the
//! arithmetic is tested with synthetic watcher events and synthetic instants
//! (no sleeping, no timing-dependent asserts). The watch loop that feeds it
//! from a cluster lives in [`super::session`].

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant, SystemTime};

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher::Event;

use infera_cluster::reflect::{Delta, Reflector, namespaced_key};

use super::report::{Outcome, Report, RoleReport, StepRecord};
use super::timeline::{Timeline, TimelinePoint};

/// The worker's registration annotation and the operator's labels
/// (operator-semantics §1, §5).
pub use infera_model::worker::{
    LABEL_DEPLOYMENT as DEPLOYMENT_LABEL, LABEL_SERVICE as SERVICE_LABEL, WORKER_INFO_ANNOTATION,
};

/// Points kept per role in the in-memory timeline before it is decimated.
const TIMELINE_CAP: usize = 4096;
/// Step markers kept (a rollout has a handful per pod; this bounds a runaway).
const STEPS_CAP: usize = 10_000;

/// One role of the audited target and how to recognise its pods.
///
/// A pod belongs to the role when every `selector` pair matches its labels
/// and — if `services` is non-empty and the pod carries the
/// `infera.amd.com/service` label — that label is one of `services`. A pod
/// matching several roles counts for the first one only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleSpec {
    /// `mixed`, `prefill`, `decode`, or a `--role` name.
    pub role: String,
    /// Services (InferaDeployment) or Deployment names that make up the role.
    pub services: Vec<String>,
    /// Equality label selector of the role's pods.
    pub selector: BTreeMap<String, String>,
}

impl RoleSpec {
    /// Whether `pod` belongs to this role (see the type's documentation).
    pub fn matches(&self, pod: &Pod) -> bool {
        let labels = pod.metadata.labels.as_ref();
        let label = |k: &str| labels.and_then(|l| l.get(k));
        if !self
            .selector
            .iter()
            .all(|(k, v)| label(k).is_some_and(|have| have == v))
        {
            return false;
        }
        match label(SERVICE_LABEL) {
            Some(service) if !self.services.is_empty() => {
                self.services.iter().any(|s| s == service)
            }
            _ => true,
        }
    }
}

/// Current counts of one role.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RoleCounts {
    pub role: String,
    /// Pods whose Ready condition is True and that are not terminating.
    pub ready: u32,
    /// Pods with the worker-info annotation, phase Running, not terminating.
    pub routable: u32,
}

/// A rollout step, recorded as a marker in the report and on the timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The service (leg) the step belongs to.
    pub service: String,
    /// What happened: `surge-created`, `scheduled`, `ready`, `routable`,
    /// `old-terminating`, `old-gone`, … (free text, chosen by the caller).
    pub kind: String,
    pub pod: Option<String>,
    pub node: Option<String>,
    /// When it happened (wall clock of this process).
    pub at: Instant,
}

/// Whether `pod` counts as Ready: condition Ready True and not terminating.
pub fn pod_is_ready(pod: &Pod) -> bool {
    if pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conds| {
            conds
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
}

/// Whether `pod` is routable (operator-semantics §5): the worker-info
/// annotation is present, `status.phase` is Running and there is no
/// `deletionTimestamp`.
pub fn pod_is_routable(pod: &Pod) -> bool {
    if pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let annotated = pod
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(WORKER_INFO_ANNOTATION));
    let running = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| p == "Running");
    annotated && running
}

/// Whether `pod` runs an infera worker, which registers with the router
/// (operator-semantics §5): a container whose command or args start
/// `infera.engine.*`, or the worker-info annotation already present.
pub fn pod_is_infera_worker(pod: &Pod) -> bool {
    let annotated = pod
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(WORKER_INFO_ANNOTATION));
    annotated
        || pod.spec.as_ref().is_some_and(|spec| {
            spec.containers.iter().any(|c| {
                c.command
                    .iter()
                    .flatten()
                    .chain(c.args.iter().flatten())
                    .any(|part| part.contains("infera.engine."))
            })
        })
}

/// Whether `pod` serves traffic as the router sees it: an infera worker
/// when it is routable ([`pod_is_routable`]); any other pod (no
/// registration exists for it) when it is Ready.
pub fn pod_is_serving(pod: &Pod) -> bool {
    if pod_is_infera_worker(pod) {
        pod_is_routable(pod)
    } else {
        pod.metadata.deletion_timestamp.is_none() && pod_is_ready(pod)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PodState {
    role: usize,
    ready: bool,
    routable: bool,
}

/// Exact statistics of one count (Ready or routable) of one role.
#[derive(Debug, Clone)]
struct CountStats {
    current: u32,
    min_exact: u32,
    min_sampled: Option<u32>,
    below_since: Option<Instant>,
    below_total: Duration,
}

impl CountStats {
    fn new() -> Self {
        CountStats {
            current: 0,
            min_exact: u32::MAX,
            min_sampled: None,
            below_since: None,
            below_total: Duration::ZERO,
        }
    }

    fn set(&mut self, value: u32, floor: u32, now: Instant) {
        self.current = value;
        self.min_exact = self.min_exact.min(value);
        if value < floor {
            self.below_since.get_or_insert(now);
        } else if let Some(since) = self.below_since.take() {
            self.below_total += now.saturating_duration_since(since);
        }
    }

    fn below_total_at(&self, now: Instant) -> Duration {
        self.below_total
            + self
                .below_since
                .map_or(Duration::ZERO, |s| now.saturating_duration_since(s))
    }
}

#[derive(Debug, Clone)]
struct RoleStats {
    spec: RoleSpec,
    ready: CountStats,
    routable: CountStats,
    /// Start of the current gap: either count below the floor.
    gap_since: Option<Instant>,
    longest_gap: Duration,
    timeline: Vec<TimelinePoint>,
}

impl RoleStats {
    fn update(&mut self, ready: u32, routable: u32, floor: u32, now: Instant, origin: Instant) {
        if ready == self.ready.current
            && routable == self.routable.current
            && !self.timeline.is_empty()
        {
            return;
        }
        self.ready.set(ready, floor, now);
        self.routable.set(routable, floor, now);
        let below = ready < floor || routable < floor;
        if below {
            self.gap_since.get_or_insert(now);
        } else if let Some(since) = self.gap_since.take() {
            self.longest_gap = self.longest_gap.max(now.saturating_duration_since(since));
        }
        self.timeline.push(TimelinePoint {
            at: now.saturating_duration_since(origin),
            ready,
            routable,
        });
        if self.timeline.len() >= TIMELINE_CAP {
            decimate_min(&mut self.timeline);
        }
    }

    fn longest_gap_at(&self, now: Instant) -> Duration {
        let open = self
            .gap_since
            .map_or(Duration::ZERO, |s| now.saturating_duration_since(s));
        self.longest_gap.max(open)
    }
}

/// Halve a step series keeping the minimum of each merged pair, so a gap
/// never disappears from a decimated timeline (it can only widen).
fn decimate_min(points: &mut Vec<TimelinePoint>) {
    let merged: Vec<TimelinePoint> = points
        .chunks(2)
        .map(|pair| {
            let mut p = pair[0].clone();
            for q in &pair[1..] {
                p.ready = p.ready.min(q.ready);
                p.routable = p.routable.min(q.routable);
            }
            p
        })
        .collect();
    *points = merged;
}

/// Per-role Ready/routable tracker fed by `kube::runtime::watcher` events.
///
/// * [`apply`](Self::apply) updates the exact counts on every event, so the
///   minimum and the time below `min_ready` are exact to the event, however
///   short the gap.
/// * [`sample`](Self::sample) records what a periodic field check would have
///   seen, from the tracker's own cache (no API request).
/// * A re-list (`Init` … `InitApply` … `InitDone`, after a dropped watch, a
///   410 Gone or an API restart) is buffered and swapped in atomically at
///   `InitDone`: the counts never pass through an empty intermediate state,
///   so a re-list does not create a phantom gap.
///
/// Memory is bounded: pods are kept as three small fields each; the
/// timeline keeps count changes only and is decimated (minimum-preserving)
/// past a cap; samples are streamed to an optional CSV writer, not kept.
pub struct Auditor {
    roles: Vec<RoleStats>,
    min_ready: u32,
    sample_interval: Duration,
    time_scale: f64,
    target: String,
    /// Only pods of this namespace count (a cluster-wide watch feeds
    /// auditors of several namespaces); `None`: every pod the watch sees.
    namespace: Option<String>,
    pods: Reflector<PodState>,
    /// Set at the first `InitDone`: numbers are only meaningful from then on.
    origin: Option<Instant>,
    /// Pairs an `Instant` with the wall clock, to print step times in UTC.
    clock_anchor: (Instant, SystemTime),
    samples: u64,
    sample_series: Vec<TimelinePoint>,
    sample_stride: u64,
    samples_csv: Option<Box<dyn Write + Send>>,
    samples_csv_error: Option<String>,
    steps: Vec<StepRecord>,
    steps_dropped: u64,
}

impl std::fmt::Debug for Auditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auditor")
            .field("target", &self.target)
            .field("roles", &self.counts())
            .field("samples", &self.samples)
            .finish_non_exhaustive()
    }
}

impl Auditor {
    /// A tracker for `roles`, holding every role to `min_ready`.
    ///
    /// `sample_interval` is in reported time (the field check's 10 s);
    /// `time_scale` is reported seconds per wall second: 1.0 on a real
    /// cluster, the simulator's speed in `infera demo` and tests. The caller
    /// drives [`sample`](Self::sample) every
    /// [`sample_wall_interval`](Self::sample_wall_interval).
    pub fn new(
        roles: Vec<RoleSpec>,
        min_ready: u32,
        sample_interval: Duration,
        time_scale: f64,
    ) -> Self {
        let time_scale = if time_scale.is_finite() && time_scale > 0.0 {
            time_scale
        } else {
            1.0
        };
        Auditor {
            roles: roles
                .into_iter()
                .map(|spec| RoleStats {
                    spec,
                    ready: CountStats::new(),
                    routable: CountStats::new(),
                    gap_since: None,
                    longest_gap: Duration::ZERO,
                    timeline: Vec::new(),
                })
                .collect(),
            min_ready,
            sample_interval,
            time_scale,
            target: String::new(),
            namespace: None,
            pods: Reflector::new(),
            origin: None,
            clock_anchor: (Instant::now(), SystemTime::now()),
            samples: 0,
            sample_series: Vec::new(),
            sample_stride: 1,
            samples_csv: None,
            samples_csv_error: None,
            steps: Vec::new(),
            steps_dropped: 0,
        }
    }

    /// Name the audited target in the report (`idep/NAME`, `deploy/NAME`).
    pub fn with_target(mut self, target: impl Into<String>) -> Self {
        self.target = target.into();
        self
    }

    /// Count only pods of `namespace` (for a watch that spans namespaces).
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Stream every sample as CSV rows (`elapsed_s,role,ready,routable`) to
    /// `out` (the `--samples FILE.csv` of `infera audit`).
    pub fn with_samples_csv(mut self, mut out: Box<dyn Write + Send>) -> Self {
        if let Err(e) = writeln!(out, "elapsed_s,role,ready,routable") {
            self.samples_csv_error = Some(e.to_string());
        }
        self.samples_csv = Some(out);
        self
    }

    /// The role specs, in report order.
    pub fn roles(&self) -> Vec<RoleSpec> {
        self.roles.iter().map(|r| r.spec.clone()).collect()
    }

    /// The floor every role is held to.
    pub fn min_ready(&self) -> u32 {
        self.min_ready
    }

    /// Reported seconds per wall second.
    pub fn time_scale(&self) -> f64 {
        self.time_scale
    }

    /// Wall-clock period between two samples.
    pub fn sample_wall_interval(&self) -> Duration {
        Duration::from_secs_f64((self.sample_interval.as_secs_f64() / self.time_scale).max(0.001))
    }

    /// Whether the first complete list has been received (numbers are
    /// meaningful only from then on).
    pub fn synced(&self) -> bool {
        self.origin.is_some()
    }

    /// How many times the pod list was (re)received (1 = no re-list).
    pub fn lists(&self) -> u64 {
        self.pods.lists()
    }

    /// Apply one watcher event at `now`. Exact: every change of a count is
    /// recorded at the instant its event is applied.
    pub fn apply(&mut self, event: &Event<Pod>, now: Instant) {
        let roles = &self.roles;
        let namespace = self.namespace.as_deref();
        let delta = self.pods.apply(event, namespaced_key, |pod| {
            if namespace.is_some_and(|ns| pod.metadata.namespace.as_deref() != Some(ns)) {
                return None;
            }
            let role = roles.iter().position(|r| r.spec.matches(pod))?;
            Some(PodState {
                role,
                ready: pod_is_ready(pod),
                routable: pod_is_serving(pod),
            })
        });
        if matches!(event, Event::Init | Event::InitApply(_)) {
            return;
        }
        if matches!(delta, Delta::Relisted { .. }) && self.origin.is_none() {
            self.origin = Some(now);
        }
        self.recount(now);
    }

    fn recount(&mut self, now: Instant) {
        let Some(origin) = self.origin else { return };
        let mut ready = vec![0u32; self.roles.len()];
        let mut routable = vec![0u32; self.roles.len()];
        for state in self.pods.values() {
            if let (Some(r), Some(rt)) = (ready.get_mut(state.role), routable.get_mut(state.role)) {
                *r += u32::from(state.ready);
                *rt += u32::from(state.routable);
            }
        }
        let floor = self.min_ready;
        for (i, role) in self.roles.iter_mut().enumerate() {
            let r = ready.get(i).copied().unwrap_or(0);
            let rt = routable.get(i).copied().unwrap_or(0);
            role.update(r, rt, floor, now, origin);
        }
    }

    /// Take one sample at `now` from the cache (what a `kubectl get pods`
    /// every `sample_interval` would have seen). Ignored before the first
    /// complete list.
    pub fn sample(&mut self, now: Instant) {
        let Some(origin) = self.origin else { return };
        self.samples += 1;
        let elapsed = now.saturating_duration_since(origin);
        let elapsed_s = elapsed.as_secs_f64() * self.time_scale;
        for role in self.roles.iter_mut() {
            let (r, rt) = (role.ready.current, role.routable.current);
            role.ready.min_sampled = Some(role.ready.min_sampled.map_or(r, |m| m.min(r)));
            role.routable.min_sampled = Some(role.routable.min_sampled.map_or(rt, |m| m.min(rt)));
            if let Some(out) = self.samples_csv.as_mut()
                && self.samples_csv_error.is_none()
                && let Err(e) = writeln!(out, "{elapsed_s:.3},{},{r},{rt}", role.spec.role)
            {
                self.samples_csv_error = Some(e.to_string());
            }
            // The in-memory sample series (markers on the chart) keeps every
            // `sample_stride`-th sample and doubles the stride when full.
            if (self.samples - 1).is_multiple_of(self.sample_stride) {
                self.sample_series.push(TimelinePoint {
                    at: elapsed,
                    ready: r,
                    routable: rt,
                });
            }
        }
        if self.sample_series.len() >= TIMELINE_CAP * self.roles.len().max(1) {
            let n = self.roles.len().max(1);
            let kept: Vec<TimelinePoint> = self
                .sample_series
                .chunks(n)
                .step_by(2)
                .flatten()
                .cloned()
                .collect();
            self.sample_series = kept;
            self.sample_stride *= 2;
        }
    }

    /// Current Ready/routable counts per role (from the cache).
    pub fn counts(&self) -> Vec<RoleCounts> {
        self.roles
            .iter()
            .map(|r| RoleCounts {
                role: r.spec.role.clone(),
                ready: r.ready.current,
                routable: r.routable.current,
            })
            .collect()
    }

    /// Record a rollout step marker.
    pub fn step(&mut self, step: Step) {
        if self.steps.len() >= STEPS_CAP {
            self.steps_dropped += 1;
            return;
        }
        let origin = self.origin.unwrap_or(step.at);
        let elapsed_s = step.at.saturating_duration_since(origin).as_secs_f64() * self.time_scale;
        let at = self.utc(step.at);
        self.steps.push(StepRecord {
            service: step.service,
            kind: step.kind,
            pod: step.pod,
            node: step.node,
            at,
            elapsed_s: round3(elapsed_s),
            wall_offset: step.at.saturating_duration_since(origin),
        });
    }

    fn utc(&self, at: Instant) -> String {
        let (anchor_instant, anchor_wall) = self.clock_anchor;
        let wall = match at.checked_duration_since(anchor_instant) {
            Some(d) => anchor_wall + d,
            None => anchor_wall - anchor_instant.saturating_duration_since(at),
        };
        jiff::Timestamp::try_from(wall)
            .map(|t| t.round(jiff::Unit::Millisecond).unwrap_or(t).to_string())
            .unwrap_or_default()
    }

    fn scaled(&self, d: Duration) -> f64 {
        round3(d.as_secs_f64() * self.time_scale)
    }

    /// Close the audit at `now` and build the report. Open intervals below
    /// the floor are counted up to `now`. May be called more than once.
    pub fn finish(&mut self, outcome: Outcome, now: Instant) -> Report {
        if let Some(out) = self.samples_csv.as_mut() {
            let _ = out.flush();
        }
        let origin = self.origin.unwrap_or(now);
        let duration = now.saturating_duration_since(origin);
        let roles = self
            .roles
            .iter()
            .map(|r| {
                let synced = self.origin.is_some();
                RoleReport {
                    role: r.spec.role.clone(),
                    services: r.spec.services.clone(),
                    min_ready_sampled: r.ready.min_sampled,
                    min_ready_exact: synced.then_some(r.ready.min_exact.min(r.ready.current)),
                    min_routable_exact: synced
                        .then_some(r.routable.min_exact.min(r.routable.current)),
                    seconds_below_min_ready: self.scaled(r.ready.below_total_at(now)),
                    seconds_below_min_routable: self.scaled(r.routable.below_total_at(now)),
                    longest_gap_s: self.scaled(r.longest_gap_at(now)),
                    min_routable_sampled: r.routable.min_sampled,
                }
            })
            .collect();
        let mut timeline = Timeline {
            time_scale: self.time_scale,
            duration,
            roles: self
                .roles
                .iter()
                .map(|r| (r.spec.role.clone(), r.timeline.clone()))
                .collect(),
            samples: Vec::new(),
            steps: self
                .steps
                .iter()
                .map(|s| (s.wall_offset, format!("{} {}", s.service, s.kind)))
                .collect(),
        };
        // Close every step series at `now`, so the chart runs to the end.
        for ((_, points), role) in timeline.roles.iter_mut().zip(&self.roles) {
            points.push(TimelinePoint {
                at: duration,
                ready: role.ready.current,
                routable: role.routable.current,
            });
        }
        let n = self.roles.len().max(1);
        timeline.samples = self
            .sample_series
            .chunks(n)
            .map(|chunk| chunk.to_vec())
            .collect();
        Report {
            target: self.target.clone(),
            outcome,
            sample_interval_s: round3(self.sample_interval.as_secs_f64()),
            samples: self.samples,
            duration_s: self.scaled(duration),
            roles,
            steps: self.steps.clone(),
            operator_generation: None,
            min_ready: self.min_ready,
            synced: self.origin.is_some(),
            samples_csv_error: self.samples_csv_error.clone(),
            timeline,
            chart_services: None,
        }
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
