//! Typed objects → the [`Workload`] views the rules read, one builder a
//! kind, each with the rollout semantics of its controller:
//!
//! - InferaDeployment: each worker service as the operator renders it.
//! - apps/v1 Deployment: RollingUpdate (maxSurge rounds up, maxUnavailable
//!   down; both 0 → maxUnavailable 1) or Recreate (all pods first).
//! - apps/v1 StatefulSet: RollingUpdate deletes before it creates
//!   (maxUnavailable 1 unless set; a percentage rounds up, at least 1);
//!   OnDelete, or a partition at or above the replicas, rolls nothing.
//! - LeaderWorkerSet: whole groups roll, maxUnavailable 1 and maxSurge 0
//!   unless `rolloutStrategy.rollingUpdateConfiguration` says otherwise;
//!   the leader template (else the worker template) runs the server.
//! - DynamoGraphDeployment: each worker service (v1alpha1 `spec.services`,
//!   v1beta1 `spec.components` and their `podTemplate`); a multi-node one
//!   (`multinode.nodeCount > 1`) is replaced a group at a time.

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::finding::ObjectRef;
use super::rules::{ClaimedGpus, Hit, Workload};
use super::runner::{Cx, ignored, run_rules};
use infera_model::api::{INFERA_DEPLOYMENT, LEADER_WORKER_SET};
use infera_model::catalogue;
use infera_model::lws::LeaderWorkerSet;
use infera_model::manifest::dynamo::{DynamoGraphDeployment, DynamoService};
use infera_model::manifest::{self, Seg, TypedObject};
use infera_model::operator::{self, Role};
use infera_model::pod::{container_readiness_port, main_container_index};
use infera_model::rolling::{Roll, RollKind, scaled_value};
use infera_model::worker::NVIDIA_GPU;
use infera_model::worker::{DEFAULT_READINESS_PORT, ReadinessPort};

type Placeholders = Vec<(manifest::Path, String)>;

fn keys(segs: &[&str]) -> manifest::Path {
    segs.iter().map(|s| Seg::Key((*s).to_string())).collect()
}

fn service_path(service: &str) -> manifest::Path {
    let mut p = keys(&["spec", "services"]);
    p.push(Seg::Key(service.to_string()));
    p
}

/// Lint one typed object, consuming it (an InferaDeployment's pods move
/// into its render rather than being copied). `Err` says what the render
/// needs that the input does not hold (a serving resource whose runtime is
/// elsewhere): the object is then named as skipped, never passed.
pub(crate) fn lint_typed(
    object: TypedObject,
    placeholders: Placeholders,
    cx: Cx<'_>,
) -> Result<Vec<(Hit, ObjectRef)>, String> {
    Ok(match object {
        TypedObject::InferaDeployment(mut idep) => lint_idep(&mut idep, &placeholders, cx),
        TypedObject::Deployment(d) => lint_deployment(&d, placeholders, cx),
        TypedObject::StatefulSet(s) => lint_statefulset(&s, placeholders, cx),
        TypedObject::LeaderWorkerSet(lws) => lint_lws(&lws, placeholders, cx),
        TypedObject::DynamoGraphDeployment(g) => lint_dynamo(&g, &placeholders, cx),
        TypedObject::Serving(s) => return super::serving::lint_serving(&s, &placeholders, cx),
    })
}

/// The placeholders under `base` (one service's fields).
fn under(placeholders: &Placeholders, base: &manifest::Path) -> Placeholders {
    placeholders
        .iter()
        .filter(|(p, _)| p.starts_with(base))
        .cloned()
        .collect()
}

/// Run the rules over one service of a multi-service object (`w.service`)
/// and keep the hits the object's lint-ignore annotation does not name.
fn service_hits(w: &Workload<'_>, meta: &ObjectMeta, cx: Cx<'_>, out: &mut Vec<(Hit, ObjectRef)>) {
    let object_ref = ObjectRef {
        kind: w.kind.into(),
        name: w.name.clone(),
        namespace: meta.namespace.clone(),
        service: w.service.clone(),
    };
    super::runner::note_unjudged(w, cx);
    for hit in run_rules(w, cx) {
        if !ignored(meta.annotations.as_ref(), hit.code, w.service.as_deref()) {
            out.push((hit, object_ref.clone()));
        }
    }
}

/// Each worker service of an InferaDeployment, as the operator renders it
/// (the services' own pods move into the render: the caller is done with
/// `idep`).
fn lint_idep(
    idep: &mut operator::InferaDeployment,
    placeholders: &Placeholders,
    cx: Cx<'_>,
) -> Vec<(Hit, ObjectRef)> {
    let mut out = Vec::new();
    let name = idep.metadata.name.clone().unwrap_or_default();
    let generation = cx.opts.generation_for(idep);
    // Read before the pods move: one per service, in the render's order.
    let serving: Vec<bool> = idep
        .spec
        .services
        .values()
        .map(operator::is_serving_worker)
        .collect();
    let rendered = operator::workload::render_taking_pods(idep, generation);
    for (rw, serving) in rendered.into_iter().zip(serving) {
        let Some(svc) = idep.spec.services.get(&rw.service) else {
            continue;
        };
        if rw.component != operator::Component::Worker {
            continue;
        }
        let base = service_path(&rw.service);
        let roll = rw.strategy.roll(i64::from(rw.replicas.unwrap_or(1)));
        let main = main_container_index(&rw.pod);
        let w = Workload {
            kind: INFERA_DEPLOYMENT.kind,
            name: name.clone(),
            service: Some(rw.service.clone()),
            role: rw.role,
            worker: true,
            serving,
            engine: rw.pod.containers.get(main).and_then(catalogue::recognize),
            max_unavailable: Some(roll.unavailable),
            max_unavailable_spec: None,
            replicas: rw.replicas,
            number_of_nodes: rw.number_of_nodes,
            roll: roll.kind,
            max_surge: roll.surge,
            strategy: Some(rw.strategy),
            generation: Some(generation),
            pod: &rw.pod,
            pod_labels: rw.pod_labels,
            main,
            readiness_port: rw.readiness_port,
            skip_readiness_probe: svc.skip_readiness_probe == Some(true),
            pod_path: (!rw.flat).then(|| {
                let mut p = base.clone();
                p.push(Seg::Key("extraPodSpec".into()));
                p
            }),
            placeholders: under(placeholders, &base),
            base,
            capacity: cx.capacity,
            claimed_gpus: claimed(&rw.pod, main, &idep.metadata, cx),
            blocked: Default::default(),
            crd: None,
            ray_cluster_gpus: None,
        };
        service_hits(&w, &idep.metadata, cx, &mut out);
    }
    out
}

/// GPUs the main container gets through the DRA claims of its source.
fn claimed(pod: &PodSpec, main: usize, meta: &ObjectMeta, cx: Cx<'_>) -> ClaimedGpus {
    let Some(c) = pod.containers.get(main) else {
        return ClaimedGpus::None;
    };
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    match infera_model::dra::container_gpus(pod, c, namespace, cx.claims) {
        ClaimedGpus::Known(class, n) => {
            ClaimedGpus::Known(infera_model::dra::resource_name(&class), n)
        }
        other => other,
    }
}

/// `replicas`, or None when a placeholder holds it.
fn replicas_of(placeholders: &Placeholders, replicas: Option<i32>) -> Option<i32> {
    let templated = placeholders
        .iter()
        .any(|(p, _)| p.ends_with(&[Seg::Key("replicas".into())]));
    (!templated).then(|| replicas.unwrap_or(1))
}

fn template_labels(meta: Option<&ObjectMeta>) -> std::collections::BTreeMap<String, String> {
    meta.and_then(|m| m.labels.clone()).unwrap_or_default()
}

/// What an apps/v1 object (Deployment, StatefulSet) rolls: its pod, its
/// replicas (None when a placeholder holds them) and the pod's labels.
struct Template<'a> {
    pod: &'a PodSpec,
    replicas: Option<i32>,
    labels: std::collections::BTreeMap<String, String>,
}

fn template<'a>(
    tpl: &'a PodTemplateSpec,
    replicas: Option<i32>,
    placeholders: &Placeholders,
) -> Option<Template<'a>> {
    Some(Template {
        pod: tpl.spec.as_ref()?,
        replicas: replicas_of(placeholders, replicas),
        labels: template_labels(tpl.metadata.as_ref()),
    })
}

/// A plain apps/v1 Deployment.
fn lint_deployment(
    d: &Deployment,
    placeholders: Placeholders,
    cx: Cx<'_>,
) -> Vec<(Hit, ObjectRef)> {
    let Some(spec) = &d.spec else {
        return Vec::new();
    };
    let Some(t) = template(&spec.template, spec.replicas, &placeholders) else {
        return Vec::new();
    };
    let n = t.replicas.unwrap_or(1);
    let ru = spec
        .strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref());
    let strategy_type = spec.strategy.as_ref().and_then(|s| s.type_.as_deref());
    let (surge, unavailable) = (
        ru.and_then(|r| r.max_surge.as_ref()),
        ru.and_then(|r| r.max_unavailable.as_ref()),
    );
    let roll = Roll::deployment(strategy_type, surge, unavailable, i64::from(n));
    let plain = Plain {
        kind: "Deployment",
        meta: &d.metadata,
        pod: t.pod,
        pod_path: Some(keys(&["spec", "template", "spec"])),
        pod_labels: t.labels,
        replicas: t.replicas,
        number_of_nodes: None,
        roll: roll.kind,
        max_surge: roll.surge,
        max_unavailable: Some(roll.unavailable),
        max_unavailable_spec: unavailable.cloned(),
        base: keys(&["spec"]),
        service: None,
        crd: None,
        ray_cluster_gpus: None,
    };
    plain_workload(plain, placeholders, cx)
}

/// A plain apps/v1 StatefulSet: old pod first, `maxUnavailable` at a time.
fn lint_statefulset(
    s: &StatefulSet,
    placeholders: Placeholders,
    cx: Cx<'_>,
) -> Vec<(Hit, ObjectRef)> {
    let Some(spec) = &s.spec else {
        return Vec::new();
    };
    let Some(t) = template(&spec.template, spec.replicas, &placeholders) else {
        return Vec::new();
    };
    let n = i64::from(t.replicas.unwrap_or(1));
    let strategy = spec.update_strategy.as_ref();
    let ru = strategy.and_then(|u| u.rolling_update.as_ref());
    let on_delete = strategy.and_then(|u| u.type_.as_deref()) == Some("OnDelete");
    let partitioned = ru
        .and_then(|r| r.partition)
        .is_some_and(|p| i64::from(p) >= n);
    let spec = ru.and_then(|r| r.max_unavailable.as_ref());
    let max_unavailable = spec.map_or(1, |v| scaled_value(v, n, true).max(1));
    let plain = Plain {
        kind: "StatefulSet",
        meta: &s.metadata,
        pod: t.pod,
        pod_path: Some(keys(&["spec", "template", "spec"])),
        pod_labels: t.labels,
        replicas: t.replicas,
        number_of_nodes: None,
        roll: RollKind::OldPodFirst,
        max_surge: 0,
        max_unavailable: (!on_delete && !partitioned).then_some(max_unavailable),
        max_unavailable_spec: spec.cloned(),
        base: keys(&["spec"]),
        service: None,
        crd: None,
        ray_cluster_gpus: None,
    };
    plain_workload(plain, placeholders, cx)
}

/// A LeaderWorkerSet not rendered from an InferaDeployment.
fn lint_lws(
    lws: &LeaderWorkerSet,
    placeholders: Placeholders,
    cx: Cx<'_>,
) -> Vec<(Hit, ObjectRef)> {
    let tpl = &lws.spec.leader_worker_template;
    let leader = tpl.leader_template.as_ref().filter(|t| t.spec.is_some());
    let (template, which) = match leader {
        Some(t) => (Some(t), "leaderTemplate"),
        None => (tpl.worker_template.as_ref(), "workerTemplate"),
    };
    let Some(pod) = template.and_then(|t| t.spec.as_ref()) else {
        return Vec::new();
    };
    let replicas = lws.replicas();
    let size = lws.size();
    let ru = lws.rolling_update();
    let roll = Roll::lws(
        ru.and_then(|r| r.max_surge.as_ref()),
        ru.and_then(|r| r.max_unavailable.as_ref()),
        i64::from(replicas.unwrap_or(1)),
    );
    let plain = Plain {
        kind: LEADER_WORKER_SET.kind,
        meta: &lws.metadata,
        pod,
        pod_path: Some(keys(&["spec", "leaderWorkerTemplate", which, "spec"])),
        pod_labels: template_labels(template.and_then(|t| t.metadata.as_ref())),
        replicas,
        number_of_nodes: size,
        roll: roll.kind,
        max_surge: roll.surge,
        max_unavailable: Some(roll.unavailable),
        max_unavailable_spec: ru.and_then(|r| r.max_unavailable.clone()),
        base: keys(&["spec"]),
        service: None,
        crd: None,
        ray_cluster_gpus: None,
    };
    plain_workload(plain, placeholders, cx)
}

/// A Deployment, StatefulSet or LeaderWorkerSet (or what a serving
/// resource's operator renders), as the rules see it.
pub(crate) struct Plain<'a> {
    pub kind: &'static str,
    pub meta: &'a ObjectMeta,
    pub pod: &'a PodSpec,
    /// Where the pod spec's fields are written in the object; None when the
    /// operator builds the pod from fields of its own (no pod-field fix).
    pub pod_path: Option<manifest::Path>,
    pub pod_labels: std::collections::BTreeMap<String, String>,
    pub replicas: Option<i32>,
    pub number_of_nodes: Option<i32>,
    pub roll: RollKind,
    pub max_surge: i64,
    pub max_unavailable: Option<i64>,
    pub max_unavailable_spec: Option<IntOrString>,
    /// Where the workload's own fields live (`spec`, or one role's).
    pub base: manifest::Path,
    /// The role or service of a multi-part resource.
    pub service: Option<String>,
    pub crd: Option<super::rules::CrdRollout>,
    /// A Ray pod's whole cluster's GPUs ([`Workload::ray_cluster_gpus`]).
    pub ray_cluster_gpus: Option<i64>,
}

pub(crate) fn plain_workload(
    plain: Plain<'_>,
    placeholders: Placeholders,
    cx: Cx<'_>,
) -> Vec<(Hit, ObjectRef)> {
    let Plain {
        kind,
        meta,
        pod,
        pod_path,
        pod_labels,
        replicas,
        number_of_nodes,
        roll,
        max_surge,
        max_unavailable,
        max_unavailable_spec,
        base,
        service,
        crd,
        ray_cluster_gpus,
    } = plain;
    let main = infera_model::pod::engine_container_index(pod);
    let engine = pod.containers.get(main).and_then(catalogue::recognize);
    let worker = infera_model::pod::launches_infera_worker(pod);
    let placeholders = if service.is_some() {
        under(&placeholders, &base)
    } else {
        placeholders
    };
    let w = Workload {
        kind,
        name: meta.name.clone().unwrap_or_default(),
        service,
        role: Role::Mixed,
        worker,
        serving: worker,
        engine,
        max_unavailable,
        max_unavailable_spec,
        replicas,
        number_of_nodes,
        roll,
        max_surge,
        strategy: None,
        generation: None,
        pod,
        pod_labels,
        main,
        readiness_port: pod.containers.get(main).map_or(
            ReadinessPort::Default {
                port: DEFAULT_READINESS_PORT,
            },
            container_readiness_port,
        ),
        skip_readiness_probe: false,
        base,
        pod_path,
        placeholders,
        capacity: cx.capacity,
        claimed_gpus: claimed(pod, main, meta, cx),
        blocked: Default::default(),
        crd,
        ray_cluster_gpus,
    };
    let mut out = Vec::new();
    service_hits(&w, meta, cx, &mut out);
    out
}

/// The pod of a Dynamo service: its main container, with the service's
/// GPUs as the `nvidia.com/gpu` request the operator gives it.
fn dynamo_pod(svc: &DynamoService) -> Option<PodSpec> {
    let mut main: Container = svc.extra_pod_spec.as_ref()?.main_container.clone()?;
    if let Some(n) = svc.gpus() {
        let gpu = (NVIDIA_GPU.to_string(), Quantity(n.to_string()));
        main.resources = Some(ResourceRequirements {
            limits: Some([gpu].into_iter().collect()),
            ..ResourceRequirements::default()
        });
    }
    Some(PodSpec {
        containers: vec![main],
        ..PodSpec::default()
    })
}

/// Each worker service of a DynamoGraphDeployment: v1alpha1's
/// `spec.services` map, v1beta1's `spec.components` list.
fn lint_dynamo(
    g: &DynamoGraphDeployment,
    placeholders: &Placeholders,
    cx: Cx<'_>,
) -> Vec<(Hit, ObjectRef)> {
    let mut out = Vec::new();
    for (service, svc) in &g.spec.services {
        if svc.component_type.as_deref() != Some("worker") {
            continue;
        }
        let Some(pod) = dynamo_pod(svc) else { continue };
        let unit = DynamoUnit {
            service,
            base: service_path(service),
            role: svc.sub_component_type.as_deref(),
            pod: &pod,
            main: 0,
            replicas: svc.replicas.as_ref(),
            nodes: svc.multinode.as_ref().and_then(|m| m.node_count.as_ref()),
        };
        dynamo_hits(g, unit, placeholders, cx, &mut out);
    }
    for (i, c) in g.spec.components.iter().enumerate() {
        let Some(pod) = c.pod_template.as_ref().and_then(|t| t.spec.as_ref()) else {
            continue;
        };
        if !c.is_worker() {
            continue;
        }
        let mut base = keys(&["spec", "components"]);
        base.push(Seg::Index(i));
        let main = pod
            .containers
            .iter()
            .position(|k| k.name == infera_model::manifest::dynamo::MAIN_CONTAINER)
            .unwrap_or_else(|| infera_model::pod::engine_container_index(pod));
        let unit = DynamoUnit {
            service: &c.name,
            base,
            role: c.component_type.as_deref(),
            pod,
            main,
            replicas: c.replicas.as_ref(),
            nodes: c.multinode.as_ref().and_then(|m| m.node_count.as_ref()),
        };
        dynamo_hits(g, unit, placeholders, cx, &mut out);
    }
    out
}

/// One Dynamo service as the rules see it.
struct DynamoUnit<'a> {
    service: &'a str,
    base: manifest::Path,
    /// `prefill`, `decode`, or anything else (mixed).
    role: Option<&'a str>,
    pod: &'a PodSpec,
    main: usize,
    replicas: Option<&'a operator::IntOrText>,
    nodes: Option<&'a operator::IntOrText>,
}

/// Run the rules over one Dynamo service: `replicas` copies, each one pod
/// or (`multinode.nodeCount > 1`) one group replaced whole.
fn dynamo_hits(
    g: &DynamoGraphDeployment,
    u: DynamoUnit<'_>,
    placeholders: &Placeholders,
    cx: Cx<'_>,
    out: &mut Vec<(Hit, ObjectRef)>,
) {
    let count = |v: Option<&operator::IntOrText>| {
        v.map_or(Some(1), |r| r.as_i64().and_then(|n| i32::try_from(n).ok()))
    };
    let nodes = count(u.nodes);
    let multinode = nodes.is_none_or(|n| n > 1);
    let w = Workload {
        kind: "DynamoGraphDeployment",
        name: g.metadata.name.clone().unwrap_or_default(),
        service: Some(u.service.to_string()),
        role: Role::parse(u.role),
        worker: false,
        serving: false,
        engine: u.pod.containers.get(u.main).and_then(catalogue::recognize),
        max_unavailable: multinode.then_some(1),
        max_unavailable_spec: None,
        replicas: count(u.replicas),
        number_of_nodes: nodes,
        roll: if multinode {
            RollKind::Lws
        } else {
            RollKind::SurgeOrRetire
        },
        max_surge: 0,
        strategy: None,
        generation: None,
        pod: u.pod,
        pod_labels: Default::default(),
        main: u.main,
        readiness_port: ReadinessPort::Default {
            port: DEFAULT_READINESS_PORT,
        },
        skip_readiness_probe: false,
        pod_path: None,
        placeholders: under(placeholders, &u.base),
        base: u.base,
        capacity: cx.capacity,
        claimed_gpus: ClaimedGpus::None,
        blocked: Default::default(),
        crd: None,
        ray_cluster_gpus: None,
    };
    service_hits(&w, &g.metadata, cx, out);
}
