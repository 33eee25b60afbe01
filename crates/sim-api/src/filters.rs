//! The filters every request passes before a handler sees it: bearer-token
//! authentication, and the injected faults (latency, error bursts,
//! conflicts) that make the simulated API as unreliable as a real one.
//!
//! Mirrors k8s.io/apiserver `pkg/endpoints/filters` (authentication.go,
//! `WithAuthentication`). There is no authorization filter: every
//! authenticated request is allowed (see [`super::authz`]).

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, header};

use super::Shared;
use super::status::ApiStatus;

/// Header the embedded world's own client (kubelet, operator, nodes) sends.
/// Injected error bursts and conflicts target the clients under test, not
/// the world: its real-time retries (and `Retry-After`) would otherwise
/// stretch simulated time by the speed factor (1 s at 200x = 200 s), which
/// turns a flaky API into a slow kubelet. Restarts, dropped watches,
/// compaction and latency still hit everyone.
pub const WORLD_HEADER: &str = "x-infera-sim-world";

pub(crate) fn from_world(req: &Request<Body>) -> bool {
    req.headers().contains_key(WORLD_HEADER)
}

/// Whether the request carries the bearer token the server expects.
pub(crate) fn authenticated(shared: &Shared, headers: &HeaderMap) -> bool {
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

/// An injected error burst for a resource request (never for the world's
/// own client, see [`WORLD_HEADER`]), recorded in the store's request counts.
pub(crate) fn injected_error(shared: &Shared, req: &Request<Body>) -> Option<ApiStatus> {
    let err = (!from_world(req))
        .then(|| shared.injector.error())
        .flatten()?;
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
    Some(status)
}

/// An injected `409 Conflict` for an update or patch (never for the world's
/// own client).
pub(crate) fn injected_conflict(shared: &Shared, method: &Method, req: &Request<Body>) -> bool {
    matches!(*method, Method::PUT | Method::PATCH) && !from_world(req) && shared.injector.conflict()
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
}
