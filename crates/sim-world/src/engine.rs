//! The simulated engine's OpenAI-compatible server, as vLLM's serves it:
//! `GET /v1/models`, `POST /v1/completions` and `POST /v1/chat/completions`
//! (SSE with `stream: true`, else one JSON body), beside the health checks
//! (`/health`, `/health_generate`). A request generates exactly
//! `max_tokens` tokens (default 16): the first after the scenario's `ttft`,
//! then one every `1/tokenRate`, in scenario time; `finish_reason` is
//! `"length"`. Chunks follow vLLM's (`chat.completion.chunk` with a
//! `delta`, `text_completion` with `text`), then `data: [DONE]`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, Response, StatusCode, header};
use axum::routing::{get, post};
use serde_json::{Value, json};

use infera_model::kv::LoadFailurePolicy;
use infera_sim_core::clock::SimClock;

/// The largest `max_tokens` served (a bigger one is refused with 400).
const MAX_TOKENS: u64 = 65_536;
/// The largest request body read.
const BODY_LIMIT: usize = 1 << 20;

/// What an engine serves with.
#[derive(Debug, Clone)]
pub(crate) struct EngineConfig {
    /// The served model id.
    pub model: String,
    pub clock: SimClock,
    /// Scenario seconds to the first token.
    pub ttft: f64,
    /// Tokens per scenario second after the first.
    pub token_rate: f64,
    /// Its KV compatibility handshake.
    pub kv: KvHandshake,
}

/// What an engine's KV transfer handshake compares and does on a mismatch.
#[derive(Debug, Clone)]
pub(crate) struct KvHandshake {
    /// The worker pod (the prefill's `remote_engine_id`).
    pub pod: String,
    /// Its identity's digest ([`infera_model::kv::KvIdentity::digest`]).
    pub digest: String,
    /// What a decode does when the prefill's identity differs.
    pub policy: LoadFailurePolicy,
    /// Scenario seconds to the first token when a decode prefills locally.
    pub recompute_ttft: f64,
}

/// The response header an engine names its KV identity's digest in (the
/// simulator's own: the router records pairings from it).
pub(crate) const KV_IDENTITY: &str = "x-infera-kv-identity";

/// A JSON response.
pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    let mut resp = Response::new(Body::from(body.to_string()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// An OpenAI error body (`{"error": {"message", "type", "code"}}`).
pub(crate) fn error_response(status: StatusCode, kind: &str, message: &str) -> Response<Body> {
    let body = json!({"error": {"message": message, "type": kind, "code": status.as_u16()}});
    json_response(status, &body)
}

/// The engine's routes.
pub(crate) fn app(config: EngineConfig) -> Router {
    let ok = || async { "ok" };
    Router::new()
        .route("/health", get(ok))
        .route("/health_generate", get(ok))
        .route("/v1/models", get(models))
        .route("/v1/completions", post(completions))
        .route("/v1/chat/completions", post(chat_completions))
        .with_state(Arc::new(config))
}

async fn models(State(c): State<Arc<EngineConfig>>) -> Response<Body> {
    let created = jiff::Timestamp::now().as_second();
    json_response(
        StatusCode::OK,
        &json!({"object": "list", "data": [{"id": c.model, "object": "model", "created": created,
            "owned_by": "vllm", "root": c.model, "parent": null}]}),
    )
}

/// Which endpoint a request came to.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Api {
    Completions,
    Chat,
}

/// A generation request, as far as the engine reads it.
struct Generation {
    api: Api,
    stream: bool,
    max_tokens: u64,
    id: String,
    created: i64,
    /// `kv_transfer_params.do_remote_decode`: a prefill for a remote decode.
    remote_decode: bool,
    /// `kv_transfer_params.compat_hash`: the identity of the prefill whose
    /// KV cache this decode is to load.
    remote_prefill: Option<String>,
}

async fn completions(State(c): State<Arc<EngineConfig>>, body: Body) -> Response<Body> {
    generate(&c, Api::Completions, body).await
}

async fn chat_completions(State(c): State<Arc<EngineConfig>>, body: Body) -> Response<Body> {
    generate(&c, Api::Chat, body).await
}

/// An OpenAI error: status, `type`, message.
type ApiError = (StatusCode, &'static str, String);

/// The request read, or the 400/404 vLLM answers.
fn parse(c: &EngineConfig, api: Api, bytes: &[u8]) -> Result<Generation, ApiError> {
    let bad = |m: String| (StatusCode::BAD_REQUEST, "BadRequestError", m);
    let req: Value = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
    if let Some(model) = req.get("model").and_then(Value::as_str)
        && model != c.model
    {
        let message = format!("The model `{model}` does not exist.");
        return Err((StatusCode::NOT_FOUND, "NotFoundError", message));
    }
    let max_tokens = match req.get("max_tokens") {
        None | Some(Value::Null) => 16,
        Some(v) => v
            .as_u64()
            .filter(|n| (1..=MAX_TOKENS).contains(n))
            .ok_or_else(|| bad(format!("max_tokens must be 1..={MAX_TOKENS}, got {v}")))?,
    };
    let prefix = if api == Api::Chat { "chatcmpl" } else { "cmpl" };
    let params = req.get("kv_transfer_params");
    Ok(Generation {
        remote_decode: params
            .and_then(|p| p.get("do_remote_decode"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        remote_prefill: params
            .and_then(|p| p.get("compat_hash"))
            .and_then(Value::as_str)
            .map(str::to_string),
        api,
        stream: req.get("stream").and_then(Value::as_bool).unwrap_or(false),
        max_tokens,
        id: format!("{prefix}-{:032x}", rand::random::<u128>()),
        created: jiff::Timestamp::now().as_second(),
    })
}

async fn generate(c: &EngineConfig, api: Api, body: Body) -> Response<Body> {
    let mut resp = answer(c, api, body).await;
    if let Ok(v) = HeaderValue::from_str(&c.kv.digest) {
        resp.headers_mut().insert(KV_IDENTITY, v);
    }
    resp
}

async fn answer(c: &EngineConfig, api: Api, body: Body) -> Response<Body> {
    let started = Instant::now();
    let bytes = match axum::body::to_bytes(body, BODY_LIMIT).await {
        Ok(b) => b,
        Err(e) => {
            return error_response(StatusCode::BAD_REQUEST, "BadRequestError", &e.to_string());
        }
    };
    let g = match parse(c, api, &bytes) {
        Ok(g) => g,
        Err((status, kind, message)) => return error_response(status, kind, &message),
    };
    let ttft = match handshake(&c.kv, &g) {
        Ok(ttft) => ttft.unwrap_or(c.ttft),
        Err(resp) => return *resp,
    };
    let schedule = Schedule {
        clock: c.clock.clone(),
        started,
        ttft,
        token_rate: c.token_rate,
    };
    if g.stream {
        stream(c.model.clone(), g, schedule)
    } else {
        tokio::time::sleep_until(schedule.token_at(g.max_tokens - 1).into()).await;
        let mut body = whole(&c.model, &g);
        if g.remote_decode {
            body["kv_transfer_params"] = json!({"do_remote_prefill": true,
                "remote_engine_id": c.kv.pod, "compat_hash": c.kv.digest});
        }
        json_response(StatusCode::OK, &body)
    }
}

/// A decode's KV handshake with the prefill a request names: `Ok(None)`
/// when there is none or their identities match; on a mismatch the 500 of
/// `fail` or the local prefill's time to first token of `recompute`.
fn handshake(kv: &KvHandshake, g: &Generation) -> Result<Option<f64>, Box<Response<Body>>> {
    let Some(remote) = g.remote_prefill.as_deref().filter(|r| *r != kv.digest) else {
        return Ok(None);
    };
    match kv.policy {
        LoadFailurePolicy::Recompute => Ok(Some(kv.recompute_ttft)),
        LoadFailurePolicy::Fail => {
            let message = format!(
                "NIXL compatibility hash mismatch: remote {remote}, local {}: different vLLM versions, models, dtypes, KV cache layouts, attention backends",
                kv.digest
            );
            Err(Box::new(error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalServerError",
                &message,
            )))
        }
    }
}

/// When each token is ready, in wall time.
struct Schedule {
    clock: SimClock,
    started: Instant,
    ttft: f64,
    token_rate: f64,
}

impl Schedule {
    /// The wall instant token `i` (0-based) is generated at.
    fn token_at(&self, i: u64) -> Instant {
        let rate = if self.token_rate.is_finite() && self.token_rate > 0.0 {
            self.token_rate
        } else {
            1.0
        };
        // u64 → f64 is exact below 2^53; max_tokens is far below.
        #[allow(clippy::cast_precision_loss)]
        let at = self.ttft.max(0.0) + i as f64 / rate;
        let at = if at.is_finite() { at } else { 0.0 };
        self.started + self.clock.to_wall(Duration::from_secs_f64(at))
    }
}

/// Token `i`'s text.
fn token(i: u64) -> String {
    const WORDS: [&str; 8] = [
        " The",
        " simulated",
        " engine",
        " says",
        " hello",
        " to",
        " the",
        " client",
    ];
    let word = usize::try_from(i % 8).map_or(" token", |k| WORDS[k]);
    word.to_string()
}

/// The non-streaming answer.
fn whole(model: &str, g: &Generation) -> Value {
    let text: String = (0..g.max_tokens).map(token).collect();
    let usage = json!({"prompt_tokens": 8, "completion_tokens": g.max_tokens, "total_tokens": 8 + g.max_tokens});
    let choice = match g.api {
        Api::Chat => json!({"index": 0, "message": {"role": "assistant", "content": text},
            "logprobs": null, "finish_reason": "length", "stop_reason": null}),
        Api::Completions => json!({"index": 0, "text": text, "logprobs": null,
            "finish_reason": "length", "stop_reason": null}),
    };
    let object = match g.api {
        Api::Chat => "chat.completion",
        Api::Completions => "text_completion",
    };
    json!({"id": g.id, "object": object, "created": g.created, "model": model,
        "choices": [choice], "usage": usage})
}

/// One SSE chunk: token `i`'s (the last one with its `finish_reason`), or
/// the role-only first chunk of a chat stream (`None`).
fn chunk(model: &str, g: &Generation, i: Option<u64>) -> Bytes {
    let finish = i
        .filter(|i| *i + 1 == g.max_tokens)
        .map(|_| Value::from("length"));
    let choice = match (g.api, i) {
        (Api::Chat, None) => json!({"index": 0, "delta": {"role": "assistant", "content": ""},
            "logprobs": null, "finish_reason": null}),
        (Api::Chat, Some(i)) => json!({"index": 0, "delta": {"content": token(i)},
            "logprobs": null, "finish_reason": finish}),
        (Api::Completions, i) => json!({"index": 0, "text": i.map(token).unwrap_or_default(),
            "logprobs": null, "finish_reason": finish}),
    };
    let object = match g.api {
        Api::Chat => "chat.completion.chunk",
        Api::Completions => "text_completion",
    };
    let data = json!({"id": g.id, "object": object, "created": g.created, "model": model,
        "choices": [choice]});
    Bytes::from(format!("data: {data}\n\n"))
}

/// The SSE answer: headers at once, then a chunk as each token is ready.
fn stream(model: String, g: Generation, schedule: Schedule) -> Response<Body> {
    let first = (g.api == Api::Chat).then(|| chunk(&model, &g, None));
    let state = (0u64, model, g, schedule);
    let tokens = futures::stream::unfold(state, |(i, model, g, s)| async move {
        if i > g.max_tokens {
            return None;
        }
        if i == g.max_tokens {
            let done = Bytes::from_static(b"data: [DONE]\n\n");
            return Some((Ok::<_, Infallible>(done), (i + 1, model, g, s)));
        }
        tokio::time::sleep_until(s.token_at(i).into()).await;
        let bytes = chunk(&model, &g, Some(i));
        Some((Ok(bytes), (i + 1, model, g, s)))
    });
    let head = futures::stream::iter(first.map(Ok));
    let body = Body::from_stream(futures::StreamExt::chain(head, tokens));
    let mut resp = Response::new(body);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(policy: LoadFailurePolicy) -> KvHandshake {
        KvHandshake {
            pod: "decode-0".into(),
            digest: "d1".into(),
            policy,
            recompute_ttft: 7.0,
        }
    }

    fn asked(body: Value) -> Generation {
        let c = EngineConfig {
            model: "m".into(),
            clock: SimClock::new(1.0),
            ttft: 0.2,
            token_rate: 50.0,
            kv: kv(LoadFailurePolicy::Fail),
        };
        parse(&c, Api::Completions, body.to_string().as_bytes()).unwrap_or_else(|e| panic!("{e:?}"))
    }

    /// A decode loads the KV of a prefill of its own identity; another
    /// fails the request (`fail`) or is prefilled locally (`recompute`).
    #[test]
    fn the_decode_checks_the_prefills_identity() {
        let same = asked(json!({"kv_transfer_params": {"compat_hash": "d1"}}));
        let other = asked(json!({"kv_transfer_params": {"compat_hash": "p0"}}));
        let none = asked(json!({}));
        let fail = kv(LoadFailurePolicy::Fail);
        let recompute = kv(LoadFailurePolicy::Recompute);
        assert_eq!(handshake(&fail, &same).ok(), Some(None));
        assert_eq!(handshake(&fail, &none).ok(), Some(None));
        assert_eq!(handshake(&recompute, &other).ok(), Some(Some(7.0)));
        let refused = handshake(&fail, &other).err();
        let status = refused.map(|r| r.status());
        assert_eq!(status, Some(StatusCode::INTERNAL_SERVER_ERROR));
        let prefill = asked(json!({"kv_transfer_params": {"do_remote_decode": true}}));
        assert!(prefill.remote_decode && !same.remote_decode);
    }
}
