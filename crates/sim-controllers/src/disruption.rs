//! The disruption controller: a PodDisruptionBudget's status
//! (`currentHealthy`, `desiredHealthy`, `expectedPods`,
//! `disruptionsAllowed`, `disruptedPods`, `observedGeneration` and the
//! `DisruptionAllowed` condition), which the Eviction API
//! (`infera_sim_api::eviction`) reads and decrements.
//!
//! Mirrors k8s.io/kubernetes@v1.37.2 pkg/controller/disruption/disruption.go
//! (`trySync`, `getExpectedScale` with the ReplicaSet, Deployment and
//! StatefulSet finders,
//! `buildDisruptedPodMap` with `DeletionTimeout` = 2 min, `countHealthyPods`,
//! `updatePdbStatus`, `failSafe`) and
//! k8s.io/component-helpers apps/poddisruptionbudget (`UpdateDisruptionAllowedCondition`).
//! The arithmetic is `infera_model::pdb`'s. Not simulated: the
//! `NoPods`/`UnmanagedPods`/`NotDeleted` events, the ReplicationController
//! and scale-subresource finders (a pod of another
//! controller fails the sync, as a controller without a finder does
//! upstream), and clearing a stale `DisruptionTarget` condition.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use infera_model::pdb::{self, Scale};
use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::cache::{Key, controller_uid};
use crate::{Manager, Work};
use infera_sim_core::budget::{labels, pod_ready, set_allowed_condition};
use infera_sim_core::json::{i64_at, str_at};
use infera_sim_core::kind::Kind;

/// How long an eviction's entry in `status.disruptedPods` keeps the pod out
/// of `currentHealthy` while the pod is not yet deleted (scenario time).
pub const DELETION_TIMEOUT: Duration = Duration::from_secs(120);

impl Manager {
    /// Mark every budget of `ns` for a sync (a pod or a controller there changed).
    pub(super) fn mark_pdbs(&mut self, ns: &str) {
        for key in self.cache.pdbs.keys() {
            if key.0 == ns {
                self.dirty.insert(Work::Disruption(key));
            }
        }
    }

    /// `trySync`: the budget's pods, counts and status.
    pub(super) fn sync_pdb(&mut self, key: &Key) {
        let Some(budget) = self.cache.pdbs.get(key).cloned() else {
            return;
        };
        let spec = budget
            .get("spec")
            .and_then(|s| PodDisruptionBudgetSpec::deserialize(s).ok())
            .unwrap_or_default();
        let pods: Vec<&Value> = self
            .cache
            .pods
            .values()
            .filter(|p| str_at(p, "/metadata/namespace") == key.0)
            .filter(|p| pdb::selects(&spec, &labels(p)))
            .map(|p| &**p)
            .collect();
        let counts = match self.expected_scale(&spec, &pods) {
            Ok(expected) => {
                let matched = i32::try_from(pods.len()).unwrap_or(i32::MAX);
                pdb::expected_and_desired(&spec, Scale { expected, matched })
            }
            Err(why) => {
                let status = fail_safe(&budget, &why);
                self.write_status(Kind::PodDisruptionBudget, &budget, status);
                return;
            }
        };
        let (disrupted, recheck) = self.disrupted_pods(&budget, &pods);
        let healthy = pods
            .iter()
            .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
            .filter(|p| !disrupted.contains_key(str_at(p, "/metadata/name")))
            .filter(|p| pod_ready(p))
            .count();
        let healthy = i32::try_from(healthy).unwrap_or(i32::MAX);
        let status = pdb_status(&budget, healthy, counts, disrupted);
        self.write_status(Kind::PodDisruptionBudget, &budget, status);
        if let Some(after) = recheck {
            self.requeue(Work::Disruption(key.clone()), after);
        }
    }

    /// `getExpectedScale`, asked only where upstream asks it (maxUnavailable,
    /// or a percentage minAvailable): the summed `spec.replicas` of the
    /// selected pods' controllers (a Deployment through its ReplicaSet, else
    /// the ReplicaSet; a StatefulSet). Pods without a controller are left
    /// out (unmanaged).
    fn expected_scale(
        &self,
        spec: &PodDisruptionBudgetSpec,
        pods: &[&Value],
    ) -> Result<i32, String> {
        let needs_scale = spec.max_unavailable.is_some()
            || matches!(spec.min_available, Some(IntOrString::String(_)));
        if !needs_scale {
            return Ok(0);
        }
        let mut scale: HashMap<String, i64> = HashMap::new();
        for pod in pods {
            let Some(owner) = controller_uid(pod) else {
                continue;
            };
            if let Some(set) = self.cache.statefulsets.by_uid(owner) {
                let replicas = i64_at(set, "/spec/replicas").unwrap_or(1);
                scale.insert(owner.to_string(), replicas);
                continue;
            }
            let rs = self.cache.replicasets.by_uid(owner).ok_or_else(|| {
                format!(
                    "found no controllers for pod {:?}",
                    str_at(pod, "/metadata/name")
                )
            })?;
            let deployment = controller_uid(rs).and_then(|u| self.cache.deployments.by_uid(u));
            let (uid, replicas) = match deployment {
                Some(d) => (str_at(d, "/metadata/uid"), i64_at(d, "/spec/replicas")),
                None => (str_at(rs, "/metadata/uid"), i64_at(rs, "/spec/replicas")),
            };
            scale.insert(uid.to_string(), replicas.unwrap_or(1));
        }
        Ok(i32::try_from(scale.values().sum::<i64>()).unwrap_or(i32::MAX))
    }

    /// `buildDisruptedPodMap`: the evictions not yet followed by the pod's
    /// deletion and younger than [`DELETION_TIMEOUT`], and when the oldest
    /// of them expires.
    fn disrupted_pods(
        &self,
        budget: &Value,
        pods: &[&Value],
    ) -> (BTreeMap<String, String>, Option<Duration>) {
        let mut kept = BTreeMap::new();
        let mut recheck: Option<Duration> = None;
        let Some(recorded) = budget
            .pointer("/status/disruptedPods")
            .and_then(Value::as_object)
        else {
            return (kept, recheck);
        };
        for pod in pods {
            if pod.pointer("/metadata/deletionTimestamp").is_some() {
                continue;
            }
            let name = str_at(pod, "/metadata/name");
            let Some(at) = recorded.get(name).and_then(Value::as_str) else {
                continue;
            };
            let age = self.clock.sim_since(at);
            if age < DELETION_TIMEOUT {
                let left = DELETION_TIMEOUT - age;
                recheck = Some(recheck.map_or(left, |r| r.min(left)));
                kept.insert(name.to_string(), at.to_string());
            }
        }
        (kept, recheck)
    }
}

/// `updatePdbStatus`: the new status, the condition set as
/// `UpdateDisruptionAllowedCondition` sets it.
fn pdb_status(
    budget: &Value,
    healthy: i32,
    (expected, desired): (i32, i32),
    disrupted: BTreeMap<String, String>,
) -> Value {
    let allowed = pdb::disruptions_allowed(healthy, expected, desired);
    let generation = i64_at(budget, "/metadata/generation").unwrap_or(0);
    let mut status = json!({
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "disruptionsAllowed": allowed,
        "observedGeneration": generation,
    });
    if !disrupted.is_empty() {
        status["disruptedPods"] = json!(disrupted);
    }
    let mut conditions = budget
        .pointer("/status/conditions")
        .cloned()
        .unwrap_or_else(|| json!([]));
    set_allowed_condition(&mut conditions, allowed, generation, None);
    status["conditions"] = conditions;
    status
}

/// `failSafe`: nothing allowed, the condition says why; the rest of the
/// status as it was.
fn fail_safe(budget: &Value, why: &str) -> Value {
    let mut status = budget
        .get("status")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    status["disruptionsAllowed"] = json!(0);
    let observed = i64_at(&status, "/observedGeneration").unwrap_or(0);
    let mut conditions = status
        .get("conditions")
        .cloned()
        .unwrap_or_else(|| json!([]));
    set_allowed_condition(&mut conditions, 0, observed, Some(("SyncFailed", why)));
    status["conditions"] = conditions;
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_condition_keeps_its_transition_time_until_the_status_flips() {
        let mut conditions = json!([]);
        set_allowed_condition(&mut conditions, 1, 1, None);
        assert_eq!(conditions[0]["reason"], "SufficientPods");
        let first = conditions[0]["lastTransitionTime"].clone();
        conditions[0]["lastTransitionTime"] = json!("2026-01-01T00:00:00Z");
        set_allowed_condition(&mut conditions, 2, 2, None);
        assert_eq!(conditions[0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
        assert_eq!(conditions[0]["observedGeneration"], 2);
        set_allowed_condition(&mut conditions, 0, 2, None);
        assert_eq!(conditions[0]["status"], "False");
        assert_eq!(conditions[0]["reason"], "InsufficientPods");
        assert_ne!(conditions[0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
        assert!(first.is_string());
        assert_eq!(conditions.as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn a_failed_sync_allows_nothing_and_says_why() {
        let budget = json!({"metadata": {"generation": 1}, "status": {
            "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2,
            "disruptionsAllowed": 1, "observedGeneration": 1}});
        let status = fail_safe(&budget, "found no controllers for pod \"a\"");
        assert_eq!(status["disruptionsAllowed"], 0);
        assert_eq!(status["currentHealthy"], 2);
        assert_eq!(status["conditions"][0]["reason"], "SyncFailed");
        assert_eq!(
            status["conditions"][0]["message"],
            "found no controllers for pod \"a\""
        );
    }
}
