//! The RollingUpdate strategy: scale the new ReplicaSet up within
//! maxSurge, then the old ones down within maxUnavailable (unhealthy
//! replicas first).
//!
//! Mirrors k8s.io/kubernetes `pkg/controller/deployment/rolling.go`
//! (`rolloutRolling`, `reconcileNewReplicaSet`, `reconcileOldReplicaSets`,
//! `cleanupUnhealthyReplicas`, `scaleDownOldReplicaSetsForRollingUpdate`).

use std::sync::Arc;

use serde_json::Value;

use super::util::{
    max_surge, max_unavailable, new_rs_new_replicas, replicas, rs_available, rs_replicas,
};
use crate::Manager;

impl Manager {
    pub(super) fn rollout_rolling(&mut self, d: &Value, all: Vec<Arc<Value>>) {
        let (new_rs, old) = self.new_and_old(d, all, true);
        let Some(mut new_rs) = new_rs else {
            return;
        };
        let d = self.refreshed(d);
        let desired = replicas(&d);
        // reconcileNewReplicaSet
        let new_count = rs_replicas(&new_rs);
        let mut scaled = false;
        if new_count > desired {
            new_rs = self.scale_rs(&new_rs, desired, &d);
            scaled = true;
        } else if new_count < desired {
            let all_replicas: i64 = old.iter().map(|rs| rs_replicas(rs)).sum::<i64>() + new_count;
            let target = new_rs_new_replicas(desired, max_surge(&d), all_replicas, new_count);
            if target != new_count {
                new_rs = self.scale_rs(&new_rs, target, &d);
                scaled = true;
            }
        }
        if !scaled {
            scaled = self.reconcile_old(&d, &new_rs, old.clone());
        }
        let old = self.cached(&old);
        let _ = scaled;
        self.sync_rollout_status(&d, Some(&new_rs), &old);
    }

    /// reconcileOldReplicaSets + cleanupUnhealthyReplicas + scaleDownOldReplicaSetsForRollingUpdate.
    fn reconcile_old(&mut self, d: &Value, new_rs: &Value, mut old: Vec<Arc<Value>>) -> bool {
        let old_pods: i64 = old.iter().map(|rs| rs_replicas(rs)).sum();
        if old_pods == 0 {
            return false;
        }
        let all_pods = old_pods + rs_replicas(new_rs);
        let min_available = replicas(d) - max_unavailable(d);
        let new_unavailable = rs_replicas(new_rs) - rs_available(new_rs);
        let max_scaled_down = all_pods - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return false;
        }
        // Oldest first (already sorted by creation).
        let mut cleaned = 0;
        for rs in old.iter_mut() {
            if cleaned >= max_scaled_down {
                break;
            }
            let count = rs_replicas(rs);
            let available = rs_available(rs);
            if count == 0 || count == available {
                continue;
            }
            let down = (max_scaled_down - cleaned).min(count - available);
            *rs = self.scale_rs(rs, count - down, d);
            cleaned += down;
        }
        // scaleDownOldReplicaSetsForRollingUpdate
        let available: i64 =
            old.iter().map(|rs| rs_available(rs)).sum::<i64>() + rs_available(new_rs);
        let mut scaled_down = 0;
        if available > min_available {
            let total = available - min_available;
            for rs in old.iter_mut() {
                if scaled_down >= total {
                    break;
                }
                let count = rs_replicas(rs);
                if count == 0 {
                    continue;
                }
                let down = count.min(total - scaled_down);
                *rs = self.scale_rs(rs, count - down, d);
                scaled_down += down;
            }
        }
        cleaned + scaled_down > 0
    }
}
