//! Upstream Deployment rolling-update arithmetic, in one place for the
//! linter's prediction, the rollout preflight and the simulated Deployment
//! controller (operator-semantics §3): a percentage maxSurge rounds up,
//! maxUnavailable rounds down, and when both come to 0 maxUnavailable
//! becomes 1 (`ResolveFenceposts` in `pkg/controller/deployment/util`).

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

/// Resolve an int-or-percent against `total` (upstream
/// `GetScaledValueFromIntOrPercent`); `default` applies when absent.
pub fn scaled_value(value: Option<&Value>, default: &str, total: i64, round_up: bool) -> i64 {
    let owned;
    let value = match value {
        Some(v) if !v.is_null() => v,
        _ => {
            owned = Value::from(default);
            &owned
        }
    };
    match value.as_i64() {
        Some(n) => n,
        None => scaled_text(value.as_str().unwrap_or("0"), total, round_up),
    }
}

/// [`scaled_value`] for a typed `IntOrString` (PodDisruptionBudget's
/// minAvailable/maxUnavailable, typed rolling-update fields).
pub fn scaled_int_or_percent(value: &IntOrString, total: i64, round_up: bool) -> i64 {
    match value {
        IntOrString::Int(n) => i64::from(*n),
        IntOrString::String(text) => scaled_text(text, total, round_up),
    }
}

/// `"N%"` of `total` (rounded up or down), or a plain integer string.
fn scaled_text(text: &str, total: i64, round_up: bool) -> i64 {
    match text
        .strip_suffix('%')
        .and_then(|p| p.trim().parse::<i64>().ok())
    {
        Some(percent) => {
            let scaled = percent.saturating_mul(total);
            if round_up {
                scaled.div_euclid(100) + i64::from(scaled.rem_euclid(100) != 0)
            } else {
                scaled.div_euclid(100)
            }
        }
        None => text.trim().parse().unwrap_or(0),
    }
}

/// (maxSurge, maxUnavailable) for `desired` replicas, as upstream's
/// `ResolveFenceposts` (apps/v1 defaults 25 % / 25 %): percentages of
/// `desired`, maxSurge rounded up and maxUnavailable down, and both 0 gives
/// maxUnavailable 1 (k8s.io/kubernetes@v1.37.2
/// pkg/controller/deployment/util/deployment_util.go).
pub fn resolve_fenceposts(
    max_surge: Option<&Value>,
    max_unavailable: Option<&Value>,
    desired: i64,
) -> (i64, i64) {
    let surge = scaled_value(max_surge, "25%", desired, true);
    let mut unavailable = scaled_value(max_unavailable, "25%", desired, false);
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    (surge, unavailable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn upstream_rounding_table() {
        // (maxSurge, maxUnavailable, replicas) -> (surge, unavailable)
        let cases = [
            (None, None, 1, (1, 0)),
            (None, None, 4, (1, 1)),
            (None, None, 10, (3, 2)),
            (Some(json!(0)), Some(json!(0)), 3, (0, 1)),
            (Some(json!("0%")), Some(json!("0%")), 3, (0, 1)),
            (Some(json!(1)), Some(json!(0)), 1, (1, 0)),
            (Some(json!(0)), Some(json!(1)), 1, (0, 1)),
            (Some(json!("50%")), Some(json!("50%")), 3, (2, 1)),
            (Some(json!("10%")), Some(json!("10%")), 1, (1, 0)),
            (Some(Value::Null), None, 2, (1, 0)),
        ];
        for (surge, unavailable, replicas, want) in cases {
            assert_eq!(
                resolve_fenceposts(surge.as_ref(), unavailable.as_ref(), replicas),
                want,
                "{surge:?}/{unavailable:?} x{replicas}"
            );
        }
    }
}
