//! The monitor's state: one list+watch cache per resource
//! ([`infera_cluster::reflect::Reflector`]), each watch's sight
//! ([`infera_cluster::sight::Sight`]: current or blind), and one
//! [`Auditor`] per watched workload, fed by the one pod watch.
//!
//! Synchronous, with `now` passed in: the watch loop ([`crate::serve`])
//! feeds it, the `/metrics` handler reads it ([`crate::metrics`]).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use kube::api::DynamicObject;
use kube::runtime::watcher::Event;
use serde_json::Value;

use infera_audit::Auditor;
use infera_cluster::reflect::{Delta, Reflector, namespaced_key};
use infera_cluster::sight::{Beat, Sight, Transition};
use infera_model::selector::Selector;

use crate::workloads::{self, Workload, WorkloadKey};

/// The resources watched, in the order of the `resource` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resource {
    Pods,
    InferaDeployments,
    Deployments,
    StatefulSets,
    LeaderWorkerSets,
}

impl Resource {
    pub const ALL: [Resource; 5] = [
        Resource::Pods,
        Resource::InferaDeployments,
        Resource::Deployments,
        Resource::StatefulSets,
        Resource::LeaderWorkerSets,
    ];

    /// How the `workload` label names a workload of this resource
    /// (`idep/NAME`): `None` for pods.
    pub fn workload_kind(self) -> Option<&'static str> {
        match self {
            Resource::Pods => None,
            Resource::InferaDeployments => Some(workloads::IDEP),
            Resource::Deployments => Some(workloads::DEPLOY),
            Resource::StatefulSets => Some(workloads::STS),
            Resource::LeaderWorkerSets => Some(workloads::LWS),
        }
    }

    /// The plural, as RBAC and the `resource` label spell it.
    pub fn plural(self) -> &'static str {
        match self {
            Resource::Pods => "pods",
            Resource::InferaDeployments => infera_model::api::INFERA_DEPLOYMENT.plural,
            Resource::Deployments => "deployments",
            Resource::StatefulSets => "statefulsets",
            Resource::LeaderWorkerSets => infera_model::api::LEADER_WORKER_SET.plural,
        }
    }
}

/// Whether one watch is current, and how long it was not.
#[derive(Debug, Clone)]
pub struct WatchState {
    /// `None` until the first complete list.
    sight: Option<Sight>,
    /// Blind since (the start, before the first list).
    blind_since: Option<Instant>,
    unobserved: Duration,
    /// Why it is down, when it is (one line, no credential).
    pub reason: Option<String>,
    /// The API server answered 404 to the list: it does not serve the
    /// resource, so there is nothing to watch.
    not_served: bool,
}

impl WatchState {
    fn new(start: Instant) -> WatchState {
        WatchState {
            sight: None,
            blind_since: Some(start),
            unobserved: Duration::ZERO,
            reason: Some("not listed yet".to_string()),
            not_served: false,
        }
    }

    /// Listed and current: its numbers may be exported as current.
    pub fn up(&self) -> bool {
        self.reason.is_none()
            && (self.not_served || self.sight.as_ref().is_some_and(Sight::is_current))
    }

    /// Time this watch was not current, up to `now`.
    pub fn unobserved(&self, now: Instant) -> Duration {
        self.unobserved
            + self
                .blind_since
                .map_or(Duration::ZERO, |s| now.saturating_duration_since(s))
    }

    fn transition(&mut self, t: Transition, now: Instant) -> bool {
        match t {
            Transition::Blind { since, reason } => {
                self.blind_since = Some(since.min(now));
                self.reason = Some(reason);
                true
            }
            Transition::Sighted { at } => {
                self.sighted(at.max(now));
                false
            }
            Transition::Resync => true,
            Transition::None => false,
        }
    }

    fn sighted(&mut self, at: Instant) {
        if let Some(since) = self.blind_since.take() {
            self.unobserved += at.saturating_duration_since(since);
        }
        self.reason = None;
    }

    /// An event of this watch's stream arrived at `now`.
    fn event<K>(&mut self, event: &Event<K>, now: Instant) {
        if matches!(event, Event::InitDone) {
            self.not_served = false;
        }
        if self.not_served && matches!(event, Event::Init) {
            // Asking again whether the resource is served (the watcher's
            // Init comes before its list): nothing to watch meanwhile, so
            // nothing goes blind; a list (InitDone) or an error decides.
            return;
        }
        let t = match (&mut self.sight, event) {
            (None, Event::InitDone) => {
                self.sight = Some(Sight::new(now));
                self.sighted(now);
                return;
            }
            (None, _) => return,
            (Some(s), Event::Init) => s.relisting(),
            (Some(s), Event::InitDone) => s.relisted(now),
            (Some(s), Event::Apply(_) | Event::Delete(_)) => s.event(now),
            (Some(_), Event::InitApply(_)) => Transition::None,
        };
        self.transition(t, now);
    }

    /// A request of the watch failed (`reason`: one line, no credential).
    /// Returns whether it just went down or is down for another reason
    /// (worth one log line).
    pub fn error(&mut self, reason: &str, now: Instant) -> bool {
        let news = self.up() || self.reason.as_deref() != Some(reason);
        self.not_served = false;
        if let Some(s) = self.sight.as_mut() {
            let t = s.watch_error(reason);
            self.transition(t, now);
        }
        self.reason = Some(reason.to_string());
        if self.blind_since.is_none() {
            self.blind_since = Some(now);
        }
        news
    }

    /// The API server does not serve the resource (404 on the list):
    /// current, with nothing in it. Returns whether that is news.
    fn not_served(&mut self, now: Instant) -> bool {
        let news = !self.not_served;
        self.not_served = true;
        if self.sight.is_none() {
            self.sight = Some(Sight::new(now));
        }
        self.sighted(now);
        news
    }

    /// A heartbeat's outcome: whether the watch must start afresh.
    fn beat(&mut self, beat: &Beat, now: Instant) -> bool {
        match self.sight.as_mut().map(|s| s.beat(beat)) {
            Some(Transition::Resync) => true,
            Some(t) => {
                self.transition(t, now);
                false
            }
            None => false,
        }
    }
}

/// One watched workload and its auditor.
pub struct Watched {
    pub workload: Workload,
    pub auditor: Auditor,
    /// The counters last exported per role (below-floor seconds, gaps):
    /// a counter never goes down, even when a late event rewrites history.
    pub exported: Vec<(f64, u64)>,
}

/// Everything the monitor knows.
pub struct State {
    pub min_ready: u32,
    /// `-l`: only workloads whose labels the selector matches.
    selector: Selector,
    pub pods: Reflector<Pod>,
    ideps: Reflector<Value>,
    pub deployments: Reflector<Deployment>,
    pub statefulsets: Reflector<StatefulSet>,
    pub leaderworkersets: Reflector<Value>,
    pub workloads: BTreeMap<WorkloadKey, Watched>,
    pub watches: BTreeMap<Resource, WatchState>,
    /// The request probe's counters ([`crate::probe`]).
    pub probe: crate::probe::Metrics,
}

fn labels_hold(selector: &Selector, labels: Option<&BTreeMap<String, String>>) -> bool {
    selector.matches_labels(labels)
}

impl State {
    pub fn new(min_ready: u32, selector: Selector, start: Instant) -> State {
        State {
            min_ready,
            selector,
            pods: Reflector::new(),
            ideps: Reflector::new(),
            deployments: Reflector::new(),
            statefulsets: Reflector::new(),
            leaderworkersets: Reflector::new(),
            workloads: BTreeMap::new(),
            watches: Resource::ALL
                .into_iter()
                .map(|r| (r, WatchState::new(start)))
                .collect(),
            probe: crate::probe::Metrics::default(),
        }
    }

    /// The InferaDeployments in scope that have a router, each with its
    /// route and the model its workers name (asked of `/v1/models` first).
    pub fn probe_targets(&self) -> BTreeMap<crate::probe::Target, (infera_traffic::Route, String)> {
        self.ideps
            .values()
            .filter_map(|idep| {
                let route = infera_traffic::Route::router_of(idep).ok()?;
                let text = |p: &str| idep.pointer(p).and_then(Value::as_str).unwrap_or("");
                let target = (
                    text("/metadata/namespace").to_string(),
                    text("/metadata/name").to_string(),
                );
                Some((target, (route, crate::probe::model_of(idep))))
            })
            .collect()
    }

    pub fn watch(&self, r: Resource) -> Option<&WatchState> {
        self.watches.get(&r)
    }

    fn watch_mut(&mut self, r: Resource) -> &mut WatchState {
        self.watches
            .entry(r)
            .or_insert_with(|| WatchState::new(Instant::now()))
    }

    /// Every watch is current.
    pub fn ready(&self) -> Result<(), String> {
        let down: Vec<String> = self
            .watches
            .iter()
            .filter(|(_, w)| !w.up())
            .map(|(r, w)| format!("{}: {}", r.plural(), w.reason.as_deref().unwrap_or("blind")))
            .collect();
        if down.is_empty() {
            Ok(())
        } else {
            Err(down.join("; "))
        }
    }

    /// A pod watch event at `now`.
    pub fn apply_pod(&mut self, event: &Event<Pod>, now: Instant) {
        self.pods
            .apply(event, namespaced_key, |p| Some(strip(p.clone())));
        self.watch_mut(Resource::Pods).event(event, now);
        let namespace = match event {
            Event::Apply(p) | Event::Delete(p) | Event::InitApply(p) => {
                p.metadata.namespace.clone()
            }
            Event::Init | Event::InitDone => None,
        };
        for w in self.workloads.values_mut() {
            if namespace
                .as_ref()
                .is_none_or(|ns| *ns == w.workload.namespace)
            {
                w.auditor.apply(event, now);
            }
        }
        if matches!(event, Event::InitDone) {
            self.reconcile(now);
        }
    }

    /// An InferaDeployment watch event at `now`.
    pub fn apply_idep(&mut self, event: &Event<DynamicObject>, now: Instant) {
        let selector = &self.selector;
        let delta = self.ideps.apply(event, namespaced_key, |o| {
            labels_hold(selector, o.metadata.labels.as_ref())
                .then(|| serde_json::to_value(o).ok())
                .flatten()
        });
        self.watch_mut(Resource::InferaDeployments)
            .event(event, now);
        self.follow(Resource::InferaDeployments, delta, now);
    }

    /// A Deployment watch event at `now` (every Deployment is kept: the
    /// operator's carry the rollout state of their InferaDeployment).
    pub fn apply_deployment(&mut self, event: &Event<Deployment>, now: Instant) {
        let delta = self
            .deployments
            .apply(event, namespaced_key, |d| Some(strip(d.clone())));
        self.watch_mut(Resource::Deployments).event(event, now);
        self.follow(Resource::Deployments, delta, now);
    }

    /// A StatefulSet watch event at `now`.
    pub fn apply_statefulset(&mut self, event: &Event<StatefulSet>, now: Instant) {
        let delta = self
            .statefulsets
            .apply(event, namespaced_key, |s| Some(strip(s.clone())));
        self.watch_mut(Resource::StatefulSets).event(event, now);
        self.follow(Resource::StatefulSets, delta, now);
    }

    /// A LeaderWorkerSet watch event at `now`.
    pub fn apply_leaderworkerset(&mut self, event: &Event<DynamicObject>, now: Instant) {
        let delta = self.leaderworkersets.apply(event, namespaced_key, |o| {
            serde_json::to_value(strip(o.clone())).ok()
        });
        self.watch_mut(Resource::LeaderWorkerSets).event(event, now);
        self.follow(Resource::LeaderWorkerSets, delta, now);
    }

    /// A watch's request failed; returns whether it just went down.
    pub fn watch_error(&mut self, r: Resource, reason: &str, now: Instant) -> bool {
        if r == Resource::Pods {
            for w in self.workloads.values_mut() {
                w.auditor.watch_error(now, reason);
            }
        }
        self.watch_mut(r).error(reason, now)
    }

    /// The API server does not serve resource `r`; returns whether that is
    /// news (worth one log line).
    pub fn not_served(&mut self, r: Resource, now: Instant) -> bool {
        self.watch_mut(r).not_served(now)
    }

    /// A heartbeat's outcome: the watches that must start afresh.
    pub fn beat(&mut self, beat: &Beat, now: Instant) -> Vec<Resource> {
        let mut resync = Vec::new();
        for (r, w) in self.watches.iter_mut() {
            let was_up = w.up();
            if w.beat(beat, now) {
                resync.push(*r);
            }
            if was_up && !w.up() {
                tracing::warn!(target: infera_cluster::trace::target::MONITOR, "watch {} not current: {}; infera_watch_up is 0 until it is", r.plural(), w.reason.as_deref().unwrap_or("blind"));
            }
        }
        let mut pods = false;
        for w in self.workloads.values_mut() {
            w.auditor.beat(beat, now);
            pods |= w.auditor.take_resync();
        }
        if pods && !resync.contains(&Resource::Pods) {
            resync.push(Resource::Pods);
        }
        resync
    }

    /// Every auditor settles its history (what can no longer change is
    /// folded into its statistics), so memory stays bounded over a long
    /// run whether or not anyone scrapes. No sample is taken: the monitor
    /// needs no sample series.
    pub fn settle(&mut self, now: Instant) {
        for w in self.workloads.values_mut() {
            let _ = w.auditor.stats_now(now);
        }
    }

    /// The workload the object of `r` under reflector key `key` describes
    /// now (`None`: gone, not selected by `-l`, or nothing to watch over).
    fn wanted_one(&self, r: Resource, key: &str) -> Option<Workload> {
        let selected =
            |labels: Option<&BTreeMap<String, String>>| labels_hold(&self.selector, labels);
        match r {
            Resource::Pods => None,
            // Selected as the reflector keeps them.
            Resource::InferaDeployments => workloads::of_inferadeployment(self.ideps.get(key)?),
            Resource::Deployments => Some(self.deployments.get(key)?)
                .filter(|d| selected(d.metadata.labels.as_ref()))
                .and_then(workloads::of_deployment),
            Resource::StatefulSets => Some(self.statefulsets.get(key)?)
                .filter(|s| selected(s.metadata.labels.as_ref()))
                .and_then(workloads::of_statefulset),
            Resource::LeaderWorkerSets => {
                let l = self.leaderworkersets.get(key)?;
                let labels = l.pointer("/metadata/labels").cloned();
                let labels = serde_json::from_value(labels.unwrap_or_default()).ok();
                Some(l)
                    .filter(|_| selected(labels.as_ref()))
                    .and_then(workloads::of_leaderworkerset)
            }
        }
    }

    /// The reflector keys of resource `r`.
    fn keys(&self, r: Resource) -> Vec<String> {
        match r {
            Resource::Pods => Vec::new(),
            Resource::InferaDeployments => self.ideps.iter().map(|(k, _)| k.clone()).collect(),
            Resource::Deployments => self.deployments.iter().map(|(k, _)| k.clone()).collect(),
            Resource::StatefulSets => self.statefulsets.iter().map(|(k, _)| k.clone()).collect(),
            Resource::LeaderWorkerSets => self
                .leaderworkersets
                .iter()
                .map(|(k, _)| k.clone())
                .collect(),
        }
    }

    /// The workloads the watched objects describe now.
    fn wanted(&self) -> BTreeMap<WorkloadKey, Workload> {
        Resource::ALL
            .into_iter()
            .flat_map(|r| {
                self.keys(r)
                    .into_iter()
                    .filter_map(move |k| self.wanted_one(r, &k))
            })
            .map(|w| (w.key(), w))
            .collect()
    }

    /// Follow what one event of `r` changed: the one object's workload
    /// after an update or a delete, every workload after a re-list,
    /// nothing while a re-list is buffered. An event costs its own object,
    /// not the cluster's.
    fn follow<V>(&mut self, r: Resource, delta: Delta<V>, now: Instant) {
        match delta {
            Delta::Nothing => {}
            Delta::Relisted { .. } => self.reconcile(now),
            Delta::Upserted(key) | Delta::Removed(key, _) => {
                let Some(wkey) = workloads::key_of(r.workload_kind(), &key) else {
                    return;
                };
                match self.wanted_one(r, &key) {
                    Some(w) => self.upsert(w, now),
                    None => {
                        self.workloads.remove(&wkey);
                    }
                }
            }
        }
    }

    /// Start an auditor for each new workload (or one whose roles changed),
    /// drop those of workloads gone. A new auditor is given the pod cache
    /// as its first list; none is started while the pod watch is in the
    /// middle of a list (it gets its turn at the list's end).
    fn reconcile(&mut self, now: Instant) {
        let wanted = self.wanted();
        self.workloads.retain(|k, _| wanted.contains_key(k));
        for workload in wanted.into_values() {
            self.upsert(workload, now);
        }
    }

    /// Keep `workload` up to date, with a new auditor if it is new or its
    /// roles changed; none is started while the pod watch is in the middle
    /// of a list.
    fn upsert(&mut self, workload: Workload, now: Instant) {
        if self.pods.relisting() {
            return;
        }
        let key = workload.key();
        match self.workloads.get_mut(&key) {
            Some(w) if w.workload.roles == workload.roles => w.workload = workload,
            _ => {
                let auditor = self.new_auditor(&workload, now);
                let roles = workload.roles.len();
                self.workloads.insert(
                    key,
                    Watched {
                        workload,
                        auditor,
                        exported: vec![(0.0, 0); roles],
                    },
                );
            }
        }
    }

    fn new_auditor(&self, w: &Workload, now: Instant) -> Auditor {
        let mut auditor = Auditor::new(w.roles.clone(), self.min_ready, SAMPLE_INTERVAL, 1.0)
            .with_target(w.name.clone())
            .with_namespace(w.namespace.clone());
        if self.pods.synced() {
            auditor.apply(&Event::Init, now);
            for pod in self
                .pods
                .values()
                .filter(|p| p.metadata.namespace.as_deref() == Some(w.namespace.as_str()))
            {
                auditor.apply(&Event::InitApply(pod.clone()), now);
            }
            auditor.apply(&Event::InitDone, now);
        }
        auditor
    }
}

/// How often the auditors settle their histories (and the interval their
/// reports would sample at; the monitor takes no sample).
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(10);

/// What the monitor's caches never need: `managedFields` (often most of
/// an object's size; the auditors read a pod's from the event itself, and a
/// pod replayed to a new auditor is only bounded the wider for it).
fn strip<K: kube::Resource>(mut obj: K) -> K {
    obj.meta_mut().managed_fields = None;
    obj
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn idep() -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "infera.amd.com/v1alpha1", "kind": "InferaDeployment",
            "metadata": {"name": "llm", "namespace": "prod", "labels": {"team": "a"}},
            "spec": {"services": {"decode": {"componentType": "worker", "role": "decode", "replicas": 1}}}
        }))
        .unwrap()
    }

    fn pod(name: &str, ready: bool) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "prod", "uid": name,
                "labels": {LABEL_DEPLOYMENT: "llm", LABEL_SERVICE: "decode"},
                "annotations": {WORKER_INFO_ANNOTATION: "{}"}},
            "spec": {"containers": [{"name": "main", "command": ["python3", "-m", "infera.engine.vllm"]}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}
        }))
        .unwrap()
    }

    use infera_model::worker::{LABEL_DEPLOYMENT, LABEL_SERVICE, WORKER_INFO_ANNOTATION};

    fn listed(state: &mut State, now: Instant, pods: &[Pod]) {
        state.apply_idep(&Event::Init, now);
        state.apply_idep(&Event::InitApply(idep()), now);
        state.apply_idep(&Event::InitDone, now);
        state.apply_deployment(&Event::Init, now);
        state.apply_deployment(&Event::InitDone, now);
        state.apply_statefulset(&Event::Init, now);
        state.apply_statefulset(&Event::InitDone, now);
        state.apply_leaderworkerset(&Event::Init, now);
        state.apply_leaderworkerset(&Event::InitDone, now);
        state.apply_pod(&Event::Init, now);
        for p in pods {
            state.apply_pod(&Event::InitApply(p.clone()), now);
        }
        state.apply_pod(&Event::InitDone, now);
    }

    const DECODE: &str = "{namespace=\"prod\",workload=\"idep/llm\",role=\"decode\"}";

    #[test]
    fn counts_while_current_absent_while_blind() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut state = State::new(1, Selector::default(), t0);
        listed(&mut state, at(10), &[pod("a", true)]);
        let text = crate::metrics::encode_state(&mut state, at(20));
        assert!(
            text.contains(&format!("infera_role_ready_pods{DECODE} 1")),
            "{text}"
        );
        assert!(
            text.contains(&format!("infera_role_desired_replicas{DECODE} 1")),
            "{text}"
        );
        assert!(
            text.contains(&format!("infera_rollout_in_progress{DECODE} 0")),
            "{text}"
        );
        assert!(
            text.contains("infera_watch_up{resource=\"pods\"} 1"),
            "{text}"
        );
        // The pod goes unready for 2 s: one gap, 2 s below the floor.
        state.apply_pod(&Event::Apply(pod("a", false)), at(1000));
        state.apply_pod(&Event::Apply(pod("a", true)), at(3000));
        let text = crate::metrics::encode_state(&mut state, at(3500));
        assert!(
            text.contains(&format!("infera_role_gaps_total{DECODE} 1")),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "infera_role_below_min_ready_seconds_total{DECODE} 2.0"
            )),
            "{text}"
        );
        // The pod watch fails: no count is exported as current.
        state.watch_error(Resource::Pods, "cannot reach the Kubernetes API", at(4000));
        let text = crate::metrics::encode_state(&mut state, at(4100));
        assert!(!text.contains("infera_role_ready_pods{"), "{text}");
        assert!(!text.contains("infera_role_routable_pods{"), "{text}");
        assert!(
            text.contains("infera_watch_up{resource=\"pods\"} 0"),
            "{text}"
        );
        assert!(state.ready().is_err());
        // A re-list makes it current again.
        state.apply_pod(&Event::Init, at(5000));
        state.apply_pod(&Event::InitApply(pod("a", true)), at(5000));
        state.apply_pod(&Event::InitDone, at(5000));
        let text = crate::metrics::encode_state(&mut state, at(5100));
        assert!(
            text.contains(&format!("infera_role_ready_pods{DECODE} 1")),
            "{text}"
        );
        assert!(
            text.contains("infera_watch_unobserved_seconds_total{resource=\"pods\"} 2.01"),
            "{text}"
        );
    }

    /// A resource the API server does not serve (a 404 on the list, as the
    /// real kube-apiserver answers for a CRD not installed) is up with
    /// nothing in it, also while the watcher asks again (its Init comes
    /// before the list), until another error says otherwise.
    #[test]
    fn a_resource_not_served_stays_up_while_asked_again() {
        let t0 = Instant::now();
        let mut state = State::new(1, Selector::default(), t0);
        let lws = Resource::LeaderWorkerSets;
        let up = |state: &State| state.watches[&lws].up();
        state.apply_leaderworkerset(&Event::Init, t0);
        assert!(state.not_served(lws, t0), "news the first time");
        assert!(up(&state));
        for retry in 1..3 {
            let at = t0 + Duration::from_secs(60 * retry);
            state.apply_leaderworkerset(&Event::Init, at);
            assert!(up(&state), "retry {retry}: asking again is not blindness");
            assert!(!state.not_served(lws, at), "not news again");
            assert!(up(&state));
        }
        state.watch_error(lws, "forbidden: cannot list leaderworkersets", t0);
        assert!(!up(&state), "another error is down");
    }

    #[test]
    fn a_selector_keeps_only_matching_workloads() {
        let t0 = Instant::now();
        for (selector, kept) in [
            ("team=b", false),
            ("team=a", true),
            ("team in (a,b)", true),
            ("team notin (a)", false),
            ("team,!canary", true),
            ("!team", false),
        ] {
            let mut state = State::new(1, Selector::parse(selector).unwrap(), t0);
            listed(&mut state, t0, &[pod("a", true)]);
            assert_eq!(state.workloads.len(), usize::from(kept), "{selector}");
        }
    }

    fn renamed(idep: DynamicObject, name: &str, role: &str) -> DynamicObject {
        let mut v = serde_json::to_value(idep).unwrap();
        v["metadata"]["name"] = json!(name);
        v["spec"]["services"]["decode"]["role"] = json!(role);
        serde_json::from_value(v).unwrap()
    }

    fn watched(state: &State) -> Vec<String> {
        state.workloads.keys().map(|(_, w)| w.clone()).collect()
    }

    #[test]
    fn an_event_changes_its_own_workload_and_keeps_the_others() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut state = State::new(1, Selector::default(), t0);
        listed(&mut state, at(10), &[pod("a", true)]);
        // The listed workload's auditor has seen pod a; a new one would not
        // have it until a re-list.
        let counted = |state: &State| {
            state.workloads[&("prod".into(), "idep/llm".into())]
                .auditor
                .counts()[0]
                .ready
        };
        assert_eq!(counted(&state), 1);
        state.apply_idep(&Event::Apply(renamed(idep(), "other", "decode")), at(20));
        assert_eq!(watched(&state), ["idep/llm", "idep/other"]);
        assert_eq!(counted(&state), 1, "an unrelated event kept the auditor");
        // Same roles: kept; a changed role: a new auditor, given the pod cache.
        state.apply_idep(&Event::Apply(idep()), at(30));
        assert_eq!(counted(&state), 1);
        state.apply_idep(&Event::Apply(renamed(idep(), "llm", "mixed")), at(40));
        assert_eq!(
            state.workloads[&("prod".into(), "idep/llm".into())]
                .workload
                .roles[0]
                .role,
            "mixed"
        );
        state.apply_idep(&Event::Delete(renamed(idep(), "llm", "mixed")), at(50));
        assert_eq!(watched(&state), ["idep/other"]);
        // A Deployment the operator did not render, running no engine: none.
        let plain: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "prod"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}}
        }))
        .unwrap();
        state.apply_deployment(&Event::Apply(plain), at(60));
        assert_eq!(watched(&state), ["idep/other"]);
        // A re-list without `other` drops it.
        state.apply_idep(&Event::Init, at(70));
        assert_eq!(
            watched(&state),
            ["idep/other"],
            "kept while the re-list is buffered"
        );
        state.apply_idep(&Event::InitDone, at(80));
        assert!(watched(&state).is_empty());
    }

    #[test]
    fn a_disrupted_pod_is_exported_by_its_reason_until_it_is_gone() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut state = State::new(1, Selector::default(), t0);
        listed(&mut state, at(10), &[pod("a", true), pod("b", true)]);
        let text = crate::metrics::encode_state(&mut state, at(20));
        assert!(
            text.contains(&format!("infera_disruption_in_progress{DECODE} 0")),
            "{text}"
        );
        assert!(!text.contains("infera_role_disrupted_pods{"), "{text}");
        let mut evicted = pod("a", true);
        if let Some(status) = evicted.status.as_mut() {
            status.conditions.get_or_insert_default().push(
                serde_json::from_value(json!({"type": "DisruptionTarget", "status": "True",
                    "reason": infera_model::pod::EVICTION_BY_EVICTION_API}))
                .unwrap(),
            );
        }
        state.apply_pod(&Event::Apply(evicted.clone()), at(100));
        let text = crate::metrics::encode_state(&mut state, at(200));
        assert!(
            text.contains(&format!("infera_disruption_in_progress{DECODE} 1")),
            "{text}"
        );
        let labels = DECODE.trim_end_matches('}');
        assert!(
            text.contains(&format!(
                "infera_role_disrupted_pods{labels},reason=\"evicted\"}} 1"
            )),
            "{text}"
        );
        state.apply_pod(&Event::Delete(evicted), at(300));
        let text = crate::metrics::encode_state(&mut state, at(400));
        assert!(
            text.contains(&format!("infera_disruption_in_progress{DECODE} 0")),
            "{text}"
        );
        assert!(!text.contains("infera_role_disrupted_pods{"), "{text}");
    }
}
