//! `create` (POST to a collection).
//!
//! Mirrors k8s.io/apiserver `pkg/endpoints/handlers/create.go`
//! (`createHandler`): decode, check the identity against the URL, prepare
//! ([`crate::strategy`]), validate, record the managedFields entry,
//! store; a dry run answers with the object as it would be stored.

use axum::body::Body;
use axum::http::Response;
use serde_json::Value;

use super::{check_namespace, decode, parse_json, reconcile_identity, validate, write};
use crate::Shared;
use crate::managed::{self, Operation};
use crate::request::{Query, ResourcePath, dry_run};
use crate::responses::{created_json, with_warnings};
use crate::status::ApiStatus;
use crate::strategy;

pub(crate) fn create(
    shared: &Shared,
    rp: &ResourcePath,
    query: &Query,
    body: &[u8],
) -> Result<Response<Body>, ApiStatus> {
    let kind = rp.kind;
    let mut obj = parse_json(body)?;
    reconcile_identity(rp, &mut obj)?;
    let warnings = decode(kind, &mut obj, None, query, true)?;
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    check_namespace(
        shared,
        kind,
        obj.pointer("/metadata/namespace").and_then(Value::as_str),
    )?;
    strategy::prepare_for_create(kind, &mut obj);
    validate(kind, &name, &obj, None)?;
    if dry_run(query) {
        let mut preview = obj;
        infera_sim_core::defaults::apply(kind, &mut preview);
        return Ok(with_warnings(created_json(&preview), &warnings));
    }
    managed::record(None, &mut obj, write(query, rp, Operation::Update, None));
    match shared.store.create(kind, obj) {
        Ok(created) => Ok(with_warnings(created_json(&created), &warnings)),
        Err(e) => Err(ApiStatus::from_store(&e, kind, &name)),
    }
}
