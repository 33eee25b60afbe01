//! `watch`: a chunked stream of `{"type", "object"}` lines from the store's
//! history and live events, filtered by namespace and selectors, with
//! bookmarks, `sendInitialEvents` and a timeout; a version older than the
//! history is one `ERROR` event carrying `410 Gone`.
//!
//! Mirrors k8s.io/apiserver `pkg/endpoints/handlers/watch.go`
//! (`serveWatch`) and the parts of the watch cache
//! (`pkg/storage/cacher`) a client can see.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, Response, header};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::selectors;
use crate::Shared;
use crate::request::{Query, ResourcePath, truthy};
use crate::selectors::Selectors;
use crate::status::ApiStatus;
use crate::tables::{self, IncludeObject};
use infera_sim_core::kind::Kind;
use infera_sim_store::{EventType, StoreEvent, WatchStart};

/// Default watch duration when the client sets no `timeoutSeconds`
/// (upstream picks 30-60 min).
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);

/// What a watch asked for, read once from its query.
struct WatchRequest {
    kind: Kind,
    namespace: Option<String>,
    selectors: Selectors,
    table: bool,
    include: IncludeObject,
    bookmarks: bool,
    initial_events_end: bool,
    timeout: Duration,
}

pub(crate) fn watch_stream(
    shared: &Arc<Shared>,
    rp: &ResourcePath,
    query: &Query,
    table: bool,
) -> Result<Response<Body>, ApiStatus> {
    let sel = selectors(query, rp.kind)?;
    let rv_param = query
        .get("resourceVersion")
        .map(String::as_str)
        .unwrap_or("");
    let send_initial = truthy(query, "sendInitialEvents");
    let rv: u64 = if rv_param.is_empty() || send_initial {
        0
    } else {
        rv_param.parse().map_err(|_| {
            ApiStatus::bad_request(format!("resourceVersion: invalid value {rv_param:?}"))
        })?
    };
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map_or(DEFAULT_WATCH_TIMEOUT, Duration::from_secs);
    let request = WatchRequest {
        kind: rp.kind,
        namespace: rp.namespace.clone(),
        selectors: sel,
        table,
        include: IncludeObject::parse(query.get("includeObject").map(String::as_str)),
        bookmarks: truthy(query, "allowWatchBookmarks"),
        initial_events_end: send_initial,
        timeout,
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::convert::Infallible>>(256);
    match shared
        .store
        .watch_start(rp.kind, rp.namespace.as_deref(), rv)
    {
        Ok(start) => {
            let shared = Arc::clone(shared);
            tokio::spawn(async move {
                run_watch(shared, request, start, tx).await;
            });
        }
        Err(_) => {
            // Upstream answers 200 and sends one ERROR event carrying 410.
            let floor = shared.store.history_floor();
            let status = ApiStatus::gone(format!("too old resource version: {rv} ({floor})"));
            let line = event_line("ERROR", &status.to_json());
            let _ = tx.try_send(Ok(line));
        }
    }
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let mut resp = Response::new(Body::from_stream(stream));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(resp)
}

fn event_line(event_type: &str, object: &Value) -> Bytes {
    let mut line = Vec::with_capacity(256);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(event_type.as_bytes());
    line.extend_from_slice(b"\",\"object\":");
    if serde_json::to_writer(&mut line, object).is_err() {
        line.extend_from_slice(b"{}");
    }
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

/// [`event_line`] for an object already encoded as JSON.
fn encoded_event_line(event_type: &str, json: &[u8]) -> Bytes {
    let mut line = Vec::with_capacity(json.len() + event_type.len() + 24);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(event_type.as_bytes());
    line.extend_from_slice(b"\",\"object\":");
    if json.is_empty() {
        line.extend_from_slice(b"{}");
    } else {
        line.extend_from_slice(json);
    }
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

/// What a selector watch sees of a change, as upstream's watch cache
/// (`cacheWatcher.convertToWatchEvent`) decides it from the object before
/// and after: entering the selection is ADDED, staying in it MODIFIED,
/// leaving it DELETED (carrying the last matching state at the change's
/// version), never in it nothing.
fn visible_event(sel: &Selectors, e: &StoreEvent) -> Option<(&'static str, Arc<Value>)> {
    if sel.is_empty() {
        return Some((e.event.wire(), Arc::clone(&e.object)));
    }
    let now = e.event != EventType::Deleted && sel.matches(&e.object);
    let prev: Option<Arc<Value>> = e
        .prev_json
        .as_ref()
        .and_then(|j| serde_json::from_slice(j).ok())
        .map(Arc::new);
    let before = match e.event {
        // A deletion's own object is its last state.
        EventType::Deleted => prev.as_ref().or(Some(&e.object)),
        _ => prev.as_ref(),
    };
    let was = before.is_some_and(|p| sel.matches(p));
    match (was, now) {
        (false, true) => Some(("ADDED", Arc::clone(&e.object))),
        (true, true) => Some(("MODIFIED", Arc::clone(&e.object))),
        (true, false) if e.event == EventType::Deleted => Some(("DELETED", Arc::clone(&e.object))),
        (true, false) => {
            let mut last = before.map(|p| (**p).clone()).unwrap_or_default();
            if let Some(meta) = last.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert(
                    "resourceVersion".into(),
                    Value::from(e.resource_version.to_string()),
                );
            }
            Some(("DELETED", Arc::new(last)))
        }
        (false, false) => None,
    }
}

/// A BOOKMARK event. Upstream's watch cache (k8s.io/apiserver@v0.37.2
/// pkg/storage/cacher/cacher.go, `startDispatchingBookmarkEventsLocked`,
/// `setInitialEventsEndBookmarkIfRequested`; cache_watcher.go
/// `nextBookmarkTime`) sends one to watchers that asked
/// (`allowWatchBookmarks`) about once a minute (`defaultBookmarkFrequency`;
/// the sim: `bookmark_interval`, 5 s) carrying only the kind, the apiVersion
/// and the resourceVersion, and one annotated `k8s.io/initial-events-end`
/// after the initial events of a `sendInitialEvents` watch.
fn bookmark(kind: Kind, rv: u64, initial_events_end: bool) -> Value {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_events_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    json!({"kind": kind.kind(), "apiVersion": kind.api_version(), "metadata": meta})
}

async fn run_watch(
    shared: Arc<Shared>,
    req: WatchRequest,
    start: WatchStart,
    tx: mpsc::Sender<Result<Bytes, std::convert::Infallible>>,
) {
    let mut drop_signal = shared.watch_epoch.subscribe();
    let mut last_rv = start.resource_version;
    // The event's own object goes out as the store encoded it; a state
    // rebuilt for a selector (leaving it) is encoded here; a Table is built
    // per event.
    let render = |event_type: &str, e: &StoreEvent, obj: &Arc<Value>| -> Bytes {
        if req.table {
            event_line(
                event_type,
                &tables::table(req.kind, [&**obj], e.resource_version, req.include),
            )
        } else if Arc::ptr_eq(obj, &e.object) {
            encoded_event_line(event_type, &e.json)
        } else {
            event_line(event_type, obj)
        }
    };
    let WatchStart {
        events, receiver, ..
    } = start;
    // One replayed event at a time: each is decoded when taken and dropped
    // once sent, so a long resume never holds the history decoded, nor the
    // watch its first events for its whole life.
    for e in events {
        if let Some((t, obj)) = visible_event(&req.selectors, &e) {
            let line = render(t, &e, &obj);
            if tx.send(Ok(line)).await.is_err() {
                return;
            }
        }
    }
    if req.initial_events_end && req.bookmarks {
        let line = event_line("BOOKMARK", &bookmark(req.kind, last_rv, true));
        if tx.send(Ok(line)).await.is_err() {
            return;
        }
    }
    let mut receiver = receiver;
    let deadline = tokio::time::sleep(req.timeout);
    tokio::pin!(deadline);
    let mut ticker = tokio::time::interval(shared.bookmark_interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        tokio::select! {
            received = receiver.recv() => match received {
                Ok(e) => {
                    last_rv = last_rv.max(e.resource_version);
                    if e.kind != req.kind {
                        continue;
                    }
                    if let Some(ns) = &req.namespace
                        && e.namespace() != Some(ns.as_str())
                    {
                        continue;
                    }
                    if let Some((t, obj)) = visible_event(&req.selectors, &e) {
                        let line = render(t, &e, &obj);
                        if tx.send(Ok(line)).await.is_err() {
                            return;
                        }
                    }
                }
                // Too slow to keep up, or the store is gone: end the stream;
                // the client resumes from its last version (or relists on 410).
                Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => return,
            },
            _ = ticker.tick(), if req.bookmarks => {
                let line = event_line("BOOKMARK", &bookmark(req.kind, last_rv, false));
                if tx.send(Ok(line)).await.is_err() {
                    return;
                }
            }
            _ = &mut deadline => return,
            _ = drop_signal.changed() => return,
            _ = tx.closed() => return,
        }
    }
}
