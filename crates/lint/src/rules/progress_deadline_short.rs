use super::{Around, Hit, Workload, declare_rule};
use crate::finding::Severity;

declare_rule! {
    /// ## What it does
    /// Flags a Deployment running a model server whose
    /// `progressDeadlineSeconds` (600 unless set) is shorter than the time
    /// its pod is allowed to take to turn Ready: the startup probe's budget
    /// (`initialDelaySeconds` + `failureThreshold` × `periodSeconds`, with
    /// the upstream defaults 0, 3 and 10) or the readiness probe's
    /// `initialDelaySeconds`, whichever is longer, of the main container.
    ///
    /// ## Why is this bad?
    /// A new pod that takes the time its probes allow (loading weights) is
    /// healthy, yet the Deployment controller marks the rollout failed
    /// (`Progressing=False`, reason `ProgressDeadlineExceeded`) before it
    /// turns Ready: `kubectl rollout status` exits 1, Helm `--wait` fails the
    /// release (and `--atomic` rolls it back), Argo CD shows the application
    /// Degraded and Flux's health check fails, all on a roll that would have
    /// completed.
    ///
    /// ## Example
    /// ```yaml
    /// spec:
    ///   progressDeadlineSeconds: 600
    ///   template:
    ///     spec:
    ///       containers:
    ///       - startupProbe: {httpGet: {path: /health, port: 8000}, periodSeconds: 10, failureThreshold: 180}
    /// ```
    ///
    /// ## Use instead
    /// `progressDeadlineSeconds` above the startup budget plus the image
    /// pull (here 1800 → 1800 or more).
    ///
    /// ## What it cannot know
    /// How long the pod really takes: a server that loads in 2 minutes is
    /// never late even with a 30-minute budget, hence a warning. The image
    /// pull before the probes start is not counted. InferaDeployments are
    /// not judged: the operator owns their Deployments' deadline, and Helm
    /// and Argo CD judge the custom resource, not those Deployments.
    RULE, "IR017", "progress-deadline-short", Warning,
    "progressDeadlineSeconds is shorter than the pod's startup budget: a healthy roll is marked failed"
}

pub fn check(w: &Workload<'_>, around: &Around<'_>, out: &mut Vec<Hit>) {
    let (Some(progress), Some(_), Some(main)) = (around.progress, w.engine, w.main_container())
    else {
        return;
    };
    let Some((budget, why)) = startup_budget(main) else {
        return;
    };
    if progress.deadline >= budget {
        return;
    }
    let deadline_words = if progress.written {
        format!("progressDeadlineSeconds {}", progress.deadline)
    } else {
        format!(
            "the default progressDeadlineSeconds of {}",
            progress.deadline
        )
    };
    // Whole minutes, at least the budget: what the fix writes.
    let enough = (budget + 59) / 60 * 60;
    out.push(
        Hit::new(
            &RULE,
            Severity::Warning,
            w.base_field(&["progressDeadlineSeconds"]),
            format!(
                "{} allows its pod {budget} s to turn Ready ({why}) but has {deadline_words}: a pod that takes that long is healthy, yet the rollout is marked failed (ProgressDeadlineExceeded) and Helm --wait, Argo CD and Flux fail it; set progressDeadlineSeconds to at least {enough}",
                w.who()
            ),
        )
        .with_fix(
            format!("set progressDeadlineSeconds to {enough}"),
            vec![(
                w.base.clone(),
                serde_json::json!({"progressDeadlineSeconds": enough}),
            )],
        ),
    );
}

/// The longest a container may take to turn Ready, as its probes allow,
/// and how the manifest says so; None without either probe.
fn startup_budget(c: &k8s_openapi::api::core::v1::Container) -> Option<(i64, String)> {
    let startup = c.startup_probe.as_ref().map(|p| {
        let delay = i64::from(p.initial_delay_seconds.unwrap_or(0));
        let failures = i64::from(p.failure_threshold.unwrap_or(3));
        let period = i64::from(p.period_seconds.unwrap_or(10));
        let words = if delay > 0 {
            format!("startupProbe {delay} + {failures} × {period} s")
        } else {
            format!("startupProbe {failures} × {period} s")
        };
        (delay + failures * period, words)
    });
    let readiness = c
        .readiness_probe
        .as_ref()
        .and_then(|p| p.initial_delay_seconds)
        .map(|d| {
            (
                i64::from(d),
                format!("readinessProbe initialDelaySeconds {d}"),
            )
        });
    match (startup, readiness) {
        (Some(s), Some(r)) => Some(if r.0 > s.0 { r } else { s }),
        (s, r) => s.or(r),
    }
}
