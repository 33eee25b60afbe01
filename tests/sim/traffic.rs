//! The serving path on the simulator: OpenAI requests through the API
//! server's service proxy to the simulated router and its workers
//! (`docs/traffic.md`), and the router's ground truth of them.

use std::time::{Duration, Instant};

use axum::body::Body;
use futures::StreamExt;
use infera_sim_core::requests::{Outcome, RequestRecord};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, DeleteParams};
use serde_json::{Value, json};

use crate::common::sim::{Sim, options};

/// The router's Service in `vllm-short-drain` (and `pd-1p1d`): `<idep>-<service>`, port `http`.
const PROXY: &str = "/api/v1/namespaces/llm/services/llama-router:http/proxy";
/// Scenario seconds per wall second in these tests.
const SPEED: f64 = 20.0;

/// What came back: status, each body chunk with when it arrived, whether
/// the body ended cleanly, and the response headers.
struct Answer {
    status: u16,
    chunks: Vec<(Instant, String)>,
    clean: bool,
    headers: http::HeaderMap,
}

impl Answer {
    fn text(&self) -> String {
        self.chunks.iter().map(|(_, c)| c.as_str()).collect()
    }
}

/// A client that sends each request once (kube retries 503s by itself).
async fn client(sim: &Sim) -> kube::Client {
    let mut config = sim.client_config().await.unwrap_or_else(|e| panic!("{e}"));
    config.default_retry = false;
    kube::Client::try_from(config).unwrap_or_else(|e| panic!("{e}"))
}

/// `POST PROXY{path}` with `body` and `X-Request-Id: id`, read to its end.
async fn post(client: &kube::Client, path: &str, body: &Value, id: &str) -> Answer {
    let req = http::Request::post(format!("{PROXY}{path}"))
        .header("content-type", "application/json")
        .header("x-request-id", id)
        .body(body.to_string().into_bytes())
        .unwrap_or_else(|e| panic!("{e}"));
    let resp = client.send(req.map(kube::client::Body::from)).await;
    let resp = resp.unwrap_or_else(|e| panic!("{path}: {e}"));
    let (parts, body) = resp.into_parts();
    let mut data = Body::new(body).into_data_stream();
    let mut chunks = Vec::new();
    let mut clean = true;
    while let Some(chunk) = data.next().await {
        match chunk {
            Ok(b) => chunks.push((Instant::now(), String::from_utf8_lossy(&b).to_string())),
            Err(_) => {
                clean = false;
                break;
            }
        }
    }
    Answer {
        status: parts.status.as_u16(),
        chunks,
        clean,
        headers: parts.headers,
    }
}

fn chat(max_tokens: u64) -> Value {
    json!({"model": "meta-llama/Llama-3.1-8B-Instruct", "max_tokens": max_tokens, "stream": true,
        "messages": [{"role": "user", "content": "hello"}]})
}

/// Until the router answers a request (it learns its worker `routerLag` late).
async fn wait_serving(client: &kube::Client) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let body = json!({"prompt": "x", "max_tokens": 1});
        if post(client, "/v1/completions", &body, "warm-up")
            .await
            .status
            == 200
        {
            return;
        }
        assert!(Instant::now() < deadline, "the router never served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The truth's record of request `id`.
fn record(sim: &Sim, id: &str) -> RequestRecord {
    let records = sim.truth().requests().records();
    records
        .iter()
        .find(|r| r.id == id)
        .cloned()
        .unwrap_or_else(|| panic!("no record of {id} in {records:?}"))
}

fn worker(sim: &Sim) -> String {
    sim.ready_pods("worker")
        .first()
        .and_then(|p| p.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no Ready worker"))
}

async fn delete(client: &kube::Client, pod: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "llm");
    pods.delete(pod, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

/// A stream through the service proxy arrives token by token (spread over
/// the generation time, not in one piece), ends with `finish_reason` then
/// `[DONE]`, names its worker, echoes its id, and the truth says `ok`.
#[tokio::test]
async fn a_stream_through_the_service_proxy_arrives_incrementally() {
    let sim = Sim::start("vllm-short-drain", SPEED).await;
    let client = client(&sim).await;
    wait_serving(&client).await;
    let worker = worker(&sim);
    let a = post(&client, "/v1/chat/completions", &chat(8), "stream-1").await;
    let text = a.text();
    assert_eq!((a.status, a.clean), (200, true), "{text}");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    assert!(text.contains(r#""finish_reason":"length""#), "{text}");
    assert_eq!(text.matches("chat.completion.chunk").count(), 9, "{text}");
    // 8 tokens at 4/s: the last arrives 7/4 scenario seconds after the first.
    let spread = a
        .chunks
        .last()
        .map(|c| c.0)
        .zip(a.chunks.first().map(|c| c.0));
    let spread = spread.map(|(last, first)| last - first).unwrap_or_default();
    assert!(
        spread >= Duration::from_secs_f64(1.0 / SPEED),
        "{spread:?}: {text}"
    );
    assert_eq!(
        a.headers.get("x-request-id").map(|v| v.as_bytes()),
        Some(&b"stream-1"[..])
    );
    assert_eq!(
        a.headers
            .get("x-infera-served-by")
            .and_then(|v| v.to_str().ok()),
        Some(worker.as_str())
    );
    let r = record(&sim, "stream-1");
    assert_eq!(
        (r.outcome, r.stream, r.served_by),
        (Outcome::Ok, true, vec![worker])
    );
    assert!(r.router.starts_with("llama-router-"), "{}", r.router);
    sim.shutdown().await;
}

/// With drain 0 the worker's SIGTERM cuts the stream in flight: the router
/// sends an error event then `[DONE]`, and the truth says `error-event`.
/// With a drain longer than the stream, the same deletion lets it finish.
#[tokio::test]
async fn deleting_the_worker_cuts_its_stream_unless_it_drains() {
    for (drain, outcome) in [("0", Outcome::ErrorEvent), ("60", Outcome::Ok)] {
        let mut opts = options("vllm-short-drain", SPEED);
        let idep = &mut opts.scenario.manifests[1];
        idep["spec"]["services"]["worker"]["args"][3] = json!(drain);
        let sim = Sim::with(opts).await;
        let client = client(&sim).await;
        wait_serving(&client).await;
        let pod = worker(&sim);
        let id = format!("drain-{drain}");
        // 100 tokens: 25 scenario seconds, past the 15 s preStop.
        let body = chat(100);
        let streaming = {
            let client = client.clone();
            let id = id.clone();
            tokio::spawn(async move { post(&client, "/v1/chat/completions", &body, &id).await })
        };
        tokio::time::sleep(Duration::from_secs_f64(1.0 / SPEED)).await;
        delete(&client, &pod).await;
        let a = streaming.await.unwrap_or_else(|e| panic!("{e}"));
        let text = a.text();
        assert_eq!((a.status, a.clean), (200, true), "drain {drain}: {text}");
        assert!(text.ends_with("data: [DONE]\n\n"), "drain {drain}: {text}");
        assert_eq!(
            text.contains(r#"data: {"error""#),
            outcome == Outcome::ErrorEvent,
            "drain {drain}: {text}"
        );
        let r = record(&sim, &id);
        assert_eq!(
            (r.outcome, r.served_by),
            (outcome, vec![pod]),
            "drain {drain}"
        );
        sim.shutdown().await;
    }
}

/// The router applies a registration `routerLag` late: a request sent as
/// soon as the only worker is replaced (the old one deregistered, the new
/// one registered) gets the router's 503 (`no available workers`: the old
/// refuses, the new is not known yet), and one sent after the lag is
/// served. Every
/// request the router received is in the truth, once, with its outcome.
#[tokio::test]
async fn the_router_lags_registrations_and_the_truth_records_every_request() {
    let mut opts = options("vllm-short-drain", SPEED);
    opts.scenario.timings.router_lag = 10.0;
    let sim = Sim::with(opts).await;
    let client = client(&sim).await;
    wait_serving(&client).await;
    let old = worker(&sim);
    delete(&client, &old).await;
    // The old worker deregisters after its 15 s preStop, its replacement
    // registers after ~12 s: once both happened, the router still knows
    // only the old one (refused) for another 10 s.
    let swapped = |sim: &Sim| {
        let pods = sim
            .store()
            .list(infera_sim_core::kind::Kind::Pod, Some("llm"))
            .0;
        let registered = |p: &&Value| {
            p.pointer("/metadata/annotations/infera.amd.com~1worker-info")
                .is_some()
        };
        let is_old =
            |p: &&Value| p.pointer("/metadata/name").and_then(Value::as_str) == Some(old.as_str());
        !pods.iter().filter(is_old).any(|p| registered(&p))
            && pods.iter().filter(|p| !is_old(p)).any(|p| registered(&p))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !swapped(&sim) {
        assert!(Instant::now() < deadline, "the worker was never replaced");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let body = json!({"prompt": "x", "max_tokens": 2});
    let early = post(&client, "/v1/completions", &body, "early").await;
    assert_eq!(early.status, 503, "{}", early.text());
    assert!(
        early.text().contains("no available workers"),
        "{}",
        early.text()
    );
    tokio::time::sleep(Duration::from_secs_f64(10.0 / SPEED)).await;
    let late = post(&client, "/v1/completions", &body, "late").await;
    assert_eq!(late.status, 200, "{}", late.text());
    let records = sim.truth().requests().records();
    let ours: Vec<(&str, Outcome, Option<u16>)> = records
        .iter()
        .filter(|r| r.id != "warm-up")
        .map(|r| (r.id.as_str(), r.outcome, r.code))
        .collect();
    assert_eq!(
        ours,
        [
            ("early", Outcome::Status, Some(503)),
            ("late", Outcome::Ok, None)
        ]
    );
    let json = sim.truth().to_json();
    assert!(
        json.contains(r#""outcome": "status""#) && json.contains(r#""pods""#),
        "{json}"
    );
    sim.shutdown().await;
}

/// pd-1p1d: the router sends a prefill then the decode; both are named,
/// prefill first, and `/v1/models` lists the model. A Service without a
/// Ready pod is the API server's `503 no endpoints available`.
#[tokio::test]
async fn a_disaggregated_request_goes_to_a_prefill_then_a_decode() {
    let sim = Sim::start("pd-1p1d", 200.0).await;
    let client = client(&sim).await;
    wait_serving(&client).await;
    let names = |role: &str| sim.pod_names(role).join(",");
    let a = post(
        &client,
        "/v1/completions",
        &json!({"prompt": "x", "max_tokens": 4}),
        "pd-1",
    )
    .await;
    let body: Value = serde_json::from_str(&a.text()).unwrap_or_default();
    assert_eq!(
        (a.status, body["choices"][0]["finish_reason"].as_str()),
        (200, Some("length")),
        "{body}"
    );
    let served = format!("{},{}", names("prefill"), names("decode"));
    assert_eq!(
        a.headers
            .get("x-infera-served-by")
            .and_then(|v| v.to_str().ok()),
        Some(served.as_str())
    );
    let models = client
        .request_text(
            http::Request::get(format!("{PROXY}/v1/models"))
                .body(Vec::new())
                .unwrap_or_else(|e| panic!("{e}")),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        models.contains("meta-llama/Llama-3.1-8B-Instruct"),
        "{models}"
    );
    assert_eq!(record(&sim, "pd-1").served_by.join(","), served);
    // A Service selecting no Ready pod: the API server's own 503 Status.
    let services: Api<Service> = Api::namespaced(client.clone(), "llm");
    let nobody: Service = serde_json::from_value(json!({"metadata": {"name": "nobody"},
        "spec": {"selector": {"app": "nobody"}, "ports": [{"name": "http", "port": 80}]}}))
    .unwrap_or_else(|e| panic!("{e}"));
    services
        .create(&kube::api::PostParams::default(), &nobody)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let err = client
        .request_text(
            http::Request::get("/api/v1/namespaces/llm/services/nobody:http/proxy/")
                .body(Vec::new())
                .unwrap_or_else(|e| panic!("{e}")),
        )
        .await;
    match err {
        Err(kube::Error::Api(s)) => assert_eq!(
            (s.code, s.message.as_str()),
            (503, r#"no endpoints available for service "nobody""#)
        ),
        other => panic!("{other:?}"),
    }
    sim.shutdown().await;
}
