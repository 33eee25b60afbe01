//! What a pod's own object says about serving (operator-semantics §5), one
//! home for the audit, the rollout and the simulator's ground truth:
//! Ready, routable and "runs an infera worker", and the server's own
//! timestamps of when each of those last changed.
//!
//! The timestamps are what makes an interval that infera did not watch
//! reconstructible: the Ready condition's `lastTransitionTime`, the
//! deletion request (`deletionTimestamp` minus the grace period), the
//! creation, and the `managedFields` entry that owns the worker's
//! registration annotation. A real API server writes them to the second
//! (truncated); the simulator to the millisecond.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;

use crate::worker::WORKER_INFO_ANNOTATION;

/// Whether `pod` counts as Ready: condition Ready True and not terminating.
pub fn is_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none() && ready_condition(pod).is_some_and(|(up, _)| up)
}

/// Whether `pod` is routable (operator-semantics §5): the worker-info
/// annotation is present, `status.phase` is Running and there is no
/// `deletionTimestamp`.
pub fn is_routable(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none() && registered(pod) && running(pod)
}

fn registered(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(WORKER_INFO_ANNOTATION))
}

fn running(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| p == "Running")
}

/// Whether `pod` runs an infera worker, which registers with the router
/// (operator-semantics §5): a container whose command or args start
/// `infera.engine.*`, or the worker-info annotation already present.
pub fn is_infera_worker(pod: &Pod) -> bool {
    registered(pod)
        || pod.spec.as_ref().is_some_and(|spec| {
            spec.containers.iter().any(|c| {
                c.command
                    .iter()
                    .flatten()
                    .chain(c.args.iter().flatten())
                    .any(|part| part.contains("infera.engine."))
            })
        })
}

/// Whether `pod` serves traffic as the router sees it: an infera worker
/// when it is routable ([`is_routable`]); any other pod (no registration
/// exists for it) when it is Ready.
pub fn is_serving(pod: &Pod) -> bool {
    if is_infera_worker(pod) {
        is_routable(pod)
    } else {
        is_ready(pod)
    }
}

/// The Ready condition: whether it is True, and its `lastTransitionTime`.
pub fn ready_condition(pod: &Pod) -> Option<(bool, Option<Timestamp>)> {
    let cond = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")?;
    Some((
        cond.status == "True",
        cond.last_transition_time.as_ref().map(|t| t.0),
    ))
}

/// When the pod was created (`metadata.creationTimestamp`).
pub fn created_at(pod: &Pod) -> Option<Timestamp> {
    pod.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

/// When the pod's deletion was requested: `deletionTimestamp` is the
/// deadline (request + grace period), so the grace period is taken off.
pub fn deletion_requested_at(pod: &Pod) -> Option<Timestamp> {
    let deadline = pod.metadata.deletion_timestamp.as_ref()?.0;
    let grace = pod.metadata.deletion_grace_period_seconds.unwrap_or(0);
    deadline
        .checked_sub(jiff::SignedDuration::from_secs(grace))
        .ok()
}

/// The latest time the worker's registration annotation was written: the
/// `time` of the `managedFields` entry that owns it. The annotation was
/// present from at most then (its manager may have written it earlier and
/// touched the pod again later, so this is an upper bound).
pub fn registered_by(pod: &Pod) -> Option<Timestamp> {
    let key = format!("f:{WORKER_INFO_ANNOTATION}");
    pod.metadata
        .managed_fields
        .as_ref()?
        .iter()
        .filter(|m| {
            m.fields_v1
                .as_ref()
                .and_then(|f| f.0.pointer("/f:metadata/f:annotations"))
                .and_then(|a| a.get(&key))
                .is_some()
        })
        .filter_map(|m| m.time.as_ref().map(|t| t.0))
        .max()
}

/// When the main container last started running (the earliest
/// `state.running.startedAt` of the containers), the server's time for
/// phase Running.
pub fn running_since(pod: &Pod) -> Option<Timestamp> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .filter_map(|c| c.state.as_ref()?.running.as_ref()?.started_at.as_ref())
        .map(|t| t.0)
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(json: serde_json::Value) -> Pod {
        serde_json::from_value(json).expect("a pod")
    }

    #[test]
    fn deletion_request_is_the_deadline_minus_the_grace_period() {
        let p = pod(serde_json::json!({"metadata": {
            "deletionTimestamp": "2026-12-05T12:00:30Z", "deletionGracePeriodSeconds": 30}}));
        assert_eq!(
            deletion_requested_at(&p).map(|t| t.to_string()).as_deref(),
            Some("2026-12-05T12:00:00Z")
        );
        assert!(!is_ready(&p));
    }

    #[test]
    fn the_registration_time_is_its_managed_fields_entry() {
        let p = pod(serde_json::json!({"metadata": {
            "annotations": {WORKER_INFO_ANNOTATION: "{}"},
            "managedFields": [
                {"manager": "kubelet", "operation": "Update", "time": "2026-12-05T12:00:09Z",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}},
                {"manager": "worker", "operation": "Update", "time": "2026-12-05T12:00:07Z",
                 "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:annotations": {"f:infera.amd.com/worker-info": {}}}}}
            ]},
            "status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-05T12:00:08Z"}]}}));
        assert_eq!(
            registered_by(&p).map(|t| t.to_string()).as_deref(),
            Some("2026-12-05T12:00:07Z")
        );
        assert!(is_routable(&p) && is_ready(&p) && is_serving(&p));
        let (up, at) = ready_condition(&p).expect("a Ready condition");
        assert!(up);
        assert_eq!(
            at.map(|t| t.to_string()).as_deref(),
            Some("2026-12-05T12:00:08Z")
        );
    }
}
