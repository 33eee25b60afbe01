//! The `scale` subresource (autoscaling/v1 `Scale`) of Deployments,
//! ReplicaSets and LeaderWorkerSets: get, update and patch read and write
//! only `spec.replicas`, with the Scale's resourceVersion as precondition.
//!
//! Mirrors k8s.io/kubernetes `pkg/registry/apps/deployment/storage/storage.go`
//! (`ScaleREST`) and its ReplicaSet twin.

use axum::body::Body;
use axum::http::Response;
use infera_model::selector::Selector;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::{Value, json};

use super::Shared;
use super::handlers::{get, parse_json};
use super::patch::{self, PatchType};
use super::request::{Query, ResourcePath, dry_run};
use super::responses::ok_json;
use super::status::ApiStatus;
use infera_sim_core::kind::Kind;

/// The kinds that serve `scale`.
pub(crate) fn served(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Deployment | Kind::ReplicaSet | Kind::StatefulSet | Kind::LeaderWorkerSet
    )
}

/// `GET .../scale`.
pub(crate) fn get(
    shared: &Shared,
    rp: &ResourcePath,
    name: &str,
) -> Result<Response<Body>, ApiStatus> {
    let stored = get::stored(shared, rp, name)?;
    Ok(ok_json(&scale_of(rp.kind, stored.value())))
}

/// `PUT .../scale`.
pub(crate) fn update(
    shared: &Shared,
    rp: &ResourcePath,
    name: &str,
    query: &Query,
    body: &[u8],
) -> Result<Response<Body>, ApiStatus> {
    let obj = parse_json(body)?;
    let replicas = obj.pointer("/spec/replicas").and_then(Value::as_i64);
    let rv = obj
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_string);
    write_scale(shared, rp, name, replicas, rv, dry_run(query))
}

/// `PATCH .../scale`: the patch applies to the Scale of `current`.
pub(crate) fn patch(
    shared: &Shared,
    rp: &ResourcePath,
    name: &str,
    current: &Value,
    patch_type: PatchType,
    body: &[u8],
    dry_run: bool,
) -> Result<Response<Body>, ApiStatus> {
    let mut scale = scale_of(rp.kind, current);
    patch::apply(&mut scale, patch_type, body)
        .map_err(|e| ApiStatus::bad_request(e.to_string()))?;
    let rv = scale
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_string);
    write_scale(
        shared,
        rp,
        name,
        scale.pointer("/spec/replicas").and_then(Value::as_i64),
        rv,
        dry_run,
    )
}

fn scale_of(kind: Kind, obj: &Value) -> Value {
    let meta = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    // `status.selector` is the selector's string form (`LabelSelectorAsSelector`).
    let selector = obj
        .pointer("/spec/selector")
        .and_then(|s| serde_json::from_value::<LabelSelector>(s.clone()).ok())
        .and_then(|s| Selector::from_label_selector(&s).ok())
        .map(|s| s.to_string())
        .unwrap_or_default();
    let _ = kind;
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
            "creationTimestamp": meta.get("creationTimestamp"),
        },
        "spec": {"replicas": obj.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(0)},
        "status": {
            "replicas": obj.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
            "selector": selector,
        }
    })
}

fn write_scale(
    shared: &Shared,
    rp: &ResourcePath,
    name: &str,
    replicas: Option<i64>,
    expected_rv: Option<String>,
    dry_run: bool,
) -> Result<Response<Body>, ApiStatus> {
    let kind = rp.kind;
    let ns = rp.namespace.as_deref();
    let Some(replicas) = replicas.filter(|r| *r >= 0) else {
        return Err(ApiStatus::invalid(
            kind,
            name,
            "spec.replicas: Invalid value: must be greater than or equal to 0",
        ));
    };
    let current = shared
        .store
        .get(kind, ns, name)
        .ok_or_else(|| ApiStatus::not_found(kind, name))?;
    if let Some(rv) = expected_rv.filter(|rv| !rv.is_empty())
        && current
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            != Some(rv.as_str())
    {
        return Err(ApiStatus::conflict(kind, name));
    }
    if dry_run {
        let mut preview = current;
        preview["spec"]["replicas"] = json!(replicas);
        return Ok(ok_json(&scale_of(kind, &preview)));
    }
    let updated = shared
        .store
        .mutate(kind, ns, name, |obj| {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("replicas".into(), json!(replicas));
            }
        })
        .map_err(|e| ApiStatus::from_store(&e, kind, name))?;
    Ok(ok_json(&scale_of(kind, &updated)))
}
