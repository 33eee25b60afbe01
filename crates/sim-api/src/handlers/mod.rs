//! The verbs on a resource, one module per family as upstream's
//! k8s.io/apiserver `pkg/endpoints/handlers` has them: [`get`] (get, list),
//! [`create`], [`update`], [`patch`], [`delete`] (delete,
//! deletecollection) and [`watch`]. This module holds the steps they share
//! (upstream's rest.go): reading and decoding the body, checking the
//! object's identity against the URL, `fieldValidation`, validation, the
//! selectors and the managedFields entry of a write.
//!
//! Field selectors accept only the field labels upstream registers per
//! kind; create, update and patch run [`super::validation`].

pub(crate) mod create;
pub(crate) mod delete;
pub(crate) mod get;
pub(crate) mod patch;
pub(crate) mod update;
pub(crate) mod watch;

use axum::body::{Body, Bytes};
use serde_json::{Value, json};

use super::Shared;
use super::managed::{self, Operation};
use super::protobuf;
use super::request::{Query, ResourcePath};
use super::selectors::{FieldSelector, LabelSelector, Selectors};
use super::status::ApiStatus;
use super::validation;
use infera_sim_core::kind::Kind;

/// Largest request body accepted (upstream's limit is 3 MiB for objects).
const MAX_BODY: usize = 8 * 1024 * 1024;

pub(crate) async fn read_body(body: Body) -> Result<Bytes, ApiStatus> {
    axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|e| ApiStatus::bad_request(format!("reading the request body failed: {e}")))
}

/// Read a body, turning a protobuf one (a current kubectl's typed clients)
/// into JSON; see `protobuf.rs`.
pub(crate) async fn read_json_body(body: Body, content_type: &str) -> Result<Bytes, ApiStatus> {
    let bytes = read_body(body).await?;
    if protobuf::is_protobuf(content_type) {
        return protobuf::to_json(&bytes).map(Bytes::from);
    }
    Ok(bytes)
}

pub(crate) fn parse_json(bytes: &[u8]) -> Result<Value, ApiStatus> {
    serde_json::from_slice(bytes).map_err(|e| {
        ApiStatus::bad_request(format!("the request body is not a valid JSON object: {e}"))
    })
}

pub(crate) fn selectors(query: &Query, kind: Kind) -> Result<Selectors, ApiStatus> {
    let labels = match query.get("labelSelector") {
        Some(s) => LabelSelector::parse(s)
            .map_err(|e| ApiStatus::bad_request(format!("unable to parse requirement: {e}")))?,
        None => LabelSelector::default(),
    };
    let fields = match query.get("fieldSelector") {
        Some(s) => {
            let fields = FieldSelector::parse(s).map_err(ApiStatus::bad_request)?;
            fields
                .check_supported(kind)
                .map_err(ApiStatus::bad_request)?;
            fields
        }
        None => FieldSelector::default(),
    };
    Ok(Selectors { labels, fields })
}

pub(crate) fn check_namespace(
    shared: &Shared,
    kind: Kind,
    ns: Option<&str>,
) -> Result<(), ApiStatus> {
    if !kind.namespaced() {
        return Ok(());
    }
    let ns = ns.unwrap_or("default");
    if shared.store.get_stored(Kind::Namespace, None, ns).is_none() {
        return Err(ApiStatus::not_found(Kind::Namespace, ns));
    }
    Ok(())
}

/// Check the body's `apiVersion`/`kind`/namespace against the URL and fill
/// them in where absent.
pub(crate) fn reconcile_identity(rp: &ResourcePath, obj: &mut Value) -> Result<(), ApiStatus> {
    let kind = rp.kind;
    let Some(map) = obj.as_object_mut() else {
        return Err(ApiStatus::bad_request(
            "the request body is not a JSON object",
        ));
    };
    if let Some(av) = map.get("apiVersion").and_then(Value::as_str)
        && av != kind.api_version()
    {
        return Err(ApiStatus::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({})",
            kind.api_version()
        )));
    }
    if let Some(k) = map.get("kind").and_then(Value::as_str)
        && k != kind.kind()
    {
        return Err(ApiStatus::bad_request(format!(
            "the kind in the data ({k}) does not match the expected kind ({})",
            kind.kind()
        )));
    }
    if kind.namespaced()
        && let Some(url_ns) = &rp.namespace
    {
        let meta = map
            .entry("metadata")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| ApiStatus::bad_request("metadata must be an object"))?;
        match meta.get("namespace").and_then(Value::as_str) {
            Some(ns) if !ns.is_empty() && ns != url_ns => {
                return Err(ApiStatus::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {
                meta.insert("namespace".into(), Value::from(url_ns.clone()));
            }
        }
    }
    Ok(())
}

/// `422 Invalid` when `obj` breaks a validation rule (`old`: the object it
/// replaces).
pub(crate) fn validate(
    kind: Kind,
    name: &str,
    obj: &Value,
    old: Option<&Value>,
) -> Result<(), ApiStatus> {
    match validation::message(&validation::errors(kind, obj, old)) {
        Some(why) => Err(ApiStatus::invalid(kind, name, &why)),
        None => Ok(()),
    }
}

/// The decoding step: a field of the wrong type is `400`; fields the kind
/// does not have (and `current` did not already have) are `400` under
/// `fieldValidation=Strict` and returned as warnings under `Warn`; `obj`
/// loses them.
pub(crate) fn decode(
    kind: Kind,
    obj: &mut Value,
    current: Option<&Value>,
    query: &Query,
    prefix: bool,
) -> Result<Vec<String>, ApiStatus> {
    let mode = validation::FieldValidation::parse(query.get("fieldValidation").map(String::as_str))
        .map_err(ApiStatus::bad_request)?;
    let mut unknown = validation::decode(kind, obj).map_err(ApiStatus::bad_request)?;
    if let Some(current) = current {
        let before = validation::decode(kind, current).unwrap_or_default();
        unknown.retain(|f| !before.contains(f));
    }
    if mode != validation::FieldValidation::Strict {
        validation::prune(kind, obj);
    }
    match mode {
        _ if unknown.is_empty() => Ok(Vec::new()),
        validation::FieldValidation::Ignore => Ok(Vec::new()),
        validation::FieldValidation::Warn => Ok(unknown
            .iter()
            .map(|f| format!("unknown field {f:?}"))
            .collect()),
        validation::FieldValidation::Strict => {
            let strict = validation::strict_message(&unknown);
            Err(ApiStatus::bad_request(if prefix {
                format!(
                    "{} in version {:?} cannot be handled as a {}: {strict}",
                    kind.kind(),
                    kind.version(),
                    kind.kind()
                )
            } else {
                strict
            }))
        }
    }
}

/// The managedFields entry of this request (its manager is always set:
/// see [`super::handler`]).
pub(crate) fn write<'a>(
    query: &'a Query,
    rp: &'a ResourcePath,
    operation: Operation,
    applied: Option<&'a Value>,
) -> managed::Write<'a> {
    managed::Write {
        manager: query
            .get("fieldManager")
            .map(String::as_str)
            .unwrap_or("unknown"),
        operation,
        subresource: rp.subresource.as_deref(),
        applied,
    }
}

/// Store a replaced object through the subresource the request named: the
/// `status` subresource writes only the status, the object itself all but
/// the status.
pub(crate) fn store_update(
    shared: &Shared,
    rp: &ResourcePath,
    obj: Value,
) -> Result<Value, infera_sim_store::StoreError> {
    if rp.subresource.as_deref() == Some("status") {
        shared.store.update_status(rp.kind, obj)
    } else {
        shared.store.update(rp.kind, obj)
    }
}
