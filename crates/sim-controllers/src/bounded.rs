//! The controllers' two collections that a long run would otherwise grow:
//! the timers (client-go's delaying workqueue keeps one entry per item, the
//! earliest; so does [`Timers`]) and the Events a component bumps instead
//! of recreating (client-go's event correlator keeps an LRU of 4,096
//! entries, `tools/record/events_cache.go` `maxLruCacheEntries`; so does
//! [`EventNames`], oldest first out).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};
use std::hash::Hash;
use std::time::Instant;

/// Work due at an instant, at most one pending instant per item (the
/// earliest asked for), as `workqueue.AddAfter` does.
pub(crate) struct Timers<W: Ord + Clone> {
    heap: BinaryHeap<Reverse<(Instant, W)>>,
    /// Each item's pending instant; a heap entry that disagrees is stale.
    waiting: BTreeMap<W, Instant>,
}

impl<W: Ord + Clone> Default for Timers<W> {
    fn default() -> Self {
        Timers {
            heap: BinaryHeap::new(),
            waiting: BTreeMap::new(),
        }
    }
}

impl<W: Ord + Clone> Timers<W> {
    /// Have `work` due at `at`, unless it is already due no later.
    pub(crate) fn push(&mut self, at: Instant, work: W) {
        if self.waiting.get(&work).is_some_and(|&due| due <= at) {
            return;
        }
        self.waiting.insert(work.clone(), at);
        self.heap.push(Reverse((at, work)));
        // Stale entries (an item asked for earlier since) never outnumber
        // the live ones by much.
        if self.heap.len() > 2 * self.waiting.len() + 64 {
            let waiting = &self.waiting;
            self.heap
                .retain(|Reverse((at, w))| waiting.get(w) == Some(at));
        }
    }

    /// The earliest instant anything may be due (a stale entry may wake
    /// the caller early: [`Timers::due`] then yields nothing).
    pub(crate) fn next(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((at, _))| *at)
    }

    /// Take every item due at or before `now`.
    pub(crate) fn due(&mut self, now: Instant) -> Vec<W> {
        let mut out = Vec::new();
        while let Some(Reverse((at, _))) = self.heap.peek() {
            if *at > now {
                break;
            }
            let Some(Reverse((at, work))) = self.heap.pop() else {
                break;
            };
            if self.waiting.get(&work) == Some(&at) {
                self.waiting.remove(&work);
                out.push(work);
            }
        }
        out
    }

    /// Whether `work` is pending.
    pub(crate) fn contains(&self, work: &W) -> bool {
        self.waiting.contains_key(work)
    }

    /// Heap entries held (live and stale), for the bound's tests.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.heap.len()
    }
}

/// How many Events a component remembers to bump (client-go's
/// `maxLruCacheEntries`).
pub(crate) const EVENT_CACHE: usize = 4096;

/// Recorded Events' names by what makes a repeat the same Event, the
/// oldest forgotten past [`EVENT_CACHE`] (its next repeat creates a new
/// Event, as upstream's after an LRU eviction).
pub(crate) struct EventNames<K: Hash + Eq + Clone> {
    names: HashMap<K, String>,
    order: VecDeque<K>,
}

impl<K: Hash + Eq + Clone> Default for EventNames<K> {
    fn default() -> Self {
        EventNames {
            names: HashMap::new(),
            order: VecDeque::new(),
        }
    }
}

impl<K: Hash + Eq + Clone> EventNames<K> {
    pub(crate) fn get(&self, key: &K) -> Option<&String> {
        self.names.get(key)
    }

    pub(crate) fn insert(&mut self, key: K, name: String) {
        if self.names.insert(key.clone(), name).is_none() {
            self.order.push_back(key);
        }
        while self.names.len() > EVENT_CACHE {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.names.remove(&oldest);
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// One pending instant per item, the earliest; a later ask is
    /// dropped, an earlier one replaces it; the heap stays within twice the
    /// items however often the same work is asked for.
    #[test]
    fn timers_keep_one_instant_per_item() {
        let mut timers = Timers::default();
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        for i in 0..10_000u64 {
            timers.push(at(1000 + i), "deployment");
        }
        assert_eq!(timers.held(), 1);
        for i in 0..10_000u64 {
            timers.push(at(10_000 - i), "replicaset");
        }
        assert!(timers.held() <= 2 * 2 + 64, "{}", timers.held());
        assert_eq!(timers.next(), Some(at(1)));
        assert!(!timers.contains(&"statefulset"));
        assert_eq!(timers.due(at(999)), ["replicaset"]);
        assert!(timers.contains(&"deployment"));
        assert!(timers.due(at(999)).is_empty());
        assert_eq!(timers.due(at(1000)), ["deployment"]);
        assert!(timers.due(at(20_000)).is_empty());
        assert_eq!(timers.next(), None);
    }

    /// At most [`EVENT_CACHE`] names, the oldest forgotten first.
    #[test]
    fn event_names_forget_the_oldest() {
        let mut names = EventNames::default();
        for i in 0..EVENT_CACHE + 10 {
            names.insert(i, format!("e{i}"));
        }
        assert_eq!(names.len(), EVENT_CACHE);
        assert!(names.get(&0).is_none());
        assert!(names.get(&9).is_none());
        assert_eq!(names.get(&10).map(String::as_str), Some("e10"));
        names.insert(10, "again".into());
        assert_eq!(names.len(), EVENT_CACHE);
        assert_eq!(names.get(&10).map(String::as_str), Some("again"));
    }
}
