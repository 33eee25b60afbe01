//! The [`Auditor`]: event-driven Ready/routable counts per role, exact where
//! infera watched and bounded where it was blind, plus the periodic samples
//! the field check takes.
//!
//! Routable follows the router (operator-semantics §5) for infera workers;
//! a pod that runs no infera worker has no registration and counts as
//! routable exactly when it is Ready ([`pod_is_serving`]).
//!
//! Everything here is synchronous and takes `now: Instant` explicitly, so the
//! arithmetic is tested with synthetic watcher events and synthetic instants
//! (no sleeping, no timing-dependent asserts). The watch loop that feeds it
//! from a cluster lives in [`super::session`].

use std::collections::VecDeque;
use std::io::Write;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::runtime::watcher::Event;

use infera_cluster::reflect::{Delta, Reflector, namespaced_key};
use infera_cluster::sight::{Beat, Sight, Skew, Transition};

use super::evidence::{Accum, Bounds, Onset, RoleStats, sweep};
use super::narrate::{Narrator, Step};

use super::pods::{Facts, Histories, Moment};
use super::report::{StepRecord, Unobserved};
use super::server_clock::ServerClock;
use super::timeline::TimelinePoint;

// The worker's registration annotation and the operator's labels
// (operator-semantics §1, §5).
use infera_model::selector::Selector;
use infera_model::worker::LABEL_SERVICE;

/// One role of the audited target and how to recognise its pods.
///
/// A pod belongs to the role when its labels satisfy `selector` (every
/// requirement: equalities and set-based `in`/`notin`/exists alike) and —
/// if `services` is non-empty and the pod carries the
/// `infera.amd.com/service` label — that label is one of `services`. A pod
/// matching several roles counts for the first one only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleSpec {
    /// `mixed`, `prefill`, `decode`, or a `--role` name.
    pub role: String,
    /// Services (InferaDeployment) or Deployment names that make up the role.
    pub services: Vec<String>,
    /// Label selector of the role's pods.
    pub selector: Selector,
}

impl RoleSpec {
    /// Whether `pod` belongs to this role (see the type's documentation).
    pub fn matches(&self, pod: &Pod) -> bool {
        let labels = pod.metadata.labels.as_ref();
        if !self.selector.matches_labels(labels) {
            return false;
        }
        match labels.and_then(|l| l.get(LABEL_SERVICE)) {
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

/// Points kept per role in the in-memory timeline before it is decimated.
pub(crate) const TIMELINE_CAP: usize = 4096;
/// Step markers kept (a rollout has a handful per pod; this bounds a runaway).
const STEPS_CAP: usize = 10_000;
/// How long after the fact a change is still open to rewriting by a late
/// event's server timestamp while infera is current (the pods' histories
/// are folded into the roles' statistics past it).
const SETTLE: Duration = Duration::from_secs(30);

/// One role's settled statistics and timeline (older than the histories).
#[derive(Debug, Clone)]
pub(crate) struct RoleSlot {
    pub(crate) spec: RoleSpec,
    pub(crate) accum: Accum,
    /// Whether the role began below the floor, and the rest apart.
    pub(crate) onset: Onset,
    pub(crate) timeline: Vec<TimelinePoint>,
    /// Closed spans during which a count was uncertain, and the open one.
    pub(crate) uncertain: Vec<(Duration, Duration)>,
    pub(crate) uncertain_open: Option<Duration>,
    /// Lowest count each sample saw (Ready, routable).
    pub(crate) min_sampled: Option<(u32, u32)>,
}

/// An unobserved interval in progress.
#[derive(Debug, Clone)]
struct Blind {
    since: Instant,
    reason: String,
    changes_before: u64,
}

/// Per-role Ready/routable tracker fed by `kube::runtime::watcher` events.
///
/// * [`apply`](Self::apply) records every change of every pod, timed by its
///   arrival, or by the server's own timestamp when it arrived late; the
///   role counts are swept from those histories, so minima and time below
///   `min_ready` are exact to the event, however short the gap.
/// * What infera did not see is part of the evidence: a re-list, a failed
///   watch request ([`watch_error`](Self::watch_error)) or an unanswered
///   heartbeat ([`beat`](Self::beat)) makes the auditor blind from its last
///   proof of sight; changes it then learns of without a timestamp are
///   unknown over the blind interval, and the report gives bounds.
/// * [`sample`](Self::sample) records what a periodic field check would have
///   seen, from the cache (no API request), never while blind.
/// * A re-list (`Init` … `InitApply` … `InitDone`) is buffered and swapped
///   in atomically at `InitDone`: the live counts never pass through an
///   empty intermediate state.
///
/// Memory is bounded: histories are folded into per-role statistics once
/// settled; the timeline keeps count changes only and is decimated
/// (minimum-preserving) past a cap; samples are streamed to an optional CSV
/// writer, not kept.
pub struct Auditor {
    pub(crate) roles: Vec<RoleSlot>,
    pub(crate) min_ready: u32,
    pub(crate) sample_interval: Duration,
    pub(crate) time_scale: f64,
    pub(crate) target: String,
    /// The change that began with the audit (`roll`), whose report keeps
    /// a role already below the floor then apart from one that fell
    /// during it; `None` (`infera audit`, the monitor): the change may have
    /// begun before the audit, so every fall counts.
    pub(crate) activity: Option<&'static str>,
    /// Only pods of this namespace count (a cluster-wide watch feeds
    /// auditors of several namespaces); `None`: every pod the watch sees.
    namespace: Option<String>,
    live: Reflector<Facts>,
    pub(crate) histories: Histories,
    /// Set at the first `InitDone`: numbers are only meaningful from then on.
    pub(crate) origin: Option<Instant>,
    /// Audited pods seen Ready at least once (dropped when they go).
    ever_ready: std::collections::BTreeSet<String>,
    /// Restarts undone before they served ([`Self::check_undone`]).
    pub(crate) undone_restarts: Vec<crate::report::UndoneRestart>,
    sight: Option<Sight>,
    blind: Option<Blind>,
    /// The API server answers again: the watch must be started afresh.
    resync: bool,
    pub(crate) unobserved: Vec<Unobserved>,
    /// Folded into the roles up to here.
    settled: Option<Instant>,
    pub(crate) clock: ServerClock,
    pub(crate) samples: u64,
    pub(crate) samples_unobserved: u64,
    /// Samples not yet proven (taken after the last proof of sight).
    pending_samples: VecDeque<(Instant, Vec<(u32, u32)>)>,
    pub(crate) sample_series: Vec<TimelinePoint>,
    sample_stride: u64,
    samples_csv: Option<Box<dyn Write + Send>>,
    pub(crate) samples_csv_error: Option<String>,
    pub(crate) steps: Vec<StepRecord>,
    steps_dropped: u64,
    /// Tells the disruptions as steps ([`Auditor::narrating`]).
    narrator: Option<Narrator>,
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
                .map(|spec| RoleSlot {
                    spec,
                    accum: Accum::new(min_ready),
                    onset: Onset::new(min_ready),
                    timeline: Vec::new(),
                    uncertain: Vec::new(),
                    uncertain_open: None,
                    min_sampled: None,
                })
                .collect(),
            min_ready,
            sample_interval,
            time_scale,
            target: String::new(),
            activity: None,
            namespace: None,
            live: Reflector::new(),
            histories: Histories::default(),
            origin: None,
            ever_ready: std::collections::BTreeSet::new(),
            undone_restarts: Vec::new(),
            sight: None,
            blind: None,
            resync: false,
            unobserved: Vec::new(),
            settled: None,
            clock: ServerClock::default(),
            samples: 0,
            samples_unobserved: 0,
            pending_samples: VecDeque::new(),
            sample_series: Vec::new(),
            sample_stride: 1,
            samples_csv: None,
            samples_csv_error: None,
            steps: Vec::new(),
            steps_dropped: 0,
            narrator: None,
        }
    }

    /// Tell what happens to the audited pods and their nodes as steps
    /// (eviction, deletion, cordon, node NotReady, the replacement created,
    /// scheduled, Ready, routable; see `narrate.rs`), for an audit of
    /// changes infera does not make itself. A rollout marks its own steps.
    pub fn narrating(mut self) -> Self {
        self.narrator = Some(Narrator::default());
        self
    }

    /// Whether [`Auditor::narrating`] is on (the session then watches nodes).
    pub fn is_narrating(&self) -> bool {
        self.narrator.is_some()
    }

    /// One node watch event, for the narration (nothing when it is off).
    pub fn apply_node(&mut self, event: &Event<Node>, now: Instant) {
        let Some(narrator) = self.narrator.as_mut() else {
            return;
        };
        let steps = match event {
            Event::InitApply(node) => {
                narrator.node_listed(node);
                Vec::new()
            }
            Event::Apply(node) => narrator.node(node, now),
            _ => Vec::new(),
        };
        for s in steps {
            self.step(s);
        }
    }

    /// The narration of one pod event (see [`Auditor::narrating`]).
    fn narrate(&mut self, event: &Event<Pod>, now: Instant) {
        let Some(narrator) = self.narrator.as_mut() else {
            return;
        };
        let namespace = self.namespace.as_deref();
        let role_of = |pod: &Pod| {
            if namespace.is_some_and(|ns| pod.metadata.namespace.as_deref() != Some(ns)) {
                return None;
            }
            let role = self.roles.iter().position(|r| r.spec.matches(pod))?;
            let spec = &self.roles[role].spec;
            let service = spec.services.first().unwrap_or(&spec.role).clone();
            Some((role, service))
        };
        let steps = match event {
            Event::Apply(pod) | Event::InitApply(pod) => match role_of(pod) {
                Some((role, service)) => {
                    narrator.pod(&namespaced_key(pod), pod, role, &service, now)
                }
                None => Vec::new(),
            },
            Event::Delete(pod) => narrator.gone(&namespaced_key(pod), now),
            Event::InitDone => {
                narrator.listed = true;
                Vec::new()
            }
            Event::Init => Vec::new(),
        };
        for s in steps {
            self.step(s);
        }
    }

    /// Name the audited target in the report (`idep/NAME`, `deploy/NAME`).
    pub fn with_target(mut self, target: impl Into<String>) -> Self {
        self.target = target.into();
        self
    }

    /// The audit began with `activity` (`roll`), before it changed
    /// anything: a role already below the floor then is reported apart
    /// ("already below the floor when the roll began"), and only what
    /// falls during it is the change's gap.
    pub fn with_activity(mut self, activity: &'static str) -> Self {
        self.activity = Some(activity);
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

    /// Whether the watch is current (synced and not blind): only then may
    /// a decision rest on [`counts`](Self::counts).
    pub fn is_current(&self) -> bool {
        self.synced() && self.blind.is_none()
    }

    /// Whether the watch must be started afresh (a re-list) before the
    /// audit can see again; asking clears it. The old stream cannot be
    /// trusted after a partition: it may stay silent while the API server
    /// answers new requests.
    pub fn take_resync(&mut self) -> bool {
        std::mem::take(&mut self.resync)
    }

    /// Why the audit is blind, if it is.
    pub fn blind_reason(&self) -> Option<&str> {
        self.blind.as_ref().map(|b| b.reason.as_str())
    }

    /// How many times the pod list was (re)received (1 = no re-list).
    pub fn lists(&self) -> u64 {
        self.live.lists()
    }

    /// The API server's clock offset, as measured by the heartbeats.
    pub fn set_skew(&mut self, skew: Skew) {
        self.clock.set_skew(skew);
    }

    /// The clock that places the server's timestamps on this process's.
    pub fn server_clock(&self) -> &ServerClock {
        &self.clock
    }

    /// A request of the watch failed at `now` (connection refused or
    /// reset, 5xx, 410 Gone): blind from the last proof of sight.
    pub fn watch_error(&mut self, now: Instant, reason: &str) {
        if let Some(t) = self.sight.as_mut().map(|s| s.watch_error(reason)) {
            self.transition(t, now);
        }
    }

    /// A heartbeat's outcome, known at `now`.
    pub fn beat(&mut self, beat: &Beat, now: Instant) {
        if let Some(t) = self.sight.as_mut().map(|s| s.beat(beat)) {
            self.transition(t, now);
        }
        self.commit_samples();
    }

    fn transition(&mut self, t: Transition, now: Instant) {
        match t {
            Transition::None => {}
            Transition::Blind { since, reason } => {
                let since = self.origin.map_or(since, |o| since.max(o));
                tracing::info!(target: infera_cluster::trace::target::AUDIT, "unobserved from {}: {reason}", self.clock.utc(since));
                while self.pending_samples.back().is_some_and(|s| s.0 > since) {
                    self.pending_samples.pop_back();
                    self.samples_unobserved += 1;
                }
                self.blind = Some(Blind {
                    since,
                    reason,
                    changes_before: self.histories.changed_while_blind,
                });
            }
            Transition::Sighted { at } => self.end_blind(at.max(now)),
            Transition::Resync => self.resync = true,
        }
    }

    fn end_blind(&mut self, at: Instant) {
        let Some(b) = self.blind.take() else { return };
        let changed = self.histories.changed_while_blind > b.changes_before
            || self.histories.pending.iter().any(|p| p.since == b.since);
        tracing::info!(target: infera_cluster::trace::target::AUDIT, "observed again from {} (unobserved {:.1}s)", self.clock.utc(at), at.saturating_duration_since(b.since).as_secs_f64());
        self.unobserved
            .push(Unobserved::new(self, b.since, at, b.reason, changed));
    }

    fn moment(&self, arrival: Instant) -> Moment {
        Moment {
            arrival,
            blind_since: self.blind.as_ref().map(|b| b.since),
            clock: self.clock,
        }
    }

    /// Apply one watcher event at `now`.
    pub fn apply(&mut self, event: &Event<Pod>, now: Instant) {
        self.narrate(event, now);
        if let Event::Init = event
            && let Some(t) = self.sight.as_mut().map(|s| s.relisting())
        {
            self.transition(t, now);
        }
        let roles = &self.roles;
        let namespace = self.namespace.as_deref();
        let facts_of = |pod: &Pod| {
            if namespace.is_some_and(|ns| pod.metadata.namespace.as_deref() != Some(ns)) {
                return None;
            }
            let role = roles.iter().position(|r| r.spec.matches(pod))?;
            Some(Facts::of(pod, role))
        };
        let last = match event {
            Event::Delete(pod) => facts_of(pod),
            _ => None,
        };
        let delta = self.live.apply(event, namespaced_key, facts_of);
        let sighted = match (event, self.sight.as_mut()) {
            (Event::Apply(_) | Event::Delete(_), Some(s)) => s.event(now),
            _ => Transition::None,
        };
        match delta {
            Delta::Nothing => {}
            Delta::Upserted(key) => {
                if let Some(facts) = self.live.get(&key).cloned() {
                    if facts.ready {
                        self.ever_ready.insert(key.clone());
                    }
                    let m = self.moment(now);
                    self.histories.observe(&key, &facts, &m);
                }
            }
            Delta::Removed(key, _) => {
                self.check_undone(&key, last.as_ref());
                let m = self.moment(now);
                self.histories.gone(&key, last.as_ref(), None, &m);
            }
            Delta::Relisted { vanished } => self.relisted(vanished, now),
        }
        // Sighted after the event is applied: it arrived while blind, so it
        // was timed by the server's timestamps.
        self.transition(sighted, now);
    }

    /// A pod `key` is gone: a replacement of a restart that never was
    /// Ready, while pods of its role without that restart still run, is a
    /// restart undone before it served.
    fn check_undone(&mut self, key: &str, last: Option<&Facts>) {
        let ever_ready = self.ever_ready.remove(key);
        let Some(f) = last else { return };
        let Some(restarted_at) = &f.restarted_at else {
            return;
        };
        let others_older = self.live.values().any(|o| {
            o.role == f.role
                && o.restarted_at
                    .as_deref()
                    .is_none_or(|t| t < restarted_at.as_str())
        });
        if !ever_ready && !f.ready && others_older {
            self.undone_restarts.push(crate::report::UndoneRestart {
                pod: f.name.clone(),
                restarted_at: restarted_at.clone(),
            });
        }
    }

    fn relisted(&mut self, vanished: Vec<(String, Facts)>, now: Instant) {
        if self.origin.is_none() {
            self.origin = Some(now);
            self.settled = Some(now);
            self.sight = Some(Sight::new(now));
        }
        let listed: Vec<(String, Facts)> = self
            .live
            .iter()
            .map(|(k, f)| (k.clone(), f.clone()))
            .collect();
        let m = self.moment(now);
        for (key, facts) in &listed {
            self.histories.observe(key, facts, &m);
            if facts.ready {
                self.ever_ready.insert(key.clone());
            }
        }
        for (key, _) in &vanished {
            self.histories.gone(key, None, None, &m);
        }
        if let Some(t) = self.sight.as_mut().map(|s| s.relisted(now)) {
            self.transition(t, now);
        }
    }

    /// Pods whose disappearance a re-list showed without saying when, not
    /// asked about yet: (namespace, name). The caller looks them up in the
    /// Events (once) and reports what it finds with
    /// [`deleted_at`](Self::deleted_at).
    pub fn unresolved_deletions(&mut self) -> Vec<(Option<String>, String)> {
        self.histories
            .pending
            .iter_mut()
            .filter_map(|p| {
                let asked = std::mem::replace(&mut p.asked, true);
                (!asked).then(|| (p.namespace.clone(), p.name.clone()))
            })
            .collect()
    }

    /// An Event (the ReplicaSet controller's `SuccessfulDelete`, the
    /// kubelet's `Killing`) says the pod was deleted at the server's `at`.
    pub fn deleted_at(&mut self, namespace: Option<&str>, name: &str, at: jiff::Timestamp) -> bool {
        let precision = if at.subsec_nanosecond() == 0 {
            Duration::from_secs(1)
        } else {
            Duration::ZERO
        };
        let at = self.clock.instant(at);
        self.histories
            .resolve_deletion(namespace, name, at, precision)
    }

    /// A proof of sight other than a watch event (a heartbeat answered).
    fn commit_samples(&mut self) {
        let proven = match (&self.blind, &self.sight) {
            (None, Some(s)) => s.last_proof(),
            _ => return,
        };
        while self.pending_samples.front().is_some_and(|s| s.0 <= proven) {
            if let Some((at, counts)) = self.pending_samples.pop_front() {
                self.record_sample(at, &counts);
            }
        }
    }

    /// Take one sample at `now` from the cache (what a `kubectl get pods`
    /// every `sample_interval` would have seen). Ignored before the first
    /// complete list; counted as unobserved while blind.
    pub fn sample(&mut self, now: Instant) {
        if self.origin.is_none() {
            return;
        }
        if self.blind.is_some() {
            self.samples_unobserved += 1;
            return;
        }
        let counts = self
            .counts()
            .iter()
            .map(|c| (c.ready, c.routable))
            .collect();
        self.pending_samples.push_back((now, counts));
        self.commit_samples();
        self.settle(now);
    }

    fn record_sample(&mut self, at: Instant, counts: &[(u32, u32)]) {
        let Some(origin) = self.origin else { return };
        self.samples += 1;
        let elapsed = at.saturating_duration_since(origin);
        let elapsed_s = elapsed.as_secs_f64() * self.time_scale;
        let keep = (self.samples - 1).is_multiple_of(self.sample_stride);
        for (role, &(r, rt)) in self.roles.iter_mut().zip(counts) {
            role.min_sampled = Some(
                role.min_sampled
                    .map_or((r, rt), |(a, b)| (a.min(r), b.min(rt))),
            );
            if let Some(out) = self.samples_csv.as_mut()
                && self.samples_csv_error.is_none()
                && let Err(e) = writeln!(out, "{elapsed_s:.3},{},{r},{rt}", role.spec.role)
            {
                self.samples_csv_error = Some(e.to_string());
            }
            // The in-memory sample series (markers on the chart) keeps every
            // `sample_stride`-th sample and doubles the stride when full.
            if keep {
                self.sample_series.push(TimelinePoint {
                    at: elapsed,
                    ready: r,
                    routable: rt,
                });
            }
        }
        let n = self.roles.len().max(1);
        if self.sample_series.len() >= TIMELINE_CAP * n {
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

    /// Fold what can no longer change (older than [`SETTLE`], before any
    /// blind interval or unresolved deletion) into the roles.
    fn settle(&mut self, now: Instant) {
        let (Some(origin), Some(settled)) = (self.origin, self.settled) else {
            return;
        };
        let mut horizon = now.checked_sub(SETTLE).unwrap_or(origin);
        if let Some(b) = &self.blind {
            horizon = horizon.min(b.since);
        }
        if let Some(p) = self.histories.settled_before() {
            horizon = horizon.min(p);
        }
        if horizon <= settled {
            return;
        }
        let cut = horizon.saturating_duration_since(origin);
        for (i, bounds) in self.role_bounds(origin).into_iter().enumerate() {
            for b in bounds.into_iter().filter(|b| b.at < cut) {
                self.roles[i].push(b);
            }
        }
        self.histories.fold_before(horizon);
        self.settled = Some(horizon);
    }

    /// Each role's bounds swept from the histories (from the settled
    /// horizon on).
    pub(crate) fn role_bounds(&self, origin: Instant) -> Vec<Vec<Bounds>> {
        (0..self.roles.len())
            .map(|i| {
                let pods = self
                    .histories
                    .pods
                    .values()
                    .filter(|h| h.facts.role == i)
                    .map(|h| (&h.ready, &h.serving));
                sweep(pods, origin)
            })
            .collect()
    }

    /// Each role's statistics from the first list until `now` (none before
    /// it), for a long-running monitor: what a report closed now would
    /// count, without building one. Settles what can no longer change
    /// first, so memory stays bounded however long it runs.
    pub fn stats_now(&mut self, now: Instant) -> Vec<RoleStats> {
        let Some(origin) = self.origin else {
            return Vec::new();
        };
        self.settle(now);
        let end = now.saturating_duration_since(origin);
        self.role_bounds(origin)
            .into_iter()
            .zip(&self.roles)
            .map(|(bounds, slot)| {
                let mut accum = slot.accum.clone();
                if slot.timeline.is_empty() && bounds.first().is_none_or(|b| !b.at.is_zero()) {
                    accum.push(Bounds {
                        at: Duration::ZERO,
                        ready: (0, 0),
                        routable: (0, 0),
                    });
                }
                bounds.into_iter().for_each(|b| accum.push(b));
                accum.at_end(end)
            })
            .collect()
    }

    /// Current Ready/routable counts per role (from the cache).
    pub fn counts(&self) -> Vec<RoleCounts> {
        let mut counts: Vec<RoleCounts> = self
            .roles
            .iter()
            .map(|r| RoleCounts {
                role: r.spec.role.clone(),
                ready: 0,
                routable: 0,
            })
            .collect();
        for f in self.live.values() {
            if let Some(c) = counts.get_mut(f.role) {
                c.ready += u32::from(f.ready);
                c.routable += u32::from(f.serving);
            }
        }
        counts
    }

    /// The steps recorded from the `n`-th on.
    pub fn steps_from(&self, n: usize) -> Vec<StepRecord> {
        self.steps
            .get(n..)
            .map(<[StepRecord]>::to_vec)
            .unwrap_or_default()
    }

    /// The time the watched pod `name` has to stop, as its object says.
    fn shutdown_of(&self, name: &str) -> Option<crate::report::Shutdown> {
        self.live
            .values()
            .find(|f| f.name == name)
            .and_then(|f| f.shutdown)
    }

    /// Record a rollout step marker.
    pub fn step(&mut self, step: Step) {
        if self.steps.len() >= STEPS_CAP {
            self.steps_dropped += 1;
            return;
        }
        let origin = self.origin.unwrap_or(step.at);
        let elapsed_s = step.at.saturating_duration_since(origin).as_secs_f64() * self.time_scale;
        let at = self.clock.utc(step.at);
        let shutdown = (crate::report::is_deletion(&step.kind))
            .then(|| self.shutdown_of(step.pod.as_deref()?))
            .flatten();
        self.steps.push(StepRecord {
            service: step.service,
            kind: step.kind,
            pod: step.pod,
            node: step.node,
            at,
            elapsed_s: round3(elapsed_s),
            shutdown,
            wall_offset: step.at.saturating_duration_since(origin),
        });
    }

    /// The pods' histories and the unobserved intervals as they stand when
    /// the audit closes at `now` (the report is built from them in
    /// `verdict`): an audit that ends blind counts every pod as unknown from
    /// the last proof.
    pub(crate) fn closing(&mut self, now: Instant) -> (Histories, Vec<Unobserved>) {
        if let Some(out) = self.samples_csv.as_mut() {
            let _ = out.flush();
        }
        if self.blind.is_none() {
            while let Some((at, counts)) = self.pending_samples.pop_front() {
                self.record_sample(at, &counts);
            }
        }
        let mut closing = self.histories.clone();
        let mut unobserved = self.unobserved.clone();
        if let Some(b) = &self.blind {
            closing.unknown_from(b.since);
            unobserved.push(Unobserved::new(
                self,
                b.since,
                now,
                format!("{} (still unobserved at the end)", b.reason),
                true,
            ));
        }
        (closing, unobserved)
    }
}

impl RoleSlot {
    /// Settle one more span of bounds into the statistics and timeline.
    pub(crate) fn push(&mut self, b: Bounds) {
        self.accum.push(b);
        self.onset.push(b);
        let point = TimelinePoint {
            at: b.at,
            ready: b.ready.0,
            routable: b.routable.0,
        };
        if self
            .timeline
            .last()
            .is_none_or(|p| (p.ready, p.routable) != (point.ready, point.routable))
        {
            self.timeline.push(point);
        }
        if self.timeline.len() >= TIMELINE_CAP {
            decimate_min(&mut self.timeline);
        }
        match (b.uncertain(), self.uncertain_open) {
            (true, None) => self.uncertain_open = Some(b.at),
            (false, Some(from)) => {
                self.uncertain.push((from, b.at));
                self.uncertain_open = None;
            }
            _ => {}
        }
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

pub(crate) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
