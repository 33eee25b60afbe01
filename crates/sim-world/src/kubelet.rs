//! The kubelet, one task per pod bound to a simulated node, in scenario
//! time, writing through the API (`pods/status`, the registration
//! annotation, the final delete) as a kubelet does.
//!
//! Start: pod IP from the pod CIDR, image pull, containers Running. An
//! infera worker (main container runs `infera.engine.*`) then loads weights
//! (with seeded jitter), passes the PD barrier (a prefill waits for a
//! registered decode of the same InferaDeployment, then transfers a KV
//! block; a decode never waits), registers (the
//! `infera.amd.com/worker-info` annotation) and opens a real listener on
//! `podIP:readinessPort` answering `GET /ready`. Once its weights are
//! loaded the engine serves on `podIP:enginePort` (`GET /health` answers
//! 200, and the OpenAI API: `engine.rs`), before the worker registers. A
//! router pod (`infera.server`) serves on its port once running
//! (`router.rs`). Readiness follows the pod's actual
//! probe, sent for real to the port it names with the probe's period,
//! timeout and thresholds: on the readiness port Ready means routable; on
//! the engine port (the operator's `/health` before PR #176) a pod is Ready
//! before it is routable. A probe on another port passes once weights are
//! loaded, exec/other probes at Running, no probe means Ready at Running;
//! startupProbe is honoured. Termination: preStop (a `sleep N` exec is
//! slept), then SIGTERM: the engine's port refuses new connections and
//! drains what is in flight for the engine's drain time (a router's until
//! the grace period ends), bounded by the grace period, then cuts the
//! rest; meanwhile the readiness port closes and the annotation is cleared
//! (NotReady when the pod has a readiness probe), teardown bounded by the
//! grace period; then `delete` with `gracePeriodSeconds=0` and a UID
//! precondition.
//!
//! Simplifications: once a pod's probe result is stable the prober stops
//! ticking until something changes (a crash, a node fault, registration,
//! deletion), which gives the same transitions at a fraction of the
//! wakeups; liveness probes are not run; probe timeouts are at least
//! [`PROBE_WALL_FLOOR`] of wall time (a listener here answers at once or
//! refuses, so a probe only times out when the host starves the runtime: a
//! loaded test machine must not fail a local probe).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The shortest wall-clock timeout of a simulated probe. A CI run saw a
/// Ready prefill fail three 1 s probes in a row while registered and
/// listening (the sim suite on 2 loaded cores): starvation, not the model.
const PROBE_WALL_FLOOR: Duration = Duration::from_secs(5);

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::listener::{Listener, PodIp, READY_PATHS};
use super::prober::{self, Engine, Probe, Seen};
pub(super) use super::registry::Registry;
use super::registry::{Member, Membership};
use super::router::{self, RouterPlace, RouterSpec};
use super::serve::ServingPort;
use super::{Shared, retry, status_code};
use infera_sim_core::json::str_at;

pub use super::prober::is_infera_worker;

pub use infera_model::worker::WORKER_INFO_ANNOTATION;
/// The hostIP every simulated pod reports.
const HOST_IP: &str = "192.168.0.1";

/// What the pod manager tells a pod's task.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct PodSignal {
    pub deleting: bool,
    pub crashes: u64,
    pub node_not_ready: bool,
}

/// A registered worker: its open port and its place in the registry; both
/// go when it is dropped (crash, termination, task aborted).
struct Registration {
    _listener: Option<Listener>,
    _member: Option<Membership>,
}

/// A running router: its port, its registration tasks and the flag that
/// marks what it drops from then on as cut.
struct RunningRouter {
    port: ServingPort,
    _registrations: router::Registrations,
    stopping: Arc<std::sync::atomic::AtomicBool>,
}

/// What one pod's task starts from.
pub(super) struct PodStart {
    pub shared: Arc<Shared>,
    pub registry: Arc<Registry>,
    pub pod: Value,
    pub ip: PodIp,
    pub jitter: f64,
    pub signal: watch::Receiver<PodSignal>,
}

/// The parts of the spec the kubelet acts on.
struct Spec {
    ns: String,
    name: String,
    uid: String,
    engine: Option<Engine>,
    /// The router the pod runs (`infera.server`), if it runs one.
    router: Option<RouterSpec>,
    readiness: Option<Probe>,
    startup: Option<Probe>,
    idep: (String, String),
    grace: f64,
    prestop: Option<f64>,
    containers: Vec<(String, String)>,
    has_qos: bool,
    node: String,
}

fn spec_of(pod: &Value) -> Spec {
    let main = prober::main_container(pod);
    let engine = prober::engine_of(pod);
    let probe = |field: &str| {
        main.get(field)
            .filter(|v| v.is_object())
            .map(|p| prober::probe_of(p, &main, engine.as_ref()))
    };
    let ns = str_at(pod, "/metadata/namespace").to_string();
    let containers = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            (
                str_at(c, "/name").to_string(),
                str_at(c, "/image").to_string(),
            )
        })
        .collect();
    Spec {
        idep: (
            ns.clone(),
            str_at(pod, "/metadata/labels/infera.amd.com~1deployment").to_string(),
        ),
        router: router::router_of(pod, &main),
        ns,
        name: str_at(pod, "/metadata/name").to_string(),
        uid: str_at(pod, "/metadata/uid").to_string(),
        readiness: probe("readinessProbe"),
        startup: probe("startupProbe"),
        grace: pod
            .pointer("/spec/terminationGracePeriodSeconds")
            .and_then(Value::as_f64)
            .unwrap_or(30.0),
        prestop: prober::prestop_seconds(&main),
        has_qos: pod.pointer("/status/qosClass").is_some(),
        node: str_at(pod, "/spec/nodeName").to_string(),
        containers,
        engine,
    }
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(if s.is_finite() { s.max(0.0) } else { 0.0 })
}

/// Where the main container is in its life, in scenario seconds since the
/// clock started.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Not running: pulling its image (first start) or backing off after an
    /// exit; it starts at `at`.
    Waiting { at: f64 },
    /// Running since `since`; an engine's weights are loaded at `loaded_at`.
    Loading { since: f64, loaded_at: f64 },
    /// Running since `since` with the weights loaded (the engine port open).
    Loaded { since: f64 },
}

impl Default for Phase {
    fn default() -> Self {
        Phase::Waiting { at: 0.0 }
    }
}

impl Phase {
    fn running(self) -> bool {
        !matches!(self, Phase::Waiting { .. })
    }

    fn loaded(self) -> bool {
        matches!(self, Phase::Loaded { .. })
    }

    /// When the running container started (`None` while waiting).
    fn since(self) -> Option<f64> {
        match self {
            Phase::Waiting { .. } => None,
            Phase::Loading { since, .. } | Phase::Loaded { since } => Some(since),
        }
    }
}

/// Container lifecycle state, in scenario seconds since the clock started.
#[derive(Default)]
struct State {
    phase: Phase,
    restarts: i64,
    registration: Option<Registration>,
    /// The engine's port, open while weights are loaded.
    engine_port: Option<ServingPort>,
    /// A router's port and registrations, open while it runs.
    router: Option<RunningRouter>,
    barrier_done_at: Option<f64>,
    ready: bool,
    started: bool,
    next_probe: Option<f64>,
    next_startup: Option<f64>,
    ok_run: u32,
    fail_run: u32,
    s_fail: u32,
    written: Option<(bool, bool, i64, bool)>,
    start_time: Option<String>,
    /// When the running container started (`state.running.startedAt`: kept
    /// while it runs, as the kubelet does; cleared when it exits).
    container_started: Option<String>,
    /// Condition type -> (status, lastTransitionTime).
    transitions: HashMap<&'static str, (bool, String)>,
}

struct PodTask {
    shared: Arc<Shared>,
    registry: Arc<Registry>,
    spec: Spec,
    ip: PodIp,
    load_time: f64,
    st: State,
}

/// Run one pod until it is removed (or the task is aborted).
pub(super) async fn run_pod(start: PodStart) {
    let spec = spec_of(&start.pod);
    drop(start.pod);
    let mut task = PodTask {
        load_time: start.shared.scenario.timings.weight_load + start.jitter,
        shared: start.shared,
        registry: start.registry,
        spec,
        ip: start.ip,
        st: State::default(),
    };
    let mut signal = start.signal;
    task.begin();
    if task.live(&mut signal).await {
        task.terminate().await;
    }
}

impl PodTask {
    fn now(&self) -> f64 {
        self.shared.clock.elapsed().as_secs_f64()
    }

    fn api(&self) -> Api<Pod> {
        Api::namespaced(self.shared.client.clone(), &self.spec.ns)
    }

    fn readiness_addr(&self) -> Option<SocketAddr> {
        let e = self.spec.engine.as_ref()?;
        Some(SocketAddr::from((self.ip.addr(), e.readiness_port)))
    }

    /// Where a probe of `check` goes.
    fn probe_addr(&self, check: &prober::Check) -> Option<SocketAddr> {
        self.spec.engine.as_ref()?.target(check, self.ip.addr())
    }

    /// A port opened on `addr`, or `None` (said on stderr) when it could not be.
    fn opened<T>(&self, addr: SocketAddr, port: std::io::Result<T>) -> Option<T> {
        port.inspect_err(|err| {
            eprintln!(
                "infera sim: pod {}/{}: cannot listen on {addr}: {err}",
                self.spec.ns, self.spec.name
            );
        })
        .ok()
    }

    /// `addr` opened with `paths` (the readiness port).
    fn listen(&self, addr: SocketAddr, paths: &'static [&'static str]) -> Option<Listener> {
        self.opened(addr, Listener::open(addr, paths))
    }

    /// `app` served on `addr` (the engine's port, a router's).
    fn serve(&self, addr: SocketAddr, app: axum::Router) -> Option<ServingPort> {
        self.opened(addr, ServingPort::open(addr, app))
    }

    /// The engine starts serving once its weights are loaded (unless its
    /// port is the readiness port, which the worker owns).
    fn open_engine_port(&mut self) {
        let Some(e) = &self.spec.engine else {
            return;
        };
        let port = u16::try_from(e.port)
            .ok()
            .filter(|p| *p != e.readiness_port);
        let addr = port.map(|p| SocketAddr::from((self.ip.addr(), p)));
        let timings = &self.shared.scenario.timings;
        let app = super::engine::app(super::engine::EngineConfig {
            model: e.model.clone(),
            clock: self.shared.clock.clone(),
            ttft: timings.ttft,
            token_rate: timings.token_rate,
            kv: super::engine::KvHandshake {
                pod: self.spec.name.clone(),
                digest: e.kv.digest(),
                policy: e.kv_policy,
                recompute_ttft: timings.recompute_ttft,
            },
        });
        self.st.engine_port = addr.and_then(|a| self.serve(a, app));
    }

    /// A router pod starts serving once its container runs.
    fn open_router(&mut self) {
        let Some(spec) = self.spec.router.clone() else {
            return;
        };
        let place = RouterPlace {
            client: self.shared.client.clone(),
            namespace: self.spec.ns.clone(),
            pod: self.spec.name.clone(),
            clock: self.shared.clock.clone(),
            lag: self.shared.scenario.timings.router_lag,
            log: self.shared.options.requests.clone(),
        };
        let (app, registrations, stopping) = router::start(place, &spec);
        let addr = SocketAddr::from((self.ip.addr(), spec.port));
        self.st.router = self.serve(addr, app).map(|port| RunningRouter {
            port,
            _registrations: registrations,
            stopping,
        });
    }

    /// Post a kubelet event about every container (see `kubelet_events.rs`).
    fn container_events(&self, type_: &str, reason: &str, message: impl Fn(&str, &str) -> String) {
        let subject = super::kubelet_events::Subject {
            client: self.shared.client.clone(),
            ns: self.spec.ns.clone(),
            pod: self.spec.name.clone(),
            uid: self.spec.uid.clone(),
            node: self.spec.node.clone(),
        };
        for (name, image) in &self.spec.containers {
            subject.post(name, type_, reason, message(name, image));
        }
    }

    fn begin(&mut self) {
        self.container_events("Normal", "Pulling", |_, image| {
            format!("Pulling image {image:?}")
        });
        let t = self.now();
        self.st.phase = Phase::Waiting {
            at: t + self.shared.scenario.timings.image_pull,
        };
        self.st.started = self.spec.startup.is_none();
    }

    fn seen(&self) -> Seen {
        Seen {
            registered: self.st.registration.is_some(),
            loaded: self.st.phase.loaded(),
            running: self.st.phase.running(),
        }
    }

    /// Until deletion: false when the pod went away (nothing to terminate).
    async fn live(&mut self, signal: &mut watch::Receiver<PodSignal>) -> bool {
        let mut last = signal.borrow().clone();
        let registry = self.registry.clone();
        loop {
            // Armed before the barrier is checked: a decode registering
            // while this pod writes its status still wakes it.
            let barrier = registry.changed().notified();
            let mut barrier = std::pin::pin!(barrier);
            barrier.as_mut().enable();
            let sig = signal.borrow().clone();
            if sig.deleting {
                return true;
            }
            if sig.crashes != last.crashes && self.st.phase.running() {
                self.crash().await;
            }
            last = sig.clone();
            self.milestones();
            if !self.register().await {
                return false;
            }
            self.startup_probe().await;
            self.readiness_probe().await;
            if !self.write_status(sig.node_not_ready).await {
                return false;
            }
            let waiting_barrier = self.waiting_barrier();
            let sleep_for = self.wake().map(|w| secs(w - self.now()));
            let clock = self.shared.clock.clone();
            tokio::select! {
                changed = signal.changed() => { if changed.is_err() { return false; } }
                _ = barrier, if waiting_barrier => {}
                _ = async { match sleep_for { Some(d) => clock.sleep(d).await, None => std::future::pending().await } } => {}
            }
        }
    }

    /// The container exits and restarts after a backoff.
    async fn crash(&mut self) {
        self.exited(self.now());
        self.st.barrier_done_at = None;
        if self.st.registration.take().is_some() {
            self.annotate(None).await;
        }
        self.st.started = self.spec.startup.is_none();
        self.st.next_probe = None;
        self.st.next_startup = None;
        self.st.ok_run = 0;
        self.st.fail_run = 0;
        self.st.ready = false;
    }

    /// The container exited at `now` (a crash or a failed startup probe):
    /// it restarts after the backoff, its engine port closed.
    fn exited(&mut self, now: f64) {
        self.st.phase = Phase::Waiting {
            at: now + self.shared.scenario.timings.restart_backoff,
        };
        self.st.engine_port = None;
        self.st.router = None;
        self.st.restarts += 1;
        self.st.s_fail = 0;
    }

    fn milestones(&mut self) {
        let now = self.now();
        if let Phase::Waiting { at } = self.st.phase
            && now >= at
        {
            self.st.phase = Phase::Loading {
                since: at,
                loaded_at: at + self.load_time,
            };
            if self.st.restarts == 0 {
                let pull = self.shared.scenario.timings.image_pull;
                self.container_events("Normal", "Pulled", |_, image| {
                    format!("Successfully pulled image {image:?} in {pull}s ({pull}s including waiting). Image size: 0 bytes.")
                });
            }
            self.container_events("Normal", "Created", |_, _| "Container created".into());
            self.container_events("Normal", "Started", |_, _| "Container started".into());
            self.open_router();
            self.st.next_startup = self.spec.startup.as_ref().map(|p| at + p.initial);
            if self.st.started {
                self.st.next_probe = self.spec.readiness.as_ref().map(|p| at + p.initial);
            }
        }
        if let Phase::Loading { since, loaded_at } = self.st.phase
            && self.spec.engine.is_some()
            && now >= loaded_at
        {
            self.st.phase = Phase::Loaded { since };
            self.open_engine_port();
        }
    }

    fn is_role(&self, role: &str) -> bool {
        self.spec.engine.as_ref().is_some_and(|e| e.role == role)
    }

    /// Register a loaded worker once through the PD barrier; false when the
    /// pod is gone.
    async fn register(&mut self) -> bool {
        if !self.st.phase.loaded() || self.st.registration.is_some() {
            return true;
        }
        let now = self.now();
        if self.is_role("prefill") {
            match self.st.barrier_done_at {
                Some(at) if now >= at => {}
                Some(_) => return true,
                None => {
                    if self.registry.has(&self.spec.idep) {
                        self.st.barrier_done_at = Some(now + self.shared.scenario.timings.barrier);
                    }
                    return true;
                }
            }
        }
        let Some(e) = self.spec.engine.clone() else {
            return true;
        };
        if let Some(why) = self.kv_check(&e) {
            self.barrier_failed(&why).await;
            return true;
        }
        let info = json!({"worker_id": self.spec.name, "url": format!("http://{}:{}", self.ip.addr(), e.port),
            "model_name": e.model, "engine": e.engine, "status": "ready", "disagg_mode": e.role}).to_string();
        if !self.annotate(Some(info)).await {
            return false;
        }
        let listener = self
            .readiness_addr()
            .and_then(|addr| self.listen(addr, READY_PATHS));
        let member = (self.is_role("prefill") || self.is_role("decode")).then(|| {
            let m = Member {
                pod: self.spec.name.clone(),
                role: e.role.clone(),
                kv: e.kv.clone(),
            };
            Registry::join(&self.registry, &self.spec.idep, m)
        });
        self.st.registration = Some(Registration {
            _listener: listener,
            _member: member,
        });
        true
    }

    /// Under an operator with the KV barrier (PR #176): why this worker may
    /// not register. A decode probes every registered prefill, a prefill
    /// has moved its block to the first registered decode; an identity that
    /// differs fails. Before #176 nothing is checked.
    fn kv_check(&self, e: &prober::Engine) -> Option<String> {
        if !self.shared.scenario.operator.kv_barrier() {
            return None;
        }
        self.registry.kv_conflict(&self.spec.idep, &e.role, &e.kv)
    }

    /// The barrier's failure is fatal: the container exits and restarts
    /// after the backoff (CrashLoopBackOff while it waits).
    async fn barrier_failed(&mut self, why: &str) {
        self.container_events("Warning", "BackOff", |name, _| {
            format!("Back-off restarting failed container {name}: {why}")
        });
        self.crash().await;
    }

    fn probe_timeout(&self, p: &Probe) -> Duration {
        self.shared
            .clock
            .to_wall(secs(p.timeout))
            .max(PROBE_WALL_FLOOR)
    }

    async fn probe(&self, p: &Probe) -> bool {
        prober::run(
            &p.check,
            self.probe_addr(&p.check),
            self.probe_timeout(p),
            self.seen(),
        )
        .await
    }

    async fn startup_probe(&mut self) {
        let (Some(p), Some(at)) = (self.spec.startup.clone(), self.st.next_startup) else {
            return;
        };
        let now = self.now();
        if self.st.started || now < at {
            return;
        }
        if self.probe(&p).await {
            self.st.started = true;
            let from = self.st.phase.since().unwrap_or(now);
            self.st.next_probe = self
                .spec
                .readiness
                .as_ref()
                .map(|r| (from + r.initial).max(now));
        } else {
            self.st.s_fail += 1;
            if self.st.s_fail >= p.failure {
                self.exited(now);
            }
        }
        self.st.next_startup = if self.st.started {
            None
        } else {
            Some(at + p.period)
        };
    }

    async fn readiness_probe(&mut self) {
        let Some(p) = self.spec.readiness.clone() else {
            self.st.ready = self.st.phase.running() && self.st.started;
            return;
        };
        if !self.st.phase.running() {
            self.st.ready = false;
        }
        let Some(at) = self.st.next_probe else {
            return;
        };
        if !(self.st.phase.running() && self.st.started && self.now() >= at) {
            return;
        }
        if self.probe(&p).await {
            self.st.ok_run += 1;
            self.st.fail_run = 0;
            if self.st.ok_run >= p.success {
                self.st.ready = true;
            }
        } else {
            self.st.fail_run += 1;
            self.st.ok_run = 0;
            let target = self
                .probe_addr(&p.check)
                .map(|a| a.to_string())
                .unwrap_or_default();
            self.container_events("Warning", "Unhealthy", |_, _| {
                format!("Readiness probe failed: probe to {target} did not succeed")
            });
            if self.st.fail_run >= p.failure {
                self.st.ready = false;
            }
        }
        self.st.next_probe = Some(at + p.period);
    }

    fn waiting_barrier(&self) -> bool {
        self.is_role("prefill")
            && self.st.phase.loaded()
            && self.st.registration.is_none()
            && self.st.barrier_done_at.is_none()
    }

    /// The earliest pending milestone or probe tick.
    fn wake(&self) -> Option<f64> {
        let st = &self.st;
        let mut wake: Option<f64> = None;
        let mut consider = |x: Option<f64>| {
            if let Some(x) = x {
                wake = Some(wake.map_or(x, |w: f64| w.min(x)));
            }
        };
        match st.phase {
            Phase::Waiting { at } => consider(Some(at)),
            Phase::Loading { loaded_at, .. } if self.spec.engine.is_some() => {
                consider(Some(loaded_at));
            }
            Phase::Loading { .. } | Phase::Loaded { .. } => {}
        }
        if st.registration.is_none() {
            consider(st.barrier_done_at);
        }
        if !st.started {
            consider(st.next_startup);
        }
        let stable = self.spec.readiness.as_ref().is_none_or(|p| {
            let passing = p.check.expected(self.seen());
            passing == st.ready && (!passing || st.ok_run >= p.success)
        });
        if !stable {
            consider(st.next_probe);
        }
        wake
    }
}

/// The result of a write: done, the pod is gone (404), or it failed for
/// now (retried at the next change).
#[derive(Debug, PartialEq)]
enum Wrote {
    Done,
    Gone,
    Failed,
}

fn outcome<T>(r: Result<T, kube::Error>) -> Wrote {
    match r {
        Ok(_) => Wrote::Done,
        Err(e) if status_code(&e) == Some(404) => Wrote::Gone,
        Err(_) => Wrote::Failed,
    }
}

impl PodTask {
    /// Set (`Some`) or clear the registration annotation; false when the
    /// pod is gone.
    async fn annotate(&self, info: Option<String>) -> bool {
        let patch = json!({"metadata": {"annotations": {WORKER_INFO_ANNOTATION: info}}});
        let api = self.api();
        let pp = PatchParams::default();
        let patch = Patch::Merge(&patch);
        outcome(retry(|| api.patch(&self.spec.name, &pp, &patch)).await) != Wrote::Gone
    }

    async fn patch_status(&self, status: Value) -> Wrote {
        let patch = json!({"status": status});
        let api = self.api();
        let pp = PatchParams::default();
        let patch = Patch::Strategic(&patch);
        outcome(retry(|| api.patch_status(&self.spec.name, &pp, &patch)).await)
    }

    /// A pod condition, keeping lastTransitionTime while its status holds.
    fn condition(&mut self, type_: &'static str, status: bool, now: &str) -> Value {
        let since = match self.st.transitions.get(type_) {
            Some((s, t)) if *s == status => t.clone(),
            _ => now.to_string(),
        };
        self.st.transitions.insert(type_, (status, since.clone()));
        let s = if status { "True" } else { "False" };
        json!({"type": type_, "status": s, "lastProbeTime": null, "lastTransitionTime": since})
    }

    fn container_statuses(&self, ready: bool, now: &str) -> Value {
        let st = &self.st;
        let state = if st.phase.running() {
            json!({"running": {"startedAt": st.container_started.as_deref().unwrap_or(now)}})
        } else if st.restarts > 0 {
            json!({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off restarting failed container"}})
        } else {
            json!({"waiting": {"reason": "ContainerCreating"}})
        };
        let list: Vec<Value> = self
            .spec
            .containers
            .iter()
            .enumerate()
            .map(|(i, (name, image))| {
                let restarts = if i == 0 { st.restarts } else { 0 };
                json!({"name": name, "image": image, "imageID": format!("docker-pullable://{image}"),
                    "containerID": format!("containerd://{:x}", st.restarts + 1), "ready": ready && st.phase.running(),
                    "started": st.phase.running(), "restartCount": restarts, "state": state})
            })
            .collect();
        Value::from(list)
    }

    /// Post phase, IPs, container statuses and conditions when they
    /// changed; false when the pod is gone.
    async fn write_status(&mut self, node_not_ready: bool) -> bool {
        let running = self.st.phase.running();
        let ready = self.st.ready && !node_not_ready && running;
        let state = (
            running,
            ready,
            self.st.restarts,
            self.st.registration.is_some(),
        );
        if self.st.written == Some(state) {
            return true;
        }
        let now = self.shared.clock.timestamp();
        let start = self
            .st
            .start_time
            .get_or_insert_with(|| now.clone())
            .clone();
        if running {
            self.st.container_started.get_or_insert_with(|| now.clone());
        } else {
            self.st.container_started = None;
        }
        let ip = self.ip.addr().to_string();
        let phase = if running || self.st.restarts > 0 {
            "Running"
        } else {
            "Pending"
        };
        let mut status = json!({"phase": phase, "hostIP": HOST_IP, "hostIPs": [{"ip": HOST_IP}],
        "podIP": ip, "podIPs": [{"ip": ip}], "startTime": start,
        "containerStatuses": self.container_statuses(ready, &now),
        "conditions": [
            self.condition("Initialized", true, &now),
            self.condition("ContainersReady", ready, &now),
            self.condition("Ready", ready, &now),
        ]});
        if !self.spec.has_qos {
            status["qosClass"] = Value::from("BestEffort");
        }
        match self.patch_status(status).await {
            Wrote::Done => self.st.written = Some(state),
            Wrote::Gone => return false,
            Wrote::Failed => {}
        }
        true
    }

    /// Graceful termination, then the final delete.
    async fn terminate(&mut self) {
        let clock = self.shared.clock.clone();
        let deadline = self.now() + self.spec.grace;
        if self.st.phase.running() {
            self.container_events("Normal", "Killing", |name, _| {
                format!("Stopping container {name}")
            });
            if let Some(sleep) = self.spec.prestop {
                clock.sleep(secs(sleep.min(self.spec.grace))).await;
            }
            let draining = self.sigterm(deadline);
            let (_, alive) = tokio::join!(draining, self.stop_serving(deadline));
            if !alive {
                return;
            }
        }
        self.st.registration = None;
        self.st.engine_port = None;
        self.st.router = None;
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(self.spec.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        let api = self.api();
        let _ = retry(|| api.delete(&self.spec.name, &params)).await;
    }

    /// SIGTERM to the main container: its server (the engine's port, a
    /// router's) refuses new connections and finishes what is in flight
    /// for the engine's drain time (a router: until the grace period
    /// ends), bounded by what is left of the grace period; then the rest
    /// is cut. The returned future ends when the server is gone.
    fn sigterm(&mut self, deadline: f64) -> impl std::future::Future<Output = ()> + use<> {
        let left = (deadline - self.now()).max(0.0);
        let engine = self.st.engine_port.take().map(|port| {
            let drain = self.spec.engine.as_ref().map_or(0.0, |e| e.drain);
            (port, drain.min(left))
        });
        let router = self.st.router.take().map(|r| {
            r.stopping.store(true, std::sync::atomic::Ordering::Relaxed);
            (r.port, left)
        });
        let clock = self.shared.clock.clone();
        async move {
            for (port, drain) in engine.into_iter().chain(router) {
                port.drain(clock.to_wall(secs(drain))).await;
            }
        }
    }

    /// After SIGTERM: the readiness port closes (and a decode leaves the
    /// registry), the registration is cleared, the pod turns NotReady
    /// (with a readiness probe), then the teardown, bounded by the grace
    /// period; false when the pod is gone.
    async fn stop_serving(&mut self, deadline: f64) -> bool {
        let clock = self.shared.clock.clone();
        self.st.registration = None;
        if !self.annotate(None).await {
            return false;
        }
        if self.spec.readiness.is_some() {
            let now = clock.timestamp();
            let status = json!({"containerStatuses": self.container_statuses(false, &now),
                "conditions": [self.condition("ContainersReady", false, &now), self.condition("Ready", false, &now)]});
            if self.patch_status(status).await == Wrote::Gone {
                return false;
            }
        }
        let left = (deadline - self.now()).max(0.0);
        clock
            .sleep(secs(self.shared.scenario.timings.teardown.min(left)))
            .await;
        true
    }
}
