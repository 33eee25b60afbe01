//! The `proxy` subresource of pods: `GET .../pods/NAME[:PORT]/proxy/PATH`
//! forwards a GET to `podIP:PORT/PATH` (the world's real listener on the
//! pod's IP) and relays the status and body; other methods are sent as GET.
//!
//! Mirrors k8s.io/kubernetes `pkg/registry/core/pod/rest/subresources.go`
//! (`ProxyREST`) and `ResourceLocation` in `pkg/registry/core/pod/strategy.go`;
//! dial errors are worded as k8s.io/apimachinery `pkg/util/proxy`'s.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode, header};
use serde_json::Value;

use super::Shared;
use super::request::ResourcePath;
use super::status::ApiStatus;
use infera_sim_core::kind::Kind;

/// How long the pod proxy waits for a pod's answer.
const PROXY_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) async fn proxy(shared: &Shared, rp: &ResourcePath) -> Result<Response<Body>, ApiStatus> {
    if rp.kind != Kind::Pod {
        return Err(ApiStatus::path_not_found());
    }
    let target = location(shared, rp)?;
    let path = if rp.proxy_path.is_empty() {
        "/"
    } else {
        rp.proxy_path.as_str()
    };
    let unreachable = |detail: String| {
        ApiStatus::new(
            503,
            "ServiceUnavailable",
            format!("error trying to reach service: {detail}"),
        )
    };
    // Forwarded to the pod's real listener, as the API server's proxy does;
    // dial errors are upstream's `503 error trying to reach service: …`
    // (k8s.io/apimachinery@v0.37.2 pkg/util/proxy/transport.go).
    match infera_sim_core::net::http_get(target, path, PROXY_TIMEOUT).await {
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

/// Where to send the request: the pod's IP and the port the URL names
/// (`NAME`, `NAME:PORT` or `SCHEME:NAME:PORT`; a port by number or by the
/// name of a container port; 80 when absent).
fn location(shared: &Shared, rp: &ResourcePath) -> Result<SocketAddr, ApiStatus> {
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
            Err(_) => named_port(pod.value(), p).ok_or_else(|| {
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
    // Upstream (k8s.io/kubernetes@v1.37.2 pkg/registry/core/pod/strategy.go,
    // `ResourceLocation`) refuses a pod without a global unicast IP with
    // `400 address not allowed` before dialling. The embedded world's pod
    // IPs are loopback (127.77.0.0/16), which upstream would refuse too: the
    // sim allows them (the lab's pod CIDR is 10.244.0.0/16, which passes).
    let Ok(addr) = ip.parse::<Ipv4Addr>() else {
        return Err(ApiStatus::bad_request("address not allowed".to_string()));
    };
    Ok(SocketAddr::from((addr, port)))
}

/// The number of the container port named `name`.
fn named_port(pod: &Value, name: &str) -> Option<u16> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("ports").and_then(Value::as_array))
        .flatten()
        .find(|port| port.get("name").and_then(Value::as_str) == Some(name))
        .and_then(|port| port.get("containerPort").and_then(Value::as_u64))
        .and_then(|n| u16::try_from(n).ok())
}
