//! The scenario's `podFaults`, at their scenario times: a crash restarts the
//! matching pods' containers; `nodeNotReady` stops a node's heartbeats,
//! posts `Ready=Unknown` (as the node-lifecycle controller would) and marks
//! its pods NotReady, until `duration` has passed.

use std::sync::Arc;
use std::time::Duration;

use super::{PodFault, Shared, lock, nodes};

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(if s.is_finite() { s.max(0.0) } else { 0.0 })
}

/// Fire every fault in time order, then return.
pub(super) async fn run(shared: Arc<Shared>) {
    let mut timeline: Vec<(f64, usize, bool)> = Vec::new();
    for (i, f) in shared.scenario.pod_faults.iter().enumerate() {
        timeline.push((f.at, i, false));
        if let Some(d) = f.node_not_ready.as_ref().and_then(|n| n.duration) {
            timeline.push((f.at + d.max(0.0), i, true));
        }
    }
    timeline.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (at, index, recover) in timeline {
        let left = at - shared.clock.elapsed().as_secs_f64();
        if left > 0.0 {
            shared.clock.sleep(secs(left)).await;
        }
        fire(&shared, index, recover).await;
    }
}

async fn fire(shared: &Shared, index: usize, recover: bool) {
    let Some(fault) = shared.scenario.pod_faults.get(index) else {
        return;
    };
    if let Some(crash) = fault.crash.as_ref().filter(|_| !recover) {
        let _ = shared.faults.send(PodFault::Crash {
            namespace: crash.namespace.clone(),
            prefix: crash.pod_prefix.clone(),
        });
    }
    if let Some(nnr) = &fault.node_not_ready {
        if recover {
            lock(&shared.not_ready).remove(&nnr.node);
        } else {
            lock(&shared.not_ready).insert(nnr.node.clone());
        }
        let _ = shared.faults.send(PodFault::Node);
        nodes::set_ready(shared, &nnr.node, recover).await;
    }
}
