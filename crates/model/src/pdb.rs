//! PodDisruptionBudget arithmetic, in one place for the linter's rules, the
//! drain plan and the simulated disruption controller: which pods a budget
//! selects, how many must stay healthy, and how many disruptions it allows.
//!
//! Upstream: k8s.io/kubernetes@v1.37.2 pkg/controller/disruption/disruption.go
//! (`getPodsForPdb`, `getExpectedPodCount`, `updatePdbStatus`).

use std::collections::BTreeMap;

use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;

use crate::rolling::scaled_value;
use crate::selector::label_selector_matches;

/// Whether the budget selects a pod with these labels. policy/v1: a missing
/// selector selects nothing, an empty one every pod of the namespace
/// (`metav1.LabelSelectorAsSelector`).
pub fn selects(spec: &PodDisruptionBudgetSpec, labels: &BTreeMap<String, String>) -> bool {
    spec.selector
        .as_ref()
        .is_some_and(|selector| label_selector_matches(selector, labels))
}

/// What the disruption controller needs: `expected` is the scale of the
/// selected pods' controllers, `matched` the number of pods selected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scale {
    pub expected: i32,
    pub matched: i32,
}

/// (expectedPods, desiredHealthy) as `getExpectedPodCount` computes them:
/// maxUnavailable and a percentage minAvailable scale the controllers'
/// replicas (rounded up); an integer minAvailable counts the matched pods.
/// Neither field set: upstream computes neither count (both 0), so such a
/// budget allows no disruption (`updatePdbStatus` needs expectedPods > 0).
pub fn expected_and_desired(spec: &PodDisruptionBudgetSpec, scale: Scale) -> (i32, i32) {
    let expected = i64::from(scale.expected);
    if let Some(max_unavailable) = &spec.max_unavailable {
        let unavailable = scaled_value(max_unavailable, expected, true);
        return (scale.expected, clamp(expected - unavailable));
    }
    match &spec.min_available {
        Some(min @ k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(_)) => (
            scale.matched,
            clamp(scaled_value(min, i64::from(scale.matched), true)),
        ),
        Some(min) => (scale.expected, clamp(scaled_value(min, expected, true))),
        None => (0, 0),
    }
}

/// `status.disruptionsAllowed` (`updatePdbStatus`): healthy pods above the
/// desired count, and 0 while the budget expects no pod.
pub fn disruptions_allowed(current_healthy: i32, expected: i32, desired_healthy: i32) -> i32 {
    if expected <= 0 {
        return 0;
    }
    (current_healthy - desired_healthy).max(0)
}

/// A budget that allows no disruption even with every one of `replicas`
/// pods healthy (minAvailable ≥ replicas, maxUnavailable 0 or 0 %, or
/// neither field set): every
/// eviction of a selected pod is refused for as long as the spec stands.
pub fn never_allows(spec: &PodDisruptionBudgetSpec, replicas: i32) -> bool {
    let scale = Scale {
        expected: replicas,
        matched: replicas,
    };
    let (expected, desired) = expected_and_desired(spec, scale);
    replicas > 0 && disruptions_allowed(replicas, expected, desired) == 0
}

/// A PodDisruptionBudget as the linter and the drain plan read it: where it
/// lives and what it says.
#[derive(Debug, Clone)]
pub struct Budget {
    pub namespace: String,
    pub name: String,
    pub spec: PodDisruptionBudgetSpec,
}

/// A `policy/v1` PodDisruptionBudget read from a wire-form object (a
/// manifest document or a live one); None for any other object or a spec
/// that does not parse.
pub fn read_budget(obj: &serde_json::Value) -> Option<Budget> {
    if obj.get("kind")?.as_str()? != "PodDisruptionBudget" {
        return None;
    }
    let spec = serde_json::from_value(obj.get("spec")?.clone()).ok()?;
    let text = |p: &str| {
        obj.pointer(p)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    Some(Budget {
        namespace: text("/metadata/namespace"),
        name: text("/metadata/name"),
        spec,
    })
}

/// The budgets of `namespace` that select a pod with these labels.
pub fn covering<'b>(
    budgets: impl IntoIterator<Item = &'b Budget>,
    namespace: &str,
    labels: &BTreeMap<String, String>,
) -> impl Iterator<Item = &'b Budget> {
    budgets
        .into_iter()
        .filter(move |b| b.namespace == namespace && selects(&b.spec, labels))
}

/// A serving workload of one replica that no budget covers: a drain, a
/// consolidation or a node-pool upgrade evicts its only pod at once, and
/// nothing serves until the replacement has loaded its weights. Only
/// meaningful where `budgets` is every budget of the namespace (a live
/// list, the drain plan), never on manifests that may omit some.
pub fn unprotected_single_replica<'b>(
    replicas: i32,
    budgets: impl IntoIterator<Item = &'b Budget>,
    namespace: &str,
    labels: &BTreeMap<String, String>,
) -> bool {
    replicas == 1 && covering(budgets, namespace, labels).next().is_none()
}

fn clamp(value: i64) -> i32 {
    i32::try_from(value.max(0)).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn spec(min: Option<IntOrString>, max: Option<IntOrString>) -> PodDisruptionBudgetSpec {
        PodDisruptionBudgetSpec {
            min_available: min,
            max_unavailable: max,
            selector: Some(LabelSelector::default()),
            ..Default::default()
        }
    }

    fn int(n: i32) -> Option<IntOrString> {
        Some(IntOrString::Int(n))
    }

    fn pct(text: &str) -> Option<IntOrString> {
        Some(IntOrString::String(text.into()))
    }

    #[test]
    fn upstream_budget_table() {
        // (minAvailable, maxUnavailable, replicas, healthy) -> (desired, allowed, never)
        let cases = [
            (int(1), None, 1, 1, (1, 0, true)),
            (int(1), None, 2, 2, (1, 1, false)),
            (int(2), None, 2, 1, (2, 0, true)),
            (pct("50%"), None, 3, 3, (2, 1, false)),
            (pct("100%"), None, 4, 4, (4, 0, true)),
            (None, int(0), 3, 3, (3, 0, true)),
            (None, pct("0%"), 3, 3, (3, 0, true)),
            (None, int(1), 1, 1, (0, 1, false)),
            (None, pct("10%"), 3, 3, (2, 1, false)),
            (None, int(5), 2, 2, (0, 2, false)),
            (None, None, 2, 2, (0, 0, true)),
        ];
        for (min, max, replicas, healthy, want) in cases {
            let spec = spec(min.clone(), max.clone());
            let scale = Scale {
                expected: replicas,
                matched: replicas,
            };
            let (expected, desired) = expected_and_desired(&spec, scale);
            let got = (
                desired,
                disruptions_allowed(healthy, expected, desired),
                never_allows(&spec, replicas),
            );
            assert_eq!(got, want, "min {min:?} max {max:?} replicas {replicas}");
        }
    }

    #[test]
    fn an_integer_min_available_counts_the_matched_pods() {
        let spec = spec(int(2), None);
        let scale = Scale {
            expected: 4,
            matched: 3,
        };
        assert_eq!(expected_and_desired(&spec, scale), (3, 2));
        assert_eq!(disruptions_allowed(3, 3, 2), 1);
        assert_eq!(
            disruptions_allowed(3, 0, 0),
            0,
            "no expected pod: nothing allowed"
        );
    }

    #[test]
    fn budgets_read_from_objects_cover_their_namespace_only() {
        let obj = serde_json::json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "llm", "namespace": "prod"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "llm"}}}
        });
        let budget = read_budget(&obj).unwrap();
        assert_eq!(
            (budget.namespace.as_str(), budget.name.as_str()),
            ("prod", "llm")
        );
        assert!(never_allows(&budget.spec, 1));
        let labels = BTreeMap::from([("app".to_string(), "llm".to_string())]);
        let budgets = [budget];
        assert_eq!(covering(&budgets, "prod", &labels).count(), 1);
        assert_eq!(covering(&budgets, "dev", &labels).count(), 0);
        assert!(!unprotected_single_replica(1, &budgets, "prod", &labels));
        assert!(unprotected_single_replica(1, &budgets, "dev", &labels));
        assert!(!unprotected_single_replica(2, &budgets, "dev", &labels));
        assert!(read_budget(&serde_json::json!({"kind": "Deployment", "spec": {}})).is_none());
    }

    #[test]
    fn a_missing_selector_selects_nothing_and_an_empty_one_everything() {
        let labels = BTreeMap::from([("app".to_string(), "llm".to_string())]);
        let mut spec = spec(int(1), None);
        assert!(selects(&spec, &labels));
        spec.selector = None;
        assert!(!selects(&spec, &labels));
    }
}
