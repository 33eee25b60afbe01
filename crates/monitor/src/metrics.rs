//! `/metrics`: the state as OpenMetrics text, written by `prometheus-client`
//! from a registry built afresh for each scrape, so a series the state
//! cannot vouch for now (its watch is blind) is absent, never stale.
//!
//! Labels are `namespace`, `workload` (`idep/NAME`, `deploy/NAME`,
//! `sts/NAME`, `lws/NAME`) and `role`, plus `resource` on the watch
//! metrics, `leg` (a service name) on the rollout leg, `reason` (a closed
//! set: `infera_model::scheduling::UnfitReason::LABELS`) on unschedulable
//! pods, `reason` (a closed set: `infera_model::pod::DISRUPTION_LABELS`) on
//! disrupted pods and `generation` on the operator's: never a pod or node
//! name, so the number of series is bounded by the workloads and roles.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeLabelSet, LabelSetEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

use infera_model::pod::disruption_label;
use infera_model::scheduling::unfit_label_of_message;
use infera_model::worker::LABEL_DEPLOYMENT;

use crate::state::{Resource, State};
use crate::workloads::{self, WorkloadKey};

type Labels = Vec<(&'static str, String)>;
type Gauges = Family<Labels, Gauge>;
type FloatCounters = Family<Labels, Counter<f64, std::sync::atomic::AtomicU64>>;
type RoleGauges = Family<RoleKey, Gauge>;
type RoleFloatCounters = Family<RoleKey, Counter<f64, std::sync::atomic::AtomicU64>>;
type RoleCounters = Family<RoleKey, Counter>;

/// One role's labels (namespace, workload, role), keyed in a family's
/// hash map by the role's ordinal in this scrape: each scrape builds its
/// families afresh, so the ordinal names the label set, and a lookup
/// hashes one integer instead of three strings (with 1,000 roles, hashing
/// the strings was a sixth of a scrape). The labels are shared, not copied,
/// by the families that hold them.
#[derive(Clone, Debug)]
struct RoleKey {
    ordinal: usize,
    labels: Arc<[(&'static str, String)]>,
}

impl PartialEq for RoleKey {
    fn eq(&self, other: &Self) -> bool {
        self.ordinal == other.ordinal
    }
}

impl Eq for RoleKey {}

impl Hash for RoleKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.ordinal.hash(state);
    }
}

impl EncodeLabelSet for RoleKey {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        (&*self.labels).encode(encoder)
    }
}

/// The metric families, one field each (names in [`Families::register`]).
#[derive(Default)]
struct Families {
    ready: RoleGauges,
    routable: RoleGauges,
    desired: RoleGauges,
    rollout: RoleGauges,
    leg: Gauges,
    below: RoleFloatCounters,
    gaps: RoleCounters,
    unschedulable: Gauges,
    disruption: RoleGauges,
    disrupted: Gauges,
    generation: Gauges,
    watch_up: Gauges,
    unobserved: FloatCounters,
}

impl Families {
    fn register(&self, r: &mut Registry) {
        let s = Unit::Seconds;
        r.register(
            "infera_role_ready_pods",
            "Ready pods of the role (absent while the pod watch is blind)",
            self.ready.clone(),
        );
        r.register("infera_role_routable_pods", "Routable pods of the role, as the router sees them (absent while the pod watch is blind)", self.routable.clone());
        r.register(
            "infera_role_desired_replicas",
            "Replicas the workload's spec asks of the role",
            self.desired.clone(),
        );
        r.register("infera_rollout_in_progress", "1 while a rollout of the role is in progress (its workload object not complete as kubectl rollout status decides)", self.rollout.clone());
        r.register(
            "infera_rollout_leg_info",
            "The leg (service) of the role being rolled",
            self.leg.clone(),
        );
        r.register_with_unit(
            "infera_role_below_min_ready",
            "Time the role certainly had fewer Ready or routable pods than --min-ready",
            s.clone(),
            self.below.clone(),
        );
        r.register(
            "infera_role_gaps",
            "Runs of time the role certainly had fewer Ready or routable pods than --min-ready",
            self.gaps.clone(),
        );
        r.register("infera_role_unschedulable_pods", "Pending pods of the role the scheduler cannot place, by the reason that rejected the most nodes", self.unschedulable.clone());
        r.register("infera_disruption_in_progress", "1 while a pod of the role is the target of a disruption (DisruptionTarget: an eviction, as kubectl drain and infera drain make, a preemption, a taint eviction) and not yet gone (absent while the pod watch is blind)", self.disruption.clone());
        r.register("infera_role_disrupted_pods", "Pods of the role that are the target of a disruption and not yet gone, by the DisruptionTarget reason (a closed set)", self.disrupted.clone());
        r.register(
            "infera_operator_generation_info",
            "The infera operator generation the InferaDeployment's rendered workers show",
            self.generation.clone(),
        );
        r.register(
            "infera_watch_up",
            "1 while the list+watch of the resource is current",
            self.watch_up.clone(),
        );
        r.register_with_unit(
            "infera_watch_unobserved",
            "Time the watch of the resource was not current (unobserved)",
            s,
            self.unobserved.clone(),
        );
    }
}

fn role_labels(namespace: &str, workload: &str, role: &str) -> Labels {
    vec![
        ("namespace", namespace.to_string()),
        ("workload", workload.to_string()),
        ("role", role.to_string()),
    ]
}

/// The state at `now`, encoded.
pub fn encode_state(state: &mut State, now: Instant) -> String {
    Snapshot::of(state, now).encode()
}

/// The metric families of one scrape, filled from the state under its
/// lock and encoded after the lock is released: a watch event waits for
/// the copy of the numbers, never for the text.
pub struct Snapshot(Families, crate::probe::Metrics);

impl Snapshot {
    /// The numbers of the state at `now`.
    pub fn of(state: &mut State, now: Instant) -> Snapshot {
        let f = Families::default();
        watches(state, &f, now);
        let up = |r: Resource| state.watch(r).is_some_and(|w| w.up());
        let (pods_up, objects_up) = (
            up(Resource::Pods),
            [
                Resource::InferaDeployments,
                Resource::Deployments,
                Resource::StatefulSets,
                Resource::LeaderWorkerSets,
            ]
            .into_iter()
            .all(up),
        );
        let disrupted = if pods_up {
            pod_facts(state, &f)
        } else {
            Disrupted::new()
        };
        roles(state, &f, now, (pods_up, objects_up), &disrupted);
        Snapshot(f, state.probe.clone())
    }

    /// The OpenMetrics text.
    pub fn encode(self) -> String {
        let mut registry = Registry::default();
        self.0.register(&mut registry);
        self.1.register(&mut registry);
        let mut out = String::new();
        match encode(&mut out, &registry) {
            Ok(()) => out,
            // Writing into a String cannot fail; say so rather than panic.
            Err(_) => "# EOF\n".to_string(),
        }
    }
}

fn watches(state: &State, f: &Families, now: Instant) {
    for (r, w) in &state.watches {
        let labels = vec![("resource", r.plural().to_string())];
        f.watch_up.get_or_create(&labels).set(i64::from(w.up()));
        f.unobserved
            .get_or_create(&labels)
            .inc_by(w.unobserved(now).as_secs_f64());
    }
}

/// Per workload: the legs rolling per role, and the operator generation.
type ObjectFacts = BTreeMap<WorkloadKey, (Vec<workloads::Rolling>, Option<&'static str>)>;

fn ns_of(m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> &str {
    m.namespace.as_deref().unwrap_or("")
}

/// The watched objects each workload's facts are read from, indexed once
/// per scrape by (namespace, kind, name) of the workload they belong to: an
/// operator-rendered Deployment under its InferaDeployment (label
/// `infera.amd.com/deployment`) as well as under its own name.
fn objects_by_workload(state: &State) -> BTreeMap<(&str, &str, &str), workloads::Objects<'_>> {
    let mut by: BTreeMap<(&str, &str, &str), workloads::Objects<'_>> = BTreeMap::new();
    for d in state.deployments.values() {
        let (ns, name) = (ns_of(&d.metadata), d.metadata.name.as_deref().unwrap_or(""));
        by.entry((ns, workloads::DEPLOY, name))
            .or_default()
            .deployments
            .push(d);
        let labels = d.metadata.labels.as_ref();
        if let Some(idep) = labels.and_then(|l| l.get(LABEL_DEPLOYMENT)) {
            by.entry((ns, workloads::IDEP, idep.as_str()))
                .or_default()
                .deployments
                .push(d);
        }
    }
    for s in state.statefulsets.values() {
        let name = s.metadata.name.as_deref().unwrap_or("");
        by.entry((ns_of(&s.metadata), workloads::STS, name))
            .or_default()
            .statefulsets
            .push(s);
    }
    for l in state.leaderworkersets.values() {
        let text = |p: &str| l.pointer(p).and_then(|v| v.as_str()).unwrap_or("");
        by.entry((
            text("/metadata/namespace"),
            workloads::LWS,
            text("/metadata/name"),
        ))
        .or_default()
        .leaderworkersets
        .push(l);
    }
    by
}

fn object_facts(state: &State) -> ObjectFacts {
    let by = objects_by_workload(state);
    let none = workloads::Objects::default();
    state
        .workloads
        .iter()
        .map(|(key, w)| {
            let (kind, name) = w.workload.name.split_once('/').unwrap_or(("", ""));
            let objects = by
                .get(&(w.workload.namespace.as_str(), kind, name))
                .unwrap_or(&none);
            let facts = (
                workloads::rolling(&w.workload, objects),
                workloads::operator_generation(&w.workload, &objects.deployments),
            );
            (key.clone(), facts)
        })
        .collect()
}

/// The roles with a disrupted pod, by workload.
type Disrupted = BTreeMap<WorkloadKey, BTreeSet<String>>;

fn roles(
    state: &mut State,
    f: &Families,
    now: Instant,
    (pods_up, objects_up): (bool, bool),
    disrupted: &Disrupted,
) {
    let facts = object_facts(state);
    let mut ordinal = 0;
    for (key, w) in state.workloads.iter_mut() {
        let (ns, name) = (w.workload.namespace.clone(), w.workload.name.clone());
        let current = pods_up && w.auditor.is_current();
        let disrupted_roles = disrupted.get(key);
        let counts = w.auditor.counts();
        let stats = w.auditor.stats_now(now);
        let extra = facts.get(key);
        if objects_up && let Some((_, Some(generation))) = extra {
            let labels = vec![
                ("namespace", ns.clone()),
                ("workload", name.clone()),
                ("generation", generation.to_string()),
            ];
            f.generation.get_or_create(&labels).set(1);
        }
        for (i, role) in w.workload.roles.iter().enumerate() {
            let role_key = RoleKey {
                ordinal,
                labels: role_labels(&ns, &name, &role.role).into(),
            };
            ordinal += 1;
            let is_disrupted = disrupted_roles.is_some_and(|r| r.contains(&role.role));
            if current && let Some(c) = counts.get(i) {
                f.ready.get_or_create(&role_key).set(i64::from(c.ready));
                f.routable
                    .get_or_create(&role_key)
                    .set(i64::from(c.routable));
                f.disruption
                    .get_or_create(&role_key)
                    .set(i64::from(is_disrupted));
            } else if is_disrupted {
                f.disruption.get_or_create(&role_key).set(1);
            }
            if let Some(s) = stats.get(i)
                && let Some(e) = w.exported.get_mut(i)
            {
                e.0 = e.0.max(s.below.0.as_secs_f64());
                e.1 = e.1.max(s.gaps);
            }
            if let Some(&(below, gaps)) = w.exported.get(i) {
                f.below.get_or_create(&role_key).inc_by(below);
                f.gaps.get_or_create(&role_key).inc_by(gaps);
            }
            if !objects_up {
                continue;
            }
            if let Some(&d) = w.workload.desired.get(i) {
                f.desired.get_or_create(&role_key).set(d);
            }
            let legs = extra
                .and_then(|(r, _)| r.get(i))
                .map(|r| r.legs.as_slice())
                .unwrap_or(&[]);
            f.rollout
                .get_or_create(&role_key)
                .set(i64::from(!legs.is_empty()));
            for leg in legs {
                let mut l = role_key.labels.to_vec();
                l.push(("leg", leg.clone()));
                f.leg.get_or_create(&l).set(1);
            }
        }
    }
}

/// The same metrics in the classic Prometheus text format (0.0.4), for a
/// client that does not ask for OpenMetrics (`promtool check metrics`,
/// `curl`): a counter family is named with its `_total` there, and there
/// is no `# UNIT` or `# EOF` line. Prometheus itself asks for OpenMetrics.
pub fn classic_text(openmetrics: &str) -> String {
    let counters: Vec<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|p| {
            let rest = line.strip_prefix(p)?;
            let (name, tail) = rest.split_once(' ')?;
            counters
                .contains(&name)
                .then(|| format!("{p}{name}_total {tail}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

/// Why a pod is Pending unscheduled, as a closed-set label.
fn unschedulable_reason(pod: &Pod) -> Option<&'static str> {
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() != Some("Pending") || pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let cond = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")?;
    (cond.reason.as_deref() == Some("Unschedulable"))
        .then(|| unfit_label_of_message(cond.message.as_deref().unwrap_or("")))
}

/// The namespace, workload and role of `pod`, if a watched workload has it.
fn role_of<'a>(state: &'a State, pod: &Pod) -> Option<(&'a str, &'a str, &'a str)> {
    let ns = pod.metadata.namespace.as_deref()?;
    state
        .workloads
        .values()
        .filter(|w| w.workload.namespace == ns)
        .find_map(|w| {
            let role = w.workload.roles.iter().find(|r| r.matches(pod))?;
            Some((
                w.workload.namespace.as_str(),
                w.workload.name.as_str(),
                role.role.as_str(),
            ))
        })
}

/// Per pod: unschedulable (by the scheduler's reason) or the target of a
/// disruption (by its `DisruptionTarget` reason), counted on its role; the
/// roles with a disrupted pod.
fn pod_facts(state: &State, f: &Families) -> Disrupted {
    let mut roles = Disrupted::new();
    for pod in state.pods.values() {
        let pending = unschedulable_reason(pod);
        let disrupted = infera_model::pod::disruption_reason(pod).map(disruption_label);
        if pending.is_none() && disrupted.is_none() {
            continue;
        }
        let Some((ns, workload, role)) = role_of(state, pod) else {
            continue;
        };
        let labels = role_labels(ns, workload, role);
        if let Some(reason) = pending {
            let mut l = labels.clone();
            l.push(("reason", reason.to_string()));
            f.unschedulable.get_or_create(&l).inc();
        }
        if let Some(reason) = disrupted {
            roles
                .entry((ns.to_string(), workload.to_string()))
                .or_default()
                .insert(role.to_string());
            let mut l = labels;
            l.push(("reason", reason.to_string()));
            f.disrupted.get_or_create(&l).inc();
        }
    }
    roles
}
