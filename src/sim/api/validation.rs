//! The API server's validation (`422 Invalid`), for the rules a client of
//! Deployments, ReplicaSets and Pods most often trips: replica counts, the
//! selector (required, non-empty, matching the template's labels, immutable),
//! and containers. Messages read like upstream's `field.ErrorList`.
//!
//! Simplification: only these rules; everything else a real API server
//! rejects (resource quantities, probe fields, name lengths of labels, ...)
//! is stored as sent. `matchExpressions` are checked against the template
//! labels too, operators `In`, `NotIn`, `Exists`, `DoesNotExist`.

use serde_json::Value;

use crate::sim::store::Kind;

fn go_map(v: Option<&Value>) -> String {
    let entries: Vec<String> = v
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k:?}:{:?}", v.as_str().unwrap_or_default()))
        .collect();
    format!("map[string]string{{{}}}", entries.join(", "))
}

fn selector_matches(selector: &Value, labels: Option<&Value>) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let match_labels = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| get(k) == v.as_str());
    let expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|e| {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            match e.get("operator").and_then(Value::as_str) {
                Some("In") => get(key).is_some_and(|v| values.contains(&v)),
                Some("NotIn") => get(key).is_none_or(|v| !values.contains(&v)),
                Some("Exists") => get(key).is_some(),
                Some("DoesNotExist") => get(key).is_none(),
                _ => false,
            }
        });
    match_labels && expressions
}

fn selector_empty(selector: &Value) -> bool {
    let empty = |k: &str| {
        selector.get(k).is_none_or(|v| {
            v.as_object().is_some_and(|m| m.is_empty())
                || v.as_array().is_some_and(|a| a.is_empty())
                || v.is_null()
        })
    };
    empty("matchLabels") && empty("matchExpressions")
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
        Kind::Deployment | Kind::ReplicaSet => {
            let spec = obj.get("spec");
            if let Some(r) = spec.and_then(|s| s.get("replicas")).and_then(Value::as_i64)
                && r < 0
            {
                errors.push(format!(
                    "spec.replicas: Invalid value: {r}: must be greater than or equal to 0"
                ));
            }
            let what = if kind == Kind::Deployment {
                "deployment"
            } else {
                "replicaset"
            };
            match spec
                .and_then(|s| s.get("selector"))
                .filter(|s| !s.is_null())
            {
                None => errors.push("spec.selector: Required value".into()),
                Some(sel) if selector_empty(sel) => errors.push(format!(
                    "spec.selector: Invalid value: {sel}: empty selector is invalid for {what}"
                )),
                Some(sel) => {
                    let labels = obj.pointer("/spec/template/metadata/labels");
                    if !selector_matches(sel, labels) {
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
                }
            }
            containers(
                obj.pointer("/spec/template/spec"),
                "spec.template.spec",
                &mut errors,
            );
        }
        Kind::Pod => containers(obj.get("spec"), "spec", &mut errors),
        _ => {}
    }
    errors
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
}
