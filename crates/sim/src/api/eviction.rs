//! `POST /api/v1/namespaces/NS/pods/NAME/eviction` (policy/v1 Eviction),
//! what `kubectl drain` calls for each pod.
//!
//! Upstream (k8s.io/kubernetes@v1.37.2 pkg/registry/core/pod/storage/eviction.go)
//! checks PodDisruptionBudgets, then deletes the pod with the Eviction's
//! deleteOptions and answers `201 Created` with a `Status{status: Success}`.
//! The simulator has no PodDisruptionBudgets, so every eviction is allowed
//! (never `429 TooManyRequests`); the delete is the graceful delete of the
//! pod, honouring its `terminationGracePeriodSeconds` unless the Eviction
//! overrides it.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Response, StatusCode};
use serde_json::{Value, json};

use super::Shared;
use super::handlers::delete::{delete_one, delete_options};
use super::request::Query;
use super::responses::json_response;
use super::status::ApiStatus;
use crate::store::Kind;

pub(super) fn evict(
    shared: &Arc<Shared>,
    ns: Option<&str>,
    name: &str,
    query: &Query,
    body: &[u8],
) -> Result<Response<Body>, ApiStatus> {
    let eviction: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        serde_json::from_slice(body).map_err(|e| {
            ApiStatus::bad_request(format!("the request body is not a valid Eviction: {e}"))
        })?
    };
    if let Some(target) = eviction.pointer("/metadata/name").and_then(Value::as_str)
        && target != name
    {
        return Err(ApiStatus::bad_request(format!(
            "name in URL does not match name in Eviction object: {name} != {target}"
        )));
    }
    let opts_json = eviction
        .get("deleteOptions")
        .map(|o| serde_json::to_vec(o).unwrap_or_default())
        .unwrap_or_default();
    let opts = delete_options(query, &opts_json)?;
    delete_one(shared, Kind::Pod, ns, name, &opts)?;
    let status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
    });
    Ok(json_response(
        StatusCode::CREATED,
        serde_json::to_vec(&status).unwrap_or_default(),
    ))
}
