//! The drain plan: every pod on the draining node(s), grouped by owner and
//! role, and one verdict per workload — `evict`, `move`, `GAP` or `STALL` —
//! with the reason. Pure: [`super::gather`] reads the cluster, [`decide`]
//! judges what it read, so the verdicts are unit-tested without a cluster.
//!
//! The preference order is the issue's: a pod whose role keeps
//! `--min-ready` Ready and routable pods without it is **evicted** (never a
//! restart of a whole multi-replica workload to move one pod); otherwise an
//! InferaDeployment's or Deployment's worker is **moved** (a surge-first
//! restart through the owner, the replacement Ready and routable on another
//! node before the old pod goes) when the rollout preflight's own verdict
//! ([`crate::plan::verdict`]) allows it with the draining nodes excluded;
//! anything else is a **GAP**. An eviction a PodDisruptionBudget can never
//! allow ([`infera_model::pdb::never_allows`]) is a **STALL**.

use comfy_table::{Cell, Table};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::Value;

use crate::plan::{Capacity, LegPlan, Verdict, plan_table, role_rank, surge_capacity, verdict};
use infera_audit::RoleSpec;
use infera_model::pod::{is_ready, is_serving};
use infera_model::rolling::Roll;
use infera_model::selector::Selector;

/// What owns a pod on a draining node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerKind {
    InferaDeployment,
    Deployment,
    StatefulSet,
    LeaderWorkerSet,
}

impl OwnerKind {
    /// kubectl's short spelling.
    pub fn short(self) -> &'static str {
        match self {
            OwnerKind::InferaDeployment => "idep",
            OwnerKind::Deployment => "deploy",
            OwnerKind::StatefulSet => "sts",
            OwnerKind::LeaderWorkerSet => "lws",
        }
    }

    /// Whether drain may restart it through its owner (InferaDeployments
    /// and Deployments; StatefulSets and LeaderWorkerSets are only evicted).
    pub fn movable(self) -> bool {
        matches!(self, OwnerKind::InferaDeployment | OwnerKind::Deployment)
    }
}

/// A serving workload with a pod on a draining node, as read from the
/// cluster.
#[derive(Debug, Clone)]
pub struct Workload {
    pub namespace: String,
    pub kind: OwnerKind,
    /// The owner's name (the InferaDeployment, Deployment, StatefulSet or
    /// LeaderWorkerSet).
    pub name: String,
    /// The InferaDeployment service (`None` for the other kinds).
    pub leg: Option<String>,
    pub role: String,
    pub replicas: u32,
    /// How a restart replaces its pods (movable kinds).
    pub strategy: Option<Roll>,
    /// The pod template (wire JSON) a replacement is built from.
    pub template: Value,
    /// The pods counting for the role (in `namespace`), as the audit
    /// counts them.
    pub role_spec: RoleSpec,
    /// The label selector of this workload's own pods.
    pub selector: Selector,
    /// The operator generation its worker Deployment shows (InferaDeployments).
    pub generation: Option<String>,
}

impl Workload {
    /// `idep/llama decode`, `deploy/web`, `sts/db`.
    pub fn label(&self) -> String {
        match &self.leg {
            Some(leg) => format!("{}/{} {leg}", self.kind.short(), self.name),
            None => format!("{}/{}", self.kind.short(), self.name),
        }
    }

    /// The key the resume state records (namespace, owner and leg).
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.label().replace(' ', "/"))
    }
}

/// What drain does with one pod that belongs to no serving workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodAction {
    /// Evicted through the Eviction API.
    Evict,
    /// Left where it is (a DaemonSet pod with `--ignore-daemonsets`, a
    /// mirror pod, a pod `--pod-selector` does not select, a finished pod
    /// that is deleted by nobody).
    Skip(String),
    /// kubectl drain's refusals: cannot go on without the flag named.
    Refuse(String),
}

/// A pod on a draining node.
#[derive(Debug, Clone)]
pub struct NodePod {
    pub namespace: String,
    pub name: String,
    pub node: String,
    /// Index into [`Inventory::workloads`].
    pub workload: Option<usize>,
    /// Owner as `kind/name` (or `none`), for the plan.
    pub owner: String,
    pub action: PodAction,
}

/// Everything the plan is built from (one read of the cluster).
#[derive(Debug, Clone, Default)]
pub struct Inventory {
    /// The draining nodes, by name.
    pub draining: Vec<String>,
    /// Every node (for capacity).
    pub nodes: Vec<Node>,
    /// Every pod (for capacity and the role counts).
    pub pods: Vec<Pod>,
    pub pdbs: Vec<PodDisruptionBudget>,
    pub workloads: Vec<Workload>,
    pub on_nodes: Vec<NodePod>,
    /// API requests made to read all this.
    pub requests: u32,
}

/// A PodDisruptionBudget covering a workload's pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetView {
    pub name: String,
    /// `status.disruptionsAllowed` as the disruption controller wrote it.
    pub allowed: i32,
    /// It allows no disruption even with every replica healthy.
    pub never: bool,
}

/// Which path a workload takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DrainPath {
    Evict,
    Move,
    Gap,
    Stall,
}

impl DrainPath {
    pub fn label(&self) -> &'static str {
        match self {
            DrainPath::Evict => "evict",
            DrainPath::Move => "move",
            DrainPath::Gap => "GAP",
            DrainPath::Stall => "STALL",
        }
    }
    pub fn blocks(&self) -> bool {
        matches!(self, DrainPath::Gap | DrainPath::Stall)
    }
}

/// One workload's line of the plan.
#[derive(Debug, Clone)]
pub struct UnitPlan {
    /// Index into [`Inventory::workloads`].
    pub workload: usize,
    pub label: String,
    pub namespace: String,
    pub role: String,
    pub replicas: u32,
    /// Its pods on the draining nodes.
    pub pods: Vec<String>,
    /// Ready and routable pods of the role now, and without the pods on the
    /// draining nodes.
    pub ready_now: u32,
    pub ready_without: u32,
    /// Room for a replacement with the draining nodes excluded.
    pub capacity: Capacity,
    pub budgets: Vec<BudgetView>,
    pub generation: String,
    pub path: DrainPath,
    pub why: String,
    /// What the plan reports of lint's live-only rules (IR014: a single
    /// replica no budget covers), `CODE name: message`. Shown; never a
    /// change of the verdict.
    pub findings: Vec<String>,
}

/// The whole plan.
#[derive(Debug, Clone)]
pub struct DrainPlan {
    pub nodes: Vec<String>,
    pub units: Vec<UnitPlan>,
    /// Pods of no serving workload, and what happens to each.
    pub others: Vec<NodePod>,
    pub min_ready: u32,
    /// API requests the plan took.
    pub requests: u32,
}

/// Flags that change the plan.
#[derive(Debug, Clone, Default)]
pub struct PlanFlags {
    pub min_ready: u32,
    /// Workload keys an earlier, interrupted run started moving: they are
    /// moved again (the rollout resumes) whatever the counts say now.
    pub moving: Vec<String>,
}

fn labels_match(want: &Selector, pod: &Pod) -> bool {
    want.matches_labels(pod.metadata.labels.as_ref())
}

fn pod_node(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref())
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Ready, and routable where it is an infera worker (what the audit's
/// floor counts).
fn up(pod: &Pod) -> bool {
    is_ready(pod) && is_serving(pod)
}

/// The PodDisruptionBudgets of `namespace` selecting any of `pods`.
fn budgets(inv: &Inventory, w: &Workload, pods: &[&Pod]) -> Vec<BudgetView> {
    inv.pdbs
        .iter()
        .filter(|b| b.metadata.namespace.as_deref() == Some(w.namespace.as_str()))
        .filter_map(|b| {
            let spec = b.spec.as_ref()?;
            let selects = pods.iter().any(|p| {
                let labels = p.metadata.labels.clone().unwrap_or_default();
                infera_model::pdb::selects(spec, &labels)
            });
            selects.then(|| BudgetView {
                name: b.metadata.name.clone().unwrap_or_default(),
                allowed: b.status.as_ref().map_or(0, |s| s.disruptions_allowed),
                never: infera_model::pdb::never_allows(
                    spec,
                    i32::try_from(w.replicas).unwrap_or(i32::MAX),
                ),
            })
        })
        .collect()
}

/// Judge one workload (see the module docs).
pub fn decide_unit(inv: &Inventory, index: usize, flags: &PlanFlags) -> Option<UnitPlan> {
    let w = inv.workloads.get(index)?;
    let in_ns = |p: &&Pod| p.metadata.namespace.as_deref() == Some(w.namespace.as_str());
    let draining = |p: &Pod| pod_node(p).is_some_and(|n| inv.draining.iter().any(|d| d == n));
    let role_pods: Vec<&Pod> = (inv.pods.iter().filter(in_ns))
        .filter(|p| w.role_spec.matches(p))
        .collect();
    let own_on_node: Vec<&Pod> = (inv.pods.iter().filter(in_ns))
        .filter(|p| labels_match(&w.selector, p) && draining(p))
        .collect();
    if own_on_node.is_empty() {
        return None;
    }
    let ready_now = count(role_pods.iter().filter(|p| up(p)).count());
    let ready_without = count(role_pods.iter().filter(|p| up(p) && !draining(p)).count());
    let own_ready_off = count(
        (inv.pods.iter().filter(in_ns))
            .filter(|p| labels_match(&w.selector, p) && up(p) && !draining(p))
            .count(),
    );
    let nodes: Vec<Node> = (inv.nodes.iter())
        .filter(|n| {
            !inv.draining
                .iter()
                .any(|d| Some(d) == n.metadata.name.as_ref())
        })
        .cloned()
        .collect();
    let capacity = surge_capacity(&w.template, &w.namespace, &nodes, &inv.pods);
    let budgets = budgets(inv, w, &own_on_node);
    let (path, why) = judge(w, flags, &capacity, &budgets, ready_without, own_ready_off);
    let findings = single_replica_finding(inv, w, &own_on_node)
        .into_iter()
        .collect();
    Some(UnitPlan {
        workload: index,
        label: w.label(),
        namespace: w.namespace.clone(),
        role: w.role.clone(),
        replicas: w.replicas,
        pods: own_on_node
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect(),
        ready_now,
        ready_without,
        capacity,
        budgets,
        generation: w.generation.clone().unwrap_or_else(|| "-".into()),
        path,
        why,
        findings,
    })
}

/// IR014, which only a reader of every budget may report: the plan has
/// listed them all. `None` unless a single-replica serving workload's pod
/// is selected by no budget of its namespace.
fn single_replica_finding(inv: &Inventory, w: &Workload, pods: &[&Pod]) -> Option<String> {
    use infera_lint::rules::single_replica_no_budget::{RULE, message};
    let labels = pods.first()?.metadata.labels.clone().unwrap_or_default();
    let all: Vec<infera_model::pdb::Budget> = (inv.pdbs.iter())
        .filter_map(|b| {
            Some(infera_model::pdb::Budget {
                namespace: b.metadata.namespace.clone()?,
                name: b.metadata.name.clone()?,
                spec: b.spec.clone()?,
            })
        })
        .collect();
    let replicas = i32::try_from(w.replicas).unwrap_or(i32::MAX);
    infera_model::pdb::unprotected_single_replica(replicas, &all, &w.namespace, &labels)
        .then(|| format!("{} {}: {}", RULE.code, RULE.name, message(&w.label())))
}

/// The verdict and its reason. `own_ready_off`: this workload's Ready and
/// routable pods off the draining nodes (the rest of the role, which keeps
/// serving during a move, is `ready_without` less these).
fn judge(
    w: &Workload,
    flags: &PlanFlags,
    capacity: &Capacity,
    budgets: &[BudgetView],
    ready_without: u32,
    own_ready_off: u32,
) -> (DrainPath, String) {
    let min = flags.min_ready;
    if w.kind.movable() && flags.moving.contains(&w.key()) {
        return (
            DrainPath::Move,
            "an earlier run started moving it: the rollout resumes (never restarted twice)".into(),
        );
    }
    if ready_without >= min {
        if let Some(b) = budgets.iter().find(|b| b.never) {
            return (
                DrainPath::Stall,
                format!(
                    "PodDisruptionBudget {} allows no disruption even with all {} replica(s) healthy: every eviction is refused (429) for as long as it stands",
                    b.name, w.replicas
                ),
            );
        }
        return (
            DrainPath::Evict,
            format!(
                "role {} keeps {ready_without} Ready and routable pod(s) without it (>= --min-ready {min})",
                w.role
            ),
        );
    }
    let short = format!(
        "evicting leaves role {} with {ready_without} Ready and routable pod(s) (< --min-ready {min}) for the replacement's whole start",
        w.role
    );
    let Some(strategy) = w.strategy.filter(|_| w.kind.movable()) else {
        return (
            DrainPath::Gap,
            format!(
                "{short}; a {} is evicted, never restarted as a whole",
                match w.kind {
                    OwnerKind::LeaderWorkerSet => "LeaderWorkerSet",
                    _ => "StatefulSet",
                }
            ),
        );
    };
    let leg = LegPlan {
        leg: w.leg.clone().unwrap_or_else(|| w.name.clone()),
        role: w.role.clone(),
        workload: w.label(),
        replicas: w.replicas,
        ready_short_of_serving: crate::plan::ready_short_of_serving(&w.template),
        capacity: capacity.clone(),
        strategy,
        why: String::new(),
        findings: Vec::new(),
        verdict: Verdict::Ok,
        readiness_port: None,
        selector: w.selector.clone(),
    };
    let others = ready_without.saturating_sub(own_ready_off);
    match verdict(&leg, others, min) {
        Verdict::Ok => (
            DrainPath::Move,
            format!(
                "{short}; a surge-first restart through the owner puts the replacement on {} first",
                capacity.describe().trim_start_matches("room on ")
            ),
        ),
        Verdict::Stall(_) => (
            DrainPath::Gap,
            format!(
                "{short}, and no spare capacity with the draining node(s) excluded: {}",
                capacity.describe()
            ),
        ),
        Verdict::Gap(reason) => (
            DrainPath::Gap,
            format!("{short}, and a restart would too: {reason}"),
        ),
    }
}

/// Build the plan from what [`super::gather`] read.
pub fn decide(inv: &Inventory, flags: &PlanFlags) -> DrainPlan {
    let mut units: Vec<UnitPlan> = (0..inv.workloads.len())
        .filter_map(|i| decide_unit(inv, i, flags))
        .collect();
    units.sort_by(|a, b| (role_rank(&a.role), &a.label).cmp(&(role_rank(&b.role), &b.label)));
    DrainPlan {
        nodes: inv.draining.clone(),
        units,
        others: inv
            .on_nodes
            .iter()
            .filter(|p| p.workload.is_none())
            .cloned()
            .collect(),
        min_ready: flags.min_ready,
        requests: inv.requests,
    }
}

impl DrainPlan {
    /// Workloads predicted GAP or STALL.
    pub fn blocking(&self) -> Vec<&UnitPlan> {
        self.units.iter().filter(|u| u.path.blocks()).collect()
    }

    /// kubectl drain's refusals (pods it cannot delete without a flag).
    pub fn refusals(&self) -> Vec<String> {
        self.others
            .iter()
            .filter_map(|p| match &p.action {
                PodAction::Refuse(why) => Some(format!("{}/{}: {why}", p.namespace, p.name)),
                _ => None,
            })
            .collect()
    }

    pub fn refusal(&self) -> String {
        "Stopping before any change: the plan predicts a GAP or a STALL (see above). \
         Fix it (spare capacity, a surge-first strategy, a PodDisruptionBudget that allows a disruption), \
         or rerun with `--force` to drain anyway and watch it happen."
            .to_string()
    }

    pub fn table(&self) -> Table {
        let mut table = plan_table(160);
        table.set_header(vec![
            "workload",
            "namespace",
            "role",
            "replicas",
            "pods on node",
            "Ready without",
            "replacement fits",
            "PDBs (allowed)",
            "operator",
            "verdict",
        ]);
        for u in &self.units {
            let budgets = if u.budgets.is_empty() {
                "none".to_string()
            } else {
                (u.budgets.iter())
                    .map(|b| format!("{} ({})", b.name, b.allowed))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            table.add_row(vec![
                Cell::new(&u.label),
                Cell::new(&u.namespace),
                Cell::new(&u.role),
                Cell::new(u.replicas),
                Cell::new(u.pods.join("\n")),
                Cell::new(format!("{} of {}", u.ready_without, u.ready_now)),
                Cell::new(u.capacity.describe()),
                Cell::new(budgets),
                Cell::new(&u.generation),
                Cell::new(u.path.label()),
            ]);
        }
        table
    }

    /// The plan as text: header, table, each workload's path and why, the
    /// other pods.
    pub fn render(&self) -> String {
        let mut lines = vec![
            format!(
                "Drain plan for node(s) {} (--min-ready {}; {} API requests to plan):",
                self.nodes.join(", "),
                self.min_ready,
                self.requests
            ),
            self.table().to_string(),
        ];
        for u in &self.units {
            lines.push(format!("  {} → {}: {}", u.label, u.path.label(), u.why));
            for f in &u.findings {
                lines.push(format!("    warning {f}"));
            }
        }
        for p in &self.others {
            let what = match &p.action {
                PodAction::Evict => "evict".to_string(),
                PodAction::Skip(why) => format!("skip ({why})"),
                PodAction::Refuse(why) => format!("cannot drain: {why}"),
            };
            lines.push(format!(
                "  {}/{} ({}): {what}",
                p.namespace, p.name, p.owner
            ));
        }
        lines.join("\n")
    }
}

#[cfg(test)]
mod tests;
