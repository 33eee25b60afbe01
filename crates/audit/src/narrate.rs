//! Disruptions narrated as a rollout's steps are: what happened to the
//! audited pods and their nodes while someone else acted (a `kubectl
//! drain`, an autoscaler's consolidation, a node going away), derived from
//! the same pod watch that counts them, and from a node watch.
//!
//! Per pod: `evicted` (its `DisruptionTarget` condition, reason
//! `EvictionByEvictionAPI`: the Eviction API's mark, k8s.io/kubernetes@v1.37.2
//! pkg/registry/core/pod/storage/eviction.go `addConditionAndDeletePod`;
//! `disruption-target` with another reason: preemption, taint eviction),
//! `deleted` (its `deletionTimestamp`), `gone`; for a pod that appears
//! during the audit: `created`, `scheduled`, `ready`, `routable`. Per node
//! holding (or having held) an audited pod: `cordoned`/`uncordoned`
//! (`spec.unschedulable`) and `node-not-ready`/`node-ready` (its Ready
//! condition). Each step is marked on the role of the pod (node steps on
//! every role with a pod there), at its arrival.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use k8s_openapi::api::core::v1::{Node, Pod};

use infera_model::pod::{EVICTION_BY_EVICTION_API, disruption_reason};
use infera_model::worker::LABEL_SERVICE;

/// A rollout step, recorded as a marker in the report and on the timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The service (leg) the step belongs to.
    pub service: String,
    /// What happened: `surge-created`, `scheduled`, `ready`, `routable`,
    /// `old-terminating`, `old-gone`, … (free text, chosen by the caller).
    pub kind: String,
    pub pod: Option<String>,
    pub node: Option<String>,
    /// When it happened (wall clock of this process).
    pub at: Instant,
}

/// What one pod's narrative has told so far.
#[derive(Debug, Clone, Default)]
struct Told {
    node: Option<String>,
    disrupted: bool,
    deleting: bool,
    ready: bool,
    serving: bool,
    service: String,
}

/// What one node's narrative has told so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct NodeState {
    cordoned: bool,
    not_ready: bool,
}

/// The pods' and nodes' last told states.
#[derive(Debug, Default)]
pub(crate) struct Narrator {
    pods: BTreeMap<String, Told>,
    nodes: BTreeMap<String, NodeState>,
    /// Every node an audited pod was seen on, with the (role, service) of
    /// those pods: a node going NotReady after it was drained is told too.
    held: BTreeMap<String, BTreeSet<(usize, String)>>,
    /// Set after the first list: pods seen later were created meanwhile.
    pub(crate) listed: bool,
}

fn step(service: &str, kind: &str, pod: Option<&str>, node: Option<&str>, at: Instant) -> Step {
    Step {
        service: service.to_string(),
        kind: kind.to_string(),
        pod: pod.map(str::to_string),
        node: node.map(str::to_string),
        at,
    }
}

impl Narrator {
    /// A version of `pod` (of role `role`, whose steps go to
    /// `role_service` unless the pod names its service): the steps it tells.
    pub(crate) fn pod(
        &mut self,
        key: &str,
        pod: &Pod,
        role: usize,
        role_service: &str,
        at: Instant,
    ) -> Vec<Step> {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let service = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL_SERVICE))
            .cloned()
            .unwrap_or_else(|| role_service.to_string());
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        let now = Told {
            node: node.clone(),
            disrupted: disruption_reason(pod).is_some(),
            deleting: pod.metadata.deletion_timestamp.is_some(),
            ready: infera_model::pod::is_ready(pod),
            serving: infera_model::pod::is_serving(pod),
            service: service.clone(),
        };
        if let Some(n) = &node {
            self.held
                .entry(n.clone())
                .or_default()
                .insert((role, service.clone()));
        }
        let before = self.pods.insert(key.to_string(), now.clone());
        let mut steps = Vec::new();
        let node = node.as_deref();
        let mut tell = |kind: &str| steps.push(step(&service, kind, Some(&name), node, at));
        let before = match before {
            Some(b) => b,
            None if self.listed => {
                tell("created");
                Told::default()
            }
            // In the first list: the state it starts from.
            None => return steps,
        };
        if before.node.is_none() && now.node.is_some() {
            tell("scheduled");
        }
        if !before.disrupted && now.disrupted {
            match disruption_reason(pod) {
                Some(EVICTION_BY_EVICTION_API) => tell("evicted"),
                _ => tell("disruption-target"),
            }
        }
        if !before.deleting && now.deleting {
            tell("deleted");
        }
        if !before.ready && now.ready {
            tell("ready");
        }
        if !before.serving && now.serving {
            tell("routable");
        }
        steps
    }

    /// `key`'s pod left the watch.
    pub(crate) fn gone(&mut self, key: &str, at: Instant) -> Vec<Step> {
        let Some(told) = self.pods.remove(key) else {
            return Vec::new();
        };
        let name = key.rsplit('/').next().unwrap_or(key);
        vec![step(
            &told.service,
            "gone",
            Some(name),
            told.node.as_deref(),
            at,
        )]
    }

    /// A version of `node`: cordon and readiness changes of a node that
    /// holds an audited pod, told once for every role with a pod there.
    pub(crate) fn node(&mut self, node: &Node, at: Instant) -> Vec<Step> {
        let Some(name) = node.metadata.name.clone() else {
            return Vec::new();
        };
        let now = NodeState {
            cordoned: node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true),
            not_ready: node
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
                .is_some_and(|c| c.status != "True"),
        };
        let before = self.nodes.insert(name.clone(), now).unwrap_or_default();
        let services = self.held.get(&name).cloned().unwrap_or_default();
        let mut kinds = Vec::new();
        if before.cordoned != now.cordoned {
            kinds.push(if now.cordoned {
                "cordoned"
            } else {
                "uncordoned"
            });
        }
        if before.not_ready != now.not_ready {
            kinds.push(if now.not_ready {
                "node-not-ready"
            } else {
                "node-ready"
            });
        }
        let mut steps = Vec::new();
        for kind in kinds {
            let mut roles = BTreeSet::new();
            for (role, service) in &services {
                if roles.insert(*role) {
                    steps.push(step(service, kind, None, Some(&name), at));
                }
            }
        }
        steps
    }

    /// Remember a node's state without telling (the first list of nodes).
    pub(crate) fn node_listed(&mut self, node: &Node) {
        let _ = self.node(node, Instant::now());
    }
}
