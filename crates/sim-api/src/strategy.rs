//! What each kind's registry strategy does to an object before it is
//! created: the status is the controllers' (and the kubelet's) to write, so
//! a create starts it afresh; a pod starts `Pending` with its QoS class.
//!
//! Mirrors the `PrepareForCreate` of k8s.io/kubernetes
//! `pkg/registry/*/strategy.go` (e.g. `pkg/registry/core/pod/strategy.go`)
//! and `pkg/apis/core/v1/helper/qos` (`GetPodQOS`).

use serde_json::{Value, json};

use infera_sim_core::kind::Kind;

/// Reset the status of a new object of `kind` (kinds without a status
/// subresource keep what they were given).
pub(crate) fn prepare_for_create(kind: Kind, obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    if !kind.has_status() {
        return;
    }
    match kind {
        Kind::Pod => {
            map.insert(
                "status".into(),
                json!({"phase": "Pending", "qosClass": qos_class(map.get("spec"))}),
            );
        }
        Kind::Namespace => {
            map.remove("status");
        }
        // pkg/registry/policy/poddisruptionbudget/strategy.go: an empty
        // status, whose four counts are not omitempty.
        Kind::PodDisruptionBudget => {
            map.insert(
                "status".into(),
                json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}),
            );
        }
        _ => {
            map.insert("status".into(), json!({}));
        }
    }
}

/// The pod's QoS class, as upstream derives it from requests and limits.
fn qos_class(spec: Option<&Value>) -> &'static str {
    let containers = spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in &containers {
        let requests = c.pointer("/resources/requests").and_then(Value::as_object);
        let limits = c.pointer("/resources/limits").and_then(Value::as_object);
        if requests.is_some_and(|r| !r.is_empty()) || limits.is_some_and(|l| !l.is_empty()) {
            any = true;
        }
        let cpu_mem_limited =
            limits.is_some_and(|l| l.contains_key("cpu") && l.contains_key("memory"));
        let requests_match = requests.is_none_or(|r| {
            r.iter()
                .all(|(k, v)| limits.and_then(|l| l.get(k)).is_none_or(|lv| lv == v))
        });
        guaranteed &= cpu_mem_limited && requests_match;
    }
    if guaranteed {
        "Guaranteed"
    } else if any {
        "Burstable"
    } else {
        "BestEffort"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qos_classes() {
        assert_eq!(qos_class(Some(&json!({"containers": [{}]}))), "BestEffort");
        assert_eq!(
            qos_class(Some(
                &json!({"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]})
            )),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(Some(
                &json!({"containers": [{"resources": {"requests": {"cpu": "1"}}}]})
            )),
            "Burstable"
        );
    }
}
