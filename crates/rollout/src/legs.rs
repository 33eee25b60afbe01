//! The legs of a rollout (one per worker service, or the one Deployment),
//! the roles the Auditor counts, and the preflight plan built from the live
//! objects.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::Api;
use serde_json::{Map, Value};

use super::api::{LIST, retrying};
use super::coherence::Side;
use super::lint_bridge::Attached;
use super::options::{Request, RolloutError};
use super::plan::{
    Capacity, LegPlan, Plan, PlanFinding, RoleNow, deployment_strategy, order_legs,
    ready_short_of_serving, replicas_of, surge_capacity, verdict,
};
use super::target::TargetKind;
use super::trigger;
use infera_audit::{RoleSpec, is_worker_service, service_role};
use infera_cluster::Connection;
use infera_model::selector::Selector;

use infera_model::rolling::Roll;
use infera_model::worker::DEFAULT_READINESS_PORT;
pub(crate) use infera_model::worker::{LABEL_DEPLOYMENT, LABEL_SERVICE};
use k8s_openapi::api::core::v1::PodSpec;

/// A leg as the driver needs it.
#[derive(Debug, Clone)]
pub(crate) struct Leg {
    pub(crate) name: String,
    pub(crate) role: String,
    pub(crate) replicas: u32,
    /// The leg's own pods (the watch's selector for a plain Deployment).
    pub(crate) selector: Selector,
    pub(crate) readiness_port: u16,
    pub(crate) workload: String,
}

/// The worker's readiness port from a pod template (the model's one reading).
fn readiness_port_of(template: &Value) -> u16 {
    template
        .get("spec")
        .and_then(|spec| serde_json::from_value::<PodSpec>(spec.clone()).ok())
        .map_or(DEFAULT_READINESS_PORT, |spec| {
            infera_model::pod::readiness_port(&spec)
        })
}

/// Roles to audit and legs to roll.
pub(crate) async fn legs_of(
    conn: &Connection,
    req: &Request,
    live: &Value,
) -> Result<(Vec<RoleSpec>, Vec<Leg>), RolloutError> {
    match req.target.kind {
        TargetKind::InferaDeployment => idep_legs(conn, req, live).await,
        TargetKind::Deployment => deployment_leg(req, live),
    }
}

/// (service, role) of the services to roll, checked against the CR.
fn chosen_services(
    req: &Request,
    services: &Map<String, Value>,
) -> Result<Vec<(String, String)>, RolloutError> {
    for s in req.services.iter().chain(req.order.iter()) {
        if !services.contains_key(s) {
            return Err(trigger::TriggerError::NoSuchService {
                service: s.clone(),
                known: services.keys().cloned().collect::<Vec<_>>().join(", "),
            }
            .into());
        }
    }
    if !req.services.is_empty() {
        return Ok(req
            .services
            .iter()
            .map(|s| {
                let role = services.get(s).map(|spec| service_role(s, spec));
                (s.clone(), role.unwrap_or_default())
            })
            .collect());
    }
    Ok(services
        .iter()
        .filter(|(_, s)| is_worker_service(s))
        .map(|(n, s)| (n.clone(), service_role(n, s)))
        .collect())
}

async fn idep_legs(
    conn: &Connection,
    req: &Request,
    live: &Value,
) -> Result<(Vec<RoleSpec>, Vec<Leg>), RolloutError> {
    let deps_api: Api<Deployment> = Api::namespaced(conn.client.clone(), &conn.namespace);
    let roles = infera_audit::roles_from_inferadeployment(live)
        .map_err(|e| RolloutError::Usage(e.to_string()))?;
    let services = live
        .pointer("/spec/services")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let chosen = chosen_services(req, &services)?;
    let mut legs = Vec::new();
    for name in order_legs(chosen.clone(), &req.order) {
        let role = chosen
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, r)| r.clone())
            .unwrap_or_default();
        let workload = format!("{}-{name}", req.target.name);
        let dep = retrying("get deployment", || deps_api.get_opt(&workload))
            .await
            .map_err(|e| conn.error(&e, "get", "deployments.apps"))?;
        let template = match dep.as_ref().and_then(|d| d.spec.as_ref()) {
            Some(spec) => {
                serde_json::to_value(&spec.template).map_err(|source| RolloutError::Encode {
                    what: format!("the pod template of deploy/{workload}"),
                    source,
                })?
            }
            None => Value::Null,
        };
        legs.push(Leg {
            role,
            replicas: services
                .get(&name)
                .and_then(|s| s.get("replicas"))
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(1),
            selector: Selector::from_labels(&BTreeMap::from([
                (LABEL_DEPLOYMENT.to_string(), req.target.name.clone()),
                (LABEL_SERVICE.to_string(), name.clone()),
            ])),
            readiness_port: readiness_port_of(&template),
            workload,
            name,
        });
    }
    Ok((roles, legs))
}

fn deployment_leg(req: &Request, live: &Value) -> Result<(Vec<RoleSpec>, Vec<Leg>), RolloutError> {
    let dep: Deployment = serde_json::from_value(live.clone()).map_err(|e| {
        RolloutError::Usage(format!(
            "deploy/{} does not parse as a Deployment: {e}",
            req.target.name
        ))
    })?;
    let selector =
        infera_audit::deployment_selector(&dep).map_err(|e| RolloutError::Usage(e.to_string()))?;
    let template = live.pointer("/spec/template").cloned().unwrap_or_default();
    let role = RoleSpec {
        role: req.target.name.clone(),
        services: Vec::new(),
        selector: selector.clone(),
    };
    Ok((
        vec![role],
        vec![Leg {
            name: req.target.name.clone(),
            role: req.target.name.clone(),
            replicas: replicas_of(live),
            selector,
            readiness_port: readiness_port_of(&template),
            workload: req.target.name.clone(),
        }],
    ))
}

/// Nodes and pods for the surge-capacity estimate (best effort: a list
/// that is not allowed leaves the capacity unknown).
struct ClusterView {
    nodes: Vec<Node>,
    pods: Option<Vec<Pod>>,
}

impl ClusterView {
    async fn list(conn: &Connection) -> ClusterView {
        let nodes_api: Api<Node> = Api::all(conn.client.clone());
        let nodes = match retrying("list nodes", || nodes_api.list(&LIST)).await {
            Ok(l) => l.items,
            Err(_) => Vec::new(),
        };
        let all_pods: Api<Pod> = Api::all(conn.client.clone());
        let pods = match retrying("list pods", || all_pods.list(&LIST)).await {
            Ok(l) => Some(l.items),
            Err(_) => {
                let ns_pods: Api<Pod> = Api::namespaced(conn.client.clone(), &conn.namespace);
                retrying("list pods", || ns_pods.list(&LIST))
                    .await
                    .ok()
                    .map(|l| l.items)
            }
        };
        ClusterView { nodes, pods }
    }

    /// The longest start-up (Ready since minus started at, seconds) of
    /// `leg`'s Ready pods in `ns`.
    fn startup(&self, leg: &Leg, ns: &str) -> Option<f64> {
        let ours = self.pods.as_deref().unwrap_or_default().iter().filter(|p| {
            p.metadata.namespace.as_deref() == Some(ns)
                && leg.selector.matches_labels(p.metadata.labels.as_ref())
                && infera_model::pod::is_ready(p)
        });
        ours.filter_map(|p| {
            let started = p.status.as_ref()?.start_time.as_ref()?.0;
            let (_, ready) = infera_model::pod::ready_condition(p)?;
            let d = ready?.duration_since(started);
            Some(d.as_secs_f64())
        })
        .fold(None, |acc: Option<f64>, d| {
            Some(acc.map_or(d, |a| a.max(d)))
        })
    }

    fn capacity(&self, strategy: &Roll, template: &Value, ns: &str) -> Capacity {
        if !strategy.surges() {
            return Capacity::NotNeeded;
        }
        match &self.pods {
            Some(pods) if !self.nodes.is_empty() => surge_capacity(template, ns, &self.nodes, pods),
            _ => Capacity::Unknown("nodes or pods could not be listed".into()),
        }
    }
}

/// The strategy a leg will roll with, and why (when not plain).
fn leg_strategy(req: &Request, live: &Value, leg: &Leg, dep: Option<&Value>) -> (Roll, String) {
    let number_of_nodes = live
        .pointer(&format!("/spec/services/{}/numberOfNodes", leg.name))
        .and_then(Value::as_u64)
        .unwrap_or(1);
    match (dep, req.target.kind) {
        (_, TargetKind::InferaDeployment) if number_of_nodes > 1 => (
            Roll::lws(None, None, 1),
            "numberOfNodes > 1: a LeaderWorkerSet group with no readiness probe rolls one group down first".to_string(),
        ),
        (Some(v), TargetKind::Deployment) if req.surge => {
            let mut v = v.clone();
            v["spec"]["strategy"] = trigger::surge_strategy();
            (deployment_strategy(&v), "--surge sets maxSurge 1 / maxUnavailable 0 first".to_string())
        }
        (Some(v), _) => (deployment_strategy(v), String::new()),
        (None, _) => (
            Roll::rolling(0, 1),
            format!("{} does not exist yet", leg.workload),
        ),
    }
}

/// Build the plan from the live objects.
pub(crate) async fn preflight(
    conn: &Connection,
    req: &Request,
    live: &Value,
    legs: &[Leg],
    roles: &[RoleSpec],
    min_ready: u32,
) -> Result<Plan, RolloutError> {
    let ns = &conn.namespace;
    let deps_api: Api<Deployment> = Api::namespaced(conn.client.clone(), ns);
    let view = ClusterView::list(conn).await;
    let mut deployments = Vec::new();
    let mut typed = Vec::new();
    let mut plan_legs = Vec::new();
    let mut sides = Vec::new();
    for leg in legs {
        let dep = retrying("get deployment", || deps_api.get_opt(&leg.workload))
            .await
            .map_err(|e| conn.error(&e, "get", "deployments.apps"))?;
        typed.extend(dep.clone());
        let dep_value = dep
            .as_ref()
            .map(|d| {
                serde_json::to_value(d).map_err(|source| RolloutError::Encode {
                    what: format!("deploy/{}", leg.workload),
                    source,
                })
            })
            .transpose()?;
        let (strategy, why) = leg_strategy(req, live, leg, dep_value.as_ref());
        let template = dep_value
            .as_ref()
            .and_then(|v| v.pointer("/spec/template").cloned())
            .unwrap_or_default();
        sides.push(Side {
            leg: leg.name.clone(),
            role: leg.role.clone(),
            replicas: leg.replicas,
            strategy,
            main: Side::main_of(&template),
            startup: view.startup(leg, ns),
            rolled: true,
        });
        plan_legs.push(LegPlan {
            leg: leg.name.clone(),
            role: leg.role.clone(),
            workload: format!("deploy/{}", leg.workload),
            replicas: leg.replicas,
            capacity: view.capacity(&strategy, &template, ns),
            strategy,
            why,
            ready_short_of_serving: ready_short_of_serving(&template),
            findings: Vec::new(),
            verdict: super::plan::Verdict::Ok,
            readiness_port: Some(leg.readiness_port),
            selector: leg.selector.clone(),
        });
        deployments.extend(dep_value);
    }
    // A plain Deployment target is its own leg's workload: lint it once.
    let mut lint_objects = vec![live.clone()];
    if req.target.kind == TargetKind::InferaDeployment {
        lint_objects.extend(deployments);
    }
    let operator = (req.target.kind == TargetKind::InferaDeployment).then(|| {
        infera_model::generation::detect(
            typed
                .iter()
                .filter(|d| infera_model::generation::operator_owned(d)),
        )
    });
    let generation = operator
        .as_ref()
        .and_then(infera_model::generation::Detection::generation);
    let plain = req.target.kind == TargetKind::Deployment;
    let found = super::lint_bridge::lint(&lint_objects, generation);
    let other_findings = attach_findings(&mut plan_legs, found, plain);
    set_verdicts(&mut plan_legs, live, roles, min_ready);
    if req.target.kind == TargetKind::InferaDeployment {
        sides.extend(unrolled_sides(&deps_api, req, live, legs).await);
    }
    let coherence = super::coherence::assess(&sides, req.image.as_deref(), generation);
    Ok(Plan {
        coherence,
        target: req.target.to_string(),
        namespace: ns.clone(),
        what: match (req.command, &req.image) {
            (_, Some(image)) => format!("set-image {image}"),
            (c, None) => c.to_string(),
        },
        legs: plan_legs,
        other_findings,
        gitops: None,
        operator,
        roles_now: roles_now(roles, ns, view.pods.as_deref()),
        min_ready,
    })
}

/// The prefill and decode services of the InferaDeployment this roll
/// leaves alone, as the coherence prediction reads them (best effort: a
/// Deployment that cannot be read is left out).
async fn unrolled_sides(
    deps_api: &Api<Deployment>,
    req: &Request,
    live: &Value,
    legs: &[Leg],
) -> Vec<Side> {
    let services = live.pointer("/spec/services").and_then(Value::as_object);
    let mut sides = Vec::new();
    for (name, spec) in services.into_iter().flatten() {
        let role = service_role(name, spec);
        let pd = role == "prefill" || role == "decode";
        if !pd || !is_worker_service(spec) || legs.iter().any(|l| l.name == *name) {
            continue;
        }
        let workload = format!("{}-{name}", req.target.name);
        let dep = retrying("get deployment", || deps_api.get_opt(&workload)).await;
        let Some(dep) = dep
            .ok()
            .flatten()
            .and_then(|d| serde_json::to_value(d).ok())
        else {
            continue;
        };
        let template = dep.pointer("/spec/template").cloned().unwrap_or_default();
        sides.push(Side {
            leg: name.clone(),
            role,
            replicas: replicas_of(&dep),
            strategy: deployment_strategy(&dep),
            main: Side::main_of(&template),
            startup: None,
            rolled: false,
        });
    }
    sides
}

/// Each role's Ready and routable pods in `ns` now (a pod counts for the
/// first role it matches, as the Auditor counts it); unknown when the pods
/// could not be listed.
fn roles_now(roles: &[RoleSpec], ns: &str, pods: Option<&[Pod]>) -> Vec<RoleNow> {
    let mut counts: Vec<Option<(u32, u32)>> = vec![pods.map(|_| (0, 0)); roles.len()];
    let in_ns =
        (pods.unwrap_or_default().iter()).filter(|p| p.metadata.namespace.as_deref() == Some(ns));
    for pod in in_ns {
        let Some(i) = roles.iter().position(|r| r.matches(pod)) else {
            continue;
        };
        if let Some(Some((ready, routable))) = counts.get_mut(i) {
            *ready += u32::from(infera_model::pod::is_ready(pod));
            *routable += u32::from(infera_model::pod::is_serving(pod));
        }
    }
    (roles.iter().zip(counts))
        .map(|(r, counts)| RoleNow {
            role: r.role.clone(),
            counts,
        })
        .collect()
}

/// Give each leg its findings (by service; a plain Deployment target's by
/// its object, the leg's workload); returns those of no leg.
fn attach_findings(legs: &mut [LegPlan], findings: Vec<Attached>, plain: bool) -> Vec<PlanFinding> {
    let mut other = Vec::new();
    for a in findings {
        let owns = |l: &LegPlan| {
            a.service.as_deref() == Some(l.leg.as_str())
                || (plain && a.service.is_none() && a.object == l.workload)
        };
        match legs.iter_mut().find(|l| owns(l)) {
            Some(l) => l.findings.push(a.finding),
            None => other.push(a.finding),
        }
    }
    other
}

/// The verdict of each leg, counting the replicas of the role's other
/// services (not rolled at the same time).
fn set_verdicts(legs: &mut [LegPlan], live: &Value, roles: &[RoleSpec], min_ready: u32) {
    let services = live
        .pointer("/spec/services")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for l in legs.iter_mut() {
        let others: u32 = roles
            .iter()
            .filter(|r| r.role == l.role)
            .flat_map(|r| r.services.iter())
            .filter(|s| **s != l.leg)
            .map(|s| {
                services
                    .get(s)
                    .and_then(|v| v.get("replicas"))
                    .and_then(Value::as_u64)
                    .unwrap_or(1) as u32
            })
            .sum();
        l.verdict = verdict(l, others, min_ready);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use infera_model::worker::DEFAULT_READINESS_PORT;
    use serde_json::json;

    /// `--service router` (what a drain's move of the router sends): the
    /// router's role is its own name, as the drain plan prints it, never
    /// the workers' default `mixed`.
    #[test]
    fn a_chosen_services_role_is_the_manifests_word() {
        let services = json!({
            "router": {"componentType": "server"},
            "prefill": {"componentType": "worker", "role": "Prefill"},
            "solo": {"componentType": "worker"}
        });
        let services = services.as_object().cloned().unwrap_or_default();
        let target = crate::target::Target {
            kind: TargetKind::InferaDeployment,
            name: "llama".into(),
        };
        let mut req = Request::restart(target);
        req.services = vec!["router".into(), "prefill".into(), "solo".into()];
        let roles: Vec<String> = (chosen_services(&req, &services).unwrap().into_iter())
            .map(|(_, role)| role)
            .collect();
        assert_eq!(roles, ["router", "prefill", "mixed"]);
        req.services.clear();
        let all = chosen_services(&req, &services).unwrap();
        assert!(all.iter().all(|(s, _)| s != "router"), "{all:?}");
    }

    #[test]
    fn readiness_port_follows_the_workers_parser() {
        let t = |v: &str| json!({"spec": {"containers": [{"name": "infera", "env": [{"name": "INFERA_READINESS_PORT", "value": v}]}]}});
        assert_eq!(readiness_port_of(&t("31000")), 31000);
        assert_eq!(readiness_port_of(&t(" 30_091")), 30091);
        assert_eq!(readiness_port_of(&json!({})), DEFAULT_READINESS_PORT);
    }
}
