//! `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`, what
//! `kubectl auth can-i` asks. The simulator has no RBAC: every authenticated
//! request is allowed, so every review answers `allowed: true` (upstream
//! answers 201 Created with the review and its status,
//! k8s.io/kubernetes@v1.37.2
//! pkg/registry/authorization/selfsubjectaccessreview/rest.go). The spec is
//! not echoed back (the body may be protobuf; kubectl reads only status).

use axum::body::Body;
use axum::http::{Response, StatusCode};
use serde_json::json;

use super::responses::json_response;

/// The path this module serves.
pub const PATH: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

pub(super) fn self_subject_access_review() -> Response<Body> {
    let review = json!({
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {},
        "spec": {},
        "status": {"allowed": true},
    });
    json_response(
        StatusCode::CREATED,
        serde_json::to_vec(&review).unwrap_or_default(),
    )
}
