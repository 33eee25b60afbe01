//! The API server's validation (`422 Invalid`), for the rules a client of
//! Deployments, ReplicaSets and Pods most often trips: replica counts, the
//! selector (required, non-empty, matching the template's labels, immutable),
//! and containers. Messages read like upstream's `field.ErrorList`.
//!
//! Simplification: only these rules; everything else a real API server
//! rejects (resource quantities, probe fields, name lengths of labels, ...)
//! is stored as sent. `matchExpressions` are checked against the template
//! labels too, operators `In`, `NotIn`, `Exists`, `DoesNotExist`.
//!
//! [`decode`] is the API server's decoding step for the built-in kinds:
//! a field of the wrong type is `400 BadRequest` ("cannot be handled as a
//! Deployment"), and fields the type does not have are reported for
//! `fieldValidation` (`Strict`: 400, `Warn`: a `Warning` header) and
//! otherwise dropped ([`prune`]), as decoding into Go types drops them. It
//! decodes into the k8s-openapi types and looks for what did not survive.
//! Custom resources are not checked (their schemas are not modelled).

use infera_model::selector::{label_selector_is_empty, label_selector_matches_with};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use infera_sim_core::kind::Kind;

/// How a write's unknown fields are treated (`fieldValidation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl FieldValidation {
    /// The query parameter's value; absent means `Warn`, as upstream.
    pub fn parse(value: Option<&str>) -> Result<FieldValidation, String> {
        match value {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some(other) => Err(format!(
                "fieldValidation: Unsupported value: {other:?}: supported values: \"Ignore\", \"Warn\", \"Strict\""
            )),
        }
    }
}

fn roundtrip<T: DeserializeOwned + Serialize>(obj: &Value) -> Result<Option<Value>, String> {
    match serde_path_to_error::deserialize::<_, T>(obj) {
        Ok(typed) => Ok(serde_json::to_value(&typed).ok()),
        // Go decodes an absent required field as its zero value and leaves
        // it to validation; the typed decode cannot, so it checks nothing.
        Err(e) if e.inner().to_string().starts_with("missing field") => Ok(None),
        Err(e) => {
            let path = e.path().to_string();
            Err(if path == "." || path.is_empty() {
                e.inner().to_string()
            } else {
                format!("{path}: {}", e.inner())
            })
        }
    }
}

fn collect_unknown(orig: &Value, typed: &Value, path: &str, out: &mut Vec<String>) {
    match (orig, typed) {
        (Value::Object(o), Value::Object(t)) => {
            for (k, v) in o {
                if v.is_null() {
                    continue;
                }
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match t.get(k) {
                    None => out.push(p),
                    Some(tv) => collect_unknown(v, tv, &p, out),
                }
            }
        }
        (Value::Array(o), Value::Array(t)) => {
            for (i, (v, tv)) in o.iter().zip(t).enumerate() {
                collect_unknown(v, tv, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Decode `obj` as the API server would: `Err` (a type error, as upstream's
/// `cannot be handled as a Kind: ...` message) or the paths of the fields
/// the kind does not have (`spec.template.spec.containers[0].imagee`).
pub fn decode(kind: Kind, obj: &Value) -> Result<Vec<String>, String> {
    let typed = typed(kind, obj).map_err(|e| {
        format!(
            "{} in version {:?} cannot be handled as a {}: {e}",
            kind.kind(),
            kind.version(),
            kind.kind()
        )
    })?;
    let mut unknown = Vec::new();
    if let Some(typed) = typed {
        collect_unknown(obj, &typed, "", &mut unknown);
    }
    Ok(unknown)
}

fn remove_unknown(orig: &mut Value, typed: &Value) {
    match (orig, typed) {
        (Value::Object(o), Value::Object(t)) => {
            o.retain(|k, v| v.is_null() || t.contains_key(k));
            for (k, v) in o.iter_mut() {
                if let Some(tv) = t.get(k) {
                    remove_unknown(v, tv);
                }
            }
        }
        (Value::Array(o), Value::Array(t)) => {
            for (v, tv) in o.iter_mut().zip(t) {
                remove_unknown(v, tv);
            }
        }
        _ => {}
    }
}

/// The k8s-openapi round trip of `obj` as `kind` (`Ok(None)`: not checked).
fn typed(kind: Kind, obj: &Value) -> Result<Option<Value>, String> {
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
    use k8s_openapi::api::core::v1::{Event, Namespace, Node, Pod, Service};
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    let mut probe = obj.clone();
    if let Some(map) = probe.as_object_mut() {
        map.insert("apiVersion".into(), Value::from(kind.api_version()));
        map.insert("kind".into(), Value::from(kind.kind()));
    }
    match kind {
        Kind::Pod => roundtrip::<Pod>(&probe),
        Kind::Node => roundtrip::<Node>(&probe),
        Kind::Service => roundtrip::<Service>(&probe),
        Kind::Namespace => roundtrip::<Namespace>(&probe),
        Kind::Event => roundtrip::<Event>(&probe),
        Kind::Deployment => roundtrip::<Deployment>(&probe),
        Kind::ReplicaSet => roundtrip::<ReplicaSet>(&probe),
        Kind::StatefulSet => roundtrip::<StatefulSet>(&probe),
        Kind::PodDisruptionBudget => roundtrip::<PodDisruptionBudget>(&probe),
        Kind::InferaDeployment | Kind::LeaderWorkerSet => Ok(None),
    }
}

/// Drop the fields `decode` reports unknown, as decoding into upstream's
/// Go types does when `fieldValidation` is not `Strict`.
pub fn prune(kind: Kind, obj: &mut Value) {
    if let Ok(Some(typed)) = typed(kind, obj) {
        remove_unknown(obj, &typed);
    }
}

/// `strict decoding error: unknown field "a", unknown field "b"`.
pub fn strict_message(unknown: &[String]) -> String {
    let fields: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field {f:?}"))
        .collect();
    format!("strict decoding error: {}", fields.join(", "))
}

fn go_map(v: Option<&Value>) -> String {
    let entries: Vec<String> = v
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k:?}:{:?}", v.as_str().unwrap_or_default()))
        .collect();
    format!("map[string]string{{{}}}", entries.join(", "))
}

/// A workload's selector: not empty, matching the template's labels
/// (the model's [`label_selector_matches_with`]), unchanged.
fn check_selector(sel: &Value, obj: &Value, old: Option<&Value>, what: &str) -> Vec<String> {
    // Decoding has already refused any other shape; a failure reads as empty.
    let selector: LabelSelector = serde_json::from_value(sel.clone()).unwrap_or_default();
    if label_selector_is_empty(&selector) {
        return vec![format!(
            "spec.selector: Invalid value: {sel}: empty selector is invalid for {what}"
        )];
    }
    let mut errors = Vec::new();
    let labels = obj.pointer("/spec/template/metadata/labels");
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    if !label_selector_matches_with(&selector, get) {
        errors.push(format!(
            "spec.template.metadata.labels: Invalid value: {}: `selector` does not match template `labels`",
            go_map(labels)
        ));
    }
    if let Some(old_sel) = old.and_then(|o| o.pointer("/spec/selector"))
        && old_sel != sel
    {
        errors.push(format!(
            "spec.selector: Invalid value: {sel}: field is immutable"
        ));
    }
    errors
}

fn containers(spec: Option<&Value>, path: &str, errors: &mut Vec<String>) {
    let list = spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array);
    match list {
        None => errors.push(format!("{path}.containers: Required value")),
        Some(list) if list.is_empty() => errors.push(format!("{path}.containers: Required value")),
        Some(list) => {
            for (i, c) in list.iter().enumerate() {
                if c.get("name")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    errors.push(format!("{path}.containers[{i}].name: Required value"));
                }
                if c.get("image")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    errors.push(format!("{path}.containers[{i}].image: Required value"));
                }
            }
        }
    }
}

/// The validation errors of `obj` (being created, or replacing `old`), in
/// upstream's `field: Invalid value: ...: why` form; empty when valid.
pub fn errors(kind: Kind, obj: &Value, old: Option<&Value>) -> Vec<String> {
    let mut errors = Vec::new();
    match kind {
        Kind::Deployment | Kind::ReplicaSet | Kind::StatefulSet => {
            let spec = obj.get("spec");
            if let Some(r) = spec.and_then(|s| s.get("replicas")).and_then(Value::as_i64)
                && r < 0
            {
                errors.push(format!(
                    "spec.replicas: Invalid value: {r}: must be greater than or equal to 0"
                ));
            }
            let what = match kind {
                Kind::Deployment => "deployment",
                Kind::StatefulSet => "statefulset",
                _ => "replicaset",
            };
            match spec
                .and_then(|s| s.get("selector"))
                .filter(|s| !s.is_null())
            {
                None => errors.push("spec.selector: Required value".into()),
                Some(sel) => errors.extend(check_selector(sel, obj, old, what)),
            }
            containers(
                obj.pointer("/spec/template/spec"),
                "spec.template.spec",
                &mut errors,
            );
        }
        Kind::Pod => containers(obj.get("spec"), "spec", &mut errors),
        Kind::PodDisruptionBudget => pdb_spec(obj, &mut errors),
        _ => {}
    }
    errors
}

/// Two of upstream's `ValidatePodDisruptionBudgetSpec` checks
/// (pkg/apis/policy/validation/validation.go): not both minAvailable and
/// maxUnavailable, and a known unhealthyPodEvictionPolicy.
fn pdb_spec(obj: &Value, errors: &mut Vec<String>) {
    let spec = obj.get("spec");
    let set = |k: &str| spec.and_then(|s| s.get(k)).is_some_and(|v| !v.is_null());
    if set("minAvailable") && set("maxUnavailable") {
        errors.push(
            "spec: Invalid value: \"object\": minAvailable and maxUnavailable cannot be both set"
                .into(),
        );
    }
    if let Some(policy) = spec
        .and_then(|s| s.get("unhealthyPodEvictionPolicy"))
        .and_then(Value::as_str)
        && !matches!(policy, "AlwaysAllow" | "IfHealthyBudget")
    {
        errors.push(format!(
            "spec.unhealthyPodEvictionPolicy: Unsupported value: {policy:?}: supported values: \"AlwaysAllow\", \"IfHealthyBudget\""
        ));
    }
}

/// `errors` joined as upstream joins a `field.ErrorList` in a message.
pub fn message(errors: &[String]) -> Option<String> {
    match errors {
        [] => None,
        [one] => Some(one.clone()),
        many => Some(format!("[{}]", many.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deploy(replicas: i64, selector: Value, labels: Value) -> Value {
        json!({"spec": {"replicas": replicas, "selector": selector,
            "template": {"metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    }

    #[test]
    fn deployment_rules() {
        let ok = deploy(
            1,
            json!({"matchLabels": {"app": "a"}}),
            json!({"app": "a", "x": "y"}),
        );
        assert!(errors(Kind::Deployment, &ok, None).is_empty());
        let neg = deploy(
            -1,
            json!({"matchLabels": {"app": "a"}}),
            json!({"app": "a"}),
        );
        assert_eq!(
            errors(Kind::Deployment, &neg, None),
            ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]
        );
        let mismatch = deploy(1, json!({"matchLabels": {"app": "a"}}), json!({"app": "b"}));
        assert_eq!(
            message(&errors(Kind::Deployment, &mismatch, None)).unwrap_or_default(),
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"b\"}: `selector` does not match template `labels`"
        );
        let moved = deploy(1, json!({"matchLabels": {"app": "b"}}), json!({"app": "b"}));
        assert!(errors(Kind::Deployment, &moved, Some(&ok))[0].ends_with("field is immutable"));
        let expr = deploy(
            1,
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]}),
            json!({"app": "b"}),
        );
        assert!(errors(Kind::Deployment, &expr, None).is_empty());
        let empty = deploy(1, json!({}), json!({"app": "a"}));
        assert_eq!(errors(Kind::Deployment, &empty, None).len(), 1);
        assert_eq!(
            errors(Kind::Pod, &json!({"spec": {"containers": []}}), None),
            ["spec.containers: Required value"]
        );
    }

    #[test]
    fn decoding_finds_unknown_fields_and_type_errors() {
        let d = json!({"metadata": {"name": "d", "creationTimestamp": null, "labels": {"a": "b"}},
            "spec": {"replicass": 2, "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [
                    {"name": "c", "imagee": "x", "resources": {"limits": {"cpu": 1}}}]}}}});
        assert_eq!(
            decode(Kind::Deployment, &d),
            Ok(vec![
                "spec.replicass".to_string(),
                "spec.template.spec.containers[0].imagee".to_string()
            ])
        );
        let bad = json!({"metadata": {"name": "d"}, "spec": {"replicas": "3",
            "selector": {}, "template": {}}});
        let err = decode(Kind::Deployment, &bad).unwrap_err();
        assert!(
            err.starts_with("Deployment in version \"v1\" cannot be handled as a Deployment: spec.replicas: invalid type"),
            "{err}"
        );
        let mut pruned = d.clone();
        prune(Kind::Deployment, &mut pruned);
        assert_eq!(decode(Kind::Deployment, &pruned), Ok(vec![]));
        assert!(pruned.pointer("/spec/replicass").is_none());
        assert_eq!(
            pruned.pointer("/metadata/creationTimestamp"),
            Some(&Value::Null)
        );
        assert_eq!(
            pruned.pointer("/spec/template/spec/containers/0/name"),
            Some(&json!("c"))
        );
        assert_eq!(
            decode(Kind::InferaDeployment, &json!({"spec": {"x": 1}})),
            Ok(vec![])
        );
        assert_eq!(
            strict_message(&["spec.a".into(), "b".into()]),
            "strict decoding error: unknown field \"spec.a\", unknown field \"b\""
        );
    }
}
