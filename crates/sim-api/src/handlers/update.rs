//! `update` (PUT of a whole object, or of its `status`).
//!
//! Mirrors k8s.io/apiserver `pkg/endpoints/handlers/update.go`
//! (`UpdateResource`): decode, check the identity and name against the URL,
//! validate against the stored object, keep and record managedFields,
//! store. `scale` is [`crate::scale`].

use axum::body::Body;
use axum::http::Response;
use serde_json::{Value, json};

use super::{decode, parse_json, reconcile_identity, store_update, validate, write};
use crate::Shared;
use crate::managed::{self, Operation};
use crate::request::{Query, ResourcePath, dry_run};
use crate::responses::{ok_json, with_warnings};
use crate::status::ApiStatus;

pub(crate) fn update(
    shared: &Shared,
    rp: &ResourcePath,
    name: &str,
    query: &Query,
    body: &[u8],
) -> Result<Response<Body>, ApiStatus> {
    let kind = rp.kind;
    let mut obj = parse_json(body)?;
    reconcile_identity(rp, &mut obj)?;
    name_from_url(&mut obj, name)?;
    if !kind.namespaced()
        && let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.remove("namespace");
    }
    let current = shared.store.get(kind, rp.namespace.as_deref(), name);
    let warnings = decode(kind, &mut obj, current.as_ref(), query, true)?;
    if rp.subresource.is_none() {
        validate(kind, name, &obj, current.as_ref())?;
    }
    if dry_run(query) {
        return Ok(with_warnings(ok_json(&obj), &warnings));
    }
    if let Some(current) = &current {
        keep_managed_fields(current, &mut obj);
        managed::record(
            Some(current),
            &mut obj,
            write(query, rp, Operation::Update, None),
        );
    }
    store_update(shared, rp, obj)
        .map(|v| with_warnings(ok_json(&v), &warnings))
        .map_err(|e| ApiStatus::from_store(&e, kind, name))
}

/// The body's `metadata.name` must be the URL's; absent, it is the URL's.
fn name_from_url(obj: &mut Value, name: &str) -> Result<(), ApiStatus> {
    match obj.pointer("/metadata/name").and_then(Value::as_str) {
        Some(n) if n != name => {
            return Err(ApiStatus::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        Some(_) => {}
        None => {
            if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("name".into(), Value::from(name));
            } else if let Some(map) = obj.as_object_mut() {
                map.insert("metadata".into(), json!({"name": name}));
            }
        }
    }
    Ok(())
}

/// A PUT without `metadata.managedFields` keeps the stored ones (upstream:
/// a request that omits them does not reset them).
fn keep_managed_fields(current: &Value, obj: &mut Value) {
    let missing = obj.pointer("/metadata/managedFields").is_none();
    if let (true, Some(mf), Some(meta)) = (
        missing,
        current.pointer("/metadata/managedFields"),
        obj.get_mut("metadata").and_then(Value::as_object_mut),
    ) {
        meta.insert("managedFields".into(), mf.clone());
    }
}
