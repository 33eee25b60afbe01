//! Where the requests go: the API server's service proxy to a Service (by
//! default the router's, found from the InferaDeployment), or a base URL
//! (an ingress, a port-forward).

use serde_json::Value;

use infera_model::operator::{self, Component};

/// The serving path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/api/v1/namespaces/{namespace}/services/{service}:{port}/proxy/…`
    /// on the API server, with the connection's credentials.
    Proxy {
        namespace: String,
        service: String,
        /// A port number or name; `None`: the Service's first port.
        port: Option<String>,
    },
    /// `{base}/v1/…` directly.
    Url { base: String },
}

/// Why no route could be found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error(
        "{target} has no `componentType: server` service to send requests to; name the Service with --traffic-service NAME[:PORT] or the URL with --traffic-url"
    )]
    NoRouter { target: String },
    #[error(
        "--traffic needs the serving path of {target}: name the Service with --traffic-service NAME[:PORT] or the URL with --traffic-url"
    )]
    Unknown { target: String },
    #[error("--traffic-url {url:?} is not an http:// or https:// URL")]
    BadUrl { url: String },
    #[error("--traffic-service {service:?} is not NAME or NAME:PORT")]
    BadService { service: String },
}

impl Route {
    /// The path (or URL) of `api` (`/v1/models`) on this route.
    pub fn uri(&self, api: &str) -> String {
        match self {
            Route::Proxy { namespace, .. } => format!(
                "/api/v1/namespaces/{namespace}/services/{}/proxy{api}",
                self.proxy_target()
            ),
            Route::Url { base } => format!("{}{api}", base.trim_end_matches('/')),
        }
    }

    /// In a sentence: `service llm/llama-router:8000 through the API
    /// server's proxy`, `http://127.0.0.1:8000`.
    pub fn describe(&self) -> String {
        match self {
            Route::Proxy { namespace, .. } => format!(
                "service {namespace}/{} through the API server's proxy",
                self.proxy_target()
            ),
            Route::Url { base } => base.clone(),
        }
    }

    /// `NAME` or `NAME:PORT` of a proxy route, as the proxy path spells it
    /// (empty for a URL).
    fn proxy_target(&self) -> String {
        match self {
            Route::Proxy {
                service,
                port: Some(p),
                ..
            } => format!("{service}:{p}"),
            Route::Proxy { service, .. } => service.clone(),
            Route::Url { .. } => String::new(),
        }
    }

    /// `--traffic-url URL`.
    pub fn url(url: &str) -> Result<Route, RouteError> {
        let ok = (url.starts_with("http://") || url.starts_with("https://"))
            && url.parse::<http::Uri>().is_ok_and(|u| u.host().is_some());
        if !ok {
            return Err(RouteError::BadUrl { url: url.into() });
        }
        Ok(Route::Url { base: url.into() })
    }

    /// `--traffic-service NAME[:PORT]` in `namespace`.
    pub fn service(namespace: &str, spec: &str) -> Result<Route, RouteError> {
        let bad = || RouteError::BadService {
            service: spec.into(),
        };
        let (name, port) = match spec.split_once(':') {
            Some((n, p)) if !p.is_empty() && !p.contains(':') => (n, Some(p.to_string())),
            Some(_) => return Err(bad()),
            None => (spec, None),
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
        {
            return Err(bad());
        }
        Ok(Route::Proxy {
            namespace: namespace.into(),
            service: name.into(),
            port,
        })
    }

    /// The router's Service of an InferaDeployment (wire form): the one the
    /// operator creates for its `componentType: server` service,
    /// `<name>-<service>` on the service's port
    /// (`docs/operator-semantics.md`; `buildServerService`).
    pub fn router_of(idep: &Value) -> Result<Route, RouteError> {
        let name = idep
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let namespace = idep
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default")
            .to_string();
        let no_router = || RouteError::NoRouter {
            target: format!("idep/{name}"),
        };
        let typed = operator::typed(idep.clone()).map_err(|_| no_router())?;
        let (service, spec) = typed
            .spec
            .services
            .iter()
            .find(|(_, s)| Component::parse(s.component_type.as_deref()) == Component::Server)
            .ok_or_else(no_router)?;
        let port = operator::service_port(spec, Component::Server);
        Ok(Route::Proxy {
            namespace,
            service: format!("{name}-{service}"),
            port: Some(port.to_string()),
        })
    }
}

/// The router's Service of the InferaDeployment `name` in the connection's
/// namespace, read through the API ([`Route::router_of`]).
pub async fn of_inferadeployment(
    conn: &infera_cluster::Connection,
    name: &str,
) -> Result<Route, String> {
    of_inferadeployment_in(conn, &conn.namespace, name).await
}

/// [`of_inferadeployment`] in `namespace`.
pub async fn of_inferadeployment_in(
    conn: &infera_cluster::Connection,
    namespace: &str,
    name: &str,
) -> Result<Route, String> {
    use kube::api::{Api, DynamicObject};
    let resource = infera_cluster::api_resource(&infera_model::api::INFERA_DEPLOYMENT);
    let api: Api<DynamicObject> = Api::namespaced_with(conn.client.clone(), namespace, &resource);
    let idep = api.get(name).await.map_err(|e| {
        format!(
            "cannot read idep/{name} for --traffic: {}",
            infera_cluster::redact::kube_error(&e)
        )
    })?;
    let value = serde_json::to_value(&idep).map_err(|e| e.to_string())?;
    Route::router_of(&value).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn routes_are_spelled_as_the_api_server_proxies_them() {
        let proxy = Route::service("llm", "llama-router:8000").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            proxy.uri("/v1/models"),
            "/api/v1/namespaces/llm/services/llama-router:8000/proxy/v1/models"
        );
        assert_eq!(
            proxy.describe(),
            "service llm/llama-router:8000 through the API server's proxy"
        );
        let bare = Route::service("llm", "r").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            bare.uri("/v1/x"),
            "/api/v1/namespaces/llm/services/r/proxy/v1/x"
        );
        let url = Route::url("http://127.0.0.1:8000/").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            url.uri("/v1/completions"),
            "http://127.0.0.1:8000/v1/completions"
        );
    }

    #[test]
    fn bad_routes_are_refused_with_what_to_do() {
        for bad in ["", "a:b:c", "a:", "a/b"] {
            assert!(Route::service("ns", bad).is_err(), "{bad:?}");
        }
        for bad in ["127.0.0.1:8000", "ftp://x", "http://"] {
            let e = Route::url(bad)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                e.contains("is not an http:// or https:// URL"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn the_router_service_is_found_from_the_inferadeployment() {
        let idep = |services: Value| {
            json!({"apiVersion": "infera.amd.com/v1alpha1", "kind": "InferaDeployment",
                "metadata": {"name": "llama", "namespace": "llm"},
                "spec": {"backendFramework": "sglang", "services": services}})
        };
        let route = Route::router_of(&idep(json!({
            "router": {"componentType": "server", "replicas": 1},
            "decode": {"componentType": "worker", "role": "decode"}
        })))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            route,
            Route::Proxy {
                namespace: "llm".into(),
                service: "llama-router".into(),
                port: Some("8000".into())
            }
        );
        let none = Route::router_of(&idep(json!({"decode": {"componentType": "worker"}})));
        let msg = none.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            msg.starts_with("idep/llama has no `componentType: server` service"),
            "{msg}"
        );
    }
}
