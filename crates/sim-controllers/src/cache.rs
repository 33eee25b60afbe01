//! The controllers' informer cache: every object they care about, indexed so
//! a reconcile touches only its own objects (pods by owner and by node).

#![allow(clippy::collapsible_if, clippy::collapsible_match)] // nested ifs mirror upstream Go control flow

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde::Deserialize;
use serde_json::Value;

use infera_model::scheduling::{self, NodeUsage, PodDemand};
use infera_sim_core::json::str_at;
use infera_sim_core::kind::Kind;

/// Namespace ("" for cluster-scoped) and name.
pub type Key = (String, String);

pub fn key_of(v: &Value) -> Key {
    (
        str_at(v, "/metadata/namespace").to_string(),
        str_at(v, "/metadata/name").to_string(),
    )
}

fn rv_of(v: &Value) -> u64 {
    str_at(v, "/metadata/resourceVersion").parse().unwrap_or(0)
}

/// The uid of the controlling owner, if any.
pub fn controller_uid(v: &Value) -> Option<&str> {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .and_then(|r| r.get("uid"))
        .and_then(Value::as_str)
}

/// Objects of one kind, indexed by key, uid and controlling owner.
#[derive(Default)]
pub struct Objects {
    map: BTreeMap<Key, Arc<Value>>,
    by_owner: HashMap<String, BTreeSet<Key>>,
    by_uid: HashMap<String, Key>,
}

impl Objects {
    /// Insert unless the cached copy is newer; true when it changed.
    pub fn upsert(&mut self, value: Arc<Value>) -> Option<Arc<Value>> {
        let key = key_of(&value);
        if let Some(old) = self.map.get(&key) {
            if rv_of(old) >= rv_of(&value)
                && str_at(old, "/metadata/uid") == str_at(&value, "/metadata/uid")
            {
                return None;
            }
        }
        let old = self.remove(&key);
        if let Some(owner) = controller_uid(&value) {
            self.by_owner
                .entry(owner.to_string())
                .or_default()
                .insert(key.clone());
        }
        self.by_uid
            .insert(str_at(&value, "/metadata/uid").to_string(), key.clone());
        self.map.insert(key, value.clone());
        Some(old.unwrap_or(value))
    }

    pub fn remove(&mut self, key: &Key) -> Option<Arc<Value>> {
        let old = self.map.remove(key)?;
        if let Some(owner) = controller_uid(&old)
            && let Some(set) = self.by_owner.get_mut(owner)
        {
            set.remove(key);
            if set.is_empty() {
                self.by_owner.remove(owner);
            }
        }
        self.by_uid.remove(str_at(&old, "/metadata/uid"));
        Some(old)
    }

    pub fn get(&self, key: &Key) -> Option<&Arc<Value>> {
        self.map.get(key)
    }

    pub fn by_uid(&self, uid: &str) -> Option<&Arc<Value>> {
        self.by_uid.get(uid).and_then(|k| self.map.get(k))
    }

    pub fn has_uid(&self, uid: &str) -> bool {
        self.by_uid.contains_key(uid)
    }

    pub fn owned_by(&self, uid: &str) -> Vec<Arc<Value>> {
        self.by_owner
            .get(uid)
            .map(|keys| {
                keys.iter()
                    .filter_map(|k| self.map.get(k).cloned())
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn keys(&self) -> Vec<Key> {
        self.map.keys().cloned().collect()
    }

    pub fn values(&self) -> impl Iterator<Item = &Arc<Value>> {
        self.map.values()
    }
}

/// The resources the scheduler's score weighs, in weight order.
pub const SCORED: [&str; 3] = ["amd.com/gpu", "cpu", "memory"];

/// The scheduler's view of one pod: what it holds on its node, and the
/// typed pod while it waits to be scheduled. Re-derived only when a field the
/// fit reads changes (spec, labels, namespace, phase), so `typed`'s other
/// status fields may be stale.
pub struct SchedPod {
    /// Kept only while the pod is unbound (5,000 typed pods are ~40 MB);
    /// a bound pod is decoded again in the rare case pod affinity needs it.
    pub typed: Option<Arc<Pod>>,
    pub demand: PodDemand,
    /// `demand.requests` of the [`SCORED`] resources.
    scored: [i128; 3],
    /// The node `demand` is counted on ("" while unbound).
    node: String,
    /// `typed` was decoded from the latest value (false after a decode
    /// failure kept an older one, as the cache always did).
    current: bool,
}

/// The pods bound to one node and what they hold there, kept incrementally
/// (the scheduler reads it for every node and every pending pod).
#[derive(Default)]
pub struct NodePods {
    /// Every pod whose `spec.nodeName` is this node.
    pub keys: BTreeSet<Key>,
    /// Live (not Succeeded/Failed) typed pods, aggregated for the predicates.
    pub usage: NodeUsage,
    /// The [`SCORED`] requests of every typed pod here, finished ones too
    /// (what the score counts).
    pub scored_used: [i128; 3],
}

/// A typed node and its allocatable resources (milli-units).
pub struct SchedNode {
    pub node: Arc<Node>,
    pub allocatable: BTreeMap<String, i128>,
    /// `allocatable` of the [`SCORED`] resources.
    pub scored_allocatable: [i128; 3],
}

/// A node name's scheduler state: the typed Node once seen, and the pods
/// bound to that name (which may come first).
#[derive(Default)]
pub struct NodeEntry {
    pub node: Option<SchedNode>,
    pub pods: NodePods,
}

/// Everything the controller manager watches.
#[derive(Default)]
pub struct Cache {
    pub pods: Objects,
    pub replicasets: Objects,
    pub deployments: Objects,
    pub statefulsets: Objects,
    pub lws: Objects,
    pub ideps: Objects,
    pub nodes: Objects,
    pub pdbs: Objects,
    /// Typed pods for the scheduler.
    pub sched_pods: HashMap<Key, SchedPod>,
    /// Per node name, in name order (the scheduler's iteration order).
    pub node_entries: BTreeMap<String, NodeEntry>,
    /// Something that garbage collection reads changed since its last pass:
    /// an object appeared, went, or changed its owners or uid.
    pub gc_dirty: bool,
}

/// Whether two versions of a pod read the same to the scheduler.
fn same_for_scheduling(a: &Value, b: &Value) -> bool {
    a.get("spec") == b.get("spec")
        && a.pointer("/metadata/labels") == b.pointer("/metadata/labels")
        && a.pointer("/metadata/namespace") == b.pointer("/metadata/namespace")
        && a.pointer("/status/phase") == b.pointer("/status/phase")
}

fn scored(map: &BTreeMap<String, i128>) -> [i128; 3] {
    SCORED.map(|r| map.get(r).copied().unwrap_or(0))
}

impl Cache {
    pub fn objects_mut(&mut self, kind: Kind) -> Option<&mut Objects> {
        match kind {
            Kind::Pod => Some(&mut self.pods),
            Kind::ReplicaSet => Some(&mut self.replicasets),
            Kind::Deployment => Some(&mut self.deployments),
            Kind::StatefulSet => Some(&mut self.statefulsets),
            Kind::LeaderWorkerSet => Some(&mut self.lws),
            Kind::InferaDeployment => Some(&mut self.ideps),
            Kind::Node => Some(&mut self.nodes),
            Kind::PodDisruptionBudget => Some(&mut self.pdbs),
            _ => None,
        }
    }

    /// Apply an upsert; returns the previous value (or the new one when it
    /// was absent) when something changed.
    pub fn upsert(&mut self, kind: Kind, value: Arc<Value>) -> Option<Arc<Value>> {
        let old = self.objects_mut(kind)?.upsert(value.clone())?;
        if Arc::ptr_eq(&old, &value)
            || old.pointer("/metadata/ownerReferences")
                != value.pointer("/metadata/ownerReferences")
            || str_at(&old, "/metadata/uid") != str_at(&value, "/metadata/uid")
        {
            self.gc_dirty = true;
        }
        match kind {
            Kind::Pod => self.index_pod(&old, &value),
            Kind::Node => {
                if let Ok(node) = Node::deserialize(&*value) {
                    let allocatable = scheduling::allocatable(&node);
                    let scored_allocatable = scored(&allocatable);
                    self.node_entries
                        .entry(str_at(&value, "/metadata/name").to_string())
                        .or_default()
                        .node = Some(SchedNode {
                        node: Arc::new(node),
                        allocatable,
                        scored_allocatable,
                    });
                }
            }
            _ => {}
        }
        Some(old)
    }

    pub fn remove(&mut self, kind: Kind, key: &Key) -> Option<Arc<Value>> {
        let old = self.objects_mut(kind)?.remove(key)?;
        self.gc_dirty = true;
        match kind {
            Kind::Pod => {
                self.uncount(key);
                self.sched_pods.remove(key);
                let node = str_at(&old, "/spec/nodeName");
                if let Some(n) = self.node_entries.get_mut(node) {
                    n.pods.keys.remove(key);
                }
            }
            Kind::Node => {
                if let Some(n) = self.node_entries.get_mut(&key.1) {
                    n.node = None;
                }
            }
            _ => {}
        }
        Some(old)
    }

    /// The number of typed nodes.
    pub fn node_count(&self) -> usize {
        self.node_entries
            .values()
            .filter(|n| n.node.is_some())
            .count()
    }

    /// Take a pod's demand off the node it is counted on.
    fn uncount(&mut self, key: &Key) {
        let Some(sp) = self.sched_pods.get(key) else {
            return;
        };
        if sp.node.is_empty() {
            return;
        }
        if let Some(n) = self.node_entries.get_mut(&sp.node) {
            n.pods.usage.remove(&sp.demand);
            for (used, value) in n.pods.scored_used.iter_mut().zip(sp.scored) {
                *used -= value;
            }
        }
    }

    fn index_pod(&mut self, old: &Arc<Value>, new: &Arc<Value>) {
        let key = key_of(new);
        let fresh = Arc::ptr_eq(old, new);
        let old_node = str_at(old, "/spec/nodeName");
        if let Some(n) = self.node_entries.get_mut(old_node) {
            n.pods.keys.remove(&key);
        }
        let node = str_at(new, "/spec/nodeName");
        if !node.is_empty() {
            self.node_entries
                .entry(node.to_string())
                .or_default()
                .pods
                .keys
                .insert(key.clone());
        }
        self.uncount(&key);
        let unchanged = !fresh
            && same_for_scheduling(old, new)
            && self.sched_pods.get(&key).is_some_and(|sp| sp.current);
        if !unchanged {
            match Pod::deserialize(&**new) {
                Ok(pod) => {
                    let demand = PodDemand::of(&pod);
                    let scored = scored(&demand.requests);
                    self.sched_pods.insert(
                        key.clone(),
                        SchedPod {
                            typed: node.is_empty().then(|| Arc::new(pod)),
                            demand,
                            scored,
                            node: String::new(),
                            current: true,
                        },
                    );
                }
                // Keep the last good decode (if any).
                Err(_) => {
                    if let Some(sp) = self.sched_pods.get_mut(&key) {
                        sp.current = false;
                    }
                }
            }
        }
        let Some(sp) = self.sched_pods.get_mut(&key) else {
            return;
        };
        sp.node = node.to_string();
        if node.is_empty() {
            return;
        }
        sp.typed = None;
        let n = &mut self.node_entries.entry(node.to_string()).or_default().pods;
        n.usage.add(&sp.demand);
        for (used, value) in n.scored_used.iter_mut().zip(sp.scored) {
            *used += value;
        }
    }

    /// The live (not Succeeded/Failed) pods of a node, typed.
    pub fn live_pods(&self, pods: &NodePods) -> Vec<Cow<'_, Pod>> {
        pods.keys
            .iter()
            .filter_map(|k| Some((k, self.sched_pods.get(k)?)))
            .filter(|(_, sp)| sp.demand.live)
            .filter_map(|(k, sp)| match sp.typed.as_deref() {
                Some(typed) => Some(Cow::Borrowed(typed)),
                None => Pod::deserialize(&**self.pods.get(k)?).ok().map(Cow::Owned),
            })
            .collect()
    }
}
