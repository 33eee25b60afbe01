//! The Deployment controller, ported from upstream's
//! k8s.io/kubernetes `pkg/controller/deployment`, file for file: `sync.rs`
//! (sync.go), `rolling.rs` (rolling.go), `recreate.rs` (recreate.go),
//! `progress.rs` (progress.go) and [`util`] (util/deployment_util.go); this
//! file is deployment_controller.go's `syncDeployment`. The ReplicaSet
//! controller is `replicaset.rs` (`pkg/controller/replicaset`).
//!
//! Simplifications (documented): proportional scaling of several active
//! ReplicaSets during a scale event gives the whole difference to the newest
//! one; rollback (`rollbackTo`) and `ReplicaFailure` conditions are not
//! modelled; there are no expectations because writes go through the cache
//! at once.

mod progress;
mod recreate;
mod rolling;
mod sync;
pub mod util;

use std::sync::Arc;

use serde_json::Value;

use crate::Manager;
use crate::cache::Key;
use infera_sim_core::json::str_at;
use util::{DESIRED_REPLICAS_ANNOTATION, is_rolling, replicas, rs_replicas, rv};

impl Manager {
    /// `syncDeployment`, skipped when nothing it reads changed since a run
    /// that changed nothing: a RollingUpdate sync reads only the Deployment
    /// and its ReplicaSets (identified by their resource versions, unique
    /// store-wide) and the clock, and a run that wrote nothing and set no
    /// timer had no time-dependent step pending, so it would do nothing
    /// again. This keeps the 15 s resync of a settled cluster cheap.
    pub(super) fn sync_deployment(&mut self, key: &Key) {
        let fingerprint = self.cache.deployments.get(key).and_then(|d| {
            if !is_rolling(d) {
                return None; // Recreate also reads pods
            }
            let mut versions = vec![rv(d)];
            versions.extend(
                self.cache
                    .replicasets
                    .owned_by(str_at(d, "/metadata/uid"))
                    .iter()
                    .map(|rs| rv(rs)),
            );
            Some(versions)
        });
        if fingerprint.is_some() && self.settled.get(key) == fingerprint.as_ref() {
            return;
        }
        let version = self.store.resource_version();
        let requeues = self.requeues;
        self.sync_deployment_now(key);
        match fingerprint {
            Some(f) if self.store.resource_version() == version && self.requeues == requeues => {
                self.settled.insert(key.clone(), f);
            }
            _ => {
                self.settled.remove(key);
            }
        }
    }

    fn sync_deployment_now(&mut self, key: &Key) {
        let Some(d) = self.cache.deployments.get(key).cloned() else {
            return;
        };
        if d.pointer("/metadata/deletionTimestamp").is_some() {
            return;
        }
        let uid = str_at(&d, "/metadata/uid").to_string();
        let selector = d.pointer("/spec/selector").cloned().unwrap_or(Value::Null);
        if selector.as_object().is_none_or(|m| m.is_empty()) {
            return; // upstream: an empty selector selects nothing and is skipped
        }
        let mut d = (*d).clone();
        self.check_paused_conditions(&mut d);
        let all: Vec<Arc<Value>> = self.cache.replicasets.owned_by(&uid);
        let paused = d
            .pointer("/spec/paused")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let scaling = all.iter().any(|rs| {
            rs_replicas(rs) > 0
                && str_at(
                    rs,
                    &format!(
                        "/metadata/annotations/{}",
                        DESIRED_REPLICAS_ANNOTATION.replace('/', "~1")
                    ),
                )
                .parse::<i64>()
                .ok()
                    != Some(replicas(&d))
        });
        if paused || scaling {
            self.sync_scale(&d, all, paused);
            return;
        }
        if is_rolling(&d) {
            self.rollout_rolling(&d, all);
        } else {
            self.rollout_recreate(&d, all);
        }
    }
}
