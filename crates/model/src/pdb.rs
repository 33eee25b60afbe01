//! PodDisruptionBudget arithmetic, in one place for the linter's rules, the
//! drain plan and the simulated disruption controller: which pods a budget
//! selects, how many must stay healthy, and how many disruptions it allows.
//!
//! Upstream: k8s.io/kubernetes@v1.37.2 pkg/controller/disruption/disruption.go
//! (`getPodsForPdb`, `getExpectedPodCount`, `updatePdbStatus`).

use std::collections::BTreeMap;

use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;

use crate::rolling::scaled_int_or_percent;
use crate::scheduling::label_selector_matches;

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
        let unavailable = scaled_int_or_percent(max_unavailable, expected, true);
        return (scale.expected, clamp(expected - unavailable));
    }
    match &spec.min_available {
        Some(min @ k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(_)) => (
            scale.matched,
            clamp(scaled_int_or_percent(min, i64::from(scale.matched), true)),
        ),
        Some(min) => (
            scale.expected,
            clamp(scaled_int_or_percent(min, expected, true)),
        ),
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
    fn a_missing_selector_selects_nothing_and_an_empty_one_everything() {
        let labels = BTreeMap::from([("app".to_string(), "llm".to_string())]);
        let mut spec = spec(int(1), None);
        assert!(selects(&spec, &labels));
        spec.selector = None;
        assert!(!selects(&spec, &labels));
    }
}
