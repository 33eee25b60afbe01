//! `delete` and `deletecollection`, with `DeleteOptions` (grace period,
//! propagation policy, preconditions, dry run) from the body or the query.
//!
//! Mirrors k8s.io/apiserver `pkg/endpoints/handlers/delete.go`
//! (`DeleteResource`, `DeleteCollection`). `Orphan` propagation strips the
//! dependents' owner references here, synchronously; `Background` and
//! `Foreground` leave them to the garbage collector
//! (`infera_sim_controllers`).

use axum::body::Body;
use axum::http::Response;
use serde_json::{Value, json};

use super::{parse_json, selectors};
use crate::Shared;
use crate::request::{Query, ResourcePath, dry_run};
use crate::responses::ok_json;
use crate::status::ApiStatus;
use infera_sim_core::json::str_at;
use infera_sim_core::kind::Kind;

#[derive(Debug, Default)]
pub(crate) struct DeleteOptions {
    grace_period: Option<i64>,
    propagation: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    dry_run: bool,
}

impl DeleteOptions {
    pub(crate) fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    pub(crate) fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    pub(crate) fn dry_run(&self) -> bool {
        self.dry_run
    }

    /// The same options with a resourceVersion precondition (what the
    /// Eviction API sets to guard against a pod turning Ready meanwhile).
    pub(crate) fn with_resource_version(self, rv: &str) -> DeleteOptions {
        DeleteOptions {
            resource_version: Some(rv.to_string()),
            ..self
        }
    }
}

pub(crate) fn delete_options(query: &Query, body: &[u8]) -> Result<DeleteOptions, ApiStatus> {
    let mut opts = DeleteOptions::default();
    if !body.iter().all(u8::is_ascii_whitespace) {
        let v = parse_json(body)?;
        opts.grace_period = v.get("gracePeriodSeconds").and_then(Value::as_i64);
        opts.propagation = v
            .get("propagationPolicy")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.uid = v
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.resource_version = v
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.dry_run = v
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|d| d.iter().any(|x| x == "All"));
        if v.get("orphanDependents").and_then(Value::as_bool) == Some(true) {
            opts.propagation = Some("Orphan".into());
        }
    }
    if let Some(g) = query.get("gracePeriodSeconds") {
        opts.grace_period = Some(g.parse().map_err(|_| {
            ApiStatus::bad_request(format!("gracePeriodSeconds: invalid value {g:?}"))
        })?);
    }
    if let Some(p) = query.get("propagationPolicy") {
        opts.propagation = Some(p.clone());
    }
    opts.dry_run |= dry_run(query);
    if let Some(p) = &opts.propagation
        && !matches!(p.as_str(), "Orphan" | "Background" | "Foreground")
    {
        return Err(ApiStatus::bad_request(format!(
            "propagationPolicy: Unsupported value: {p:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
        )));
    }
    Ok(opts)
}

pub(crate) fn delete(
    shared: &Shared,
    rp: &ResourcePath,
    name: &str,
    query: &Query,
    body: &[u8],
) -> Result<Response<Body>, ApiStatus> {
    let kind = rp.kind;
    if rp.subresource.is_some() {
        return Err(ApiStatus::method_not_allowed(
            "DELETE",
            &format!(
                "{}/{}",
                kind.plural(),
                rp.subresource.as_deref().unwrap_or_default()
            ),
        ));
    }
    let opts = delete_options(query, body)?;
    delete_one(shared, kind, rp.namespace.as_deref(), name, &opts).map(|v| ok_json(&v))
}

pub(crate) fn delete_one(
    shared: &Shared,
    kind: Kind,
    ns: Option<&str>,
    name: &str,
    opts: &DeleteOptions,
) -> Result<Value, ApiStatus> {
    let current = shared
        .store
        .get(kind, ns, name)
        .ok_or_else(|| ApiStatus::not_found(kind, name))?;
    let uid = current
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let Some(want) = &opts.uid
        && *want != uid
    {
        return Err(ApiStatus::conflict(kind, name));
    }
    if let Some(want) = &opts.resource_version
        && current
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            != Some(want.as_str())
    {
        return Err(ApiStatus::conflict(kind, name));
    }
    if opts.dry_run {
        return Ok(current);
    }
    if opts.propagation.as_deref() == Some("Orphan") {
        orphan_dependents(shared, &uid);
    }
    let deleted = shared
        .store
        .delete(kind, ns, name, opts.grace_period)
        .map_err(|e| ApiStatus::from_store(&e, kind, name))?;
    if kind == Kind::Pod || shared.store.get_stored(kind, ns, name).is_some() {
        return Ok(deleted);
    }
    let mut details = json!({"name": name, "kind": kind.plural(), "uid": uid});
    if !kind.group().is_empty() {
        details["group"] = json!(kind.group());
    }
    Ok(
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}),
    )
}

/// `propagationPolicy: Orphan`: dependents lose their owner reference
/// instead of being garbage-collected.
fn orphan_dependents(shared: &Shared, owner_uid: &str) {
    for kind in [
        Kind::ReplicaSet,
        Kind::StatefulSet,
        Kind::Pod,
        Kind::Deployment,
        Kind::LeaderWorkerSet,
    ] {
        let (items, _) = shared.store.list_stored(kind, None);
        for o in items {
            let owned = o
                .value()
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|refs| {
                    refs.iter()
                        .any(|r| r.get("uid").and_then(Value::as_str) == Some(owner_uid))
                });
            if !owned {
                continue;
            }
            let (ns, name) = namespace_and_name(o.value());
            let _ = shared.store.mutate(kind, ns, name, |obj| {
                if let Some(refs) = obj
                    .pointer_mut("/metadata/ownerReferences")
                    .and_then(Value::as_array_mut)
                {
                    refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(owner_uid));
                }
            });
        }
    }
}

pub(crate) fn delete_collection(
    shared: &Shared,
    rp: &ResourcePath,
    query: &Query,
    body: &[u8],
) -> Result<Response<Body>, ApiStatus> {
    let kind = rp.kind;
    let sel = selectors(query, rp.kind)?;
    let opts = delete_options(query, body)?;
    let (items, rv) = shared.store.list_stored(kind, rp.namespace.as_deref());
    let mut deleted = Vec::new();
    for o in items.into_iter().filter(|o| sel.matches(o.value())) {
        let (ns, name) = namespace_and_name(o.value());
        if let Ok(v) = delete_one(shared, kind, ns, name, &opts) {
            if v.get("kind").and_then(Value::as_str) == Some("Status") {
                deleted.push(o.value().clone());
            } else {
                deleted.push(v);
            }
        }
    }
    Ok(ok_json(&json!({
        "kind": format!("{}List", kind.kind()),
        "apiVersion": kind.api_version(),
        "metadata": {"resourceVersion": rv.to_string()},
        "items": deleted,
    })))
}

/// An object's namespace (`None` when it has none) and name.
fn namespace_and_name(v: &Value) -> (Option<&str>, &str) {
    let ns = v.pointer("/metadata/namespace").and_then(Value::as_str);
    (ns, str_at(v, "/metadata/name"))
}
