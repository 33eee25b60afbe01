//! Each audited pod's history: what its object says ([`Facts`]) and, from
//! the changes between two versions of it, its Ready and serving
//! [`Track`]s, timed by arrival or by the server's own timestamps, or
//! unknown while infera was blind.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use serde::Serialize;

use infera_model::pod;

use super::evidence::{Known, Track};
use super::server_clock::{ServerClock, Timed};

/// The annotation `kubectl rollout restart` puts on a Deployment's
/// template (k8s.io/kubectl `polymorphichelpers/objectrestarter.go`).
pub const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";

/// The time a deleted pod had to stop: its grace period and its engine's
/// drain (what IR016 weighs before the roll, read from the pod itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shutdown {
    /// The deletion's grace period (`metadata.deletionGracePeriodSeconds`,
    /// else `spec.terminationGracePeriodSeconds`).
    pub grace_period_s: i64,
    /// The engine's drain after SIGTERM (its flag, env or default; the
    /// catalogue's), when its engine container runs an engine infera knows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_drain_s: Option<i64>,
}

impl Shutdown {
    /// Of `pod`; `None` without a grace period (a pod not yet defaulted).
    pub fn of(pod: &Pod) -> Option<Shutdown> {
        let spec = pod.spec.as_ref()?;
        let grace_period_s = pod
            .metadata
            .deletion_grace_period_seconds
            .or(spec.termination_grace_period_seconds)?;
        let main = spec
            .containers
            .get(infera_model::pod::engine_container_index(spec));
        let engine_drain_s = main.and_then(|c| {
            infera_model::catalogue::recognize(c)
                .and_then(|e| e.drain(c))
                .map(|d| d.seconds)
        });
        Some(Shutdown {
            grace_period_s,
            engine_drain_s,
        })
    }

    /// `grace period 30 s, engine drain 0 s`.
    pub fn describe(&self) -> String {
        let mut out = format!("grace period {} s", self.grace_period_s);
        if let Some(d) = self.engine_drain_s {
            let _ = write!(out, ", engine drain {d} s");
        }
        out
    }
}

/// What one version of a pod's object says, as far as the audit cares.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    pub role: usize,
    pub uid: Option<String>,
    pub name: String,
    pub namespace: Option<String>,
    pub ready: bool,
    pub serving: bool,
    worker: bool,
    ready_at: Option<Timestamp>,
    deleting_at: Option<Timestamp>,
    registered_by: Option<Timestamp>,
    running_at: Option<Timestamp>,
    created: Option<Timestamp>,
    pub shutdown: Option<Shutdown>,
    /// `kubectl.kubernetes.io/restartedAt` (from its template): the
    /// `kubectl rollout restart` that made it, if any.
    pub restarted_at: Option<String>,
    /// The KV compatibility identity of its engine (a digest), when infera
    /// recognises the engine ([`infera_model::kv`]).
    pub kv: Option<String>,
}

impl Facts {
    pub fn of(pod: &Pod, role: usize) -> Facts {
        Facts {
            role,
            uid: pod.metadata.uid.clone(),
            name: pod.metadata.name.clone().unwrap_or_default(),
            namespace: pod.metadata.namespace.clone(),
            ready: pod::is_ready(pod),
            serving: pod::is_serving(pod),
            worker: pod::is_infera_worker(pod),
            ready_at: pod::ready_condition(pod).and_then(|(_, at)| at),
            deleting_at: pod::deletion_requested_at(pod),
            registered_by: pod::registered_by(pod),
            running_at: pod::running_since(pod),
            created: pod::created_at(pod),
            shutdown: Shutdown::of(pod),
            restarted_at: (pod.metadata.annotations.as_ref())
                .and_then(|a| a.get(RESTARTED_AT))
                .cloned(),
            kv: pod.spec.as_ref().and_then(|spec| {
                let c = spec.containers.get(pod::engine_container_index(spec))?;
                infera_model::kv::KvIdentity::of(c).map(|k| k.digest())
            }),
        }
    }

    /// The server's time of this version's Ready value.
    fn ready_time(&self) -> Option<Timestamp> {
        match self.deleting_at {
            Some(d) if !self.ready => Some(d),
            _ => self.ready_at,
        }
    }

    /// The server's time of this version's serving value: the deletion
    /// request when it stopped for that; for any pod that is not a worker,
    /// its Ready time. A worker's start of serving is only bounded (see
    /// [`Facts::registration_window`]).
    fn serving_time(&self) -> Option<Timestamp> {
        match (self.deleting_at, self.worker, self.serving) {
            (Some(d), _, false) => Some(d),
            (None, true, _) => None,
            _ => self.ready_at,
        }
    }

    /// When a serving worker started serving, as far as its object says:
    /// not before its container started (or it was created), and not after
    /// the last write of its registration annotation (`managedFields`; the
    /// same manager may have written it earlier).
    fn registration_window(&self) -> Option<(Timestamp, Timestamp)> {
        if !(self.worker && self.serving) {
            return None;
        }
        let upper = self.registered_by?.max(self.running_at?);
        let lower = self.running_at.or(self.created)?;
        Some((lower.min(upper), upper))
    }
}

/// A pod whose disappearance was seen only in a re-list: when it stopped
/// serving is unknown until the namespace's Events say.
#[derive(Debug, Clone)]
pub struct PendingDeletion {
    pub key: String,
    /// What the pod's tracks said at `since`, before they were made unknown.
    ready_before: Known,
    serving_before: Known,
    pub namespace: Option<String>,
    pub name: String,
    pub since: Instant,
    pub until: Instant,
    /// The Events were asked about it already (once is enough).
    pub asked: bool,
}

/// One pod's history.
#[derive(Debug, Clone)]
pub struct History {
    pub facts: Facts,
    pub ready: Track,
    pub serving: Track,
    pub gone: bool,
}

/// What infera knows of time while it applies one change.
#[derive(Debug, Clone, Copy)]
pub struct Moment {
    pub arrival: Instant,
    /// Blind since this instant (events arriving now may be late).
    pub blind_since: Option<Instant>,
    pub clock: ServerClock,
}

impl Moment {
    /// A worker started serving somewhere in `window` (server times): set
    /// by arrival when it came promptly, else unknown over the window.
    /// Returns whether the server's timestamps were used.
    fn set_within(&self, track: &mut Track, window: Option<(Timestamp, Timestamp)>) -> bool {
        let Some((lower, upper)) = window else {
            return self.set(track, true, None);
        };
        tracing::debug!(target: infera_cluster::trace::target::AUDIT, "started serving between {lower} and {upper}, arrival {:?} ago", self.arrival.elapsed());
        match self
            .clock
            .when(Some(upper), self.arrival, self.blind_since.is_some())
        {
            Timed::Arrival(at) => {
                track.set(at, Known::Yes);
                false
            }
            Timed::Server(end) | Timed::Window(_, end) => {
                let start = self.clock.instant(lower).min(end);
                track.unknown_until(start, end, Known::Yes);
                true
            }
            Timed::Unknown => self.set(track, true, None),
        }
    }

    /// Set `track` to `value` at the change's time: its arrival, the
    /// server's timestamp, or unknown since infera went blind. Returns
    /// whether the server's timestamp was used.
    fn set(&self, track: &mut Track, value: bool, ts: Option<Timestamp>) -> bool {
        tracing::debug!(target: infera_cluster::trace::target::AUDIT, "change to {value}: server time {ts:?}, arrival {:?} ago, blind {}", self.arrival.elapsed(), self.blind_since.is_some());
        match self
            .clock
            .when(ts, self.arrival, self.blind_since.is_some())
        {
            Timed::Arrival(at) => {
                track.set(at, value.into());
                false
            }
            Timed::Server(at) => {
                track.set(at, value.into());
                true
            }
            Timed::Window(from, to) => {
                track.unknown_until(from, to, value.into());
                true
            }
            Timed::Unknown => {
                let since = self.blind_since.unwrap_or(self.arrival);
                track.unknown_until(since, self.arrival, value.into());
                false
            }
        }
    }
}

/// Every audited pod's history, by namespaced name.
#[derive(Debug, Clone, Default)]
pub struct Histories {
    pub pods: BTreeMap<String, History>,
    pub pending: Vec<PendingDeletion>,
    /// Changes timed from the server's timestamps because they arrived late.
    pub reconstructed: u64,
    /// Changes seen (any track moved) while blind, since the last reset.
    pub changed_while_blind: u64,
}

impl Histories {
    /// A version of the pod `key` was seen at `m.arrival`.
    pub fn observe(&mut self, key: &str, facts: &Facts, m: &Moment) {
        tracing::debug!(target: infera_cluster::trace::target::AUDIT, "observe {key}: ready {} serving {}", facts.ready, facts.serving);
        let replaced = self.pods.get(key).is_some_and(|h| {
            h.facts.uid.is_some() && facts.uid.is_some() && h.facts.uid != facts.uid
        });
        if replaced {
            // Same name, new object (a StatefulSet's pod): the old one went
            // before the new one was created.
            self.gone(key, None, facts.created, m);
            self.pods.remove(key);
        }
        let Some(h) = self.pods.get_mut(key) else {
            self.first_seen(key, facts, m);
            return;
        };
        let mut moved = false;
        let mut server = false;
        if h.facts.ready != facts.ready {
            server |= m.set(&mut h.ready, facts.ready, facts.ready_time());
            moved = true;
        } else if m.blind_since.is_some() && facts.ready_at != h.facts.ready_at {
            // The same value with a newer transition: it flapped while
            // infera was blind; unknown until its last transition.
            if let (Some(since), Timed::Server(at) | Timed::Window(_, at)) =
                (m.blind_since, m.clock.when(facts.ready_at, m.arrival, true))
            {
                h.ready.unknown_until(since, at, facts.ready.into());
                moved = true;
            }
        }
        if h.facts.serving != facts.serving {
            server |= match facts.registration_window() {
                Some(w) => m.set_within(&mut h.serving, Some(w)),
                None => m.set(&mut h.serving, facts.serving, facts.serving_time()),
            };
            moved = true;
        }
        h.facts = facts.clone();
        self.count(moved, server, m);
    }

    fn first_seen(&mut self, key: &str, facts: &Facts, m: &Moment) {
        let mut h = History {
            facts: facts.clone(),
            ready: Track::default(),
            serving: Track::default(),
            gone: false,
        };
        // A pod starts neither Ready nor serving; it became so at its
        // transition's time.
        let born = match m
            .clock
            .when(facts.created, m.arrival, m.blind_since.is_some())
        {
            Timed::Arrival(at) | Timed::Server(at) | Timed::Window(at, _) => at,
            Timed::Unknown => m.blind_since.unwrap_or(m.arrival),
        };
        h.ready.set(born, Known::No);
        h.serving.set(born, Known::No);
        let mut server = false;
        if facts.ready {
            server |= m.set(&mut h.ready, true, facts.ready_time());
        }
        if facts.serving {
            server |= match facts.registration_window() {
                Some(w) => m.set_within(&mut h.serving, Some(w)),
                None => m.set(&mut h.serving, true, facts.serving_time()),
            };
        }
        self.pods.insert(key.to_string(), h);
        self.count(true, server, m);
    }

    /// The pod `key` is gone (a Delete event with its last version, a
    /// re-list without it, or replaced at `replaced_at`).
    pub fn gone(
        &mut self,
        key: &str,
        last: Option<&Facts>,
        replaced_at: Option<Timestamp>,
        m: &Moment,
    ) {
        let Some(h) = self.pods.get_mut(key) else {
            return;
        };
        tracing::debug!(target: infera_cluster::trace::target::AUDIT, "gone {key}");
        h.gone = true;
        if h.ready.last() == Known::No && h.serving.last() == Known::No {
            return;
        }
        let ts = last
            .and_then(|f| f.deleting_at)
            .or(h.facts.deleting_at)
            .or(replaced_at);
        let (ready_before, serving_before) = (h.ready.last(), h.serving.last());
        let server = m.set(&mut h.ready, false, ts) | m.set(&mut h.serving, false, ts);
        if ts.is_none()
            && let Some(since) = m.blind_since
        {
            self.pending.push(PendingDeletion {
                key: key.to_string(),
                ready_before,
                serving_before,
                namespace: h.facts.namespace.clone(),
                name: h.facts.name.clone(),
                since,
                until: m.arrival,
                asked: false,
            });
        }
        self.count(true, server, m);
    }

    fn count(&mut self, moved: bool, server: bool, m: &Moment) {
        if moved && m.blind_since.is_some() {
            self.changed_while_blind += 1;
        }
        if server {
            self.reconstructed += 1;
        }
    }

    /// The Events say the pod `namespace/name` was deleted at `at` (within
    /// `precision` after it: an Event's time is truncated to the second):
    /// fix the unknown interval of its pending deletion, if `at` falls in
    /// it.
    pub fn resolve_deletion(
        &mut self,
        namespace: Option<&str>,
        name: &str,
        at: Instant,
        precision: std::time::Duration,
    ) -> bool {
        let Some(i) = self
            .pending
            .iter()
            .position(|p| p.name == name && p.namespace.as_deref() == namespace && at <= p.until)
        else {
            return false;
        };
        let p = self.pending.swap_remove(i);
        tracing::debug!(target: infera_cluster::trace::target::AUDIT, "deletion of {name} dated by an Event at {:?} (precision {precision:?}), unobserved since {:?}", at.elapsed(), p.since.elapsed());
        let at = at.max(p.since);
        let known = (at + precision).min(p.until).max(at);
        // The pod held its value from `since` until it was deleted, within
        // the Event's precision.
        let points = |before: Known| {
            let mut v = vec![(p.since, before)];
            if known > at {
                v.push((at, Known::Unknown));
            }
            v.push((known, Known::No));
            v
        };
        if let Some(h) = self.pods.get_mut(&p.key) {
            h.ready.rewrite_from(p.since, &points(p.ready_before));
            h.serving.rewrite_from(p.since, &points(p.serving_before));
        }
        self.reconstructed += 1;
        true
    }

    /// The earliest instant a later reconstruction may still rewrite.
    pub fn settled_before(&self) -> Option<Instant> {
        self.pending.iter().map(|p| p.since).min()
    }

    /// Forget what is settled before `horizon`; drop pods gone by then.
    pub fn fold_before(&mut self, horizon: Instant) {
        self.pods.retain(|_, h| {
            h.ready.fold_before(horizon);
            h.serving.fold_before(horizon);
            !(h.gone && h.ready.points().is_empty() && h.serving.points().is_empty())
        });
    }

    /// Everything not known to be down is unknown from `since` (the audit
    /// ended while blind).
    pub fn unknown_from(&mut self, since: Instant) {
        for h in self.pods.values_mut().filter(|h| !h.gone) {
            h.ready.set(since, Known::Unknown);
            h.serving.set(since, Known::Unknown);
        }
    }
}
