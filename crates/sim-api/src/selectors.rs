//! Label and field selectors, parsed as upstream's `labels.Parse` (the
//! model's [`Selector`]) and `fields.ParseSelector` accept them. Field
//! selectors are limited to the field labels upstream registers for each
//! kind ([`supported_field`]).

use infera_model::selector::{Selector, SelectorError};
use serde_json::Value;

use infera_sim_core::kind::Kind;

/// Whether upstream serves `label` as a field selector for `kind` (its
/// registry's `GetAttrs` / `AddFieldLabelConversionFunc` lists). Anything
/// else is `400 field label not supported`.
pub fn supported_field(kind: Kind, label: &str) -> bool {
    let common = match label {
        "metadata.name" => true,
        "metadata.namespace" => kind.namespaced(),
        _ => false,
    };
    common
        || match kind {
            Kind::Pod => matches!(
                label,
                "spec.nodeName"
                    | "spec.restartPolicy"
                    | "spec.schedulerName"
                    | "spec.serviceAccountName"
                    | "spec.hostNetwork"
                    | "status.phase"
                    | "status.podIP"
                    | "status.podIPs"
                    | "status.nominatedNodeName"
            ),
            Kind::Node => label == "spec.unschedulable",
            Kind::Namespace => label == "status.phase",
            Kind::ReplicaSet => label == "status.replicas",
            Kind::Event => matches!(
                label,
                "involvedObject.kind"
                    | "involvedObject.namespace"
                    | "involvedObject.name"
                    | "involvedObject.uid"
                    | "involvedObject.apiVersion"
                    | "involvedObject.resourceVersion"
                    | "involvedObject.fieldPath"
                    | "reason"
                    | "reportingComponent"
                    | "source"
                    | "type"
            ),
            Kind::Deployment
            | Kind::Service
            | Kind::StatefulSet
            | Kind::InferaDeployment
            | Kind::LeaderWorkerSet
            | Kind::PodDisruptionBudget => false,
        }
}

/// Split on commas that are not inside parentheses.
fn split_terms(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect()
}

/// A request's `labelSelector`, read as upstream's `labels.Parse`
/// ([`Selector`]); the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(Selector);

impl LabelSelector {
    pub fn parse(s: &str) -> Result<LabelSelector, SelectorError> {
        Selector::parse(s).map(LabelSelector)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether an object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
        self.0
            .matches_with(|k| labels.and_then(|l| l.get(k)).and_then(Value::as_str))
    }
}

/// A parsed `fieldSelector` (`=`, `==`, `!=` on dotted paths).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<(Vec<String>, bool, String)>,
}

impl FieldSelector {
    pub fn parse(s: &str) -> Result<FieldSelector, String> {
        let mut terms = Vec::new();
        for term in split_terms(s) {
            let (path, equal, value) = if let Some((k, v)) = term.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = term.split_once("==") {
                (k, true, v)
            } else if let Some((k, v)) = term.split_once('=') {
                (k, true, v)
            } else {
                return Err(format!(
                    "invalid selector: {term:?}; can't understand {term:?}"
                ));
            };
            let path: Vec<String> = path.trim().split('.').map(str::to_string).collect();
            if path.iter().any(String::is_empty) {
                return Err(format!("field label not supported: {}", path.join(".")));
            }
            terms.push((path, equal, value.trim().to_string()));
        }
        Ok(FieldSelector { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// `Err("field label not supported: X")` for the first label `kind`
    /// does not serve.
    pub fn check_supported(&self, kind: Kind) -> Result<(), String> {
        match self
            .terms
            .iter()
            .map(|(path, _, _)| path.join("."))
            .find(|label| !supported_field(kind, label))
        {
            Some(label) => Err(format!("field label not supported: {label}")),
            None => Ok(()),
        }
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.terms.iter().all(|(path, equal, want)| {
            // An Event's `source` selects on `source.component`.
            let source = [String::from("source"), String::from("component")];
            let path: &[String] = if path.len() == 1 && path[0] == "source" {
                &source
            } else {
                path
            };
            let mut cur = Some(obj);
            for seg in path {
                cur = cur.and_then(|v| v.get(seg));
            }
            // Absent fields compare as "" (as upstream's field sets do).
            let have = match cur {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Number(n)) => n.to_string(),
                Some(other) => other.to_string(),
            };
            (have == *want) == *equal
        })
    }
}

/// Both selectors of a request.
#[derive(Debug, Clone, Default)]
pub struct Selectors {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Selectors {
    pub fn matches(&self, obj: &Value) -> bool {
        self.labels.matches(obj) && self.fields.matches(obj)
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selector_operators() {
        let obj = json!({"metadata": {"labels": {"app": "web", "tier": "a"}}});
        let cases = [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app in (web, db)", true),
            ("app notin (web)", false),
            ("tier", true),
            ("!tier", false),
            ("!missing", true),
            ("app=web,tier in (b,c)", false),
            ("missing notin (x)", true),
        ];
        for (sel, want) in cases {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&obj),
                want,
                "{sel}"
            );
        }
        assert!(LabelSelector::parse("app in web").is_err());
        assert!(LabelSelector::parse("a b").is_err());
    }

    #[test]
    fn field_selector_paths() {
        let obj = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        for (sel, want) in [
            ("metadata.name=p", true),
            ("metadata.namespace==ns,status.phase=Running", true),
            ("spec.nodeName!=n1", false),
            ("spec.nodeName=", false),
            ("status.phase!=Failed", true),
        ] {
            assert_eq!(
                FieldSelector::parse(sel).unwrap().matches(&obj),
                want,
                "{sel}"
            );
        }
        let unscheduled = json!({"spec": {}});
        assert!(
            FieldSelector::parse("spec.nodeName=")
                .unwrap()
                .matches(&unscheduled)
        );
        assert!(FieldSelector::parse("nonsense").is_err());
    }

    #[test]
    fn field_labels_per_kind() {
        let sel = FieldSelector::parse("spec.nodeName=n1,status.phase!=Failed").unwrap();
        assert!(sel.check_supported(Kind::Pod).is_ok());
        assert_eq!(
            sel.check_supported(Kind::Deployment),
            Err("field label not supported: spec.nodeName".to_string())
        );
        let ns = FieldSelector::parse("metadata.namespace=x").unwrap();
        assert!(ns.check_supported(Kind::Deployment).is_ok());
        assert!(ns.check_supported(Kind::Node).is_err());
        let ev = FieldSelector::parse("source=default-scheduler,reason=FailedScheduling").unwrap();
        assert!(ev.check_supported(Kind::Event).is_ok());
        assert!(ev.matches(&json!({"reason": "FailedScheduling",
            "source": {"component": "default-scheduler"}})));
    }
}
