//! A [`Reporter`] writing one JSON object per line (for a log collector or
//! another program): `infera rollout restart|set-image -o json`. Never
//! asks: a question is reported as an event and answered "cannot ask".
//! The last line is [`finish`]'s `result`: the exit code and the report.

use std::io::Write;
use std::time::Instant;

use serde_json::{Value, json};

use infera_rollout::leg_tracker::Observation;
use infera_rollout::plan::Plan;
use infera_rollout::reporter::{Clock, Question, Reporter, Stall};

/// JSON lines on `W`; `elapsed_s` is reported time since `start`.
#[derive(Debug)]
pub struct JsonLines<W: Write> {
    out: W,
    started: Option<(Instant, Clock)>,
}

impl<W: Write> JsonLines<W> {
    pub fn new(out: W) -> Self {
        JsonLines { out, started: None }
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    fn elapsed(&self, at: Instant) -> Option<f64> {
        self.started
            .map(|(t0, clock)| clock.scaled(t0, at).as_secs_f64())
    }

    fn emit(&mut self, value: Value) {
        // A closed pipe is not the rollout's problem: the drive goes on.
        let _ = writeln!(self.out, "{value}");
    }
}

impl<W: Write> Reporter for JsonLines<W> {
    fn plan(&mut self, plan: &Plan) {
        let legs: Vec<Value> = plan
            .legs
            .iter()
            .map(|l| {
                json!({"leg": l.leg, "role": l.role, "workload": l.workload,
                       "replicas": l.replicas, "strategy": l.strategy.describe(),
                       "verdict": plan.verdict_label(l)})
            })
            .collect();
        let gitops = plan.gitops.as_ref().map(|g| {
            let fields: Vec<Value> = g
                .fields
                .iter()
                .map(|f| json!({"field": f.display, "applied_by": f.applied_by}))
                .collect();
            json!({"tool": g.tool, "managers": g.managers, "markers": g.markers,
                   "fields": fields, "refuses": g.refuses()})
        });
        let serving: Vec<Value> = (plan.roles_now.iter())
            .map(|r| {
                let (ready, routable) = r.counts.unzip();
                json!({"role": r.role, "ready": ready, "routable": routable,
                       "below_floor": r.below(plan.min_ready)})
            })
            .collect();
        self.emit(json!({"event": "plan", "target": plan.target,
                         "namespace": plan.namespace, "what": plan.what, "legs": legs,
                         "serving_now": serving, "gitops": gitops, "refuses": plan.refuses(),
                         "kv_coherence": plan.coherence.as_ref().map(infera_rollout::coherence::Coherence::to_json)}));
    }

    fn drain_plan(&mut self, plan: &infera_rollout::drain::DrainPlan) {
        use infera_rollout::drain::plan::PodAction;
        let units: Vec<Value> = plan
            .units
            .iter()
            .map(|u| {
                let budgets: Vec<Value> = (u.budgets.iter())
                    .map(|b| json!({"name": b.name, "disruptions_allowed": b.allowed, "never_allows": b.never}))
                    .collect();
                json!({"workload": u.label, "namespace": u.namespace, "role": u.role,
                       "replicas": u.replicas, "pods": u.pods, "ready_now": u.ready_now,
                       "ready_without": u.ready_without, "capacity": u.capacity.describe(),
                       "pdbs": budgets, "operator": u.generation,
                       "verdict": u.path.label(), "why": u.why, "findings": u.findings})
            })
            .collect();
        let others: Vec<Value> = (plan.others.iter())
            .map(|p| {
                let (action, why) = match &p.action {
                    PodAction::Evict => ("evict", ""),
                    PodAction::Skip(w) => ("skip", w.as_str()),
                    PodAction::Refuse(w) => ("refuse", w.as_str()),
                };
                json!({"namespace": p.namespace, "pod": p.name, "owner": p.owner,
                       "action": action, "why": why})
            })
            .collect();
        self.emit(
            json!({"event": "drain-plan", "nodes": plan.nodes, "min_ready": plan.min_ready,
                         "requests": plan.requests, "workloads": units, "other_pods": others,
                         "refuses": !plan.blocking().is_empty()}),
        );
    }

    fn note(&mut self, text: &str) {
        self.emit(json!({"event": "note", "text": text}));
    }

    fn start(&mut self, legs: &[(String, u64)], clock: Clock) {
        self.started = Some((Instant::now(), clock));
        let legs: Vec<Value> = legs
            .iter()
            .map(|(leg, pods)| json!({"leg": leg, "pods": pods}))
            .collect();
        self.emit(json!({"event": "start", "legs": legs, "simulated": clock.simulated}));
    }

    fn event(&mut self, leg: &str, text: &str, at: Instant) {
        let elapsed = self.elapsed(at);
        self.emit(json!({"event": "event", "leg": leg, "text": text, "elapsed_s": elapsed}));
    }

    fn step(&mut self, leg: &str, obs: &Observation, at: Instant) {
        let elapsed = self.elapsed(at);
        self.emit(
            json!({"event": "step", "leg": leg, "kind": obs.kind.as_str(),
                         "pod": obs.pod, "node": obs.node, "detail": obs.detail,
                         "elapsed_s": elapsed}),
        );
    }

    fn stall(&mut self, leg: &str, stall: &Stall, at: Instant) {
        let elapsed = self.elapsed(at);
        self.emit(json!({"event": "stall", "leg": leg, "pod": stall.pod,
                         "message": stall.message, "after_s": stall.after.as_secs_f64(),
                         "elapsed_s": elapsed}));
    }

    fn activity(&mut self, _: &str, _: &str, _: Instant) {}

    fn tick(&mut self, _: Instant) {}

    fn leg_done(&mut self, leg: &str, summary: &str) {
        self.emit(json!({"event": "leg-done", "leg": leg, "summary": summary}));
    }

    fn finish(&mut self) {
        self.emit(json!({"event": "finish"}));
    }

    fn interactive(&self) -> bool {
        false
    }

    fn ask(&mut self, question: &Question) -> Option<bool> {
        self.emit(json!({"event": "question", "text": question.text(), "answer": null}));
        None
    }
}

/// The last line of `-o json`: `{"event":"result","exit":N,"report":…}`
/// (the report as `--report FILE.json` writes it; `null` when nothing was
/// driven), then the output files. Exit 2 when a file cannot be written.
pub fn finish(
    report: Option<&infera_audit::Report>,
    outputs: &infera_audit::Outputs,
    exit: infera_audit::exit::Exit,
    page: &super::html::PageContext,
) -> infera_audit::exit::Exit {
    let body = report
        .and_then(|r| r.try_to_json().ok())
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .unwrap_or(Value::Null);
    let failed = report.is_some_and(|r| super::write_all(r, outputs, page));
    let exit = if failed {
        infera_audit::exit::Exit::Usage
    } else {
        exit
    };
    // A closed pipe (`| head`) ends the output, not the process with a panic.
    let line = json!({"event": "result", "exit": exit.code(), "report": body});
    let _ = writeln!(std::io::stdout(), "{line}");
    exit
}

#[cfg(test)]
mod tests {
    use super::*;
    use infera_rollout::leg_tracker::StepKind;

    #[test]
    fn one_object_per_line() {
        let mut r = JsonLines::new(Vec::new());
        r.start(
            &[("decode".into(), 1)],
            Clock {
                time_scale: 70.0,
                simulated: true,
            },
        );
        let obs = Observation {
            kind: StepKind::Ready,
            pod: "p".into(),
            node: Some("n".into()),
            detail: None,
        };
        r.step("decode", &obs, Instant::now());
        assert_eq!(r.ask(&Question::Start), None);
        let text = String::from_utf8(r.into_inner()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[1]["event"], "step");
        assert_eq!(lines[1]["kind"], StepKind::Ready.as_str());
        assert_eq!(lines[1]["node"], "n");
        assert_eq!(lines[2]["event"], "question");
    }
}
