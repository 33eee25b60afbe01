//! The report of a several-target audit: one [`Report`] per target (its own
//! verdict and exit code), one table, one overall verdict and exit code (the
//! worst target's), one JSON document and one chart.

use std::path::Path;

use serde::Serialize;

use crate::exit::Exit;
use crate::report::{
    Outcome, Outputs, ROLE_COLUMNS, Report, ReportError, RoleReport, StepRecord, new_table,
};
use crate::timeline::Timeline;

/// Every target's report, in selection order.
#[derive(Debug, Clone)]
pub struct ManyReport {
    /// The namespace of each report (same order).
    pub namespaces: Vec<String>,
    /// `-A`: targets are named with their namespace.
    pub all_namespaces: bool,
    pub reports: Vec<Report>,
}

/// Worse exits rank higher: an unproven minimum is worse than success, a
/// certain gap worse than an unproven one, a stall worse than a gap, an
/// interruption worst (the evidence is partial).
fn rank(e: Exit) -> u8 {
    match e {
        Exit::Ok => 0,
        Exit::Unproven => 1,
        Exit::Findings => 2,
        Exit::Usage => 3,
        Exit::Stalled => 4,
        Exit::Interrupted => 5,
    }
}

#[derive(Serialize)]
struct TargetJson<'a> {
    namespace: &'a str,
    #[serde(flatten)]
    report: &'a Report,
    verdict: String,
    exit_code: u8,
}

#[derive(Serialize)]
struct ManyJson<'a> {
    outcome: Outcome,
    exit_code: u8,
    verdict: String,
    min_ready: u32,
    targets: Vec<TargetJson<'a>>,
}

impl ManyReport {
    /// `idep/a`, or `idep/a (ns)` with `-A`.
    pub fn label(&self, i: usize) -> String {
        let target = self.reports.get(i).map_or("", |r| r.target.as_str());
        match self.namespaces.get(i) {
            Some(ns) if self.all_namespaces => format!("{target} ({ns})"),
            _ => target.to_string(),
        }
    }

    /// The label without spaces (`idep/a`, `ns/idep/a`), to qualify a
    /// service in the chart's step labels.
    fn token(&self, i: usize) -> String {
        let target = self.reports.get(i).map_or("", |r| r.target.as_str());
        match self.namespaces.get(i) {
            Some(ns) if self.all_namespaces => format!("{ns}/{target}"),
            _ => target.to_string(),
        }
    }

    /// The targets, for a chart title: all of them up to four, else the
    /// first three and how many more.
    pub fn title(&self) -> String {
        let n = self.reports.len();
        let shown = if n > 4 { 3 } else { n };
        let mut title = (0..shown)
            .map(|i| self.label(i))
            .collect::<Vec<_>>()
            .join(", ");
        if shown < n {
            title.push_str(&format!(" and {} more", n - shown));
        }
        title
    }

    /// The worst target's exit code (0 when there is no target).
    pub fn exit(&self) -> Exit {
        self.reports
            .iter()
            .map(Report::exit)
            .max_by_key(|e| rank(*e))
            .unwrap_or(Exit::Ok)
    }

    /// The outcome of the worst target.
    pub fn outcome(&self) -> Outcome {
        self.reports
            .iter()
            .max_by_key(|r| rank(r.exit()))
            .map_or(Outcome::Complete, |r| r.outcome)
    }

    /// One table: a row per target and role.
    pub fn table(&self) -> String {
        let header = ["target", "outcome"].into_iter().chain(ROLE_COLUMNS);
        let mut table = new_table(header.collect());
        for (i, report) in self.reports.iter().enumerate() {
            for r in &report.roles {
                let mut row = vec![self.label(i), report.outcome.as_str().to_string()];
                row.extend(report.role_cells(r));
                table.add_row(row);
            }
        }
        table.to_string()
    }

    /// One line per target: `idep/a: <its sentence>` (with its outcome when
    /// it did not complete).
    pub fn target_sentences(&self) -> Vec<String> {
        self.reports
            .iter()
            .enumerate()
            .map(|(i, r)| format!("{}: {}", self.label(i), r.verdict()))
            .collect()
    }

    /// The overall verdict: how many targets held the floor, and which did
    /// not (and why).
    pub fn sentence(&self) -> String {
        let n = self.reports.len();
        let mut held = 0;
        let mut problems: Vec<String> = Vec::new();
        for (i, r) in self.reports.iter().enumerate() {
            let label = self.label(i);
            // What was observed held, however the run ended (an
            // interrupted drain whose roles kept 1/1 held the floor).
            let held_floor = r.all_held();
            held += usize::from(held_floor);
            match r.exit() {
                Exit::Ok => {}
                // The pods held; requests did not.
                Exit::Findings if held_floor => {
                    let failed = r.traffic.as_ref().map_or(0, |t| t.total.failures());
                    problems.push(format!(
                        "{label} failed {failed} request{}",
                        if failed == 1 { "" } else { "s" }
                    ));
                }
                Exit::Findings => problems.push(format!("{label} fell below")),
                Exit::Unproven => problems.push(format!("{label} unproven")),
                _ => problems.push(format!("{label} {}", r.outcome.as_str())),
            }
        }
        let floor = self.reports.first().map_or(1, |r| r.min_ready);
        let head = format!(
            "{n} target{}, {held} held the floor of {floor} Ready and routable per role",
            if n == 1 { "" } else { "s" }
        );
        if problems.is_empty() {
            head
        } else {
            format!("{head}; {}", problems.join(", "))
        }
    }

    /// The JSON document: `{"outcome", "exit_code", "verdict", "min_ready",
    /// "targets": [<the single-target report, plus "namespace", "verdict",
    /// "exit_code">]}`.
    pub fn try_to_json(&self) -> Result<String, ReportError> {
        let doc = ManyJson {
            outcome: self.outcome(),
            exit_code: self.exit().code(),
            verdict: self.sentence(),
            min_ready: self.reports.first().map_or(1, |r| r.min_ready),
            targets: self
                .reports
                .iter()
                .enumerate()
                .map(|(i, report)| TargetJson {
                    namespace: self.namespaces.get(i).map_or("", String::as_str),
                    report,
                    verdict: report.sentence(),
                    exit_code: report.exit().code(),
                })
                .collect(),
        };
        serde_json::to_string_pretty(&doc).map_err(|e| ReportError::Encode(e.to_string()))
    }

    /// Write the JSON document to `path`.
    pub fn write_json(&self, path: &Path) -> Result<(), ReportError> {
        std::fs::write(path, self.try_to_json()? + "\n").map_err(|source| ReportError::Io {
            path: path.display().to_string(),
            source,
        })
    }

    /// Every target in one [`Report`], for the chart, the timeline CSV and
    /// the page: roles named `idep/a prefill` (one chart panel each), steps
    /// with their service qualified (`idep/a:prefill`, also in
    /// `chart_services`), so each panel marks its own target's steps only.
    pub fn combined(&self) -> Report {
        let mut roles: Vec<RoleReport> = Vec::new();
        let mut chart_services: Vec<Vec<String>> = Vec::new();
        let mut steps: Vec<StepRecord> = Vec::new();
        let mut timeline = Timeline {
            time_scale: self.reports.first().map_or(1.0, |r| r.timeline.time_scale),
            ..Timeline::default()
        };
        let samples = self.reports.iter().map(|r| r.timeline.samples.len()).min();
        timeline.samples = vec![Vec::new(); samples.unwrap_or(0)];
        for (i, r) in self.reports.iter().enumerate() {
            let (label, token) = (self.label(i), self.token(i));
            roles.extend(r.roles.iter().map(|role| RoleReport {
                role: format!("{label} {}", role.role),
                ..role.clone()
            }));
            chart_services.extend(r.roles.iter().map(|role| {
                role.services
                    .iter()
                    .map(|s| format!("{token}:{s}"))
                    .collect::<Vec<_>>()
            }));
            steps.extend(r.steps.iter().map(|s| StepRecord {
                service: format!("{token}:{}", s.service),
                ..s.clone()
            }));
            timeline.duration = timeline.duration.max(r.timeline.duration);
            timeline.roles.extend(
                r.timeline
                    .roles
                    .iter()
                    .map(|(role, points)| (format!("{label} {role}"), points.clone())),
            );
            timeline
                .uncertain
                .extend(r.timeline.uncertain.iter().cloned());
            timeline
                .unobserved
                .extend(r.timeline.unobserved.iter().copied());
            for (merged, own) in timeline.samples.iter_mut().zip(&r.timeline.samples) {
                merged.extend(own.iter().cloned());
            }
        }
        steps.sort_by(|a, b| a.elapsed_s.total_cmp(&b.elapsed_s));
        timeline.steps = steps
            .iter()
            .map(|s| (s.wall_offset, format!("{} {}", s.service, s.kind)))
            .collect();
        let first = self.reports.first();
        Report {
            target: self.title(),
            activity: first.map_or("audit", |r| r.activity),
            outcome: self.outcome(),
            sample_interval_s: first.map_or(0.0, |r| r.sample_interval_s),
            samples: first.map_or(0, |r| r.samples),
            duration_s: self
                .reports
                .iter()
                .map(|r| r.duration_s)
                .fold(0.0, f64::max),
            roles,
            steps,
            operator_generation: None,
            min_ready: first.map_or(1, |r| r.min_ready),
            synced: self.reports.iter().all(|r| r.synced),
            unobserved: self
                .reports
                .iter()
                .flat_map(|r| r.unobserved.iter().cloned())
                .collect(),
            reconstructed_changes: self.reports.iter().map(|r| r.reconstructed_changes).sum(),
            samples_unobserved: first.map_or(0, |r| r.samples_unobserved),
            clock_skew_s: first.and_then(|r| r.clock_skew_s),
            samples_csv_error: None,
            timeline,
            chart_services: Some(chart_services),
            origin: first.and_then(|r| r.origin),
            started_at: self
                .reports
                .iter()
                .filter_map(|r| r.started_at.clone())
                .min(),
            undone_restarts: (self.reports.iter())
                .flat_map(|r| r.undone_restarts.iter().cloned())
                .collect(),
            mixed_windows: (self.reports.iter())
                .flat_map(|r| r.mixed_windows.iter().copied())
                .collect(),
            traffic: None,
        }
    }
}

impl Outputs {
    /// Write every file of a several-target audit: the JSON document of
    /// [`ManyReport::try_to_json`] and the combined timeline (panels per
    /// target and role). An HTML `--report` is the caller's (the page is
    /// the console's).
    pub fn write_many(
        &self,
        many: &ManyReport,
    ) -> Vec<Result<(&'static str, std::path::PathBuf), ReportError>> {
        let combined = many.combined();
        let mut results = Vec::new();
        if let Some(path) = &self.report {
            results.push(many.write_json(path).map(|()| ("report", path.clone())));
        }
        for path in &self.timeline {
            results.push(
                combined
                    .write_timeline(path)
                    .map(|()| ("timeline", path.clone())),
            );
        }
        results
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use k8s_openapi::api::core::v1::Pod;
    use kube::runtime::watcher::Event;

    use super::*;
    use crate::auditor::{Auditor, RoleSpec};

    /// A report of `target` whose one role had `ready` pods throughout.
    fn report(target: &str, ready: u32, outcome: Outcome) -> Report {
        let role = RoleSpec {
            role: "w".into(),
            services: vec!["w".into()],
            selector: infera_model::selector::Selector::parse("app=w").unwrap(),
        };
        let a = Auditor::new(vec![role], 1, Duration::from_secs(10), 1.0).with_target(target);
        audited(a, ready, outcome)
    }

    /// The report of `a` over 5 s with `ready` pods throughout.
    fn audited(mut a: Auditor, ready: u32, outcome: Outcome) -> Report {
        let now = Instant::now();
        a.apply(&Event::Init, now);
        for i in 0..ready {
            let pod: Pod = serde_json::from_value(serde_json::json!({
                "metadata": {"name": format!("p{i}"), "namespace": "ns", "labels": {"app": "w"}},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
            }))
            .unwrap();
            a.apply(&Event::InitApply(pod), now);
        }
        a.apply(&Event::InitDone, now);
        a.finish(outcome, now + Duration::from_secs(5))
    }

    fn many(reports: Vec<Report>) -> ManyReport {
        ManyReport {
            namespaces: vec!["ns".into(); reports.len()],
            all_namespaces: false,
            reports,
        }
    }

    /// A role dark from before a roll began is not the roll's gap (exit 0,
    /// said so); `infera audit` cannot know when the change began, so
    /// there it is one (exit 1).
    #[test]
    fn a_role_dark_before_the_roll_is_not_its_gap() {
        let role = RoleSpec {
            role: "w".into(),
            services: vec!["w".into()],
            selector: infera_model::selector::Selector::parse("app=w").unwrap(),
        };
        let new = || Auditor::new(vec![role.clone()], 1, Duration::from_secs(10), 1.0);
        let rolled = audited(new().with_activity("roll"), 0, Outcome::Complete);
        assert_eq!(rolled.exit(), Exit::Ok);
        assert_eq!(
            rolled.sentence(),
            "0 samples over 5s: the roll took no role below the floor; w was already below \
             the floor when the roll began (0 Ready, 0 routable, throughout)"
        );
        let json = rolled.to_json();
        assert!(json.contains("\"already_below\": {"), "{json}");
        assert!(rolled.table().ends_with("min sampled does not)"));
        assert!(json.contains("\"to_end\": true"), "{json}");
        let audit = audited(new(), 0, Outcome::Complete);
        assert_eq!(audit.exit(), Exit::Findings);
        assert!(!audit.to_json().contains("already_below"));
        assert!(audit.sentence().contains("w fell to 0 Ready"));
        assert!(audit.already_note().is_none());
    }

    #[test]
    fn the_run_exits_with_the_worst_target() {
        let held = || report("deploy/a", 1, Outcome::Complete);
        let gap = || report("deploy/b", 0, Outcome::Complete);
        let stalled = || report("deploy/c", 1, Outcome::Stalled);
        let interrupted = || report("deploy/d", 1, Outcome::Interrupted);
        assert_eq!(many(vec![held(), held()]).exit(), Exit::Ok);
        assert_eq!(many(vec![held(), gap()]).exit(), Exit::Findings);
        assert_eq!(many(vec![gap(), stalled(), held()]).exit(), Exit::Stalled);
        assert_eq!(
            many(vec![stalled(), interrupted()]).exit(),
            Exit::Interrupted
        );
        let m = many(vec![held(), gap(), stalled()]);
        assert_eq!(m.outcome(), Outcome::Stalled);
        assert_eq!(
            m.sentence(),
            "3 targets, 2 held the floor of 1 Ready and routable per role; \
             deploy/b fell below, deploy/c stalled"
        );
        assert_eq!(m.title(), "deploy/a, deploy/b, deploy/c");
        // Interrupted with its roles at 1/1 throughout: it held the floor
        // for as long as it ran, and the line says how it ended.
        assert_eq!(
            many(vec![interrupted()]).sentence(),
            "1 target, 1 held the floor of 1 Ready and routable per role; deploy/d interrupted"
        );
        let five = many((0..5).map(|_| held()).collect());
        // The pods held and requests failed: the target held the floor, and
        // its requests are named, never "fell below".
        let mut failing = held();
        failing.traffic = Some(crate::traffic::TrafficReport {
            path: "service ns/r through the API server's proxy".into(),
            rate: 2.0,
            total: crate::traffic::Tally {
                sent: 10,
                succeeded: 7,
                failed: [("cut".to_string(), 3)].into(),
                ..Default::default()
            },
            not_sent: 0,
            blind: Vec::new(),
            legs: Vec::new(),
            steps: Vec::new(),
            causes: Vec::new(),
            requests: Vec::new(),
        });
        let m2 = many(vec![held(), failing]);
        assert_eq!(m2.exit(), Exit::Findings);
        assert_eq!(
            m2.sentence(),
            "2 targets, 2 held the floor of 1 Ready and routable per role; deploy/a failed 3 requests"
        );
        assert_eq!(five.title(), "deploy/a, deploy/a, deploy/a and 2 more");
        let lines = m.target_sentences();
        assert!(lines[2].starts_with("deploy/c: stalled; "), "{lines:?}");
        let json: serde_json::Value = serde_json::from_str(&m.try_to_json().unwrap()).unwrap();
        assert_eq!(json["exit_code"], 3);
        assert_eq!(json["targets"][1]["exit_code"], 1);
        assert_eq!(json["targets"][1]["namespace"], "ns");
        assert_eq!(json["targets"][1]["roles"][0]["min_ready_exact"], 0);
    }
}
