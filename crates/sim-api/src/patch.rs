//! The patch types the API server accepts: JSON merge patch (RFC 7386),
//! JSON patch (RFC 6902) and strategic merge patch.
//!
//! Strategic merge patch is implemented for the fields kubectl and infera
//! patch: maps merge recursively, lists of the known merge keys
//! (`containers`/`env`/`volumes`/... by `name`, `ports` by `containerPort`,
//! `volumeMounts` by `mountPath`, `conditions` by `type`, `ownerReferences`
//! by `uid`) merge item by item, other lists are replaced. The directives
//! `$patch: replace|delete|merge`, `$retainKeys`, `$setElementOrder/<list>`
//! and `$deleteFromPrimitiveList/<list>` are honoured.

use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Merge,
    Json,
    Strategic,
    Apply,
}

impl PatchType {
    pub fn from_content_type(ct: &str) -> Option<PatchType> {
        let base = ct.split(';').next().unwrap_or("").trim();
        match base {
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/json-patch+json" => Some(PatchType::Json),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => {
                Some(PatchType::Apply)
            }
            _ => None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    #[error("the patch is not valid JSON: {0}")]
    Decode(String),
    #[error("{0}")]
    Apply(String),
}

/// Apply `patch` (raw body) of type `kind` to `doc`.
pub fn apply(doc: &mut Value, patch_type: PatchType, body: &[u8]) -> Result<(), PatchError> {
    match patch_type {
        PatchType::Merge => {
            let patch: Value =
                serde_json::from_slice(body).map_err(|e| PatchError::Decode(e.to_string()))?;
            json_patch::merge(doc, &patch);
            Ok(())
        }
        PatchType::Json => {
            let patch: json_patch::Patch =
                serde_json::from_slice(body).map_err(|e| PatchError::Decode(e.to_string()))?;
            json_patch::patch(doc, &patch).map_err(|e| PatchError::Apply(e.to_string()))
        }
        PatchType::Strategic => {
            let patch: Value =
                serde_json::from_slice(body).map_err(|e| PatchError::Decode(e.to_string()))?;
            strategic_merge(doc, &patch, &[]);
            Ok(())
        }
        PatchType::Apply => {
            // Server-side apply, simplified: the applied configuration is
            // strategically merged over the live object (no field ownership).
            let text = std::str::from_utf8(body).map_err(|e| PatchError::Decode(e.to_string()))?;
            let patch: Value =
                serde_saphyr::from_str(text).map_err(|e| PatchError::Decode(e.to_string()))?;
            strategic_merge(doc, &patch, &[]);
            Ok(())
        }
    }
}

/// The merge key of a list field, by the field's name (and, for `ports`,
/// where it is). `None`: the list is atomic and a patch replaces it.
fn merge_key(field: &str, parent_path: &[String]) -> Option<&'static str> {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims"
        | "volumeDevices" => Some(match field {
            "volumeDevices" => "devicePath",
            _ => "name",
        }),
        "volumeMounts" => Some("mountPath"),
        "ports" => {
            // Container ports merge by containerPort; Service ports by port.
            if parent_path
                .iter()
                .any(|p| p == "containers" || p == "initContainers")
            {
                Some("containerPort")
            } else {
                Some("port")
            }
        }
        "conditions" => Some("type"),
        "ownerReferences" => Some("uid"),
        "hostAliases" => Some("ip"),
        "topologySpreadConstraints" => Some("topologyKey"),
        _ => None,
    }
}

/// Lists of scalars merged as sets (strategy `merge` without a key).
fn is_primitive_merge_list(field: &str) -> bool {
    field == "finalizers"
}

fn strategic_merge(doc: &mut Value, patch: &Value, path: &[String]) {
    let Value::Object(patch_map) = patch else {
        *doc = patch.clone();
        return;
    };
    if patch_map.get("$patch").and_then(Value::as_str) == Some("replace") {
        let mut replacement = patch_map.clone();
        replacement.remove("$patch");
        *doc = Value::Object(strip_directives(replacement));
        return;
    }
    if patch_map.get("$patch").and_then(Value::as_str) == Some("delete") {
        *doc = Value::Object(Map::new());
        return;
    }
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    let Some(doc_map) = doc.as_object_mut() else {
        return;
    };
    for (key, value) in patch_map {
        if key == "$patch" || key == "$retainKeys" || key.starts_with("$setElementOrder/") {
            continue;
        }
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Value::Array(remove)) =
                (doc_map.get_mut(field), value)
            {
                list.retain(|v| !remove.contains(v));
            }
            continue;
        }
        if value.is_null() {
            doc_map.remove(key);
            continue;
        }
        let mut child_path = path.to_vec();
        child_path.push(key.clone());
        match value {
            Value::Object(_) => {
                let entry = doc_map.entry(key.clone()).or_insert(Value::Null);
                strategic_merge(entry, value, &child_path);
            }
            Value::Array(items) => {
                if let Some(merge_key) = merge_key(key, path) {
                    let entry = doc_map
                        .entry(key.clone())
                        .or_insert_with(|| Value::Array(Vec::new()));
                    merge_list(entry, items, merge_key, &child_path);
                    if let Some(Value::Array(order)) =
                        patch_map.get(&format!("$setElementOrder/{key}"))
                    {
                        reorder(entry, order, merge_key);
                    }
                } else if is_primitive_merge_list(key) {
                    let entry = doc_map
                        .entry(key.clone())
                        .or_insert_with(|| Value::Array(Vec::new()));
                    if let Value::Array(list) = entry {
                        for item in items {
                            if !list.contains(item) {
                                list.push(item.clone());
                            }
                        }
                    }
                } else {
                    doc_map.insert(
                        key.clone(),
                        Value::Array(items.iter().cloned().map(strip_value).collect()),
                    );
                }
            }
            scalar => {
                doc_map.insert(key.clone(), scalar.clone());
            }
        }
    }
    if let Some(Value::Array(retain)) = patch_map.get("$retainKeys") {
        let keep: Vec<&str> = retain.iter().filter_map(Value::as_str).collect();
        doc_map.retain(|k, _| keep.contains(&k.as_str()));
    }
}

fn merge_list(doc: &mut Value, items: &[Value], merge_key: &str, path: &[String]) {
    if items
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        let kept = items
            .iter()
            .filter(|i| i.get("$patch").is_none())
            .cloned()
            .map(strip_value)
            .collect();
        *doc = Value::Array(kept);
        return;
    }
    if !doc.is_array() {
        *doc = Value::Array(Vec::new());
    }
    let Some(list) = doc.as_array_mut() else {
        return;
    };
    for item in items {
        let Some(key_value) = item.get(merge_key) else {
            // Without its merge key an item cannot be matched: append it.
            list.push(strip_value(item.clone()));
            continue;
        };
        let position = list
            .iter()
            .position(|e| e.get(merge_key) == Some(key_value));
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (position, delete) {
            (Some(i), true) => {
                list.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => {
                if let Some(existing) = list.get_mut(i) {
                    strategic_merge(existing, item, path);
                }
            }
            (None, false) => {
                let mut fresh = Value::Object(Map::new());
                strategic_merge(&mut fresh, item, path);
                list.push(fresh);
            }
        }
    }
}

/// Order merged items as `$setElementOrder` lists them; others keep their
/// relative order after those.
fn reorder(doc: &mut Value, order: &[Value], merge_key: &str) {
    let Value::Array(list) = doc else { return };
    let rank = |item: &Value| {
        let key = item.get(merge_key);
        order
            .iter()
            .position(|o| o.get(merge_key).is_some() && o.get(merge_key) == key)
            .unwrap_or(usize::MAX)
    };
    list.sort_by_key(rank);
}

fn strip_directives(map: Map<String, Value>) -> Map<String, Value> {
    map.into_iter()
        .filter(|(k, _)| !k.starts_with('$'))
        .map(|(k, v)| (k, strip_value(v)))
        .collect()
}

fn strip_value(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(strip_directives(m)),
        Value::Array(a) => Value::Array(a.into_iter().map(strip_value).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn smp(doc: Value, patch: Value) -> Value {
        let mut doc = doc;
        apply(&mut doc, PatchType::Strategic, patch.to_string().as_bytes()).unwrap();
        doc
    }

    #[test]
    fn containers_and_env_merge_by_name() {
        let doc = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
            {"name": "b", "image": "b:1"}
        ]}}}});
        let out = smp(
            doc,
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "b", "image": "b:2"},
                {"name": "a", "env": [{"name": "Y", "value": "3"}, {"name": "X", "$patch": "delete"}]}
            ]}}}}),
        );
        let containers = &out["spec"]["template"]["spec"]["containers"];
        assert_eq!(containers[0]["image"], "a:1");
        assert_eq!(containers[0]["env"], json!([{"name": "Y", "value": "3"}]));
        assert_eq!(containers[1]["image"], "b:2");
    }

    #[test]
    fn annotations_null_deletes_and_retain_keys() {
        let doc = json!({"metadata": {"annotations": {"a": "1", "b": "2"}},
                         "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
        let out = smp(
            doc,
            json!({"metadata": {"annotations": {"a": null, "c": "3"}},
                                   "spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        );
        assert_eq!(out["metadata"]["annotations"], json!({"b": "2", "c": "3"}));
        assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn atomic_lists_replace_and_element_order() {
        let doc =
            json!({"spec": {"containers": [{"name": "a", "args": ["x", "y"]}, {"name": "b"}]}});
        let out = smp(
            doc,
            json!({"spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
            "containers": [{"name": "a", "args": ["z"]}]}}),
        );
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "b"}, {"name": "a", "args": ["z"]}])
        );
    }

    #[test]
    fn merge_and_json_patch() {
        let mut doc = json!({"spec": {"replicas": 1, "paused": false}});
        apply(&mut doc, PatchType::Merge, br#"{"spec":{"paused":true}}"#).unwrap();
        apply(
            &mut doc,
            PatchType::Json,
            br#"[{"op":"replace","path":"/spec/replicas","value":3}]"#,
        )
        .unwrap();
        assert_eq!(doc, json!({"spec": {"replicas": 3, "paused": true}}));
        assert!(
            apply(
                &mut doc,
                PatchType::Json,
                br#"[{"op":"remove","path":"/nope"}]"#
            )
            .is_err()
        );
    }
}
