//! The step state machine of one leg, fed by pod watch events.
//!
//! Pure: no I/O, no clock. The driver feeds it the same
//! `kube::runtime::watcher` events the Auditor gets and stamps the
//! observations it returns with time. After a re-list (`Init` …
//! `InitDone`, after a dropped watch, a 410 or an API restart) pods missing
//! from the new list are treated as deleted, so no step is lost or invented.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher::Event;

use super::trigger::{Change, pod_has_change};
use infera_cluster::reflect::{Delta, Reflector, name_key};
use infera_model::selector::Selector;

/// Worker registration annotation (operator-semantics §5).
pub use infera_model::worker::WORKER_INFO_ANNOTATION;

/// One step of a pod replacement, in the order a surge rollout goes through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StepKind {
    /// The replacement pod exists (the API accepted it).
    SurgeCreated,
    /// The scheduler could not place it (reported once per reason).
    Unschedulable,
    /// Bound to a node.
    Scheduled,
    /// Containers running, not Ready yet: image pulled, weights loading
    /// (a pod that runs a model server).
    WeightsLoading,
    /// Containers running (a pod that loads no model: a router, nginx).
    Running,
    /// Ready condition True (for an injected probe: `/ready` passed).
    Ready,
    /// `/ready` answered 200 when asked through the API server's pod proxy.
    ReadyViaProxy,
    /// `/ready` through the proxy disagrees with the Ready condition.
    ProxyDisagrees,
    /// The worker registered: `infera.amd.com/worker-info` present, Running.
    Routable,
    /// A replacement that was Ready lost it.
    NotReadyAgain,
    /// A replacement was deleted before the leg finished.
    SurgeGone,
    /// An old pod started terminating.
    OldTerminating,
    /// An old pod is gone from the API.
    OldGone,
}

impl StepKind {
    /// Stable kebab-case name, used in reports and plain log lines.
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::SurgeCreated => "surge-created",
            StepKind::Unschedulable => "unschedulable",
            StepKind::Scheduled => "scheduled",
            StepKind::WeightsLoading => "weights-loading",
            StepKind::Running => "running",
            StepKind::Ready => "ready",
            StepKind::ReadyViaProxy => "ready-via-proxy",
            StepKind::ProxyDisagrees => "proxy-disagrees",
            StepKind::Routable => "routable",
            StepKind::NotReadyAgain => "not-ready-again",
            StepKind::SurgeGone => "surge-gone",
            StepKind::OldTerminating => "old-terminating",
            StepKind::OldGone => "old-gone",
        }
    }

    /// What a person reading an incident log needs to know.
    pub fn describe(self) -> &'static str {
        match self {
            StepKind::SurgeCreated => "replacement pod created",
            StepKind::Unschedulable => "replacement pod cannot be scheduled",
            StepKind::Scheduled => "scheduled",
            StepKind::WeightsLoading => "containers running, loading weights",
            StepKind::Running => "containers running",
            StepKind::Ready => "Ready",
            StepKind::ReadyViaProxy => "/ready answered 200 through the API server",
            StepKind::ProxyDisagrees => "/ready through the API server disagrees with Ready",
            StepKind::Routable => "routable (worker-info registered)",
            StepKind::NotReadyAgain => "replacement lost Ready",
            StepKind::SurgeGone => "replacement pod gone",
            StepKind::OldTerminating => "old pod terminating",
            StepKind::OldGone => "old pod gone",
        }
    }

    /// The server's own time of this step seen on `pod`, where it has one
    /// (a step that arrived late, blind or in a replay, is timed by it).
    pub fn server_time(self, pod: &Pod) -> Option<jiff::Timestamp> {
        use infera_model::pod as facts;
        let condition = |type_: &str| {
            pod.status
                .as_ref()?
                .conditions
                .as_ref()?
                .iter()
                .find(|c| c.type_ == type_)?
                .last_transition_time
                .as_ref()
                .map(|t| t.0)
        };
        match self {
            StepKind::SurgeCreated => facts::created_at(pod),
            StepKind::Scheduled => condition("PodScheduled"),
            StepKind::WeightsLoading | StepKind::Running => facts::running_since(pod),
            StepKind::Ready | StepKind::NotReadyAgain => condition("Ready"),
            StepKind::Routable => facts::registered_by(pod),
            StepKind::OldTerminating => facts::deletion_requested_at(pod),
            _ => None,
        }
    }
}

/// Something the tracker saw happen, to be stamped and printed by the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    pub kind: StepKind,
    pub pod: String,
    pub node: Option<String>,
    /// E.g. the FailedScheduling message of an Unschedulable pod.
    pub detail: Option<String>,
}

/// What the tracker keeps of a pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodFacts {
    pub name: String,
    pub node: Option<String>,
    pub phase: String,
    pub running: bool,
    pub ready: bool,
    pub terminating: bool,
    pub registered: bool,
    /// Routable as the router sees it ([`infera_model::pod::is_routable`]).
    pub routable: bool,
    /// `PodScheduled=False reason=Unschedulable` message, if so.
    pub unschedulable: Option<String>,
    /// Carries the change (a replacement) or not (an old pod).
    pub new: bool,
    /// Runs an infera worker: it registers, and answers `/ready` on its
    /// readiness port ([`infera_model::pod::is_infera_worker`]).
    pub worker: bool,
    /// Runs a model server (an infera worker, or an engine the catalogue
    /// recognises): its start is a weight load.
    pub loads_model: bool,
}

impl PodFacts {
    pub fn serving_ready(&self) -> bool {
        self.ready && !self.terminating
    }
}

/// Facts of a watched pod; `change`/`inferadeployment` decide old vs new.
pub fn pod_facts(pod: &Pod, change: &Change, inferadeployment: bool) -> PodFacts {
    let meta = &pod.metadata;
    let status = pod.status.as_ref();
    let conditions = status.and_then(|s| s.conditions.as_deref()).unwrap_or(&[]);
    let condition = |t: &str| conditions.iter().find(|c| c.type_ == t);
    let unschedulable = condition("PodScheduled")
        .filter(|c| c.status == "False" && c.reason.as_deref() == Some("Unschedulable"))
        .map(|c| {
            c.message
                .clone()
                .unwrap_or_else(|| "Unschedulable".to_string())
        });
    let running = status
        .and_then(|s| s.container_statuses.as_deref())
        .is_some_and(|cs| {
            !cs.is_empty()
                && cs
                    .iter()
                    .all(|c| c.state.as_ref().is_some_and(|st| st.running.is_some()))
        });
    PodFacts {
        name: meta.name.clone().unwrap_or_default(),
        node: pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .filter(|n| !n.is_empty()),
        phase: status
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Pending".to_string()),
        running,
        ready: condition("Ready").is_some_and(|c| c.status == "True"),
        terminating: meta.deletion_timestamp.is_some(),
        registered: meta
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(WORKER_INFO_ANNOTATION)),
        routable: infera_model::pod::is_routable(pod),
        unschedulable,
        new: pod_has_change(pod, change, inferadeployment),
        worker: infera_model::pod::is_infera_worker(pod),
        loads_model: loads_model(pod),
    }
}

/// Whether `pod` runs a model server: an infera worker, or a main container
/// whose engine the catalogue recognises.
fn loads_model(pod: &Pod) -> bool {
    infera_model::pod::is_infera_worker(pod)
        || pod.spec.as_ref().is_some_and(|spec| {
            spec.containers
                .get(infera_model::pod::engine_container_index(spec))
                .and_then(infera_model::catalogue::recognize)
                .is_some()
        })
}

/// Which steps a pod has already produced (each at most once, except
/// Unschedulable whose message may change and NotReadyAgain).
#[derive(Debug, Clone, Default)]
struct Seen {
    steps: BTreeSet<StepKind>,
    unschedulable_message: Option<String>,
}

/// One leg: the pods of one service (or one plain Deployment).
#[derive(Debug, Clone)]
pub struct LegTracker {
    pub leg: String,
    selector: Selector,
    change: Change,
    inferadeployment: bool,
    pods: Reflector<PodFacts>,
    seen: BTreeMap<String, Seen>,
    /// Some pod of the leg was seen registered (routable): this fleet's
    /// workers register, so a replacement is not done until it has too.
    registers: bool,
}

impl LegTracker {
    /// `selector`: the label selector of the leg's pods (e.g.
    /// `infera.amd.com/deployment=X,infera.amd.com/service=S`, or a plain
    /// Deployment's, set-based requirements included).
    pub fn new(
        leg: impl Into<String>,
        selector: Selector,
        change: Change,
        inferadeployment: bool,
    ) -> Self {
        LegTracker {
            leg: leg.into(),
            selector,
            change,
            inferadeployment,
            pods: Reflector::new(),
            seen: BTreeMap::new(),
            registers: false,
        }
    }

    /// Feed one watch event; returns what happened, in step order.
    pub fn apply(&mut self, event: &Event<Pod>) -> Vec<Observation> {
        let (selector, change, idep) = (&self.selector, &self.change, self.inferadeployment);
        let delta = self.pods.apply(event, name_key, |pod| {
            selector
                .matches_labels(pod.metadata.labels.as_ref())
                .then(|| pod_facts(pod, change, idep))
        });
        match delta {
            Delta::Nothing => Vec::new(),
            Delta::Upserted(name) => self.observe(&name),
            Delta::Removed(name, facts) => self.observe_gone(&name, &facts),
            Delta::Relisted { vanished } => {
                let mut out = Vec::new();
                for (name, facts) in vanished {
                    out.extend(self.observe_gone(&name, &facts));
                }
                let listed: Vec<String> = self.pods.iter().map(|(k, _)| k.clone()).collect();
                for name in listed {
                    out.extend(self.observe(&name));
                }
                out
            }
        }
    }

    /// The steps the live facts of `name` show that were not reported yet.
    fn observe(&mut self, name: &str) -> Vec<Observation> {
        let Some(facts) = self.pods.get(name) else {
            return Vec::new();
        };
        let seen = self.seen.entry(facts.name.clone()).or_default();
        let mut out = Vec::new();
        let mut emit = |kind: StepKind, detail: Option<String>, seen: &mut Seen| {
            if seen.steps.insert(kind) {
                out.push(Observation {
                    kind,
                    pod: facts.name.clone(),
                    node: facts.node.clone(),
                    detail,
                });
            }
        };
        if facts.new {
            emit(StepKind::SurgeCreated, None, seen);
            if let Some(message) = &facts.unschedulable
                && seen.unschedulable_message.as_deref() != Some(message.as_str())
            {
                seen.unschedulable_message = Some(message.clone());
                seen.steps.remove(&StepKind::Unschedulable);
                emit(StepKind::Unschedulable, Some(message.clone()), seen);
            }
            if facts.node.is_some() {
                emit(StepKind::Scheduled, None, seen);
            }
            if facts.running || facts.ready {
                let started = if facts.loads_model {
                    StepKind::WeightsLoading
                } else {
                    StepKind::Running
                };
                emit(started, None, seen);
            }
            if facts.serving_ready() {
                emit(StepKind::Ready, None, seen);
            } else if seen.steps.contains(&StepKind::Ready)
                && !facts.terminating
                && !seen.steps.contains(&StepKind::NotReadyAgain)
            {
                emit(StepKind::NotReadyAgain, None, seen);
            }
            if facts.serving_ready() {
                // Ready again after a blip: allow a later NotReadyAgain.
                seen.steps.remove(&StepKind::NotReadyAgain);
            }
            if facts.routable {
                emit(StepKind::Routable, None, seen);
            }
        } else if facts.terminating {
            emit(StepKind::OldTerminating, None, seen);
        }
        self.registers |= facts.registered;
        out
    }

    /// The steps of a pod leaving the leg (deleted, or missing from a re-list).
    fn observe_gone(&mut self, name: &str, facts: &PodFacts) -> Vec<Observation> {
        let seen = self.seen.entry(name.to_string()).or_default();
        let mut out = Vec::new();
        let kind = if facts.new {
            StepKind::SurgeGone
        } else {
            if seen.steps.insert(StepKind::OldTerminating) {
                // Deleted without our seeing it terminate (e.g. during a
                // dropped watch): report both, in order.
                out.push(Observation {
                    kind: StepKind::OldTerminating,
                    pod: name.to_string(),
                    node: facts.node.clone(),
                    detail: None,
                });
            }
            StepKind::OldGone
        };
        if seen.steps.insert(kind) {
            out.push(Observation {
                kind,
                pod: name.to_string(),
                node: facts.node.clone(),
                detail: None,
            });
        }
        out
    }

    /// Record that `/ready` answered through the pod proxy (or not), as
    /// observed by the driver; returns the observation to print, once.
    pub fn proxy_result(&mut self, pod: &str, ready: bool, detail: String) -> Option<Observation> {
        let facts = self.pods.get(pod)?;
        let kind = if ready {
            StepKind::ReadyViaProxy
        } else {
            StepKind::ProxyDisagrees
        };
        let seen = self.seen.entry(pod.to_string()).or_default();
        if ready {
            // The port opened: a prior disagreement is over.
        } else if !facts.ready || seen.steps.contains(&StepKind::ReadyViaProxy) {
            // Only a Ready pod whose /ready says otherwise is a disagreement.
            return None;
        }
        seen.steps.insert(kind).then(|| Observation {
            kind,
            pod: pod.to_string(),
            node: facts.node.clone(),
            detail: Some(detail),
        })
    }

    /// Pods of the leg currently known.
    pub fn pods(&self) -> impl Iterator<Item = &PodFacts> {
        self.pods.values()
    }

    /// Replacement infera workers whose `/ready` should be asked through the
    /// proxy: running, not terminating, not yet answered 200. Other pods
    /// have no readiness port to ask.
    pub fn awaiting_proxy(&self) -> Vec<String> {
        self.pods
            .values()
            .filter(|p| p.worker && p.new && p.running && !p.terminating)
            .filter(|p| {
                !self
                    .seen
                    .get(&p.name)
                    .is_some_and(|s| s.steps.contains(&StepKind::ReadyViaProxy))
            })
            .map(|p| p.name.clone())
            .collect()
    }

    pub fn has_seen(&self, pod: &str, kind: StepKind) -> bool {
        self.seen.get(pod).is_some_and(|s| s.steps.contains(&kind))
    }

    /// Old pods still present (serving or terminating).
    pub fn old_remaining(&self) -> usize {
        self.pods.values().filter(|p| !p.new).count()
    }

    pub fn new_ready(&self) -> usize {
        self.pods
            .values()
            .filter(|p| p.new && p.serving_ready())
            .count()
    }

    /// A re-list is under way: the pods known are the previous list's.
    pub fn relisting(&self) -> bool {
        self.pods.relisting()
    }

    pub fn ready_total(&self) -> usize {
        self.pods.values().filter(|p| p.serving_ready()).count()
    }

    /// A replacement that is still Unschedulable, with the message.
    pub fn unschedulable(&self) -> Option<(&str, &str)> {
        self.pods
            .values()
            .filter(|p| p.new && p.node.is_none() && !p.terminating)
            .find_map(|p| p.unschedulable.as_deref().map(|m| (p.name.as_str(), m)))
    }

    /// Replacements that exist and are not terminating.
    pub fn new_live(&self) -> usize {
        self.pods
            .values()
            .filter(|p| p.new && !p.terminating)
            .count()
    }

    /// Replacements that are routable (registered, Running, not terminating).
    pub fn new_routable(&self) -> usize {
        self.pods.values().filter(|p| p.new && p.routable).count()
    }

    /// Whether workers of this leg were seen registering (see `complete`).
    pub fn registers(&self) -> bool {
        self.registers
    }

    /// Whether the leg is done: `desired` replacements Ready, every old pod
    /// gone from the API, and — when this leg's workers register (some pod
    /// was seen with `infera.amd.com/worker-info`) — `desired` replacements
    /// routable too. A replacement that is Ready but not yet registered (no
    /// probe, or a `/health` probe) still serves nothing; moving on to the
    /// next leg or declaring success then would hide a gap.
    pub fn complete(&self, desired: usize) -> bool {
        !self.pods.relisting()
            && self.old_remaining() == 0
            && self.new_ready() >= desired
            && (!self.registers || self.new_routable() >= desired)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TS: &str = "20261202T184512Z";

    fn pod(name: &str, new: bool, extra: serde_json::Value) -> Pod {
        let mut v = json!({
            "metadata": {"name": name, "labels": {"infera.amd.com/service": "decode"}},
            "spec": {"containers": [{"name": "infera", "image": "e:1",
                "command": ["python3", "-m", "infera.engine.sglang"]}]},
            "status": {"phase": "Pending"}
        });
        if new {
            v["metadata"]["labels"]["infera.amd.com/restarted-at"] = json!(TS);
        }
        json_patch::merge(&mut v, &extra);
        serde_json::from_value(v).unwrap()
    }

    fn running(ready: bool) -> serde_json::Value {
        json!({"spec": {"nodeName": "n1"}, "status": {"phase": "Running",
            "containerStatuses": [{"name": "infera", "image": "e:1", "imageID": "", "ready": ready,
                                   "restartCount": 0, "state": {"running": {}}}],
            "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}})
    }

    /// A tracker of a restart at `TS` of leg `leg`, its pods `selector`'s.
    fn tracker_of(leg: &str, selector: &str, inferadeployment: bool) -> LegTracker {
        LegTracker::new(
            leg,
            Selector::parse(selector).unwrap(),
            Change {
                restart_at: Some(TS.into()),
                ..Change::default()
            },
            inferadeployment,
        )
    }

    fn tracker() -> LegTracker {
        tracker_of("decode", "infera.amd.com/service=decode", true)
    }

    fn kinds(obs: Vec<Observation>) -> Vec<StepKind> {
        obs.into_iter().map(|o| o.kind).collect()
    }

    /// A pod that loads no model (a router, nginx) is `running`, never
    /// `weights-loading`, and has no readiness port to ask through the proxy.
    #[test]
    fn a_pod_without_a_model_is_running_and_not_probed() {
        let mut t = tracker();
        t.apply(&Event::Init);
        assert!(kinds(t.apply(&Event::InitDone)).is_empty());
        let plain = json!({"spec": {"containers": [{"name": "infera", "image": "nginx:1.27", "command": null}]}});
        let mut extra = running(false);
        json_patch::merge(&mut extra, &plain);
        let steps = kinds(t.apply(&Event::Apply(pod("web", true, extra))));
        assert_eq!(
            steps,
            vec![
                StepKind::SurgeCreated,
                StepKind::Scheduled,
                StepKind::Running
            ]
        );
        assert!(t.awaiting_proxy().is_empty());
    }

    #[test]
    fn surge_replacement_in_order() {
        use StepKind::*;
        let mut t = tracker();
        t.apply(&Event::Init);
        t.apply(&Event::InitApply(pod("old", false, running(true))));
        assert!(kinds(t.apply(&Event::InitDone)).is_empty());
        assert_eq!(
            kinds(t.apply(&Event::Apply(pod("new", true, json!({}))))),
            vec![SurgeCreated]
        );
        assert_eq!(
            kinds(t.apply(&Event::Apply(pod(
                "new",
                true,
                json!({"spec": {"nodeName": "n1"}})
            )))),
            vec![Scheduled]
        );
        assert_eq!(
            kinds(t.apply(&Event::Apply(pod("new", true, running(false))))),
            vec![WeightsLoading]
        );
        assert_eq!(t.awaiting_proxy(), vec!["new".to_string()]);
        assert_eq!(
            kinds(t.apply(&Event::Apply(pod("new", true, running(true))))),
            vec![Ready]
        );
        let ready = t.proxy_result("new", true, "200".into()).unwrap();
        assert_eq!(ready.kind, ReadyViaProxy);
        assert!(t.awaiting_proxy().is_empty());
        let mut reg = running(true);
        reg["metadata"] = json!({"annotations": {WORKER_INFO_ANNOTATION: "{}"}});
        assert_eq!(
            kinds(t.apply(&Event::Apply(pod("new", true, reg)))),
            vec![Routable]
        );
        assert!(!t.complete(1));
        let mut term = running(true);
        term["metadata"] = json!({"deletionTimestamp": "2026-12-02T18:50:00Z"});
        assert_eq!(
            kinds(t.apply(&Event::Apply(pod("old", false, term.clone())))),
            vec![OldTerminating]
        );
        assert_eq!(t.new_ready(), 1);
        assert_eq!(
            kinds(t.apply(&Event::Delete(pod("old", false, term)))),
            vec![OldGone]
        );
        assert!(t.complete(1));
    }

    #[test]
    fn registering_fleet_is_not_complete_until_replacement_routable() {
        let mut t = tracker();
        let mut registered_old = running(true);
        registered_old["metadata"] = json!({"annotations": {WORKER_INFO_ANNOTATION: "{}"}, "deletionTimestamp": "2026-12-02T18:50:00Z"});
        t.apply(&Event::Apply(pod("old", false, registered_old.clone())));
        assert!(t.registers());
        t.apply(&Event::Delete(pod("old", false, registered_old)));
        // Ready (no probe: Ready at Running) but not registered yet.
        t.apply(&Event::Apply(pod("new", true, running(true))));
        assert_eq!(t.new_ready(), 1);
        assert!(!t.complete(1), "Ready but not routable is not done");
        let mut reg = running(true);
        reg["metadata"] = json!({"annotations": {WORKER_INFO_ANNOTATION: "{}"}});
        t.apply(&Event::Apply(pod("new", true, reg)));
        assert!(t.complete(1));
    }

    #[test]
    fn fleet_that_never_registers_completes_on_ready() {
        let mut t = tracker();
        t.apply(&Event::Apply(pod("new", true, running(true))));
        assert!(!t.registers());
        assert!(t.complete(1));
    }

    #[test]
    fn relist_after_dropped_watch_reports_missed_deletion_once() {
        use StepKind::*;
        let mut t = tracker();
        t.apply(&Event::Apply(pod("old", false, running(true))));
        t.apply(&Event::Apply(pod("new", true, running(true))));
        // The watch dropped; the old pod was deleted meanwhile.
        t.apply(&Event::Init);
        t.apply(&Event::InitApply(pod("new", true, running(true))));
        assert!(!t.complete(1), "mid-relist is never complete");
        assert_eq!(
            kinds(t.apply(&Event::InitDone)),
            vec![OldTerminating, OldGone]
        );
        assert!(t.complete(1));
        // A second relist with the same state says nothing new.
        t.apply(&Event::Init);
        t.apply(&Event::InitApply(pod("new", true, running(true))));
        assert!(kinds(t.apply(&Event::InitDone)).is_empty());
    }

    #[test]
    fn unschedulable_message_and_proxy_disagreement() {
        use StepKind::*;
        let mut t = tracker();
        let pending = json!({"status": {"conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "message": "0/2 nodes are available: 2 Insufficient amd.com/gpu."}]}});
        let obs = t.apply(&Event::Apply(pod("new", true, pending.clone())));
        assert_eq!(kinds(obs.clone()), vec![SurgeCreated, Unschedulable]);
        assert_eq!(
            obs[1].detail.as_deref(),
            Some("0/2 nodes are available: 2 Insufficient amd.com/gpu.")
        );
        assert!(t.apply(&Event::Apply(pod("new", true, pending))).is_empty());
        assert_eq!(t.unschedulable().map(|u| u.0), Some("new"));
        // Skip-probe pod: Ready at Running, /ready not answering yet.
        t.apply(&Event::Apply(pod("new", true, running(true))));
        assert!(t.unschedulable().is_none());
        let d = t.proxy_result("new", false, "503".into()).unwrap();
        assert_eq!(d.kind, ProxyDisagrees);
        assert!(
            t.proxy_result("new", false, "503".into()).is_none(),
            "reported once"
        );
        assert_eq!(
            t.proxy_result("new", true, "200".into()).unwrap().kind,
            ReadyViaProxy
        );
    }

    #[test]
    fn pods_of_other_services_are_ignored() {
        let mut t = tracker();
        let mut other = pod("p", true, json!({}));
        other.metadata.labels =
            Some([("infera.amd.com/service".to_string(), "prefill".to_string())].into());
        assert!(t.apply(&Event::Apply(other)).is_empty());
        assert_eq!(t.pods().count(), 0);
    }

    #[test]
    fn new_is_read_from_the_typed_pod() {
        let change = Change {
            restart_at: Some(TS.into()),
            image: Some("e:2".into()),
            env: vec![crate::trigger::EnvSetting {
                name: "B".into(),
                value: "5".into(),
            }],
        };
        let new_spec = json!({"spec": {"containers": [{"name": "infera", "image": "e:2",
            "env": [{"name": "B", "value": "5"}]}]}});
        let facts = pod_facts(&pod("p", true, new_spec.clone()), &change, true);
        assert!(facts.new);
        assert_eq!(
            (facts.name.as_str(), facts.phase.as_str()),
            ("p", "Pending")
        );
        // The marker with the old image; the new image without the marker;
        // a Deployment's marker lives in annotations, not labels.
        assert!(!pod_facts(&pod("p", true, json!({})), &change, true).new);
        assert!(!pod_facts(&pod("p", false, new_spec.clone()), &change, true).new);
        assert!(!pod_facts(&pod("p", true, new_spec), &change, false).new);
    }

    #[test]
    fn lost_ready_is_reported() {
        let mut t = tracker();
        t.apply(&Event::Apply(pod("new", true, running(true))));
        assert_eq!(
            kinds(t.apply(&Event::Apply(pod("new", true, running(false))))),
            vec![StepKind::NotReadyAgain]
        );
    }

    /// A plain Deployment's leg selected by `matchExpressions` (`app in
    /// (web)`): its pods are tracked, another app's are not.
    #[test]
    fn a_set_based_leg_selector_is_honoured() {
        let mut t = tracker_of("web", "app in (web)", false);
        let labelled = |name: &str, app: &str| {
            let mut p = pod(name, true, json!({}));
            p.metadata.labels = Some([("app".to_string(), app.to_string())].into());
            p
        };
        assert!(t.apply(&Event::Apply(labelled("db", "db"))).is_empty());
        assert_eq!(t.pods().count(), 0);
        t.apply(&Event::Apply(labelled("web", "web")));
        assert_eq!(t.pods().count(), 1);
    }
}
