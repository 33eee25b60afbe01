//! The page's request section (`--traffic`): a strip under the pod
//! timeline (each request a mark at its start, a row per class, the
//! failures' causes labelled at their steps), the per-leg and per-step
//! tables.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use infera_audit::minutes_seconds as mss;
use infera_audit::traffic::{Class, RequestMark, Span, TrafficReport};
use infera_audit::{Report, format_seconds};

use super::escape;

const WIDTH: f64 = 1100.0;
/// The row names' column.
const LEFT: f64 = 130.0;
const RIGHT: f64 = 20.0;
const ROW: f64 = 22.0;
const CAUSE_LINE: f64 = 15.0;
const AXIS: f64 = 26.0;
/// Marks of one row closer than a pixel are drawn once.
const PIXEL: f64 = 1.0;

/// A row of the strip: its name (`ok`, `cut`, `HTTP 503`, `unattributed`),
/// its colour and the marks' x positions.
struct Row {
    name: String,
    colour: &'static str,
    starts: Vec<f64>,
}

fn colour(mark: &RequestMark) -> &'static str {
    if mark.unattributed {
        return "#969696";
    }
    match mark.class {
        Class::Ok => "#2ca02c",
        Class::Cut => "#d62728",
        Class::Status => "#ff7f0e",
        Class::Refused => "#9467bd",
        Class::ErrorEvent => "#8c564b",
        Class::Hung => "#333333",
    }
}

fn row_name(mark: &RequestMark) -> String {
    if mark.unattributed {
        "unattributed".into()
    } else {
        mark.label()
    }
}

/// Rows in order: ok, the failures by label, unattributed.
fn rows(marks: &[RequestMark]) -> Vec<Row> {
    let mut by: BTreeMap<(u8, String), Row> = BTreeMap::new();
    for m in marks {
        let rank = match (m.class, m.unattributed) {
            (Class::Ok, _) => 0,
            (_, false) => 1,
            (_, true) => 2,
        };
        let name = row_name(m);
        by.entry((rank, name.clone()))
            .or_insert_with(|| Row {
                name,
                colour: colour(m),
                starts: Vec::new(),
            })
            .starts
            .push(m.elapsed_s);
    }
    by.into_values().collect()
}

/// The strip's x scale: reported seconds to pixels.
struct Scale {
    end: f64,
}

impl Scale {
    fn x(&self, seconds: f64) -> f64 {
        LEFT + seconds.clamp(0.0, self.end) / self.end * (WIDTH - LEFT - RIGHT)
    }

    /// Round tick steps: at most about six ticks.
    fn ticks(&self) -> Vec<f64> {
        let steps = [1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0];
        let step = steps
            .into_iter()
            .find(|s| self.end / s <= 6.0)
            .unwrap_or(self.end / 6.0)
            .max(1e-3);
        (0..)
            .map(|i| f64::from(i) * step)
            .take_while(|t| *t <= self.end + 1e-9)
            .collect()
    }
}

/// The request section of the page: the path, the strip, the tables.
pub fn section(h: &mut String, report: &Report, traffic: &TrafficReport) {
    let _ = writeln!(
        h,
        "<h2>Requests</h2><p id=\"traffic-path\">{}, {} requests/s asked for (wall clock)</p>",
        escape(&traffic.path),
        traffic.rate
    );
    strip(h, report, traffic);
    spans_table(h, "legs", "leg", &traffic.legs);
    spans_table(
        h,
        "traffic-steps",
        "step (requests that started in it)",
        &traffic.steps,
    );
}

/// The verdict on the requests, one sentence (beside the pod verdict).
pub fn verdict(h: &mut String, traffic: &TrafficReport) {
    let class = if traffic.has_failures() {
        "verdict bad"
    } else {
        "verdict"
    };
    let _ = writeln!(
        h,
        "<p class=\"{class}\" id=\"traffic-verdict\">requests: {}</p>",
        escape(&traffic.sentence())
    );
}

fn strip(h: &mut String, report: &Report, traffic: &TrafficReport) {
    let marks = &traffic.requests;
    let last = marks.last().map_or(0.0, |m| m.elapsed_s);
    let scale = Scale {
        end: report.duration_s.max(last).max(1.0),
    };
    let rows = rows(marks);
    let top = 8.0 + CAUSE_LINE * traffic.causes.len() as f64;
    let height = top + ROW * rows.len() as f64 + AXIS;
    let _ = write!(
        h,
        "<figure id=\"requests\"><svg xmlns=\"http://www.w3.org/2000/svg\" \
         width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" \
         font-family=\"sans-serif\" font-size=\"12\">"
    );
    let bottom = top + ROW * rows.len() as f64;
    step_lines(h, report, &scale, top, bottom);
    for (i, row) in rows.iter().enumerate() {
        row_marks(h, row, &scale, top + ROW * i as f64);
    }
    causes(h, traffic, &scale, bottom);
    axis(h, &scale, bottom);
    h.push_str("</svg>");
    legend(h, &rows, report.time_scale());
    h.push_str("</figure>\n");
}

fn step_lines(h: &mut String, report: &Report, scale: &Scale, top: f64, bottom: f64) {
    for s in &report.steps {
        let x = scale.x(s.elapsed_s);
        let name = format!(
            "{} {} {}",
            s.service,
            s.kind,
            s.pod.as_deref().unwrap_or("")
        );
        let _ = write!(
            h,
            "<line class=\"step\" x1=\"{x:.1}\" y1=\"{top:.1}\" x2=\"{x:.1}\" y2=\"{bottom:.1}\" \
             stroke=\"#000\" stroke-opacity=\"0.15\"><title>{} (+{})</title></line>",
            escape(name.trim_end()),
            format_seconds(s.elapsed_s)
        );
    }
}

/// One row: its name, and its marks as one path (a short vertical stroke
/// per request start, once per pixel).
fn row_marks(h: &mut String, row: &Row, scale: &Scale, y: f64) {
    let _ = write!(
        h,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{} ({})</text>",
        LEFT - 8.0,
        y + ROW * 0.65,
        escape(&row.name),
        row.starts.len()
    );
    let mut d = String::new();
    let mut last_px = f64::NEG_INFINITY;
    for &t in &row.starts {
        let x = scale.x(t);
        if x - last_px < PIXEL {
            continue;
        }
        last_px = x;
        let _ = write!(d, "M{x:.1} {:.1}v{:.0}", y + 3.0, ROW - 6.0);
    }
    let _ = write!(
        h,
        "<path class=\"requests\" data-label=\"{}\" data-count=\"{}\" d=\"{d}\" \
         stroke=\"{}\" stroke-width=\"2\" fill=\"none\"/>",
        escape(&row.name),
        row.starts.len(),
        row.colour
    );
}

/// Each cause labelled at its step, above the rows, with a dashed line
/// down through them.
fn causes(h: &mut String, traffic: &TrafficReport, scale: &Scale, bottom: f64) {
    for (i, c) in traffic.causes.iter().enumerate() {
        let y = 8.0 + CAUSE_LINE * (i as f64 + 0.8);
        let (x, text) = match c.step_elapsed_s {
            Some(at) => (
                scale.x(at),
                format!(
                    "{} {} after {} at +{}",
                    c.count,
                    c.label,
                    c.step,
                    format_seconds(at)
                ),
            ),
            None => (LEFT, format!("{} {} before any step", c.count, c.label)),
        };
        let anchor = if x > WIDTH * 0.6 { "end" } else { "start" };
        let _ = write!(
            h,
            "<line class=\"cause\" x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{bottom:.1}\" \
             stroke=\"#d62728\" stroke-dasharray=\"3 2\"/>\
             <text class=\"cause\" x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\" \
             fill=\"#a00\">{}</text>",
            y + 3.0,
            escape(&text)
        );
    }
}

fn axis(h: &mut String, scale: &Scale, bottom: f64) {
    let _ = write!(
        h,
        "<line x1=\"{LEFT}\" y1=\"{bottom:.1}\" x2=\"{:.1}\" y2=\"{bottom:.1}\" stroke=\"#000\"/>",
        WIDTH - RIGHT
    );
    for t in scale.ticks() {
        let x = scale.x(t);
        let _ = write!(
            h,
            "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            bottom + 16.0,
            mss(t)
        );
    }
}

fn legend(h: &mut String, rows: &[Row], time_scale: f64) {
    let clock = if (time_scale - 1.0).abs() > f64::EPSILON {
        "simulated time"
    } else {
        "time"
    };
    let keys: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "<span style=\"border-left:10px solid {}\">&nbsp;{} {}</span>",
                r.colour,
                r.starts.len(),
                escape(&r.name)
            )
        })
        .collect();
    let _ = write!(
        h,
        "<figcaption>Each request is a mark at its start ({clock} since the audit \
         started, m:ss); a dashed line is a step that failures are put beside. {}</figcaption>",
        keys.join(" ")
    );
}

fn spans_table(h: &mut String, id: &str, head: &str, spans: &[Span]) {
    let _ = write!(h, "<table id=\"{id}\"><thead><tr><th>{}</th>", escape(head));
    for column in &Span::HEAD[1..] {
        let _ = write!(h, "<th>{}</th>", escape(column));
    }
    h.push_str("</tr></thead><tbody>\n");
    for span in spans {
        let row_class = if span.tally.failures() > 0 {
            " class=\"below\""
        } else {
            ""
        };
        let cells = span.cells();
        let _ = write!(h, "<tr{row_class}>");
        for (i, c) in cells.iter().enumerate() {
            let class = if i == 0 { "" } else { " class=\"num\"" };
            let _ = write!(h, "<td{class}>{}</td>", escape(c));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table>\n");
}

#[cfg(test)]
mod tests {
    use infera_audit::traffic::{Cause, Tally};

    use super::*;

    fn mark(elapsed_s: f64, class: Class, unattributed: bool) -> RequestMark {
        RequestMark {
            elapsed_s,
            class,
            status: (class == Class::Status).then_some(503),
            unattributed,
        }
    }

    fn traffic(requests: Vec<RequestMark>, causes: Vec<Cause>) -> TrafficReport {
        TrafficReport {
            path: "service ns/r:8000".into(),
            rate: 2.0,
            total: Tally::default(),
            not_sent: 0,
            blind: Vec::new(),
            legs: Vec::new(),
            steps: Vec::new(),
            causes,
            requests,
        }
    }

    #[test]
    fn rows_are_ok_then_failures_by_label_then_unattributed() {
        let marks = [
            mark(1.0, Class::Refused, true),
            mark(2.0, Class::Status, false),
            mark(3.0, Class::Ok, false),
            mark(4.0, Class::Cut, false),
            mark(5.0, Class::Ok, false),
        ];
        let named: Vec<(String, usize)> = rows(&marks)
            .into_iter()
            .map(|r| (r.name, r.starts.len()))
            .collect();
        assert_eq!(
            named,
            [
                ("ok".to_string(), 2),
                ("HTTP 503".to_string(), 1),
                ("cut".to_string(), 1),
                ("unattributed".to_string(), 1),
            ]
        );
    }

    #[test]
    fn marks_within_a_pixel_are_drawn_once_and_counted_all() {
        // 7,200 starts over an hour: about 950 pixels, so fewer strokes.
        let marks: Vec<RequestMark> = (0..7_200)
            .map(|i| mark(f64::from(i) * 0.5, Class::Ok, false))
            .collect();
        let mut h = String::new();
        let rows = rows(&marks);
        row_marks(&mut h, &rows[0], &Scale { end: 3_600.0 }, 0.0);
        assert!(h.contains("data-label=\"ok\" data-count=\"7200\""), "{h}");
        assert!(h.contains(">ok (7200)</text>"), "{h}");
        let strokes = h.matches('M').count();
        assert!((900..=1000).contains(&strokes), "{strokes} strokes");
    }

    #[test]
    fn a_cause_before_any_step_sits_at_the_left_edge() {
        let t = traffic(
            vec![mark(1.0, Class::Cut, false)],
            vec![Cause {
                label: "cut".into(),
                count: 1,
                step: "none".into(),
                step_elapsed_s: None,
                shutdown: None,
            }],
        );
        let mut h = String::new();
        causes(&mut h, &t, &Scale { end: 10.0 }, 50.0);
        assert!(h.contains(&format!("x1=\"{LEFT:.1}\"")), "{h}");
        assert!(h.contains(">1 cut before any step</text>"), "{h}");
    }
}
