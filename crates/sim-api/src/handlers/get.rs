//! `get` and `list` (with `limit`/`continue` pages), as JSON or as a
//! `Table` for kubectl's printers.
//!
//! Mirrors k8s.io/apiserver `pkg/endpoints/handlers/get.go` (`GetResource`,
//! `ListResource`).

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Response, StatusCode};
use serde_json::{Value, json};

use super::selectors;
use crate::Shared;
use crate::request::{Query, ResourcePath};
use crate::responses::{json_response, ok_json};
use crate::status::ApiStatus;
use crate::tables::{self, IncludeObject};
use infera_sim_store::StoredObject;

/// The stored object the URL names, or `404`.
pub(crate) fn stored(
    shared: &Shared,
    rp: &ResourcePath,
    name: &str,
) -> Result<Arc<StoredObject>, ApiStatus> {
    shared
        .store
        .get_stored(rp.kind, rp.namespace.as_deref(), name)
        .ok_or_else(|| ApiStatus::not_found(rp.kind, name))
}

/// `GET` of one object.
pub(crate) fn get(
    shared: &Shared,
    rp: &ResourcePath,
    name: &str,
    query: &Query,
    table: bool,
) -> Result<Response<Body>, ApiStatus> {
    let kind = rp.kind;
    let stored = stored(shared, rp, name)?;
    if table {
        let include = IncludeObject::parse(query.get("includeObject").map(String::as_str));
        return Ok(ok_json(&tables::table(
            kind,
            [stored.value()],
            shared.store.resource_version(),
            include,
        )));
    }
    Ok(json_response(StatusCode::OK, stored.json().to_vec()))
}

/// `limit` and `continue` (upstream's chunked lists). The token carries the
/// first page's version and the last key served; a later page is read from
/// the current state after that key (upstream reads the first page's etcd
/// snapshot: a documented simplification) and reports the first page's
/// version, so a watch from it misses nothing. A token older than the watch
/// history (compacted) is `410 Expired`, as upstream.
fn page<T>(
    shared: &Shared,
    query: &Query,
    items: Vec<T>,
    rv: u64,
    key_of: impl Fn(&T) -> String,
) -> Result<(Vec<T>, u64, Option<String>, usize), ApiStatus> {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut rv = rv;
    let mut items = items;
    if let Some(token) = query.get("continue").filter(|t| !t.is_empty()) {
        let decoded: Value = b64
            .decode(token)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or_else(|| ApiStatus::bad_request("continue key is not valid: invalid token"))?;
        let start = decoded
            .get("start")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        rv = decoded.get("rv").and_then(Value::as_u64).unwrap_or(rv);
        if rv < shared.store.history_floor() {
            return Err(ApiStatus::gone(
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
            ));
        }
        items.retain(|o| key_of(o) > start);
    }
    let limit = query
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    let Some(limit) = limit.filter(|l| items.len() > *l) else {
        return Ok((items, rv, None, 0));
    };
    let rest = items.split_off(limit);
    let last = items.last().map(&key_of).unwrap_or_default();
    let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": last});
    let token = b64.encode(serde_json::to_vec(&token).unwrap_or_default());
    Ok((items, rv, Some(token), rest.len()))
}

pub(crate) fn list(
    shared: &Arc<Shared>,
    rp: &ResourcePath,
    query: &Query,
    table: bool,
) -> Result<Response<Body>, ApiStatus> {
    let kind = rp.kind;
    let sel = selectors(query, rp.kind)?;
    let (items, rv) = shared.store.list_stored(kind, rp.namespace.as_deref());
    let items: Vec<_> = if sel.is_empty() {
        items
    } else {
        items
            .into_iter()
            .filter(|o| sel.matches(o.value()))
            .collect()
    };
    let (items, rv, token, remaining) = page(shared, query, items, rv, |o| {
        let ns = o
            .value()
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = o
            .value()
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // NUL sorts before any name character: the store's (namespace, name) order.
        format!("{ns}\u{0}{name}")
    })?;
    let mut list_meta = json!({"resourceVersion": rv.to_string()});
    if let Some(token) = token {
        list_meta["continue"] = json!(token);
        list_meta["remainingItemCount"] = json!(remaining);
    }
    if table {
        let include = IncludeObject::parse(query.get("includeObject").map(String::as_str));
        let mut doc = tables::table(kind, items.iter().map(|o| o.value()), rv, include);
        doc["metadata"] = list_meta;
        return Ok(ok_json(&doc));
    }
    // Assemble the list from each object's cached encoding: no re-serialization.
    let head = format!(
        "{{\"kind\":\"{}List\",\"apiVersion\":\"{}\",\"metadata\":{list_meta},\"items\":[",
        kind.kind(),
        kind.api_version()
    );
    let size = head.len() + items.iter().map(|o| o.json().len() + 1).sum::<usize>() + 2;
    let mut body = Vec::with_capacity(size);
    body.extend_from_slice(head.as_bytes());
    for (i, o) in items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(o.json());
    }
    body.extend_from_slice(b"]}");
    Ok(json_response(StatusCode::OK, body))
}
