//! HTTP to a pod: the minimal HTTP/1.1 GET the kubelet's prober sends to a
//! pod's listener (`infera_sim_world::listener`), and [`send`], the
//! streaming forwarder the API server's proxies and the simulated router
//! send any request with (hyper's client, one connection per request).
//!
//! Upstream each has its own client (k8s.io/kubernetes `pkg/probe/http` for
//! the prober; k8s.io/apimachinery `pkg/util/proxy` for the API server's
//! proxy); here they live below the API server and the world so neither
//! depends on the other for them.

use std::net::SocketAddr;
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response from [`http_get`].
#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

/// `GET path` on `addr` over HTTP/1.1, the whole exchange bounded by
/// `timeout` (an `ErrorKind::TimedOut` error past it).
pub async fn http_get(
    addr: SocketAddr,
    path: &str,
    timeout: Duration,
) -> std::io::Result<HttpResponse> {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await?;
        let path = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("/{path}")
        };
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: infera-sim-kubelet\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await?;
        let mut raw = Vec::new();
        stream.take(1 << 20).read_to_end(&mut raw).await?;
        parse_response(&raw)
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(r) => r,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("GET http://{addr}{path}: no answer within {timeout:?}"),
        )),
    }
}

/// Why [`send`] got no response head.
#[derive(Debug)]
pub enum SendError {
    /// The TCP connect failed (refused, unreachable, timed out): nothing
    /// was sent.
    Connect(std::io::Error),
    /// Connected, but the exchange failed before a response head arrived.
    Exchange(hyper::Error),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Connect(e) => write!(f, "{e}"),
            SendError::Exchange(e) => write!(f, "{e}"),
        }
    }
}

/// Send `req` (its URI a path) to `addr` over a fresh HTTP/1.1 connection,
/// the connect bounded by `connect_timeout`; the response's body streams as
/// it arrives, and ends with an error when the server drops mid-body.
pub async fn send<B>(
    addr: SocketAddr,
    mut req: http::Request<B>,
    connect_timeout: Duration,
) -> Result<http::Response<Incoming>, SendError>
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let timed_out = || std::io::Error::new(std::io::ErrorKind::TimedOut, "i/o timeout");
    let stream = tokio::time::timeout(connect_timeout, TcpStream::connect(addr))
        .await
        .map_err(|_| timed_out())
        .and_then(|r| r)
        .map_err(SendError::Connect)?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(SendError::Exchange)?;
    tokio::spawn(conn);
    if let Ok(host) = http::HeaderValue::from_str(&addr.to_string()) {
        req.headers_mut().insert(http::header::HOST, host);
    }
    sender.send_request(req).await.map_err(SendError::Exchange)
}

fn parse_response(raw: &[u8]) -> std::io::Result<HttpResponse> {
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "malformed HTTP response");
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(bad)?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)?;
    Ok(HttpResponse {
        status,
        body: raw[end + 4..].to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_parse_status_and_body_and_reject_garbage() {
        let ok = parse_response(b"HTTP/1.1 503 Service Unavailable\r\nA: b\r\n\r\nbusy")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((ok.status, ok.body.as_slice()), (503, b"busy".as_slice()));
        for raw in [&b"HTTP/1.1 200 OK\r\n"[..], b"HTTP/1.1 abc\r\n\r\n", b""] {
            assert!(parse_response(raw).is_err(), "{raw:?}");
        }
    }
}
