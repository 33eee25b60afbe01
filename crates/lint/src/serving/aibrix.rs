//! AIBrix `StormService` and `RayClusterFleet` (vllm-project/aibrix).

use serde_json::Value;

use super::{CrdRollout, Out, Placeholders, Roll, Unit, count, path, pod_at, run, surge_strategy};
use crate::runner::Cx;
use infera_model::manifest::Seg;
use infera_model::manifest::serving::ServingObject;

/// AIBrix StormService (`pkg/controller/stormservice/sync.go`): with
/// RollingUpdate (the default) whole RoleSets are replaced, `replicas`
/// of them, maxSurge and maxUnavailable from `updateStrategy` (both
/// default 0, then maxUnavailable 1: `ResolveFenceposts`); with
/// InPlaceUpdate every RoleSet is updated at once and each rolls a role's
/// pods by the role's own `updateStrategy` (same defaults,
/// `pkg/controller/roleset/utils.go`). Each role is linted on its pod
/// template, which the user writes.
pub(super) fn storm_service(
    obj: &ServingObject,
    placeholders: &Placeholders,
    cx: Cx<'_>,
    out: &mut Out,
) {
    let sets = count(obj.at("/spec/replicas"), 1);
    let us = obj.at("/spec/updateStrategy");
    let in_place = us.and_then(|u| u.get("type")).and_then(Value::as_str) == Some("InPlaceUpdate");
    let roles = obj
        .at("/spec/template/spec/roles")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, role) in roles.iter().enumerate() {
        let idx = i.to_string();
        let role_base = path(&["spec", "template", "spec", "roles", &idx]);
        let tpl = path(&[
            "spec", "template", "spec", "roles", &idx, "template", "spec",
        ]);
        let Some(pod) = pod_at(obj, &tpl) else {
            continue;
        };
        let name = role
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("role")
            .to_string();
        let (roll, crd) = if in_place {
            let ru = role.get("updateStrategy");
            let n = count(role.get("replicas"), 1);
            let roll = Roll::deployment(
                n,
                ru.and_then(|u| u.get("maxSurge")),
                ru.and_then(|u| u.get("maxUnavailable")),
                ("0", "0"),
            );
            let mut field = role_base.clone();
            field.push(Seg::Key("replicas".into()));
            let crd = CrdRollout {
                unit: Some("pod(s) in the role"),
                renders: format!(
                    "AIBrix updates every RoleSet in place (`updateStrategy.type: InPlaceUpdate`), each replacing role {name}'s pods by the role's own updateStrategy (maxSurge {}, maxUnavailable {})",
                    roll.max_surge, roll.max_unavailable
                ),
                field,
                replicas: None,
                fix: None,
                advice: "give the role more replicas than its maxUnavailable, or a surge (`updateStrategy: {maxSurge: 1, maxUnavailable: 0}`) with a readiness probe on its serving endpoint".into(),
            };
            (roll, crd)
        } else {
            let roll = Roll::deployment(
                sets,
                us.and_then(|u| u.get("maxSurge")),
                us.and_then(|u| u.get("maxUnavailable")),
                ("0", "0"),
            );
            let crd = CrdRollout {
                unit: Some("RoleSet(s)"),
                renders: format!(
                    "AIBrix replaces whole RoleSets (`updateStrategy` RollingUpdate: maxSurge {}, maxUnavailable {} of `replicas`), role {name} with them",
                    roll.max_surge, roll.max_unavailable
                ),
                field: path(&["spec", "updateStrategy"]),
                replicas: None,
                fix: None,
                advice: "run more RoleSets than maxUnavailable (`replicas`), or surge one (`updateStrategy: {maxSurge: 1, maxUnavailable: 0}`) with a readiness probe on each role's serving endpoint".into(),
            };
            (roll, crd)
        };
        let unit = Unit {
            obj,
            pod,
            pod_path: Some(tpl),
            base: role_base,
            service: Some(name),
            roll,
            crd,
            ray_cluster_gpus: None,
        };
        run(unit, placeholders, cx, out);
    }
}

/// AIBrix RayClusterFleet (`pkg/controller/rayclusterfleet`): the
/// Deployment controller's rollout over whole Ray clusters — `replicas`
/// clusters, `strategy` Recreate or RollingUpdate with maxSurge and
/// maxUnavailable rounded by `ResolveFenceposts` (absent fields are 0, then
/// maxUnavailable 1).
pub(super) fn ray_cluster_fleet(
    obj: &ServingObject,
    placeholders: &Placeholders,
    cx: Cx<'_>,
    out: &mut Out,
) {
    let cluster = path(&["spec", "template", "spec"]);
    let Some((pod, pod_path, per_cluster, cluster_gpus)) = super::ray::ray_gpu_group(obj, &cluster)
    else {
        return;
    };
    let replicas = count(obj.at("/spec/replicas"), 1);
    let st = obj.at("/spec/strategy");
    let recreate = st.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("Recreate");
    let mut roll = if recreate {
        Roll::recreate(replicas)
    } else {
        let ru = st.and_then(|s| s.get("rollingUpdate"));
        Roll::deployment(
            replicas,
            ru.and_then(|r| r.get("maxSurge")),
            ru.and_then(|r| r.get("maxUnavailable")),
            ("0", "0"),
        )
    };
    // Each surge cluster brings all its pods of the GPU group at once.
    let surge_clusters = roll.max_surge;
    roll.max_surge = surge_clusters * i64::from(per_cluster);
    let field = path(&["spec", "strategy"]);
    let crd = CrdRollout {
        unit: Some("Ray cluster(s)"),
        renders: format!(
            "AIBrix rolls whole Ray clusters ({per_cluster} pod(s) of this group each) as a Deployment rolls pods: strategy {}, maxSurge {surge_clusters} cluster(s), maxUnavailable {}",
            if recreate { "Recreate" } else { "RollingUpdate" },
            roll.max_unavailable
        ),
        field: field.clone(),
        replicas: Some(path(&["spec", "replicas"])),
        fix: Some((
            "set strategy to RollingUpdate with maxSurge 1, maxUnavailable 0 (one new cluster before an old one goes)".into(),
            vec![(field, surge_strategy())],
        )),
        advice: "set strategy to maxSurge 1, maxUnavailable 0".into(),
    };
    let unit = Unit {
        ray_cluster_gpus: Some(cluster_gpus),
        ..Unit::whole(obj, pod, Some(pod_path), roll, crd)
    };
    run(unit, placeholders, cx, out);
}
