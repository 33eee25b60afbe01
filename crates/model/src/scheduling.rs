//! Pure pod-to-node fit predicates, shared by the simulated scheduler and the
//! rollout preflight capacity check (one source of truth).
//!
//! The predicates follow kube-scheduler's default filter plugins, run in its
//! order (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity,
//! NodePorts, NodeResourcesFit, InterPodAffinity). As upstream, the first
//! plugin that rejects a node decides the node's reasons, and the reasons are
//! worded exactly as upstream words them so a `FailedScheduling` message reads
//! like a real cluster's.
//!
//! Simplifications (documented): pod (anti-)affinity is evaluated for the
//! `kubernetes.io/hostname` topology only (the one GPU recipes use); a node
//! whose `Ready` condition is not `True` is treated as carrying the
//! `node.kubernetes.io/not-ready:NoSchedule` taint the node lifecycle
//! controller would add; the preemption part of the message is omitted.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use crate::selector::{expression_matches, label_selector_is_empty, label_selector_matches};
use crate::worker::parse_quantity_milli;
use k8s_openapi::api::core::v1::{
    Container, Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodAffinityTerm, PodSpec,
    Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// The topology key the anti-affinity predicate understands.
pub const HOSTNAME_TOPOLOGY_KEY: &str = "kubernetes.io/hostname";
/// Taint the node lifecycle controller puts on a node that is not Ready.
pub const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";
/// Taint equivalent of `spec.unschedulable`.
pub const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// Why a node cannot take a pod, worded as kube-scheduler words it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UnfitReason {
    /// `spec.unschedulable` (cordoned) without a matching toleration.
    Unschedulable,
    /// `spec.nodeName` names another node.
    NodeNameMismatch,
    /// A NoSchedule/NoExecute taint the pod does not tolerate.
    UntoleratedTaint { key: String, value: String },
    /// nodeSelector or required node affinity does not match.
    NodeAffinity,
    /// A requested host port is already bound on the node.
    HostPorts,
    /// Not enough allocatable left of a resource (`cpu`, `memory`, `amd.com/gpu`, ...).
    Insufficient(String),
    /// The node's `pods` allocatable is used up.
    TooManyPods,
    /// The pod's required anti-affinity matches a pod on the node.
    PodAntiAffinity,
    /// A pod on the node has required anti-affinity against this pod.
    ExistingPodsAntiAffinity,
    /// The pod's required affinity finds no matching pod on the node.
    PodAffinity,
}

impl fmt::Display for UnfitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnfitReason::Unschedulable => f.write_str("node(s) were unschedulable"),
            UnfitReason::NodeNameMismatch => {
                f.write_str("node(s) didn't match the requested node name")
            }
            UnfitReason::UntoleratedTaint { key, value } => {
                write!(f, "node(s) had untolerated taint {{{key}: {value}}}")
            }
            UnfitReason::NodeAffinity => {
                f.write_str("node(s) didn't match Pod's node affinity/selector")
            }
            UnfitReason::HostPorts => {
                f.write_str("node(s) didn't have free ports for the requested pod ports")
            }
            UnfitReason::Insufficient(resource) => write!(f, "Insufficient {resource}"),
            UnfitReason::TooManyPods => f.write_str("Too many pods"),
            UnfitReason::PodAntiAffinity => {
                f.write_str("node(s) didn't match pod anti-affinity rules")
            }
            UnfitReason::ExistingPodsAntiAffinity => {
                f.write_str("node(s) didn't satisfy existing pods anti-affinity rules")
            }
            UnfitReason::PodAffinity => f.write_str("node(s) didn't match pod affinity rules"),
        }
    }
}

impl UnfitReason {
    /// Every [`UnfitReason::label`], and `other` for a message none of them
    /// explains: a closed set, fit for a metric label.
    pub const LABELS: &[&str] = &[
        "unschedulable",
        "node_name_mismatch",
        "untolerated_taint",
        "node_affinity",
        "host_ports",
        "insufficient_resource",
        "too_many_pods",
        "pod_anti_affinity",
        "existing_pods_anti_affinity",
        "pod_affinity",
        "other",
    ];

    /// The reason's kind without its arguments (no taint key, no resource
    /// name): one of [`UnfitReason::LABELS`].
    pub fn label(&self) -> &'static str {
        match self {
            UnfitReason::Unschedulable => "unschedulable",
            UnfitReason::NodeNameMismatch => "node_name_mismatch",
            UnfitReason::UntoleratedTaint { .. } => "untolerated_taint",
            UnfitReason::NodeAffinity => "node_affinity",
            UnfitReason::HostPorts => "host_ports",
            UnfitReason::Insufficient(_) => "insufficient_resource",
            UnfitReason::TooManyPods => "too_many_pods",
            UnfitReason::PodAntiAffinity => "pod_anti_affinity",
            UnfitReason::ExistingPodsAntiAffinity => "existing_pods_anti_affinity",
            UnfitReason::PodAffinity => "pod_affinity",
        }
    }
}

/// The label ([`UnfitReason::LABELS`]) of the reason that rejected the most
/// nodes in a scheduler's message (`0/3 nodes are available: 1 Insufficient
/// amd.com/gpu, 2 node(s) had untolerated taint {k: v}. preemption: …`, as
/// [`failed_scheduling_message`] and kube-scheduler word it); the first
/// listed wins a tie; `other` when no reason is recognised.
pub fn unfit_label_of_message(message: &str) -> &'static str {
    // Each reason's fixed wording (`Display`), as the scheduler writes it.
    let wordings: [(&str, &'static str); 10] = [
        ("node(s) were unschedulable", "unschedulable"),
        (
            "node(s) didn't match the requested node name",
            "node_name_mismatch",
        ),
        ("node(s) had untolerated taint", "untolerated_taint"),
        (
            "node(s) didn't match Pod's node affinity/selector",
            "node_affinity",
        ),
        ("node(s) didn't have free ports", "host_ports"),
        ("Insufficient ", "insufficient_resource"),
        ("Too many pods", "too_many_pods"),
        (
            "node(s) didn't match pod anti-affinity rules",
            "pod_anti_affinity",
        ),
        (
            "node(s) didn't satisfy existing pods anti-affinity rules",
            "existing_pods_anti_affinity",
        ),
        ("node(s) didn't match pod affinity rules", "pod_affinity"),
    ];
    let reasons = message
        .split(" preemption:")
        .next()
        .unwrap_or("")
        .split_once(':')
        .map_or("", |(_, r)| r);
    let mut best: Option<(u64, &'static str)> = None;
    for part in reasons.split(", ") {
        let part = part.trim().trim_end_matches('.');
        let (count, text) = part.split_once(' ').unwrap_or(("0", part));
        let Some(label) = wordings
            .iter()
            .find(|(w, _)| text.starts_with(w))
            .map(|(_, l)| *l)
        else {
            continue;
        };
        let count = count.parse().unwrap_or(0);
        if best.is_none_or(|(c, _)| count > c) {
            best = Some((count, label));
        }
    }
    best.map_or("other", |(_, l)| l)
}

/// Can a pod with this spec run on `node`, given the pods already bound there?
/// (Use [`fit_pod`] when the pod's labels matter for existing pods' anti-affinity.)
///
/// `pods_on_node` are the pods whose `spec.nodeName` is this node (terminating
/// ones included: they hold their resources until removed; Succeeded/Failed
/// pods are ignored). `all_pods` is accepted for topologies wider than a host;
/// only the hostname topology is evaluated (see the module docs).
pub fn fit(
    pod: &PodSpec,
    node: &Node,
    pods_on_node: &[&Pod],
    all_pods: &[&Pod],
) -> Result<(), Vec<UnfitReason>> {
    fit_labeled(
        pod,
        &BTreeMap::new(),
        "default",
        node,
        pods_on_node,
        all_pods,
    )
}

/// [`fit`] for a whole pod: its labels and namespace take part in the pod
/// (anti-)affinity predicates (existing pods' anti-affinity against it).
pub fn fit_pod(
    pod: &Pod,
    node: &Node,
    pods_on_node: &[&Pod],
    all_pods: &[&Pod],
) -> Result<(), Vec<UnfitReason>> {
    let empty_spec = PodSpec::default();
    let empty_labels = BTreeMap::new();
    let spec = pod.spec.as_ref().unwrap_or(&empty_spec);
    let labels = pod.metadata.labels.as_ref().unwrap_or(&empty_labels);
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    fit_labeled(spec, labels, namespace, node, pods_on_node, all_pods)
}

fn fit_labeled(
    pod: &PodSpec,
    labels: &BTreeMap<String, String>,
    namespace: &str,
    node: &Node,
    pods_on_node: &[&Pod],
    _all_pods: &[&Pod],
) -> Result<(), Vec<UnfitReason>> {
    let live: Vec<&Pod> = pods_on_node
        .iter()
        .copied()
        .filter(|p| !is_terminal(p))
        .collect();
    let mut usage = NodeUsage::default();
    for p in &live {
        usage.add(&PodDemand::of(p));
    }
    let candidate = Candidate::new(pod, labels, namespace);
    fit_candidate(&candidate, node, &allocatable(node), &usage, || {
        live.into_iter().map(Cow::Borrowed).collect()
    })
}

/// A pod about to be placed, as the predicates read it: derived once, then
/// checked against any number of nodes with [`fit_candidate`].
#[derive(Debug, Clone)]
pub struct Candidate<'a> {
    spec: &'a PodSpec,
    labels: &'a BTreeMap<String, String>,
    namespace: &'a str,
    /// Effective requests in upstream's check order (cpu, memory,
    /// ephemeral-storage, then scalar resources by name).
    requests: Vec<(String, i128)>,
    host_ports: Vec<(String, String, i32)>,
    /// Whether it has a required hostname-topology pod (anti-)affinity term.
    pod_terms: bool,
}

impl<'a> Candidate<'a> {
    pub fn new(
        spec: &'a PodSpec,
        labels: &'a BTreeMap<String, String>,
        namespace: &'a str,
    ) -> Candidate<'a> {
        let rank = |n: &str| match n {
            "cpu" => 0,
            "memory" => 1,
            "ephemeral-storage" => 2,
            _ => 3,
        };
        let mut requests: Vec<(String, i128)> = pod_requests(spec).into_iter().collect();
        requests.sort_by(|(a, _), (b, _)| (rank(a), a.as_str()).cmp(&(rank(b), b.as_str())));
        let affinity = spec.affinity.as_ref();
        let hostname = |terms: Option<&Vec<PodAffinityTerm>>| {
            terms.is_some_and(|ts| ts.iter().any(|t| t.topology_key == HOSTNAME_TOPOLOGY_KEY))
        };
        let pod_terms = hostname(
            affinity
                .and_then(|a| a.pod_affinity.as_ref())
                .and_then(|pa| {
                    pa.required_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
        ) || hostname(
            affinity
                .and_then(|a| a.pod_anti_affinity.as_ref())
                .and_then(|aa| {
                    aa.required_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
        );
        Candidate {
            spec,
            labels,
            namespace,
            requests,
            host_ports: host_ports(spec),
            pod_terms,
        }
    }

    /// The effective request (milli-units) for a resource name, 0 when absent.
    pub fn request(&self, resource: &str) -> i128 {
        self.requests
            .iter()
            .find(|(name, _)| name == resource)
            .map_or(0, |(_, v)| *v)
    }
}

/// What one pod contributes to its node's [`NodeUsage`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodDemand {
    /// Not Succeeded/Failed: only live pods hold resources and ports.
    pub live: bool,
    /// Effective requests ([`pod_requests`]).
    pub requests: BTreeMap<String, i128>,
    pub host_ports: Vec<(String, String, i32)>,
    /// Has a required hostname-topology pod anti-affinity term.
    pub anti_affinity: bool,
}

impl PodDemand {
    pub fn of(pod: &Pod) -> PodDemand {
        let live = !is_terminal(pod);
        let Some(spec) = pod.spec.as_ref() else {
            return PodDemand {
                live,
                ..PodDemand::default()
            };
        };
        let anti_affinity = spec
            .affinity
            .as_ref()
            .and_then(|a| a.pod_anti_affinity.as_ref())
            .and_then(|aa| {
                aa.required_during_scheduling_ignored_during_execution
                    .as_deref()
            })
            .is_some_and(|ts| ts.iter().any(|t| t.topology_key == HOSTNAME_TOPOLOGY_KEY));
        PodDemand {
            live,
            requests: pod_requests(spec),
            host_ports: host_ports(spec),
            anti_affinity,
        }
    }
}

/// The pods bound to one node, aggregated as the predicates read them.
/// [`fit`] and [`fit_pod`] build it from a pod list on every call; a
/// scheduler can keep one per node with [`NodeUsage::add`] and
/// [`NodeUsage::remove`] and call [`fit_candidate`] instead.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeUsage {
    /// Live pods.
    pub pods: usize,
    /// The live pods' requests, summed (milli-units).
    pub requested: BTreeMap<String, i128>,
    /// Host ports the live pods bind, with multiplicity.
    pub host_ports: BTreeMap<(String, String, i32), usize>,
    /// Live pods with a required hostname-topology pod anti-affinity term.
    pub anti_affinity_pods: usize,
}

impl NodeUsage {
    pub fn add(&mut self, demand: &PodDemand) {
        if !demand.live {
            return;
        }
        self.pods += 1;
        for (name, value) in &demand.requests {
            *self.requested.entry(name.clone()).or_default() += value;
        }
        for port in &demand.host_ports {
            *self.host_ports.entry(port.clone()).or_default() += 1;
        }
        if demand.anti_affinity {
            self.anti_affinity_pods += 1;
        }
    }

    /// Undo an [`NodeUsage::add`] of the same demand.
    pub fn remove(&mut self, demand: &PodDemand) {
        if !demand.live {
            return;
        }
        self.pods = self.pods.saturating_sub(1);
        for (name, value) in &demand.requests {
            if let Some(total) = self.requested.get_mut(name) {
                *total -= value;
            }
        }
        for port in &demand.host_ports {
            if let Some(n) = self.host_ports.get_mut(port) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.host_ports.remove(port);
                }
            }
        }
        if demand.anti_affinity {
            self.anti_affinity_pods = self.anti_affinity_pods.saturating_sub(1);
        }
    }
}

/// A node's allocatable resources in milli-units (a malformed quantity is 0).
pub fn allocatable(node: &Node) -> BTreeMap<String, i128> {
    node.status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .map(|a| {
            a.iter()
                .map(|(k, q)| (k.clone(), quantity_milli(q)))
                .collect()
        })
        .unwrap_or_default()
}

/// The predicates for `candidate` on `node`, whose bound pods are summed in
/// `usage` (`allocatable` is [`allocatable`] of the node). `live_pods` (the
/// node's live pods, borrowed or decoded) is called only when inter-pod
/// affinity has to look at them: when the candidate has a hostname
/// (anti-)affinity term or a pod on the node has a hostname anti-affinity
/// term.
pub fn fit_candidate<'p>(
    candidate: &Candidate<'_>,
    node: &Node,
    allocatable: &BTreeMap<String, i128>,
    usage: &NodeUsage,
    live_pods: impl FnOnce() -> Vec<Cow<'p, Pod>>,
) -> Result<(), Vec<UnfitReason>> {
    let pod = candidate.spec;
    let checks: [&dyn Fn() -> Vec<UnfitReason>; 6] = [
        &|| check_unschedulable(pod, node),
        &|| check_node_name(pod, node),
        &|| check_taints(pod, node),
        &|| check_node_affinity(pod, node),
        &|| check_host_ports(&candidate.host_ports, usage),
        &|| check_resources(candidate, allocatable, usage),
    ];
    for check in checks {
        let reasons = check();
        if !reasons.is_empty() {
            return Err(reasons);
        }
    }
    if candidate.pod_terms || usage.anti_affinity_pods > 0 {
        let live = live_pods();
        let live: Vec<&Pod> = live.iter().map(|p| p.as_ref()).collect();
        let reasons = check_inter_pod_affinity(pod, candidate.labels, candidate.namespace, &live);
        if !reasons.is_empty() {
            return Err(reasons);
        }
    }
    Ok(())
}

/// Count per-node reasons as upstream's FitError does (each reason once per node).
pub fn count_reasons<'a>(
    per_node: impl IntoIterator<Item = &'a [UnfitReason]>,
) -> Vec<(UnfitReason, usize)> {
    let mut counts: BTreeMap<UnfitReason, usize> = BTreeMap::new();
    for reasons in per_node {
        let mut seen: Vec<&UnfitReason> = Vec::new();
        for reason in reasons {
            if !seen.contains(&reason) {
                seen.push(reason);
                *counts.entry(reason.clone()).or_default() += 1;
            }
        }
    }
    counts.into_iter().collect()
}

/// `0/N nodes are available: <count> <reason>, ....`: the reasons are rendered
/// as `"<count> <reason>"` and sorted as strings, exactly as upstream's
/// `FitError.Error()` sorts its histogram.
pub fn failed_scheduling_message(total_nodes: usize, reasons: &[(UnfitReason, usize)]) -> String {
    let mut histogram: BTreeMap<String, usize> = BTreeMap::new();
    for (reason, count) in reasons {
        *histogram.entry(reason.to_string()).or_default() += count;
    }
    let mut parts: Vec<String> = histogram
        .into_iter()
        .map(|(reason, count)| format!("{count} {reason}"))
        .collect();
    parts.sort();
    if total_nodes == 0 {
        // Upstream's ErrNoNodesAvailable.
        return "no nodes available to schedule pods".to_string();
    }
    let mut message = format!("0/{total_nodes} nodes are available:");
    if !parts.is_empty() {
        message.push(' ');
        message.push_str(&parts.join(", "));
        message.push('.');
    }
    message
}

/// Whether preemption cannot help on a node that failed for `reason`:
/// upstream's filter plugins answer `UnschedulableAndUnresolvable` for these
/// (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, and
/// InterPodAffinity's unmatched required affinity), plain `Unschedulable`
/// (evicting a victim could free it) for the rest.
fn preemption_unresolvable(reason: &UnfitReason) -> bool {
    matches!(
        reason,
        UnfitReason::Unschedulable
            | UnfitReason::NodeNameMismatch
            | UnfitReason::UntoleratedTaint { .. }
            | UnfitReason::NodeAffinity
            | UnfitReason::PodAffinity
    )
}

/// What kube-scheduler's DefaultPreemption PostFilter appends to the
/// FailedScheduling message when it finds nothing to preempt (every pod has
/// the same priority, as in our scenarios): ` preemption: 0/N nodes are
/// available: <k> No preemption victims found for incoming pod, <m>
/// Preemption is not helpful for scheduling.` — per node, "not helpful"
/// when its failure is unresolvable, else "no victims"; sorted as strings
/// (upstream: pkg/scheduler/framework/preemption/preemption.go,
/// `Evaluator.findCandidates` and `FitError.Error()`, v1.37.2).
pub fn preemption_suffix(total_nodes: usize, per_node: &[Vec<UnfitReason>]) -> String {
    if total_nodes == 0 {
        return String::new();
    }
    let unhelpful = per_node
        .iter()
        .filter(|reasons| reasons.iter().any(preemption_unresolvable))
        .count();
    let no_victims = per_node.len() - unhelpful;
    let mut parts = Vec::new();
    if no_victims > 0 {
        parts.push(format!(
            "{no_victims} No preemption victims found for incoming pod"
        ));
    }
    if unhelpful > 0 {
        parts.push(format!(
            "{unhelpful} Preemption is not helpful for scheduling"
        ));
    }
    parts.sort();
    format!(
        " preemption: 0/{total_nodes} nodes are available: {}.",
        parts.join(", ")
    )
}

fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded") | Some("Failed")
    )
}

fn node_labels(node: &Node) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    node.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

fn node_name(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or("")
}

/// Is the node's `Ready` condition `True`? A node with no conditions at all is
/// taken as Ready (a freshly registered fixture).
pub fn node_is_ready(node: &Node) -> bool {
    let conditions = node.status.as_ref().and_then(|s| s.conditions.as_ref());
    match conditions.and_then(|cs| cs.iter().find(|c| c.type_ == "Ready")) {
        Some(ready) => ready.status == "True",
        None => true,
    }
}

fn check_unschedulable(pod: &PodSpec, node: &Node) -> Vec<UnfitReason> {
    let cordoned = node
        .spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false);
    if !cordoned {
        return Vec::new();
    }
    let taint = Taint {
        key: UNSCHEDULABLE_TAINT.to_string(),
        effect: "NoSchedule".to_string(),
        ..Taint::default()
    };
    if tolerated(pod.tolerations.as_deref().unwrap_or(&[]), &taint) {
        Vec::new()
    } else {
        vec![UnfitReason::Unschedulable]
    }
}

fn check_node_name(pod: &PodSpec, node: &Node) -> Vec<UnfitReason> {
    match pod.node_name.as_deref() {
        Some(wanted) if !wanted.is_empty() && wanted != node_name(node) => {
            vec![UnfitReason::NodeNameMismatch]
        }
        _ => Vec::new(),
    }
}

/// Does one toleration tolerate the taint (upstream `ToleratesTaint`)?
pub fn toleration_matches(toleration: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = toleration.effect.as_deref()
        && !effect.is_empty()
        && effect != taint.effect
    {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or("");
    let operator = toleration.operator.as_deref().unwrap_or("Equal");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match operator {
        "Exists" => true,
        "Equal" | "" => {
            // An empty key is only legal with Exists; upstream still compares values.
            !key.is_empty()
                && toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
        _ => false,
    }
}

fn tolerated(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| toleration_matches(t, taint))
}

fn check_taints(pod: &PodSpec, node: &Node) -> Vec<UnfitReason> {
    let taints: &[Taint] = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[]);
    let not_ready = (!node_is_ready(node) && !taints.iter().any(|t| t.key == NOT_READY_TAINT))
        .then(|| Taint {
            key: NOT_READY_TAINT.to_string(),
            effect: "NoSchedule".to_string(),
            ..Taint::default()
        });
    let tolerations = pod.tolerations.as_deref().unwrap_or(&[]);
    taints
        .iter()
        .chain(not_ready.as_ref())
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|t| !tolerated(tolerations, t))
        .map(|t| {
            vec![UnfitReason::UntoleratedTaint {
                key: t.key.clone(),
                value: t.value.clone().unwrap_or_default(),
            }]
        })
        .unwrap_or_default()
}

fn check_node_affinity(pod: &PodSpec, node: &Node) -> Vec<UnfitReason> {
    let labels = node_labels(node);
    let selector_ok = pod
        .node_selector
        .as_ref()
        .is_none_or(|sel| sel.iter().all(|(k, v)| labels.get(k) == Some(v)));
    let required = pod
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    let affinity_ok = required.is_none_or(|selector| {
        selector
            .node_selector_terms
            .iter()
            .any(|term| node_selector_term_matches(term, labels, node_name(node)))
    });
    if selector_ok && affinity_ok {
        Vec::new()
    } else {
        vec![UnfitReason::NodeAffinity]
    }
}

/// One NodeSelectorTerm: its expressions and fields are ANDed; a term with
/// neither matches nothing (upstream).
pub fn node_selector_term_matches(
    term: &NodeSelectorTerm,
    labels: &BTreeMap<String, String>,
    node_name: &str,
) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or(&[]);
    let fields = term.match_fields.as_deref().unwrap_or(&[]);
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    let fields_map: BTreeMap<String, String> =
        [("metadata.name".to_string(), node_name.to_string())].into();
    expressions
        .iter()
        .all(|req| node_requirement_matches(req, labels))
        && fields.iter().all(|req| {
            req.key == "metadata.name"
                && matches!(req.operator.as_str(), "In" | "NotIn")
                && node_requirement_matches(req, &fields_map)
        })
}

fn node_requirement_matches(
    req: &NodeSelectorRequirement,
    labels: &BTreeMap<String, String>,
) -> bool {
    let values = req.values.as_deref().unwrap_or(&[]);
    let value = labels.get(&req.key);
    match req.operator.as_str() {
        "Gt" | "Lt" => {
            let (Some(label), [bound]) = (value, values) else {
                return false;
            };
            match (label.parse::<i64>(), bound.parse::<i64>()) {
                (Ok(label), Ok(bound)) if req.operator == "Gt" => label > bound,
                (Ok(label), Ok(bound)) => label < bound,
                _ => false,
            }
        }
        op => expression_matches(op, Some(values), value.map(String::as_str)),
    }
}

/// (protocol, hostIP, port) a pod binds on its node. With hostNetwork every
/// container port is a host port (the API server defaults hostPort to it).
fn host_ports(pod: &PodSpec) -> Vec<(String, String, i32)> {
    let host_network = pod.host_network.unwrap_or(false);
    pod.containers
        .iter()
        .flat_map(|c| c.ports.as_deref().unwrap_or(&[]))
        .filter_map(|p| {
            let port = match p.host_port {
                Some(hp) if hp > 0 => hp,
                _ if host_network => p.container_port,
                _ => return None,
            };
            let protocol = p.protocol.clone().unwrap_or_else(|| "TCP".to_string());
            let ip = p
                .host_ip
                .clone()
                .filter(|ip| !ip.is_empty())
                .unwrap_or_else(|| "0.0.0.0".to_string());
            Some((protocol, ip, port))
        })
        .collect()
}

fn check_host_ports(wanted: &[(String, String, i32)], usage: &NodeUsage) -> Vec<UnfitReason> {
    if wanted.is_empty() {
        return Vec::new();
    }
    let conflict = wanted.iter().any(|(proto, ip, port)| {
        usage.host_ports.keys().any(|(uproto, uip, uport)| {
            uproto == proto && uport == port && (ip == uip || ip == "0.0.0.0" || uip == "0.0.0.0")
        })
    });
    if conflict {
        vec![UnfitReason::HostPorts]
    } else {
        Vec::new()
    }
}

fn quantity_milli(q: &Quantity) -> i128 {
    parse_quantity_milli(&q.0).unwrap_or(0)
}

fn container_requests(container: &Container) -> BTreeMap<String, i128> {
    let mut out = BTreeMap::new();
    let Some(resources) = container.resources.as_ref() else {
        return out;
    };
    // The API server defaults requests to limits when only limits are set.
    if let Some(limits) = resources.limits.as_ref() {
        for (name, q) in limits {
            out.insert(name.clone(), quantity_milli(q));
        }
    }
    if let Some(requests) = resources.requests.as_ref() {
        for (name, q) in requests {
            out.insert(name.clone(), quantity_milli(q));
        }
    }
    out
}

/// Effective requests of a pod (milli-units per resource name): the sum over
/// containers, at least the largest init container, plus overhead.
pub fn pod_requests(pod: &PodSpec) -> BTreeMap<String, i128> {
    let mut total: BTreeMap<String, i128> = BTreeMap::new();
    for container in &pod.containers {
        for (name, value) in container_requests(container) {
            *total.entry(name).or_default() += value;
        }
    }
    for init in pod.init_containers.as_deref().unwrap_or(&[]) {
        for (name, value) in container_requests(init) {
            let entry = total.entry(name).or_default();
            *entry = (*entry).max(value);
        }
    }
    if let Some(overhead) = pod.overhead.as_ref() {
        for (name, q) in overhead {
            *total.entry(name.clone()).or_default() += quantity_milli(q);
        }
    }
    total
}

fn check_resources(
    candidate: &Candidate<'_>,
    allocatable: &BTreeMap<String, i128>,
    usage: &NodeUsage,
) -> Vec<UnfitReason> {
    let mut reasons = Vec::new();
    if let Some(max_pods) = allocatable.get("pods")
        && (usage.pods as i128 + 1) * 1000 > *max_pods
    {
        reasons.push(UnfitReason::TooManyPods);
    }
    // Upstream order: cpu, memory, ephemeral-storage, then scalar resources.
    for (name, want) in &candidate.requests {
        if *want <= 0 || name == "pods" {
            continue;
        }
        let free = allocatable.get(name).copied().unwrap_or(0)
            - usage.requested.get(name).copied().unwrap_or(0);
        if *want > free {
            reasons.push(UnfitReason::Insufficient(name.clone()));
        }
    }
    reasons
}

fn term_matches_pod(
    term: &PodAffinityTerm,
    term_namespace: &str,
    pod_labels: &BTreeMap<String, String>,
    pod_namespace: &str,
) -> bool {
    let namespaces = term.namespaces.as_deref().unwrap_or(&[]);
    let ns_ok = if namespaces.is_empty() && term.namespace_selector.is_none() {
        pod_namespace == term_namespace
    } else if term
        .namespace_selector
        .as_ref()
        .is_some_and(label_selector_is_empty)
    {
        // An empty namespaceSelector means all namespaces.
        true
    } else {
        namespaces.iter().any(|n| n == pod_namespace)
    };
    // A null label selector matches no pod.
    ns_ok
        && term
            .label_selector
            .as_ref()
            .is_some_and(|sel| label_selector_matches(sel, pod_labels))
}

fn check_inter_pod_affinity(
    pod: &PodSpec,
    labels: &BTreeMap<String, String>,
    namespace: &str,
    live: &[&Pod],
) -> Vec<UnfitReason> {
    let other_labels = |p: &Pod| p.metadata.labels.clone().unwrap_or_default();
    let other_ns = |p: &Pod| {
        p.metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into())
    };
    let affinity = pod.affinity.as_ref();
    // Existing pods' anti-affinity against the incoming pod (checked first upstream).
    let existing_conflict = live.iter().any(|other| {
        let terms = other
            .spec
            .as_ref()
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.pod_anti_affinity.as_ref())
            .and_then(|aa| {
                aa.required_during_scheduling_ignored_during_execution
                    .as_deref()
            })
            .unwrap_or(&[]);
        terms.iter().any(|term| {
            term.topology_key == HOSTNAME_TOPOLOGY_KEY
                && term_matches_pod(term, &other_ns(other), labels, namespace)
        })
    });
    if existing_conflict {
        return vec![UnfitReason::ExistingPodsAntiAffinity];
    }
    let affinity_terms = affinity
        .and_then(|a| a.pod_affinity.as_ref())
        .and_then(|pa| {
            pa.required_during_scheduling_ignored_during_execution
                .as_deref()
        })
        .unwrap_or(&[]);
    let affinity_ok = affinity_terms
        .iter()
        .filter(|t| t.topology_key == HOSTNAME_TOPOLOGY_KEY)
        .all(|term| {
            live.iter().any(|other| {
                term_matches_pod(term, namespace, &other_labels(other), &other_ns(other))
            })
        });
    if !affinity_ok {
        return vec![UnfitReason::PodAffinity];
    }
    let anti_terms = affinity
        .and_then(|a| a.pod_anti_affinity.as_ref())
        .and_then(|aa| {
            aa.required_during_scheduling_ignored_during_execution
                .as_deref()
        })
        .unwrap_or(&[]);
    let anti_conflict = anti_terms
        .iter()
        .filter(|t| t.topology_key == HOSTNAME_TOPOLOGY_KEY)
        .any(|term| {
            live.iter().any(|other| {
                term_matches_pod(term, namespace, &other_labels(other), &other_ns(other))
            })
        });
    if anti_conflict {
        vec![UnfitReason::PodAntiAffinity]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(value: serde_json::Value) -> Node {
        serde_json::from_value(value).unwrap_or_default()
    }

    fn gpu_node(name: &str, gpus: u32) -> Node {
        node(json!({
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {
                "allocatable": {"cpu": "64", "memory": "512Gi", "amd.com/gpu": gpus.to_string(), "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}]
            }
        }))
    }

    fn pod(value: serde_json::Value) -> Pod {
        serde_json::from_value(value).unwrap_or_default()
    }

    fn gpu_pod(name: &str, node: Option<&str>, gpus: u32) -> Pod {
        pod(json!({
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "w"}},
            "spec": {
                "nodeName": node,
                "containers": [{"name": "main", "image": "x",
                    "resources": {"limits": {"amd.com/gpu": gpus.to_string()}, "requests": {"cpu": "2", "memory": "8Gi"}}}]
            }
        }))
    }

    fn spec(p: &Pod) -> PodSpec {
        p.spec.clone().unwrap_or_default()
    }

    #[test]
    fn gpus_are_counted_against_allocatable() {
        let n = gpu_node("n1", 8);
        let existing = gpu_pod("a", Some("n1"), 6);
        let want3 = gpu_pod("b", None, 3);
        let want2 = gpu_pod("c", None, 2);
        assert_eq!(
            fit(&spec(&want3), &n, &[&existing], &[&existing]),
            Err(vec![UnfitReason::Insufficient("amd.com/gpu".into())])
        );
        assert_eq!(fit(&spec(&want2), &n, &[&existing], &[&existing]), Ok(()));
    }

    #[test]
    fn finished_pods_release_resources() {
        let n = gpu_node("n1", 8);
        let mut done = gpu_pod("a", Some("n1"), 8);
        done.status = Some(k8s_openapi::api::core::v1::PodStatus {
            phase: Some("Succeeded".into()),
            ..Default::default()
        });
        let want = gpu_pod("b", None, 8);
        assert_eq!(fit(&spec(&want), &n, &[&done], &[&done]), Ok(()));
    }

    #[test]
    fn cpu_and_memory_reasons_come_in_upstream_order() {
        let n = node(
            json!({"metadata": {"name": "small"}, "status": {"allocatable": {"cpu": "1", "memory": "1Gi"}}}),
        );
        let p = pod(
            json!({"spec": {"containers": [{"name": "m", "resources": {"requests": {"memory": "2Gi", "cpu": "1500m"}}}]}}),
        );
        assert_eq!(
            fit(&spec(&p), &n, &[], &[]),
            Err(vec![
                UnfitReason::Insufficient("cpu".into()),
                UnfitReason::Insufficient("memory".into())
            ])
        );
    }

    #[test]
    fn node_selector_and_affinity() {
        let n1 = gpu_node("n1", 8);
        let pinned = pod(
            json!({"spec": {"nodeSelector": {"kubernetes.io/hostname": "n2"}, "containers": [{"name": "m"}]}}),
        );
        assert_eq!(
            fit(&spec(&pinned), &n1, &[], &[]),
            Err(vec![UnfitReason::NodeAffinity])
        );
        let mk = |expr: serde_json::Value| {
            pod(
                json!({"spec": {"containers": [{"name": "m"}], "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [expr]}}}}}),
            )
        };
        let labelled =
            node(json!({"metadata": {"name": "n1", "labels": {"gpu": "mi355x", "rank": "5"}}}));
        let cases = [
            (
                json!({"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["mi355x"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "gpu", "operator": "NotIn", "values": ["mi355x"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "rank", "operator": "Gt", "values": ["4"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "rank", "operator": "Lt", "values": ["4"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "gpu", "operator": "Gt", "values": ["4"]}]}),
                false,
            ),
            (
                json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}),
                true,
            ),
            (
                json!({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}),
                false,
            ),
            (json!({}), false),
        ];
        for (term, ok) in cases {
            let p = mk(term.clone());
            assert_eq!(fit(&spec(&p), &labelled, &[], &[]).is_ok(), ok, "{term}");
        }
    }

    #[test]
    fn host_network_ports_conflict() {
        let n = gpu_node("n1", 8);
        let hostnet = |name: &str, node: Option<&str>| {
            pod(
                json!({"metadata": {"name": name}, "spec": {"nodeName": node, "hostNetwork": true,
                "containers": [{"name": "m", "ports": [{"containerPort": 30000}]}]}}),
            )
        };
        let a = hostnet("a", Some("n1"));
        let b = hostnet("b", None);
        assert_eq!(
            fit(&spec(&b), &n, &[&a], &[&a]),
            Err(vec![UnfitReason::HostPorts])
        );
        let plain = pod(
            json!({"spec": {"containers": [{"name": "m", "ports": [{"containerPort": 30000}]}]}}),
        );
        assert_eq!(fit(&spec(&plain), &n, &[&a], &[&a]), Ok(()));
        let explicit = pod(
            json!({"spec": {"containers": [{"name": "m", "ports": [{"containerPort": 1, "hostPort": 30000, "protocol": "UDP"}]}]}}),
        );
        assert_eq!(
            fit(&spec(&explicit), &n, &[&a], &[&a]),
            Ok(()),
            "UDP does not clash with TCP"
        );
    }

    #[test]
    fn anti_affinity_on_hostname() {
        let n = gpu_node("n1", 8);
        let existing = gpu_pod("a", Some("n1"), 1);
        let p = pod(
            json!({"metadata": {"namespace": "default"}, "spec": {"containers": [{"name": "m"}], "affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": {"app": "w"}}}]}}}}),
        );
        assert_eq!(
            fit_pod(&p, &n, &[&existing], &[&existing]),
            Err(vec![UnfitReason::PodAntiAffinity])
        );
        assert_eq!(fit_pod(&p, &n, &[], &[]), Ok(()));
        // The symmetric check: an existing pod repelling the newcomer.
        let repel = pod(
            json!({"metadata": {"namespace": "default", "name": "r"}, "spec": {"nodeName": "n1", "containers": [{"name": "m"}], "affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": {"app": "w"}}}]}}}}),
        );
        let newcomer = gpu_pod("n", None, 1);
        assert_eq!(
            fit_pod(&newcomer, &n, &[&repel], &[&repel]),
            Err(vec![UnfitReason::ExistingPodsAntiAffinity])
        );
    }

    #[test]
    fn taints_tolerations_and_node_state() {
        let tainted = node(json!({"metadata": {"name": "n1"}, "spec": {"taints": [
            {"key": "amd.com/gpu", "value": "present", "effect": "NoSchedule"},
            {"key": "soft", "effect": "PreferNoSchedule"}]}}));
        let plain = pod(json!({"spec": {"containers": [{"name": "m"}]}}));
        assert_eq!(
            fit(&spec(&plain), &tainted, &[], &[]),
            Err(vec![UnfitReason::UntoleratedTaint {
                key: "amd.com/gpu".into(),
                value: "present".into()
            }])
        );
        for toleration in [
            json!({"key": "amd.com/gpu", "operator": "Exists"}),
            json!({"key": "amd.com/gpu", "value": "present", "effect": "NoSchedule"}),
            json!({"operator": "Exists"}),
        ] {
            let p = pod(
                json!({"spec": {"containers": [{"name": "m"}], "tolerations": [toleration.clone()]}}),
            );
            assert_eq!(fit(&spec(&p), &tainted, &[], &[]), Ok(()), "{toleration}");
        }
        let wrong = pod(
            json!({"spec": {"containers": [{"name": "m"}], "tolerations": [{"key": "amd.com/gpu", "value": "absent"}]}}),
        );
        assert!(fit(&spec(&wrong), &tainted, &[], &[]).is_err());

        let cordoned = node(json!({"metadata": {"name": "n1"}, "spec": {"unschedulable": true}}));
        assert_eq!(
            fit(&spec(&plain), &cordoned, &[], &[]),
            Err(vec![UnfitReason::Unschedulable])
        );
        let not_ready = node(
            json!({"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
        );
        let err = fit(&spec(&plain), &not_ready, &[], &[]);
        assert_eq!(
            err.map_err(|r| r.iter().map(ToString::to_string).collect::<Vec<_>>()),
            Err(vec![
                "node(s) had untolerated taint {node.kubernetes.io/not-ready: }".to_string()
            ])
        );
    }

    #[test]
    fn message_matches_upstream_wording_and_order() {
        let n1 = gpu_node("n1", 8);
        let n2 = gpu_node("n2", 8);
        let holder = gpu_pod("old", Some("n1"), 8);
        let surge = pod(
            json!({"spec": {"nodeSelector": {"kubernetes.io/hostname": "n1"},
            "containers": [{"name": "m", "resources": {"limits": {"amd.com/gpu": "8"}}}]}}),
        );
        let per_node = [
            fit(&spec(&surge), &n1, &[&holder], &[&holder])
                .err()
                .unwrap_or_default(),
            fit(&spec(&surge), &n2, &[], &[&holder])
                .err()
                .unwrap_or_default(),
        ];
        let counted = count_reasons(per_node.iter().map(Vec::as_slice));
        assert_eq!(
            failed_scheduling_message(2, &counted),
            "0/2 nodes are available: 1 Insufficient amd.com/gpu, 1 node(s) didn't match Pod's node affinity/selector."
        );
        // What the real kube-scheduler v1.37.2 appended on the lab
        // (tests/lab/conformance.rs, whole-node-pinned).
        assert_eq!(
            preemption_suffix(2, &per_node),
            " preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
        );
        // Sorted as strings, counts included: "10 ..." sorts before "2 ...".
        let msg = failed_scheduling_message(
            12,
            &[
                (UnfitReason::Insufficient("cpu".into()), 2),
                (UnfitReason::NodeAffinity, 10),
            ],
        );
        assert_eq!(
            msg,
            "0/12 nodes are available: 10 node(s) didn't match Pod's node affinity/selector, 2 Insufficient cpu."
        );
        assert_eq!(
            failed_scheduling_message(0, &[]),
            "no nodes available to schedule pods"
        );
    }

    #[test]
    fn first_failing_plugin_decides() {
        // Tainted AND too small: upstream stops at TaintToleration.
        let n = node(
            json!({"metadata": {"name": "n1"}, "spec": {"taints": [{"key": "k", "effect": "NoExecute"}]},
            "status": {"allocatable": {"amd.com/gpu": "0"}}}),
        );
        let p = gpu_pod("p", None, 1);
        assert_eq!(
            fit(&spec(&p), &n, &[], &[]),
            Err(vec![UnfitReason::UntoleratedTaint {
                key: "k".into(),
                value: String::new()
            }])
        );
    }

    #[test]
    fn unfit_labels_are_a_closed_set_read_off_the_message() {
        let reasons = [
            UnfitReason::Insufficient("amd.com/gpu".into()),
            UnfitReason::UntoleratedTaint {
                key: "k".into(),
                value: "v".into(),
            },
            UnfitReason::Insufficient("amd.com/gpu".into()),
        ];
        let per_node: Vec<Vec<UnfitReason>> = reasons.iter().map(|r| vec![r.clone()]).collect();
        let counted = count_reasons(per_node.iter().map(Vec::as_slice));
        let message = failed_scheduling_message(3, &counted) + &preemption_suffix(3, &per_node);
        assert_eq!(unfit_label_of_message(&message), "insufficient_resource");
        for r in &reasons {
            assert!(UnfitReason::LABELS.contains(&r.label()));
            // Each reason's own wording maps back to its label.
            let one = failed_scheduling_message(1, &[(r.clone(), 1)]);
            assert_eq!(unfit_label_of_message(&one), r.label(), "{one}");
        }
        assert_eq!(
            unfit_label_of_message(
                "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
            ),
            "node_affinity"
        );
        assert_eq!(
            unfit_label_of_message("no nodes available to schedule pods"),
            "other"
        );
        assert_eq!(unfit_label_of_message(""), "other");
    }
}
