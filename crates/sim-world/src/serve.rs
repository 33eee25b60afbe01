//! A real HTTP server on a pod's port (hyper, one task per connection)
//! that shuts down as an engine does on SIGTERM: the listening socket
//! closes at once (new connections are refused), idle keep-alive
//! connections close, requests in flight go on until they finish or the
//! drain time is up, and whatever is left is then cut (its connection
//! dropped mid-body).

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tower::ServiceExt;

/// A serving port: open until drained or dropped (dropping cuts every
/// connection at once, as SIGKILL does).
pub(crate) struct ServingPort {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Drop for ServingPort {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ServingPort {
    /// Listen on `addr` (address reuse on, as [`crate::listener::Listener`]),
    /// serving `app`.
    pub fn open(addr: SocketAddr, app: Router) -> std::io::Result<ServingPort> {
        let socket = TcpSocket::new_v4()?;
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        let listener = socket.listen(128)?;
        let (stop, stopped) = watch::channel(false);
        Ok(ServingPort {
            stop,
            task: tokio::spawn(serve(listener, app, stopped)),
        })
    }

    /// SIGTERM: refuse new connections now, let the requests in flight
    /// finish for at most `wall` (wall time), then cut the rest.
    pub async fn drain(mut self, wall: Duration) {
        self.stop.send_replace(true);
        let _ = tokio::time::timeout(wall, &mut self.task).await;
        // Dropped: aborted, cutting whatever is still in flight.
    }
}

async fn serve(listener: TcpListener, app: Router, mut stop: watch::Receiver<bool>) {
    // Connections live in this set: aborting the task cuts them too.
    let mut connections = JoinSet::new();
    let each = stop.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => { connections.spawn(connection(stream, app.clone(), each.clone())); }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            () = stopped(&mut stop) => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// Until the server is told to stop.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// One connection: HTTP/1.1 with keep-alive until the server stops, then
/// hyper's graceful shutdown (idle: closed; busy: closed once its response
/// is done).
async fn connection(stream: TcpStream, app: Router, mut stop: watch::Receiver<bool>) {
    let service = hyper::service::service_fn(move |req: http::Request<Incoming>| {
        app.clone().oneshot(req.map(Body::new))
    });
    let conn =
        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        () = stopped(&mut stop) => {}
    }
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineConfig, app};
    use crate::listener::{Cidr, LOOPBACK_POD_CIDR, allocate};
    use futures::StreamExt;
    use infera_sim_core::clock::SimClock;
    use infera_sim_core::net::{SendError, send};

    fn engine(clock: SimClock) -> Router {
        app(EngineConfig {
            model: "m".into(),
            clock,
            ttft: 0.2,
            token_rate: 50.0,
            kv: crate::engine::KvHandshake {
                pod: "p".into(),
                digest: "0".into(),
                policy: infera_model::kv::LoadFailurePolicy::Fail,
                recompute_ttft: 2.0,
            },
        })
    }

    async fn post(
        addr: SocketAddr,
        path: &str,
        body: &str,
    ) -> Result<http::Response<Incoming>, SendError> {
        let req = http::Request::post(path)
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap_or_else(|e| panic!("{e}"));
        send(addr, req, Duration::from_secs(2)).await
    }

    /// The body's chunks as they arrive, and whether it ended cleanly.
    async fn chunks(resp: http::Response<Incoming>) -> (Vec<String>, bool) {
        let mut data = Body::new(resp.into_body()).into_data_stream();
        let mut out = Vec::new();
        while let Some(chunk) = data.next().await {
            match chunk {
                Ok(b) => out.push(String::from_utf8_lossy(&b).to_string()),
                Err(_) => return (out, false),
            }
        }
        (out, true)
    }

    fn addr() -> (crate::listener::PodIp, SocketAddr) {
        let cidr = Cidr::parse(LOOPBACK_POD_CIDR).unwrap_or_else(|e| panic!("{e}"));
        let ip = allocate(cidr).unwrap_or_else(|| panic!("no address"));
        let addr = SocketAddr::from((ip.addr(), 30000));
        (ip, addr)
    }

    /// A stream answers a chunk per token (chat: a role chunk first), the
    /// last with `finish_reason: "length"`, then `[DONE]`; a whole answer
    /// has `max_tokens` tokens; `/v1/models` names the model.
    #[tokio::test]
    async fn the_engine_speaks_vllm() {
        let (_ip, addr) = addr();
        let port =
            ServingPort::open(addr, engine(SimClock::new(10.0))).unwrap_or_else(|e| panic!("{e}"));
        let body = r#"{"model": "m", "messages": [], "max_tokens": 3, "stream": true}"#;
        let resp = post(addr, "/v1/chat/completions", body)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(resp.status(), 200);
        let (events, clean) = chunks(resp).await;
        let text = events.concat();
        let lines: Vec<&str> = text.split("\n\n").filter(|l| !l.is_empty()).collect();
        assert!(clean, "{text}");
        assert_eq!(lines.len(), 5, "{text}");
        assert!(lines[3].contains(r#""finish_reason":"length""#), "{text}");
        assert_eq!(lines[4], "data: [DONE]");
        let resp = post(
            addr,
            "/v1/completions",
            r#"{"prompt": "x", "max_tokens": 2}"#,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        let (body, _) = chunks(resp).await;
        let v: serde_json::Value = serde_json::from_str(&body.concat()).unwrap_or_default();
        assert_eq!(v["choices"][0]["finish_reason"], "length", "{v}");
        assert_eq!(v["usage"]["completion_tokens"], 2, "{v}");
        let bad = post(addr, "/v1/completions", r#"{"model": "x"}"#).await;
        assert_eq!(bad.map(|r| r.status().as_u16()).ok(), Some(404));
        drop(port);
    }

    /// On SIGTERM new connections are refused at once; a stream in flight
    /// finishes within the drain time, and is cut without one.
    #[tokio::test]
    async fn drain_finishes_or_cuts_what_is_in_flight() {
        for (drain, complete) in [(Duration::from_secs(5), true), (Duration::ZERO, false)] {
            let (_ip, addr) = addr();
            let port = ServingPort::open(addr, engine(SimClock::new(2.0)))
                .unwrap_or_else(|e| panic!("{e}"));
            let body = r#"{"prompt": "x", "max_tokens": 20, "stream": true}"#;
            let resp = post(addr, "/v1/completions", body)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let reading = tokio::spawn(chunks(resp));
            tokio::time::sleep(Duration::from_millis(30)).await;
            let draining = tokio::spawn(port.drain(drain));
            tokio::time::sleep(Duration::from_millis(10)).await;
            let refused = post(addr, "/v1/completions", body).await;
            assert!(matches!(refused, Err(SendError::Connect(_))), "{refused:?}");
            let (events, clean) = reading.await.unwrap_or_else(|e| panic!("{e}"));
            let done = events.concat().ends_with("data: [DONE]\n\n");
            assert_eq!(
                (clean, done),
                (complete, complete),
                "drain {drain:?}: {events:?}"
            );
            let _ = draining.await;
        }
    }
}
