//! Request evidence: what the traffic client (`infera-traffic`) saw of each
//! request it sent through the serving path, joined with the roll's steps
//! into a tally per leg and per step, the failures' causes and a verdict.
//!
//! The classes and the wire contract are in `docs/traffic.md`. A request
//! that failed while the control probe failed (infera was blind: the API
//! server, not the fleet, did not answer) is *unattributed*: it is shown,
//! never counted against the roll, and never counted as a success.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{Report, StepRecord, format_seconds};

/// How one request ended (`docs/traffic.md`, "Classes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// HTTP 200 and a complete answer.
    Ok,
    /// Connect refused or reset before a status, or the API server's proxy
    /// could not reach the backend.
    Refused,
    /// A status other than 200.
    Status,
    /// An error event inside a 200.
    ErrorEvent,
    /// The body ended before the answer was complete.
    Cut,
    /// No complete answer within the deadline.
    Hung,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Ok => "ok",
            Class::Refused => "refused",
            Class::Status => "status",
            Class::ErrorEvent => "error-event",
            Class::Cut => "cut",
            Class::Hung => "hung",
        }
    }
}

/// One request as the client saw it (a line of `--traffic-log`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestRecord {
    /// The `X-Request-Id` it carried.
    pub id: String,
    /// `/v1/chat/completions` or `/v1/completions`.
    pub path: String,
    pub stream: bool,
    /// Wall clock, milliseconds since the Unix epoch.
    pub started_ms: u64,
    pub ended_ms: u64,
    /// Time to the first token (streams that produced one), milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<u64>,
    pub class: Class,
    /// The HTTP status, when one arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// What went wrong, in a few words (never a header or a credential).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The worker pods that served it (the router's `x-infera-served-by`).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub served_by: Vec<String>,
    /// Failed while the control probe failed: not the fleet's failure.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub unattributed: bool,
    /// The router paired a prefill and a decode of different KV identities
    /// for it (its `x-infera-kv-pair: mismatch`).
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub mixed_pair: bool,
    /// When it started, on this process's monotonic clock.
    #[serde(skip)]
    pub start: Option<Instant>,
}

impl RequestRecord {
    /// `cut`, `status 503`, …
    pub fn label(&self) -> String {
        match (self.class, self.status) {
            (Class::Status, Some(code)) => format!("HTTP {code}"),
            (class, _) => class.as_str().to_string(),
        }
    }

    /// The label as a sentence says it: `cut mid-answer`, `answered HTTP 503`.
    pub fn phrase(label: &str) -> String {
        match label {
            "cut" => "cut mid-answer".into(),
            "error-event" => "ended in an error event inside a 200".into(),
            "refused" => "refused before an answer".into(),
            "hung" => "hung past the deadline".into(),
            other => format!("answered {other}"),
        }
    }

    /// When it ended, on this process's monotonic clock.
    fn end(&self) -> Option<Instant> {
        let took = Duration::from_millis(self.ended_ms.saturating_sub(self.started_ms));
        self.start.map(|start| start + took)
    }

    fn failed(&self) -> bool {
        self.class != Class::Ok
    }

    fn counted_failure(&self) -> bool {
        self.failed() && !self.unattributed
    }
}

/// Sent, succeeded and failed (by label) of a set of requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    pub sent: u64,
    pub succeeded: u64,
    /// Failures the prober cannot be blamed for, by label (`cut`, `HTTP 503`).
    pub failed: BTreeMap<String, u64>,
    /// Failures while the control probe failed.
    pub unattributed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_p50_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_p99_ms: Option<u64>,
    /// The longest run of consecutive counted failures, seconds of wall
    /// time from the first one's start to the last one's end.
    pub longest_failure_run_s: f64,
    /// Requests the router paired across KV identities (whatever their end).
    #[serde(skip_serializing_if = "super::is_zero", default)]
    pub served_mixed: u64,
}

impl Tally {
    pub fn of<'a>(records: impl IntoIterator<Item = &'a RequestRecord>) -> Tally {
        let mut t = Tally::default();
        let mut ttfts = Vec::new();
        let mut run: Option<(u64, u64)> = None;
        let mut longest = 0u64;
        for r in records {
            t.sent += 1;
            t.served_mixed += u64::from(r.mixed_pair);
            if r.class == Class::Ok {
                t.succeeded += 1;
                ttfts.extend(r.ttft_ms);
                run = None;
            } else if r.unattributed {
                t.unattributed += 1;
            } else {
                *t.failed.entry(r.label()).or_default() += 1;
                let (from, _) = *run.get_or_insert((r.started_ms, r.ended_ms));
                run = Some((from, r.ended_ms.max(from)));
                longest = longest.max(r.ended_ms.saturating_sub(from));
            }
        }
        ttfts.sort_unstable();
        t.ttft_p50_ms = percentile(&ttfts, 50);
        t.ttft_p99_ms = percentile(&ttfts, 99);
        t.longest_failure_run_s = longest as f64 / 1000.0;
        t
    }

    /// Failures counted against the roll.
    pub fn failures(&self) -> u64 {
        self.failed.values().sum()
    }
}

/// The nearest-rank percentile of sorted values.
fn percentile(sorted: &[u64], p: usize) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

/// Failures put beside the step that caused them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cause {
    /// The failures' label (`cut`, `HTTP 503`).
    pub label: String,
    pub count: u64,
    /// The step: `decode deleted llama-decode-7c9d`, or `none` when the
    /// failures came before any step.
    pub step: String,
    /// Reported seconds since the audit started, of the step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_elapsed_s: Option<f64>,
    /// The time the deleted pod had to stop, when the step is a deletion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shutdown: Option<super::Shutdown>,
}

/// A leg's or a step's tally.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Span {
    /// The leg (service), or the step (`decode deleted llama-decode-7c9d`).
    pub name: String,
    #[serde(flatten)]
    pub tally: Tally,
}

/// The request evidence of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrafficReport {
    /// Where the requests went (`service llm/llama-router:8000 through the
    /// API server's proxy`).
    pub path: String,
    /// Requests per second asked for.
    pub rate: f64,
    #[serde(flatten)]
    pub total: Tally,
    /// Ticks at which no request was sent because the concurrency limit was
    /// reached (the prober's own limit, not a failure).
    pub not_sent: u64,
    /// Seconds (reported time since the audit started) during which the
    /// control probe failed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blind: Vec<(f64, f64)>,
    pub legs: Vec<Span>,
    pub steps: Vec<Span>,
    pub causes: Vec<Cause>,
    /// Every request as a mark on the timeline, in start order (what the
    /// HTML strip, the SVG lane and the CSV rows are drawn from).
    pub requests: Vec<RequestMark>,
}

/// One request on the timeline, compact (`{"t":12.5,"c":"cut"}`: a run of
/// an hour at 2/s is under 200 kB of JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestMark {
    /// Its start: reported seconds since the audit started, to the ms.
    #[serde(rename = "t")]
    pub elapsed_s: f64,
    #[serde(rename = "c")]
    pub class: Class,
    /// The HTTP status of a `status` failure.
    #[serde(rename = "s", skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Failed while the control probe failed (not counted).
    #[serde(rename = "u", skip_serializing_if = "std::ops::Not::not", default)]
    pub unattributed: bool,
}

impl RequestMark {
    fn of(r: &RequestRecord, elapsed_s: f64) -> RequestMark {
        RequestMark {
            elapsed_s: (elapsed_s * 1000.0).round() / 1000.0,
            class: r.class,
            status: r.status.filter(|_| r.class == Class::Status),
            unattributed: r.failed() && r.unattributed,
        }
    }

    /// `ok`, `cut`, `HTTP 503`, …
    pub fn label(&self) -> String {
        match (self.class, self.status) {
            (Class::Status, Some(code)) => format!("HTTP {code}"),
            (class, _) => class.as_str().to_string(),
        }
    }

    /// Whether it failed and counts against the roll.
    pub fn counted_failure(&self) -> bool {
        self.class != Class::Ok && !self.unattributed
    }
}

/// What the runner hands over when it stops.
#[derive(Debug, Clone, Default)]
pub struct TrafficRun {
    pub path: String,
    pub rate: f64,
    pub records: Vec<RequestRecord>,
    pub not_sent: u64,
    /// Wall intervals in which the control probe failed.
    pub blind: Vec<(Instant, Instant)>,
}

impl TrafficRun {
    /// Mark every failed request that overlaps a blind interval (widened by
    /// `margin` on each side: a probe samples once a second) unattributed.
    pub fn attribute(&mut self, margin: Duration) {
        let blind = self.blind.clone();
        for r in &mut self.records {
            let (Some(start), Some(end), true) = (r.start, r.end(), r.failed()) else {
                continue;
            };
            r.unattributed = blind
                .iter()
                .any(|&(from, to)| start <= to + margin && end + margin >= from);
        }
    }
}

/// A step with its instant on this process's clock.
struct TimedStep<'a> {
    at: Instant,
    step: &'a StepRecord,
}

fn step_name(s: &StepRecord) -> String {
    let mut name = format!("{} {}", s.service, s.kind);
    if let Some(pod) = &s.pod {
        let _ = write!(name, " {pod}");
    }
    name
}

fn timed_steps(report: &Report) -> Vec<TimedStep<'_>> {
    let Some(origin) = report.origin else {
        return Vec::new();
    };
    report
        .steps
        .iter()
        .map(|step| TimedStep {
            at: origin + step.wall_offset,
            step,
        })
        .collect()
}

/// The last step at or before `at`.
fn step_before<'s, 'a>(steps: &'s [TimedStep<'a>], at: Instant) -> Option<&'s TimedStep<'a>> {
    steps.iter().rev().find(|s| s.at <= at)
}

/// The step a failure is put beside: the deletion of a pod that served it
/// (a cut stream names its worker), else the last step before it ended.
fn cause_of<'s, 'a>(steps: &'s [TimedStep<'a>], r: &RequestRecord) -> Option<&'s TimedStep<'a>> {
    let end = r.end()?;
    let served = steps.iter().rev().find(|s| {
        s.at <= end + Duration::from_secs(1)
            && super::is_deletion(&s.step.kind)
            && s.step.pod.as_ref().is_some_and(|p| r.served_by.contains(p))
    });
    served.or_else(|| step_before(steps, end))
}

impl TrafficReport {
    /// Join a run's requests with `report`'s steps.
    pub fn build(run: &TrafficRun, report: &Report) -> TrafficReport {
        let steps = timed_steps(report);
        let scale = report.time_scale();
        let since = |at: Instant| {
            report.origin.map_or(0.0, |o| {
                at.saturating_duration_since(o).as_secs_f64() * scale
            })
        };
        TrafficReport {
            path: run.path.clone(),
            rate: run.rate,
            total: Tally::of(&run.records),
            not_sent: run.not_sent,
            blind: run
                .blind
                .iter()
                .map(|&(a, b)| (since(a), since(b)))
                .collect(),
            legs: spans(&run.records, |r| {
                step_before(&steps, r.start?).map(|s| s.step.service.clone())
            }),
            steps: spans(&run.records, |r| {
                step_before(&steps, r.start?).map(|s| step_name(s.step))
            }),
            causes: causes(&run.records, &steps),
            requests: marks(&run.records, since),
        }
    }

    /// Whether a request failed that the prober cannot be blamed for.
    pub fn has_failures(&self) -> bool {
        self.total.failures() > 0
    }

    /// The verdict, one sentence.
    pub fn sentence(&self) -> String {
        let t = &self.total;
        let mut out = if t.sent == 0 {
            "no request was sent".to_string()
        } else if self.has_failures() {
            let what: Vec<String> = (self.causes.iter())
                .map(|c| match c.step_elapsed_s {
                    Some(at) => format!(
                        "{} {} after {} at +{}{}",
                        c.count,
                        RequestRecord::phrase(&c.label),
                        c.step,
                        format_seconds(at),
                        c.shutdown
                            .map(|s| format!(" ({})", s.describe()))
                            .unwrap_or_default()
                    ),
                    None => format!(
                        "{} {} before any step",
                        c.count,
                        RequestRecord::phrase(&c.label)
                    ),
                })
                .collect();
            format!(
                "{} of {} requests failed: {}",
                t.failures(),
                t.sent,
                what.join("; ")
            )
        } else if t.unattributed == 0 {
            format!("all {} requests succeeded", t.sent)
        } else {
            format!(
                "{} of {} requests succeeded, none failed that infera could see",
                t.succeeded, t.sent
            )
        };
        if let (Some(p50), Some(p99)) = (t.ttft_p50_ms, t.ttft_p99_ms) {
            let _ = write!(out, " (TTFT p50 {p50} ms, p99 {p99} ms, wall clock)");
        }
        if self.not_sent > 0 {
            let _ = write!(
                out,
                "; {} more were not sent: the concurrency limit was reached",
                self.not_sent
            );
        }
        if t.unattributed > 0 {
            let _ = write!(
                out,
                "; {} more failed while the control probe failed (infera was blind): unattributed",
                t.unattributed
            );
        }
        if t.served_mixed > 0 {
            let _ = write!(
                out,
                "; {} were paired across KV identities (a prefill and a decode of different revisions, the router said)",
                t.served_mixed
            );
        }
        out
    }

    /// The per-leg table.
    pub fn table(&self) -> String {
        let mut table = super::new_table(Span::HEAD.to_vec());
        for span in &self.legs {
            table.add_row(span.cells());
        }
        table.to_string()
    }
}

impl Span {
    /// The columns of a span table (the first names the leg or the step).
    pub const HEAD: [&'static str; 7] = [
        "leg",
        "sent",
        "succeeded",
        "failed",
        "unattributed",
        "TTFT p50 / p99 (wall)",
        "longest failure run (wall)",
    ];

    /// A span table's row, one cell per [`Span::HEAD`] column.
    pub fn cells(&self) -> Vec<String> {
        let t = &self.tally;
        let failed: Vec<String> = t.failed.iter().map(|(k, v)| format!("{v} {k}")).collect();
        let ttft = match (t.ttft_p50_ms, t.ttft_p99_ms) {
            (Some(a), Some(b)) => format!("{a} / {b} ms"),
            _ => "-".into(),
        };
        vec![
            self.name.clone(),
            t.sent.to_string(),
            t.succeeded.to_string(),
            if failed.is_empty() {
                "0".into()
            } else {
                failed.join(", ")
            },
            t.unattributed.to_string(),
            ttft,
            format_seconds(t.longest_failure_run_s),
        ]
    }
}

/// Records grouped by `key` (requests with no key: `before the roll`).
fn spans(records: &[RequestRecord], key: impl Fn(&RequestRecord) -> Option<String>) -> Vec<Span> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: BTreeMap<String, Vec<&RequestRecord>> = BTreeMap::new();
    for r in records {
        let k = key(r).unwrap_or_else(|| "before the first step".into());
        if !groups.contains_key(&k) {
            order.push(k.clone());
        }
        groups.entry(k).or_default().push(r);
    }
    order
        .into_iter()
        .map(|name| {
            let tally = Tally::of(groups.get(&name).into_iter().flatten().copied());
            Span { name, tally }
        })
        .collect()
}

/// The requests' marks in start order (a record without a monotonic start,
/// as read back from a log, has no place on the timeline and is left out).
fn marks(records: &[RequestRecord], since: impl Fn(Instant) -> f64) -> Vec<RequestMark> {
    let mut out: Vec<RequestMark> = records
        .iter()
        .filter_map(|r| Some(RequestMark::of(r, since(r.start?))))
        .collect();
    out.sort_by(|a, b| a.elapsed_s.total_cmp(&b.elapsed_s));
    out
}

fn causes(records: &[RequestRecord], steps: &[TimedStep<'_>]) -> Vec<Cause> {
    let mut out: Vec<Cause> = Vec::new();
    for r in records.iter().filter(|r| r.counted_failure()) {
        let step = cause_of(steps, r);
        let name = step.map_or_else(|| "none".to_string(), |s| step_name(s.step));
        let label = r.label();
        match out.iter_mut().find(|c| c.label == label && c.step == name) {
            Some(c) => c.count += 1,
            None => out.push(Cause {
                label,
                count: 1,
                step: name,
                step_elapsed_s: step.map(|s| s.step.elapsed_s),
                shutdown: step.and_then(|s| s.step.shutdown),
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests;
