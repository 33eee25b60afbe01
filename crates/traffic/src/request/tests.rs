//! Each class against a real HTTP server on loopback answering as the
//! serving path can.

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode};
use axum::routing::{get, post};
use futures::StreamExt;
use futures::stream;

use super::*;

const CHUNK: &str = "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n";
const LAST: &str = "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n";

fn sse(parts: Vec<Result<&'static str, std::io::Error>>) -> Response<Body> {
    // Each part 20 ms after the last, as a server writes them.
    let chunks = stream::iter(parts).then(|p| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        p.map(|s: &'static str| Bytes::from_static(s.as_bytes()))
    });
    let mut r = Response::new(Body::from_stream(chunks));
    r.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    r.headers_mut()
        .insert("x-infera-served-by", HeaderValue::from_static("p-1, d-2"));
    r
}

fn status(code: u16, body: &'static str) -> Response<Body> {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r
}

/// A server whose `/MODE/v1/...` answers as MODE says.
async fn serve() -> String {
    let app = Router::new()
        .route("/ok/v1/chat/completions", post(|| async { sse(vec![Ok(CHUNK), Ok(LAST)]) }))
        .route(
            "/ok/v1/completions",
            post(|| async { status(200, r#"{"object":"text_completion","choices":[{"text":"hi","finish_reason":"length"}]}"#) }),
        )
        .route("/ok/v1/models", get(|| async { status(200, r#"{"object":"list","data":[{"id":"m-1"}]}"#) }))
        .route(
            "/busy/v1/chat/completions",
            post(|| async { status(503, r#"{"error":{"message":"no available workers","code":503}}"#) }),
        )
        .route(
            "/proxy/v1/chat/completions",
            post(|| async {
                status(503, r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"error trying to reach service: dial tcp 10.0.0.1:8000: connect: connection refused","code":503}"#)
            }),
        )
        .route(
            "/event/v1/chat/completions",
            post(|| async {
                sse(vec![Ok(CHUNK), Ok("data: {\"error\":{\"message\":\"worker failed\",\"code\":502}}\n\n"), Ok("data: [DONE]\n\n")])
            }),
        )
        .route(
            "/cut/v1/chat/completions",
            post(|| async { sse(vec![Ok(CHUNK), Err(std::io::Error::other("killed"))]) }),
        )
        .route("/early/v1/chat/completions", post(|| async { sse(vec![Ok(CHUNK)]) }))
        .route(
            "/cut/v1/completions",
            post(|| async { status(200, r#"{"object":"text_completion","choices":[{"text":"h"#) }),
        )
        .route(
            "/hang/v1/chat/completions",
            post(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                status(200, "")
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn client(base: &str) -> Client {
    let url: http::Uri = base.parse().unwrap_or_else(|e| panic!("{e}"));
    let mut config = kube::Config::new(url);
    config.default_retry = false;
    Client::try_from(config).unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn every_class_is_told_from_what_the_path_answered() {
    let base = serve().await;
    let c = client(&base);
    let cases: [(&str, Kind, Class, Option<u16>); 10] = [
        ("ok", Kind::Chat, Class::Ok, Some(200)),
        ("ok", Kind::Completion, Class::Ok, Some(200)),
        ("busy", Kind::Chat, Class::Status, Some(503)),
        ("proxy", Kind::Chat, Class::Refused, Some(503)),
        ("event", Kind::Chat, Class::ErrorEvent, Some(200)),
        ("cut", Kind::Chat, Class::Cut, Some(200)),
        ("early", Kind::Chat, Class::Cut, Some(200)),
        ("cut", Kind::Completion, Class::Cut, Some(200)),
        ("hang", Kind::Chat, Class::Hung, None),
        ("missing", Kind::Chat, Class::Status, Some(404)),
    ];
    for (mode, kind, class, code) in cases {
        let route = Route::url(&format!("{base}/{mode}")).unwrap_or_else(|e| panic!("{e}"));
        let r = send(
            &c,
            &route,
            kind,
            "m",
            format!("id-{mode}"),
            Duration::from_millis(800),
        )
        .await;
        assert_eq!((r.class, r.status), (class, code), "{mode} {kind:?}: {r:?}");
        assert_eq!(r.stream, kind == Kind::Chat);
        assert!(r.ended_ms >= r.started_ms);
    }
}

#[tokio::test]
async fn a_stream_names_its_workers_and_times_its_first_token() {
    let base = serve().await;
    let route = Route::url(&format!("{base}/ok")).unwrap_or_else(|e| panic!("{e}"));
    let r = send(
        &client(&base),
        &route,
        Kind::Chat,
        "m",
        "x".into(),
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(r.served_by, ["p-1", "d-2"]);
    assert!(r.ttft_ms.is_some(), "{r:?}");
    let model = first_model(&client(&base), &route, Duration::from_secs(5)).await;
    assert_eq!(model.as_deref(), Ok("m-1"));
}

#[tokio::test]
async fn a_closed_port_is_refused() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    drop(listener);
    let base = format!("http://{addr}");
    let route = Route::url(&base).unwrap_or_else(|e| panic!("{e}"));
    let r = send(
        &client(&base),
        &route,
        Kind::Completion,
        "m",
        "x".into(),
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(r.class, Class::Refused, "{r:?}");
    assert_eq!(r.detail.as_deref(), Some("connection refused"));
}
