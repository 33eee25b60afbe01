//! The simulated control plane: Deployment, ReplicaSet, garbage collector,
//! scheduler and infera operator in one manager loop fed by
//! `store.subscribe()` events (plus timers and periodic resyncs), and one
//! kubelet task per bound pod. Controllers use the Store directly rather than
//! the HTTP API (a documented simplification); every write goes through the
//! cache at once, so there are no duplicate creations.

#![allow(clippy::collapsible_if, clippy::collapsible_match)] // nested ifs mirror upstream Go control flow

mod cache;
pub mod deployment;
pub mod kubelet;
mod operator;
mod scheduler;

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use cache::{Cache, Key, key_of, str_at};
use kubelet::{KubeletCtx, PodSignal, Registry};

use crate::clock::SimClock;
use crate::scenario::Scenario;
use crate::store::{EventType, Kind, Store};

/// A unit of controller work.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Work {
    Deployment(Key),
    ReplicaSet(Key),
    Idep(Key),
    Schedule,
    Resync,
    Fault(usize),
    NodeRecover(String),
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

/// Start every controller for `scenario` on `store`.
pub fn start(store: Store, clock: SimClock, scenario: &Scenario) -> ControllerHandle {
    let (stop, stop_rx) = watch::channel(false);
    let rx = store.subscribe();
    let manager = Manager::new(store, clock, scenario);
    let task = tokio::spawn(manager.run(rx, stop_rx));
    ControllerHandle {
        tasks: vec![task],
        stop,
    }
}

struct PodTask {
    signal: watch::Sender<PodSignal>,
    handle: JoinHandle<()>,
}

pub(crate) struct Manager {
    store: Store,
    clock: SimClock,
    cache: Cache,
    scenario: Scenario,
    dirty: BTreeSet<Work>,
    timers: BinaryHeap<Reverse<(Instant, Work)>>,
    pending: BTreeSet<Key>,
    events: HashMap<(String, String), String>,
    event_seq: u64,
    pods: HashMap<Key, PodTask>,
    kubelet: KubeletCtx,
    rng: ChaCha8Rng,
    not_ready_nodes: BTreeSet<String>,
    crashes: HashMap<Key, u64>,
    /// ReplicaSet uid -> (template, template without the hash label), see
    /// `deployment::normalized_template`.
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
}

/// Passes of dirty work per wake-up.
const PASSES: u32 = 8;
/// How long `process` keeps the worker thread before yielding it.
const SLICE: Duration = Duration::from_millis(1);

impl Manager {
    fn new(store: Store, clock: SimClock, scenario: &Scenario) -> Manager {
        let kubelet = KubeletCtx {
            store: store.clone(),
            clock: clock.clone(),
            timings: scenario.timings.clone(),
            registry: Arc::new(Registry::default()),
        };
        Manager {
            store,
            clock,
            cache: Cache::default(),
            scenario: scenario.clone(),
            dirty: BTreeSet::new(),
            timers: BinaryHeap::new(),
            pending: BTreeSet::new(),
            events: HashMap::new(),
            event_seq: 0,
            pods: HashMap::new(),
            kubelet,
            rng: ChaCha8Rng::seed_from_u64(scenario.seed),
            not_ready_nodes: BTreeSet::new(),
            crashes: HashMap::new(),
            rs_templates: HashMap::new(),
            passes: 0,
            resume: VecDeque::new(),
            settled: HashMap::new(),
            requeues: 0,
        }
    }

    fn relist(&mut self) {
        for kind in [
            Kind::Node,
            Kind::InferaDeployment,
            Kind::Deployment,
            Kind::ReplicaSet,
            Kind::Pod,
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
        for (i, fault) in self.scenario.pod_faults.clone().iter().enumerate() {
            self.requeue(Work::Fault(i), Duration::from_secs_f64(fault.at.max(0.0)));
        }
        self.requeue(Work::Resync, Duration::from_secs(15));
        loop {
            self.passes = 0;
            while self.process() {
                // A long burst hands the worker thread back between slices:
                // tasks woken on this thread (API watch streams, kubelets)
                // would otherwise wait behind it.
                tokio::task::yield_now().await;
            }
            let next = self.timers.peek().map(|Reverse((at, _))| *at);
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
            let now = Instant::now();
            while let Some(Reverse((at, _))) = self.timers.peek() {
                if *at > now {
                    break;
                }
                if let Some(Reverse((_, work))) = self.timers.pop() {
                    self.dirty.insert(work);
                }
            }
        }
        for (_, task) in self.pods.drain() {
            task.handle.abort();
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
        match kind {
            Kind::Pod => {
                if let Some(rs) = owner
                    .as_deref()
                    .and_then(|u| self.cache.replicasets.by_uid(u))
                {
                    self.dirty.insert(Work::ReplicaSet(key_of(rs)));
                }
                if deleted {
                    self.pods.remove(&key);
                    self.pending.remove(&key);
                    self.dirty.insert(Work::Schedule);
                    return;
                }
                let node = str_at(v, "/spec/nodeName");
                if node.is_empty() && v.pointer("/metadata/deletionTimestamp").is_none() {
                    if self.pending.insert(key.clone()) {
                        self.dirty.insert(Work::Schedule);
                    }
                } else if !node.is_empty() && !self.pods.contains_key(&key) {
                    self.spawn_kubelet(key.clone(), node);
                }
                if let Some(task) = self.pods.get(&key) {
                    let deleting = v.pointer("/metadata/deletionTimestamp").is_some();
                    let node_bad = self.not_ready_nodes.contains(node);
                    let crashes = self.crashes.get(&key).copied().unwrap_or(0);
                    task.signal.send_if_modified(|s| {
                        let new = PodSignal {
                            deleting,
                            crashes,
                            node_not_ready: node_bad,
                        };
                        if *s != new {
                            *s = new;
                            true
                        } else {
                            false
                        }
                    });
                }
                if v.pointer("/metadata/deletionTimestamp").is_some()
                    || str_at(v, "/spec/nodeName").is_empty()
                {
                    // Nothing more.
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
            Kind::Deployment => {
                if deleted {
                    self.settled.remove(&key);
                } else {
                    self.dirty.insert(Work::Deployment(key));
                }
                if let Some(i) = owner.as_deref().and_then(|u| self.cache.ideps.by_uid(u)) {
                    self.dirty.insert(Work::Idep(key_of(i)));
                }
            }
            Kind::InferaDeployment => {
                if !deleted {
                    self.dirty.insert(Work::Idep(key));
                }
            }
            Kind::Node => {
                self.dirty.insert(Work::Schedule);
            }
            _ => {}
        }
        if deleted {
            self.dirty.insert(Work::Resync);
        }
    }

    fn spawn_kubelet(&mut self, key: Key, _node: &str) {
        let (tx, rx) = watch::channel(PodSignal::default());
        let jitter_span = self.scenario.timings.weight_load_jitter.max(0.0);
        let jitter = if jitter_span > 0.0 {
            self.rng.random_range(-jitter_span..=jitter_span)
        } else {
            0.0
        };
        let handle = tokio::spawn(kubelet::run_pod(
            self.kubelet.clone(),
            key.0.clone(),
            key.1.clone(),
            jitter,
            rx,
        ));
        self.pods.insert(key, PodTask { signal: tx, handle });
    }

    /// Run `work` after `after` of scenario time.
    fn requeue(&mut self, work: Work, after: Duration) {
        self.requeues += 1;
        let at = Instant::now() + self.clock.to_wall(after);
        self.timers.push(Reverse((at, work)));
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
                    Work::Idep(k) => self.sync_idep(&k),
                    Work::Deployment(k) => self.sync_deployment(&k),
                    Work::ReplicaSet(k) => self.sync_replicaset(&k),
                    Work::Schedule => self.schedule_pending(),
                    Work::Resync => self.resync(),
                    Work::Fault(i) => self.fire_fault(i),
                    Work::NodeRecover(n) => self.set_node_ready(&n, true),
                }
                if started.elapsed() >= SLICE
                    && (!self.resume.is_empty() || (self.passes < PASSES && !self.dirty.is_empty()))
                {
                    return true;
                }
            }
        }
    }

    /// Periodic: the operator's 15 s re-apply, GC, scheduler retry, and a
    /// full controller pass (time-based conditions).
    fn resync(&mut self) {
        self.collect_garbage();
        for k in self.cache.ideps.keys() {
            self.dirty.insert(Work::Idep(k));
        }
        for k in self.cache.deployments.keys() {
            self.dirty.insert(Work::Deployment(k));
        }
        if !self.pending.is_empty() {
            self.dirty.insert(Work::Schedule);
        }
        let already = self.timers.iter().any(|Reverse((_, w))| *w == Work::Resync);
        if !already {
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
                || c.pods.has_uid(uid)
        };
        for (kind, objs) in [
            (Kind::ReplicaSet, &self.cache.replicasets),
            (Kind::Deployment, &self.cache.deployments),
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

    fn fire_fault(&mut self, index: usize) {
        let Some(fault) = self.scenario.pod_faults.get(index).cloned() else {
            return;
        };
        if let Some(crash) = fault.crash {
            let keys: Vec<Key> = self
                .pods
                .keys()
                .filter(|(ns, name)| *ns == crash.namespace && name.starts_with(&crash.pod_prefix))
                .cloned()
                .collect();
            for key in keys {
                *self.crashes.entry(key.clone()).or_default() += 1;
                if let Some(v) = self.cache.pods.get(&key).cloned() {
                    self.mark_for(Kind::Pod, &v, false);
                }
            }
        }
        if let Some(nnr) = fault.node_not_ready {
            self.set_node_ready(&nnr.node, false);
            if let Some(d) = nnr.duration {
                self.requeue(
                    Work::NodeRecover(nnr.node.clone()),
                    Duration::from_secs_f64(d.max(0.0)),
                );
            }
        }
    }

    fn set_node_ready(&mut self, node: &str, ready: bool) {
        if ready {
            self.not_ready_nodes.remove(node);
        } else {
            self.not_ready_nodes.insert(node.to_string());
        }
        let now = self.clock.timestamp();
        let (status, reason, message) = if ready {
            ("True", "KubeletReady", "kubelet is posting ready status")
        } else {
            (
                "Unknown",
                "NodeStatusUnknown",
                "Kubelet stopped posting node status.",
            )
        };
        if let Ok(updated) = self.store.mutate_shared(Kind::Node, None, node, |v| {
            scheduler::set_pod_condition(
                v,
                serde_json::json!({"type": "Ready", "status": status, "reason": reason,
                "message": message, "lastHeartbeatTime": now, "lastTransitionTime": now}),
            );
        }) {
            self.absorb(Kind::Node, updated);
        }
        let keys: Vec<Key> = self.cache.pod_keys_on_node(node);
        for key in keys {
            if let Some(v) = self.cache.pods.get(&key).cloned() {
                self.mark_for(Kind::Pod, &v, false);
            }
        }
    }
}

use crate::store::StoreEvent;
