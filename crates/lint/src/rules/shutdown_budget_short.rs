use super::{Hit, Workload, declare_rule};
use crate::finding::Severity;
use infera_model::catalogue::EngineKind;
use infera_model::worker;

declare_rule! {
    /// ## What it does
    /// Flags a model server whose `terminationGracePeriodSeconds` (30 unless
    /// set) is shorter than its shutdown: the preStop sleep (`exec` of
    /// `sleep N`, also inside `sh -c`, or the `sleep` action) plus the
    /// engine's own drain, the time it keeps finishing in-flight requests
    /// after SIGTERM, read from the engine catalogue
    /// (`infera_model::catalogue`, sources cited there): vLLM
    /// `--shutdown-timeout` (0 by default), TGI
    /// `--graceful-termination-timeout` / `GRACEFUL_TERMINATION_TIMEOUT`
    /// (90), Triton `--exit-timeout-secs` (30), the infera engine
    /// `--drain-timeout` / `INFERA_DRAIN_TIMEOUT` (30). SGLang and NIM have
    /// no drain setting infera knows of: only their preStop counts.
    ///
    /// ## Why is this bad?
    /// The grace period runs from the moment the pod is deleted and covers
    /// the preStop hook and the drain together; when it ends the kubelet
    /// kills the container. The requests still in flight are cut off on
    /// every roll, drain, eviction and scale-down: clients see reset
    /// connections mid-generation.
    ///
    /// ## Severity
    /// Declared an error: the preStop sleep and a drain the manifest sets
    /// (or the infera engine's, whose default infera knows) do not fit.
    /// **Lowered to a warning** when only the engine's default drain makes
    /// it overrun: the default can differ between engine versions.
    ///
    /// ## Example
    /// ```yaml
    /// terminationGracePeriodSeconds: 30
    /// containers:
    /// - args: [--shutdown-timeout, "60"]
    ///   lifecycle: {preStop: {exec: {command: [sleep, "15"]}}}
    /// ```
    ///
    /// ## Use instead
    /// `terminationGracePeriodSeconds` of at least the preStop sleep plus the
    /// drain (here 75), or a shorter drain.
    ///
    /// ## What it cannot know
    /// A preStop hook whose length is not written in it (an HTTP hook, a
    /// script, `sleep $T`) counts as 0 s; a drain set from a Secret, a
    /// ConfigMap or an unexpanded variable is unknown (then only the preStop
    /// is judged). The engine's teardown after its drain (freeing GPU
    /// memory, a few seconds) is not counted, and neither is how long the
    /// requests actually take. A pod an operator writes from fields of its
    /// own (a Dynamo service, an InferaDeployment service without
    /// `extraPodSpec`) is not judged: the operator sets its grace period.
    RULE, "IR016", "shutdown-budget-short", Error,
    "terminationGracePeriodSeconds is shorter than the preStop sleep plus the engine's drain: in-flight requests are killed"
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    let (Some(engine), Some(main)) = (w.engine, w.main_container()) else {
        return;
    };
    if w.kind == "InferaDeployment" && !(w.worker && w.serving) {
        return;
    }
    // No pod spec in the manifest (flat InferaDeployment fields, a Dynamo
    // service): an operator writes the pod, and its grace period.
    if w.pod_path.is_none() {
        return;
    }
    let grace = w
        .pod
        .termination_grace_period_seconds
        .unwrap_or(worker::DEFAULT_GRACE_SECONDS);
    let prestop = worker::prestop_sleep(main);
    let sleep = prestop.as_ref().map_or(0, |(s, _)| *s);
    let drain = engine.drain(main);
    let (drain_seconds, certain_drain) = match &drain {
        Some(d) => (d.seconds, d.explicit || engine.kind == EngineKind::Infera),
        None => (0, true),
    };
    let needed = sleep.saturating_add(drain_seconds);
    if needed <= grace {
        return;
    }
    let certain = certain_drain || sleep > grace;
    let mut parts = Vec::new();
    if let Some((_, from)) = &prestop {
        parts.push(format!("the preStop hook's {from}"));
    }
    if let Some(d) = drain.as_ref().filter(|d| d.seconds > 0) {
        parts.push(format!(
            "{}'s drain of {} s ({})",
            engine.name, d.seconds, d.from
        ));
    }
    let grace_words = match w.pod.termination_grace_period_seconds {
        Some(g) => format!("terminationGracePeriodSeconds {g}"),
        None => format!("the default terminationGracePeriodSeconds of {grace}"),
    };
    let hit = Hit::new(
        &RULE,
        if certain {
            Severity::Error
        } else {
            Severity::Warning
        },
        w.pod_field(&["terminationGracePeriodSeconds"]),
        format!(
            "{} shuts down in up to {needed} s ({}) but has {grace_words}: the kubelet kills it {} s early, cutting off the requests still in flight on every roll and drain; set terminationGracePeriodSeconds to at least {needed}",
            w.who(),
            parts.join(" plus "),
            needed - grace
        ),
    );
    out.push(hit.with_fix(
        format!("set terminationGracePeriodSeconds to {needed}"),
        vec![(
            w.pod_field(&[]),
            serde_json::json!({"terminationGracePeriodSeconds": needed}),
        )],
    ));
}
