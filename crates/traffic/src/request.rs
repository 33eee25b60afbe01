//! One request through the serving path, read to its end and classed
//! (`docs/traffic.md`, "Classes").

use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http_body_util::BodyExt;
use kube::Client;
use serde_json::{Value, json};

use infera_audit::traffic::{Class, RequestRecord};

use super::route::Route;
use super::sse::{Parser, error_message};

/// The two kinds of request the client alternates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Streaming `/v1/chat/completions`.
    Chat,
    /// Non-streaming `/v1/completions`.
    Completion,
}

/// Tokens asked for: small, so a request measures the path, not the model.
pub const MAX_TOKENS: u32 = 16;

/// The most of a non-streaming or error body read.
const MAX_BODY: usize = 1 << 20;

impl Kind {
    /// The `n`th request's kind: they alternate, a stream first.
    pub fn nth(n: u64) -> Kind {
        if n.is_multiple_of(2) {
            Kind::Chat
        } else {
            Kind::Completion
        }
    }

    pub fn path(self) -> &'static str {
        match self {
            Kind::Chat => "/v1/chat/completions",
            Kind::Completion => "/v1/completions",
        }
    }

    fn body(self, model: &str) -> Value {
        match self {
            Kind::Chat => json!({"model": model, "max_tokens": MAX_TOKENS, "stream": true,
                "messages": [{"role": "user", "content": "Say hello."}]}),
            Kind::Completion => {
                json!({"model": model, "max_tokens": MAX_TOKENS, "prompt": "Say hello."})
            }
        }
    }
}

/// Milliseconds since the Unix epoch.
pub fn epoch_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// How a request ended, before it is dated.
#[derive(Debug, Clone, PartialEq)]
struct Ending {
    class: Class,
    status: Option<u16>,
    detail: Option<String>,
    ttft: Option<Duration>,
    served_by: Vec<String>,
    mixed_pair: bool,
}

impl Ending {
    fn new(class: Class, detail: impl Into<String>) -> Ending {
        Ending {
            class,
            status: None,
            detail: Some(detail.into()),
            ttft: None,
            served_by: Vec::new(),
            mixed_pair: false,
        }
    }
}

/// Send `kind` with `id` and read it to its end within `deadline`.
pub async fn send(
    client: &Client,
    route: &Route,
    kind: Kind,
    model: &str,
    id: String,
    deadline: Duration,
) -> RequestRecord {
    let started = SystemTime::now();
    let start = Instant::now();
    let ending = match tokio::time::timeout(
        deadline,
        exchange(client, route, kind, model, &id, start),
    )
    .await
    {
        Ok(ending) => ending,
        Err(_) => Ending::new(
            Class::Hung,
            format!("no complete answer within {}s", deadline.as_secs_f64()),
        ),
    };
    let elapsed = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    let started_ms = epoch_ms(started);
    RequestRecord {
        id,
        path: kind.path().to_string(),
        stream: kind == Kind::Chat,
        started_ms,
        ended_ms: started_ms.saturating_add(elapsed),
        ttft_ms: ending
            .ttft
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        class: ending.class,
        status: ending.status,
        detail: ending.detail,
        served_by: ending.served_by,
        mixed_pair: ending.mixed_pair,
        unattributed: false,
        start: Some(start),
    }
}

/// `GET /v1/models` through `route`: the first model's id.
pub async fn first_model(
    client: &Client,
    route: &Route,
    deadline: Duration,
) -> Result<String, String> {
    let request = http::Request::get(route.uri("/v1/models"))
        .body(kube::client::Body::empty())
        .map_err(|e| e.to_string())?;
    let exchange = async {
        let response = client.send(request).await.map_err(|e| transport(&e))?;
        let status = response.status().as_u16();
        let body = read_capped(response.into_body())
            .await
            .map_err(|e| format!("the body was cut: {e}"))?;
        if status != 200 {
            return Err(format!("HTTP {status}: {}", body_message(&body)));
        }
        let models: Value =
            serde_json::from_slice(&body).map_err(|_| "the answer is not JSON".to_string())?;
        models
            .pointer("/data/0/id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| "it lists no model".to_string())
    };
    tokio::time::timeout(deadline, exchange)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {}s", deadline.as_secs_f64())))
}

async fn exchange(
    client: &Client,
    route: &Route,
    kind: Kind,
    model: &str,
    id: &str,
    start: Instant,
) -> Ending {
    let request = http::Request::post(route.uri(kind.path()))
        .header(http::header::CONTENT_TYPE, "application/json")
        .header("x-request-id", id)
        .body(kube::client::Body::from(
            kind.body(model).to_string().into_bytes(),
        ));
    let request = match request {
        Ok(r) => r,
        Err(e) => return Ending::new(Class::Refused, e.to_string()),
    };
    let response = match client.send(request).await {
        Ok(r) => r,
        Err(e) => return Ending::new(Class::Refused, transport(&e)),
    };
    let status = response.status().as_u16();
    let served_by = served_by(response.headers());
    let mixed_pair =
        (response.headers().get("x-infera-kv-pair")).is_some_and(|v| v.as_bytes() == b"mismatch");
    let body = response.into_body();
    let mut ending = if status != 200 {
        refused_or_status(status, read_capped(body).await.unwrap_or_default())
    } else if kind == Kind::Chat {
        read_stream(body, start).await
    } else {
        read_completion(body).await
    };
    ending.served_by = served_by;
    ending.mixed_pair = mixed_pair;
    ending
}

/// `x-infera-served-by: a,b`.
fn served_by(headers: &http::HeaderMap) -> Vec<String> {
    headers
        .get("x-infera-served-by")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(',')
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// A transport error in a few words, never a header or a credential.
fn transport(e: &kube::Error) -> String {
    let text = infera_cluster::redact::kube_error(e);
    let lower = text.to_ascii_lowercase();
    for (needle, words) in [
        ("refused", "connection refused"),
        ("reset", "connection reset"),
        ("broken pipe", "connection reset"),
        ("closed", "connection closed before a status"),
    ] {
        if lower.contains(needle) {
            return words.to_string();
        }
    }
    text.chars().take(200).collect()
}

/// A non-200: the API server's own proxy errors (a Kubernetes `Status`
/// saying the backend could not be reached) are `refused`; anything else
/// is `status` with its code.
fn refused_or_status(status: u16, body: Bytes) -> Ending {
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    let k8s_status = parsed
        .as_ref()
        .is_some_and(|v| v.get("kind").and_then(Value::as_str) == Some("Status"));
    let message = message_of(parsed.as_ref(), &body);
    let unreachable = [
        "error trying to reach service",
        "no endpoints available",
        "connection refused",
    ];
    if k8s_status && status == 503 && unreachable.iter().any(|u| message.contains(u)) {
        return Ending {
            status: Some(status),
            ..Ending::new(Class::Refused, message)
        };
    }
    Ending {
        status: Some(status),
        ..Ending::new(Class::Status, message)
    }
}

/// The message of an error body (OpenAI's `error.message`, a Kubernetes
/// Status' `message`), else its first 200 characters.
fn body_message(body: &[u8]) -> String {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    message_of(parsed.as_ref(), body)
}

/// [`body_message`] of a body already parsed (`parsed`: its JSON, if any).
fn message_of(parsed: Option<&Value>, body: &[u8]) -> String {
    if let Some(v) = parsed {
        if let Some(e) = v.get("error") {
            return error_message(e);
        }
        if let Some(m) = v.get("message").and_then(Value::as_str) {
            return m.chars().take(200).collect();
        }
    }
    String::from_utf8_lossy(body).chars().take(200).collect()
}

/// The body up to [`MAX_BODY`]; an error when it ends early.
async fn read_capped(mut body: kube::client::Body) -> Result<Bytes, String> {
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| transport(&e))?;
        if let Ok(data) = frame.into_data() {
            let room = MAX_BODY.saturating_sub(out.len());
            out.extend_from_slice(&data[..data.len().min(room)]);
        }
    }
    Ok(Bytes::from(out))
}

async fn read_stream(mut body: kube::client::Body, start: Instant) -> Ending {
    let mut parser = Parser::default();
    let mut ttft = None;
    let mut cut = None;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Ok(data) = frame.into_data()
                    && parser.feed(&data)
                {
                    ttft = Some(start.elapsed());
                }
            }
            Err(e) => {
                cut = Some(transport(&e));
                break;
            }
        }
    }
    let seen = parser.seen();
    let mut ending = match (&seen.error, seen.done, cut) {
        (Some(error), _, _) => Ending::new(Class::ErrorEvent, error.clone()),
        (None, true, _) => Ending {
            detail: None,
            ..Ending::new(Class::Ok, "")
        },
        (None, false, Some(why)) => Ending::new(Class::Cut, format!("the stream was cut: {why}")),
        (None, false, None) => Ending::new(Class::Cut, "the stream ended before [DONE]"),
    };
    ending.status = Some(200);
    ending.ttft = ttft;
    ending
}

async fn read_completion(body: kube::client::Body) -> Ending {
    let body = match read_capped(body).await {
        Ok(b) => b,
        Err(why) => {
            return Ending {
                status: Some(200),
                ..Ending::new(Class::Cut, format!("the body was cut: {why}"))
            };
        }
    };
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    let mut ending = match parsed {
        Some(v) if v.get("error").is_some() => Ending::new(
            Class::ErrorEvent,
            v.get("error").map(error_message).unwrap_or_default(),
        ),
        Some(v)
            if v.pointer("/choices/0/finish_reason")
                .is_some_and(|f| !f.is_null()) =>
        {
            Ending {
                detail: None,
                ..Ending::new(Class::Ok, "")
            }
        }
        Some(_) => Ending::new(Class::Cut, "the answer has no finish_reason"),
        None => Ending::new(Class::Cut, "the body ended before a complete answer"),
    };
    ending.status = Some(200);
    ending
}

#[cfg(test)]
mod tests;
