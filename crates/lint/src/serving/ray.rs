//! KubeRay `RayService`, and the GPU pod group of a Ray cluster
//! (ray-project/kuberay).

use k8s_openapi::api::core::v1::PodSpec;
use serde_json::{Value, json};

use super::{
    CrdRollout, Out, Placeholders, Roll, RollKind, Unit, count, path, pod_at, pointer, run,
};
use crate::runner::Cx;
use infera_model::manifest::serving::ServingObject;
use infera_model::manifest::{self};

/// The pod group of a RayCluster spec that holds the most GPUs per pod:
/// its pod, where it is written, and how many such pods one cluster runs
/// (head 1; a worker group `replicas` × `numOfHosts`); and the GPUs of the
/// whole cluster (every group's pods), over which Ray's distributed
/// executor spreads an engine. KubeRay gives every
/// Ray container a readiness probe of its own when it has none
/// (`initLivenessAndReadinessProbe`, on unless `ENABLE_PROBES_INJECTION`
/// is false), which says the Raylet is up, not that a model serves.
pub(super) fn ray_gpu_group(
    obj: &ServingObject,
    cluster: &manifest::Path,
) -> Option<(PodSpec, manifest::Path, i32, i64)> {
    let mut head = cluster.clone();
    head.extend(path(&["headGroupSpec", "template", "spec"]));
    let mut groups = vec![(head, 1)];
    let workers = obj
        .at(&pointer(cluster))
        .and_then(|c| c.get("workerGroupSpecs"))
        .and_then(Value::as_array);
    for (j, g) in workers.into_iter().flatten().enumerate() {
        let mut p = cluster.clone();
        p.extend(path(&[
            "workerGroupSpecs",
            &j.to_string(),
            "template",
            "spec",
        ]));
        let n =
            count(g.get("replicas"), 1).unwrap_or(1) * count(g.get("numOfHosts"), 1).unwrap_or(1);
        groups.push((p, n));
    }
    let gpus = |pod: &PodSpec| -> i64 {
        pod.containers
            .iter()
            .flat_map(|c| {
                c.resources
                    .iter()
                    .flat_map(|r| [r.requests.as_ref(), r.limits.as_ref()])
                    .flatten()
            })
            .flat_map(|m| m.iter())
            .filter(|(k, _)| infera_model::worker::is_gpu_resource(k))
            .filter_map(|(_, v)| infera_model::worker::whole_quantity(&v.0))
            .max()
            .unwrap_or(0)
    };
    let mut best: Option<(PodSpec, manifest::Path, i32)> = None;
    let mut total = 0i64;
    for (p, n) in groups {
        let Some(mut pod) = pod_at(obj, &p) else {
            continue;
        };
        total = total.saturating_add(i64::from(n).saturating_mul(gpus(&pod)));
        if best.as_ref().is_some_and(|(b, _, _)| gpus(b) >= gpus(&pod)) {
            continue;
        }
        for c in &mut pod.containers {
            if c.readiness_probe.is_none() {
                c.readiness_probe =
                    serde_json::from_value(json!({"exec": {"command": ["ray-health-check"]}})).ok();
            }
        }
        best = Some((pod, p, n));
    }
    best.map(|(pod, p, n)| (pod, p, n, total))
}

/// KubeRay RayService (`rayservice_controller.go`): unless
/// `upgradeStrategy.type` is `None` (or the operator runs with
/// `ENABLE_ZERO_DOWNTIME=false`), a change to `rayClusterConfig` creates a
/// whole new cluster beside the serving one and switches traffic when its
/// Serve applications are healthy (`shouldPrepareNewCluster`): one cluster
/// surges, none goes first.
pub(super) fn ray_service(
    obj: &ServingObject,
    placeholders: &Placeholders,
    cx: Cx<'_>,
    out: &mut Out,
) {
    let kind = obj.at("/spec/upgradeStrategy/type").and_then(Value::as_str);
    if matches!(kind, Some("None" | "NewClusterWithIncrementalUpgrade")) {
        return;
    }
    let cluster = path(&["spec", "rayClusterConfig"]);
    let Some((pod, pod_path, per_cluster, cluster_gpus)) = ray_gpu_group(obj, &cluster) else {
        return;
    };
    let roll = Roll {
        replicas: Some(1),
        number_of_nodes: None,
        roll: RollKind::SurgeFirst,
        max_surge: i64::from(per_cluster),
        max_unavailable: 0,
        max_unavailable_spec: None,
    };
    let crd = CrdRollout {
        unit: Some("Ray cluster(s)"),
        renders: format!(
            "KubeRay upgrades it by a whole new Ray cluster ({per_cluster} pod(s) of this group) beside the serving one"
        ),
        field: path(&["spec", "upgradeStrategy"]),
        replicas: None,
        fix: None,
        advice: "keep the capacity of a second cluster free".into(),
    };
    let unit = Unit {
        ray_cluster_gpus: Some(cluster_gpus),
        ..Unit::whole(obj, pod, Some(pod_path), roll, crd)
    };
    run(unit, placeholders, cx, out);
}
