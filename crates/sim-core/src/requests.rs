//! The simulator's ground truth of requests: every request the simulated
//! router received and how it ended (`docs/traffic.md`, "The simulator's
//! ground truth"). The world's router writes it; `RunningSim::truth()`
//! exposes it beside the pod truth and `sim serve --truth FILE` writes it.
//! It lives here so that the world and the store both reach it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// How a request the router received ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// A complete answer: `[DONE]` after a `finish_reason`, or a whole body.
    Ok,
    /// An HTTP status other than 200 (the record's `code`).
    Status,
    /// An error event inside a 200 stream (a worker failed mid-stream).
    ErrorEvent,
    /// The router cut the client's body (a worker failed mid-body of a
    /// non-streaming answer, or the router itself was stopped).
    Cut,
    /// The client left before the answer was complete.
    ClientGone,
}

impl Outcome {
    /// The name the truth file and `docs/traffic.md` use.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Status => "status",
            Outcome::ErrorEvent => "error-event",
            Outcome::Cut => "cut",
            Outcome::ClientGone => "client-gone",
        }
    }
}

/// One request the router received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestRecord {
    /// The request's `X-Request-Id` (empty when it carried none).
    pub id: String,
    /// The router pod that received it.
    pub router: String,
    /// The request path (`/v1/chat/completions`).
    pub path: String,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// Wall-clock milliseconds since the Unix epoch.
    pub started_ms: u64,
    pub ended_ms: u64,
    /// The worker pods that served it (prefill first, then decode).
    pub served_by: Vec<String>,
    pub outcome: Outcome,
    /// The HTTP status, for [`Outcome::Status`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    /// The prefill and decode the router paired for it, once the decode
    /// answered (absent for a mixed worker or a request that never reached
    /// a decode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairing: Option<Pairing>,
}

/// A prefill and a decode paired for one request, with their KV
/// compatibility identities (`infera_model::kv`, digests as the engines
/// answered them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pairing {
    pub prefill: String,
    pub decode: String,
    pub prefill_identity: String,
    pub decode_identity: String,
    /// Whether the identities are equal (the decode could load the KV).
    pub compatible: bool,
}

impl Pairing {
    pub fn new(prefill: (String, String), decode: (String, String)) -> Pairing {
        Pairing {
            compatible: prefill.1 == decode.1,
            prefill: prefill.0,
            decode: decode.0,
            prefill_identity: prefill.1,
            decode_identity: decode.1,
        }
    }
}

/// The most records the log keeps: the oldest go first, counted. About
/// 200 bytes a record: 20 MB at most, some 14 hours of a monitor probing
/// two routers every second.
pub const LOG_CAP: usize = 100_000;

/// The request log: shared, append-only, the last [`LOG_CAP`] records.
#[derive(Debug, Clone, Default)]
pub struct RequestLog {
    inner: Arc<Mutex<Kept>>,
}

#[derive(Debug, Default)]
struct Kept {
    records: VecDeque<RequestRecord>,
    dropped: u64,
}

impl RequestLog {
    /// Append one finished request (dropping the oldest past [`LOG_CAP`]).
    pub fn record(&self, r: RequestRecord) {
        let mut kept = self.lock();
        kept.records.push_back(r);
        if kept.records.len() > LOG_CAP {
            kept.records.pop_front();
            kept.dropped += 1;
        }
    }

    /// Every request kept, in the order they ended.
    pub fn records(&self) -> Vec<RequestRecord> {
        self.lock().records.iter().cloned().collect()
    }

    /// How many of the oldest records were dropped for [`LOG_CAP`].
    pub fn dropped(&self) -> u64 {
        self.lock().dropped
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Wall-clock milliseconds since the Unix epoch, as the records date requests.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past the cap the oldest records go, and are counted.
    #[test]
    fn the_log_keeps_the_newest_records() {
        let log = RequestLog::default();
        let total = LOG_CAP as u64 + 5;
        for seq in 0..total {
            log.record(RequestRecord {
                id: format!("r-{seq}"),
                router: "r".into(),
                path: "/v1/completions".into(),
                stream: false,
                started_ms: seq,
                ended_ms: seq,
                served_by: Vec::new(),
                outcome: Outcome::Ok,
                code: None,
                pairing: None,
            });
        }
        let kept = log.records();
        assert_eq!(kept.len(), LOG_CAP);
        assert_eq!(kept.first().map(|r| r.id.as_str()), Some("r-5"));
        assert_eq!(log.dropped(), 5);
    }

    #[test]
    fn records_serialize_with_the_contract_names() {
        let log = RequestLog::default();
        log.record(RequestRecord {
            id: "infera-r-1".into(),
            router: "llama-router-0".into(),
            path: "/v1/completions".into(),
            stream: false,
            started_ms: 1,
            ended_ms: 2,
            served_by: vec!["p".into(), "d".into()],
            outcome: Outcome::Status,
            code: Some(503),
            pairing: None,
        });
        let json = serde_json::to_value(log.records()).unwrap_or_default();
        assert_eq!(
            json[0],
            serde_json::json!({"id": "infera-r-1", "router": "llama-router-0", "path": "/v1/completions",
                "stream": false, "startedMs": 1, "endedMs": 2, "servedBy": ["p", "d"],
                "outcome": "status", "code": 503})
        );
        for o in [
            Outcome::Ok,
            Outcome::ErrorEvent,
            Outcome::Cut,
            Outcome::ClientGone,
        ] {
            assert_eq!(serde_json::to_value(o).unwrap_or_default(), o.as_str());
        }
    }
}
