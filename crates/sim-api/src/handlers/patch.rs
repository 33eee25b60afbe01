//! `patch`: JSON patch, merge patch, strategic merge patch and server-side
//! apply, of an object, its `status` or its `scale`.
//!
//! Mirrors k8s.io/apiserver `pkg/endpoints/handlers/patch.go`
//! (`PatchResource`, `patcher.patchResource`): the patch applies to the
//! stored object and is retried against the latest version on a conflict,
//! unless the patch itself carries a resourceVersion precondition; an apply
//! patch of an absent object creates it. The patch formats themselves are
//! [`crate::patch`].

use axum::body::Body;
use axum::http::Response;
use serde_json::Value;

use super::{check_namespace, decode, reconcile_identity, store_update, validate, write};
use crate::Shared;
use crate::managed::{self, Operation};
use crate::patch::{self, PatchError, PatchType};
use crate::request::{Query, ResourcePath, dry_run};
use crate::responses::{created_json, ok_json, with_warnings};
use crate::scale;
use crate::status::ApiStatus;
use infera_sim_core::kind::Kind;
use infera_sim_store::StoreError;

/// How many times a patch is re-applied to a newer version after a conflict.
const ATTEMPTS: usize = 8;

/// One PATCH request.
struct Patch<'a> {
    shared: &'a Shared,
    rp: &'a ResourcePath,
    name: &'a str,
    query: &'a Query,
    body: &'a [u8],
    patch_type: PatchType,
    dry_run: bool,
}

pub(crate) fn patch_object(
    shared: &Shared,
    rp: &ResourcePath,
    name: &str,
    content_type: &str,
    query: &Query,
    body: &[u8],
) -> Result<Response<Body>, ApiStatus> {
    let kind = rp.kind;
    let req = Patch {
        shared,
        rp,
        name,
        query,
        body,
        patch_type: patch_type(kind, content_type)?,
        dry_run: dry_run(query),
    };
    for _ in 0..ATTEMPTS {
        let Some(current) = shared.store.get(kind, rp.namespace.as_deref(), name) else {
            return match req.patch_type {
                PatchType::Apply => req.create(),
                _ => Err(ApiStatus::not_found(kind, name)),
            };
        };
        if rp.subresource.as_deref() == Some("scale") {
            let (patch_type, dry) = (req.patch_type, req.dry_run);
            return scale::patch(shared, rp, name, &current, patch_type, body, dry);
        }
        let (patched, warnings) = req.patched(&current)?;
        if req.dry_run {
            return Ok(with_warnings(ok_json(&patched), &warnings));
        }
        match req.store(&current, patched) {
            Ok(v) => return Ok(with_warnings(ok_json(&v), &warnings)),
            Err(StoreError::Conflict) => continue,
            Err(e) => return Err(ApiStatus::from_store(&e, kind, name)),
        }
    }
    Err(ApiStatus::conflict(kind, name))
}

/// The patch type the `Content-Type` names; custom resources take no
/// strategic merge patch (they have no patch strategies).
fn patch_type(kind: Kind, content_type: &str) -> Result<PatchType, ApiStatus> {
    let patch_type = PatchType::from_content_type(content_type)
        .ok_or_else(|| ApiStatus::unsupported_media_type(content_type))?;
    if patch_type == PatchType::Strategic
        && matches!(kind, Kind::InferaDeployment | Kind::LeaderWorkerSet)
    {
        return Err(ApiStatus::new(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        ));
    }
    Ok(patch_type)
}

impl Patch<'_> {
    /// The applied configuration of an apply patch (YAML or JSON).
    fn applied(&self) -> Option<Value> {
        std::str::from_utf8(self.body)
            .ok()
            .and_then(|t| serde_saphyr::from_str(t).ok())
    }

    /// Server-side apply of an absent object: create it.
    fn create(&self) -> Result<Response<Body>, ApiStatus> {
        let (kind, name) = (self.rp.kind, self.name);
        let mut obj = self
            .applied()
            .ok_or_else(|| ApiStatus::bad_request("the apply patch is not valid YAML or JSON"))?;
        reconcile_identity(self.rp, &mut obj)?;
        check_namespace(self.shared, kind, self.rp.namespace.as_deref())?;
        let warnings = decode(kind, &mut obj, None, self.query, false)?;
        validate(kind, name, &obj, None)?;
        if self.dry_run {
            return Ok(with_warnings(created_json(&obj), &warnings));
        }
        let applied = obj.clone();
        let how = write(self.query, self.rp, Operation::Apply, Some(&applied));
        managed::record(None, &mut obj, how);
        self.shared
            .store
            .create(kind, obj)
            .map(|v| with_warnings(created_json(&v), &warnings))
            .map_err(|e| ApiStatus::from_store(&e, kind, name))
    }

    /// `current` with the patch applied, checked (a resourceVersion
    /// precondition, the name), decoded and validated, at `current`'s
    /// version; with the decoder's warnings.
    fn patched(&self, current: &Value) -> Result<(Value, Vec<String>), ApiStatus> {
        let (kind, name) = (self.rp.kind, self.name);
        let current_rv = current
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut patched = current.clone();
        patch::apply(&mut patched, self.patch_type, self.body).map_err(|e| match e {
            PatchError::Decode(m) => ApiStatus::bad_request(m),
            PatchError::Apply(m) => ApiStatus::invalid(kind, name, &m),
        })?;
        if !patched.is_object() {
            return Err(ApiStatus::bad_request(
                "the patched object is not a JSON object",
            ));
        }
        let precondition = patched
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .filter(|rv| *rv != current_rv);
        if precondition.is_some() {
            return Err(ApiStatus::conflict(kind, name));
        }
        if patched.pointer("/metadata/name").and_then(Value::as_str) != Some(name) {
            return Err(ApiStatus::bad_request(
                "the patch may not change metadata.name",
            ));
        }
        if let Some(meta) = patched.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::from(current_rv));
        }
        let warnings = decode(kind, &mut patched, Some(current), self.query, false)?;
        if self.rp.subresource.is_none() {
            validate(kind, name, &patched, Some(current))?;
        }
        Ok((patched, warnings))
    }

    /// Record the managedFields entry of this patch on `patched` and store it.
    fn store(&self, current: &Value, mut patched: Value) -> Result<Value, StoreError> {
        let applied = match self.patch_type {
            PatchType::Apply => self.applied(),
            _ => None,
        };
        let how = match &applied {
            Some(a) => write(self.query, self.rp, Operation::Apply, Some(a)),
            None => write(self.query, self.rp, Operation::Update, None),
        };
        managed::record(Some(current), &mut patched, how);
        store_update(self.shared, self.rp, patched)
    }
}
