//! The Recreate strategy: scale every old ReplicaSet to zero, wait for
//! their pods to go, then create and scale up the new one.
//!
//! Mirrors k8s.io/kubernetes `pkg/controller/deployment/recreate.go`
//! (`rolloutRecreate`).

use std::sync::Arc;

use serde_json::Value;

use super::util::{replicas, rs_replicas};
use crate::Manager;
use infera_sim_core::json::str_at;

impl Manager {
    pub(super) fn rollout_recreate(&mut self, d: &Value, all: Vec<Arc<Value>>) {
        let (mut new_rs, old) = self.new_and_old(d, all, false);
        let mut scaled = false;
        let mut old_now = Vec::new();
        for rs in &old {
            if rs_replicas(rs) > 0 {
                old_now.push(self.scale_rs(rs, 0, d));
                scaled = true;
            } else {
                old_now.push(rs.clone());
            }
        }
        let old_running = old.iter().any(|rs| {
            self.cache
                .pods
                .owned_by(str_at(rs, "/metadata/uid"))
                .iter()
                .any(|p| !matches!(str_at(p, "/status/phase"), "Succeeded" | "Failed"))
        });
        if !scaled && !old_running {
            if new_rs.is_none() {
                new_rs = self
                    .new_and_old(
                        d,
                        self.cache.replicasets.owned_by(str_at(d, "/metadata/uid")),
                        true,
                    )
                    .0;
            }
            if let Some(rs) = new_rs.clone()
                && rs_replicas(&rs) != replicas(d)
            {
                new_rs = Some(self.scale_rs(&rs, replicas(d), d));
            }
        }
        let d = self.refreshed(d);
        self.sync_rollout_status(&d, new_rs.as_deref(), &old_now);
    }
}
