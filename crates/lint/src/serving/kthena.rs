//! kthena `ModelServing` (`workload.serving.volcano.sh`, volcano-sh/kthena):
//! ServingGroups of roles, each role an entry pod and `workerReplicas`
//! worker pods.

use serde_json::Value;

use super::{CrdRollout, Out, Placeholders, Roll, RollKind, Unit, count, path, pod_at, run};
use crate::runner::Cx;
use infera_model::manifest::serving::ServingObject;
use infera_model::rolling;

/// `maxUnavailable` of `replicas`, rounded down (`intstr
/// GetScaledValueFromIntOrPercent`, round up false), `default` when absent.
fn unavailable(v: Option<&Value>, replicas: i32, default: i64) -> Option<i64> {
    let Some(v) = v else { return Some(default) };
    let v = rolling::int_or_string(v)?;
    Some(rolling::scaled_value(&v, i64::from(replicas), false))
}

/// kthena's rollout (`manageRollingUpdate`): it deletes an outdated
/// ServingGroup (or, with `RoleRollingUpdate`, an outdated role replica)
/// and rebuilds it, keeping `replicas - maxUnavailable` available; nothing
/// surges. `ServingGroupRollingUpdate` (the default): `spec.replicas`
/// groups, `rolloutStrategy.rollingUpdateConfiguration.maxUnavailable`
/// (default 1, `GetMaxUnavailable`); a `partition` at or above the
/// replicas updates nothing. `RoleRollingUpdate`: each role's own
/// `replicas` and `maxUnavailable` (1 unless set), applied in every
/// ServingGroup independently. Each role is judged on its entry pod, a
/// group of 1 + `workerReplicas` pods.
pub(super) fn model_serving(
    obj: &ServingObject,
    placeholders: &Placeholders,
    cx: Cx<'_>,
    out: &mut Out,
) {
    let groups = count(obj.at("/spec/replicas"), 1).unwrap_or(1);
    let by_role =
        obj.at("/spec/rolloutStrategy/type").and_then(Value::as_str) == Some("RoleRollingUpdate");
    let ru = obj.at("/spec/rolloutStrategy/rollingUpdateConfiguration");
    let partition = count(ru.and_then(|r| r.get("partition")), 0).unwrap_or(0);
    if !by_role && partition >= groups {
        return;
    }
    let roles = obj.at("/spec/template/roles").and_then(Value::as_array);
    for (i, role) in roles.into_iter().flatten().enumerate() {
        let base = path(&["spec", "template", "roles", &i.to_string()]);
        let mut pod_path = base.clone();
        pod_path.extend(path(&["entryTemplate", "spec"]));
        let Some(pod) = pod_at(obj, &pod_path) else {
            continue;
        };
        let (replicas, mu, field) = if by_role {
            let n = count(role.get("replicas"), 1).unwrap_or(1);
            let mut field = base.clone();
            field.push(infera_model::manifest::Seg::Key("maxUnavailable".into()));
            (n, unavailable(role.get("maxUnavailable"), n, 1), field)
        } else {
            let mu = unavailable(ru.and_then(|r| r.get("maxUnavailable")), groups, 1);
            (groups, mu, path(&["spec", "rolloutStrategy"]))
        };
        let Some(mu) = mu else { continue };
        let nodes = 1 + count(role.get("workerReplicas"), 0).unwrap_or(0);
        let roll = Roll {
            replicas: Some(replicas),
            number_of_nodes: (nodes > 1).then_some(nodes),
            // A role of one pod rolls as pods do (old pod first); of more,
            // as a LeaderWorkerSet's groups.
            roll: if nodes > 1 {
                RollKind::Lws
            } else {
                rolling::Roll::rolling(0, mu).kind
            },
            max_surge: 0,
            max_unavailable: mu,
            max_unavailable_spec: None,
        };
        let what = if by_role {
            "role replica"
        } else {
            "ServingGroup"
        };
        let crd = CrdRollout {
            unit: Some(if by_role {
                "role replica(s)"
            } else {
                "ServingGroup(s)"
            }),
            renders: format!(
                "kthena deletes an outdated {what} and then rebuilds it, keeping {replicas} - maxUnavailable {mu} available (no surge)"
            ),
            replicas: Some(if by_role {
                let mut p = base.clone();
                p.push(infera_model::manifest::Seg::Key("replicas".into()));
                p
            } else {
                path(&["spec", "replicas"])
            }),
            field,
            fix: None,
            advice: if nodes > 1 {
                format!("since kthena deletes a {what} before it rebuilds it")
            } else {
                format!(
                    "run more of them than maxUnavailable: kthena deletes a {what} before it rebuilds it"
                )
            },
        };
        let unit = Unit::role(obj, role, (pod, pod_path, base), roll, crd);
        run(unit, placeholders, cx, out);
    }
}
