//! The kubelet, one task per bound pod, in scenario time.
//!
//! Start: image pull, containers Running. An infera worker (main container
//! runs `infera.engine.*`) then loads weights (with seeded jitter), passes the
//! PD barrier (a prefill waits for a registered decode of the same
//! InferaDeployment, then transfers a KV block; a decode never waits),
//! registers (the `infera.amd.com/worker-info` annotation) and opens its
//! readiness port. Readiness follows the pod's actual probe: a probe on the
//! readiness port passes while the port is open, a probe on the engine port
//! (e.g. `/health`) once weights are loaded, exec/other probes at Running, no
//! probe means Ready at Running; initialDelay/period/thresholds and
//! startupProbe are honoured. Termination: preStop (a `sleep N` exec is
//! slept), the port closes and the annotation is cleared (NotReady when the
//! pod has a readiness probe), teardown bounded by the grace period, removal.
//!
//! Simplification: once a pod's probe result is stable the prober stops
//! ticking until something changes (a crash, a node fault, deletion), which
//! gives the same transitions at a fraction of the wakeups; liveness probes
//! are not run.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{Notify, watch};

use super::cache::str_at;
use super::scheduler::set_pod_condition;
use crate::clock::SimClock;
use crate::scenario::Timings;
use crate::store::{Kind, Store};

pub use infera_model::worker::WORKER_INFO_ANNOTATION;
use infera_model::worker::{READINESS_PORT_ENV, main_container_position};

/// What the manager tells a pod's kubelet task.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodSignal {
    pub deleting: bool,
    pub crashes: u64,
    pub node_not_ready: bool,
}

/// Registered decode workers per (namespace, InferaDeployment), for the PD barrier.
#[derive(Default)]
pub struct Registry {
    decodes: Mutex<HashMap<(String, String), u32>>,
    changed: Notify,
}

impl Registry {
    fn add(&self, key: &(String, String), delta: i32) {
        let mut map = self
            .decodes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = map.entry(key.clone()).or_default();
        *entry = entry.saturating_add_signed(delta);
        drop(map);
        self.changed.notify_waiters();
    }
    fn has(&self, key: &(String, String)) -> bool {
        self.decodes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(key)
            .is_some_and(|n| *n > 0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Check {
    ReadinessPort,
    EngineUp,
    Running,
}

#[derive(Debug, Clone)]
struct Probe {
    check: Check,
    initial: f64,
    period: f64,
    success: u32,
    failure: u32,
}

#[derive(Debug, Clone)]
struct Engine {
    role: String,
    engine: String,
    model: String,
    port: i64,
    readiness_port: u16,
}

fn tokens(c: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for field in ["command", "args"] {
        for part in c.get(field).and_then(Value::as_array).into_iter().flatten() {
            out.extend(
                part.as_str()
                    .unwrap_or("")
                    .split_whitespace()
                    .map(str::to_string),
            );
        }
    }
    out
}

fn flag(tokens: &[String], name: &str) -> Option<String> {
    tokens.iter().enumerate().find_map(|(i, t)| {
        if t == name {
            tokens.get(i + 1).cloned()
        } else {
            t.strip_prefix(&format!("{name}=")).map(str::to_string)
        }
    })
}

fn main_container(pod: &Value) -> Value {
    let containers = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    main_container_position(containers.iter().map(|c| str_at(c, "/name")))
        .and_then(|i| containers.get(i))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The worker's own (loose, Python `int()`) reading of INFERA_READINESS_PORT.
fn worker_readiness_port(c: &Value) -> u16 {
    let env = c
        .get("env")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    infera_model::worker::worker_readiness_port(
        env.iter()
            .find(|e| str_at(e, "/name") == READINESS_PORT_ENV)
            .and_then(|e| e.get("value").and_then(Value::as_str)),
    )
}

/// Whether the simulated kubelet runs `pod` as an infera worker (its main
/// container starts `infera.engine.*`), which registers once loaded.
pub fn is_infera_worker(pod: &Value) -> bool {
    engine_of(pod).is_some()
}

fn engine_of(pod: &Value) -> Option<Engine> {
    let main = main_container(pod);
    let toks = tokens(&main);
    let engine = toks
        .iter()
        .find_map(|t| t.strip_prefix("infera.engine.").map(str::to_string))?;
    let role = flag(&toks, "--disaggregation-mode").unwrap_or_else(|| "mixed".into());
    let model = flag(&toks, "--served-model-name")
        .or_else(|| flag(&toks, "--model-path"))
        .or_else(|| flag(&toks, "--model"))
        .unwrap_or_else(|| "unknown".into());
    let port = flag(&toks, "--port")
        .and_then(|p| p.parse().ok())
        .or_else(|| {
            main.pointer("/ports/0/containerPort")
                .and_then(Value::as_i64)
        })
        .unwrap_or(30000);
    Some(Engine {
        role,
        engine,
        model,
        port,
        readiness_port: worker_readiness_port(&main),
    })
}

fn probe_of(p: &Value, container: &Value, engine: Option<&Engine>) -> Probe {
    let port_value = p
        .pointer("/httpGet/port")
        .or_else(|| p.pointer("/tcpSocket/port"));
    let port = port_value.and_then(|v| {
        v.as_i64().or_else(|| {
            let name = v.as_str()?;
            name.parse().ok().or_else(|| {
                container
                    .get("ports")?
                    .as_array()?
                    .iter()
                    .find(|cp| str_at(cp, "/name") == name)
                    .and_then(|cp| cp.get("containerPort")?.as_i64())
            })
        })
    });
    let check = match (engine, port) {
        (Some(e), Some(port)) if port == i64::from(e.readiness_port) => Check::ReadinessPort,
        (Some(_), Some(_)) => Check::EngineUp,
        _ => Check::Running,
    };
    let num = |k: &str, d: f64| p.get(k).and_then(Value::as_f64).unwrap_or(d);
    Probe {
        check,
        initial: num("initialDelaySeconds", 0.0),
        period: num("periodSeconds", 10.0).max(1.0),
        success: u32::try_from(
            p.get("successThreshold")
                .and_then(Value::as_u64)
                .unwrap_or(1),
        )
        .unwrap_or(1)
        .max(1),
        failure: u32::try_from(
            p.get("failureThreshold")
                .and_then(Value::as_u64)
                .unwrap_or(3),
        )
        .unwrap_or(3)
        .max(1),
    }
}

fn pod_ip(name: &str) -> String {
    let h = name.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    format!("10.244.{}.{}", (h >> 8) % 250 + 1, h % 250 + 2)
}

/// Everything a pod task needs.
#[derive(Clone)]
pub struct KubeletCtx {
    pub store: Store,
    pub clock: SimClock,
    pub timings: Timings,
    pub registry: Arc<Registry>,
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(if s.is_finite() { s.max(0.0) } else { 0.0 })
}

/// Run one pod until it is removed.
pub async fn run_pod(
    ctx: KubeletCtx,
    ns: String,
    name: String,
    jitter: f64,
    mut signal: watch::Receiver<PodSignal>,
) {
    let Some(pod) = ctx.store.get(Kind::Pod, Some(&ns), &name) else {
        return;
    };
    let main = main_container(&pod);
    let engine = engine_of(&pod);
    let readiness = main
        .get("readinessProbe")
        .filter(|v| v.is_object())
        .map(|p| probe_of(p, &main, engine.as_ref()));
    let startup = main
        .get("startupProbe")
        .filter(|v| v.is_object())
        .map(|p| probe_of(p, &main, engine.as_ref()));
    let idep = (
        ns.clone(),
        str_at(&pod, "/metadata/labels/infera.amd.com~1deployment").to_string(),
    );
    let grace = pod
        .pointer("/spec/terminationGracePeriodSeconds")
        .and_then(Value::as_f64)
        .unwrap_or(30.0);
    let prestop = main.pointer("/lifecycle/preStop").map(|h| {
        let cmd: Vec<String> = h
            .pointer("/exec/command")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .flat_map(|s| s.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .collect();
        flag(&cmd, "sleep")
            .and_then(|s| s.parse::<f64>().ok())
            .or_else(|| h.pointer("/sleep/seconds").and_then(Value::as_f64))
            .unwrap_or(0.0)
    });
    let image = str_at(&main, "/image").to_string();
    let cname = str_at(&main, "/name").to_string();
    // Not kept for the pod's lifetime: 5,000 pods would hold 5,000 copies.
    drop(pod);
    drop(main);
    let clock = ctx.clock.clone();
    let t = || clock.elapsed().as_secs_f64();
    let write = |f: &dyn Fn(&mut Value)| {
        let _ = ctx
            .store
            .mutate_shared(Kind::Pod, Some(&ns), &name, |v| f(v));
    };

    // Container lifecycle state, in scenario seconds since the clock started.
    let mut running_at = t() + ctx.timings.image_pull;
    let mut restarts: i64 = 0;
    let mut running = false;
    let mut loaded = false;
    let mut registered = false;
    let mut barrier_done_at: Option<f64> = None;
    let mut ready = false;
    let mut started = startup.is_none();
    let mut next_probe: Option<f64> = None;
    let mut next_startup: Option<f64> = None;
    let (mut ok_run, mut fail_run, mut s_fail) = (0u32, 0u32, 0u32);
    let mut last_signal = signal.borrow().clone();
    let ip = pod_ip(&name);
    let load_time = ctx.timings.weight_load + jitter;
    let mut loaded_at = running_at + load_time;
    let is_decode = engine.as_ref().is_some_and(|e| e.role == "decode");
    let is_prefill = engine.as_ref().is_some_and(|e| e.role == "prefill");
    let mut written = (false, false, -1i64, false);

    loop {
        let sig = signal.borrow().clone();
        if sig.deleting {
            break;
        }
        let now = t();
        if sig.crashes != last_signal.crashes && running {
            // The container exits and restarts after a backoff.
            running = false;
            loaded = false;
            barrier_done_at = None;
            if registered {
                registered = false;
                if is_decode {
                    ctx.registry.add(&idep, -1);
                }
                if let Some(e) = engine.as_ref() {
                    ctx.store.set_listening(&ns, &name, e.readiness_port, false);
                }
                write(&|v| {
                    if let Some(a) = v
                        .pointer_mut("/metadata/annotations")
                        .and_then(Value::as_object_mut)
                    {
                        a.remove(WORKER_INFO_ANNOTATION);
                    }
                });
            }
            restarts += 1;
            running_at = now + ctx.timings.restart_backoff;
            loaded_at = running_at + load_time;
            started = startup.is_none();
            next_probe = None;
            next_startup = None;
            ok_run = 0;
            fail_run = 0;
            s_fail = 0;
            ready = false;
        }
        last_signal = sig.clone();
        // Milestones.
        if !running && now >= running_at {
            running = true;
            next_startup = startup.as_ref().map(|p| running_at + p.initial);
            if started {
                next_probe = readiness.as_ref().map(|p| running_at + p.initial);
            }
        }
        if running && engine.is_some() && !loaded && now >= loaded_at {
            loaded = true;
        }
        if loaded && !registered {
            let through = if is_prefill {
                match barrier_done_at {
                    Some(at) => now >= at,
                    None => {
                        if ctx.registry.has(&idep) {
                            barrier_done_at = Some(now + ctx.timings.barrier);
                        }
                        false
                    }
                }
            } else {
                true
            };
            if through && let Some(e) = engine.as_ref() {
                registered = true;
                if is_decode {
                    ctx.registry.add(&idep, 1);
                }
                let info = json!({"worker_id": name, "url": format!("http://{ip}:{}", e.port), "model_name": e.model,
                    "engine": e.engine, "status": "ready", "disagg_mode": e.role}).to_string();
                write(&|v| {
                    v["metadata"]["annotations"][WORKER_INFO_ANNOTATION] =
                        Value::from(info.clone());
                });
                ctx.store.set_listening(&ns, &name, e.readiness_port, true);
            }
        }
        let check = |c: Check, registered: bool, loaded: bool, running: bool| match c {
            Check::ReadinessPort => registered,
            Check::EngineUp => loaded,
            Check::Running => running,
        };
        // Startup probe.
        if let (Some(p), Some(at)) = (startup.as_ref(), next_startup)
            && !started
            && now >= at
        {
            if check(p.check, registered, loaded, running) {
                started = true;
                next_probe = readiness
                    .as_ref()
                    .map(|r| (running_at + r.initial).max(now));
            } else {
                s_fail += 1;
                if s_fail >= p.failure {
                    let _ = ctx.store.get(Kind::Pod, Some(&ns), &name);
                    restarts += 1;
                    running = false;
                    loaded = false;
                    running_at = now + ctx.timings.restart_backoff;
                    loaded_at = running_at + load_time;
                    s_fail = 0;
                }
            }
            next_startup = if started { None } else { Some(at + p.period) };
        }
        // Readiness probe.
        match readiness.as_ref() {
            None => ready = running && started,
            Some(p) => {
                if !running {
                    ready = false;
                }
                if let Some(at) = next_probe
                    && running
                    && started
                    && now >= at
                {
                    if check(p.check, registered, loaded, running) {
                        ok_run += 1;
                        fail_run = 0;
                        if ok_run >= p.success {
                            ready = true;
                        }
                    } else {
                        fail_run += 1;
                        ok_run = 0;
                        if fail_run >= p.failure {
                            ready = false;
                        }
                    }
                    next_probe = Some(at + p.period);
                }
            }
        }
        let effective_ready = ready && !sig.node_not_ready;
        let state = (running, effective_ready, restarts, registered);
        if state != written {
            written = state;
            let now_ts = clock.timestamp();
            let image = image.clone();
            let cname = cname.clone();
            let ip = ip.clone();
            let started_ts = now_ts.clone();
            write(&|v| {
                let status = v.get("status").cloned().unwrap_or_else(|| json!({}));
                let first_start = status
                    .get("startTime")
                    .cloned()
                    .unwrap_or_else(|| Value::from(started_ts.clone()));
                let container_state = if running {
                    json!({"running": {"startedAt": started_ts}})
                } else if restarts > 0 {
                    json!({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off restarting failed container"}})
                } else {
                    json!({"waiting": {"reason": "ContainerCreating"}})
                };
                v["status"]["phase"] = Value::from(if running || restarts > 0 {
                    "Running"
                } else {
                    "Pending"
                });
                v["status"]["hostIP"] = Value::from("192.168.0.1");
                v["status"]["podIP"] = Value::from(ip.clone());
                v["status"]["podIPs"] = json!([{"ip": ip}]);
                v["status"]["startTime"] = first_start;
                v["status"]["qosClass"] = Value::from("BestEffort");
                v["status"]["containerStatuses"] = json!([{"name": cname, "image": image, "imageID": format!("docker-pullable://{image}"),
                    "containerID": format!("containerd://{:x}", restarts + 1), "ready": effective_ready && running,
                    "started": running, "restartCount": restarts, "state": container_state}]);
                let tf = |b: bool| if b { "True" } else { "False" };
                set_pod_condition(
                    v,
                    json!({"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": now_ts}),
                );
                set_pod_condition(
                    v,
                    json!({"type": "ContainersReady", "status": tf(effective_ready && running), "lastProbeTime": null, "lastTransitionTime": now_ts}),
                );
                set_pod_condition(
                    v,
                    json!({"type": "Ready", "status": tf(effective_ready && running), "lastProbeTime": null, "lastTransitionTime": now_ts}),
                );
            });
        }
        // Next wake-up: the earliest pending milestone or probe tick.
        let mut wake: Option<f64> = None;
        let mut consider = |x: Option<f64>| {
            if let Some(x) = x {
                wake = Some(wake.map_or(x, |w: f64| w.min(x)));
            }
        };
        if !running {
            consider(Some(running_at));
        }
        if running && engine.is_some() && !loaded {
            consider(Some(loaded_at));
        }
        if let Some(at) = barrier_done_at
            && !registered
        {
            consider(Some(at));
        }
        if !started {
            consider(next_startup);
        }
        let stable = readiness.as_ref().is_none_or(|p| {
            let passing = match p.check {
                Check::ReadinessPort => registered,
                Check::EngineUp => loaded,
                Check::Running => running,
            };
            passing == ready && (!passing || ok_run >= p.success)
        });
        if !stable {
            consider(next_probe);
        }
        let waiting_barrier = is_prefill && loaded && !registered && barrier_done_at.is_none();
        let sleep_for = wake.map(|w| secs(w - t()));
        tokio::select! {
            changed = signal.changed() => { if changed.is_err() { return; } }
            _ = ctx.registry.changed.notified(), if waiting_barrier => {}
            _ = async { match sleep_for { Some(d) => clock.sleep(d).await, None => std::future::pending().await } } => {}
        }
    }

    // Termination.
    let deadline = t() + grace;
    if running {
        if let Some(sleep) = prestop {
            clock.sleep(secs(sleep.min(grace))).await;
        }
        if let Some(e) = engine.as_ref() {
            ctx.store.set_listening(&ns, &name, e.readiness_port, false);
        }
        if registered && is_decode {
            ctx.registry.add(&idep, -1);
        }
        let has_probe = readiness.is_some();
        let now_ts = clock.timestamp();
        write(&|v| {
            if let Some(a) = v
                .pointer_mut("/metadata/annotations")
                .and_then(Value::as_object_mut)
            {
                a.remove(WORKER_INFO_ANNOTATION);
            }
            if has_probe {
                set_pod_condition(
                    v,
                    json!({"type": "ContainersReady", "status": "False", "lastProbeTime": null, "lastTransitionTime": now_ts}),
                );
                set_pod_condition(
                    v,
                    json!({"type": "Ready", "status": "False", "lastProbeTime": null, "lastTransitionTime": now_ts}),
                );
                if let Some(cs) = v.pointer_mut("/status/containerStatuses/0") {
                    cs["ready"] = Value::from(false);
                }
            }
        });
        let left = (deadline - t()).max(0.0);
        clock.sleep(secs(ctx.timings.teardown.min(left))).await;
    }
    if let Some(e) = engine.as_ref() {
        ctx.store.set_listening(&ns, &name, e.readiness_port, false);
    }
    ctx.store.remove(Kind::Pod, Some(&ns), &name);
}
