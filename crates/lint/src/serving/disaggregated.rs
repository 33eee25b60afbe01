//! LWS `DisaggregatedSet` (`disaggregatedset.x-k8s.io`,
//! kubernetes-sigs/lws): a LeaderWorkerSet a role (a slice), rolled by a
//! new revision's LeaderWorkerSet scaled up beside the old one.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use super::{CrdRollout, Out, Placeholders, Roll, Unit, count, path, pod_at, run};
use crate::runner::Cx;
use infera_model::manifest::serving::ServingObject;
use infera_model::rolling;

/// A role's maxSurge and maxUnavailable (`extractRollingUpdateConfig`):
/// 1 and 0 (`DefaultRollingUpdateConfig`), unless the role's
/// `rolloutStrategy.rollingUpdateConfiguration` gives a maxUnavailable
/// above 0 (then both are its own) or a maxSurge above 0 (then that).
fn fenceposts(role: &Value, replicas: i32) -> (i64, i64) {
    let rc = role.pointer("/spec/rolloutStrategy/rollingUpdateConfiguration");
    let scaled = |k: &str, up: bool| {
        rc.and_then(|r| r.get(k))
            .and_then(rolling::int_or_string)
            .map_or(0, |v| rolling::scaled_value(&v, i64::from(replicas), up))
    };
    let (surge, unavailable) = (scaled("maxSurge", true), scaled("maxUnavailable", false));
    if unavailable > 0 {
        (surge, unavailable)
    } else if surge > 0 {
        (surge, 0)
    } else {
        (1, 0)
    }
}

/// The DisaggregatedSet controller (`executor.go`, `planner.go`): on a
/// change each role gets a LeaderWorkerSet of the new revision, scaled up
/// while the old one is scaled down, `old + new <= target + maxSurge` and
/// at least `target - maxUnavailable` kept. Each role is judged as its
/// LeaderWorkerSet: `replicas` groups of `leaderWorkerTemplate.size` pods,
/// the leader template (else the worker's) running the server.
pub(super) fn disaggregated_set(
    obj: &ServingObject,
    placeholders: &Placeholders,
    cx: Cx<'_>,
    out: &mut Out,
) {
    let roles = obj.at("/spec/roles").and_then(Value::as_array);
    for (i, role) in roles.into_iter().flatten().enumerate() {
        let base = path(&["spec", "roles", &i.to_string()]);
        let tpl = |which: &str| {
            let mut p = base.clone();
            p.extend(path(&["spec", "leaderWorkerTemplate", which, "spec"]));
            p
        };
        let (pod, pod_path) = match pod_at(obj, &tpl("leaderTemplate")) {
            Some(pod) => (pod, tpl("leaderTemplate")),
            None => match pod_at(obj, &tpl("workerTemplate")) {
                Some(pod) => (pod, tpl("workerTemplate")),
                None => continue,
            },
        };
        let spec = role.get("spec");
        let replicas = count(spec.and_then(|s| s.get("replicas")), 1).unwrap_or(1);
        let size = count(
            spec.and_then(|s| s.pointer("/leaderWorkerTemplate/size")),
            1,
        );
        let (surge, unavailable) = fenceposts(role, replicas);
        let int = |n: i64| IntOrString::Int(i32::try_from(n).unwrap_or(i32::MAX));
        let lws = rolling::Roll::lws(
            Some(&int(surge)),
            Some(&int(unavailable)),
            i64::from(replicas),
        );
        let roll = Roll {
            replicas: Some(replicas),
            number_of_nodes: size,
            roll: lws.kind,
            max_surge: lws.surge,
            max_unavailable: lws.unavailable,
            max_unavailable_spec: None,
        };
        let mut field = base.clone();
        field.extend(path(&["spec", "rolloutStrategy"]));
        let mut replicas_field = base.clone();
        replicas_field.extend(path(&["spec", "replicas"]));
        let crd = CrdRollout {
            unit: Some("replica(s)"),
            renders: format!(
                "the DisaggregatedSet controller scales a new LeaderWorkerSet up beside the old one (maxSurge {}, maxUnavailable {} groups)",
                lws.surge, lws.unavailable
            ),
            field,
            replicas: Some(replicas_field),
            fix: None,
            advice: "or surge a group (the role's `rolloutStrategy`) with a readiness probe on the leader".into(),
        };
        let unit = Unit::role(obj, role, (pod, pod_path, base), roll, crd);
        run(unit, placeholders, cx, out);
    }
}
