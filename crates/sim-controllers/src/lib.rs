//! The simulated control plane — what a real cluster has: Deployment,
//! ReplicaSet, StatefulSet, disruption, garbage collector and scheduler,
//! and the LeaderWorkerSet controller, in one manager loop fed by
//! `store.subscribe()` events (plus timers and periodic resyncs). These
//! controllers use the Store directly rather than the HTTP API (a
//! documented simplification); every write goes through the cache at once,
//! so there are no duplicate creations. The kubelet, the nodes' heartbeats,
//! the infera operator and the scenario's podFaults are the world's
//! (`infera_sim_world`), which runs over the HTTP API.

#![allow(clippy::collapsible_if, clippy::collapsible_match)] // nested ifs mirror upstream Go control flow

mod bounded;
mod cache;
pub mod deployment;
pub mod disruption;
mod leaderworkerset;
pub mod nodelifecycle;
mod replicaset;
mod scheduler;
mod statefulset;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use cache::{Cache, Key, key_of};

use infera_sim_core::clock::SimClock;
use infera_sim_core::json::str_at;
use infera_sim_core::kind::Kind;
use infera_sim_scenario::Scenario;
use infera_sim_store::{EventType, Store};
pub use nodelifecycle::StoppedKubelets;

/// A unit of controller work.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Work {
    Deployment(Key),
    ReplicaSet(Key),
    StatefulSet(Key),
    LeaderWorkerSet(Key),
    Disruption(Key),
    NodeHealth,
    Schedule,
    Resync,
}

/// Running controllers; dropping or `shutdown` stops them.
pub struct ControllerHandle {
    tasks: Vec<JoinHandle<()>>,
    stop: watch::Sender<bool>,
}

impl ControllerHandle {
    pub fn shutdown(self) {
        let _ = self.stop.send(true);
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Start every controller on `store` (the scenario is the world's business;
/// `kubelets` is where the embedded world says which kubelets stopped).
pub fn start(
    store: Store,
    clock: SimClock,
    _scenario: &Scenario,
    kubelets: StoppedKubelets,
) -> ControllerHandle {
    let (stop, stop_rx) = watch::channel(false);
    let rx = store.subscribe();
    let mut manager = Manager::new(store, clock);
    manager.kubelets = kubelets;
    let task = tokio::spawn(manager.run(rx, stop_rx));
    ControllerHandle {
        tasks: vec![task],
        stop,
    }
}

pub(crate) struct Manager {
    store: Store,
    clock: SimClock,
    cache: Cache,
    dirty: BTreeSet<Work>,
    timers: bounded::Timers<Work>,
    pending: BTreeSet<Key>,
    /// The scheduler's FailedScheduling Events by (pod uid, message).
    events: bounded::EventNames<(String, String)>,
    event_seq: u64,
    /// ReplicaSet uid -> (template, template without the hash label), see
    /// `deployment::util::normalized_template`.
    rs_templates: HashMap<String, (Value, Value)>,
    /// Passes `process` ran since the manager last waited.
    passes: u32,
    /// The rest of a pass that `process` cut short, in order.
    resume: VecDeque<Work>,
    /// Deployments whose last sync changed nothing, with the versions it
    /// read (see `sync_deployment`).
    settled: HashMap<Key, Vec<u64>>,
    /// Timers set so far.
    requeues: u64,
    /// Kubelets the embedded world has stopped (node lifecycle).
    kubelets: StoppedKubelets,
}

/// Passes of dirty work per wake-up.
const PASSES: u32 = 8;
/// How long `process` keeps the worker thread before yielding it.
const SLICE: Duration = Duration::from_millis(1);

impl Manager {
    fn new(store: Store, clock: SimClock) -> Manager {
        Manager {
            store,
            clock,
            cache: Cache::default(),
            dirty: BTreeSet::new(),
            timers: bounded::Timers::default(),
            pending: BTreeSet::new(),
            events: bounded::EventNames::default(),
            event_seq: 0,
            rs_templates: HashMap::new(),
            passes: 0,
            resume: VecDeque::new(),
            settled: HashMap::new(),
            requeues: 0,
            kubelets: StoppedKubelets::default(),
        }
    }

    fn relist(&mut self) {
        for kind in [
            Kind::Node,
            Kind::InferaDeployment,
            Kind::Deployment,
            Kind::ReplicaSet,
            Kind::StatefulSet,
            Kind::LeaderWorkerSet,
            Kind::Pod,
            Kind::PodDisruptionBudget,
        ] {
            let (items, _) = self.store.list_stored(kind, None);
            let present: BTreeSet<Key> = items.iter().map(|o| key_of(o.value())).collect();
            if let Some(objs) = self.cache.objects_mut(kind) {
                for k in objs.keys() {
                    if !present.contains(&k) {
                        self.cache.remove(kind, &k);
                    }
                }
            }
            for item in items {
                self.absorb(kind, item.value_arc());
            }
        }
    }

    async fn run(
        mut self,
        mut rx: broadcast::Receiver<StoreEvent>,
        mut stop: watch::Receiver<bool>,
    ) {
        self.relist();
        self.requeue(Work::Resync, Duration::from_secs(15));
        loop {
            self.passes = 0;
            while self.process() {
                // A long burst hands the worker thread back between slices:
                // tasks woken on this thread (API watch streams, kubelets)
                // would otherwise wait behind it.
                tokio::task::yield_now().await;
            }
            let next = self.timers.next();
            tokio::select! {
                _ = stop.changed() => break,
                event = rx.recv() => match event {
                    Ok(e) => self.on_event(e),
                    Err(broadcast::error::RecvError::Lagged(_)) => self.relist(),
                    Err(broadcast::error::RecvError::Closed) => break,
                },
                _ = async { match next { Some(at) => tokio::time::sleep_until(at.into()).await, None => std::future::pending().await } } => {}
            }
            // Drain what else is queued so a burst is handled in one pass.
            loop {
                match rx.try_recv() {
                    Ok(e) => self.on_event(e),
                    Err(broadcast::error::TryRecvError::Lagged(_)) => self.relist(),
                    Err(_) => break,
                }
            }
            self.dirty.extend(self.timers.due(Instant::now()));
        }
    }

    fn on_event(&mut self, e: StoreEvent) {
        if e.event == EventType::Deleted {
            let key = key_of(&e.object);
            if let Some(old) = self.cache.remove(e.kind, &key) {
                self.mark_for(e.kind, &old, true);
            }
        } else {
            // The cache shares the store's copy: no deep clone per event.
            self.absorb(e.kind, e.object);
        }
    }

    /// Put an object into the cache and mark what depends on it.
    fn absorb(&mut self, kind: Kind, value: impl Into<Arc<Value>>) -> Arc<Value> {
        let value = value.into();
        if self.cache.upsert(kind, value.clone()).is_some() {
            self.mark_for(kind, &value, false);
        }
        value
    }

    fn mark_for(&mut self, kind: Kind, v: &Value, deleted: bool) {
        let key = key_of(v);
        let owner = cache::controller_uid(v).map(str::to_string);
        if matches!(
            kind,
            Kind::Pod | Kind::ReplicaSet | Kind::Deployment | Kind::StatefulSet
        ) {
            self.mark_pdbs(&key.0);
        }
        match kind {
            Kind::PodDisruptionBudget => {
                if !deleted {
                    self.dirty.insert(Work::Disruption(key));
                }
                return;
            }
            Kind::Pod => {
                if let Some(rs) = owner
                    .as_deref()
                    .and_then(|u| self.cache.replicasets.by_uid(u))
                {
                    self.dirty.insert(Work::ReplicaSet(key_of(rs)));
                }
                self.mark_stateful_owners(v, owner.as_deref());
                if deleted {
                    self.pending.remove(&key);
                    self.dirty.insert(Work::Schedule);
                    return;
                }
                let node = str_at(v, "/spec/nodeName");
                if node.is_empty() && v.pointer("/metadata/deletionTimestamp").is_none() {
                    if self.pending.insert(key.clone()) {
                        self.dirty.insert(Work::Schedule);
                    }
                }
            }
            Kind::ReplicaSet => {
                if deleted {
                    self.rs_templates.remove(str_at(v, "/metadata/uid"));
                }
                self.dirty.insert(Work::ReplicaSet(key));
                if let Some(d) = owner
                    .as_deref()
                    .and_then(|u| self.cache.deployments.by_uid(u))
                {
                    self.dirty.insert(Work::Deployment(key_of(d)));
                }
            }
            Kind::StatefulSet => {
                self.dirty.insert(Work::StatefulSet(key));
                self.mark_stateful_owners(v, None);
            }
            Kind::LeaderWorkerSet => {
                self.dirty.insert(Work::LeaderWorkerSet(key));
            }
            Kind::Deployment => {
                if deleted {
                    self.settled.remove(&key);
                } else {
                    self.dirty.insert(Work::Deployment(key));
                }
            }
            Kind::Node => {
                self.dirty.insert(Work::Schedule);
                self.dirty.insert(Work::NodeHealth);
            }
            _ => {}
        }
        if deleted {
            self.dirty.insert(Work::Resync);
        }
    }

    /// Run `work` after `after` of scenario time.
    fn requeue(&mut self, work: Work, after: Duration) {
        self.requeues += 1;
        let at = Instant::now() + self.clock.to_wall(after);
        self.timers.push(at, work);
    }

    /// Write `.status` when it differs from the cached object's.
    fn write_status(&mut self, kind: Kind, obj: &Value, status: Value) {
        if obj.get("status") == Some(&status) {
            return;
        }
        let (ns, name) = key_of(obj);
        let ns = if ns.is_empty() { None } else { Some(ns) };
        if let Ok(updated) = self.store.mutate_shared(kind, ns.as_deref(), &name, |v| {
            v["status"] = status.clone();
        }) {
            self.absorb(kind, updated);
        }
    }

    /// Run the dirty work: at most [`PASSES`] passes (writes mark more
    /// work, which converges quickly) per wake-up. Returns true when it
    /// stopped after [`SLICE`] with work left: the caller yields the thread
    /// and calls again, which carries on exactly where this call stopped.
    fn process(&mut self) -> bool {
        let started = Instant::now();
        loop {
            if self.resume.is_empty() {
                if self.passes >= PASSES || self.dirty.is_empty() {
                    return false;
                }
                self.passes += 1;
                self.resume = std::mem::take(&mut self.dirty).into_iter().collect();
            }
            while let Some(w) = self.resume.pop_front() {
                match w {
                    Work::Deployment(k) => self.sync_deployment(&k),
                    Work::ReplicaSet(k) => self.sync_replicaset(&k),
                    Work::StatefulSet(k) => self.sync_statefulset(&k),
                    Work::LeaderWorkerSet(k) => self.sync_leaderworkerset(&k),
                    Work::Disruption(k) => self.sync_pdb(&k),
                    Work::NodeHealth => self.monitor_nodes(),
                    Work::Schedule => self.schedule_pending(),
                    Work::Resync => self.resync(),
                }
                if started.elapsed() >= SLICE
                    && (!self.resume.is_empty() || (self.passes < PASSES && !self.dirty.is_empty()))
                {
                    return true;
                }
            }
        }
    }

    /// Periodic: GC, scheduler retry, and a full controller pass
    /// (time-based conditions).
    fn resync(&mut self) {
        self.collect_garbage();
        self.dirty.insert(Work::NodeHealth);
        for k in self.cache.deployments.keys() {
            self.dirty.insert(Work::Deployment(k));
        }
        for k in self.cache.statefulsets.keys() {
            self.dirty.insert(Work::StatefulSet(k));
        }
        for k in self.cache.lws.keys() {
            self.dirty.insert(Work::LeaderWorkerSet(k));
        }
        if !self.pending.is_empty() {
            self.dirty.insert(Work::Schedule);
        }
        if !self.timers.contains(&Work::Resync) {
            self.requeue(Work::Resync, Duration::from_secs(15));
        }
    }

    /// Background garbage collection by ownerReferences.
    fn collect_garbage(&mut self) {
        // A pass that deleted nothing finds nothing again until an object
        // appears, goes, or changes its owners (the cache tracks that).
        if !std::mem::take(&mut self.cache.gc_dirty) {
            return;
        }
        let mut doomed: Vec<(Kind, Key)> = Vec::new();
        let alive = |c: &Cache, uid: &str| {
            c.deployments.has_uid(uid)
                || c.replicasets.has_uid(uid)
                || c.ideps.has_uid(uid)
                || c.statefulsets.has_uid(uid)
                || c.lws.has_uid(uid)
                || c.pods.has_uid(uid)
        };
        for (kind, objs) in [
            (Kind::ReplicaSet, &self.cache.replicasets),
            (Kind::Deployment, &self.cache.deployments),
            (Kind::StatefulSet, &self.cache.statefulsets),
            (Kind::Pod, &self.cache.pods),
        ] {
            for v in objs.values() {
                let Some(refs) = v
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                else {
                    continue;
                };
                let mut owners = refs
                    .iter()
                    .filter_map(|r| r.get("uid").and_then(Value::as_str))
                    .peekable();
                if owners.peek().is_some()
                    && owners.all(|u| !alive(&self.cache, u))
                    && v.pointer("/metadata/deletionTimestamp").is_none()
                {
                    doomed.push((kind, key_of(v)));
                }
            }
        }
        if !doomed.is_empty() {
            // Look again next time, as every pass used to.
            self.cache.gc_dirty = true;
        }
        for (kind, (ns, name)) in doomed {
            let _ = self.store.delete(kind, Some(&ns), &name, None);
        }
    }
}

use infera_sim_store::StoreEvent;
