//! One list+watch cache for every consumer of a `kube::runtime::watcher`
//! stream (the rollout's step trackers, the Auditor, the Deployment views of
//! `rollout` and `audit --until-complete`).
//!
//! A re-list (`Init` … `InitApply` … `InitDone`, after a dropped watch, a
//! 410 Gone or an API restart) is buffered and swapped in atomically at
//! `InitDone`: the live view never passes through an empty or half-listed
//! state, so a re-list cannot show a spurious gap. An `Apply`/`Delete` that
//! arrives while a re-list is buffered updates both the live view and the
//! buffer. Objects the consumer does not want (`view` returns `None`) are
//! dropped from both.

use std::collections::BTreeMap;

use kube::runtime::watcher::Event;

/// What one event changed in the live view.
#[derive(Debug, PartialEq)]
pub enum Delta<V> {
    /// Nothing visible: a re-list began or buffered an object, or an unknown
    /// key was deleted.
    Nothing,
    /// `key` was inserted or replaced; its value is in the live view.
    Upserted(String),
    /// `key` left the live view (deleted, or no longer wanted).
    Removed(String, V),
    /// A re-list completed: the buffered list is now the live view; these
    /// entries were live before and are not in the new list.
    Relisted { vanished: Vec<(String, V)> },
}

/// The live view of one watch, keyed by the consumer's key.
#[derive(Debug, Clone)]
pub struct Reflector<V> {
    live: BTreeMap<String, V>,
    relist: Option<BTreeMap<String, V>>,
    lists: u64,
}

impl<V> Default for Reflector<V> {
    fn default() -> Self {
        Reflector {
            live: BTreeMap::new(),
            relist: None,
            lists: 0,
        }
    }
}

impl<V: Clone> Reflector<V> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Apply one watcher event. `key` names an object; `view` turns it into
    /// what the consumer keeps (`None`: not wanted).
    pub fn apply<K>(
        &mut self,
        event: &Event<K>,
        key: impl Fn(&K) -> String,
        mut view: impl FnMut(&K) -> Option<V>,
    ) -> Delta<V> {
        match event {
            Event::Init => {
                self.relist = Some(BTreeMap::new());
                Delta::Nothing
            }
            Event::InitApply(obj) => {
                let k = key(obj);
                let buffer = self.relist.get_or_insert_with(BTreeMap::new);
                match view(obj) {
                    Some(v) => buffer.insert(k, v),
                    None => buffer.remove(&k),
                };
                Delta::Nothing
            }
            Event::InitDone => {
                let listed = self.relist.take().unwrap_or_default();
                let old = std::mem::replace(&mut self.live, listed);
                self.lists += 1;
                let vanished = old
                    .into_iter()
                    .filter(|(k, _)| !self.live.contains_key(k))
                    .collect();
                Delta::Relisted { vanished }
            }
            Event::Apply(obj) => {
                let k = key(obj);
                match view(obj) {
                    Some(v) => {
                        if let Some(buffer) = self.relist.as_mut() {
                            buffer.insert(k.clone(), v.clone());
                        }
                        self.live.insert(k.clone(), v);
                        Delta::Upserted(k)
                    }
                    None => self.remove(k),
                }
            }
            Event::Delete(obj) => self.remove(key(obj)),
        }
    }

    fn remove(&mut self, k: String) -> Delta<V> {
        if let Some(buffer) = self.relist.as_mut() {
            buffer.remove(&k);
        }
        match self.live.remove(&k) {
            Some(v) => Delta::Removed(k, v),
            None => Delta::Nothing,
        }
    }
}

impl<V> Reflector<V> {
    /// The live view.
    pub fn get(&self, key: &str) -> Option<&V> {
        self.live.get(key)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.live.iter()
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.live.values()
    }

    pub fn len(&self) -> usize {
        self.live.len()
    }

    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// A re-list is being buffered (the live view is the previous list).
    pub fn relisting(&self) -> bool {
        self.relist.is_some()
    }

    /// How many complete lists were received (0: not synced yet).
    pub fn lists(&self) -> u64 {
        self.lists
    }

    /// At least one complete list was received.
    pub fn synced(&self) -> bool {
        self.lists > 0
    }
}

/// `namespace/name` of an object (the key for watches across namespaces).
pub fn namespaced_key<K: kube::Resource>(obj: &K) -> String {
    format!(
        "{}/{}",
        obj.meta().namespace.as_deref().unwrap_or(""),
        obj.meta().name.as_deref().unwrap_or("")
    )
}

/// `name` of an object (the key for watches in one namespace).
pub fn name_key<K: kube::Resource>(obj: &K) -> String {
    obj.meta().name.clone().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &(&'static str, u32)) -> String {
        s.0.to_string()
    }
    fn view(s: &(&'static str, u32)) -> Option<u32> {
        (s.1 > 0).then_some(s.1)
    }

    #[test]
    fn relist_swaps_atomically_and_reports_vanished() {
        let mut r = Reflector::new();
        r.apply(&Event::Init, key, view);
        r.apply(&Event::InitApply(("a", 1)), key, view);
        r.apply(&Event::InitApply(("b", 1)), key, view);
        assert!(r.is_empty(), "nothing live before InitDone");
        assert_eq!(
            r.apply(&Event::InitDone, key, view),
            Delta::Relisted { vanished: vec![] }
        );
        assert_eq!(r.len(), 2);
        // A re-list: `a` is gone, `b` changed; until InitDone the old view stands.
        r.apply(&Event::Init, key, view);
        r.apply(&Event::InitApply(("b", 2)), key, view);
        assert_eq!((r.get("a"), r.get("b")), (Some(&1), Some(&1)));
        assert!(r.relisting());
        assert_eq!(
            r.apply(&Event::InitDone, key, view),
            Delta::Relisted {
                vanished: vec![("a".to_string(), 1)]
            }
        );
        assert_eq!((r.get("a"), r.get("b")), (None, Some(&2)));
        assert_eq!(r.lists(), 2);
    }

    #[test]
    fn events_during_a_relist_reach_the_buffer_too() {
        let mut r = Reflector::new();
        r.apply(&Event::Init, key, view);
        r.apply(&Event::InitApply(("a", 1)), key, view);
        assert_eq!(
            r.apply(&Event::Apply(("c", 3)), key, view),
            Delta::Upserted("c".into())
        );
        assert_eq!(r.apply(&Event::Delete(("a", 1)), key, view), Delta::Nothing);
        r.apply(&Event::InitDone, key, view);
        assert_eq!((r.get("a"), r.get("c")), (None, Some(&3)));
        // Not wanted any more: removed.
        assert_eq!(
            r.apply(&Event::Apply(("c", 0)), key, view),
            Delta::Removed("c".into(), 3)
        );
    }
}
