//! The helpers the Deployment controller's files share: the strategy's
//! numbers (replicas, maxSurge, maxUnavailable), the new ReplicaSet's size,
//! the pod-template hash, revisions and conditions.
//!
//! Mirrors k8s.io/kubernetes `pkg/controller/deployment/util/deployment_util.go`
//! (and `ComputeHash` of `pkg/controller/controller_utils.go`).

use std::collections::HashMap;

use serde_json::{Value, json};

use infera_sim_core::json::{i64_at, str_at};

pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";
pub const DESIRED_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/desired-replicas";
pub const MAX_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/max-replicas";
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";

use infera_model::rolling::{int_or_string, resolve_fenceposts};

pub(super) fn replicas(d: &Value) -> i64 {
    i64_at(d, "/spec/replicas").unwrap_or(1)
}

pub(super) fn is_rolling(d: &Value) -> bool {
    str_at(d, "/spec/strategy/type") != "Recreate"
}

/// (maxSurge, maxUnavailable) of a rolling Deployment, resolved for its replicas.
fn fenceposts(d: &Value) -> (i64, i64) {
    let field = |pointer: &str| d.pointer(pointer).and_then(int_or_string);
    resolve_fenceposts(
        field("/spec/strategy/rollingUpdate/maxSurge").as_ref(),
        field("/spec/strategy/rollingUpdate/maxUnavailable").as_ref(),
        replicas(d),
    )
}

pub(super) fn max_surge(d: &Value) -> i64 {
    if !is_rolling(d) {
        return 0;
    }
    fenceposts(d).0
}

pub(super) fn max_unavailable(d: &Value) -> i64 {
    let desired = replicas(d);
    if !is_rolling(d) || desired == 0 {
        return 0;
    }
    fenceposts(d).1.min(desired)
}

/// The new ReplicaSet count for a rolling update (upstream `NewRSNewReplicas`,
/// k8s.io/kubernetes@v1.37.2 pkg/controller/deployment/util/deployment_util.go).
pub fn new_rs_new_replicas(
    desired: i64,
    surge: i64,
    all_rs_replicas: i64,
    new_rs_replicas: i64,
) -> i64 {
    let max_total = desired + surge;
    if all_rs_replicas >= max_total {
        return new_rs_replicas;
    }
    let scale_up = (max_total - all_rs_replicas).min(desired - new_rs_replicas);
    new_rs_replicas + scale_up
}

pub(super) fn rs_replicas(rs: &Value) -> i64 {
    i64_at(rs, "/spec/replicas").unwrap_or(0)
}

pub(super) fn rs_available(rs: &Value) -> i64 {
    i64_at(rs, "/status/availableReplicas").unwrap_or(0)
}

/// Upstream's `ComputeHash`: FNV-32a of the template (and collision count),
/// rendered with `rand.SafeEncodeString` of its decimal form.
pub fn pod_template_hash(template: &Value, collision_count: Option<i64>) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            hash ^= u32::from(*b);
            hash = hash.wrapping_mul(0x0100_0193);
        }
    };
    feed(
        serde_json::to_string(template)
            .unwrap_or_default()
            .as_bytes(),
    );
    if let Some(c) = collision_count {
        feed(c.to_string().as_bytes());
    }
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    hash.to_string()
        .bytes()
        .map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()]))
        .collect()
}

pub(super) fn template_without_hash(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(labels) = t
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(POD_TEMPLATE_HASH);
        if labels.is_empty()
            && let Some(meta) = t.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.remove("labels");
        }
    }
    normalize(&mut t);
    t
}

/// [`template_without_hash`] of a ReplicaSet's template, remembered by the
/// ReplicaSet's uid while the template stays the same (it does not change
/// after creation), so a resync does not rebuild every one.
pub(super) fn normalized_template<'m>(
    memo: &'m mut HashMap<String, (Value, Value)>,
    rs: &Value,
) -> &'m Value {
    let raw = rs.pointer("/spec/template").unwrap_or(&Value::Null);
    let uid = str_at(rs, "/metadata/uid");
    if memo.get(uid).is_none_or(|(known, _)| known != raw) {
        memo.insert(uid.to_string(), (raw.clone(), template_without_hash(raw)));
    }
    memo.get(uid)
        .map_or(&Value::Null, |(_, normalized)| normalized)
}

/// Drop empty maps and nulls so defaulted and undefaulted forms compare equal.
pub(super) fn normalize(v: &mut Value) {
    if let Some(map) = v.as_object_mut() {
        for child in map.values_mut() {
            normalize(child);
        }
        map.retain(|_, c| !(c.is_null() || c.as_object().is_some_and(|m| m.is_empty())));
    } else if let Some(items) = v.as_array_mut() {
        for child in items {
            normalize(child);
        }
    }
}

pub(super) fn rv(v: &Value) -> u64 {
    str_at(v, "/metadata/resourceVersion").parse().unwrap_or(0)
}

pub(super) fn revision(v: &Value) -> i64 {
    str_at(
        v,
        &format!(
            "/metadata/annotations/{}",
            REVISION_ANNOTATION.replace('/', "~1")
        ),
    )
    .parse()
    .unwrap_or(0)
}

pub(super) fn condition<'a>(status: &'a Value, type_: &str) -> Option<&'a Value> {
    status
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

pub(super) fn make_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &str,
) -> Value {
    json!({"type": type_, "status": status, "lastUpdateTime": now, "lastTransitionTime": now,
           "reason": reason, "message": message})
}

/// Upstream `SetDeploymentCondition`.
pub(super) fn set_condition(status: &mut Value, mut cond: Value) {
    let type_ = str_at(&cond, "/type").to_string();
    if let Some(current) = condition(status, &type_) {
        if current.get("status") == cond.get("status")
            && current.get("reason") == cond.get("reason")
        {
            return;
        }
        if current.get("status") == cond.get("status")
            && let Some(t) = current.get("lastTransitionTime")
        {
            cond["lastTransitionTime"] = t.clone();
        }
    }
    remove_condition(status, &type_);
    if let Some(list) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        list.push(cond);
    } else {
        status["conditions"] = json!([cond]);
    }
}

pub(super) fn remove_condition(status: &mut Value, type_: &str) {
    if let Some(list) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        list.retain(|c| c.get("type").and_then(Value::as_str) != Some(type_));
    }
}

pub(super) fn has_progress_deadline(d: &Value) -> Option<i64> {
    i64_at(d, "/spec/progressDeadlineSeconds").filter(|s| *s != i64::from(i32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenceposts_round_as_upstream() {
        let v = |s: &str| Value::from(s);
        let cases: [(i64, Value, Value, (i64, i64)); 10] = [
            (1, v("25%"), v("25%"), (1, 0)),
            (4, v("25%"), v("25%"), (1, 1)),
            (10, v("25%"), v("25%"), (3, 2)),
            (3, v("50%"), v("50%"), (2, 1)),
            (1, json!(0), json!(0), (0, 1)),
            (1, json!(1), json!(0), (1, 0)),
            (1, json!(0), json!(1), (0, 1)),
            (5, v("0%"), v("10%"), (0, 1)),
            (10, v("10%"), json!(0), (1, 0)),
            (7, json!(2), v("30%"), (2, 2)),
        ];
        for (replicas, surge, unavailable, want) in cases {
            assert_eq!(
                resolve_fenceposts(
                    int_or_string(&surge).as_ref(),
                    int_or_string(&unavailable).as_ref(),
                    replicas
                ),
                want,
                "replicas {replicas} surge {surge} unavailable {unavailable}"
            );
        }
        assert_eq!(resolve_fenceposts(None, None, 1), (1, 0));
    }

    #[test]
    fn new_replica_set_scale_up() {
        // desired, surge, all, new -> target
        for (desired, surge, all, new, want) in [
            (1, 1, 1, 0, 1),
            (1, 0, 1, 0, 0),
            (3, 1, 3, 0, 1),
            (3, 1, 4, 1, 1),
            (3, 2, 3, 0, 2),
            (3, 5, 3, 0, 3),
        ] {
            assert_eq!(new_rs_new_replicas(desired, surge, all, new), want);
        }
    }

    #[test]
    fn template_hash_is_stable_and_safe() {
        let t = json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "m", "image": "a"}]}});
        let h = pod_template_hash(&t, None);
        assert_eq!(h, pod_template_hash(&t, None));
        assert_ne!(h, pod_template_hash(&t, Some(1)));
        assert!(h.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}
