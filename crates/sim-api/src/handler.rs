//! Serving one request: the filters ([`super::filters`]), then the route —
//! health, version, discovery, OpenAPI v3, the access review, or a
//! resource — and, for a resource, the verb and subresource that pick its
//! handler ([`super::handlers`], [`super::scale`], [`super::proxy`],
//! [`super::eviction`]).
//!
//! Mirrors k8s.io/apiserver `pkg/server/handler.go` (`APIServerHandler`,
//! the director between non-resource paths and the API) and
//! `pkg/endpoints/installer.go` (which handler serves which verb of which
//! resource and subresource).

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, Response, header};

use super::handlers::{create, delete, get, patch, read_body, read_json_body, update, watch};
use super::request::{Query, ResourcePath, Route, parse_query, route, truthy, verb_key};
use super::responses::ok_json;
use super::status::ApiStatus;
use super::{Shared, authz, discovery, eviction, filters, managed, openapi, proxy, scale, tables};

/// Serve one request.
pub(crate) async fn handle(shared: Arc<Shared>, req: Request<Body>) -> Response<Body> {
    let path = req.uri().path().to_string();
    let route = route(&path);
    if matches!(route, Route::Health) {
        return Response::new(Body::from("ok"));
    }
    if !filters::authenticated(&shared, req.headers()) {
        return ApiStatus::unauthorized().into_response();
    }
    if let Some(latency) = shared.injector.latency() {
        tokio::time::sleep(latency).await;
    }
    if path == authz::PATH && req.method() == Method::POST {
        return authz::self_subject_access_review();
    }
    let Route::Resource(rp) = route else {
        return non_resource(&shared, route);
    };
    if let Some(status) = filters::injected_error(&shared, &req) {
        return status.into_response();
    }
    match resource(&shared, rp, req).await {
        Ok(resp) => resp,
        Err(status) => status.into_response(),
    }
}

/// Health, version, discovery and OpenAPI documents.
fn non_resource(shared: &Shared, route: Route) -> Response<Body> {
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
        Route::NotFound | Route::Resource(_) => ApiStatus::path_not_found().into_response(),
    }
}

/// A resource request, as the verb handlers read it.
struct Call {
    rp: ResourcePath,
    query: Query,
    method: Method,
    content_type: String,
    /// `Accept` asks for a `Table`.
    table: bool,
    watch: bool,
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
        query.insert("fieldManager".into(), managed::manager_from_user_agent(ua));
    }
    let method = req.method().clone();
    let watch = truthy(&query, "watch");
    shared.store.record_request(&verb_key(&method, &rp, watch));
    let table = tables::wants_table(&header_str(&req, header::ACCEPT));
    let content_type = header_str(&req, header::CONTENT_TYPE);
    if rp.subresource.as_deref() == Some("proxy") {
        return proxy::proxy(shared, &rp, req).await;
    }
    check_subresource(&rp)?;
    if filters::injected_conflict(shared, &method, &req) {
        let name = rp.name.clone().unwrap_or_default();
        return Err(ApiStatus::conflict(rp.kind, &name));
    }
    let call = Call {
        rp,
        query,
        method,
        content_type,
        table,
        watch,
    };
    dispatch(shared, &call, req.into_body()).await
}

/// A header's value, `""` when absent or not text.
fn header_str(req: &Request<Body>, name: header::HeaderName) -> String {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

/// `404` for a subresource the kind does not serve.
fn check_subresource(rp: &ResourcePath) -> Result<(), ApiStatus> {
    let Some(sub) = rp.subresource.as_deref() else {
        return Ok(());
    };
    let allowed = match sub {
        "status" => rp.kind.has_status(),
        "scale" => scale::served(rp.kind),
        "eviction" => rp.kind == infera_sim_core::kind::Kind::Pod,
        _ => false,
    };
    if allowed {
        Ok(())
    } else {
        Err(ApiStatus::path_not_found())
    }
}

/// The handler for the verb (and subresource) of `call`.
async fn dispatch(
    shared: &Arc<Shared>,
    call: &Call,
    body: Body,
) -> Result<Response<Body>, ApiStatus> {
    let (rp, query, ct) = (&call.rp, &call.query, call.content_type.as_str());
    let sub = rp.subresource.as_deref();
    match (call.method.clone(), rp.name.as_deref()) {
        (Method::POST, Some(name)) if sub == Some("eviction") => {
            let body = read_json_body(body, ct).await?;
            eviction::evict(shared, rp.namespace.as_deref(), name, query, &body)
        }
        (Method::GET, None) if call.watch => watch::watch_stream(shared, rp, query, call.table),
        (Method::GET, None) => get::list(shared, rp, query, call.table),
        (Method::GET, Some(name)) if sub == Some("scale") => scale::get(shared, rp, name),
        (Method::GET, Some(name)) => get::get(shared, rp, name, query, call.table),
        (Method::POST, None) => {
            let body = read_json_body(body, ct).await?;
            create::create(shared, rp, query, &body)
        }
        (Method::PUT, Some(name)) if sub == Some("scale") => {
            let body = read_json_body(body, ct).await?;
            scale::update(shared, rp, name, query, &body)
        }
        (Method::PUT, Some(name)) => {
            let body = read_json_body(body, ct).await?;
            update::update(shared, rp, name, query, &body)
        }
        (Method::PATCH, Some(name)) => {
            let body = read_body(body).await?;
            patch::patch_object(shared, rp, name, ct, query, &body)
        }
        (Method::DELETE, Some(name)) => {
            let body = read_json_body(body, ct).await?;
            delete::delete(shared, rp, name, query, &body)
        }
        (Method::DELETE, None) => {
            let body = read_json_body(body, ct).await?;
            delete::delete_collection(shared, rp, query, &body)
        }
        (m, _) => Err(ApiStatus::method_not_allowed(m.as_str(), rp.kind.plural())),
    }
}
