//! What a request asks for: the URL parsed into a [`Route`] (a resource's
//! kind, namespace, name and subresource, or a non-resource path), the verb,
//! and the query parameters every verb reads.
//!
//! Mirrors k8s.io/apiserver `pkg/endpoints/request/requestinfo.go`
//! (`RequestInfoFactory.NewRequestInfo`).

use std::collections::HashMap;

use axum::body::Body;
use axum::http::{Method, Request};

use infera_sim_core::kind::Kind;

/// The query parameters, last value wins.
pub(crate) type Query = HashMap<String, String>;

pub(crate) fn parse_query(req: &Request<Body>) -> Query {
    axum::extract::Query::<Vec<(String, String)>>::try_from_uri(req.uri())
        .map(|q| q.0.into_iter().collect())
        .unwrap_or_default()
}

pub(crate) fn truthy(q: &Query, key: &str) -> bool {
    q.get(key)
        .is_some_and(|v| matches!(v.as_str(), "1" | "true" | "True"))
}

/// `dryRun=All`: run every step but the write.
pub(crate) fn dry_run(query: &Query) -> bool {
    query.get("dryRun").is_some_and(|v| v == "All")
}

/// A parsed resource URL.
#[derive(Debug)]
pub(crate) struct ResourcePath {
    pub(crate) kind: Kind,
    pub(crate) namespace: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) subresource: Option<String>,
    /// For `proxy`: the path after `/proxy` (with its leading `/`).
    pub(crate) proxy_path: String,
}

pub(crate) enum Route {
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

pub(crate) fn route(path: &str) -> Route {
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

/// The verb and resource of a request, as the store's request counts key
/// them (`list pods`, `update deployments/scale`).
pub(crate) fn verb_key(method: &Method, rp: &ResourcePath, watch: bool) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
