//! The kubelet's pod manager: watches pods (kube::runtime's watcher, with
//! backoff and relists), starts a task for each pod bound to a simulated
//! node, tells it about deletion, crashes and node faults, and drops it
//! when the pod is gone.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::kubelet::{PodSignal, PodStart, Registry, run_pod};
use super::{PodFault, Shared, listener};

type Key = (String, String);

struct Task {
    uid: String,
    node: String,
    signal: watch::Sender<PodSignal>,
    handle: JoinHandle<()>,
}

impl Drop for Task {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

struct Manager {
    shared: Arc<Shared>,
    nodes: BTreeSet<String>,
    tasks: HashMap<Key, Task>,
    crashes: HashMap<Key, u64>,
    registry: Arc<Registry>,
    rng: ChaCha8Rng,
    /// Keys listed since the watcher's last `Init`.
    listing: Option<HashSet<Key>>,
}

/// Run the pod manager until aborted.
pub(super) async fn run(shared: Arc<Shared>, mut faults: mpsc::UnboundedReceiver<PodFault>) {
    let api: Api<Pod> = Api::all(shared.client.clone());
    let stream =
        watcher::watcher(api, watcher::Config::default()).backoff(infera_cluster::watch_backoff());
    let mut stream = std::pin::pin!(stream);
    let mut m = Manager {
        nodes: shared.node_names().into_iter().collect(),
        rng: ChaCha8Rng::seed_from_u64(shared.scenario.seed),
        shared,
        tasks: HashMap::new(),
        crashes: HashMap::new(),
        registry: Arc::new(Registry::default()),
        listing: None,
    };
    loop {
        tokio::select! {
            event = stream.next() => match event {
                Some(Ok(e)) => m.on_event(e),
                // The watcher backs off and relists by itself.
                Some(Err(_)) => {}
                None => break,
            },
            Some(fault) = faults.recv() => m.on_fault(fault),
        }
    }
}

fn key_of(pod: &Pod) -> Key {
    (
        pod.metadata.namespace.clone().unwrap_or_default(),
        pod.metadata.name.clone().unwrap_or_default(),
    )
}

impl Manager {
    fn on_event(&mut self, event: Event<Pod>) {
        match event {
            Event::Init => self.listing = Some(HashSet::new()),
            Event::InitApply(pod) => {
                if let Some(seen) = self.listing.as_mut() {
                    seen.insert(key_of(&pod));
                }
                self.on_pod(&pod);
            }
            Event::InitDone => {
                if let Some(seen) = self.listing.take() {
                    self.tasks.retain(|k, _| seen.contains(k));
                }
            }
            Event::Apply(pod) => self.on_pod(&pod),
            Event::Delete(pod) => {
                let key = key_of(&pod);
                if self
                    .tasks
                    .get(&key)
                    .is_some_and(|t| Some(&t.uid) == pod.metadata.uid.as_ref())
                {
                    self.tasks.remove(&key);
                }
                self.crashes.remove(&key);
            }
        }
    }

    fn on_pod(&mut self, pod: &Pod) {
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default();
        if !self.nodes.contains(&node) {
            return;
        }
        let key = key_of(pod);
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        if self.tasks.get(&key).is_some_and(|t| t.uid != uid) {
            self.tasks.remove(&key);
        }
        if !self.tasks.contains_key(&key) {
            let finished = pod
                .status
                .as_ref()
                .and_then(|s| s.phase.as_deref())
                .is_some_and(|p| p == "Succeeded" || p == "Failed");
            if finished || !self.spawn(key.clone(), pod, node) {
                return;
            }
        }
        self.signal(&key, pod.metadata.deletion_timestamp.is_some());
    }

    fn spawn(&mut self, key: Key, pod: &Pod, node: String) -> bool {
        let Ok(value) = serde_json::to_value(pod) else {
            return false;
        };
        let Some(ip) = listener::allocate(self.shared.options.pod_cidr) else {
            eprintln!(
                "infera sim: no free address in {} for pod {}/{}",
                self.shared.options.pod_cidr, key.0, key.1
            );
            return false;
        };
        let span = self.shared.scenario.timings.weight_load_jitter.max(0.0);
        let jitter = if span > 0.0 {
            self.rng.random_range(-span..=span)
        } else {
            0.0
        };
        let (tx, rx) = watch::channel(PodSignal::default());
        let start = PodStart {
            shared: self.shared.clone(),
            registry: self.registry.clone(),
            pod: value,
            ip,
            jitter,
            signal: rx,
        };
        let handle = tokio::spawn(run_pod(start));
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        self.tasks.insert(
            key,
            Task {
                uid,
                node,
                signal: tx,
                handle,
            },
        );
        true
    }

    /// Tell a pod's task what it should know now.
    fn signal(&self, key: &Key, deleting: bool) {
        let Some(task) = self.tasks.get(key) else {
            return;
        };
        let new = PodSignal {
            deleting: deleting || task.signal.borrow().deleting,
            crashes: self.crashes.get(key).copied().unwrap_or(0),
            node_not_ready: self.shared.node_not_ready(&task.node),
        };
        task.signal.send_if_modified(|s| {
            let changed = *s != new;
            *s = new;
            changed
        });
    }

    fn on_fault(&mut self, fault: PodFault) {
        let keys: Vec<Key> = self.tasks.keys().cloned().collect();
        for key in keys {
            if let PodFault::Crash { namespace, prefix } = &fault {
                if key.0 != *namespace || !key.1.starts_with(prefix.as_str()) {
                    continue;
                }
                *self.crashes.entry(key.clone()).or_default() += 1;
            }
            self.signal(&key, false);
        }
    }
}
