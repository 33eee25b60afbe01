//! Request routing and the verbs: get, list (with `limit`/`continue`),
//! watch, create, update, patch, delete, deletecollection, and the
//! `status`, `scale` and `proxy` subresources; discovery and OpenAPI v3.
//! Field selectors accept only the field labels upstream registers per kind;
//! create, update and patch run [`super::validation`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::Shared;
use super::discovery;
use super::managed::{self, Operation};
use super::openapi;
use super::patch::{self, PatchType};
use super::selectors::{FieldSelector, LabelSelector, Selectors};
use super::status::ApiStatus;
use super::tables::{self, IncludeObject};
use super::validation;
use crate::store::{EventType, Kind, StoreError, StoreEvent};

/// Largest request body accepted (upstream's limit is 3 MiB for objects).
const MAX_BODY: usize = 8 * 1024 * 1024;
/// Default watch duration when the client sets no `timeoutSeconds`
/// (upstream picks 30-60 min).
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);

pub(super) type Query = HashMap<String, String>;

pub(super) fn json_response(code: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

fn ok_json(v: &Value) -> Response<Body> {
    json_response(StatusCode::OK, serde_json::to_vec(v).unwrap_or_default())
}

fn created_json(v: &Value) -> Response<Body> {
    json_response(
        StatusCode::CREATED,
        serde_json::to_vec(v).unwrap_or_default(),
    )
}

fn parse_query(req: &Request<Body>) -> Query {
    axum::extract::Query::<Vec<(String, String)>>::try_from_uri(req.uri())
        .map(|q| q.0.into_iter().collect())
        .unwrap_or_default()
}

fn truthy(q: &Query, key: &str) -> bool {
    q.get(key)
        .is_some_and(|v| matches!(v.as_str(), "1" | "true" | "True"))
}

fn authorized(shared: &Shared, headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let Some(token) = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
    else {
        return false;
    };
    tokens_equal(token.trim(), &shared.token)
}

/// Compare a presented bearer token with the expected one in constant time:
/// both are hashed to equal-length SHA-256 digests first (so neither the
/// length nor a matching prefix shows in the timing), then compared with
/// `subtle`'s constant-time equality (no early exit, no data-dependent branch).
fn tokens_equal(presented: &str, expected: &str) -> bool {
    use ring::digest::{SHA256, digest};
    use subtle::ConstantTimeEq;
    let a = digest(&SHA256, presented.as_bytes());
    let b = digest(&SHA256, expected.as_bytes());
    a.as_ref().ct_eq(b.as_ref()).into()
}

/// A parsed resource URL.
#[derive(Debug)]
struct ResourcePath {
    kind: Kind,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
    /// For `proxy`: the path after `/proxy` (with its leading `/`).
    proxy_path: String,
}

enum Route {
    Health,
    Version,
    CoreVersions,
    GroupList,
    Group(String),
    ResourceList(String, String),
    OpenApiRoot,
    OpenApi(String),
    Resource(ResourcePath),
    NotFound,
}

fn route(path: &str) -> Route {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    match segments.as_slice() {
        ["healthz" | "livez" | "readyz", ..] => Route::Health,
        ["version"] => Route::Version,
        ["openapi", "v3"] => Route::OpenApiRoot,
        ["openapi", "v3", rest @ ..] => Route::OpenApi(rest.join("/")),
        ["api"] => Route::CoreVersions,
        ["api", "v1"] => Route::ResourceList(String::new(), "v1".into()),
        ["apis"] => Route::GroupList,
        ["apis", group] => Route::Group((*group).to_string()),
        ["apis", group, version] => {
            Route::ResourceList((*group).to_string(), (*version).to_string())
        }
        ["api", "v1", rest @ ..] => resource_route("", "v1", rest, path),
        ["apis", group, version, rest @ ..] => resource_route(group, version, rest, path),
        _ => Route::NotFound,
    }
}

fn resource_route(group: &str, version: &str, rest: &[&str], full: &str) -> Route {
    let (namespace, rest) = match rest {
        ["namespaces", ns, next, tail @ ..] if !matches!(*next, "status" | "finalize") => (
            Some((*ns).to_string()),
            std::iter::once(*next)
                .chain(tail.iter().copied())
                .collect::<Vec<_>>(),
        ),
        _ => (None, rest.to_vec()),
    };
    let Some(plural) = rest.first() else {
        return Route::NotFound;
    };
    let Some(kind) = Kind::from_plural(group, version, plural) else {
        return Route::NotFound;
    };
    if namespace.is_some() && !kind.namespaced() {
        return Route::NotFound;
    }
    let name = rest.get(1).map(|s| (*s).to_string());
    let subresource = rest.get(2).map(|s| (*s).to_string());
    let proxy_path = match (&name, subresource.as_deref()) {
        (Some(name), Some("proxy")) => {
            let marker = format!("{name}/proxy");
            full.find(&marker)
                .map(|i| full[i + marker.len()..].to_string())
                .unwrap_or_default()
        }
        _ => String::new(),
    };
    if subresource.as_deref() != Some("proxy") && rest.len() > 3 {
        return Route::NotFound;
    }
    Route::Resource(ResourcePath {
        kind,
        namespace,
        name,
        subresource,
        proxy_path,
    })
}

/// Serve one request.
/// Header the embedded world's own client (kubelet, operator, nodes) sends.
/// Injected error bursts and conflicts target the clients under test, not
/// the world: its real-time retries (and `Retry-After`) would otherwise
/// stretch simulated time by the speed factor (1 s at 200x = 200 s), which
/// turns a flaky API into a slow kubelet. Restarts, dropped watches,
/// compaction and latency still hit everyone.
pub const WORLD_HEADER: &str = "x-infera-sim-world";

fn from_world(req: &Request<Body>) -> bool {
    req.headers().contains_key(WORLD_HEADER)
}

pub async fn handle(shared: Arc<Shared>, req: Request<Body>) -> Response<Body> {
    let path = req.uri().path().to_string();
    let route = route(&path);
    if matches!(route, Route::Health) {
        return Response::new(Body::from("ok"));
    }
    if !authorized(&shared, req.headers()) {
        return ApiStatus::unauthorized().into_response();
    }
    if let Some(latency) = shared.injector.latency() {
        tokio::time::sleep(latency).await;
    }
    if path == super::authz::PATH && req.method() == Method::POST {
        return super::authz::self_subject_access_review();
    }
    match route {
        Route::Health => Response::new(Body::from("ok")),
        Route::Version => ok_json(&discovery::version()),
        Route::CoreVersions => ok_json(&discovery::core_versions(&shared.server_address)),
        Route::GroupList => ok_json(&discovery::group_list()),
        Route::Group(g) => match discovery::group(&g) {
            Some(doc) => ok_json(&doc),
            None => ApiStatus::path_not_found().into_response(),
        },
        Route::ResourceList(g, v) => match discovery::resource_list(&g, &v) {
            Some(doc) => ok_json(&doc),
            None => ApiStatus::path_not_found().into_response(),
        },
        Route::OpenApiRoot => ok_json(&openapi::root()),
        Route::OpenApi(path) => match openapi::document(&path) {
            Some(doc) => ok_json(doc),
            None => ApiStatus::path_not_found().into_response(),
        },
        Route::NotFound => ApiStatus::path_not_found().into_response(),
        Route::Resource(rp) => {
            if let Some(err) = (!from_world(&req))
                .then(|| shared.injector.error())
                .flatten()
            {
                shared
                    .store
                    .record_request(&format!("injected {}", err.code));
                let reason = match err.code {
                    429 => "TooManyRequests",
                    503 => "ServiceUnavailable",
                    _ => "InternalError",
                };
                let message = match err.code {
                    429 => "the server has received too many requests and has asked us to try again later (injected fault)".to_string(),
                    503 => "the server is currently unable to handle the request (injected fault)".to_string(),
                    _ => "an error on the server (\"injected fault\") has prevented the request from succeeding".to_string(),
                };
                let mut status = ApiStatus::new(err.code, reason, message);
                status.retry_after = Some(err.retry_after_seconds);
                return status.into_response();
            }
            match resource(&shared, rp, req).await {
                Ok(resp) => resp,
                Err(status) => status.into_response(),
            }
        }
    }
}

fn verb_key(method: &Method, rp: &ResourcePath, watch: bool) -> String {
    let verb = match (method.as_str(), rp.name.is_some()) {
        ("GET", false) if watch => "watch",
        ("GET", false) => "list",
        ("GET", true) => "get",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", false) => "deletecollection",
        ("DELETE", true) => "delete",
        (other, _) => other,
    };
    match &rp.subresource {
        Some(sub) => format!("{verb} {}/{sub}", rp.kind.plural()),
        None => format!("{verb} {}", rp.kind.plural()),
    }
}

async fn read_body(body: Body) -> Result<Bytes, ApiStatus> {
    axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|e| ApiStatus::bad_request(format!("reading the request body failed: {e}")))
}

/// Read a body, turning a protobuf one (a current kubectl's typed clients)
/// into JSON; see `protobuf.rs`.
async fn read_json_body(body: Body, content_type: &str) -> Result<Bytes, ApiStatus> {
    let bytes = read_body(body).await?;
    if super::protobuf::is_protobuf(content_type) {
        return super::protobuf::to_json(&bytes).map(Bytes::from);
    }
    Ok(bytes)
}

fn parse_json(bytes: &[u8]) -> Result<Value, ApiStatus> {
    serde_json::from_slice(bytes).map_err(|e| {
        ApiStatus::bad_request(format!("the request body is not a valid JSON object: {e}"))
    })
}

async fn resource(
    shared: &Arc<Shared>,
    rp: ResourcePath,
    req: Request<Body>,
) -> Result<Response<Body>, ApiStatus> {
    let mut query = parse_query(&req);
    if !query.contains_key("fieldManager") {
        let ua = req
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok());
        query.insert(
            "fieldManager".into(),
            super::managed::manager_from_user_agent(ua),
        );
    }
    let method = req.method().clone();
    let watch = truthy(&query, "watch");
    shared.store.record_request(&verb_key(&method, &rp, watch));
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let table = tables::wants_table(&accept);
    let kind = rp.kind;

    if rp.subresource.as_deref() == Some("proxy") {
        return proxy(shared, &rp).await;
    }
    if let Some(sub) = rp.subresource.as_deref() {
        let allowed = match sub {
            "status" => kind.has_status(),
            "scale" => matches!(
                kind,
                Kind::Deployment | Kind::ReplicaSet | Kind::LeaderWorkerSet
            ),
            "eviction" => kind == Kind::Pod,
            _ => false,
        };
        if !allowed {
            return Err(ApiStatus::path_not_found());
        }
    }
    if matches!(method, Method::PUT | Method::PATCH)
        && !from_world(&req)
        && shared.injector.conflict()
    {
        let name = rp.name.clone().unwrap_or_default();
        return Err(ApiStatus::conflict(kind, &name));
    }

    match (method, rp.name.clone()) {
        (Method::POST, Some(name)) if rp.subresource.as_deref() == Some("eviction") => {
            let body = read_json_body(req.into_body(), &content_type).await?;
            super::eviction::evict(shared, rp.namespace.as_deref(), &name, &query, &body)
        }
        (Method::GET, None) if watch => watch_stream(shared, &rp, &query, table),
        (Method::GET, None) => list(shared, &rp, &query, table),
        (Method::GET, Some(name)) => {
            let stored = shared
                .store
                .get_stored(kind, rp.namespace.as_deref(), &name)
                .ok_or_else(|| ApiStatus::not_found(kind, &name))?;
            if rp.subresource.as_deref() == Some("scale") {
                return Ok(ok_json(&scale_of(kind, stored.value())));
            }
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
        (Method::POST, None) => {
            let body = read_json_body(req.into_body(), &content_type).await?;
            create(shared, &rp, &query, &body)
        }
        (Method::PUT, Some(name)) => {
            let body = read_json_body(req.into_body(), &content_type).await?;
            update(shared, &rp, &name, &query, &body)
        }
        (Method::PATCH, Some(name)) => {
            let body = read_body(req.into_body()).await?;
            patch_object(shared, &rp, &name, &content_type, &query, &body)
        }
        (Method::DELETE, Some(name)) => {
            let body = read_json_body(req.into_body(), &content_type).await?;
            delete(shared, &rp, &name, &query, &body)
        }
        (Method::DELETE, None) => {
            let body = read_json_body(req.into_body(), &content_type).await?;
            delete_collection(shared, &rp, &query, &body)
        }
        (m, _) => Err(ApiStatus::method_not_allowed(m.as_str(), kind.plural())),
    }
}

fn selectors(query: &Query, kind: Kind) -> Result<Selectors, ApiStatus> {
    let labels = match query.get("labelSelector") {
        Some(s) => LabelSelector::parse(s)
            .map_err(|e| ApiStatus::bad_request(format!("unable to parse requirement: {e}")))?,
        None => LabelSelector::default(),
    };
    let fields = match query.get("fieldSelector") {
        Some(s) => {
            let fields = FieldSelector::parse(s).map_err(ApiStatus::bad_request)?;
            fields
                .check_supported(kind)
                .map_err(ApiStatus::bad_request)?;
            fields
        }
        None => FieldSelector::default(),
    };
    Ok(Selectors { labels, fields })
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

fn list(
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

fn check_namespace(shared: &Shared, kind: Kind, ns: Option<&str>) -> Result<(), ApiStatus> {
    if !kind.namespaced() {
        return Ok(());
    }
    let ns = ns.unwrap_or("default");
    if shared.store.get_stored(Kind::Namespace, None, ns).is_none() {
        return Err(ApiStatus::not_found(Kind::Namespace, ns));
    }
    Ok(())
}

/// Check the body's `apiVersion`/`kind`/namespace against the URL and fill
/// them in where absent.
fn reconcile_identity(rp: &ResourcePath, obj: &mut Value) -> Result<(), ApiStatus> {
    let kind = rp.kind;
    let Some(map) = obj.as_object_mut() else {
        return Err(ApiStatus::bad_request(
            "the request body is not a JSON object",
        ));
    };
    if let Some(av) = map.get("apiVersion").and_then(Value::as_str)
        && av != kind.api_version()
    {
        return Err(ApiStatus::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({})",
            kind.api_version()
        )));
    }
    if let Some(k) = map.get("kind").and_then(Value::as_str)
        && k != kind.kind()
    {
        return Err(ApiStatus::bad_request(format!(
            "the kind in the data ({k}) does not match the expected kind ({})",
            kind.kind()
        )));
    }
    if kind.namespaced()
        && let Some(url_ns) = &rp.namespace
    {
        let meta = map
            .entry("metadata")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| ApiStatus::bad_request("metadata must be an object"))?;
        match meta.get("namespace").and_then(Value::as_str) {
            Some(ns) if !ns.is_empty() && ns != url_ns => {
                return Err(ApiStatus::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {
                meta.insert("namespace".into(), Value::from(url_ns.clone()));
            }
        }
    }
    Ok(())
}

/// `422 Invalid` when `obj` breaks a validation rule (`old`: the object it
/// replaces).
fn validate(kind: Kind, name: &str, obj: &Value, old: Option<&Value>) -> Result<(), ApiStatus> {
    match validation::message(&validation::errors(kind, obj, old)) {
        Some(why) => Err(ApiStatus::invalid(kind, name, &why)),
        None => Ok(()),
    }
}

/// The decoding step: a field of the wrong type is `400`; fields the kind
/// does not have (and `current` did not already have) are `400` under
/// `fieldValidation=Strict` and returned as warnings under `Warn`; `obj`
/// loses them.
fn decode(
    kind: Kind,
    obj: &mut Value,
    current: Option<&Value>,
    query: &Query,
    prefix: bool,
) -> Result<Vec<String>, ApiStatus> {
    let mode = validation::FieldValidation::parse(query.get("fieldValidation").map(String::as_str))
        .map_err(ApiStatus::bad_request)?;
    let mut unknown = validation::decode(kind, obj).map_err(ApiStatus::bad_request)?;
    if let Some(current) = current {
        let before = validation::decode(kind, current).unwrap_or_default();
        unknown.retain(|f| !before.contains(f));
    }
    if mode != validation::FieldValidation::Strict {
        validation::prune(kind, obj);
    }
    match mode {
        _ if unknown.is_empty() => Ok(Vec::new()),
        validation::FieldValidation::Ignore => Ok(Vec::new()),
        validation::FieldValidation::Warn => Ok(unknown
            .iter()
            .map(|f| format!("unknown field {f:?}"))
            .collect()),
        validation::FieldValidation::Strict => {
            let strict = validation::strict_message(&unknown);
            Err(ApiStatus::bad_request(if prefix {
                format!(
                    "{} in version {:?} cannot be handled as a {}: {strict}",
                    kind.kind(),
                    kind.version(),
                    kind.kind()
                )
            } else {
                strict
            }))
        }
    }
}

/// Add one `Warning: 299 - "..."` header per warning (kubectl prints them).
fn with_warnings(mut resp: Response<Body>, warnings: &[String]) -> Response<Body> {
    for w in warnings {
        let quoted = format!("299 - {}", serde_json::Value::from(w.as_str()));
        if let Ok(v) = HeaderValue::from_str(&quoted) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

fn dry_run(query: &Query) -> bool {
    query.get("dryRun").is_some_and(|v| v == "All")
}

fn create(
    shared: &Arc<Shared>,
    rp: &ResourcePath,
    query: &Query,
    body: &[u8],
) -> Result<Response<Body>, ApiStatus> {
    let kind = rp.kind;
    let mut obj = parse_json(body)?;
    reconcile_identity(rp, &mut obj)?;
    let warnings = decode(kind, &mut obj, None, query, true)?;
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    check_namespace(
        shared,
        kind,
        obj.pointer("/metadata/namespace").and_then(Value::as_str),
    )?;
    // The status is the controllers' to write; a create starts it afresh.
    if let Some(map) = obj.as_object_mut()
        && kind.has_status()
    {
        match kind {
            Kind::Pod => {
                map.insert(
                    "status".into(),
                    json!({"phase": "Pending", "qosClass": qos_class(map.get("spec"))}),
                );
            }
            Kind::Namespace => {
                map.remove("status");
            }
            _ => {
                map.insert("status".into(), json!({}));
            }
        }
    }
    validate(kind, &name, &obj, None)?;
    if dry_run(query) {
        let mut preview = obj;
        crate::defaults::apply(kind, &mut preview);
        return Ok(with_warnings(created_json(&preview), &warnings));
    }
    managed::record(None, &mut obj, write(query, rp, Operation::Update, None));
    match shared.store.create(kind, obj) {
        Ok(created) => Ok(with_warnings(created_json(&created), &warnings)),
        Err(e) => Err(ApiStatus::from_store(&e, kind, &name)),
    }
}

/// The pod's QoS class, as upstream derives it from requests and limits.
fn qos_class(spec: Option<&Value>) -> &'static str {
    let containers = spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in &containers {
        let requests = c.pointer("/resources/requests").and_then(Value::as_object);
        let limits = c.pointer("/resources/limits").and_then(Value::as_object);
        if requests.is_some_and(|r| !r.is_empty()) || limits.is_some_and(|l| !l.is_empty()) {
            any = true;
        }
        let cpu_mem_limited =
            limits.is_some_and(|l| l.contains_key("cpu") && l.contains_key("memory"));
        let requests_match = requests.is_none_or(|r| {
            r.iter()
                .all(|(k, v)| limits.and_then(|l| l.get(k)).is_none_or(|lv| lv == v))
        });
        guaranteed &= cpu_mem_limited && requests_match;
    }
    if guaranteed {
        "Guaranteed"
    } else if any {
        "Burstable"
    } else {
        "BestEffort"
    }
}

fn update(
    shared: &Arc<Shared>,
    rp: &ResourcePath,
    name: &str,
    query: &Query,
    body: &[u8],
) -> Result<Response<Body>, ApiStatus> {
    let kind = rp.kind;
    let mut obj = parse_json(body)?;
    if rp.subresource.as_deref() == Some("scale") {
        let replicas = obj.pointer("/spec/replicas").and_then(Value::as_i64);
        let rv = obj
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
        return write_scale(shared, rp, name, replicas, rv, dry_run(query));
    }
    reconcile_identity(rp, &mut obj)?;
    match obj.pointer("/metadata/name").and_then(Value::as_str) {
        Some(n) if n != name => {
            return Err(ApiStatus::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        Some(_) => {}
        None => {
            if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("name".into(), Value::from(name));
            } else if let Some(map) = obj.as_object_mut() {
                map.insert("metadata".into(), json!({"name": name}));
            }
        }
    }
    if !kind.namespaced()
        && let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.remove("namespace");
    }
    let current = shared.store.get(kind, rp.namespace.as_deref(), name);
    let warnings = decode(kind, &mut obj, current.as_ref(), query, true)?;
    if rp.subresource.is_none() {
        validate(kind, name, &obj, current.as_ref())?;
    }
    if dry_run(query) {
        return Ok(with_warnings(ok_json(&obj), &warnings));
    }
    if let Some(current) = &current {
        keep_managed_fields(current, &mut obj);
        managed::record(
            Some(current),
            &mut obj,
            write(query, rp, Operation::Update, None),
        );
    }
    let result = if rp.subresource.as_deref() == Some("status") {
        shared.store.update_status(kind, obj)
    } else {
        shared.store.update(kind, obj)
    };
    result
        .map(|v| with_warnings(ok_json(&v), &warnings))
        .map_err(|e| ApiStatus::from_store(&e, kind, name))
}

/// A PUT without `metadata.managedFields` keeps the stored ones (upstream:
/// a request that omits them does not reset them).
fn keep_managed_fields(current: &Value, obj: &mut Value) {
    let missing = obj.pointer("/metadata/managedFields").is_none();
    if let (true, Some(mf), Some(meta)) = (
        missing,
        current.pointer("/metadata/managedFields"),
        obj.get_mut("metadata").and_then(Value::as_object_mut),
    ) {
        meta.insert("managedFields".into(), mf.clone());
    }
}

/// The managedFields entry of this request (its manager is always set:
/// see [`resource`]).
fn write<'a>(
    query: &'a Query,
    rp: &'a ResourcePath,
    operation: Operation,
    applied: Option<&'a Value>,
) -> managed::Write<'a> {
    managed::Write {
        manager: query
            .get("fieldManager")
            .map(String::as_str)
            .unwrap_or("unknown"),
        operation,
        subresource: rp.subresource.as_deref(),
        applied,
    }
}

fn scale_of(kind: Kind, obj: &Value) -> Value {
    let meta = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let selector = match obj
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
    {
        Some(labels) => labels
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(","),
        None => String::new(),
    };
    let _ = kind;
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
            "creationTimestamp": meta.get("creationTimestamp"),
        },
        "spec": {"replicas": obj.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(0)},
        "status": {
            "replicas": obj.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
            "selector": selector,
        }
    })
}

fn write_scale(
    shared: &Arc<Shared>,
    rp: &ResourcePath,
    name: &str,
    replicas: Option<i64>,
    expected_rv: Option<String>,
    dry_run: bool,
) -> Result<Response<Body>, ApiStatus> {
    let kind = rp.kind;
    let ns = rp.namespace.as_deref();
    let Some(replicas) = replicas.filter(|r| *r >= 0) else {
        return Err(ApiStatus::invalid(
            kind,
            name,
            "spec.replicas: Invalid value: must be greater than or equal to 0",
        ));
    };
    let current = shared
        .store
        .get(kind, ns, name)
        .ok_or_else(|| ApiStatus::not_found(kind, name))?;
    if let Some(rv) = expected_rv.filter(|rv| !rv.is_empty())
        && current
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            != Some(rv.as_str())
    {
        return Err(ApiStatus::conflict(kind, name));
    }
    if dry_run {
        let mut preview = current;
        preview["spec"]["replicas"] = json!(replicas);
        return Ok(ok_json(&scale_of(kind, &preview)));
    }
    let updated = shared
        .store
        .mutate(kind, ns, name, |obj| {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("replicas".into(), json!(replicas));
            }
        })
        .map_err(|e| ApiStatus::from_store(&e, kind, name))?;
    Ok(ok_json(&scale_of(kind, &updated)))
}

fn patch_object(
    shared: &Arc<Shared>,
    rp: &ResourcePath,
    name: &str,
    content_type: &str,
    query: &Query,
    body: &[u8],
) -> Result<Response<Body>, ApiStatus> {
    let kind = rp.kind;
    let ns = rp.namespace.as_deref();
    let patch_type = PatchType::from_content_type(content_type)
        .ok_or_else(|| ApiStatus::unsupported_media_type(content_type))?;
    if patch_type == PatchType::Strategic
        && matches!(kind, Kind::InferaDeployment | Kind::LeaderWorkerSet)
    {
        return Err(ApiStatus::new(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        ));
    }
    let dry = dry_run(query);
    // Like upstream, a patch is retried internally against the latest version
    // unless the patch itself carries a resourceVersion precondition.
    for _ in 0..8 {
        let current = match shared.store.get(kind, ns, name) {
            Some(c) => c,
            None if patch_type == PatchType::Apply => {
                let mut obj: Value = std::str::from_utf8(body)
                    .ok()
                    .and_then(|t| serde_saphyr::from_str(t).ok())
                    .ok_or_else(|| {
                        ApiStatus::bad_request("the apply patch is not valid YAML or JSON")
                    })?;
                reconcile_identity(rp, &mut obj)?;
                check_namespace(shared, kind, ns)?;
                let warnings = decode(kind, &mut obj, None, query, false)?;
                validate(kind, name, &obj, None)?;
                if dry {
                    return Ok(with_warnings(created_json(&obj), &warnings));
                }
                let applied = obj.clone();
                let how = write(query, rp, Operation::Apply, Some(&applied));
                managed::record(None, &mut obj, how);
                return shared
                    .store
                    .create(kind, obj)
                    .map(|v| with_warnings(created_json(&v), &warnings))
                    .map_err(|e| ApiStatus::from_store(&e, kind, name));
            }
            None => return Err(ApiStatus::not_found(kind, name)),
        };
        let current_rv = current
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if rp.subresource.as_deref() == Some("scale") {
            let mut scale = scale_of(kind, &current);
            patch::apply(&mut scale, patch_type, body)
                .map_err(|e| ApiStatus::bad_request(e.to_string()))?;
            let rv = scale
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_string);
            return write_scale(
                shared,
                rp,
                name,
                scale.pointer("/spec/replicas").and_then(Value::as_i64),
                rv,
                dry,
            );
        }
        let mut patched = current.clone();
        patch::apply(&mut patched, patch_type, body).map_err(|e| match e {
            patch::PatchError::Decode(m) => ApiStatus::bad_request(m),
            patch::PatchError::Apply(m) => ApiStatus::invalid(kind, name, &m),
        })?;
        if !patched.is_object() {
            return Err(ApiStatus::bad_request(
                "the patched object is not a JSON object",
            ));
        }
        let precondition = patched
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .filter(|rv| *rv != current_rv)
            .map(str::to_string);
        if precondition.is_some() {
            return Err(ApiStatus::conflict(kind, name));
        }
        if patched.pointer("/metadata/name").and_then(Value::as_str) != Some(name) {
            return Err(ApiStatus::bad_request(
                "the patch may not change metadata.name",
            ));
        }
        if let Some(meta) = patched.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::from(current_rv.clone()));
        }
        let warnings = decode(kind, &mut patched, Some(&current), query, false)?;
        if rp.subresource.is_none() {
            validate(kind, name, &patched, Some(&current))?;
        }
        if dry {
            return Ok(with_warnings(ok_json(&patched), &warnings));
        }
        let applied = (patch_type == PatchType::Apply)
            .then(|| std::str::from_utf8(body).ok())
            .flatten()
            .and_then(|t| serde_saphyr::from_str::<Value>(t).ok());
        let how = match &applied {
            Some(a) => write(query, rp, Operation::Apply, Some(a)),
            None => write(query, rp, Operation::Update, None),
        };
        managed::record(Some(&current), &mut patched, how);
        let result = if rp.subresource.as_deref() == Some("status") {
            shared.store.update_status(kind, patched)
        } else {
            shared.store.update(kind, patched)
        };
        match result {
            Ok(v) => return Ok(with_warnings(ok_json(&v), &warnings)),
            Err(StoreError::Conflict) => continue,
            Err(e) => return Err(ApiStatus::from_store(&e, kind, name)),
        }
    }
    Err(ApiStatus::conflict(kind, name))
}

#[derive(Debug, Default)]
pub(super) struct DeleteOptions {
    grace_period: Option<i64>,
    propagation: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    dry_run: bool,
}

pub(super) fn delete_options(query: &Query, body: &[u8]) -> Result<DeleteOptions, ApiStatus> {
    let mut opts = DeleteOptions::default();
    if !body.iter().all(u8::is_ascii_whitespace) {
        let v = parse_json(body)?;
        opts.grace_period = v.get("gracePeriodSeconds").and_then(Value::as_i64);
        opts.propagation = v
            .get("propagationPolicy")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.uid = v
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.resource_version = v
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.dry_run = v
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|d| d.iter().any(|x| x == "All"));
        if v.get("orphanDependents").and_then(Value::as_bool) == Some(true) {
            opts.propagation = Some("Orphan".into());
        }
    }
    if let Some(g) = query.get("gracePeriodSeconds") {
        opts.grace_period = Some(g.parse().map_err(|_| {
            ApiStatus::bad_request(format!("gracePeriodSeconds: invalid value {g:?}"))
        })?);
    }
    if let Some(p) = query.get("propagationPolicy") {
        opts.propagation = Some(p.clone());
    }
    opts.dry_run |= dry_run(query);
    if let Some(p) = &opts.propagation
        && !matches!(p.as_str(), "Orphan" | "Background" | "Foreground")
    {
        return Err(ApiStatus::bad_request(format!(
            "propagationPolicy: Unsupported value: {p:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
        )));
    }
    Ok(opts)
}

fn delete(
    shared: &Arc<Shared>,
    rp: &ResourcePath,
    name: &str,
    query: &Query,
    body: &[u8],
) -> Result<Response<Body>, ApiStatus> {
    let kind = rp.kind;
    if rp.subresource.is_some() {
        return Err(ApiStatus::method_not_allowed(
            "DELETE",
            &format!(
                "{}/{}",
                kind.plural(),
                rp.subresource.as_deref().unwrap_or_default()
            ),
        ));
    }
    let opts = delete_options(query, body)?;
    delete_one(shared, kind, rp.namespace.as_deref(), name, &opts).map(|v| ok_json(&v))
}

pub(super) fn delete_one(
    shared: &Shared,
    kind: Kind,
    ns: Option<&str>,
    name: &str,
    opts: &DeleteOptions,
) -> Result<Value, ApiStatus> {
    let current = shared
        .store
        .get(kind, ns, name)
        .ok_or_else(|| ApiStatus::not_found(kind, name))?;
    let uid = current
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let Some(want) = &opts.uid
        && *want != uid
    {
        return Err(ApiStatus::conflict(kind, name));
    }
    if let Some(want) = &opts.resource_version
        && current
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            != Some(want.as_str())
    {
        return Err(ApiStatus::conflict(kind, name));
    }
    if opts.dry_run {
        return Ok(current);
    }
    if opts.propagation.as_deref() == Some("Orphan") {
        orphan_dependents(shared, &uid);
    }
    let deleted = shared
        .store
        .delete(kind, ns, name, opts.grace_period)
        .map_err(|e| ApiStatus::from_store(&e, kind, name))?;
    if kind == Kind::Pod || shared.store.get_stored(kind, ns, name).is_some() {
        return Ok(deleted);
    }
    let mut details = json!({"name": name, "kind": kind.plural(), "uid": uid});
    if !kind.group().is_empty() {
        details["group"] = json!(kind.group());
    }
    Ok(
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}),
    )
}

/// `propagationPolicy: Orphan`: dependents lose their owner reference
/// instead of being garbage-collected.
fn orphan_dependents(shared: &Shared, owner_uid: &str) {
    for kind in [
        Kind::ReplicaSet,
        Kind::Pod,
        Kind::Deployment,
        Kind::LeaderWorkerSet,
    ] {
        let (items, _) = shared.store.list_stored(kind, None);
        for o in items {
            let owned = o
                .value()
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|refs| {
                    refs.iter()
                        .any(|r| r.get("uid").and_then(Value::as_str) == Some(owner_uid))
                });
            if !owned {
                continue;
            }
            let ns = o
                .value()
                .pointer("/metadata/namespace")
                .and_then(Value::as_str);
            let name = o
                .value()
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let _ = shared.store.mutate(kind, ns, name, |obj| {
                if let Some(refs) = obj
                    .pointer_mut("/metadata/ownerReferences")
                    .and_then(Value::as_array_mut)
                {
                    refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(owner_uid));
                }
            });
        }
    }
}

fn delete_collection(
    shared: &Arc<Shared>,
    rp: &ResourcePath,
    query: &Query,
    body: &[u8],
) -> Result<Response<Body>, ApiStatus> {
    let kind = rp.kind;
    let sel = selectors(query, rp.kind)?;
    let opts = delete_options(query, body)?;
    let (items, rv) = shared.store.list_stored(kind, rp.namespace.as_deref());
    let mut deleted = Vec::new();
    for o in items.into_iter().filter(|o| sel.matches(o.value())) {
        let ns = o
            .value()
            .pointer("/metadata/namespace")
            .and_then(Value::as_str);
        let name = o
            .value()
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Ok(v) = delete_one(shared, kind, ns, name, &opts) {
            if v.get("kind").and_then(Value::as_str) == Some("Status") {
                deleted.push(o.value().clone());
            } else {
                deleted.push(v);
            }
        }
    }
    Ok(ok_json(&json!({
        "kind": format!("{}List", kind.kind()),
        "apiVersion": kind.api_version(),
        "metadata": {"resourceVersion": rv.to_string()},
        "items": deleted,
    })))
}

async fn proxy(shared: &Arc<Shared>, rp: &ResourcePath) -> Result<Response<Body>, ApiStatus> {
    if rp.kind != Kind::Pod {
        return Err(ApiStatus::path_not_found());
    }
    let target = rp.name.clone().unwrap_or_default();
    let parts: Vec<&str> = target.split(':').collect();
    let (name, port) = match parts.as_slice() {
        [name] => (*name, None),
        [name, port] => (*name, Some(*port)),
        [_scheme, name, port] => (*name, Some(*port)),
        _ => {
            return Err(ApiStatus::bad_request(format!(
                "invalid proxy target {target:?}"
            )));
        }
    };
    let ns = rp.namespace.as_deref().unwrap_or("default");
    let pod = shared
        .store
        .get_stored(Kind::Pod, Some(ns), name)
        .ok_or_else(|| ApiStatus::not_found(Kind::Pod, name))?;
    let port: u16 = match port.filter(|p| !p.is_empty()) {
        None => 80,
        Some(p) => match p.parse() {
            Ok(n) => n,
            // A named port: resolve it from the pod's container ports.
            Err(_) => pod
                .value()
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("ports").and_then(Value::as_array))
                .flatten()
                .find(|port| port.get("name").and_then(Value::as_str) == Some(p))
                .and_then(|port| port.get("containerPort").and_then(Value::as_u64))
                .and_then(|n| u16::try_from(n).ok())
                .ok_or_else(|| {
                    ApiStatus::bad_request(format!("pod {name} has no port named {p:?}"))
                })?,
        },
    };
    let ip = pod
        .value()
        .pointer("/status/podIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    drop(pod);
    let unreachable = |detail: String| {
        ApiStatus::new(
            503,
            "ServiceUnavailable",
            format!("error trying to reach service: {detail}"),
        )
    };
    // Upstream (k8s.io/kubernetes@v1.37.2 pkg/registry/core/pod/strategy.go,
    // `ResourceLocation`) refuses a pod without a global unicast IP with
    // `400 address not allowed` before dialling. The embedded world's pod
    // IPs are loopback (127.77.0.0/16), which upstream would refuse too: the
    // sim allows them (the lab's pod CIDR is 10.244.0.0/16, which passes).
    let Ok(addr) = ip.parse::<std::net::Ipv4Addr>() else {
        return Err(ApiStatus::bad_request("address not allowed".to_string()));
    };
    // Forwarded to the pod's real listener, as the API server's proxy does;
    // dial errors are upstream's `503 error trying to reach service: …`
    // (k8s.io/apimachinery@v0.37.2 pkg/util/proxy/transport.go).
    let target = std::net::SocketAddr::from((addr, port));
    let path = if rp.proxy_path.is_empty() {
        "/"
    } else {
        rp.proxy_path.as_str()
    };
    match crate::net::http_get(target, path, PROXY_TIMEOUT).await {
        Ok(answer) => {
            let mut resp = Response::new(Body::from(answer.body));
            *resp.status_mut() =
                StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_GATEWAY);
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            Ok(resp)
        }
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Err(unreachable(format!(
            "dial tcp {target}: connect: connection refused"
        ))),
        Err(e) => Err(unreachable(format!("dial tcp {target}: {e}"))),
    }
}

/// How long the pod proxy waits for a pod's answer.
const PROXY_TIMEOUT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------
// watch
// ---------------------------------------------------------------------------

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

fn watch_stream(
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
    start: crate::store::WatchStart,
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
    for e in &start.events {
        if let Some((t, obj)) = visible_event(&req.selectors, e) {
            let line = render(t, e, &obj);
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
    let mut receiver = start.receiver;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_by_content_and_length() {
        assert!(tokens_equal("abc-123", "abc-123"));
        assert!(!tokens_equal("abc-124", "abc-123"));
        assert!(!tokens_equal("abc-123x", "abc-123"));
        assert!(!tokens_equal("", "abc-123"));
    }

    #[test]
    fn routes_resource_paths() {
        let Route::Resource(rp) = route("/api/v1/namespaces/ns1/pods/p1/status") else {
            panic!("not a resource route");
        };
        assert_eq!(rp.kind, Kind::Pod);
        assert_eq!(rp.namespace.as_deref(), Some("ns1"));
        assert_eq!(rp.name.as_deref(), Some("p1"));
        assert_eq!(rp.subresource.as_deref(), Some("status"));
        let Route::Resource(rp) = route("/api/v1/namespaces/ns1") else {
            panic!("namespace get");
        };
        assert_eq!(rp.kind, Kind::Namespace);
        assert_eq!(rp.name.as_deref(), Some("ns1"));
        let Route::Resource(rp) = route("/api/v1/namespaces/ns1/pods/w-0:30090/proxy/ready") else {
            panic!("proxy");
        };
        assert_eq!(rp.proxy_path, "/ready");
        let Route::Resource(rp) = route("/apis/apps/v1/deployments") else {
            panic!("all-namespaces list");
        };
        assert!(rp.namespace.is_none() && rp.name.is_none());
        assert!(matches!(
            route("/apis/apps/v2/deployments"),
            Route::NotFound
        ));
        assert!(matches!(
            route("/api/v1/namespaces/x/nodes"),
            Route::NotFound
        ));
    }

    #[test]
    fn qos_classes() {
        assert_eq!(qos_class(Some(&json!({"containers": [{}]}))), "BestEffort");
        assert_eq!(
            qos_class(Some(
                &json!({"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]})
            )),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(Some(
                &json!({"containers": [{"resources": {"requests": {"cpu": "1"}}}]})
            )),
            "Burstable"
        );
    }
}
