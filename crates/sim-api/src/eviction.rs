//! `POST /api/v1/namespaces/NS/pods/NAME/eviction` (policy/v1 Eviction),
//! what `kubectl drain` calls for each pod, honouring PodDisruptionBudgets.
//!
//! Mirrors k8s.io/kubernetes@v1.37.2 pkg/registry/core/pod/storage/eviction.go
//! (`EvictionREST.Create`, `canIgnorePDB`, `getPodDisruptionBudgets`,
//! `checkAndDecrement`, `addConditionAndDeletePod`, `createTooManyRequestsError`):
//!
//! - a Pending, Succeeded, Failed or already terminating pod is deleted
//!   without looking at budgets;
//! - more than one budget selecting the pod: `500` ("This pod has more than
//!   one PodDisruptionBudget, which the eviction subresource does not
//!   support.");
//! - an unready pod is deleted without spending the budget when the budget
//!   says `unhealthyPodEvictionPolicy: AlwaysAllow`, or (the default,
//!   `IfHealthyBudget`) when `currentHealthy >= desiredHealthy > 0`; the
//!   delete then carries the pod's resourceVersion as a precondition, and a
//!   conflict becomes a 429;
//! - otherwise the budget must have seen its generation (else 429 "is still
//!   being processed", Retry-After 10) and allow a disruption (else 429
//!   "Cannot evict pod as it would violate the pod's disruption budget."
//!   with a `DisruptionBudget` cause); the eviction decrements
//!   `status.disruptionsAllowed` and records the pod in
//!   `status.disruptedPods`, which the disruption controller
//!   (`infera_sim_controllers::disruption`) honours until the pod goes;
//! - the pod gets the `DisruptionTarget` condition (reason
//!   `EvictionByEvictionAPI`), then the graceful delete, honouring its
//!   `terminationGracePeriodSeconds` unless the Eviction overrides it.
//!   The API server writes no Event for an eviction; the kubelet's
//!   `Killing` follows, as upstream.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Response, StatusCode};
use serde_json::{Value, json};

use super::Shared;
use super::handlers::delete::{DeleteOptions, delete_one, delete_options};
use super::request::Query;
use super::responses::json_response;
use super::status::ApiStatus;
use infera_sim_core::budget::{labels, pod_ready, set_allowed_condition};
use infera_sim_core::json::{i64_at, str_at};
use infera_sim_core::kind::Kind;
use infera_sim_store::StoreError;

/// The message of every refusal for the budget's sake.
pub const VIOLATES_BUDGET: &str =
    "Cannot evict pod as it would violate the pod's disruption budget.";

/// Optimistic-concurrency retries of the budget's status update
/// (`EvictionsRetry`: 20 steps).
const RETRIES: usize = 20;

pub(super) fn evict(
    shared: &Arc<Shared>,
    ns: Option<&str>,
    name: &str,
    query: &Query,
    body: &[u8],
) -> Result<Response<Body>, ApiStatus> {
    let eviction: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        serde_json::from_slice(body).map_err(|e| {
            ApiStatus::bad_request(format!("the request body is not a valid Eviction: {e}"))
        })?
    };
    if let Some(target) = eviction.pointer("/metadata/name").and_then(Value::as_str)
        && target != name
    {
        return Err(ApiStatus::bad_request(format!(
            "name in URL does not match name in Eviction object: {name} != {target}"
        )));
    }
    let opts_json = eviction
        .get("deleteOptions")
        .map(|o| serde_json::to_vec(o).unwrap_or_default())
        .unwrap_or_default();
    let opts = delete_options(query, &opts_json)?;
    let pod = shared
        .store
        .get(Kind::Pod, ns, name)
        .ok_or_else(|| ApiStatus::not_found(Kind::Pod, name))?;
    if can_ignore_budgets(&pod) {
        let opts = if enforce_resource_version(&pod) && opts.resource_version().is_none() {
            opts.with_resource_version(str_at(&pod, "/metadata/resourceVersion"))
        } else {
            opts
        };
        add_condition_and_delete(shared, ns, name, opts)?;
        return Ok(success());
    }
    let budgets = budgets_of(shared, &pod);
    let opts = match budgets.as_slice() {
        [] => opts,
        [budget] => match spend(shared, &pod, budget, opts.dry_run())? {
            Spent::Decremented => opts,
            Spent::UnhealthyPod => {
                let rv = str_at(&pod, "/metadata/resourceVersion").to_string();
                let guarded = opts.resource_version().is_none();
                let opts = opts.with_resource_version(&rv);
                return match add_condition_and_delete(shared, ns, name, opts) {
                    Err(e) if e.code == 409 && guarded => {
                        Err(still_processing(str_at(budget, "/metadata/name")))
                    }
                    other => other.map(|()| success()),
                };
            }
        },
        _ => return Ok(more_than_one_budget()),
    };
    add_condition_and_delete(shared, ns, name, opts)?;
    Ok(success())
}

/// `canIgnorePDB`: finished, pending or terminating pods.
fn can_ignore_budgets(pod: &Value) -> bool {
    matches!(
        str_at(pod, "/status/phase"),
        "Succeeded" | "Failed" | "Pending"
    ) || pod.pointer("/metadata/deletionTimestamp").is_some()
}

/// `shouldEnforceResourceVersion`: not for finished or terminating pods.
fn enforce_resource_version(pod: &Value) -> bool {
    !matches!(str_at(pod, "/status/phase"), "Succeeded" | "Failed")
        && pod.pointer("/metadata/deletionTimestamp").is_none()
}

/// `getPodDisruptionBudgets`: the budgets of the pod's namespace whose
/// selector matches its labels (a missing selector matches nothing, an
/// empty one everything, as `LabelSelectorAsSelector`).
fn budgets_of(shared: &Shared, pod: &Value) -> Vec<Value> {
    let ns = str_at(pod, "/metadata/namespace");
    let labels = labels(pod);
    let (budgets, _) = shared.store.list(
        Kind::PodDisruptionBudget,
        Some(ns).filter(|n| !n.is_empty()),
    );
    budgets
        .into_iter()
        .filter(|b| {
            b.get("spec")
                .and_then(|s| serde_json::from_value(s.clone()).ok())
                .is_some_and(|spec| infera_model::pdb::selects(&spec, &labels))
        })
        .collect()
}

enum Spent {
    /// The budget allowed it and is one disruption poorer.
    Decremented,
    /// The pod is not Ready and the budget lets it go without spending.
    UnhealthyPod,
}

/// The unhealthy-pod policy, then `checkAndDecrement` under optimistic
/// concurrency (a conflict re-reads the budget).
fn spend(shared: &Shared, pod: &Value, budget: &Value, dry_run: bool) -> Result<Spent, ApiStatus> {
    if unhealthy_may_go(pod, budget) {
        return Ok(Spent::UnhealthyPod);
    }
    let ns = str_at(budget, "/metadata/namespace").to_string();
    let name = str_at(budget, "/metadata/name").to_string();
    let pod_name = str_at(pod, "/metadata/name");
    let mut budget = budget.clone();
    for _ in 0..RETRIES {
        let updated = check_and_decrement(&budget, pod_name)?;
        if dry_run {
            return Ok(Spent::Decremented);
        }
        match shared
            .store
            .update_status(Kind::PodDisruptionBudget, updated)
        {
            Ok(_) => return Ok(Spent::Decremented),
            Err(StoreError::Conflict) => {
                budget = shared
                    .store
                    .get(Kind::PodDisruptionBudget, Some(&ns), &name)
                    .ok_or_else(|| ApiStatus::not_found(Kind::PodDisruptionBudget, &name))?;
            }
            Err(e) => return Err(ApiStatus::from_store(&e, Kind::PodDisruptionBudget, &name)),
        }
    }
    let mut timeout = ApiStatus::new(
        504,
        "Timeout",
        format!("couldn't update PodDisruptionBudget {name:?} due to conflicts"),
    );
    timeout.retry_after = Some(10);
    Err(timeout)
}

/// An unready pod leaves without spending the budget: always under
/// `AlwaysAllow`, under `IfHealthyBudget` (the default) while
/// `currentHealthy >= desiredHealthy > 0`.
fn unhealthy_may_go(pod: &Value, budget: &Value) -> bool {
    if pod_ready(pod) {
        return false;
    }
    let always = str_at(budget, "/spec/unhealthyPodEvictionPolicy") == "AlwaysAllow";
    let current = i64_at(budget, "/status/currentHealthy").unwrap_or(0);
    let desired = i64_at(budget, "/status/desiredHealthy").unwrap_or(0);
    always || (current >= desired && desired > 0)
}

/// `checkAndDecrement`: the budget with one disruption fewer and the pod
/// recorded in `disruptedPods`, or the refusal.
fn check_and_decrement(budget: &Value, pod_name: &str) -> Result<Value, ApiStatus> {
    let name = str_at(budget, "/metadata/name");
    let observed = i64_at(budget, "/status/observedGeneration").unwrap_or(0);
    if observed < i64_at(budget, "/metadata/generation").unwrap_or(0) {
        return Err(still_processing(name));
    }
    let allowed = i64_at(budget, "/status/disruptionsAllowed").unwrap_or(0);
    if allowed < 0 {
        return Err(forbidden(name, "pdb disruptions allowed is negative"));
    }
    let pending = budget
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object)
        .map_or(0, serde_json::Map::len);
    if pending > 2000 {
        return Err(forbidden(
            name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(too_many_requests(&refusal_cause(budget), None));
    }
    let mut updated = budget.clone();
    updated["status"]["disruptionsAllowed"] = json!(allowed - 1);
    if allowed - 1 == 0 {
        let generation = i64_at(budget, "/status/observedGeneration").unwrap_or(0);
        if !updated["status"]["conditions"].is_array() {
            updated["status"]["conditions"] = json!([]);
        }
        set_allowed_condition(&mut updated["status"]["conditions"], 0, generation, None);
    }
    if !updated["status"]["disruptedPods"].is_object() {
        updated["status"]["disruptedPods"] = json!({});
    }
    updated["status"]["disruptedPods"][pod_name] = json!(infera_sim_core::clock::now_timestamp());
    Ok(updated)
}

/// The `DisruptionBudget` cause of a refusal with nothing allowed, chosen
/// as upstream chooses it.
fn refusal_cause(budget: &Value) -> String {
    let name = str_at(budget, "/metadata/name");
    let condition = budget
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| str_at(c, "/type") == "DisruptionAllowed"));
    let (status, reason, message) = condition.map_or(("", "", ""), |c| {
        (
            str_at(c, "/status"),
            str_at(c, "/reason"),
            str_at(c, "/message"),
        )
    });
    let current = i64_at(budget, "/status/currentHealthy").unwrap_or(0);
    let desired = i64_at(budget, "/status/desiredHealthy").unwrap_or(0);
    if status == "False" && !message.is_empty() && reason == "SyncFailed" {
        format!(
            "The disruption budget {name} does not allow evicting pods currently because it failed sync: {message}"
        )
    } else if current <= desired {
        format!(
            "The disruption budget {name} needs {desired} healthy pods and has {current} currently"
        )
    } else if status == "False" && !message.is_empty() {
        format!(
            "The disruption budget {name} does not allow evicting pods currently ({reason}): {message}"
        )
    } else {
        format!("The disruption budget {name} does not allow evicting pods currently")
    }
}

/// `errors.NewTooManyRequests` with one `DisruptionBudget` cause.
fn too_many_requests(cause: &str, retry_after: Option<u64>) -> ApiStatus {
    let mut status = ApiStatus::new(429, "TooManyRequests", VIOLATES_BUDGET);
    status.details = Some(json!({"causes": [{"reason": "DisruptionBudget", "message": cause}]}));
    status.retry_after = retry_after;
    status
}

/// `createTooManyRequestsError`: the budget has not seen its spec yet.
fn still_processing(name: &str) -> ApiStatus {
    too_many_requests(
        &format!("The disruption budget {name} is still being processed by the server."),
        Some(10),
    )
}

fn forbidden(name: &str, why: &str) -> ApiStatus {
    let mut status = ApiStatus::new(
        403,
        "Forbidden",
        format!("poddisruptionbudgets.policy {name:?} is forbidden: {why}"),
    );
    status.details = Some(json!({
        "name": name, "group": "policy", "kind": "poddisruptionbudgets",
        "causes": [{"reason": "DisruptionBudget", "message": format!(
            "The disruption budget {name} does not allow evicting pods currently: {why}")}],
    }));
    status
}

/// `addConditionAndDeletePod`: the `DisruptionTarget` condition (not on a
/// dry run), then the delete with the Eviction's options.
fn add_condition_and_delete(
    shared: &Shared,
    ns: Option<&str>,
    name: &str,
    opts: DeleteOptions,
) -> Result<(), ApiStatus> {
    if opts.dry_run() {
        return delete_one(shared, Kind::Pod, ns, name, &opts).map(drop);
    }
    let current = shared
        .store
        .get(Kind::Pod, ns, name)
        .ok_or_else(|| ApiStatus::not_found(Kind::Pod, name))?;
    let mismatch = |want: Option<&str>, field: &str| {
        want.is_some_and(|w| !w.is_empty() && w != str_at(&current, field))
    };
    if mismatch(opts.uid(), "/metadata/uid")
        || mismatch(opts.resource_version(), "/metadata/resourceVersion")
    {
        return Err(ApiStatus::conflict(Kind::Pod, name));
    }
    let updated = shared
        .store
        .mutate(Kind::Pod, ns, name, add_disruption_target)
        .map_err(|e| ApiStatus::from_store(&e, Kind::Pod, name))?;
    let opts = match opts.resource_version() {
        Some(_) => opts.with_resource_version(str_at(&updated, "/metadata/resourceVersion")),
        None => opts,
    };
    delete_one(shared, Kind::Pod, ns, name, &opts).map(drop)
}

/// `podutil.UpdatePodCondition` with `DisruptionTarget`/True.
fn add_disruption_target(pod: &mut Value) {
    let now = infera_sim_core::clock::now_timestamp();
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    if !pod["status"]["conditions"].is_array() {
        pod["status"]["conditions"] = json!([]);
    }
    let condition = json!({
        "type": "DisruptionTarget",
        "status": "True",
        "lastTransitionTime": now,
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
    });
    if let Some(list) = pod["status"]["conditions"].as_array_mut() {
        match list
            .iter_mut()
            .find(|c| str_at(c, "/type") == "DisruptionTarget")
        {
            Some(c) => {
                let kept = if str_at(c, "/status") == "True" {
                    c.get("lastTransitionTime").cloned()
                } else {
                    None
                };
                *c = condition;
                if let Some(at) = kept {
                    c["lastTransitionTime"] = at;
                }
            }
            None => list.push(condition),
        }
    }
}

fn success() -> Response<Body> {
    let status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
    });
    json_response(
        StatusCode::CREATED,
        serde_json::to_vec(&status).unwrap_or_default(),
    )
}

/// Upstream returns this `Status` as the result (no reason), code 500.
fn more_than_one_budget() -> Response<Body> {
    let status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        "code": 500,
    });
    json_response(
        StatusCode::INTERNAL_SERVER_ERROR,
        serde_json::to_vec(&status).unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(allowed: i64, current: i64, desired: i64, observed: i64) -> Value {
        json!({"metadata": {"name": "llama", "generation": 1},
            "status": {"disruptionsAllowed": allowed, "currentHealthy": current,
                "desiredHealthy": desired, "observedGeneration": observed}})
    }

    #[test]
    fn an_unready_pod_goes_as_the_policy_says() {
        let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        let unready = json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}});
        let with = |policy: Option<&str>, current: i64, desired: i64| {
            let mut b = budget(0, current, desired, 1);
            if let Some(p) = policy {
                b["spec"] = json!({"unhealthyPodEvictionPolicy": p});
            }
            b
        };
        // (pod, policy, currentHealthy, desiredHealthy) -> goes unspent
        let cases = [
            (&unready, None, 2, 2, true),
            (&unready, Some("IfHealthyBudget"), 1, 2, false),
            (&unready, None, 0, 0, false),
            (&unready, Some("AlwaysAllow"), 0, 1, true),
            (&ready, Some("AlwaysAllow"), 0, 1, false),
        ];
        for (pod, policy, current, desired, want) in cases {
            assert_eq!(
                unhealthy_may_go(pod, &with(policy, current, desired)),
                want,
                "{policy:?} {current}/{desired}"
            );
        }
    }

    #[test]
    fn nothing_allowed_is_a_429_naming_the_budget() {
        let refused = check_and_decrement(&budget(0, 1, 1, 1), "p").unwrap_err();
        assert_eq!((refused.code, refused.reason), (429, "TooManyRequests"));
        assert_eq!(refused.message, VIOLATES_BUDGET);
        assert_eq!(
            refused.to_json()["details"]["causes"][0]["message"],
            "The disruption budget llama needs 1 healthy pods and has 1 currently"
        );
        assert_eq!(refused.retry_after, None);
    }

    #[test]
    fn an_unobserved_generation_is_a_429_with_retry_after() {
        let refused = check_and_decrement(&budget(1, 2, 1, 0), "p").unwrap_err();
        assert_eq!(refused.code, 429);
        assert_eq!(refused.retry_after, Some(10));
    }

    #[test]
    fn an_allowed_eviction_spends_the_budget_and_records_the_pod() {
        let spent = check_and_decrement(&budget(1, 2, 1, 1), "p").unwrap();
        assert_eq!(spent["status"]["disruptionsAllowed"], 0);
        assert!(spent["status"]["disruptedPods"]["p"].is_string());
        assert_eq!(
            spent["status"]["conditions"][0]["reason"],
            "InsufficientPods"
        );
        let negative = check_and_decrement(&budget(-1, 2, 1, 1), "p").unwrap_err();
        assert_eq!(negative.code, 403);
    }
}
