//! Lint rules: one file a rule, docs in the rule's doc comment.
//!
//! Each rule is declared with [`declare_rule!`], which keeps its code, name,
//! default severity, one-line summary and doc comment together; the doc
//! comment is both the rustdoc and the page `infera rules CODE` prints.
//! Adding a rule touches its own file and one line of [`REGISTRY`].

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec};

use super::finding::RuleMeta;
use super::finding::Severity;
use infera_model::generation::Generation;
use infera_model::manifest::node::{Path, Seg};
use infera_model::operator::Role;
use infera_model::operator::strategy::Strategy;
use infera_model::rolling::RollKind;
use infera_model::selector::label_selector_matches;
use infera_model::worker::ReadinessPort;

mod budget_blocks_drain;
mod gpu_request_below_parallelism;
mod multinode_gap;
mod probe_not_registration;
mod progress_deadline_short;
mod readiness_port_unknowable;
mod ready_probe_timeout_short;
mod shutdown_budget_short;
mod single_replica_gap;
pub mod single_replica_no_budget;
mod skip_probe_serving;
mod surge_needs_spare_node;
mod surge_stall_gpu;
mod surge_stall_host_port;
mod surge_volume_attach;
mod surge_without_readiness;
mod unresolved_placeholder;

/// Every rule, in code order.
pub fn rules() -> &'static [RuleMeta] {
    static METAS: std::sync::OnceLock<Vec<RuleMeta>> = std::sync::OnceLock::new();
    METAS.get_or_init(|| REGISTRY.iter().map(|(m, _)| *m).collect())
}

/// A rule by code or name (case-insensitive).
pub fn rule(code_or_name: &str) -> Option<&'static RuleMeta> {
    rules().iter().find(|m| {
        m.code.eq_ignore_ascii_case(code_or_name) || m.name.eq_ignore_ascii_case(code_or_name)
    })
}

#[cfg(test)]
mod cases;

/// Declare a rule: `declare_rule!(/// docs… NAME, "IR001", "name", Severity, "summary");`
macro_rules! declare_rule {
    ($(#[doc = $doc:expr])* $ident:ident, $code:literal, $name:literal, $sev:ident, $summary:literal) => {
        $(#[doc = $doc])*
        pub const $ident: $crate::finding::RuleMeta = $crate::finding::RuleMeta {
            code: $code,
            name: $name,
            default_severity: $crate::finding::Severity::$sev,
            summary: $summary,
            doc: concat!($($doc, "\n"),*),
        };
    };
}
pub(crate) use declare_rule;

/// The code of the rule that reports placeholders (run after the others).
pub const PLACEHOLDER_RULE: &str = unresolved_placeholder::RULE.code;

/// A rule's check over one workload: from the workload alone (`Pod`), or
/// also from what is around it (`Around`: its budgets and claims, its
/// namespace, a Deployment's progress deadline).
#[derive(Clone, Copy)]
pub enum Check {
    Pod(fn(&Workload<'_>, &mut Vec<Hit>)),
    Around(fn(&Workload<'_>, &Around<'_>, &mut Vec<Hit>)),
}

/// Every rule, in code order: (metadata, check).
pub static REGISTRY: [(RuleMeta, Check); 17] = [
    (
        skip_probe_serving::RULE,
        Check::Pod(skip_probe_serving::check),
    ),
    (surge_stall_gpu::RULE, Check::Pod(surge_stall_gpu::check)),
    (
        surge_stall_host_port::RULE,
        Check::Pod(surge_stall_host_port::check),
    ),
    (
        surge_needs_spare_node::RULE,
        Check::Pod(surge_needs_spare_node::check),
    ),
    (
        probe_not_registration::RULE,
        Check::Pod(probe_not_registration::check),
    ),
    (
        readiness_port_unknowable::RULE,
        Check::Pod(readiness_port_unknowable::check),
    ),
    (
        surge_without_readiness::RULE,
        Check::Pod(surge_without_readiness::check),
    ),
    (
        single_replica_gap::RULE,
        Check::Pod(single_replica_gap::check),
    ),
    (
        gpu_request_below_parallelism::RULE,
        Check::Pod(gpu_request_below_parallelism::check),
    ),
    (
        ready_probe_timeout_short::RULE,
        Check::Pod(ready_probe_timeout_short::check),
    ),
    (
        unresolved_placeholder::RULE,
        Check::Pod(unresolved_placeholder::check),
    ),
    (multinode_gap::RULE, Check::Pod(multinode_gap::check)),
    (
        budget_blocks_drain::RULE,
        Check::Around(budget_blocks_drain::check),
    ),
    (
        single_replica_no_budget::RULE,
        Check::Around(single_replica_no_budget::check),
    ),
    (
        surge_volume_attach::RULE,
        Check::Around(surge_volume_attach::check),
    ),
    (
        shutdown_budget_short::RULE,
        Check::Pod(shutdown_budget_short::check),
    ),
    (
        progress_deadline_short::RULE,
        Check::Around(progress_deadline_short::check),
    ),
];

/// What is around a workload: the budgets and claims of its source, its
/// namespace, and (for a Deployment) its progress deadline.
#[derive(Clone, Copy)]
pub struct Around<'a> {
    pub peers: &'a crate::peers::Peers,
    pub namespace: &'a str,
    pub progress: Option<Progress>,
}

/// A Deployment's `progressDeadlineSeconds` (600 unless written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub deadline: i64,
    pub written: bool,
}

/// The Deployment controller's default `progressDeadlineSeconds`.
pub const DEFAULT_PROGRESS_DEADLINE: i64 = 600;

impl Progress {
    /// The progress deadline of an apps/v1 Deployment object; None for
    /// other kinds, and when a placeholder or a non-number holds it.
    pub fn of(node: &infera_model::manifest::Node<'_>) -> Option<Progress> {
        use infera_model::manifest::Node;
        if node.get("kind").and_then(Node::as_str) != Some("Deployment") {
            return None;
        }
        match node
            .get("spec")
            .and_then(|s| s.get("progressDeadlineSeconds"))
        {
            None => Some(Progress {
                deadline: DEFAULT_PROGRESS_DEADLINE,
                written: false,
            }),
            Some(v) => v.to_json().as_i64().map(|deadline| Progress {
                deadline,
                written: true,
            }),
        }
    }
}

/// One rule's raw result: where (a path inside the object), what, how bad.
#[derive(Debug, Clone)]
pub struct Hit {
    pub code: &'static str,
    pub severity: Severity,
    pub path: Path,
    pub message: String,
    pub fix: Option<HitFix>,
    /// The finding is about the source's budget of this index
    /// ([`crate::peers::Peers::budgets`]): it points there, with its fix.
    pub at_budget: Option<usize>,
}

/// A rule's fix: merge patches at paths inside the object (see
/// [`crate::finding::Change`]), and what they do.
#[derive(Debug, Clone)]
pub struct HitFix {
    pub description: String,
    pub changes: Vec<(Path, serde_json::Value)>,
}

impl Hit {
    pub fn new(rule: &RuleMeta, severity: Severity, path: Path, message: String) -> Hit {
        Hit {
            code: rule.code,
            severity,
            path,
            message,
            fix: None,
            at_budget: None,
        }
    }

    /// The same hit with a fix.
    pub fn with_fix(
        mut self,
        description: impl Into<String>,
        changes: Vec<(Path, serde_json::Value)>,
    ) -> Hit {
        self.fix = Some(HitFix {
            description: description.into(),
            changes,
        });
        self
    }
}

/// A node of the inventory (`--nodes FILE`).
#[derive(Debug, Clone)]
pub struct InventoryNode {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// Allocatable extended resources (whole units), by name.
    pub gpus: BTreeMap<String, i64>,
    /// Free now (allocatable minus the requests of the pods bound to the
    /// node), when the inventory is live (`infera lint --cluster`).
    pub free: Option<BTreeMap<String, i64>>,
}

/// Cluster facts the capacity rules use.
#[derive(Debug, Clone, Default)]
pub struct Capacity {
    /// GPUs per node: as given, else the default (8).
    pub node_gpus: u32,
    /// True when `--node-gpus` or the config gave `node_gpus`; else the
    /// node labels a pod pins may say (see [`Workload::node_gpus`]).
    pub node_gpus_given: bool,
    pub inventory: Option<Vec<InventoryNode>>,
}

/// One analysed unit: an InferaDeployment service (as the operator renders
/// it), a Deployment or a LeaderWorkerSet, with the paths of its fields in
/// the source object.
pub struct Workload<'a> {
    pub kind: &'static str,
    pub name: String,
    pub service: Option<String>,
    pub role: Role,
    /// True for an InferaDeployment worker service, or a plain workload whose
    /// main container runs the infera engine.
    pub worker: bool,
    /// Serves traffic (engine entrypoint or flat fields), not idle-deployed.
    pub serving: bool,
    /// The model server the main container runs, from the engine catalogue
    /// (`infera_model::catalogue`): vLLM, SGLang, TGI, NIM, Triton or infera.
    pub engine: Option<infera_model::catalogue::Engine>,
    /// Pods the controller may take down before a replacement is Ready
    /// (maxUnavailable after upstream rounding; all of them for Recreate),
    /// when the kind's rollout is known.
    pub max_unavailable: Option<i64>,
    /// maxUnavailable as written, when the kind lets the manifest set it
    /// (a percentage is re-rounded for another replica count).
    pub max_unavailable_spec: Option<k8s_openapi::apimachinery::pkg::util::intstr::IntOrString>,
    pub replicas: Option<i32>,
    pub number_of_nodes: Option<i32>,
    pub roll: RollKind,
    /// Surge pods created at once when rolling surge-first (maxSurge after
    /// upstream rounding; 1 for an operator-rendered worker).
    pub max_surge: i64,
    /// Operator-predicted strategy (InferaDeployment only).
    pub strategy: Option<Strategy>,
    /// The operator generation the service was rendered as (InferaDeployment
    /// only): before #176 no worker surges and `/health` is the operator's
    /// own probe.
    pub generation: Option<Generation>,
    /// The pod as it will run (rendered by the operator for an InferaDeployment).
    pub pod: &'a PodSpec,
    /// Labels of the pod template.
    pub pod_labels: BTreeMap<String, String>,
    pub main: usize,
    pub readiness_port: ReadinessPort,
    pub skip_readiness_probe: bool,
    /// Where the service / workload lives in the object (`spec.services.S` or `spec`).
    pub base: Path,
    /// Where the pod spec fields live (`…extraPodSpec`, `spec.template.spec`),
    /// or None for flat fields (then `base`).
    pub pod_path: Option<Path>,
    /// Fields that hold unresolved placeholders (path inside the object, raw text).
    pub placeholders: Vec<(Path, String)>,
    pub capacity: &'a Capacity,
    /// GPUs the main container gets through DRA resource claims.
    pub claimed_gpus: ClaimedGpus,
    /// Verdicts a placeholder kept a rule from reaching: (what the
    /// placeholder stands for, rule code). Filled by [`Workload::unknown`]
    /// while the rules run; IR011 (run last) reports it.
    pub blocked: std::cell::RefCell<Vec<(Slot, &'static str)>>,
    /// A serving custom resource's rollout as its operator renders it, in
    /// the resource's own words (None for the kinds infera rolls itself
    /// and the apps/v1 kinds).
    pub crd: Option<CrdRollout>,
    /// The GPUs of the whole Ray cluster this pod belongs to (RayService,
    /// RayClusterFleet): an engine on Ray's distributed executor spreads
    /// over them, not over its own pod's. None elsewhere.
    pub ray_cluster_gpus: Option<i64>,
}

/// How a serving custom resource's operator rolls what it renders, in the
/// resource's own words, and which of its own fields a fix may write (a
/// field of the rendered Deployment the user cannot write is never a fix).
#[derive(Debug, Clone, Default)]
pub struct CrdRollout {
    /// What the operator renders and how that rolls, as the second half of
    /// a sentence naming the object: `its operator renders a Deployment
    /// with strategy Recreate (spec.deploymentConfig.deploymentStrategy)`.
    pub renders: String,
    /// The resource's field a rollout finding points at.
    pub field: Path,
    /// The resource's replica field, when a fix may set it.
    pub replicas: Option<Path>,
    /// A fix in the resource's own fields that keeps a pod serving through
    /// the rollout, and what it does.
    pub fix: Option<(String, Vec<(Path, serde_json::Value)>)>,
    /// What to do, when no fix can be written.
    pub advice: String,
    /// What the rollout replaces, counted (`replica(s)`, `RoleSet(s)`,
    /// `Ray cluster(s)`); None when the resource has no count of its own
    /// (a KAITO Workspace is one serving unit).
    pub unit: Option<&'static str>,
}

/// GPUs the main container gets through DRA, named as the device plugin
/// of the same vendor names them (`nvidia.com/gpu` for `gpu.nvidia.com`).
pub use infera_model::dra::ClaimedGpus;

/// What a placeholder stands for, as far as the rules are concerned: the
/// verdicts it can block follow from this, not from where it sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Slot {
    /// The one hostname the pod is pinned to (`nodeSelector`
    /// `kubernetes.io/hostname`, or required node affinity `In [one]`): one
    /// node whatever the value names, so it blocks no verdict.
    Host,
    /// Any other node selection (labels, affinity): where the pod may land.
    Selector,
    /// A GPU count or GPU resource name: the GPU arithmetic.
    Gpu,
    /// `replicas` or `numberOfNodes`.
    Count,
    /// A port: which port is bound, not whether one is.
    Port,
}

impl Slot {
    /// How IR011 names the slot.
    pub fn describe(self) -> &'static str {
        match self {
            Slot::Host => "the hostname the pod is pinned to",
            Slot::Selector => "the placement: node selector or affinity",
            Slot::Gpu => "the GPU request",
            Slot::Count => "the replica or node count",
            Slot::Port => "a port",
        }
    }
}

/// True when `raw` is an unresolved placeholder (`<X>`, `${X}`, `{{ … }}`).
pub fn is_placeholder(raw: &str) -> bool {
    infera_model::manifest::has_placeholder(raw)
}

impl Workload<'_> {
    /// True for an InferaDeployment service rendered by the operator
    /// before PR #176.
    pub fn pre_176(&self) -> bool {
        self.generation == Some(Generation::SurgeFree)
    }

    pub fn main_container(&self) -> Option<&Container> {
        self.pod.containers.get(self.main)
    }

    /// `decode (pd service decode)`, `deployment foo`, or
    /// `dynamographdeployment g service decode`: how messages name the
    /// workload, in the manifest's own words (a role only where the
    /// manifest has one: an InferaDeployment service).
    pub fn who(&self) -> String {
        match &self.service {
            Some(s) if self.kind == "InferaDeployment" => {
                format!("{} ({} service {s})", self.role, self.name)
            }
            // A serving resource's parts are its roles (StormService) or
            // workloads (LLMInferenceService `prefill`).
            Some(s) if self.crd.is_some() => {
                format!("{} {} role {s}", self.kind.to_lowercase(), self.name)
            }
            Some(s) => format!("{} {} service {s}", self.kind.to_lowercase(), self.name),
            None => format!("{} {}", self.kind.to_lowercase(), self.name),
        }
    }

    /// What loses its serving pods, as the subject of a message's second
    /// clause: the role of an InferaDeployment service, else `it` (the
    /// workload [`Workload::who`] named at the start).
    pub fn subject(&self) -> String {
        if self.kind == "InferaDeployment" {
            self.role.to_string()
        } else {
            "it".to_string()
        }
    }

    /// Path of a pod-spec field in the source (falls back to the base).
    pub fn pod_field(&self, segs: &[&str]) -> Path {
        match &self.pod_path {
            Some(p) => join(p, segs),
            None => self.base.clone(),
        }
    }

    /// Path of a field of the main container in the source.
    pub fn main_field(&self, segs: &[&str]) -> Path {
        match &self.pod_path {
            Some(p) => {
                let mut path = join(p, &["containers"]);
                path.push(Seg::Index(self.main));
                join(&path, segs)
            }
            None => self.base.clone(),
        }
    }

    /// Path of a service-level field (InferaDeployment) or the base.
    pub fn base_field(&self, segs: &[&str]) -> Path {
        join(&self.base, segs)
    }

    /// What the placeholder at `path` stands for, or None when no rule
    /// reads that field (a memory request, a CPU limit).
    pub fn slot_of(&self, path: &Path, raw: &str) -> Option<Slot> {
        let has = |needle: &str| path.iter().any(|s| matches!(s, Seg::Key(k) if k == needle));
        let last = path.iter().rev().find_map(|s| match s {
            Seg::Key(k) => Some(k.as_str()),
            Seg::Index(_) => None,
        });
        if has("nodeSelector") || has("affinity") {
            let pin = self.pinned_host();
            return Some(match pin {
                Some((host, _)) if host == raw => Slot::Host,
                _ => Slot::Selector,
            });
        }
        if has("resources") {
            let gpu = last.is_some_and(|k| {
                k == "gpu" || k == "gpuType" || infera_model::worker::is_gpu_resource(k)
            });
            return gpu.then_some(Slot::Gpu);
        }
        if has("replicas") || has("numberOfNodes") {
            return Some(Slot::Count);
        }
        (has("ports") || has("port")).then_some(Slot::Port)
    }

    /// True when a placeholder stands for `slot`; then `code` could not
    /// reach its verdict, which is recorded for IR011.
    pub fn unknown(&self, slot: Slot, code: &'static str) -> bool {
        let found = self
            .placeholders
            .iter()
            .any(|(p, raw)| self.slot_of(p, raw) == Some(slot));
        if found {
            let mut blocked = self.blocked.borrow_mut();
            if !blocked.contains(&(slot, code)) {
                blocked.push((slot, code));
            }
        }
        found
    }

    /// True when a placeholder stands for a whole node selection
    /// (`nodeSelector: ${SEL}`), which might pin the pod to one node; then
    /// `code` could not decide whether it is pinned (recorded for IR011).
    pub fn pin_unknown(&self, code: &'static str) -> bool {
        let whole = self.placeholders.iter().any(|(p, _)| {
            matches!(p.last(), Some(Seg::Key(k)) if k == "nodeSelector" || k == "affinity" || k == "nodeAffinity")
        });
        whole && self.unknown(Slot::Selector, code)
    }

    /// How messages name the node a pinned pod must land on: `node gpu-7`,
    /// or `one node (whichever `<PREFILL_NODE>` names)`.
    pub fn pin_phrase(host: &str) -> String {
        if is_placeholder(host) {
            format!("one node (whichever `{host}` names)")
        } else {
            format!("node {host}")
        }
    }

    /// GPUs per node for this pod, and the pinned label that said so (None
    /// when the flag, the config or the default did): `--node-gpus` or the
    /// config when given, else the GKE/EKS/AKS node labels the pod pins
    /// (`infera_model::accelerator`), else the default.
    pub fn node_gpus(&self) -> (u32, Option<String>) {
        let default = (self.capacity.node_gpus, None);
        if self.capacity.node_gpus_given {
            return default;
        }
        let pod_gpus = self.gpu_request().map_or(1, |(_, n)| n);
        infera_model::accelerator::node_gpus(|k| self.pinned_label(k), pod_gpus)
            .map_or(default, |n| (n.gpus, Some(n.because)))
    }

    /// The one value a node label must have for the pod to land: its
    /// `nodeSelector`, else a required node affinity term `In [value]`.
    pub fn pinned_label(&self, key: &str) -> Option<&str> {
        if let Some(v) = self.pod.node_selector.as_ref().and_then(|m| m.get(key)) {
            return Some(v.as_str()).filter(|v| !is_placeholder(v));
        }
        let terms = &self
            .pod
            .affinity
            .as_ref()?
            .node_affinity
            .as_ref()?
            .required_during_scheduling_ignored_during_execution
            .as_ref()?
            .node_selector_terms;
        let [term] = terms.as_slice() else {
            return None;
        };
        term.match_expressions.iter().flatten().find_map(|e| {
            let values = e.values.as_deref()?;
            match values {
                [v] if e.key == key && e.operator == "In" && !is_placeholder(v) => Some(v.as_str()),
                _ => None,
            }
        })
    }

    /// GPUs the main container requests (requests, else limits, else its
    /// DRA claims), by resource name.
    pub fn gpu_request(&self) -> Option<(String, i64)> {
        let c = self.main_container()?;
        let maps = c
            .resources
            .as_ref()
            .map(|res| [res.requests.as_ref(), res.limits.as_ref()])
            .unwrap_or_default();
        for map in maps.into_iter().flatten() {
            for (k, v) in map {
                if infera_model::worker::is_gpu_resource(k)
                    && let Some(n) = infera_model::worker::whole_quantity(&v.0)
                {
                    return Some((k.clone(), n));
                }
            }
        }
        match &self.claimed_gpus {
            ClaimedGpus::Known(name, n) => Some((name.clone(), *n)),
            _ => None,
        }
    }

    /// The single hostname the pod is pinned to (nodeSelector or required
    /// node affinity `In [one]`), with the source path of the pin.
    pub fn pinned_host(&self) -> Option<(String, Path)> {
        const HOST: &str = "kubernetes.io/hostname";
        if let Some(h) = self.pod.node_selector.as_ref().and_then(|m| m.get(HOST)) {
            return Some((h.clone(), self.pod_field(&["nodeSelector", HOST])));
        }
        let terms = &self
            .pod
            .affinity
            .as_ref()?
            .node_affinity
            .as_ref()?
            .required_during_scheduling_ignored_during_execution
            .as_ref()?
            .node_selector_terms;
        if terms.len() != 1 {
            return None;
        }
        let exprs = terms.first()?.match_expressions.as_ref()?;
        exprs.iter().find_map(|e| {
            let vals = e.values.as_ref()?;
            (e.key == HOST && e.operator == "In" && vals.len() == 1).then(|| {
                (
                    vals[0].clone(),
                    self.pod_field(&["affinity", "nodeAffinity"]),
                )
            })
        })
    }

    /// Host ports the pod binds (hostNetwork turns container ports into host ports).
    pub fn host_ports(&self) -> Vec<i32> {
        let host_network = self.pod.host_network == Some(true);
        let mut ports: Vec<i32> = self
            .pod
            .containers
            .iter()
            .flat_map(|c| c.ports.iter().flatten())
            .filter_map(|p| {
                if host_network {
                    Some(p.host_port.unwrap_or(p.container_port))
                } else {
                    p.host_port.filter(|&h| h > 0)
                }
            })
            .collect();
        ports.sort_unstable();
        ports.dedup();
        ports
    }

    /// True when the pod's required anti-affinity on hostname matches its own
    /// labels (a null selector matches no pod, an empty one every pod).
    pub fn anti_affine_to_itself(&self, own_labels: &BTreeMap<String, String>) -> bool {
        let Some(terms) = self
            .pod
            .affinity
            .as_ref()
            .and_then(|a| a.pod_anti_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
        else {
            return false;
        };
        terms.iter().any(|t| {
            t.topology_key == "kubernetes.io/hostname"
                && t.label_selector
                    .as_ref()
                    .is_some_and(|sel| label_selector_matches(sel, own_labels))
        })
    }
}

fn join(base: &Path, segs: &[&str]) -> Path {
    let mut p = base.clone();
    p.extend(segs.iter().map(|s| Seg::Key((*s).to_string())));
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_codes_are_unique_and_ordered() {
        let codes: Vec<_> = REGISTRY.iter().map(|(m, _)| m.code).collect();
        let mut sorted = codes.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(codes, sorted);
        for (m, _) in &REGISTRY {
            assert!(
                m.doc.contains("## What it does"),
                "{} lacks its page",
                m.code
            );
            assert!(m.doc.contains("## Why is this bad?"), "{}", m.code);
        }
    }
}
