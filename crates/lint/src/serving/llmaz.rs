//! llmaz `Service` (`inference.llmaz.io`, InftyAI/llmaz): a
//! LeaderWorkerSet of its `workloadTemplate`.

use super::{CrdRollout, Out, Placeholders, Roll, Unit, count, path, pod_at, run};
use crate::runner::Cx;
use infera_model::manifest::serving::ServingObject;
use infera_model::rolling;

/// llmaz `buildWorkloadApplyConfiguration`: a LeaderWorkerSet of the
/// Service's name whose template is `workloadTemplate` (leader and worker
/// templates, `size`), `replicas` (default 1) and `rolloutStrategy` as
/// written (default maxUnavailable 1, maxSurge 0: `service_types.go`).
/// The leader template, else the worker template, runs the server.
pub(super) fn service(
    obj: &ServingObject,
    placeholders: &Placeholders,
    cx: Cx<'_>,
    out: &mut Out,
) -> Result<(), String> {
    let which = if obj
        .at("/spec/workloadTemplate/leaderTemplate/spec")
        .is_some()
    {
        "leaderTemplate"
    } else {
        "workerTemplate"
    };
    let pod_path = path(&["spec", "workloadTemplate", which, "spec"]);
    let Some(pod) = pod_at(obj, &pod_path) else {
        return Err(format!(
            "no pod at `{}`: llmaz renders its LeaderWorkerSet from `workloadTemplate`'s leader and worker templates",
            super::dotted(&pod_path)
        ));
    };
    let replicas = count(obj.at("/spec/replicas"), 1);
    let size = count(obj.at("/spec/workloadTemplate/size"), 1);
    let ru = obj.at("/spec/rolloutStrategy/rollingUpdateConfiguration");
    let field = |k: &str| ru.and_then(|r| r.get(k)).and_then(rolling::int_or_string);
    let unavailable = field("maxUnavailable");
    let lws = rolling::Roll::lws(
        field("maxSurge").as_ref(),
        unavailable.as_ref(),
        i64::from(replicas.unwrap_or(1)),
    );
    let roll = Roll {
        replicas,
        number_of_nodes: size,
        roll: lws.kind,
        max_surge: lws.surge,
        max_unavailable: lws.unavailable,
        max_unavailable_spec: unavailable,
    };
    let crd = CrdRollout {
        unit: Some("replica(s)"),
        renders: format!(
            "llmaz renders a LeaderWorkerSet of `workloadTemplate` (groups of {} pod(s)), rolled by `rolloutStrategy` (maxSurge {}, maxUnavailable {})",
            size.map_or_else(|| "?".to_string(), |s| s.to_string()),
            lws.surge,
            lws.unavailable
        ),
        field: path(&["spec", "rolloutStrategy"]),
        replicas: Some(path(&["spec", "replicas"])),
        fix: None,
        advice: "or surge a group (`rolloutStrategy.rollingUpdateConfiguration`: maxSurge 1, maxUnavailable 0) with a readiness probe on the leader".into(),
    };
    let unit = Unit::whole(obj, pod, Some(pod_path), roll, crd);
    run(unit, placeholders, cx, out);
    Ok(())
}
