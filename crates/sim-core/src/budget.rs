//! What the Eviction API (`infera_sim_api::eviction`) and the disruption
//! controller (`infera_sim_controllers::disruption`) both read and write of a
//! PodDisruptionBudget and its pods, below both so neither names the other.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::json::str_at;

/// The `DisruptionAllowed` condition (policy/v1 `DisruptionAllowedCondition`).
pub const DISRUPTION_ALLOWED: &str = "DisruptionAllowed";

/// `podutil.IsPodReady`: the pod's Ready condition is True.
pub fn pod_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| str_at(c, "/type") == "Ready" && str_at(c, "/status") == "True")
        })
}

/// A pod's labels, as the selector predicates take them.
pub fn labels(pod: &Value) -> BTreeMap<String, String> {
    pod.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect()
}

/// `UpdateDisruptionAllowedCondition` through `meta.SetStatusCondition`:
/// `SufficientPods`/True when something is allowed, else
/// `InsufficientPods`/False (or `failed`'s reason and message);
/// `lastTransitionTime` moves only when the status flips.
pub fn set_allowed_condition(
    conditions: &mut Value,
    allowed: i32,
    generation: i64,
    failed: Option<(&str, &str)>,
) {
    let (status, reason, message) = match failed {
        Some((reason, message)) => ("False", reason, message),
        None if allowed > 0 => ("True", "SufficientPods", ""),
        None => ("False", "InsufficientPods", ""),
    };
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    let existing = list
        .iter_mut()
        .find(|c| str_at(c, "/type") == DISRUPTION_ALLOWED);
    let since = match &existing {
        Some(c) if str_at(c, "/status") == status => str_at(c, "/lastTransitionTime").to_string(),
        _ => crate::clock::now_timestamp(),
    };
    let mut condition = Map::new();
    condition.insert("type".into(), json!(DISRUPTION_ALLOWED));
    condition.insert("status".into(), json!(status));
    if generation > 0 {
        condition.insert("observedGeneration".into(), json!(generation));
    }
    condition.insert("lastTransitionTime".into(), json!(since));
    condition.insert("reason".into(), json!(reason));
    condition.insert("message".into(), json!(message));
    match existing {
        Some(c) => *c = Value::Object(condition),
        None => list.push(Value::Object(condition)),
    }
}
