//! Prefill and decode through a roll (issue 43): infera's preflight
//! predicts what a change does to prefill/decode pairs, and the
//! simulator's truth (every pairing the router made, with both KV
//! identities) and infera's traffic client agree with it, in each case:
//! compatible, incompatible under operator 176's barrier (a stall: the new
//! decode crash-loops, no request is paired across), incompatible before
//! it with `kv_load_failure_policy` `fail` (requests paired across fail)
//! and `recompute` (they succeed, with a local prefill's first token).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use infera_sim::SimOptions;
use infera_sim_core::requests::{Outcome, RequestRecord};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::common::process::infera;
use crate::common::sim::{Sim, options};

/// Scenario seconds per wall second.
const SPEED: f64 = 10.0;
/// The image the scenarios run, and the next engine version.
const NEW_IMAGE: &str = "rocm/infera:0.9.2";

/// `base` with short starts; the decode recomputes on a KV mismatch when
/// `recompute`.
fn scenario(base: &str, recompute: bool) -> SimOptions {
    let mut o = options(base, SPEED);
    o.scenario.timings.image_pull = 5.0;
    o.scenario.timings.weight_load = 40.0;
    o.scenario.timings.weight_load_jitter = 2.0;
    o.scenario.timings.recompute_ttft = 20.0;
    if recompute {
        let idep = o
            .scenario
            .manifests
            .iter_mut()
            .find(|m| m["kind"] == "InferaDeployment")
            .unwrap_or_else(|| panic!("no InferaDeployment in {base}"));
        let args = idep["spec"]["services"]["decode"]["args"].as_array_mut();
        let args = args.unwrap_or_else(|| panic!("decode args moved"));
        args.push("--kv-transfer-config".into());
        args.push(
            r#"{"kv_connector":"NixlConnector","kv_load_failure_policy":"recompute"}"#.into(),
        );
    }
    o
}

/// `infera ARGS --kubeconfig … -n llm`: exit code, stdout, stderr.
async fn run(sim: &Sim, args: &[&str]) -> (i32, String, String) {
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.extend([
        "--kubeconfig".into(),
        sim.kubeconfig().display().to_string(),
    ]);
    all.extend(["-n".into(), "llm".into()]);
    let out = tokio::task::spawn_blocking(move || {
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        infera(&all).output()
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"))
    .unwrap_or_else(|e| panic!("infera: {e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// The plan event's `kv_coherence` in `-o json` output.
fn coherence(stdout: &str) -> Value {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["event"] == "plan")
        .map(|e| e["kv_coherence"].clone())
        .unwrap_or_else(|| panic!("no plan event in\n{stdout}"))
}

/// `rollout COMMAND idep/llama` (`set-image` to [`NEW_IMAGE`]) `--yes`.
fn rollout(command: &'static str) -> Vec<&'static str> {
    let mut all = vec!["rollout", command, "idep/llama", "--yes"];
    if command == "set-image" {
        all.push(NEW_IMAGE);
    }
    all
}

/// The plan of `rollout COMMAND EXTRA -o json` (no `--force`): its exit
/// and `kv_coherence`.
async fn predict(sim: &Sim, command: &'static str, extra: &[&str]) -> (i32, Value) {
    let mut all = rollout(command);
    all.extend_from_slice(extra);
    all.extend(["-o", "json"]);
    let (code, out, err) = run(sim, &all).await;
    let c = coherence(&out);
    assert!(!c.is_null(), "no prediction:\n{out}\n{err}");
    (code, c)
}

/// The requests the truth recorded whose pair's identities differed.
fn mismatched(truth: &[RequestRecord]) -> Vec<&RequestRecord> {
    (truth.iter())
        .filter(|r| r.pairing.as_ref().is_some_and(|p| !p.compatible))
        .collect()
}

/// The client's `--traffic-log` by request id.
fn client_log(sim: &Sim) -> BTreeMap<String, Value> {
    let path = sim.path("traffic.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|r| (r["id"].as_str().unwrap_or_default().to_string(), r))
        .collect()
}

/// `rollout COMMAND --force --traffic` with its log: exit, output.
async fn roll_with_traffic(sim: &Sim, command: &'static str) -> (i32, String) {
    let log = sim.path("traffic.jsonl").display().to_string();
    let mut all = rollout(command);
    all.extend(["--force", "--traffic"]);
    all.extend(["--traffic-rate", "10", "--traffic-log", &log]);
    let (code, out, err) = run(sim, &all).await;
    (code, format!("{out}\n--- stderr\n{err}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_is_compatible_and_pairs_nothing_across() {
    let sim = Sim::with(scenario("pd-1p1d", false)).await;
    let (_, predicted) = predict(&sim, "restart", &[]).await;
    assert_eq!(predicted["case"], "compatible", "{predicted}");
    let (code, out) = roll_with_traffic(&sim, "restart").await;
    let truth = sim.truth().requests().records();
    let paired = truth.iter().filter(|r| r.pairing.is_some()).count();
    assert!(paired > 0, "no request was paired:\n{out}");
    assert!(mismatched(&truth).is_empty(), "{truth:?}");
    let log = client_log(&sim);
    assert!(log.values().all(|r| r["class"] == "ok"), "{log:?}\n{out}");
    assert!(!out.contains("different KV identities"), "{out}");
    assert_eq!(code, 0, "{out}");
    sim.shutdown().await;
}

/// Under operator 176 an engine upgrade stalls: the prediction names the
/// field and the leg and refuses (exit 3); applied anyway, the new decode
/// fails its KV check against the registered prefill and crash-loops,
/// never registers, and every request is served by the old pair.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_the_barrier_an_incompatible_decode_crash_loops_and_pairs_nothing() {
    let sim = Sim::with(scenario("pd-1p1d", false)).await;
    let (code, out, _) = run(&sim, &rollout("set-image")).await;
    assert_eq!(code, 3, "{out}");
    for said in [
        "KV coherence: INCOMPATIBLE: the new decode pods (decode) differ from the old prefill pods (engine version 0.9.1 → 0.9.2)",
        "predicted STALL, the old pair keeps serving",
        "Stopping before any change: prefill and decode would pair across an incompatible KV change",
    ] {
        assert!(out.contains(said), "{said:?} not in\n{out}");
    }
    barrier_stalls(&sim, "decode").await;
    sim.shutdown().await;
}

/// Prefill first (`--order prefill`): the new prefill's block transfer to
/// the registered old decode fails, the same stall on the prefill leg.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_the_barrier_an_incompatible_prefill_crash_loops_too() {
    let sim = Sim::with(scenario("pd-1p1d", false)).await;
    let (code, predicted) = predict(&sim, "set-image", &["--order", "prefill"]).await;
    assert_eq!(
        (predicted["case"].as_str(), predicted["first_leg"].as_str()),
        (Some("stall"), Some("prefill")),
        "{predicted}"
    );
    assert_eq!(predicted["change"], "engine version 0.9.1 → 0.9.2");
    assert_eq!(code, 3, "{predicted}");
    barrier_stalls(&sim, "prefill").await;
    sim.shutdown().await;
}

/// `service` set to [`NEW_IMAGE`] while requests run: its new pod
/// crash-loops unregistered, no request is paired across or fails.
async fn barrier_stalls(sim: &Sim, service: &str) {
    let conn = sim.connect().await;
    let traffic = crate::common::traffic::start(&conn, "llama", 10.0).await;
    let ideps: Api<DynamicObject> = Api::namespaced_with(
        sim.client().await,
        "llm",
        &infera_cluster::inferadeployment_resource(),
    );
    let patch = json!({"spec": {"services": {service: {"image": NEW_IMAGE}}}});
    ideps
        .patch("llama", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let crashed = crash_looping(sim, service).await;
    let run = traffic.stop().await;
    let truth = sim.truth().requests().records();
    assert!(mismatched(&truth).is_empty(), "{truth:?}");
    assert!(
        truth.iter().all(|r| !r.served_by.contains(&crashed)),
        "the crash-looping {service} {crashed} served a request"
    );
    let failed: Vec<_> = (run.records.iter())
        .filter(|r| r.class != infera_audit::traffic::Class::Ok)
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert!(!run.records.is_empty(), "no request was sent");
}

/// Until a pod of `service` on the new image has restarted twice: its
/// name (it is not registered).
async fn crash_looping(sim: &Sim, service: &str) -> String {
    let pods: Api<Pod> = Api::namespaced(sim.client().await, "llm");
    let params = kube::api::ListParams::default().labels(&format!(
        "{}={service}",
        infera_model::worker::LABEL_SERVICE
    ));
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let list = pods.list(&params).await;
        let found = list.into_iter().flat_map(|l| l.items).find(|p| {
            let spec = p.spec.as_ref().and_then(|s| s.containers.first());
            let new = spec.and_then(|c| c.image.as_deref()) == Some(NEW_IMAGE);
            let restarts = (p.status.as_ref())
                .and_then(|s| s.container_statuses.as_ref())
                .and_then(|cs| cs.first())
                .map_or(0, |c| c.restart_count);
            new && restarts >= 2
        });
        if let Some(p) = found {
            let annotations = p.metadata.annotations.unwrap_or_default();
            assert!(
                !annotations.contains_key(infera_model::worker::WORKER_INFO_ANNOTATION),
                "a crash-looping {service} is registered"
            );
            return p.metadata.name.unwrap_or_default();
        }
        assert!(
            Instant::now() < deadline,
            "no new {service} crash-looped: {:?}",
            sim.pod_names(service)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Before operator 176, with the default policy: the prediction says
/// requests paired across the change fail for the mixed window (the old
/// prefill's preStop); the roll, forced, fails exactly the requests the
/// truth paired across it, each as the decode's 500, and the client
/// counts the same ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_176_requests_paired_across_fail_as_predicted() {
    let sim = Sim::with(scenario("pd-1p1d-pre176", false)).await;
    let (code, predicted) = predict(&sim, "set-image", &[]).await;
    assert_eq!(predicted["case"], "failed-requests", "{predicted}");
    assert_eq!(predicted["first_leg"], "decode", "{predicted}");
    assert!(
        predicted["window_seconds"]
            .as_f64()
            .is_some_and(|w| w > 0.0),
        "{predicted}"
    );
    assert_eq!((code, &predicted["lasting"]), (3, &json!(false)));
    // The decode alone: the prefill keeps the old identity for good.
    let (_, alone) = predict(&sim, "set-image", &["--service", "decode"]).await;
    assert_eq!(
        (alone["case"].as_str(), alone["lasting"].as_bool()),
        (Some("failed-requests"), Some(true)),
        "{alone}"
    );
    let (_, out) = roll_with_traffic(&sim, "set-image").await;
    let truth = sim.truth().requests().records();
    let across = mismatched(&truth);
    assert!(!across.is_empty(), "no request was paired across:\n{out}");
    let log = client_log(&sim);
    for r in &across {
        assert_eq!((r.outcome, r.code), (Outcome::Status, Some(500)), "{r:?}");
        let seen = log
            .get(&r.id)
            .unwrap_or_else(|| panic!("{} not logged", r.id));
        assert_eq!(
            (seen["class"].as_str(), seen["status"].as_u64()),
            (Some("status"), Some(500))
        );
        let p = r
            .pairing
            .as_ref()
            .map(|p| (p.prefill.clone(), p.decode.clone()));
        assert_eq!(p.map(|(_, d)| d), r.served_by.get(1).cloned(), "{r:?}");
    }
    let client_500 = log.values().filter(|r| r["status"] == 500).count();
    assert_eq!(client_500, across.len(), "{out}");
    // The audit measured the mixed window from the pods alone.
    assert!(
        out.contains("; prefill and decode of different KV identities served together for "),
        "{out}"
    );
    sim.shutdown().await;
}

/// Before 176 with `recompute`: the prediction does not refuse for it,
/// and every request paired across succeeds, its first token no sooner
/// than the local prefill's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_176_recompute_serves_paired_requests_slower() {
    let sim = Sim::with(scenario("pd-1p1d-pre176", true)).await;
    let (_, predicted) = predict(&sim, "set-image", &[]).await;
    assert_eq!(predicted["case"], "recompute", "{predicted}");
    assert_eq!(predicted["blocks"], false, "{predicted}");
    let (_, out) = roll_with_traffic(&sim, "set-image").await;
    let truth = sim.truth().requests().records();
    let across = mismatched(&truth);
    assert!(!across.is_empty(), "no request was paired across:\n{out}");
    let log = client_log(&sim);
    let local_prefill = 20.0 / SPEED * 1000.0;
    for r in &across {
        assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
        let seen = log
            .get(&r.id)
            .unwrap_or_else(|| panic!("{} not logged", r.id));
        assert_eq!(seen["class"], "ok", "{seen}");
        if let Some(ttft) = seen["ttftMs"].as_f64() {
            assert!(ttft >= local_prefill, "{seen}");
        }
    }
    // The client read the router's word on each pairing: exactly the
    // requests the truth paired across are marked, and the sentence counts
    // them.
    let marked: Vec<&str> = (log.values())
        .filter(|r| r["mixedPair"] == true)
        .filter_map(|r| r["id"].as_str())
        .collect();
    let mut truth_ids: Vec<&str> = across.iter().map(|r| r.id.as_str()).collect();
    truth_ids.sort_unstable();
    assert_eq!(marked, truth_ids, "{out}");
    let said = format!("; {} were paired across KV identities", across.len());
    assert!(out.contains(&said), "{said:?} in\n{out}");
    sim.shutdown().await;
}

/// `POST` a completion through the router's Service with `x-disagg-revision:
/// revision`: the status and the response's headers.
async fn complete(client: &kube::Client, revision: &str) -> (u16, http::HeaderMap) {
    let body =
        json!({"model": "meta-llama/Llama-3.1-8B-Instruct", "max_tokens": 2, "prompt": "hi"});
    let req = http::Request::post(
        "/api/v1/namespaces/llm/services/llama-router:http/proxy/v1/completions",
    )
    .header("content-type", "application/json")
    .header("x-disagg-revision", revision)
    .body(body.to_string().into_bytes())
    .unwrap_or_else(|e| panic!("{e}"));
    let resp = client.send(req.map(kube::client::Body::from)).await;
    let resp = resp.unwrap_or_else(|e| panic!("{e}"));
    (resp.status().as_u16(), resp.headers().clone())
}

/// llm-d's revision pinning: once every worker carries
/// `disaggregatedset.x-k8s.io/revision: r1`, a request naming `r1` is
/// served by a matched pair and answered with `x-disagg-revision: r1`, one
/// naming another revision finds no worker (503).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_pins_a_request_to_its_revision() {
    let sim = Sim::with(scenario("pd-1p1d", false)).await;
    let ideps: Api<DynamicObject> = Api::namespaced_with(
        sim.client().await,
        "llm",
        &infera_cluster::inferadeployment_resource(),
    );
    let labels = json!({"podLabels": {"disaggregatedset.x-k8s.io/revision": "r1"}});
    let patch = json!({"spec": {"services": {"prefill": labels, "decode": labels}}});
    ideps
        .patch("llama", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut config = sim.client_config().await.unwrap_or_else(|e| panic!("{e}"));
    config.default_retry = false;
    let client = kube::Client::try_from(config).unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + Duration::from_secs(90);
    let headers = loop {
        let (status, headers) = complete(&client, "r1").await;
        if status == 200 {
            break headers;
        }
        assert!(Instant::now() < deadline, "r1 never served: {status}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    assert_eq!(header("x-disagg-revision").as_deref(), Some("r1"));
    assert_eq!(header("x-infera-kv-pair").as_deref(), Some("match"));
    let served = header("x-infera-served-by").unwrap_or_default();
    assert_eq!(served.split(',').count(), 2, "{served}");
    assert_eq!(complete(&client, "r2").await.0, 503);
    sim.shutdown().await;
}
