//! The `Progressing` condition: complete, progressing, or past
//! `progressDeadlineSeconds` (`ProgressDeadlineExceeded`), with a requeue
//! for the moment the deadline passes.
//!
//! Mirrors k8s.io/kubernetes `pkg/controller/deployment/progress.go`
//! (`syncRolloutStatus`, `requeueStuckDeployment`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::util::{
    condition, has_progress_deadline, make_condition, remove_condition, replicas, set_condition,
};
use crate::cache::key_of;
use crate::{Manager, Work};
use infera_sim_core::json::{i64_at, str_at};
use infera_sim_core::kind::Kind;

impl Manager {
    pub(super) fn sync_rollout_status(
        &mut self,
        d: &Value,
        new_rs: Option<&Value>,
        old: &[Arc<Value>],
    ) {
        let mut status = self.calculate_status(d, new_rs, old);
        let get = |s: &Value, k: &str| s.get(k).and_then(Value::as_i64).unwrap_or(0);
        let old_status = d.get("status").cloned().unwrap_or_else(|| json!({}));
        let desired = replicas(d);
        let deadline = has_progress_deadline(d);
        if deadline.is_none() {
            remove_condition(&mut status, "Progressing");
        }
        let current = condition(&status, "Progressing").cloned();
        let complete_already = get(&status, "replicas") == get(&status, "updatedReplicas")
            && current
                .as_ref()
                .is_some_and(|c| str_at(c, "/reason") == "NewReplicaSetAvailable");
        let rs_name = new_rs
            .map(|rs| str_at(rs, "/metadata/name").to_string())
            .unwrap_or_default();
        let now = self.clock.timestamp();
        if let Some(deadline) = deadline
            && !complete_already
        {
            let complete = get(&status, "updatedReplicas") == desired
                && get(&status, "replicas") == desired
                && get(&status, "availableReplicas") == desired
                && get(&status, "observedGeneration")
                    >= i64_at(d, "/metadata/generation").unwrap_or(1);
            let old_old = get(&old_status, "replicas") - get(&old_status, "updatedReplicas");
            let new_old = get(&status, "replicas") - get(&status, "updatedReplicas");
            let progressing = get(&status, "updatedReplicas") > get(&old_status, "updatedReplicas")
                || new_old < old_old
                || get(&status, "readyReplicas") > get(&old_status, "readyReplicas")
                || get(&status, "availableReplicas") > get(&old_status, "availableReplicas");
            if complete {
                set_condition(
                    &mut status,
                    make_condition(
                        "Progressing",
                        "True",
                        "NewReplicaSetAvailable",
                        &format!("ReplicaSet {rs_name:?} has successfully progressed."),
                        &now,
                    ),
                );
            } else if progressing {
                let mut cond = make_condition(
                    "Progressing",
                    "True",
                    "ReplicaSetUpdated",
                    &format!("ReplicaSet {rs_name:?} is progressing."),
                    &now,
                );
                if let Some(c) = current.as_ref() {
                    if str_at(c, "/status") == "True"
                        && let Some(t) = c.get("lastTransitionTime")
                    {
                        cond["lastTransitionTime"] = t.clone();
                    }
                    remove_condition(&mut status, "Progressing");
                }
                set_condition(&mut status, cond);
            } else if let Some(c) = current.as_ref() {
                let reason = str_at(c, "/reason");
                if reason != "NewReplicaSetAvailable"
                    && reason != "ProgressDeadlineExceeded"
                    && str_at(c, "/status") != "Unknown"
                {
                    // Upstream's `DeploymentTimedOut`
                    // (k8s.io/kubernetes@v1.37.2 pkg/controller/deployment/util/deployment_util.go, called
                    // from progress.go `syncRolloutStatus`) compares
                    // lastUpdateTime + progressDeadlineSeconds with the wall
                    // clock; the sim uses its scaled clock (a documented
                    // difference: 600 s at speed 20 is 30 s of wall time).
                    let since = self.clock.sim_since(str_at(c, "/lastUpdateTime"));
                    let limit = Duration::from_secs(u64::try_from(deadline.max(0)).unwrap_or(0));
                    if since > limit {
                        set_condition(
                            &mut status,
                            make_condition(
                                "Progressing",
                                "False",
                                "ProgressDeadlineExceeded",
                                &format!("ReplicaSet {rs_name:?} has timed out progressing."),
                                &now,
                            ),
                        );
                    } else {
                        // requeueStuckDeployment
                        self.requeue(
                            Work::Deployment(key_of(d)),
                            limit - since + Duration::from_millis(1),
                        );
                    }
                }
            }
        }
        self.write_status(Kind::Deployment, d, status);
    }
}
