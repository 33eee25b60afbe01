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
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::catalogue;
use crate::worker::{
    READINESS_PORT_ENV, READY_PATH, ReadinessPort, WORKER_INFO_ANNOTATION, main_container_position,
    readiness_port as env_readiness_port, worker_readiness_port,
};

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

// ---------------------------------------------------------------------------
// Container predicates (operator-semantics §2, §3)
// ---------------------------------------------------------------------------

/// The readiness port of one container (its own env).
pub fn container_readiness_port(c: &Container) -> ReadinessPort {
    env_readiness_port(c.env.as_deref().unwrap_or(&[]))
}

/// Index of the main container of a pod spec: the one named `main` or
/// `infera`, else the first.
pub fn main_container_index(pod: &PodSpec) -> usize {
    crate::worker::main_container_position(pod.containers.iter().map(|c| c.name.as_str()))
        .unwrap_or(0)
}

/// True when the container's entrypoint launches an infera engine
/// (`python3 -m infera.engine.<backend>`), as the engine catalogue reads it.
pub fn container_runs_engine(c: &Container) -> bool {
    crate::catalogue::runs_infera(c)
}

/// True when the container is probed on its readiness port: a
/// `readinessProbe.httpGet` with path exactly `/ready` and an integer port
/// equal to the container's knowable readiness port (§3).
pub fn container_probed_on_readiness_port(c: &Container) -> bool {
    let Some(http) = c.readiness_probe.as_ref().and_then(|p| p.http_get.as_ref()) else {
        return false;
    };
    let Some(port) = container_readiness_port(c).known() else {
        return false;
    };
    http.path.as_deref() == Some(READY_PATH) && http.port == IntOrString::Int(i32::from(port))
}

/// True when some container of the pod is probed on its readiness port: a
/// `readinessProbe.httpGet` with path exactly `/ready` and an integer port
/// equal to that container's knowable readiness port (§3).
pub fn probed_on_readiness_port(pod: &PodSpec) -> bool {
    pod.containers
        .iter()
        .any(container_probed_on_readiness_port)
}

/// The infera engine's drain flag and env ([`catalogue::INFERA_DRAIN`]), its
/// default and the cap the operator puts on it.
pub const DRAIN_TIMEOUT_ENV: &str = match catalogue::INFERA_DRAIN.env {
    Some(name) => name,
    None => "",
};
pub const DRAIN_TIMEOUT_FLAG: &str = catalogue::INFERA_DRAIN.flags[0];
pub const DEFAULT_DRAIN_SECONDS: i64 = catalogue::INFERA_DRAIN.default_seconds;
pub const MAX_DRAIN_SECONDS: i64 = 3600;

/// The drain timeout of a container in seconds: `--drain-timeout` in its
/// command/args, else `INFERA_DRAIN_TIMEOUT`, else 30; capped at 3600.
pub fn drain_timeout_seconds(c: &Container) -> i64 {
    let tokens = catalogue::command_tokens(c);
    let from_flag = catalogue::Flags::parse(&tokens)
        .value(&[DRAIN_TIMEOUT_FLAG])
        .and_then(catalogue::parse_seconds);
    let from_env = || {
        c.env
            .iter()
            .flatten()
            .find(|e| e.name == DRAIN_TIMEOUT_ENV)
            .and_then(|e| e.value.as_deref())
            .and_then(catalogue::parse_seconds)
    };
    from_flag
        .or_else(from_env)
        .unwrap_or(DEFAULT_DRAIN_SECONDS)
        .clamp(0, MAX_DRAIN_SECONDS)
}

/// The container that runs the pod's model server — the one rule lint, the
/// audit, the rollout and the simulated kubelet share: the main container
/// ([`main_container_position`]: named `main` or `infera`, else the first)
/// when the engine catalogue recognizes its server ([`catalogue::recognize`]),
/// else the first container it recognizes, else the main one.
pub fn engine_container_index(spec: &PodSpec) -> usize {
    let main =
        main_container_position(spec.containers.iter().map(|c| c.name.as_str())).unwrap_or(0);
    if spec
        .containers
        .get(main)
        .and_then(catalogue::recognize)
        .is_some()
    {
        return main;
    }
    spec.containers
        .iter()
        .position(|c| catalogue::recognize(c).is_some())
        .unwrap_or(main)
}

/// Whether a pod spec launches an infera worker (operator-semantics §5):
/// its engine container ([`engine_container_index`]) runs the infera engine
/// (a token `infera.engine.<backend>`, or a path under `/infera/engine/`).
pub fn launches_infera_worker(spec: &PodSpec) -> bool {
    spec.containers
        .get(engine_container_index(spec))
        .and_then(catalogue::recognize)
        .is_some_and(|e| e.kind == catalogue::EngineKind::Infera)
}

/// The readiness port a pod spec's worker listens on: its engine
/// container's literal `INFERA_READINESS_PORT` as the worker reads it
/// ([`worker_readiness_port`]). One reading for the rollout's legs and the
/// simulated kubelet.
pub fn readiness_port(spec: &PodSpec) -> u16 {
    let value = spec
        .containers
        .get(engine_container_index(spec))
        .and_then(|c| c.env.as_deref())
        .and_then(|env| env.iter().find(|e| e.name == READINESS_PORT_ENV))
        .and_then(|e| e.value.as_deref());
    worker_readiness_port(value)
}

/// Whether `pod` runs an infera worker, which registers with the router
/// (operator-semantics §5): its spec launches one
/// ([`launches_infera_worker`]), or it has registered already (the
/// worker-info annotation, e.g. behind a wrapper script infera cannot read).
pub fn is_infera_worker(pod: &Pod) -> bool {
    registered(pod) || pod.spec.as_ref().is_some_and(launches_infera_worker)
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

/// Why Ready on pods of `spec` falls short of serving, or `None` when Ready
/// means serving (operator-semantics §5). The one rule for the rollout's
/// preflight and the drain plan, the template-side twin of [`is_serving`]:
/// - an infera worker serves once it has registered: Ready means that only
///   with a `/ready` probe on its readiness port ([`probed_on_readiness_port`]);
/// - another model server the catalogue knows serves once its weights are
///   loaded: Ready means that once its engine container has a readiness
///   probe at all (lint's IR007 judges the probe's port and path);
/// - any other pod (the router, a web server) loads nothing and registers
///   nowhere: Ready is all there is.
pub fn ready_short_of_serving(spec: &PodSpec) -> Option<String> {
    let c = spec.containers.get(engine_container_index(spec))?;
    let engine = catalogue::recognize(c)?;
    if engine.kind == catalogue::EngineKind::Infera {
        return (!probed_on_readiness_port(spec)).then(|| {
            "no /ready readiness probe on its readiness port: the replacement turns Ready before it has loaded weights and registered".to_string()
        });
    }
    c.readiness_probe.is_none().then(|| {
        format!(
            "no readiness probe on its {} container {:?}: the replacement turns Ready at Running, before it has loaded weights",
            engine.name, c.name
        )
    })
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

/// The reason of the pod's `DisruptionTarget` condition, when it is True:
/// the pod is about to be deleted for a disruption (an eviction, a
/// preemption, a taint eviction, …), not by its owner.
pub fn disruption_reason(pod: &Pod) -> Option<&str> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "DisruptionTarget" && c.status == "True")
        .map(|c| c.reason.as_deref().unwrap_or(""))
}

/// The Eviction API's `DisruptionTarget` reason (`kubectl drain`, `infera
/// drain`: k8s.io/api core/v1 `PodReasonEvictionByEvictionAPI`).
pub const EVICTION_BY_EVICTION_API: &str = "EvictionByEvictionAPI";

/// Every `DisruptionTarget` reason Kubernetes writes (k8s.io/api@v0.37
/// core/v1 types.go, `PodReason…`), each with its label, and `other` for
/// any other: a closed set, fit for a metric label.
const DISRUPTION_REASONS: [(&str, &str); 5] = [
    (EVICTION_BY_EVICTION_API, "evicted"),
    ("PreemptionByScheduler", "preempted"),
    ("DeletionByTaintManager", "taint_eviction"),
    ("DeletionByPodGC", "pod_gc"),
    ("TerminationByKubelet", "kubelet"),
];

/// Every [`disruption_label`].
pub const DISRUPTION_LABELS: [&str; 6] = [
    "evicted",
    "preempted",
    "taint_eviction",
    "pod_gc",
    "kubelet",
    "other",
];

/// The closed-set label of a `DisruptionTarget` reason.
pub fn disruption_label(reason: &str) -> &'static str {
    DISRUPTION_REASONS
        .iter()
        .find(|(r, _)| *r == reason)
        .map_or("other", |(_, label)| label)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(json: serde_json::Value) -> Pod {
        serde_json::from_value(json).expect("a pod")
    }

    /// The one is-a-worker rule, case by case: (containers, annotated, worker).
    #[test]
    fn a_worker_is_its_main_container_running_the_engine_or_a_registration() {
        use serde_json::json;
        let engine = json!({"name": "main", "image": "x",
            "command": ["python3", "-m", "infera.engine.vllm"]});
        let sidecar = json!({"name": "proxy", "image": "x", "args": ["envoy"]});
        let cases = [
            (json!([engine]), false, true),
            // The engine in a shell string, quoted, or launched by path.
            (
                json!([{"name": "c", "image": "x", "command": ["sh", "-c",
                "exec python3 -m 'infera.engine.sglang' --tp 8"]}]),
                false,
                true,
            ),
            (
                json!([{"name": "c", "image": "x",
                "command": ["python3", "/app/infera/engine/vllm.py"]}]),
                false,
                true,
            ),
            // A sidecar before the engine does not hide it.
            (json!([sidecar, engine]), false, true),
            // The main container runs no server: the first that does counts.
            (
                json!([{"name": "main", "image": "x", "args": ["sleep", "inf"]},
                {"name": "side", "image": "x", "command": ["python3", "-m", "infera.engine.vllm"]}]),
                false,
                true,
            ),
            // The main container runs another catalogued server: not a worker.
            (
                json!([{"name": "main", "image": "x", "command": ["vllm", "serve", "m"]},
                {"name": "side", "image": "x", "command": ["python3", "-m", "infera.engine.vllm"]}]),
                false,
                false,
            ),
            // A substring that is not the entrypoint's module does not count.
            (
                json!([{"name": "c", "image": "x",
                "args": ["serve", "--config=/etc/infera.engine.yaml"]}]),
                false,
                false,
            ),
            (json!([sidecar]), false, false),
            // Registered behind a wrapper infera cannot read.
            (
                json!([{"name": "c", "image": "x", "command": ["/start.sh"]}]),
                true,
                true,
            ),
        ];
        for (containers, annotated, worker) in cases {
            let annotations = if annotated {
                json!({WORKER_INFO_ANNOTATION: "{}"})
            } else {
                json!({})
            };
            let p = pod(json!({"metadata": {"annotations": annotations},
                "spec": {"containers": containers.clone()}}));
            assert_eq!(
                is_infera_worker(&p),
                worker,
                "{containers} annotated={annotated}"
            );
        }
    }

    /// The one "Ready means serving" rule for templates, case by case:
    /// (containers, falls short, and a word of the reason).
    #[test]
    fn ready_means_serving_by_what_the_pod_runs() {
        use serde_json::json;
        let infera = |probe: serde_json::Value| {
            json!({"name": "main", "image": "x", "readinessProbe": probe,
                "command": ["python3", "-m", "infera.engine.vllm"]})
        };
        let vllm = |probe: serde_json::Value| {
            json!({"name": "vllm", "image": "x", "readinessProbe": probe,
                "command": ["vllm", "serve", "m"]})
        };
        let on = |path: &str, port: i32| json!({"httpGet": {"path": path, "port": port}});
        let cases = [
            // An infera worker: only /ready on its readiness port means registered.
            (json!([infera(on("/ready", 30090))]), None),
            (json!([infera(json!(null))]), Some("/ready")),
            (json!([infera(on("/health", 30090))]), Some("/ready")),
            (json!([infera(on("/ready", 8000))]), Some("/ready")),
            // Another catalogued server: any readiness probe on it.
            (json!([vllm(on("/health", 8000))]), None),
            (json!([vllm(json!(null))]), Some("vLLM")),
            // The router, a web server: Ready is all there is.
            (
                json!([{"name": "router", "image": "x", "args": ["--port", "8080"]}]),
                None,
            ),
            (json!([]), None),
        ];
        for (containers, short) in cases {
            let spec: PodSpec =
                serde_json::from_value(json!({"containers": containers.clone()})).expect("a spec");
            let got = ready_short_of_serving(&spec);
            match short {
                None => assert_eq!(got, None, "{containers}"),
                Some(word) => assert!(
                    got.as_deref().is_some_and(|m| m.contains(word)),
                    "{containers}: {got:?}"
                ),
            }
        }
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

    #[test]
    fn disruption_reasons_are_a_closed_set_of_labels() {
        let with = |status: &str, reason: &str| {
            pod(serde_json::json!({"status": {"conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "DisruptionTarget", "status": status, "reason": reason}]}}))
        };
        let evicted = with("True", EVICTION_BY_EVICTION_API);
        assert_eq!(disruption_reason(&evicted), Some(EVICTION_BY_EVICTION_API));
        assert_eq!(
            disruption_reason(&with("False", "PreemptionByScheduler")),
            None
        );
        assert_eq!(disruption_reason(&pod(serde_json::json!({}))), None);
        for (reason, label) in DISRUPTION_REASONS {
            assert_eq!(disruption_label(reason), label);
            assert!(DISRUPTION_LABELS.contains(&label));
        }
        assert_eq!(disruption_label("SomethingNew"), "other");
        assert_eq!(disruption_label(""), "other");
    }
}
