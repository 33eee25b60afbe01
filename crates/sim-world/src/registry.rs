//! The PD barrier's registry: the registered prefill and decode workers of
//! each (namespace, InferaDeployment), each with its KV compatibility
//! identity, and the check a starting worker runs against them under an
//! operator with the barrier (PR #176; `kubelet.rs` calls it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::lock;
use infera_model::kv::KvIdentity;

/// The registered prefill and decode workers per (namespace,
/// InferaDeployment).
#[derive(Default)]
pub(crate) struct Registry {
    members: Mutex<HashMap<(String, String), Vec<Member>>>,
    changed: Notify,
}

/// A registered prefill or decode.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Member {
    pub pod: String,
    pub role: String,
    pub kv: KvIdentity,
}

/// A registered worker's place in the registry, left when dropped.
pub(crate) struct Membership(Arc<Registry>, (String, String), String);

impl Drop for Membership {
    fn drop(&mut self) {
        self.0.leave(&self.1, &self.2);
    }
}

impl Registry {
    /// Register `m` under `key` until the returned membership is dropped.
    pub(crate) fn join(this: &Arc<Registry>, key: &(String, String), m: Member) -> Membership {
        let pod = m.pod.clone();
        lock(&this.members).entry(key.clone()).or_default().push(m);
        this.changed.notify_waiters();
        Membership(this.clone(), key.clone(), pod)
    }

    fn leave(&self, key: &(String, String), pod: &str) {
        if let Some(list) = lock(&self.members).get_mut(key) {
            list.retain(|m| m.pod != pod);
        }
        self.changed.notify_waiters();
    }

    /// Notified on every registration and departure.
    pub(crate) fn changed(&self) -> &Notify {
        &self.changed
    }

    /// The registered workers of `role`, by pod name.
    fn of_role(&self, key: &(String, String), role: &str) -> Vec<Member> {
        let mut list: Vec<Member> = lock(&self.members)
            .get(key)
            .into_iter()
            .flatten()
            .filter(|m| m.role == role)
            .cloned()
            .collect();
        list.sort_by(|a, b| a.pod.cmp(&b.pod));
        list
    }

    /// Whether a decode is registered under `key` (a starting prefill's
    /// barrier waits for one).
    pub(crate) fn has(&self, key: &(String, String)) -> bool {
        !self.of_role(key, "decode").is_empty()
    }

    /// Why a starting worker of `role` with identity `kv` fails the
    /// barrier: a decode probes every registered prefill, a prefill has
    /// moved its block to the first registered decode; an identity that
    /// differs fails. `None`: it passes.
    pub(crate) fn kv_conflict(
        &self,
        key: &(String, String),
        role: &str,
        kv: &KvIdentity,
    ) -> Option<String> {
        let peers = match role {
            "decode" => self.of_role(key, "prefill"),
            "prefill" => self.of_role(key, "decode").into_iter().take(1).collect(),
            _ => Vec::new(),
        };
        let peer = peers.into_iter().find(|m| m.kv != *kv)?;
        Some(format!(
            "KV compatibility check with {} {} failed: {}",
            peer.role,
            peer.pod,
            kv.describe_change(&peer.kv)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Container;

    fn kv(image: &str) -> KvIdentity {
        let command = ["python3", "-m", "infera.engine.sglang"];
        let c = Container {
            image: Some(image.into()),
            command: Some(command.into_iter().map(String::from).collect()),
            ..Container::default()
        };
        KvIdentity::of(&c).unwrap_or_else(|| panic!("an engine"))
    }

    fn member(pod: &str, role: &str, image: &str) -> Member {
        Member {
            pod: pod.into(),
            role: role.into(),
            kv: kv(image),
        }
    }

    /// A decode fails on any registered prefill that differs, a prefill on
    /// the first registered decode; a departure clears the conflict.
    #[test]
    fn conflicts_follow_the_registered_peers() {
        let r = Arc::new(Registry::default());
        let key = ("llm".to_string(), "llama".to_string());
        let old = Registry::join(&r, &key, member("p-old", "prefill", "i:1"));
        let _d = Registry::join(&r, &key, member("d-a", "decode", "i:1"));
        assert!(r.has(&key));
        assert_eq!(r.kv_conflict(&key, "decode", &kv("i:1")), None);
        let why = r.kv_conflict(&key, "decode", &kv("i:2"));
        assert_eq!(
            why.as_deref(),
            Some("KV compatibility check with prefill p-old failed: engine version 2 → 1")
        );
        assert!(r.kv_conflict(&key, "prefill", &kv("i:2")).is_some());
        drop(old);
        assert_eq!(r.kv_conflict(&key, "decode", &kv("i:2")), None);
        assert_eq!(r.kv_conflict(&key, "mixed", &kv("i:2")), None);
    }
}
