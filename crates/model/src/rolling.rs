//! Upstream rolling-update arithmetic and the one classification of how a
//! workload replaces its pods, in one place for the linter's prediction,
//! the rollout preflight and the simulated Deployment controller
//! (operator-semantics §3): a percentage maxSurge rounds up, maxUnavailable
//! rounds down, and when both come to 0 maxUnavailable becomes 1
//! (`ResolveFenceposts` in `pkg/controller/deployment/util`).
//!
//! The arithmetic takes typed `IntOrString`s; untyped callers (manifests
//! read as JSON, the simulator's stored objects) convert once with
//! [`int_or_string`].

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use crate::lws::{DEFAULT_MAX_SURGE, DEFAULT_MAX_UNAVAILABLE};

/// apps/v1's default maxSurge and maxUnavailable.
pub const APPS_V1_DEFAULT: &str = "25%";

/// An int-or-percent field read as JSON: `None` when absent or null (the
/// default applies). An integer beyond `int32` keeps its value (as the
/// integer string [`scaled_value`] reads back), and any other non-string
/// (a float, a bool, an object) counts as 0.
pub fn int_or_string(value: &Value) -> Option<IntOrString> {
    match value {
        Value::Null => None,
        Value::String(text) => Some(IntOrString::String(text.clone())),
        other => Some(match other.as_i64() {
            Some(n) => i32::try_from(n)
                .map_or_else(|_| IntOrString::String(n.to_string()), IntOrString::Int),
            None => IntOrString::Int(0),
        }),
    }
}

/// Resolve an int-or-percent against `total` (upstream
/// `GetScaledValueFromIntOrPercent`): `"N%"` of `total` rounded up or down,
/// an integer as is, a plain integer string as its integer, anything else 0.
pub fn scaled_value(value: &IntOrString, total: i64, round_up: bool) -> i64 {
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
/// `ResolveFenceposts`: percentages of `desired`, maxSurge rounded up and
/// maxUnavailable down, and both 0 gives maxUnavailable 1
/// (k8s.io/kubernetes@v1.37.2
/// pkg/controller/deployment/util/deployment_util.go).
pub fn fenceposts(
    max_surge: &IntOrString,
    max_unavailable: &IntOrString,
    desired: i64,
) -> (i64, i64) {
    let surge = scaled_value(max_surge, desired, true);
    let mut unavailable = scaled_value(max_unavailable, desired, false);
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    (surge, unavailable)
}

/// [`fenceposts`] with the apps/v1 defaults (25 % / 25 %) for absent fields.
pub fn resolve_fenceposts(
    max_surge: Option<&IntOrString>,
    max_unavailable: Option<&IntOrString>,
    desired: i64,
) -> (i64, i64) {
    let default = IntOrString::String(APPS_V1_DEFAULT.to_string());
    fenceposts(
        max_surge.unwrap_or(&default),
        max_unavailable.unwrap_or(&default),
        desired,
    )
}

/// How a workload replaces its pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RollKind {
    /// Replacement first, old pod retired only when it is Ready (maxSurge > 0, maxUnavailable 0).
    SurgeFirst,
    /// Surge allowed but old pods may also go first (maxSurge > 0, maxUnavailable > 0).
    SurgeOrRetire,
    /// Old pod first (maxSurge 0 after rounding).
    OldPodFirst,
    /// Everything killed first.
    Recreate,
    /// LeaderWorkerSet group rolling update.
    Lws,
}

/// How a workload replaces its pods, with maxSurge and maxUnavailable
/// resolved for its replica count (Recreate: 0 and every replica).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roll {
    pub kind: RollKind,
    pub surge: i64,
    pub unavailable: i64,
}

/// A resolved count as a pod count (negative → 0).
fn count(v: i64) -> u32 {
    u32::try_from(v.max(0)).unwrap_or(u32::MAX)
}

impl Roll {
    /// A RollingUpdate with resolved numbers, classified.
    pub fn rolling(surge: i64, unavailable: i64) -> Roll {
        let kind = match (surge > 0, unavailable > 0) {
            (true, false) => RollKind::SurgeFirst,
            (true, true) => RollKind::SurgeOrRetire,
            _ => RollKind::OldPodFirst,
        };
        Roll {
            kind,
            surge,
            unavailable,
        }
    }

    /// Every one of `replicas` pods killed first.
    pub fn recreate(replicas: i64) -> Roll {
        Roll {
            kind: RollKind::Recreate,
            surge: 0,
            unavailable: replicas,
        }
    }

    /// An apps/v1 Deployment's strategy (`type`, maxSurge, maxUnavailable)
    /// for `replicas`, with upstream arithmetic and defaults.
    pub fn deployment(
        strategy_type: Option<&str>,
        max_surge: Option<&IntOrString>,
        max_unavailable: Option<&IntOrString>,
        replicas: i64,
    ) -> Roll {
        if strategy_type == Some("Recreate") {
            return Roll::recreate(replicas);
        }
        let (surge, unavailable) = resolve_fenceposts(max_surge, max_unavailable, replicas);
        Roll::rolling(surge, unavailable)
    }

    /// A LeaderWorkerSet's group rolling update for `replicas` groups, with
    /// its defaults (maxSurge 0, maxUnavailable 1) and upstream arithmetic.
    pub fn lws(
        max_surge: Option<&IntOrString>,
        max_unavailable: Option<&IntOrString>,
        replicas: i64,
    ) -> Roll {
        let (surge, unavailable) = fenceposts(
            max_surge.unwrap_or(&IntOrString::Int(DEFAULT_MAX_SURGE)),
            max_unavailable.unwrap_or(&IntOrString::Int(DEFAULT_MAX_UNAVAILABLE)),
            replicas,
        );
        Roll {
            kind: RollKind::Lws,
            surge,
            unavailable,
        }
    }

    /// Replacement first, no old pod missing (a RollingUpdate only).
    pub fn surge_first(&self) -> bool {
        self.kind == RollKind::SurgeFirst
    }

    /// Whether extra pods (or groups) are created during the roll.
    pub fn surges(&self) -> bool {
        self.kind != RollKind::Recreate && self.surge > 0
    }

    /// Old pods that may be missing at once among `replicas`.
    pub fn unavailable(&self, replicas: u32) -> u32 {
        match self.kind {
            RollKind::Recreate => replicas,
            _ => count(self.unavailable).min(replicas),
        }
    }

    /// How it rolls, for the rollout plan.
    pub fn describe(&self) -> String {
        let (surge, unavailable) = (count(self.surge), count(self.unavailable));
        match self.kind {
            RollKind::SurgeFirst if surge == 1 => {
                "surge-first (maxSurge 1, maxUnavailable 0)".into()
            }
            RollKind::OldPodFirst => {
                format!("old-pod-first (maxSurge 0, maxUnavailable {unavailable})")
            }
            RollKind::SurgeFirst | RollKind::SurgeOrRetire => {
                format!("rolling (maxSurge {surge}, maxUnavailable {unavailable})")
            }
            RollKind::Recreate => "Recreate (every pod killed first)".into(),
            RollKind::Lws => {
                format!("LeaderWorkerSet (maxSurge {surge}, maxUnavailable {unavailable})")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn typed(v: Option<Value>) -> Option<IntOrString> {
        v.as_ref().and_then(int_or_string)
    }

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
            // 0/0 after rounding down → maxUnavailable 1.
            (Some(json!("0%")), Some(json!("20%")), 4, (0, 1)),
            // Over 100 %: more than every replica.
            (Some(json!("150%")), Some(json!("150%")), 3, (5, 4)),
            // Negative: as upstream (no clamp here), rounding toward -inf/+inf.
            (Some(json!(-1)), Some(json!(2)), 3, (-1, 2)),
            (Some(json!("-50%")), Some(json!("-50%")), 3, (-1, -2)),
            // Garbage strings and non-strings count as 0; plain integer strings as integers.
            (Some(json!("lots")), Some(json!("x%")), 3, (0, 1)),
            (Some(json!(true)), Some(json!(1.5)), 3, (0, 1)),
            (Some(json!(" 2 ")), Some(json!(" 50 %")), 3, (2, 1)),
            // Beyond int32: kept.
            (
                Some(json!(5_000_000_000_i64)),
                Some(json!(0)),
                1,
                (5_000_000_000, 0),
            ),
        ];
        for (surge, unavailable, replicas, want) in cases {
            assert_eq!(
                resolve_fenceposts(
                    typed(surge.clone()).as_ref(),
                    typed(unavailable.clone()).as_ref(),
                    replicas
                ),
                want,
                "{surge:?}/{unavailable:?} x{replicas}"
            );
        }
    }

    #[test]
    fn percentages_round_up_or_down() {
        let pct = |s: &str| IntOrString::String(s.into());
        assert_eq!(scaled_value(&pct("25%"), 10, true), 3);
        assert_eq!(scaled_value(&pct("25%"), 10, false), 2);
        assert_eq!(scaled_value(&pct("100%"), 7, false), 7);
        assert_eq!(
            scaled_value(&pct("9223372036854775807%"), 3, false),
            i64::MAX / 100
        );
        assert_eq!(scaled_value(&IntOrString::Int(-3), 10, true), -3);
        assert_eq!(int_or_string(&Value::Null), None);
        assert_eq!(int_or_string(&json!(7)), Some(IntOrString::Int(7)));
    }

    #[test]
    fn one_classification() {
        let pct = |s: &str| IntOrString::String(s.into());
        let kind = |surge: Option<&IntOrString>, unavailable: Option<&IntOrString>, n| {
            Roll::deployment(None, surge, unavailable, n).kind
        };
        assert_eq!(kind(None, None, 1), RollKind::SurgeFirst);
        assert_eq!(kind(None, None, 4), RollKind::SurgeOrRetire);
        let zero = IntOrString::Int(0);
        assert_eq!(
            kind(Some(&zero), Some(&pct("0%")), 1),
            RollKind::OldPodFirst
        );
        assert_eq!(
            kind(Some(&pct("10%")), Some(&pct("10%")), 1),
            RollKind::SurgeFirst
        );
        assert_eq!(
            Roll::deployment(Some("Recreate"), None, None, 3),
            Roll::recreate(3)
        );
        assert_eq!(Roll::recreate(3).unavailable(3), 3);
        let lws = Roll::lws(None, None, 2);
        assert_eq!(
            (lws.kind, lws.surge, lws.unavailable),
            (RollKind::Lws, 0, 1)
        );
        assert_eq!(
            Roll::lws(None, Some(&pct("10%")), 3).unavailable,
            1,
            "0/0 → 1"
        );
    }

    #[test]
    fn plan_wording() {
        assert_eq!(
            Roll::rolling(1, 0).describe(),
            "surge-first (maxSurge 1, maxUnavailable 0)"
        );
        assert_eq!(
            Roll::rolling(0, 2).describe(),
            "old-pod-first (maxSurge 0, maxUnavailable 2)"
        );
        assert_eq!(
            Roll::rolling(2, -1).describe(),
            "rolling (maxSurge 2, maxUnavailable 0)"
        );
        assert_eq!(
            Roll::rolling(-1, 1).describe(),
            "old-pod-first (maxSurge 0, maxUnavailable 1)"
        );
        assert_eq!(
            Roll::recreate(2).describe(),
            "Recreate (every pod killed first)"
        );
        assert_eq!(
            Roll::lws(None, None, 1).describe(),
            "LeaderWorkerSet (maxSurge 0, maxUnavailable 1)"
        );
        assert!(Roll::rolling(1, 0).surge_first() && !Roll::rolling(1, 1).surge_first());
        assert!(Roll::rolling(1, 1).surges() && !Roll::recreate(1).surges());
    }
}
