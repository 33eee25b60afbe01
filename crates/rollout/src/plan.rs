//! Preflight: the plan table printed before anything changes.
//!
//! For every leg: the strategy the workload will roll with, whether some
//! eligible node has room for the surge pod right now
//! ([`infera_model::scheduling::fit_pod`] over the live nodes and the pods bound to
//! them), the lint findings for the live objects, and a verdict. A predicted
//! stall or gap stops the rollout unless `--force`.
//!
//! Default leg order: **decode, then prefill, then mixed** (then name order).
//! The PD barrier (operator-semantics §4) is asymmetric: a starting decode
//! never waits — one verified registered prefill is enough, and the old
//! prefill still provides it — while a starting prefill *waits* until it has
//! moved a real KV block to a registered decode. Rolling decode first means
//! that when the prefill leg starts its decode side has settled (replaced and
//! registered), so the prefill barrier is never waiting on a decode that is
//! itself mid-replacement, and the last leg exercises the new prefill → new
//! decode path with a real KV transfer before the last old pod retires.

use comfy_table::{Cell, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use k8s_openapi::api::core::v1::{Node, Pod, PodTemplateSpec};
use serde_json::Value;

use infera_model::rolling::{Roll, int_or_string};
use infera_model::scheduling::{count_reasons, failed_scheduling_message, fit_pod};
use infera_model::selector::Selector;

/// The strategy of an apps/v1 Deployment object (operator-semantics §3:
/// upstream arithmetic, both 0 → maxUnavailable 1; see [`infera_model::rolling`]).
pub fn deployment_strategy(dep: &Value) -> Roll {
    let strategy = dep.pointer("/spec/strategy");
    let rolling = strategy.and_then(|s| s.get("rollingUpdate"));
    let field = |name: &str| rolling.and_then(|r| r.get(name)).and_then(int_or_string);
    Roll::deployment(
        strategy.and_then(|s| s.get("type")).and_then(Value::as_str),
        field("maxSurge").as_ref(),
        field("maxUnavailable").as_ref(),
        i64::from(replicas_of(dep)),
    )
}

/// The strategy of a LeaderWorkerSet object (the LeaderWorkerSet's
/// defaults where absent: maxSurge 0, maxUnavailable 1).
pub fn lws_strategy(lws: &Value) -> Roll {
    let rolling = lws.pointer("/spec/rolloutStrategy/rollingUpdateConfiguration");
    let field = |name: &str| rolling.and_then(|r| r.get(name)).and_then(int_or_string);
    Roll::lws(
        field("maxSurge").as_ref(),
        field("maxUnavailable").as_ref(),
        i64::from(replicas_of(lws)),
    )
}

pub fn replicas_of(obj: &Value) -> u32 {
    obj.pointer("/spec/replicas")
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(1)
}

/// Why Ready on the pods of a pod template (wire JSON) falls short of
/// serving, or `None` when it means serving: the model's one rule
/// ([`infera_model::pod::ready_short_of_serving`]); a template that cannot
/// be read shows nothing, so it falls short.
pub fn ready_short_of_serving(template: &Value) -> Option<String> {
    use serde::Deserialize;
    match PodTemplateSpec::deserialize(template) {
        Ok(PodTemplateSpec {
            spec: Some(spec), ..
        }) => infera_model::pod::ready_short_of_serving(&spec),
        _ => Some("its pod template cannot be read".to_string()),
    }
}

/// Room for one more pod of this template on some node, right now?
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capacity {
    /// This node could take the surge pod.
    Room(String),
    /// No node could: the scheduler's own wording.
    NoRoom(String),
    /// The leg does not surge (the old pod goes first).
    NotNeeded,
    /// The inventory could not be read.
    Unknown(String),
}

impl Capacity {
    pub fn describe(&self) -> String {
        match self {
            Capacity::Room(node) => format!("room on {node}"),
            Capacity::NoRoom(message) => format!("no room: {message}"),
            Capacity::NotNeeded => "not needed (no surge pod)".into(),
            Capacity::Unknown(why) => format!("unknown ({why})"),
        }
    }
}

/// Where a surge pod built from `template` (a pod template as wire JSON,
/// namespace `namespace`) could go, given the live nodes and every pod.
pub fn surge_capacity(template: &Value, namespace: &str, nodes: &[Node], pods: &[Pod]) -> Capacity {
    let mut pod_json = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": template.get("metadata").cloned().unwrap_or(Value::Null),
        "spec": template.get("spec").cloned().unwrap_or(Value::Null),
    });
    pod_json["metadata"]["namespace"] = Value::String(namespace.to_string());
    let surge: Pod = match serde_json::from_value(pod_json) {
        Ok(pod) => pod,
        Err(e) => return Capacity::Unknown(format!("the pod template does not parse: {e}")),
    };
    let bound: Vec<&Pod> = pods.iter().collect();
    let mut per_node: Vec<Vec<infera_model::scheduling::UnfitReason>> = Vec::new();
    for node in nodes {
        let name = node.metadata.name.clone().unwrap_or_default();
        let on_node: Vec<&Pod> = pods
            .iter()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(name.as_str()))
            .collect();
        match fit_pod(&surge, node, &on_node, &bound) {
            Ok(()) => return Capacity::Room(name),
            Err(reasons) => per_node.push(reasons),
        }
    }
    let counts = count_reasons(per_node.iter().map(Vec::as_slice));
    Capacity::NoRoom(failed_scheduling_message(nodes.len(), &counts))
}

/// What the preflight expects of a leg.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    /// The surge pod has nowhere to go: the rollout will stall (old pods keep serving).
    Stall(String),
    /// The role will have fewer than `--min-ready` Ready or routable pods.
    Gap(String),
}

impl Verdict {
    pub fn blocks(&self) -> bool {
        !matches!(self, Verdict::Ok)
    }
    pub fn label(&self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Stall(_) => "STALL",
            Verdict::Gap(_) => "GAP",
        }
    }
    pub fn reason(&self) -> &str {
        match self {
            Verdict::Ok => "",
            Verdict::Stall(r) | Verdict::Gap(r) => r,
        }
    }
}

/// A lint finding, as much of it as the plan shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanFinding {
    pub code: String,
    pub severity: String,
    pub message: String,
}

/// One leg of the plan.
#[derive(Debug, Clone)]
pub struct LegPlan {
    pub leg: String,
    pub role: String,
    /// The workload the pods come from (`deploy/qwen-decode`).
    pub workload: String,
    pub replicas: u32,
    pub strategy: Roll,
    /// Why the operator chose it (from its model), or empty.
    pub why: String,
    /// Why Ready on these pods falls short of serving (`None`: it means
    /// serving), from [`ready_short_of_serving`].
    pub ready_short_of_serving: Option<String>,
    pub capacity: Capacity,
    pub findings: Vec<PlanFinding>,
    pub verdict: Verdict,
    /// Port of the worker's `/ready` endpoint, when knowable.
    pub readiness_port: Option<u16>,
    /// The label selector of exactly this leg's pods.
    pub selector: Selector,
}

/// Decide a leg's verdict. `others_in_role`: replicas of other services of
/// the same role that keep serving during this leg.
pub fn verdict(leg: &LegPlan, others_in_role: u32, min_ready: u32) -> Verdict {
    let unavailable = leg.strategy.unavailable(leg.replicas);
    let kept = leg.replicas.saturating_sub(unavailable) + others_in_role;
    if unavailable > 0 && kept < min_ready {
        return Verdict::Gap(format!(
            "{} lets {unavailable} old pod(s) go before the replacement is Ready: role {} keeps {kept} Ready pod(s) (< {min_ready}) for the whole restart",
            leg.strategy.describe(),
            leg.role
        ));
    }
    if leg.strategy.surges() {
        if let Capacity::NoRoom(message) = &leg.capacity {
            return Verdict::Stall(format!(
                "the surge pod cannot be scheduled ({message}); the rollout would wait with the old pod serving and never finish"
            ));
        }
        if let Some(why) = &leg.ready_short_of_serving
            && others_in_role + leg.replicas.saturating_sub(1) < min_ready
        {
            return Verdict::Gap(format!(
                "{why}, so the old pod is retired while role {} has nothing routable",
                leg.role
            ));
        }
    }
    if let Some(f) = leg.findings.iter().find(|f| f.severity == "error") {
        return Verdict::Gap(format!("lint {}: {}", f.code, f.message));
    }
    Verdict::Ok
}

/// An empty plan table in the house style, `width` columns wide.
pub fn plan_table(width: u16) -> Table {
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(width);
    table
}

/// Where a role's leg goes in the default order (see the module docs).
pub fn role_rank(role: &str) -> u8 {
    match role {
        "decode" => 0,
        "prefill" => 1,
        "mixed" => 2,
        _ => 3,
    }
}

/// Order legs: explicit `--order` first (in its order), then decode,
/// prefill, mixed, others, each by name (see the module docs).
pub fn order_legs(mut legs: Vec<(String, String)>, order: &[String]) -> Vec<String> {
    let rank = role_rank;
    legs.sort_by(|(a_name, a_role), (b_name, b_role)| {
        let pos = |n: &String| order.iter().position(|o| o == n).unwrap_or(usize::MAX);
        (pos(a_name), rank(a_role), a_name).cmp(&(pos(b_name), rank(b_role), b_name))
    });
    legs.into_iter().map(|(name, _)| name).collect()
}

/// A role's pods serving now, as the preflight's pod list shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleNow {
    pub role: String,
    /// (Ready, routable) pods of the role; `None`: the pods could not be
    /// listed.
    pub counts: Option<(u32, u32)>,
}

impl RoleNow {
    /// Whether the role is already below `floor` in either count.
    pub fn below(&self, floor: u32) -> bool {
        self.counts.is_some_and(|(r, rt)| r < floor || rt < floor)
    }

    /// `decode 1/1`, `prefill 0/0 (below the floor)`, `decode unknown`.
    pub fn describe(&self, floor: u32) -> String {
        match self.counts {
            None => format!("{} unknown (the pods could not be listed)", self.role),
            Some((r, rt)) if self.below(floor) => {
                format!("{} {r}/{rt} (below the floor)", self.role)
            }
            Some((r, rt)) => format!("{} {r}/{rt}", self.role),
        }
    }
}

/// The whole preflight.
#[derive(Debug, Clone)]
pub struct Plan {
    pub target: String,
    pub namespace: String,
    pub what: String,
    pub legs: Vec<LegPlan>,
    /// Findings not tied to a leg (e.g. other services).
    pub other_findings: Vec<PlanFinding>,
    /// The GitOps tool that keeps the target, and what it will do to the
    /// change (`None`: none found).
    pub gitops: Option<super::gitops::GitOps>,
    /// The operator generation the target's worker Deployments show
    /// (`None`: the target is not an InferaDeployment).
    pub operator: Option<infera_model::generation::Detection>,
    /// Each role's serving pods now, and the floor they are held to
    /// (`--min-ready`).
    pub roles_now: Vec<RoleNow>,
    pub min_ready: u32,
    /// What the roll does to prefill/decode pairs (`None`: not a P/D fleet
    /// of recognized engines).
    pub coherence: Option<super::coherence::Coherence>,
}

impl Plan {
    pub fn blocking(&self) -> Vec<&LegPlan> {
        self.legs.iter().filter(|l| l.verdict.blocks()).collect()
    }

    /// The roles already below the floor before anything is rolled.
    pub fn below_floor(&self) -> Vec<&RoleNow> {
        (self.roles_now.iter())
            .filter(|r| r.below(self.min_ready))
            .collect()
    }

    /// Whether the rollout stops here without `--force`: a predicted stall
    /// or gap, a role already below the floor, a GitOps tool that would
    /// revert the change, or prefill and decode that would pair across an
    /// incompatible change.
    pub fn refuses(&self) -> bool {
        self.coherence
            .as_ref()
            .is_some_and(super::coherence::Coherence::blocks)
            || !self.blocking().is_empty()
            || !self.below_floor().is_empty()
            || self.gitops.as_ref().is_some_and(|g| g.refuses())
    }

    /// `Serving now (Ready/routable, floor 1): decode 1/1, prefill 0/0 (below the floor)`.
    pub fn serving_now(&self) -> Option<String> {
        let roles: Vec<String> = (self.roles_now.iter())
            .map(|r| r.describe(self.min_ready))
            .collect();
        (!roles.is_empty()).then(|| {
            format!(
                "Serving now (Ready/routable, floor {}): {}",
                self.min_ready,
                roles.join(", ")
            )
        })
    }

    /// Why it stops (after the plan), and how to go on.
    pub fn refusal(&self) -> String {
        let below = self.below_floor();
        if !below.is_empty() && self.blocking().is_empty() {
            let names: Vec<&str> = below.iter().map(|r| r.role.as_str()).collect();
            return format!(
                "Stopping before any change: {} already below the floor of {} Ready and routable \
                 pod(s) before anything is rolled (see above). Wait until every role serves, or \
                 rerun with `--force` to roll anyway (the report keeps what was already below \
                 apart from what falls during the roll).",
                names.join(", ") + if names.len() == 1 { " is" } else { " are" },
                self.min_ready
            );
        }
        let incoherent = self
            .coherence
            .as_ref()
            .is_some_and(super::coherence::Coherence::blocks);
        match &self.gitops {
            Some(g) if g.refuses() && self.blocking().is_empty() => format!(
                "Stopping before any change: {} would revert it mid-roll (see above). \
                 Commit the change to Git or suspend reconciliation, or rerun with `--force` \
                 to roll anyway (infera stops if the change is reverted).",
                g.who()
            ),
            _ if incoherent && self.blocking().is_empty() => {
                "Stopping before any change: prefill and decode would pair across an incompatible \
                 KV change (see above). Take a way through that never pairs them (docs/rollout.md: \
                 one role scaled to zero while the other rolls, or a second fleet), or rerun with \
                 `--force` to roll anyway and watch it happen."
                    .to_string()
            }
            _ => {
                "Stopping before any change: the preflight predicts a stall or a gap (see above). \
                  Fix the finding, or rerun with `--force` to roll anyway and watch it happen."
                    .to_string()
            }
        }
    }

    pub fn table(&self) -> Table {
        let mut table = plan_table(140);
        table.set_header(vec![
            "#",
            "leg",
            "role",
            "workload",
            "replicas",
            "strategy",
            "surge capacity",
            "lint",
            "verdict",
        ]);
        for (i, leg) in self.legs.iter().enumerate() {
            let lint = if leg.findings.is_empty() {
                "clean".to_string()
            } else {
                leg.findings
                    .iter()
                    .map(|f| format!("{} {}", f.severity, f.code))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            table.add_row(vec![
                Cell::new(i + 1),
                Cell::new(&leg.leg),
                Cell::new(&leg.role),
                Cell::new(&leg.workload),
                Cell::new(leg.replicas),
                Cell::new(leg.strategy.describe()),
                Cell::new(leg.capacity.describe()),
                Cell::new(lint),
                Cell::new(self.verdict_label(leg)),
            ]);
        }
        table
    }

    /// A leg's verdict; `REVERT` when only a GitOps tool's sync stands in
    /// the way.
    pub fn verdict_label(&self, leg: &LegPlan) -> &'static str {
        let reverted = self.gitops.as_ref().is_some_and(|g| g.reverts(&leg.leg));
        match leg.verdict {
            Verdict::Ok if reverted => "REVERT",
            _ => leg.verdict.label(),
        }
    }

    /// The plan as text: header, table, findings, verdict reasons.
    pub fn render(&self) -> String {
        let mut lines = vec![
            format!(
                "Plan for {} ({}) in namespace {}:",
                self.target, self.what, self.namespace
            ),
            self.table().to_string(),
        ];
        if let Some(operator) = &self.operator {
            lines.insert(1, format!("Operator: {}", operator.describe()));
        }
        lines.extend(self.serving_now());
        for leg in &self.legs {
            for f in &leg.findings {
                lines.push(format!(
                    "  {} {} [{}]: {}",
                    leg.leg, f.severity, f.code, f.message
                ));
            }
            if !leg.why.is_empty() {
                lines.push(format!("  {}: {}", leg.leg, leg.why));
            }
        }
        for f in &self.other_findings {
            lines.push(format!(
                "  (other) {} [{}]: {}",
                f.severity, f.code, f.message
            ));
        }
        if let Some(g) = &self.gitops {
            lines.extend(g.render(&self.target));
        }
        lines.extend(
            self.coherence
                .as_ref()
                .map(super::coherence::Coherence::render),
        );
        for leg in self.blocking() {
            lines.push(format!(
                "  predicted {} on leg {}: {}",
                leg.verdict.label(),
                leg.leg,
                leg.verdict.reason()
            ));
        }
        lines.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn upstream_strategy_arithmetic() {
        let dep = |strategy: Value, replicas: u32| json!({"spec": {"replicas": replicas, "strategy": strategy}});
        assert_eq!(
            deployment_strategy(&dep(json!(null), 1)),
            Roll::rolling(1, 0)
        );
        assert_eq!(
            deployment_strategy(&dep(json!(null), 4)),
            Roll::rolling(1, 1)
        );
        assert_eq!(
            deployment_strategy(&dep(
                json!({"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}),
                1
            )),
            Roll::rolling(0, 1)
        );
        assert_eq!(
            deployment_strategy(&dep(
                json!({"rollingUpdate": {"maxSurge": "50%", "maxUnavailable": "50%"}}),
                3
            )),
            Roll::rolling(2, 1)
        );
        assert_eq!(
            deployment_strategy(&dep(json!({"type": "Recreate"}), 2)).kind,
            infera_model::rolling::RollKind::Recreate
        );
        assert!(Roll::rolling(1, 0).surge_first());
    }

    #[test]
    fn lws_defaults_and_overrides() {
        let lws = |rolling: Value| {
            json!({"spec": {"replicas": 4,
            "rolloutStrategy": {"rollingUpdateConfiguration": rolling}}})
        };
        assert_eq!(
            lws_strategy(&lws(json!(null))).describe(),
            "LeaderWorkerSet (maxSurge 0, maxUnavailable 1)"
        );
        assert_eq!(
            lws_strategy(&lws(json!({"maxSurge": 1, "maxUnavailable": "50%"}))).describe(),
            "LeaderWorkerSet (maxSurge 1, maxUnavailable 2)"
        );
    }

    fn leg(strategy: Roll, capacity: Capacity, probed: bool) -> LegPlan {
        LegPlan {
            leg: "decode".into(),
            role: "decode".into(),
            workload: "deploy/x-decode".into(),
            replicas: 1,
            strategy,
            why: String::new(),
            ready_short_of_serving: (!probed).then(|| "no /ready probe".to_string()),
            capacity,
            findings: vec![],
            verdict: Verdict::Ok,
            readiness_port: Some(30090),
            selector: Selector::default(),
        }
    }

    #[test]
    fn verdicts() {
        let surge = Roll::rolling(1, 0);
        let old_first = Roll::rolling(0, 1);
        assert_eq!(
            verdict(&leg(surge, Capacity::Room("n1".into()), true), 0, 1),
            Verdict::Ok
        );
        assert!(
            matches!(verdict(&leg(surge, Capacity::NoRoom("0/2 nodes".into()), true), 0, 1), Verdict::Stall(m) if m.contains("0/2 nodes"))
        );
        assert!(matches!(
            verdict(&leg(old_first, Capacity::NotNeeded, false), 0, 1),
            Verdict::Gap(_)
        ));
        // Another service of the same role keeps serving: no gap.
        assert_eq!(
            verdict(&leg(old_first, Capacity::NotNeeded, false), 1, 1),
            Verdict::Ok
        );
        // Surge without a /ready probe: Ready before registered.
        assert!(
            matches!(verdict(&leg(surge, Capacity::Room("n1".into()), false), 0, 1), Verdict::Gap(m) if m.contains("routable"))
        );
    }

    #[test]
    fn default_order_is_decode_prefill_mixed() {
        let legs = vec![
            ("agg".to_string(), "mixed".to_string()),
            ("prefill".to_string(), "prefill".to_string()),
            ("decode".to_string(), "decode".to_string()),
        ];
        assert_eq!(
            order_legs(legs.clone(), &[]),
            vec!["decode", "prefill", "agg"]
        );
        assert_eq!(
            order_legs(legs, &["prefill".into()]),
            vec!["prefill", "decode", "agg"]
        );
    }

    #[test]
    fn capacity_uses_scheduler_wording() {
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
            "status": {"allocatable": {"amd.com/gpu": "8", "cpu": "64", "memory": "512Gi", "pods": "110"}}})).unwrap();
        let template = json!({"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [{"name": "main",
            "resources": {"requests": {"amd.com/gpu": "8"}, "limits": {"amd.com/gpu": "8"}}}]}});
        assert_eq!(
            surge_capacity(&template, "ns", std::slice::from_ref(&node), &[]),
            Capacity::Room("n1".into())
        );
        let running: Pod =
            serde_json::from_value(json!({"metadata": {"name": "old", "namespace": "ns"},
            "spec": {"nodeName": "n1", "containers": [{"name": "main",
            "resources": {"requests": {"amd.com/gpu": "8"}}}]}, "status": {"phase": "Running"}}))
            .unwrap();
        match surge_capacity(&template, "ns", &[node], &[running]) {
            Capacity::NoRoom(m) => {
                assert_eq!(m, "0/1 nodes are available: 1 Insufficient amd.com/gpu.")
            }
            other => panic!("{other:?}"),
        }
    }
}
