//! The audit report: JSON (the machine-readable form), a table per role, one
//! sentence, and the timeline files.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::timeline::Timeline;

pub mod traffic;
use crate::exit::Exit;
pub use crate::pods::Shutdown;

/// How the audited rollout (or audit window) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The rollout completed (or the `--for` window was audited to its end).
    Complete,
    /// A rollout stalled (unschedulable surge pod, progress deadline).
    Stalled,
    /// A rollout was aborted and its trigger undone.
    Aborted,
    /// Ctrl-C.
    Interrupted,
    /// `--until-complete --for D`: D elapsed before the rollout completed.
    Timeout,
    /// Another writer (a GitOps tool's self-heal) put back a field the
    /// rollout's trigger set; the rollout stopped.
    Reverted,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Complete => "complete",
            Outcome::Stalled => "stalled",
            Outcome::Aborted => "aborted",
            Outcome::Interrupted => "interrupted",
            Outcome::Timeout => "timeout",
            Outcome::Reverted => "reverted",
        }
    }
}

/// Numbers of one role. Durations are reported seconds (scaled by the
/// auditor's `time_scale`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoleReport {
    pub role: String,
    pub services: Vec<String>,
    /// Lowest Ready count any sample saw (`null`: no sample was taken).
    pub min_ready_sampled: Option<u32>,
    /// Lowest Ready count at any instant (`null`: the pod list never
    /// arrived, or infera was blind while it may have changed: see
    /// `bounds`).
    pub min_ready_exact: Option<u32>,
    /// Lowest routable count at any instant (`null` as above).
    pub min_routable_exact: Option<u32>,
    /// Time certainly below the floor.
    pub seconds_below_min_ready: f64,
    pub seconds_below_min_routable: f64,
    /// Longest continuous time with Ready or routable certainly below the floor.
    pub longest_gap_s: f64,
    /// Present when infera was blind while this role may have changed:
    /// what the evidence bounds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bounds: Option<RoleBounds>,
    /// Lowest routable count any sample saw (table only; not in the JSON).
    #[serde(skip)]
    pub min_routable_sampled: Option<u32>,
    /// (low, high) of the minima: the truth lies between them.
    #[serde(skip)]
    pub min_ready_range: Option<(u32, u32)>,
    #[serde(skip)]
    pub min_routable_range: Option<(u32, u32)>,
    /// Present when the role was already below the floor when the audit
    /// (or roll, or drain) began: that stretch is not its doing, and every
    /// other figure of the role counts from its end (a role below
    /// throughout: the counts it stayed at, and no time below).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub already_below: Option<AlreadyBelow>,
}

/// A role below the floor from the start, never lower than it began.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlreadyBelow {
    /// Ready and routable pods when the audit began (the lower bound when
    /// infera was blind).
    pub ready: u32,
    pub routable: u32,
    /// How long it stayed so (reported seconds from the start).
    pub seconds: f64,
    /// It stayed so to the end.
    pub to_end: bool,
}

/// What the evidence bounds of a role that infera did not see throughout.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoleBounds {
    /// The true minimum lies in `[low, high]`.
    pub min_ready: [u32; 2],
    pub min_routable: [u32; 2],
    /// Time possibly below the floor (certainly: the role's own fields).
    pub seconds_possibly_below_min_ready: f64,
    pub seconds_possibly_below_min_routable: f64,
    pub longest_possible_gap_s: f64,
    /// Time during which a count of this role was not known.
    pub unobserved_s: f64,
    /// The spans that leave it open whether the role held the floor.
    pub undecided: Vec<Undecided>,
}

/// A span in which a role may or may not have held the floor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Undecided {
    pub from: String,
    pub to: String,
    pub from_s: f64,
    pub to_s: f64,
    /// Lowest (low, high) bounds of the counts in the span.
    pub ready: [u32; 2],
    pub routable: [u32; 2],
}

/// An interval in which a watch was not current (JSON: `unobserved`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unobserved {
    /// The watched resource (`pods`).
    pub watch: String,
    /// UTC, this machine's clock.
    pub from: String,
    pub to: String,
    /// Reported seconds since the audit started.
    pub from_s: f64,
    pub to_s: f64,
    pub seconds: f64,
    /// Why infera was blind (the first failure).
    pub reason: String,
    /// Whether any audited pod changed meanwhile (`false`: the re-list or
    /// resume showed the same pods with the same transitions, so the
    /// figures stay exact).
    pub changed: bool,
    #[serde(skip)]
    pub(crate) wall: (Duration, Duration),
}

impl RoleReport {
    /// Whether the role certainly held the floor in both counts at every
    /// instant (after the stretch it was already below, if any; a role
    /// below throughout, never lower, lost nothing).
    pub fn held(&self, min_ready: u32) -> bool {
        self.stayed_below()
            || (self.min_ready_range.is_some_and(|m| m.0 >= min_ready)
                && self.min_routable_range.is_some_and(|m| m.0 >= min_ready))
    }

    /// Whether the role certainly fell below the floor (not counting the
    /// stretch it was already below).
    pub fn fell(&self, min_ready: u32) -> bool {
        !self.stayed_below()
            && (self.min_ready_range.is_some_and(|m| m.1 < min_ready)
                || self.min_routable_range.is_some_and(|m| m.1 < min_ready))
    }

    /// Below the floor from the start to the end, never lower.
    fn stayed_below(&self) -> bool {
        self.already_below.as_ref().is_some_and(|a| a.to_end)
    }

    /// `prefill was already below the floor when the roll began (0 Ready, 0
    /// routable, for 15s)`, for a role that was.
    pub fn already_text(&self, activity: &str) -> Option<String> {
        let a = self.already_below.as_ref()?;
        let how_long = if a.to_end {
            "throughout".to_string()
        } else {
            format!("for {}", format_seconds(a.seconds))
        };
        Some(format!(
            "{} was already below the floor when the {activity} began ({} Ready, {} routable, {how_long})",
            self.role, a.ready, a.routable
        ))
    }

    /// Neither held nor fell for certain: infera was blind when it mattered.
    pub fn undecided(&self, min_ready: u32) -> bool {
        self.min_ready_range.is_some() && !self.held(min_ready) && !self.fell(min_ready)
    }
}

/// A step marker as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRecord {
    pub service: String,
    pub kind: String,
    pub pod: Option<String>,
    pub node: Option<String>,
    /// UTC timestamp (RFC 3339).
    pub at: String,
    /// Reported seconds since the audit started.
    pub elapsed_s: f64,
    /// For a deletion (`old-terminating`, `deleted`, `evicted`): the time
    /// the pod had to stop, as its object said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shutdown: Option<Shutdown>,
    #[serde(skip)]
    pub(crate) wall_offset: Duration,
}

impl StepRecord {
    /// `    4.3s  decode   deleted           POD on NODE`: the step as a line
    /// of the audit's narration (live on stderr, and under the table).
    pub fn line(&self) -> String {
        let mut line = format!(
            "{:>8}  {:<8} {:<17}",
            format_seconds(self.elapsed_s),
            self.service,
            self.kind
        );
        if let Some(pod) = &self.pod {
            let _ = write!(line, " {pod}");
        }
        if let Some(node) = &self.node {
            let _ = write!(line, " on {node}");
        }
        line.trim_end().to_string()
    }
}

/// A restart undone before it served: its replacement pod, deleted before
/// it was Ready, and the restart's `kubectl.kubernetes.io/restartedAt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UndoneRestart {
    pub pod: String,
    pub restarted_at: String,
}

/// Step kinds that delete a pod (the rollout's and the narrator's).
pub(crate) fn is_deletion(kind: &str) -> bool {
    matches!(kind, "old-terminating" | "deleted" | "evicted")
}

/// The evidence at the end of every rollout and audit.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub target: String,
    /// What began with the audit: `audit`, `roll`, `drain`.
    #[serde(skip)]
    pub activity: &'static str,
    pub outcome: Outcome,
    pub sample_interval_s: f64,
    pub samples: u64,
    pub duration_s: f64,
    pub roles: Vec<RoleReport>,
    pub steps: Vec<StepRecord>,
    /// The operator generation the target's worker Deployments show
    /// (`pre-176`, `176` or `unknown`); absent for a plain Deployment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator_generation: Option<String>,
    #[serde(skip)]
    pub min_ready: u32,
    /// Intervals in which infera was blind (a partition, a blackhole, a
    /// re-list): what it did not see is part of the evidence.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unobserved: Vec<Unobserved>,
    /// Changes timed from the server's own timestamps (they arrived late,
    /// or a re-list or the Events told of them).
    #[serde(skip_serializing_if = "is_zero")]
    pub reconstructed_changes: u64,
    /// Samples not taken because infera was blind.
    #[serde(skip_serializing_if = "is_zero")]
    pub samples_unobserved: u64,
    /// The API server's clock minus this machine's, from `Date` headers,
    /// when it is at least a second (server timestamps are corrected by it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_skew_s: Option<f64>,
    /// Whether the pod list ever arrived (otherwise there are no numbers).
    #[serde(skip)]
    pub synced: bool,
    /// Writing `--samples` failed part-way (the message), if it did.
    #[serde(skip)]
    pub samples_csv_error: Option<String>,
    #[serde(skip)]
    pub timeline: Timeline,
    /// The services whose steps each role's chart panel marks, when they
    /// differ from `roles[i].services` (a several-target chart qualifies
    /// them with their target); `None`: the roles' own.
    #[serde(skip)]
    pub chart_services: Option<Vec<Vec<String>>>,
    /// When the audit's clock started (the first pod list), on this
    /// process's monotonic clock: steps are `origin + wall_offset`.
    #[serde(skip)]
    pub origin: Option<Instant>,
    /// `origin` in UTC (RFC 3339): when the evidence begins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// Replacements a restart created that were deleted before they were
    /// Ready while the pods without that restart kept running.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub undone_restarts: Vec<UndoneRestart>,
    /// When a serving prefill and a serving decode had different KV
    /// identities (requests paired across them fail or recompute).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mixed_windows: Vec<crate::mixed::MixedWindow>,
    /// The requests sent through the serving path (`--traffic`), joined
    /// with the steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traffic: Option<traffic::TrafficReport>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

pub use super::timeline::ReportError;

/// Where a report goes besides stdout: `--report FILE.json`,
/// `--timeline FILE.svg|FILE.csv`.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    pub report: Option<PathBuf>,
    pub timeline: Vec<PathBuf>,
}

impl Outputs {
    fn paths(&self) -> impl Iterator<Item = &PathBuf> {
        self.report.iter().chain(self.timeline.iter())
    }

    /// Before the work: every file can be created where it is named (its
    /// directory exists, it is not a directory) and every timeline has a
    /// format. Failures at write time are still possible (permissions, a
    /// full disk) and reported by [`write`](Self::write).
    pub fn check(&self) -> Result<(), ReportError> {
        for path in self.paths() {
            let name = path.display().to_string();
            if path.is_dir() {
                return Err(ReportError::IsDirectory { path: name });
            }
            let dir = path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if !dir.is_dir() {
                return Err(ReportError::NoDirectory {
                    path: name,
                    dir: dir.display().to_string(),
                });
            }
        }
        for path in &self.timeline {
            timeline_format(path)?;
        }
        Ok(())
    }

    /// Write every file; one result per file, in order (`Ok`: what was
    /// written, `report` or `timeline`, and where). A `--samples` CSV that
    /// failed part-way is reported too.
    pub fn write(&self, report: &Report) -> Vec<Result<(&'static str, PathBuf), ReportError>> {
        let mut results = Vec::new();
        if let Some(msg) = &report.samples_csv_error {
            results.push(Err(ReportError::Samples(msg.clone())));
        }
        if let Some(path) = &self.report {
            results.push(report.write_json(path).map(|()| ("report", path.clone())));
        }
        for path in &self.timeline {
            results.push(
                report
                    .write_timeline(path)
                    .map(|()| ("timeline", path.clone())),
            );
        }
        results
    }
}

/// `svg` or `csv`, from the file name.
fn timeline_format(path: &Path) -> Result<&'static str, ReportError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("svg") => Ok("svg"),
        Some("csv") => Ok("csv"),
        _ => Err(ReportError::UnknownFormat {
            path: path.display().to_string(),
        }),
    }
}

/// `15m10s`, `3s`, `2.5s`, `1h2m3s`, `0s`.
pub fn format_seconds(seconds: f64) -> String {
    if !seconds.is_finite() || seconds <= 0.0 {
        return "0s".to_string();
    }
    if seconds < 10.0 {
        let rounded = (seconds * 10.0).round() / 10.0;
        if rounded.fract() == 0.0 {
            return format!("{rounded:.0}s");
        }
        return format!("{rounded:.1}s");
    }
    let total = seconds.round() as u64;
    let (h, m, s) = (total / 3600, (total % 3600) / 60, total % 60);
    let mut out = String::new();
    if h > 0 {
        let _ = write!(out, "{h}h");
    }
    if h > 0 || m > 0 {
        let _ = write!(out, "{m}m");
    }
    let _ = write!(out, "{s}s");
    out
}

/// The per-role columns of the audit table (one target's and several's).
pub(crate) const ROLE_COLUMNS: [&str; 8] = [
    "role",
    "services",
    "samples",
    "min Ready sampled",
    "min Ready exact",
    "min routable exact",
    "time below min (Ready / routable)",
    "longest gap",
];

/// An empty table in the audit's style with `header`.
pub(crate) fn new_table(header: Vec<&str>) -> comfy_table::Table {
    let mut table = comfy_table::Table::new();
    table
        .load_preset(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_header(header);
    fit_terminal(&mut table);
    table
}

/// How a table fits a terminal `width` columns wide (`None`: not a
/// terminal): to its width, except a terminal that reports 0 columns (a
/// pseudo-terminal nobody sized), where wrapping to it would squash every
/// column to one character; then as into a pipe.
pub fn arrangement(width: Option<u16>) -> comfy_table::ContentArrangement {
    match width {
        Some(0) => comfy_table::ContentArrangement::Disabled,
        _ => comfy_table::ContentArrangement::Dynamic,
    }
}

/// A table set to fit its terminal ([`arrangement`]).
pub fn fit_terminal(table: &mut comfy_table::Table) {
    let fit = arrangement(table.width());
    table.set_content_arrangement(fit);
}

/// `0` or `0–1`.
pub(crate) fn range_text((low, high): (u32, u32)) -> String {
    if low == high {
        low.to_string()
    } else {
        format!("{low}–{high}")
    }
}

/// `12:00:05` of an RFC 3339 time (the time of day, to the second).
fn clock_time(rfc3339: &str) -> &str {
    rfc3339.get(11..19).unwrap_or(rfc3339)
}

fn opt(v: Option<u32>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

impl Report {
    /// Exit code: 0 complete and every role held the floor; 1 complete but a
    /// role fell below it, or a request through the serving path failed
    /// (`--traffic`); 4 complete, but infera was blind while a role may
    /// have fallen (the minimum cannot be established); 3 stalled, aborted,
    /// timed out or reverted; 130 interrupted.
    pub fn exit(&self) -> Exit {
        match self.outcome {
            Outcome::Complete if self.traffic_failed() => Exit::Findings,
            Outcome::Complete if self.all_held() => Exit::Ok,
            Outcome::Complete if self.any_fell() || !self.synced => Exit::Findings,
            Outcome::Complete => Exit::Unproven,
            Outcome::Stalled | Outcome::Aborted | Outcome::Timeout | Outcome::Reverted => {
                Exit::Stalled
            }
            Outcome::Interrupted => Exit::Interrupted,
        }
    }

    /// Whether a request sent through the serving path failed that the
    /// prober cannot be blamed for: a gap even when the pod counts held.
    pub fn traffic_failed(&self) -> bool {
        self.traffic
            .as_ref()
            .is_some_and(traffic::TrafficReport::has_failures)
    }

    /// Reported seconds per wall second.
    pub fn time_scale(&self) -> f64 {
        self.timeline.time_scale
    }

    /// Whether every role held the floor in both counts at every instant.
    pub fn all_held(&self) -> bool {
        self.synced && self.roles.iter().all(|r| r.held(self.min_ready))
    }

    /// Whether some role certainly fell below the floor.
    pub fn any_fell(&self) -> bool {
        self.roles.iter().any(|r| r.fell(self.min_ready))
    }

    /// The table per role, as text (comfy-table).
    pub fn table(&self) -> String {
        let mut table = new_table(ROLE_COLUMNS.to_vec());
        for r in &self.roles {
            table.add_row(self.role_cells(r));
        }
        match self.already_note() {
            Some(note) => format!("{table}\n{note}"),
            None => table.to_string(),
        }
    }

    /// Under the table when a role was already below the floor when the
    /// roll began: which columns leave that stretch out.
    pub fn already_note(&self) -> Option<&'static str> {
        self.roles
            .iter()
            .any(|r| r.already_below.is_some())
            .then_some(
                "(min exact, time below and longest gap leave out the stretch a role was already \
             below the floor when the roll began (below throughout: the counts it stayed at); \
             min sampled does not)",
            )
    }

    /// One role's cells, in [`ROLE_COLUMNS`] order.
    pub(crate) fn role_cells(&self, r: &RoleReport) -> Vec<String> {
        vec![
            r.role.clone(),
            r.services.join(","),
            self.samples.to_string(),
            opt(r.min_ready_sampled),
            r.min_ready_range
                .map_or_else(|| "-".to_string(), range_text),
            r.min_routable_range
                .map_or_else(|| "-".to_string(), range_text),
            format!(
                "{} / {}",
                format_seconds(r.seconds_below_min_ready),
                format_seconds(r.seconds_below_min_routable)
            ),
            format_seconds(r.longest_gap_s),
        ]
    }

    /// The verdict line: [`Self::sentence`], led by how the run ended when
    /// it did not complete (`reverted; 12 samples over 1:02: …`), so a
    /// reverted or aborted rollout whose pods all held is not read as a
    /// success.
    pub fn verdict(&self) -> String {
        match self.outcome {
            Outcome::Complete => self.sentence(),
            other => format!("{}; {}", other.as_str(), self.sentence()),
        }
    }

    /// One sentence: what the evidence says.
    pub fn sentence(&self) -> String {
        format!(
            "{}{}{}",
            self.counts_sentence(),
            self.mixed_note(),
            self.undone_note()
        )
    }

    /// `; prefill and decode of different KV identities served together
    /// for …` when they did.
    fn mixed_note(&self) -> String {
        if self.mixed_windows.is_empty() {
            return String::new();
        }
        format!(
            "; prefill and decode of different KV identities served together for {}: a request paired across them fails or is prefilled again on the decode",
            crate::mixed::describe(&self.mixed_windows)
        )
    }

    /// `; a restart was undone before it served: …` for each replacement
    /// a restart created that was deleted before it was Ready while the
    /// pods without that restart kept running (the infera operator reverts
    /// a `kubectl rollout restart` of a Deployment it renders).
    fn undone_note(&self) -> String {
        self.undone_restarts
            .iter()
            .map(|u| {
                format!(
                    "; a restart was undone before it served: {} (kubectl.kubernetes.io/restartedAt {}) was deleted before it was Ready and the pods without that restart kept running; if the infera operator renders this Deployment it reverts edits to it: restart through the InferaDeployment (`infera rollout restart idep/NAME`)",
                    u.pod, u.restarted_at
                )
            })
            .collect()
    }

    /// What the pod counts say.
    fn counts_sentence(&self) -> String {
        let plural = if self.samples == 1 { "" } else { "s" };
        let head = format!(
            "{} sample{plural} over {}",
            self.samples,
            format_seconds(self.duration_s)
        );
        let min = self.min_ready;
        if !self.synced {
            return format!("{head}: the pod list never arrived, so nothing was measured");
        }
        if self.roles.is_empty() {
            return format!("{head}: no role to audit");
        }
        let already: Vec<String> = (self.roles.iter())
            .filter_map(|r| r.already_text(self.activity))
            .collect();
        if self.all_held() && already.is_empty() {
            return format!(
                "{head}: never fewer than {min} Ready and {min} routable pod{} per role{}",
                if min == 1 { "" } else { "s" },
                self.unobserved_note()
            );
        }
        if self.all_held() {
            return format!(
                "{head}: the {} took no role below the floor; {}{}",
                self.activity,
                already.join("; "),
                self.unobserved_note()
            );
        }
        let mut problems: Vec<String> = self
            .roles
            .iter()
            .filter(|r| r.fell(min))
            .map(|r| self.fell_text(r))
            .collect();
        let undecided: Vec<String> = self
            .roles
            .iter()
            .filter(|r| r.undecided(min))
            .map(|r| self.undecided_text(r))
            .collect();
        if !undecided.is_empty() {
            problems.push(format!(
                "the minimum cannot be established: {}",
                undecided.join("; ")
            ));
        }
        problems.extend(already);
        format!("{head}: {}{}", problems.join("; "), self.unobserved_note())
    }

    /// ` (unobserved 55s: …)` when infera was blind at some point.
    fn unobserved_note(&self) -> String {
        if self.unobserved.is_empty() {
            return String::new();
        }
        let total: f64 = self.unobserved.iter().map(|u| u.seconds).sum();
        let how = if self.unobserved.iter().all(|u| !u.changed) {
            "nothing changed while unobserved, so the figures stay exact"
        } else if self
            .roles
            .iter()
            .all(|r| r.bounds.as_ref().is_none_or(|b| b.undecided.is_empty()))
        {
            "what changed meanwhile was reconstructed from the API server's timestamps"
        } else {
            "bounds where the API server's timestamps could not settle it"
        };
        format!(
            " (unobserved {} in {} interval{}; {how})",
            format_seconds(total),
            self.unobserved.len(),
            if self.unobserved.len() == 1 { "" } else { "s" }
        )
    }

    fn fell_text(&self, r: &RoleReport) -> String {
        let min = self.min_ready;
        let mut parts = Vec::new();
        if let Some(m) = r.min_ready_range.filter(|m| m.1 < min) {
            parts.push(format!(
                "{} Ready for {}",
                range_text(m),
                format_seconds(r.seconds_below_min_ready)
            ));
        }
        if let Some(m) = r.min_routable_range.filter(|m| m.1 < min) {
            parts.push(format!(
                "{} routable for {}",
                range_text(m),
                format_seconds(r.seconds_below_min_routable)
            ));
        }
        let mut text = format!(
            "{} fell to {} (longest gap {})",
            r.role,
            parts.join(" and "),
            format_seconds(r.longest_gap_s)
        );
        if let Some(b) = &r.bounds
            && b.longest_possible_gap_s > r.longest_gap_s
        {
            let _ = write!(
                text,
                ", possibly {}",
                format_seconds(b.longest_possible_gap_s)
            );
        }
        let sampled_ok = r.min_ready_sampled.is_some_and(|m| m >= min)
            && r.min_routable_sampled.is_some_and(|m| m >= min);
        if sampled_ok {
            text.push_str(", which no sample saw");
        } else if r.min_ready_range.is_some_and(|m| m.0 >= min) {
            text.push_str(" while staying Ready, a silent outage");
        }
        text
    }

    /// `decode 0–1 Ready and 0–1 routable from 12:00:05 to 12:01:00`.
    fn undecided_text(&self, r: &RoleReport) -> String {
        let Some(b) = &r.bounds else {
            return format!("{} was not observed throughout", r.role);
        };
        let spans: Vec<String> = b
            .undecided
            .iter()
            .map(|u| {
                format!(
                    "{} Ready and {} routable from {} to {}",
                    range_text((u.ready[0], u.ready[1])),
                    range_text((u.routable[0], u.routable[1])),
                    clock_time(&u.from),
                    clock_time(&u.to)
                )
            })
            .collect();
        format!("{} {}", r.role, spans.join(", "))
    }

    /// The JSON document (`--report FILE.json`).
    pub fn try_to_json(&self) -> Result<String, ReportError> {
        serde_json::to_string_pretty(self).map_err(|e| ReportError::Encode(e.to_string()))
    }

    /// The JSON document for diagnostics (test messages, logs): the
    /// encoding error in words if there is one, never a silent `{}`.
    pub fn to_json(&self) -> String {
        self.try_to_json().unwrap_or_else(|e| format!("({e})"))
    }

    /// Write the JSON report to `path`.
    pub fn write_json(&self, path: &Path) -> Result<(), ReportError> {
        std::fs::write(path, self.try_to_json()? + "\n").map_err(|source| ReportError::Io {
            path: path.display().to_string(),
            source,
        })
    }

    /// The services of each role, in role order (the chart marks a role's
    /// own steps only).
    pub fn role_services(&self) -> Vec<Vec<String>> {
        match &self.chart_services {
            Some(services) => services.clone(),
            None => self.roles.iter().map(|r| r.services.clone()).collect(),
        }
    }

    /// The requests as timeline marks (`--traffic`; empty without it).
    pub fn request_marks(&self) -> &[super::traffic::RequestMark] {
        self.traffic.as_ref().map_or(&[], |t| t.requests.as_slice())
    }

    /// Write the timeline to `path`: `.svg` draws a chart, `.csv` writes rows.
    pub fn write_timeline(&self, path: &Path) -> Result<(), ReportError> {
        let requests = self.request_marks();
        match timeline_format(path)? {
            "svg" => self.timeline.write_svg(
                path,
                &self.target,
                self.min_ready,
                &self.role_services(),
                requests,
            ),
            _ => self.timeline.write_csv(path, requests),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_of_no_columns_does_not_squash_tables() {
        use comfy_table::ContentArrangement::{Disabled, Dynamic};
        assert!(matches!(arrangement(Some(0)), Disabled));
        assert!(matches!(arrangement(Some(80)), Dynamic));
        assert!(matches!(arrangement(None), Dynamic));
        let mut table = comfy_table::Table::new();
        table
            .set_content_arrangement(Dynamic)
            .set_width(0)
            .set_header(vec!["role", "services"])
            .add_row(vec!["decode", "decode"]);
        fit_terminal(&mut table);
        assert!(table.to_string().contains("decode"), "{table}");
    }

    #[test]
    fn seconds_format_like_the_field_note() {
        assert_eq!(format_seconds(910.0), "15m10s");
        assert_eq!(format_seconds(3.0), "3s");
        assert_eq!(format_seconds(2.46), "2.5s");
        assert_eq!(format_seconds(0.0), "0s");
        assert_eq!(format_seconds(3723.0), "1h2m3s");
        assert_eq!(format_seconds(60.0), "1m0s");
    }
}
