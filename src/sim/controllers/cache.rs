//! The controllers' informer cache: every object they care about, indexed so
//! a reconcile touches only its own objects (pods by owner and by node).

#![allow(clippy::collapsible_if, clippy::collapsible_match)] // nested ifs mirror upstream Go control flow

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::Value;

use crate::sim::store::Kind;

/// Namespace ("" for cluster-scoped) and name.
pub type Key = (String, String);

pub fn key_of(v: &Value) -> Key {
    (
        str_at(v, "/metadata/namespace").to_string(),
        str_at(v, "/metadata/name").to_string(),
    )
}

pub fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

pub fn i64_at(v: &Value, pointer: &str) -> Option<i64> {
    v.pointer(pointer).and_then(Value::as_i64)
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

/// All owner uids.
pub fn owner_uids(v: &Value) -> Vec<String> {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
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

/// Everything the controller manager watches.
#[derive(Default)]
pub struct Cache {
    pub pods: Objects,
    pub replicasets: Objects,
    pub deployments: Objects,
    pub ideps: Objects,
    pub nodes: Objects,
    /// Typed pods for the scheduler, and the pods bound to each node.
    pub typed_pods: HashMap<Key, Arc<Pod>>,
    pub pods_by_node: HashMap<String, BTreeSet<Key>>,
    pub typed_nodes: BTreeMap<String, Arc<Node>>,
}

impl Cache {
    pub fn objects_mut(&mut self, kind: Kind) -> Option<&mut Objects> {
        match kind {
            Kind::Pod => Some(&mut self.pods),
            Kind::ReplicaSet => Some(&mut self.replicasets),
            Kind::Deployment => Some(&mut self.deployments),
            Kind::InferaDeployment => Some(&mut self.ideps),
            Kind::Node => Some(&mut self.nodes),
            _ => None,
        }
    }

    /// Apply an upsert; returns the previous value (or the new one when it
    /// was absent) when something changed.
    pub fn upsert(&mut self, kind: Kind, value: Arc<Value>) -> Option<Arc<Value>> {
        let old = self.objects_mut(kind)?.upsert(value.clone())?;
        match kind {
            Kind::Pod => self.index_pod(&old, &value),
            Kind::Node => {
                if let Ok(node) = serde_json::from_value::<Node>((*value).clone()) {
                    self.typed_nodes
                        .insert(str_at(&value, "/metadata/name").to_string(), Arc::new(node));
                }
            }
            _ => {}
        }
        Some(old)
    }

    pub fn remove(&mut self, kind: Kind, key: &Key) -> Option<Arc<Value>> {
        let old = self.objects_mut(kind)?.remove(key)?;
        match kind {
            Kind::Pod => {
                self.typed_pods.remove(key);
                let node = str_at(&old, "/spec/nodeName");
                if let Some(set) = self.pods_by_node.get_mut(node) {
                    set.remove(key);
                }
            }
            Kind::Node => {
                self.typed_nodes.remove(&key.1);
            }
            _ => {}
        }
        Some(old)
    }

    fn index_pod(&mut self, old: &Value, new: &Arc<Value>) {
        let key = key_of(new);
        let old_node = str_at(old, "/spec/nodeName");
        if let Some(set) = self.pods_by_node.get_mut(old_node) {
            set.remove(&key);
        }
        let node = str_at(new, "/spec/nodeName");
        if !node.is_empty() {
            self.pods_by_node
                .entry(node.to_string())
                .or_default()
                .insert(key.clone());
        }
        if let Ok(pod) = serde_json::from_value::<Pod>((**new).clone()) {
            self.typed_pods.insert(key, Arc::new(pod));
        }
    }

    pub fn pods_on_node(&self, node: &str) -> Vec<&Pod> {
        self.pods_by_node
            .get(node)
            .map(|keys| {
                keys.iter()
                    .filter_map(|k| self.typed_pods.get(k).map(|p| p.as_ref()))
                    .collect()
            })
            .unwrap_or_default()
    }
}
