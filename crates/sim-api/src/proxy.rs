//! The `proxy` subresource of pods and services:
//! `.../pods/NAME[:PORT]/proxy/PATH` forwards to `podIP:PORT/PATH` (the
//! world's real listener on the pod's IP), `.../services/NAME[:PORT]/proxy/PATH`
//! to one Ready, non-terminating pod the Service selects, on the target
//! port of the Service port `PORT` names (by name or number; the first
//! port when absent). Any method; the request's body and headers (but
//! `Authorization`, consumed by authentication, and hop-by-hop ones) are
//! forwarded with the query; the response's status, headers and body come
//! back as the backend sends them, chunk by chunk, so an event stream
//! arrives incrementally and a backend that drops mid-body ends the proxied
//! body with an error (the client sees the cut).
//!
//! Mirrors k8s.io/kubernetes `pkg/registry/core/pod/rest/subresources.go`
//! (`ProxyREST`), `ResourceLocation` in `pkg/registry/core/pod/strategy.go`
//! and `pkg/registry/core/service/storage/storage.go` (a Service without a
//! ready endpoint: `503 no endpoints available for service "NAME"`); dial
//! errors are worded as k8s.io/apimachinery `pkg/util/proxy`'s.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Request, Response, Uri, header};
use serde_json::Value;

use super::Shared;
use super::request::ResourcePath;
use super::status::ApiStatus;
use infera_sim_core::json::str_at;
use infera_sim_core::kind::Kind;
use infera_sim_core::net::{SendError, send};

/// How long the proxy waits for a connection to its backend.
const DIAL_TIMEOUT: Duration = Duration::from_secs(10);

/// Headers that belong to one hop, never forwarded (RFC 9110 §7.6.1).
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

pub(crate) async fn proxy(
    shared: &Shared,
    rp: &ResourcePath,
    req: Request<Body>,
) -> Result<Response<Body>, ApiStatus> {
    let target = match rp.kind {
        Kind::Pod => pod_location(shared, rp)?,
        Kind::Service => service_location(shared, rp)?,
        _ => return Err(ApiStatus::path_not_found()),
    };
    let path = if rp.proxy_path.is_empty() {
        "/"
    } else {
        rp.proxy_path.as_str()
    };
    let (parts, body) = req.into_parts();
    let uri = match parts.uri.query() {
        Some(q) => format!("{path}?{q}"),
        None => path.to_string(),
    };
    let uri: Uri = uri
        .parse()
        .map_err(|_| ApiStatus::bad_request(format!("invalid proxy path {path:?}")))?;
    let mut forwarded = Request::new(body);
    *forwarded.method_mut() = parts.method;
    *forwarded.uri_mut() = uri;
    *forwarded.headers_mut() = end_to_end(&parts.headers);
    forwarded.headers_mut().remove(header::AUTHORIZATION);
    let unreachable = |detail: String| {
        ApiStatus::new(
            503,
            "ServiceUnavailable",
            format!("error trying to reach service: {detail}"),
        )
    };
    // Dial errors are upstream's `503 error trying to reach service: …`
    // (k8s.io/apimachinery@v0.37.2 pkg/util/proxy/transport.go).
    match send(target, forwarded, DIAL_TIMEOUT).await {
        Ok(resp) => {
            let (mut parts, body) = resp.into_parts();
            parts.headers = end_to_end(&parts.headers);
            Ok(Response::from_parts(parts, Body::new(body)))
        }
        Err(SendError::Connect(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => Err(
            unreachable(format!("dial tcp {target}: connect: connection refused")),
        ),
        Err(e) => Err(unreachable(format!("dial tcp {target}: {e}"))),
    }
}

/// `headers` without the hop-by-hop ones (and those `Connection` names).
fn end_to_end(headers: &HeaderMap) -> HeaderMap {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().to_ascii_lowercase())
        .collect();
    let mut out = headers.clone();
    for name in HOP_BY_HOP
        .iter()
        .copied()
        .chain(named.iter().map(String::as_str))
    {
        out.remove(name);
    }
    out
}

/// The name and port of a proxy target: `NAME`, `NAME:PORT` or
/// `SCHEME:NAME:PORT`.
fn target_of(rp: &ResourcePath) -> Result<(String, Option<String>), ApiStatus> {
    let target = rp.name.clone().unwrap_or_default();
    let parts: Vec<&str> = target.split(':').collect();
    let port = |p: &str| (!p.is_empty()).then(|| p.to_string());
    match parts.as_slice() {
        [name] => Ok(((*name).to_string(), None)),
        [name, p] | [_, name, p] => Ok(((*name).to_string(), port(p))),
        _ => Err(ApiStatus::bad_request(format!(
            "invalid proxy target {target:?}"
        ))),
    }
}

/// Where a pod proxy request goes: the pod's IP and the port the URL names
/// (by number or by the name of a container port; 80 when absent).
fn pod_location(shared: &Shared, rp: &ResourcePath) -> Result<SocketAddr, ApiStatus> {
    let (name, port) = target_of(rp)?;
    let ns = rp.namespace.as_deref().unwrap_or("default");
    let pod = shared
        .store
        .get_stored(Kind::Pod, Some(ns), &name)
        .ok_or_else(|| ApiStatus::not_found(Kind::Pod, &name))?;
    let port: u16 = match port {
        None => 80,
        Some(p) => match p.parse() {
            Ok(n) => n,
            Err(_) => named_port(pod.value(), &p).ok_or_else(|| {
                ApiStatus::bad_request(format!("pod {name} has no port named {p:?}"))
            })?,
        },
    };
    let ip = str_at(pod.value(), "/status/podIP").to_string();
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

/// Where a service proxy request goes: one of the Ready, non-terminating
/// pods the Service selects (round-robin), on the target port.
fn service_location(shared: &Shared, rp: &ResourcePath) -> Result<SocketAddr, ApiStatus> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let (name, port) = target_of(rp)?;
    let ns = rp.namespace.as_deref().unwrap_or("default");
    let svc = shared
        .store
        .get_stored(Kind::Service, Some(ns), &name)
        .ok_or_else(|| ApiStatus::not_found(Kind::Service, &name))?
        .value()
        .clone();
    let no_endpoints = || {
        ApiStatus::new(
            503,
            "ServiceUnavailable",
            format!("no endpoints available for service {name:?}"),
        )
    };
    let ports = svc.pointer("/spec/ports").and_then(Value::as_array);
    let service_port = ports
        .into_iter()
        .flatten()
        .find(|p| {
            port.as_deref().is_none_or(|want| {
                str_at(p, "/name") == want
                    || p.get("port").map(Value::to_string).as_deref() == Some(want)
            })
        })
        .ok_or_else(no_endpoints)?;
    let selector = svc.pointer("/spec/selector").and_then(Value::as_object);
    let Some(selector) = selector.filter(|s| !s.is_empty()) else {
        return Err(no_endpoints());
    };
    let (pods, _) = shared.store.list(Kind::Pod, Some(ns));
    let endpoints: Vec<SocketAddr> = pods
        .iter()
        .filter(|p| {
            selector
                .iter()
                .all(|(k, v)| p.pointer("/metadata/labels").and_then(|l| l.get(k)) == Some(v))
        })
        .filter(|p| ready(p))
        .filter_map(|p| {
            let ip: Ipv4Addr = str_at(p, "/status/podIP").parse().ok()?;
            Some(SocketAddr::from((ip, target_port(service_port, p)?)))
        })
        .collect();
    if endpoints.is_empty() {
        return Err(no_endpoints());
    }
    let i = NEXT.fetch_add(1, Ordering::Relaxed) % endpoints.len();
    Ok(endpoints[i])
}

/// A ready endpoint: the pod's Ready condition is True and it is not
/// terminating (the endpoints controller's ready addresses).
fn ready(pod: &Value) -> bool {
    pod.pointer("/metadata/deletionTimestamp").is_none()
        && pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| str_at(c, "/type") == "Ready" && str_at(c, "/status") == "True")
}

/// The pod port a Service port targets: `targetPort` by number or by a
/// container port's name, else the Service port's number.
fn target_port(service_port: &Value, pod: &Value) -> Option<u16> {
    match service_port.get("targetPort") {
        Some(Value::String(name)) => named_port(pod, name),
        Some(v) => v.as_u64().and_then(|n| u16::try_from(n).ok()),
        None => service_port
            .get("port")
            .and_then(Value::as_u64)
            .and_then(|n| u16::try_from(n).ok()),
    }
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
