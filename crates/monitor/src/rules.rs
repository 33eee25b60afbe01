//! The alert rules over the monitor's metrics: a plain Prometheus rules
//! file, or the same groups in a prometheus-operator `PrometheusRule`.
//!
//! Each `for:` is an option with a production default (the flags of
//! `infera monitor --print-rules`), so a test can use seconds.

use std::time::Duration;

use serde_json::{Value, json};

/// The `for:` of each alert and the floor they hold roles to.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleOptions {
    /// `--min-ready`: the floor of the below-floor alert.
    pub min_ready: u32,
    /// A role with no routable pod (critical).
    pub no_routable_for: Duration,
    /// A role below the floor while it rolls.
    pub below_min_for: Duration,
    /// A pod of a rolling role the scheduler cannot place.
    pub stalled_for: Duration,
    /// Ready pods that are not routable (readiness that means nothing).
    pub ready_not_routable_for: Duration,
    /// A watch not current.
    pub watch_down_for: Duration,
    /// The failure ratio of attributed probe requests over 5m above which
    /// the request alert fires (0.01: 1 %).
    pub request_failure_ratio: f64,
    /// That ratio above its threshold this long.
    pub request_failures_for: Duration,
}

impl Default for RuleOptions {
    fn default() -> Self {
        RuleOptions {
            min_ready: 1,
            no_routable_for: Duration::from_secs(60),
            below_min_for: Duration::from_secs(60),
            stalled_for: Duration::from_secs(5 * 60),
            ready_not_routable_for: Duration::from_secs(3 * 60),
            watch_down_for: Duration::from_secs(5 * 60),
            request_failure_ratio: 0.01,
            request_failures_for: Duration::from_secs(5 * 60),
        }
    }
}

/// A duration as PromQL writes it (`1m`, `90s`, `1500ms`, `2h`).
pub fn prom_duration(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        0 => "0s".to_string(),
        ms if ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
        ms if ms % 60_000 == 0 => format!("{}m", ms / 60_000),
        ms if ms % 1000 == 0 => format!("{}s", ms / 1000),
        ms => format!("{ms}ms"),
    }
}

/// The labels that name a role, in every `on (…)` and `by (…)`.
const ROLE: &str = "namespace, workload, role";

fn alert(
    name: &str,
    expr: String,
    r#for: Duration,
    severity: &str,
    summary: &str,
    description: &str,
) -> Value {
    json!({
        "alert": name,
        "expr": expr,
        "for": prom_duration(r#for),
        "labels": { "severity": severity },
        "annotations": { "summary": summary, "description": description },
    })
}

/// The labels that name a probed InferaDeployment.
const PROBED: &str = "namespace, inferadeployment";

/// The failure ratio of the probe's attributed requests over 5m above the
/// threshold; no request in the window (no router, `--no-probe`) is no
/// alert, not a division by zero.
fn request_failures(o: &RuleOptions) -> Value {
    let all = format!("sum by ({PROBED}) (rate(infera_requests_total[5m]))");
    let failed = format!("sum by ({PROBED}) (rate(infera_requests_total{{class!=\"ok\"}}[5m]))");
    alert(
        "InferaRequestFailures",
        format!(
            "({failed} / {all}) > {} and {all} > 0",
            o.request_failure_ratio
        ),
        o.request_failures_for,
        "critical",
        &format!(
            "idep/{{{{ $labels.inferadeployment }}}} ({{{{ $labels.namespace }}}}): more than {}% of probe requests failed over 5m",
            o.request_failure_ratio * 100.0
        ),
        "Requests through the router fail while the API server answers (failures while it does not are unattributed, not counted): infera_requests_total by class says how (refused, status, error-event, cut, hung).",
    )
}

/// The rule groups (`{"groups": [...]}`, a plain rules file's content).
pub fn rule_groups(o: &RuleOptions) -> Value {
    let n = o.min_ready;
    let rolling = format!("on ({ROLE}) (infera_rollout_in_progress == 1)");
    let who = "{{ $labels.workload }} ({{ $labels.namespace }}), role {{ $labels.role }}";
    let rules = vec![
        alert(
            "InferaRoleNoRoutablePods",
            // A role scaled to 0 on purpose has nothing to route to.
            format!(
                "(infera_role_routable_pods == 0) and on ({ROLE}) (infera_role_desired_replicas > 0)"
            ),
            o.no_routable_for,
            "critical",
            &format!("{who}: no routable pod"),
            "Nothing in the role takes traffic: the router has no registered, running worker for it.",
        ),
        alert(
            "InferaRoleBelowMinReadyDuringRollout",
            format!(
                "(min by ({ROLE}) ({{__name__=~\"infera_role_(ready|routable)_pods\"}}) < {n}) and {rolling}"
            ),
            o.below_min_for,
            "warning",
            &format!("{who}: fewer than {n} Ready and routable pods while it rolls"),
            "A rollout took the role below --min-ready: an old pod went before its replacement served (old-pod-first), or a replacement is not serving yet.",
        ),
        alert(
            "InferaRolloutStalled",
            format!("(max by ({ROLE}, reason) (infera_role_unschedulable_pods) > 0) and {rolling}"),
            o.stalled_for,
            "warning",
            &format!("{who}: a pod of the rollout cannot be scheduled ({{{{ $labels.reason }}}})"),
            "The surge pod stays Pending: the scheduler finds no node for it. The old pods keep serving; the rollout does not progress.",
        ),
        alert(
            "InferaRoleReadyNotRoutable",
            "infera_role_routable_pods < infera_role_ready_pods".to_string(),
            o.ready_not_routable_for,
            "warning",
            &format!("{who}: Ready pods the router does not route to"),
            "Readiness that means nothing: pods pass their readiness probe but are not registered with the router (no /ready probe on the readiness port, or the worker is still loading).",
        ),
        alert(
            "InferaMonitorWatchDown",
            "infera_watch_up == 0".to_string(),
            o.watch_down_for,
            "warning",
            "infera monitor cannot watch {{ $labels.resource }}",
            "The monitor's list+watch is not current (unreachable API server, missing permission): the role metrics it cannot vouch for are absent. Its log names the cause.",
        ),
        request_failures(o),
    ];
    json!({ "groups": [{ "name": "infera", "rules": rules }] })
}

/// The same groups as a prometheus-operator `PrometheusRule` in `namespace`.
pub fn prometheus_rule(o: &RuleOptions, namespace: &str) -> Value {
    json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": "infera-monitor",
            "namespace": namespace,
            "labels": { "app.kubernetes.io/name": "infera-monitor" },
        },
        "spec": rule_groups(o),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_promql_writes_them() {
        let d = Duration::from_millis;
        assert_eq!(prom_duration(d(60_000)), "1m");
        assert_eq!(prom_duration(d(90_000)), "90s");
        assert_eq!(prom_duration(d(7_200_000)), "2h");
        assert_eq!(prom_duration(d(1500)), "1500ms");
        assert_eq!(prom_duration(d(0)), "0s");
    }

    #[test]
    fn every_alert_has_its_flag_and_the_floor() {
        let o = RuleOptions {
            min_ready: 2,
            stalled_for: Duration::from_secs(7),
            ..RuleOptions::default()
        };
        let g = rule_groups(&o);
        let rules = g["groups"][0]["rules"].as_array().unwrap();
        let by = |n: &str| rules.iter().find(|r| r["alert"] == n).unwrap();
        assert_eq!(by("InferaRoleNoRoutablePods")["for"], "1m");
        assert_eq!(
            by("InferaRoleNoRoutablePods")["labels"]["severity"],
            "critical"
        );
        assert_eq!(by("InferaRolloutStalled")["for"], "7s");
        let below = by("InferaRoleBelowMinReadyDuringRollout")["expr"]
            .as_str()
            .unwrap();
        assert!(below.contains("< 2)"), "{below}");
        assert_eq!(prometheus_rule(&o, "mon")["spec"], g);
        let requests = by("InferaRequestFailures");
        assert_eq!(requests["for"], "5m");
        let expr = requests["expr"].as_str().unwrap();
        assert!(expr.contains(") > 0.01 and sum by"), "{expr}");
        assert!(expr.ends_with("[5m])) > 0"), "{expr}");
    }
}
