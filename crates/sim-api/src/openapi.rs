//! OpenAPI v3 discovery (`/openapi/v3` and `/openapi/v3/<group-version>`).
//!
//! kubectl refuses to `apply`/`create` with its default `--validate=strict`
//! unless it can download an OpenAPI document: it reads the PATCH operation
//! of the object's kind and sends `fieldValidation=Strict` to a server that
//! lists that query parameter (otherwise it validates client-side against the
//! schema, and fails when there is none). So every group-version the
//! simulator serves gets a document with the kind's paths and operations,
//! each tagged `x-kubernetes-group-version-kind` and listing the query
//! parameters upstream lists.
//!
//! Simplifications: `components.schemas` is empty (kubectl then computes a
//! strategic merge patch from its compiled-in types, as it does for any
//! kind its OpenAPI lookup cannot resolve, and `kubectl explain` has nothing
//! to show); OpenAPI v2 (`/openapi/v2`, protobuf) is not served, kubectl
//! falls back from it silently. `fieldValidation` itself is honoured for
//! the built-in kinds ([`super::validation::decode`]).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::{Value, json};

use super::discovery;
use infera_sim_core::kind::Kind;

/// One served group-version: its OpenAPI path key (`api/v1`,
/// `apis/apps/v1`), its document, and the document's hash.
struct GroupVersionDoc {
    doc: Value,
    hash: String,
}

fn docs() -> &'static BTreeMap<String, GroupVersionDoc> {
    static DOCS: OnceLock<BTreeMap<String, GroupVersionDoc>> = OnceLock::new();
    DOCS.get_or_init(|| {
        let mut out = BTreeMap::new();
        let mut gvs = vec![("", "v1")];
        gvs.extend(discovery::groups());
        for (group, version) in gvs {
            let doc = group_version_doc(group, version);
            let hash = fnv_hex(&serde_json::to_vec(&doc).unwrap_or_default());
            out.insert(gv_path(group, version), GroupVersionDoc { doc, hash });
        }
        out
    })
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// A stable content hash (FNV-1a, twice, 128 bits of hex): clients cache
/// each document by the `hash` query parameter of its URL.
fn fnv_hex(bytes: &[u8]) -> String {
    let fnv = |seed: u64| {
        bytes.iter().fold(seed, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    format!(
        "{:016X}{:016X}",
        fnv(0xcbf2_9ce4_8422_2325),
        fnv(0x6c62_272e_07bb_0142)
    )
}

/// `GET /openapi/v3`: where each group-version's document is.
pub fn root() -> Value {
    let paths: serde_json::Map<String, Value> = docs()
        .iter()
        .map(|(path, d)| {
            (
                path.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={}", d.hash)}),
            )
        })
        .collect();
    json!({ "paths": paths })
}

/// `GET /openapi/v3/<path>` (`api/v1`, `apis/apps/v1`, ...).
pub fn document(path: &str) -> Option<&'static Value> {
    docs().get(path.trim_matches('/')).map(|d| &d.doc)
}

fn query(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description,
           "schema": {"type": "string", "uniqueItems": true}})
}

fn write_params(patch: bool) -> Vec<Value> {
    let mut params = vec![
        query(
            "dryRun",
            "When present, indicates that modifications should not be persisted.",
        ),
        query(
            "fieldManager",
            "fieldManager is a name associated with the actor or entity that is making these changes.",
        ),
        query(
            "fieldValidation",
            "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values are: Ignore, Warn, Strict.",
        ),
    ];
    if patch {
        params.push(json!({"name": "force", "in": "query",
            "description": "Force is going to \"force\" Apply requests.",
            "schema": {"type": "boolean", "uniqueItems": true}}));
    }
    params
}

fn path_param(name: &str) -> Value {
    json!({"name": name, "in": "path", "required": true,
           "description": format!("{name} of the resource"),
           "schema": {"type": "string", "uniqueItems": true}})
}

/// The body media types a PATCH accepts (no strategic merge for custom
/// resources, as upstream).
fn patch_body(kind: Kind) -> Value {
    let mut content = serde_json::Map::new();
    let mut types = vec![
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
    ];
    if !matches!(kind, Kind::InferaDeployment | Kind::LeaderWorkerSet) {
        types.push("application/strategic-merge-patch+json");
    }
    for t in types {
        content.insert(t.into(), json!({"schema": {"type": "object"}}));
    }
    json!({"content": content, "required": true})
}

fn ok_response() -> Value {
    json!({"200": {"description": "OK",
        "content": {"application/json": {"schema": {"type": "object"}}}}})
}

fn operation(
    verb: &str,
    op_id: String,
    gvk: &Value,
    params: Vec<Value>,
    body: Option<Value>,
) -> Value {
    let mut op = json!({
        "operationId": op_id,
        "responses": ok_response(),
        "x-kubernetes-action": verb,
        "x-kubernetes-group-version-kind": gvk,
    });
    if !params.is_empty() {
        op["parameters"] = Value::from(params);
    }
    if let Some(b) = body {
        op["requestBody"] = b;
    }
    op
}

fn gvk_json(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "version": version, "kind": kind})
}

fn group_version_doc(group: &str, version: &str) -> Value {
    let mut paths = serde_json::Map::new();
    let base = format!("/{}", gv_path(group, version));
    for kind in Kind::ALL
        .into_iter()
        .filter(|k| k.group() == group && k.version() == version)
    {
        let gvk = gvk_json(group, version, kind.kind());
        let op_kind = kind.kind();
        let (collection, mut scope_params) = if kind.namespaced() {
            (
                format!("{base}/namespaces/{{namespace}}/{}", kind.plural()),
                vec![path_param("namespace")],
            )
        } else {
            (format!("{base}/{}", kind.plural()), Vec::new())
        };
        let json_body = json!({"content": {"application/json": {"schema": {"type": "object"}}}, "required": true});
        paths.insert(
            collection.clone(),
            json!({
                "get": operation("list", format!("list{op_kind}"), &gvk, Vec::new(), None),
                "post": operation("post", format!("create{op_kind}"), &gvk, write_params(false), Some(json_body.clone())),
                "delete": operation("deletecollection", format!("deletecollection{op_kind}"), &gvk, Vec::new(), None),
                "parameters": scope_params.clone(),
            }),
        );
        if kind.namespaced() {
            paths.insert(
                format!("{base}/{}", kind.plural()),
                json!({"get": operation("list", format!("list{op_kind}ForAllNamespaces"), &gvk, Vec::new(), None)}),
            );
        }
        scope_params.push(path_param("name"));
        let item = format!("{collection}/{{name}}");
        let mut subs: Vec<(String, Value, &str)> = vec![(item, gvk.clone(), "")];
        if kind.has_status() {
            subs.push((
                format!("{collection}/{{name}}/status"),
                gvk.clone(),
                "Status",
            ));
        }
        if matches!(
            kind,
            Kind::Deployment | Kind::ReplicaSet | Kind::StatefulSet | Kind::LeaderWorkerSet
        ) {
            subs.push((
                format!("{collection}/{{name}}/scale"),
                gvk_json("autoscaling", "v1", "Scale"),
                "Scale",
            ));
        }
        for (path, gvk, suffix) in subs {
            let name = format!("{op_kind}{suffix}");
            let mut item_ops = json!({
                "get": operation("get", format!("read{name}"), &gvk, Vec::new(), None),
                "put": operation("put", format!("replace{name}"), &gvk, write_params(false), Some(json_body.clone())),
                "patch": operation("patch", format!("patch{name}"), &gvk, write_params(true), Some(patch_body(kind))),
                "parameters": scope_params.clone(),
            });
            if suffix.is_empty() {
                item_ops["delete"] = operation(
                    "delete",
                    format!("delete{name}"),
                    &gvk,
                    vec![query(
                        "dryRun",
                        "When present, indicates that modifications should not be persisted.",
                    )],
                    None,
                );
            }
            paths.insert(path, item_ops);
        }
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v{}.{}.0", discovery::KUBERNETES_VERSION.0, discovery::KUBERNETES_VERSION.1)},
        "paths": paths,
        "components": {"schemas": {}},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_group_version_has_a_document_listing_field_validation() {
        let root = root();
        for path in ["api/v1", "apis/apps/v1", "apis/infera.amd.com/v1alpha1"] {
            let url = root["paths"][path]["serverRelativeURL"]
                .as_str()
                .unwrap_or_default();
            assert!(
                url.starts_with(&format!("/openapi/v3/{path}?hash=")),
                "{url}"
            );
            let doc = document(path).unwrap_or_else(|| panic!("no document for {path}"));
            let patches: Vec<&Value> = doc["paths"]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(_, p)| p.get("patch"))
                .collect();
            assert!(!patches.is_empty(), "{path}");
            for p in patches {
                assert!(
                    p["parameters"]
                        .as_array()
                        .is_some_and(|ps| ps.iter().any(|q| q["name"] == "fieldValidation")),
                    "{path}"
                );
            }
        }
        let deploy = &document("apis/apps/v1").unwrap_or(&Value::Null)["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
            ["patch"];
        assert_eq!(
            deploy["x-kubernetes-group-version-kind"],
            json!({"group": "apps", "version": "v1", "kind": "Deployment"})
        );
        assert!(document("apis/nope/v1").is_none());
    }
}
