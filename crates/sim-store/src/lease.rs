//! Events expire as kube-apiserver's do: `--event-ttl` (default 1 h).
//!
//! Upstream, the Event registry's `TTLFunc` returns the TTL for every
//! create and update (kubernetes `pkg/registry/core/event/storage`), so
//! each write attaches the object to a fresh etcd lease; etcd's lessor
//! checks for expired leases every 500 ms (`runLoop`) and revokes each with
//! a `DeleteRange` of its keys (`server/lease/lessor.go`, `Revoke`), which
//! etcd's watch reports as a DELETE: a watcher of events sees `DELETED`,
//! carrying the last state at the deletion's revision. A TTL of 0 attaches
//! no lease (the Event is kept). The same here: every write of an Event
//! takes a lease from its write instant, [`spawn_event_expiry`] sweeps,
//! and an expired Event goes through the store's ordinary removal (a
//! `DELETED` to watchers, a new resource version).
//!
//! The TTL is scenario time (the sim's [`SimClock`]): an hour at
//! `--speed 100` is 36 s of wall time.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use infera_sim_core::clock::SimClock;
use infera_sim_core::kind::Kind;

use crate::{Inner, NameKey, State, Store};

/// kube-apiserver's `--event-ttl` default.
pub const DEFAULT_EVENT_TTL: Duration = Duration::from_secs(3600);

/// etcd's lessor looks for expired leases this often (wall clock).
const SWEEP_EVERY: Duration = Duration::from_millis(500);

impl State {
    /// Give a write of `kind` at `key` a lease, when that kind expires.
    pub(crate) fn attach_lease(&mut self, kind: Kind, key: &NameKey, written: Instant) {
        if kind == Kind::Event && self.event_ttl.is_some() {
            self.leases.push_back((written, key.clone()));
        }
    }

    /// The keys of Events whose lease ended at or before `now` (stale
    /// leases, of Events written since or gone, are dropped on the way).
    fn expired(&mut self, now: Instant) -> Vec<NameKey> {
        let Some(ttl) = self.event_ttl else {
            return Vec::new();
        };
        let mut keys = Vec::new();
        while let Some((written, _)) = self.leases.front() {
            if written.checked_add(ttl).is_some_and(|end| end > now) {
                break;
            }
            let Some((written, key)) = self.leases.pop_front() else {
                break;
            };
            let current = self
                .objects
                .get(&Kind::Event)
                .and_then(|m| m.get(&key))
                .is_some_and(|o| o.written == written);
            if current {
                keys.push(key);
            }
        }
        keys
    }
}

impl Store {
    /// Expire Events `ttl` (wall clock) after their last write; `None`
    /// keeps them. Events already stored take their lease from now.
    pub fn set_event_ttl(&self, ttl: Option<Duration>) {
        let mut state = self.write();
        state.event_ttl = ttl.filter(|t| !t.is_zero());
        state.leases.clear();
        if state.event_ttl.is_none() {
            return;
        }
        let now = Instant::now();
        let keys: Vec<NameKey> = state
            .objects
            .get(&Kind::Event)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        state.leases.extend(keys.into_iter().map(|k| (now, k)));
    }

    /// Remove every Event whose lease ended at or before `now`, each with
    /// a `DELETED` to watchers; how many went.
    pub fn expire_leases(&self, now: Instant) -> usize {
        let mut state = self.write();
        let keys = state.expired(now);
        for key in &keys {
            Self::remove_locked(&self.inner.events, &mut state, Kind::Event, key);
        }
        keys.len()
    }

    /// Leases held (live and stale), for the bound's tests.
    pub fn lease_count(&self) -> usize {
        self.read().leases.len()
    }
}

/// Expire `store`'s Events `ttl` of scenario time after their last write,
/// swept every 500 ms of wall time as etcd's lessor (more often when the
/// TTL is shorter than that in wall time). `None` for a zero TTL (Events
/// kept, as upstream's `--event-ttl 0`). The task ends with the store.
pub fn spawn_event_expiry(
    store: &Store,
    ttl: Duration,
    clock: &SimClock,
) -> Option<tokio::task::JoinHandle<()>> {
    if ttl.is_zero() {
        store.set_event_ttl(None);
        return None;
    }
    let wall = clock.to_wall(ttl).max(Duration::from_millis(1));
    store.set_event_ttl(Some(wall));
    let every = SWEEP_EVERY.min(wall / 4).max(Duration::from_millis(1));
    let weak: Weak<Inner> = Arc::downgrade(&store.inner);
    Some(tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(inner) = weak.upgrade() else {
                return;
            };
            Store { inner }.expire_leases(Instant::now());
        }
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::EventType;

    fn event(name: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "default"}, "reason": "Pulled", "count": 1})
    }

    fn names(store: &Store) -> Vec<String> {
        let (events, _) = store.list(Kind::Event, None);
        events
            .iter()
            .filter_map(|e| e.pointer("/metadata/name").and_then(Value::as_str))
            .map(str::to_string)
            .collect()
    }

    /// An Event goes when its lease ends, and a watcher sees it DELETED
    /// (etcd's lease revoke is a delete), with a new resource version.
    #[test]
    fn an_event_expires_with_a_deleted_event() {
        let store = Store::new();
        let ttl = Duration::from_secs(3600);
        store.set_event_ttl(Some(ttl));
        store.create(Kind::Event, event("a")).unwrap();
        let mut rx = store.subscribe();
        let before = store.resource_version();
        assert_eq!(store.expire_leases(Instant::now()), 0);
        assert_eq!(names(&store), ["a"]);
        assert_eq!(store.expire_leases(Instant::now() + ttl), 1);
        assert!(names(&store).is_empty());
        let deleted = rx.try_recv().unwrap();
        assert_eq!(deleted.event, EventType::Deleted);
        assert_eq!(deleted.kind, Kind::Event);
        assert_eq!(deleted.object["metadata"]["name"], "a");
        assert_eq!(deleted.resource_version, before + 1);
        assert_eq!(store.lease_count(), 0);
    }

    /// Every write takes a fresh lease (upstream's TTLFunc on update): a
    /// bumped count keeps the Event past its first lease; its stale lease
    /// is dropped, not honoured.
    #[test]
    fn a_write_renews_the_lease() {
        let store = Store::new();
        let ttl = Duration::from_secs(3600);
        store.set_event_ttl(Some(ttl));
        store.create(Kind::Event, event("bumped")).unwrap();
        store.create(Kind::Event, event("quiet")).unwrap();
        let between = Instant::now();
        store
            .mutate(Kind::Event, Some("default"), "bumped", |e| {
                e["count"] = json!(2);
            })
            .unwrap();
        assert_eq!(store.expire_leases(between + ttl), 1);
        assert_eq!(names(&store), ["bumped"]);
        assert_eq!(store.lease_count(), 1);
        assert_eq!(store.expire_leases(Instant::now() + ttl), 1);
        assert!(names(&store).is_empty());
    }

    /// No TTL (or 0): Events are kept and no lease is held; other kinds
    /// never take one.
    #[test]
    fn without_a_ttl_nothing_expires_or_is_held() {
        let store = Store::new();
        store.set_event_ttl(Some(Duration::ZERO));
        store.create(Kind::Event, event("kept")).unwrap();
        assert_eq!(store.lease_count(), 0);
        let later = Instant::now() + Duration::from_secs(86_400);
        assert_eq!(store.expire_leases(later), 0);
        assert_eq!(names(&store), ["kept"]);
        store.set_event_ttl(Some(Duration::from_secs(1)));
        assert_eq!(store.lease_count(), 1, "the stored Event takes a lease");
        store
            .create(Kind::Pod, json!({"metadata": {"name": "p"}}))
            .unwrap();
        assert_eq!(store.lease_count(), 1, "a pod takes none");
    }
}
