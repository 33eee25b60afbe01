//! The simulator's own ground truth: how many pods of each InferaDeployment
//! service were Ready and routable, at every change, as the store saw it
//! (no network in between), and beside it every request the simulated
//! routers received and how it ended ([`RequestLog`], which the world's
//! routers write). Tests hold infera's reports against it; `sim serve
//! --truth FILE` writes it.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use serde::Serialize;
use tokio::sync::broadcast::error::RecvError;

use infera_model::pod;
use infera_model::worker::{LABEL_DEPLOYMENT, LABEL_SERVICE};

use infera_sim_core::kind::Kind;
use infera_sim_core::requests::{RequestLog, now_ms};

use crate::Store;

/// One change of one service's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TruthPoint {
    /// Milliseconds since the Unix epoch (the store's clock).
    pub at_ms: u64,
    pub ready: u32,
    pub routable: u32,
}

/// The most points a service's series keeps: the oldest go first. A point
/// is 16 bytes, so a service that changes every second fills it in 18 h
/// and holds 1 MiB.
pub const SERIES_CAP: usize = 65_536;

/// Per `namespace/deployment/service`, its counts over time.
#[derive(Debug, Clone, Default)]
pub struct Truth {
    inner: Arc<Mutex<TruthState>>,
    requests: RequestLog,
}

#[derive(Debug, Default)]
struct TruthState {
    /// pod key → (group, ready, routable)
    pods: BTreeMap<String, (String, bool, bool)>,
    series: BTreeMap<String, VecDeque<TruthPoint>>,
}

impl TruthState {
    fn update(&mut self, key: String, state: Option<(String, bool, bool)>, at_ms: u64) {
        let touched: Vec<String> = [
            self.pods.get(&key).map(|s| s.0.clone()),
            state.as_ref().map(|s| s.0.clone()),
        ]
        .into_iter()
        .flatten()
        .collect();
        match state {
            Some(s) => self.pods.insert(key, s),
            None => self.pods.remove(&key),
        };
        for group in touched {
            let (ready, routable) = self
                .pods
                .values()
                .filter(|s| s.0 == group)
                .fold((0, 0), |(r, rt), s| {
                    (r + u32::from(s.1), rt + u32::from(s.2))
                });
            let series = self.series.entry(group).or_default();
            if series
                .back()
                .is_none_or(|p| (p.ready, p.routable) != (ready, routable))
            {
                series.push_back(TruthPoint {
                    at_ms,
                    ready,
                    routable,
                });
                if series.len() > SERIES_CAP {
                    series.pop_front();
                }
            }
        }
    }
}

fn classify(obj: &serde_json::Value) -> Option<(String, (String, bool, bool))> {
    let p: Pod = serde_json::from_value(obj.clone()).ok()?;
    let labels = p.metadata.labels.as_ref()?;
    let group = format!(
        "{}/{}/{}",
        p.metadata.namespace.as_deref().unwrap_or_default(),
        labels.get(LABEL_DEPLOYMENT)?,
        labels.get(LABEL_SERVICE)?
    );
    let key = format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or_default(),
        p.metadata.name.as_deref().unwrap_or_default()
    );
    Some((key, (group, pod::is_ready(&p), pod::is_serving(&p))))
}

impl Truth {
    /// Record the store's pods from now on.
    pub fn start(store: &Store) -> Truth {
        let truth = Truth::default();
        let mut rx = store.subscribe();
        let (pods, _) = store.list(Kind::Pod, None);
        {
            let mut s = truth.lock();
            for p in &pods {
                if let Some((key, state)) = classify(p) {
                    s.update(key, Some(state), now_ms());
                }
            }
        }
        let inner = truth.clone();
        tokio::spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(ev) if ev.kind == Kind::Pod => {
                        let deleted = matches!(ev.event, crate::EventType::Deleted);
                        if let Some((key, state)) = classify(&ev.object) {
                            inner
                                .lock()
                                .update(key, (!deleted).then_some(state), now_ms());
                        }
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(n)) => {
                        eprintln!("infera sim: the ground truth missed {n} store events");
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        });
        truth
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TruthState> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The requests the simulated routers received (the world writes them:
    /// hand it [`RequestLog::clone`] of this).
    pub fn requests(&self) -> &RequestLog {
        &self.requests
    }

    /// Every group's series.
    pub fn series(&self) -> BTreeMap<String, Vec<TruthPoint>> {
        (self.lock().series.iter())
            .map(|(group, points)| (group.clone(), points.iter().copied().collect()))
            .collect()
    }

    /// One group's (lowest Ready, lowest routable, time with Ready < floor,
    /// time with routable < floor) between two instants (ms since epoch).
    pub fn window(
        &self,
        group: &str,
        from_ms: u64,
        to_ms: u64,
        floor: u32,
    ) -> Option<(u32, u32, Duration, Duration)> {
        let state = self.lock();
        let series = state.series.get(group)?;
        let mut min = (u32::MAX, u32::MAX);
        let mut below = (0u64, 0u64);
        for (i, p) in series.iter().enumerate() {
            let start = p.at_ms.max(from_ms);
            let end = series.get(i + 1).map_or(to_ms, |n| n.at_ms).min(to_ms);
            if end <= start && !(p.at_ms <= from_ms && end >= from_ms) {
                continue;
            }
            min = (min.0.min(p.ready), min.1.min(p.routable));
            let span = end.saturating_sub(start);
            if p.ready < floor {
                below.0 += span;
            }
            if p.routable < floor {
                below.1 += span;
            }
        }
        (min.0 != u32::MAX).then(|| {
            (
                min.0,
                min.1,
                Duration::from_millis(below.0),
                Duration::from_millis(below.1),
            )
        })
    }

    /// The truth file: `{"pods": {group: [{at_ms, ready, routable}]},
    /// "requests": [RequestRecord…], "requestsDropped": N}` (`docs/traffic.md`;
    /// each series and the requests are the newest kept, see the caps).
    pub fn to_json(&self) -> String {
        let file = serde_json::json!({
            "pods": self.series(),
            "requests": self.requests.records(),
            "requestsDropped": self.requests.dropped(),
        });
        serde_json::to_string_pretty(&file).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A service that changes for ever keeps its last [`SERIES_CAP`]
    /// points: the oldest go, the newest is always there.
    #[test]
    fn a_series_keeps_its_newest_points_up_to_the_cap() {
        let mut state = TruthState::default();
        let changes = SERIES_CAP as u64 + 1_000;
        for at in 0..changes {
            let ready = at % 2 == 0;
            state.update("ns/p".into(), Some(("ns/d/s".into(), ready, ready)), at);
        }
        let series = &state.series["ns/d/s"];
        assert_eq!(series.len(), SERIES_CAP);
        assert_eq!(series.front().map(|p| p.at_ms), Some(1_000));
        assert_eq!(series.back().map(|p| p.at_ms), Some(changes - 1));
    }
}
