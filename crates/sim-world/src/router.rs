//! The simulated router (`python3 -m infera.server`, the InferaDeployment's
//! `componentType: server` service): the same OpenAI API as the engines on
//! `podIP:port`, forwarded to the workers it has learned of. It learns them
//! as the real router does, by watching the pods its
//! `--k8s-label-selector` names (the `infera.amd.com/worker-info`
//! annotation: url and `disagg_mode`), applying each change the scenario's
//! `routerLag` late.
//!
//! Per request: a mixed worker alone (round-robin), or prefill/decode: a
//! prefill (non-streaming, `max_tokens` 1), then a decode whose answer is
//! relayed as it arrives. A worker that refuses the connection is skipped
//! for the next registered one; none left: `503 no available workers`. A
//! worker failing after the request was sent, before its answer: `502`. A
//! worker failing mid-stream after the 200: an SSE error event then
//! `[DONE]` (as SGLang's router); mid-body of a non-streaming answer: the
//! client's body is cut. `x-request-id` is echoed and `x-infera-served-by`
//! names the workers. Every generation request is recorded, with how it
//! ended, in the [`RequestLog`].
//!
//! The KV handoff, as vLLM's P/D proxy does it: the prefill is asked with
//! `kv_transfer_params: {do_remote_decode: true}` and answers the
//! `kv_transfer_params` (its engine id and KV identity digest) that the
//! router hands the decode, whose engine checks them (`engine.rs`: a
//! mismatch fails the request or recomputes its prefill, as the decode's
//! `kv_load_failure_policy` says). The pair and both identities are
//! recorded ([`Pairing`]) and `x-infera-kv-pair` says `match` or
//! `mismatch`. A request naming `x-disagg-revision` goes only to workers
//! whose pods carry that `disaggregatedset.x-k8s.io/revision`, and an
//! answer from such a worker names its revision in the same header.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Container, Pod};
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::engine::{error_response, json_response};
use super::lock;
use infera_model::catalogue;
use infera_model::worker::WORKER_INFO_ANNOTATION;
use infera_sim_core::clock::SimClock;
use infera_sim_core::net::{SendError, send};
use infera_sim_core::requests::{Outcome, Pairing, RequestLog, RequestRecord, now_ms};

/// The request header a client names its request with.
pub(crate) const REQUEST_ID: &str = "x-request-id";
/// The response header naming the worker pods that served a request.
pub(crate) const SERVED_BY: &str = "x-infera-served-by";
/// The response header saying whether a request's prefill and decode had
/// the same KV compatibility identity: `match` or `mismatch`.
pub(crate) const KV_PAIR: &str = "x-infera-kv-pair";
/// llm-d's revision header: on a request, only workers whose pods carry
/// that [`REVISION_LABEL`] serve it; on a response, the revision of the
/// worker that answered, when its pod carries the label.
pub(crate) const DISAGG_REVISION: &str = "x-disagg-revision";
/// The pod label naming a worker's revision (LWS DisaggregatedSet, llm-d).
const REVISION_LABEL: &str = "disaggregatedset.x-k8s.io/revision";
/// The largest request body read.
const BODY_LIMIT: usize = 1 << 20;
/// How long a connect to a worker may take (wall time).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// What a router pod's spec says: where it listens, which pods it watches.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RouterSpec {
    pub port: u16,
    pub selector: String,
}

/// The router a pod runs, if its main container runs `infera.server`: its
/// `--port` (8000 by default) and `--k8s-label-selector` (else the pod's
/// own `infera.amd.com/deployment`).
pub(crate) fn router_of(pod: &Value, main: &Value) -> Option<RouterSpec> {
    let c: Container = serde_json::from_value(main.clone()).ok()?;
    let tokens = catalogue::command_tokens(&c);
    if !tokens.contains(&"infera.server") {
        return None;
    }
    let flags = catalogue::Flags::parse(&tokens);
    let port = flags
        .value(&["--port"])
        .and_then(|p| p.parse().ok())
        .unwrap_or(8000);
    let own = pod
        .pointer("/metadata/labels/infera.amd.com~1deployment")
        .and_then(Value::as_str)
        .map(|d| format!("{}={d}", infera_model::worker::LABEL_DEPLOYMENT));
    let selector = flags
        .value(&["--k8s-label-selector"])
        .map(str::to_string)
        .or(own)?;
    Some(RouterSpec { port, selector })
}

/// A worker's role, from its registration's `disagg_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Mixed,
    Prefill,
    Decode,
}

/// A registered worker.
#[derive(Debug, Clone, PartialEq)]
struct Worker {
    pod: String,
    addr: SocketAddr,
    mode: Mode,
    model: String,
    /// Its pod's [`REVISION_LABEL`].
    revision: Option<String>,
}

type Workers = BTreeMap<String, Worker>;

/// The worker a pod's registration annotation names, if it is registered.
fn worker_of(pod: &Pod) -> Option<Worker> {
    let info = pod
        .metadata
        .annotations
        .as_ref()?
        .get(WORKER_INFO_ANNOTATION)?;
    let info: Value = serde_json::from_str(info).ok()?;
    let url = info.get("url")?.as_str()?;
    let addr = url
        .strip_prefix("http://")
        .unwrap_or(url)
        .trim_end_matches('/')
        .parse()
        .ok()?;
    let mode = match info.get("disagg_mode").and_then(Value::as_str) {
        Some("prefill") => Mode::Prefill,
        Some("decode") => Mode::Decode,
        _ => Mode::Mixed,
    };
    Some(Worker {
        pod: pod.metadata.name.clone().unwrap_or_default(),
        addr,
        mode,
        model: info
            .get("model_name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        revision: pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(REVISION_LABEL))
            .cloned(),
    })
}

/// A change of the registrations, applied `routerLag` after it was seen.
enum Change {
    Set(String, Option<Worker>),
    Replace(Workers),
}

/// What the router's handlers share.
pub(crate) struct RouterState {
    pod: String,
    log: RequestLog,
    workers: Mutex<Workers>,
    next: AtomicUsize,
    /// Set once the router is being stopped: a request dropped from then
    /// on was cut by the router, not left by its client.
    stopping: Arc<AtomicBool>,
}

/// A running router's registration tasks (the serving port is the
/// kubelet's); dropping it stops them.
pub(crate) struct Registrations {
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Registrations {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Where a router runs.
pub(crate) struct RouterPlace {
    pub client: kube::Client,
    pub namespace: String,
    pub pod: String,
    pub clock: SimClock,
    pub lag: f64,
    pub log: RequestLog,
}

/// The router's app and the tasks that keep its registrations; the flag,
/// once set, marks requests dropped from then on as cut.
pub(crate) fn start(
    place: RouterPlace,
    spec: &RouterSpec,
) -> (Router, Registrations, Arc<AtomicBool>) {
    let stopping = Arc::new(AtomicBool::new(false));
    let state = Arc::new(RouterState {
        pod: place.pod.clone(),
        log: place.log.clone(),
        workers: Mutex::default(),
        next: AtomicUsize::new(0),
        stopping: stopping.clone(),
    });
    let (tx, rx) = mpsc::unbounded_channel();
    let lag = place
        .clock
        .to_wall(Duration::from_secs_f64(place.lag.max(0.0)));
    let tasks = vec![
        tokio::spawn(watch_workers(place, spec.selector.clone(), lag, tx)),
        tokio::spawn(apply_changes(rx, state.clone())),
    ];
    let app = Router::new().fallback(handle).with_state(state);
    (app, Registrations { tasks }, stopping)
}

/// Watch the selected pods and send each registration change, dated when
/// it is due.
async fn watch_workers(
    place: RouterPlace,
    selector: String,
    lag: Duration,
    tx: mpsc::UnboundedSender<(Instant, Change)>,
) {
    let api: Api<Pod> = Api::namespaced(place.client, &place.namespace);
    let config = watcher::Config::default().labels(&selector);
    let stream = watcher::watcher(api, config).backoff(infera_cluster::watch_backoff());
    let mut stream = std::pin::pin!(stream);
    let mut listing: Option<Workers> = None;
    while let Some(event) = stream.next().await {
        let change = match event {
            Ok(Event::Init) => {
                listing = Some(Workers::new());
                None
            }
            Ok(Event::InitApply(pod)) => {
                if let (Some(list), Some(w)) = (listing.as_mut(), worker_of(&pod)) {
                    list.insert(w.pod.clone(), w);
                }
                None
            }
            Ok(Event::InitDone) => listing.take().map(Change::Replace),
            Ok(Event::Apply(pod)) => Some(Change::Set(
                pod.metadata.name.clone().unwrap_or_default(),
                worker_of(&pod),
            )),
            Ok(Event::Delete(pod)) => Some(Change::Set(
                pod.metadata.name.clone().unwrap_or_default(),
                None,
            )),
            Err(_) => None,
        };
        if let Some(c) = change
            && tx.send((Instant::now() + lag, c)).is_err()
        {
            return;
        }
    }
}

/// Apply each change when it is due (in order: the lag is the same for all).
async fn apply_changes(
    mut rx: mpsc::UnboundedReceiver<(Instant, Change)>,
    state: Arc<RouterState>,
) {
    while let Some((due, change)) = rx.recv().await {
        tokio::time::sleep_until(due.into()).await;
        let mut workers = lock(&state.workers);
        match change {
            Change::Set(pod, Some(w)) => {
                workers.insert(pod, w);
            }
            Change::Set(pod, None) => {
                workers.remove(&pod);
            }
            Change::Replace(all) => *workers = all,
        }
    }
}

/// Which workers a request may go to, in the order they are tried.
enum Plan {
    Mixed(Vec<Worker>),
    Disaggregated {
        prefills: Vec<Worker>,
        decodes: Vec<Worker>,
    },
}

impl RouterState {
    /// Mixed workers when there are any, else prefill and decode workers
    /// when there are both; each list rotated round-robin; only workers of
    /// `revision` when the request names one.
    fn plan(&self, revision: Option<&str>) -> Option<Plan> {
        let workers = lock(&self.workers);
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        let of = |mode: Mode| {
            let mut list: Vec<Worker> = workers
                .values()
                .filter(|w| w.mode == mode)
                .filter(|w| revision.is_none_or(|r| w.revision.as_deref() == Some(r)))
                .cloned()
                .collect();
            if !list.is_empty() {
                let n = turn % list.len();
                list.rotate_left(n);
            }
            list
        };
        let mixed = of(Mode::Mixed);
        if !mixed.is_empty() {
            return Some(Plan::Mixed(mixed));
        }
        let (prefills, decodes) = (of(Mode::Prefill), of(Mode::Decode));
        (!prefills.is_empty() && !decodes.is_empty())
            .then_some(Plan::Disaggregated { prefills, decodes })
    }

    fn models(&self) -> Vec<String> {
        let workers = lock(&self.workers);
        let mut models: Vec<String> = workers.values().map(|w| w.model.clone()).collect();
        models.sort();
        models.dedup();
        models
    }
}

async fn handle(State(state): State<Arc<RouterState>>, req: Request<Body>) -> Response<Body> {
    let path = req.uri().path().to_string();
    match (req.method().clone(), path.as_str()) {
        (Method::GET, "/health" | "/health_generate" | "/readiness" | "/liveness") => {
            Response::new(Body::from("ok"))
        }
        (Method::GET, "/v1/models") => models(&state),
        (Method::POST, "/v1/completions" | "/v1/chat/completions") => generate(state, req).await,
        _ => error_response(StatusCode::NOT_FOUND, "NotFoundError", "not found"),
    }
}

fn no_workers() -> Response<Body> {
    error_response(
        StatusCode::SERVICE_UNAVAILABLE,
        "service_unavailable",
        "no available workers",
    )
}

fn models(state: &RouterState) -> Response<Body> {
    let models = state.models();
    if models.is_empty() {
        return no_workers();
    }
    let data: Vec<Value> = models
        .iter()
        .map(|m| json!({"id": m, "object": "model", "owned_by": "infera"}))
        .collect();
    json_response(StatusCode::OK, &json!({"object": "list", "data": data}))
}

/// One request's entry in the log, written once: when it ends, or (when
/// dropped first) as cut by the router or left by its client.
struct Ledger {
    log: RequestLog,
    /// The answering worker's revision label, for [`DISAGG_REVISION`].
    revision: Option<String>,
    record: Option<RequestRecord>,
    stopping: Arc<AtomicBool>,
    /// The workers it went to, and whether its pair matched: kept apart
    /// from `record`, which `finish` hands to the log, so that an error
    /// answer (a 502 after the worker died) still names them.
    served: Vec<String>,
    compatible: Option<bool>,
}

impl Ledger {
    fn finish(&mut self, outcome: Outcome, code: Option<u16>) {
        if let Some(mut r) = self.record.take() {
            r.outcome = outcome;
            r.code = code;
            r.ended_ms = now_ms();
            self.log.record(r);
        }
    }

    fn served_by(&mut self, pod: &str) {
        self.served.push(pod.to_string());
        if let Some(r) = self.record.as_mut() {
            r.served_by.push(pod.to_string());
        }
    }

    fn paired(&mut self, pairing: Pairing) {
        self.compatible = Some(pairing.compatible);
        if let Some(r) = self.record.as_mut() {
            r.pairing = Some(pairing);
        }
    }

    fn served(&self) -> Vec<String> {
        self.served.clone()
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        let outcome = if self.stopping.load(Ordering::Relaxed) {
            Outcome::Cut
        } else {
            Outcome::ClientGone
        };
        self.finish(outcome, None);
    }
}

/// What a request asked for, as the router forwards it.
struct Asked {
    path: String,
    id: String,
    /// The request's [`DISAGG_REVISION`].
    revision: Option<String>,
    body: Value,
    stream: bool,
}

async fn generate(state: Arc<RouterState>, req: Request<Body>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let id = header_text(&parts.headers, REQUEST_ID);
    let path = parts.uri.path().to_string();
    let mut ledger = Ledger {
        log: state.log.clone(),
        revision: None,
        record: Some(RequestRecord {
            id: id.clone(),
            router: state.pod.clone(),
            path: path.clone(),
            stream: false,
            started_ms: now_ms(),
            ended_ms: 0,
            served_by: Vec::new(),
            outcome: Outcome::ClientGone,
            code: None,
            pairing: None,
        }),
        stopping: state.stopping.clone(),
        served: Vec::new(),
        compatible: None,
    };
    let bytes = axum::body::to_bytes(body, BODY_LIMIT).await.ok();
    let Some(body) = bytes.and_then(|b| serde_json::from_slice::<Value>(&b).ok()) else {
        ledger.finish(Outcome::Status, Some(400));
        let resp = error_response(
            StatusCode::BAD_REQUEST,
            "BadRequestError",
            "invalid JSON body",
        );
        return with_ids(resp, &id, &[]);
    };
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    if let Some(r) = ledger.record.as_mut() {
        r.stream = stream;
    }
    let asked = Asked {
        revision: parts
            .headers
            .get(DISAGG_REVISION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        path,
        id,
        body,
        stream,
    };
    let resp = route(&state, &asked, &mut ledger).await;
    let mut resp = with_ids(resp, &asked.id, &ledger.served());
    stamp_pair(&mut resp, &ledger);
    // Relayed chunked, so the body is read to its end (and recorded there).
    resp.headers_mut().remove(header::CONTENT_LENGTH);
    resp.map(|b| relay(b, ledger, asked.stream))
}

/// A header's text, `""` when absent.
fn header_text(h: &HeaderMap, name: &str) -> String {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

/// Echo the request id and name the workers that served it.
fn with_ids(mut resp: Response<Body>, id: &str, served: &[String]) -> Response<Body> {
    if let Ok(v) = HeaderValue::from_str(id)
        && !id.is_empty()
    {
        resp.headers_mut().insert(REQUEST_ID, v);
    }
    if let Ok(v) = HeaderValue::from_str(&served.join(","))
        && !served.is_empty()
    {
        resp.headers_mut().insert(SERVED_BY, v);
    }
    resp
}

/// Say whether the request's pair matched, and the answering worker's revision.
fn stamp_pair(resp: &mut Response<Body>, ledger: &Ledger) {
    if let Some(compatible) = ledger.compatible {
        let value = if compatible { "match" } else { "mismatch" };
        resp.headers_mut()
            .insert(KV_PAIR, HeaderValue::from_static(value));
    }
    if let Some(v) = ledger
        .revision
        .as_deref()
        .and_then(|r| HeaderValue::from_str(r).ok())
    {
        resp.headers_mut().insert(DISAGG_REVISION, v);
    }
}

/// The KV identity digest an engine's answer names.
fn identity_of(resp: &Response<Body>) -> String {
    header_text(resp.headers(), super::engine::KV_IDENTITY)
}

/// The answer of the worker(s) the plan picks, or the router's error.
/// A response whose status is not 200 is recorded at once.
async fn route(state: &RouterState, asked: &Asked, ledger: &mut Ledger) -> Response<Body> {
    let (first, rest) = match state.plan(asked.revision.as_deref()) {
        None => (Vec::new(), Vec::new()),
        Some(Plan::Mixed(ws)) => (ws, Vec::new()),
        Some(Plan::Disaggregated { prefills, decodes }) => (prefills, decodes),
    };
    if rest.is_empty() {
        return match forward(&first, asked, &asked.body, ledger).await {
            Ok((w, resp)) => decoded(ledger, &w, resp),
            Err(resp) => *resp,
        };
    }
    let (prefill, params) = match prefill(&first, asked, ledger).await {
        Ok(p) => p,
        Err(resp) => return *resp,
    };
    let mut body = asked.body.clone();
    body["kv_transfer_params"] = params;
    match forward(&rest, asked, &body, ledger).await {
        Ok((w, resp)) => {
            let pair = Pairing::new(prefill, (w.pod.clone(), identity_of(&resp)));
            ledger.paired(pair);
            decoded(ledger, &w, resp)
        }
        Err(resp) => *resp,
    }
}

/// The prefill step: the prefill's pod and identity digest and the
/// `kv_transfer_params` its answer hands the decode, or the router's
/// answer when it failed.
async fn prefill(
    prefills: &[Worker],
    asked: &Asked,
    ledger: &mut Ledger,
) -> Result<((String, String), Value), Box<Response<Body>>> {
    let mut body = asked.body.clone();
    body["stream"] = Value::Bool(false);
    body["max_tokens"] = Value::from(1);
    body["kv_transfer_params"] = json!({"do_remote_decode": true});
    let (w, resp) = forward(prefills, asked, &body, ledger).await?;
    if resp.status() != StatusCode::OK {
        return Err(Box::new(answered(ledger, resp)));
    }
    let identity = identity_of(&resp);
    let Ok(bytes) = axum::body::to_bytes(resp.into_body(), BODY_LIMIT).await else {
        return Err(Box::new(failed(ledger, "prefill worker failed mid-answer")));
    };
    let params = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v.get("kv_transfer_params").cloned())
        .unwrap_or(Value::Null);
    Ok(((w.pod, identity), params))
}

/// The answering worker's response: relayed when 200, else recorded.
fn decoded(ledger: &mut Ledger, w: &Worker, resp: Response<Body>) -> Response<Body> {
    ledger.revision.clone_from(&w.revision);
    if resp.status() == StatusCode::OK {
        resp
    } else {
        answered(ledger, resp)
    }
}

/// A worker's non-200 answer, recorded as such.
fn answered(ledger: &mut Ledger, resp: Response<Body>) -> Response<Body> {
    ledger.finish(Outcome::Status, Some(resp.status().as_u16()));
    resp
}

/// The router's 502 for a worker that failed after the request was sent.
fn failed(ledger: &mut Ledger, message: &str) -> Response<Body> {
    ledger.finish(Outcome::Status, Some(502));
    error_response(StatusCode::BAD_GATEWAY, "bad_gateway", message)
}

/// Send `body` to the first of `workers` that takes the connection; the
/// router's error response (recorded) when none does or one fails before
/// its answer.
async fn forward(
    workers: &[Worker],
    asked: &Asked,
    body: &Value,
    ledger: &mut Ledger,
) -> Result<(Worker, Response<Body>), Box<Response<Body>>> {
    for w in workers {
        let Ok(req) = Request::builder()
            .method(Method::POST)
            .uri(&asked.path)
            .header(header::CONTENT_TYPE, "application/json")
            .header(REQUEST_ID, &asked.id)
            .body(Body::from(body.to_string()))
        else {
            continue;
        };
        match send(w.addr, req, CONNECT_TIMEOUT).await {
            Ok(resp) => {
                ledger.served_by(&w.pod);
                return Ok((w.clone(), resp.map(Body::new)));
            }
            Err(SendError::Connect(_)) => {}
            Err(SendError::Exchange(e)) => {
                ledger.served_by(&w.pod);
                let message = format!("worker {} failed: {e}", w.pod);
                return Err(Box::new(failed(ledger, &message)));
            }
        }
    }
    ledger.finish(Outcome::Status, Some(503));
    Err(Box::new(no_workers()))
}

/// The worker's body relayed to the client as it arrives, the request
/// recorded when it ends: ok at the worker's clean end, an SSE error
/// event (then `[DONE]`) when a stream's worker fails, a cut otherwise.
fn relay(body: Body, ledger: Ledger, sse: bool) -> Body {
    let upstream = body.into_data_stream();
    let state = Some((upstream, ledger));
    let relayed = futures::stream::unfold(state, move |state| async move {
        let (mut upstream, mut ledger) = state?;
        let next = upstream.next().await;
        match next {
            Some(Ok(bytes)) => Some((Ok(bytes), Some((upstream, ledger)))),
            None => {
                ledger.finish(Outcome::Ok, None);
                None
            }
            Some(Err(e)) if sse => {
                ledger.finish(Outcome::ErrorEvent, None);
                let event = json!({"error": {"message": format!("worker failed mid-stream: {e}"),
                    "type": "internal_error", "code": 502}});
                let bytes = Bytes::from(format!("data: {event}\n\ndata: [DONE]\n\n"));
                Some((Ok(bytes), None))
            }
            Some(Err(e)) => {
                ledger.finish(Outcome::Cut, None);
                Some((Err(e), None))
            }
        }
    });
    Body::from_stream(relayed)
}
