//! Writing responses: a JSON body with its status code, and the `Warning`
//! headers kubectl prints.
//!
//! Mirrors k8s.io/apiserver `pkg/endpoints/handlers/responsewriters`
//! (writers.go) and `pkg/endpoints/filters/warning.go`; error bodies are
//! [`super::status::ApiStatus`].

use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode, header};
use serde_json::Value;

pub(crate) fn json_response(code: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

pub(crate) fn ok_json(v: &Value) -> Response<Body> {
    json_response(StatusCode::OK, serde_json::to_vec(v).unwrap_or_default())
}

pub(crate) fn created_json(v: &Value) -> Response<Body> {
    json_response(
        StatusCode::CREATED,
        serde_json::to_vec(v).unwrap_or_default(),
    )
}

/// Add one `Warning: 299 - "..."` header per warning (kubectl prints them).
pub(crate) fn with_warnings(mut resp: Response<Body>, warnings: &[String]) -> Response<Body> {
    for w in warnings {
        let quoted = format!("299 - {}", serde_json::Value::from(w.as_str()));
        if let Ok(v) = HeaderValue::from_str(&quoted) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}
