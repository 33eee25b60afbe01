//! The timeline of an audit: Ready and routable per role over time, with
//! rollout step markers. SVG (plotters' SVG backend) or CSV.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::traffic::RequestMark;

/// A count change of one role: from `at` (wall offset from the audit start)
/// until the next point, the role had these counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimelinePoint {
    pub at: Duration,
    pub ready: u32,
    pub routable: u32,
}

/// Everything the timeline files are drawn from (bounded in size: see
/// [`super::Auditor`]).
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    pub time_scale: f64,
    /// Wall duration of the audit.
    pub duration: Duration,
    /// Per role, its count changes in time order (the last point closes the
    /// series at the end of the audit).
    pub roles: Vec<(String, Vec<TimelinePoint>)>,
    /// Samples (possibly thinned): one entry per sample instant, one point
    /// per role in role order.
    pub samples: Vec<Vec<TimelinePoint>>,
    /// Step markers: wall offset and label.
    pub steps: Vec<(Duration, String)>,
    /// Intervals in which infera was blind (wall offsets).
    pub unobserved: Vec<(Duration, Duration)>,
    /// Per role, the spans in which its counts were uncertain (bounds,
    /// not figures): shaded apart from a gap.
    pub uncertain: Vec<Vec<(Duration, Duration)>>,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
    move |source| ReportError::Io {
        path: path.display().to_string(),
        source,
    }
}

impl Timeline {
    fn secs(&self, d: Duration) -> f64 {
        d.as_secs_f64()
            * if self.time_scale > 0.0 {
                self.time_scale
            } else {
                1.0
            }
    }

    /// Reported seconds per chart x unit: minutes from two minutes on (so
    /// the ticks fall on round m:ss values), seconds below.
    fn unit(&self) -> f64 {
        if self.secs(self.duration) >= 120.0 {
            60.0
        } else {
            1.0
        }
    }

    /// Chart x coordinate of a wall offset.
    fn x(&self, d: Duration) -> f64 {
        self.secs(d) / self.unit()
    }

    /// An x coordinate as m:ss (m:ss.s when the chart spans under 20 s, so
    /// sub-second ticks stay distinct).
    fn x_text(&self, x: f64) -> String {
        let seconds = x * self.unit();
        if self.secs(self.duration) >= 20.0 {
            return minutes_seconds(seconds);
        }
        let tenths = if seconds.is_finite() && seconds > 0.0 {
            (seconds * 10.0).round() as u64
        } else {
            0
        };
        format!("{}:{:02}.{}", tenths / 600, (tenths / 10) % 60, tenths % 10)
    }

    /// Rows `elapsed_s,role,ready,routable,event`: one per count change,
    /// one per sample (`event` = `change` or `sample`), one per step marker
    /// (`event` = `step:<label>`, role empty), one per request sent
    /// (`event` = `request:<label>` at its start, `request:<label>
    /// unattributed` for a failure while infera was blind), in time order.
    pub fn write_csv(&self, path: &Path, requests: &[RequestMark]) -> Result<(), ReportError> {
        let file = std::fs::File::create(path).map_err(io_err(path))?;
        let mut out = std::io::BufWriter::new(file);
        let mut rows: Vec<(f64, String)> = Vec::new();
        for (role, points) in &self.roles {
            for p in points {
                rows.push((
                    self.secs(p.at),
                    format!("{},{},{},change", csv_field(role), p.ready, p.routable),
                ));
            }
        }
        for sample in &self.samples {
            for (p, (role, _)) in sample.iter().zip(&self.roles) {
                rows.push((
                    self.secs(p.at),
                    format!("{},{},{},sample", csv_field(role), p.ready, p.routable),
                ));
            }
        }
        for (at, label) in &self.steps {
            rows.push((
                self.secs(*at),
                format!(",,,{}", csv_field(&format!("step:{label}"))),
            ));
        }
        for r in requests {
            let blind = if r.unattributed { " unattributed" } else { "" };
            rows.push((r.elapsed_s, format!(",,,request:{}{blind}", r.label())));
        }
        rows.sort_by(|a, b| a.0.total_cmp(&b.0));
        writeln!(out, "elapsed_s,role,ready,routable,event").map_err(io_err(path))?;
        for (t, rest) in rows {
            writeln!(out, "{t:.3},{rest}").map_err(io_err(path))?;
        }
        out.flush().map_err(io_err(path))
    }

    /// A chart: one panel per role, Ready (blue) and routable (orange) as
    /// step lines, samples as dots, the floor in red, every interval below
    /// the floor shaded (Ready darker than routable-only), and the role's own
    /// steps (`services[i]` are role `i`'s services) as grey lines.
    pub fn write_svg(
        &self,
        path: &Path,
        target: &str,
        floor: u32,
        services: &[Vec<String>],
        requests: &[RequestMark],
    ) -> Result<(), ReportError> {
        let svg = self
            .svg(target, floor, services, requests)
            .map_err(|message| ReportError::Draw {
                path: path.display().to_string(),
                message,
            })?;
        std::fs::write(path, svg).map_err(io_err(path))
    }

    /// The chart of [`write_svg`](Self::write_svg) as an SVG document;
    /// with `requests`, a request lane under the role panels.
    pub fn svg(
        &self,
        target: &str,
        floor: u32,
        services: &[Vec<String>],
        requests: &[RequestMark],
    ) -> Result<String, String> {
        let panels = self.roles.len().max(1);
        let lane = if requests.is_empty() { 0 } else { lane::HEIGHT };
        let height = 110 + 280 * panels as u32 + lane;
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, (1100, height)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| e.to_string())?;
            let title = if target.is_empty() {
                "Ready and routable pods per role".to_string()
            } else {
                format!("{target}: Ready and routable pods per role")
            };
            let root = root
                .titled(&title, ("sans-serif", 22))
                .map_err(|e| e.to_string())?;
            let (band, root) = root.split_vertically(34);
            draw_legend(&band, floor).map_err(|e| e.to_string())?;
            let rest = root.dim_in_pixel().1;
            let (root, lane_area) = root.split_vertically(rest.saturating_sub(lane));
            if lane > 0 {
                self.draw_lane(&lane_area, requests)?;
            }
            let areas = root.split_evenly((panels, 1));
            for (i, area) in areas.iter().enumerate().take(self.roles.len()) {
                let own = services.get(i).map(Vec::as_slice).unwrap_or(&[]);
                self.draw_panel(area, i, floor, own)?;
            }
            root.present().map_err(|e| e.to_string())?;
        }
        Ok(out)
    }

    fn draw_panel(
        &self,
        area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
        i: usize,
        floor: u32,
        services: &[String],
    ) -> Result<(), String> {
        let err = |e: &dyn std::fmt::Display| e.to_string();
        let (role, points) = &self.roles[i];
        let end = self.x(self.duration).max(1.0 / self.unit());
        let top = points
            .iter()
            .map(|p| p.ready.max(p.routable))
            .max()
            .unwrap_or(0)
            .max(floor)
            + 1;
        let x_label = if (self.time_scale - 1.0).abs() > f64::EPSILON {
            "simulated time since the audit started (m:ss)"
        } else {
            "time since the audit started (m:ss)"
        };
        let mut chart = ChartBuilder::on(area)
            .caption(format!("role {role}"), ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(38)
            .y_label_area_size(45)
            .build_cartesian_2d(0f64..end, 0f64..f64::from(top))
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc("pods")
            .x_label_formatter(&|x| self.x_text(*x))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .y_labels(top as usize + 1)
            .draw()
            .map_err(|e| err(&e))?;
        self.draw_below(&mut chart, points, floor, top, end)?;
        self.draw_unobserved(&mut chart, i, top, end)?;
        let step_line = |value: fn(&TimelinePoint) -> u32| {
            let mut line = Vec::with_capacity(points.len() * 2);
            for (j, p) in points.iter().enumerate() {
                let v = f64::from(value(p));
                line.push((self.x(p.at), v));
                let next_x = points.get(j + 1).map_or(end, |n| self.x(n.at));
                line.push((next_x, v));
            }
            line
        };
        chart
            .draw_series(LineSeries::new(
                step_line(|p| p.ready),
                BLUE_LINE.stroke_width(3),
            ))
            .map_err(|e| err(&e))?;
        chart
            .draw_series(LineSeries::new(
                step_line(|p| p.routable)
                    .into_iter()
                    .map(|(x, y)| (x, (y - 0.06).max(0.0))),
                ORANGE_LINE.stroke_width(2),
            ))
            .map_err(|e| err(&e))?;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, f64::from(floor)), (end, f64::from(floor))],
                6,
                4,
                RED.stroke_width(2),
            ))
            .map_err(|e| err(&e))?;
        chart
            .draw_series(
                self.samples.iter().filter_map(|s| s.get(i)).map(|p| {
                    Circle::new((self.x(p.at), f64::from(p.ready)), 2, BLUE_LINE.filled())
                }),
            )
            .map_err(|e| err(&e))?;
        self.draw_steps(&mut chart, top, services)
    }

    /// Shade every interval with routable (light) or Ready (darker) below
    /// the floor.
    fn draw_below(
        &self,
        chart: &mut Chart<'_, '_>,
        points: &[TimelinePoint],
        floor: u32,
        top: u32,
        end: f64,
    ) -> Result<(), String> {
        let intervals = |below: fn(&TimelinePoint, u32) -> bool| {
            let mut rects = Vec::new();
            for (j, p) in points.iter().enumerate() {
                let next_x = points.get(j + 1).map_or(end, |n| self.x(n.at));
                let x = self.x(p.at);
                if below(p, floor) && next_x > x {
                    rects.push([(x, 0.0), (next_x, f64::from(top))]);
                }
            }
            rects
        };
        let routable = intervals(|p, f| p.routable < f && p.ready >= f);
        let ready = intervals(|p, f| p.ready < f);
        chart
            .draw_series(
                routable
                    .into_iter()
                    .map(|r| Rectangle::new(r, ROUTABLE_SHADE.mix(0.5).filled())),
            )
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(
                ready
                    .into_iter()
                    .map(|r| Rectangle::new(r, READY_SHADE.mix(0.35).filled())),
            )
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Shade the spans in which role `i`'s counts were not known (infera
    /// was blind and the server's timestamps did not settle them): grey,
    /// apart from a gap. The lines there show the counts known for certain.
    fn draw_unobserved(
        &self,
        chart: &mut Chart<'_, '_>,
        i: usize,
        top: u32,
        end: f64,
    ) -> Result<(), String> {
        let spans = self.uncertain.get(i).map(Vec::as_slice).unwrap_or_default();
        chart
            .draw_series(spans.iter().map(|(from, to)| {
                let x1 = self.x(*to).min(end);
                Rectangle::new(
                    [(self.x(*from), 0.0), (x1, f64::from(top))],
                    UNOBSERVED_SHADE.mix(0.55).filled(),
                )
            }))
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Every step of this role's services is a grey line; only the
    /// milestones get a label, staggered downwards when they would overlap
    /// the previous one, and right-aligned near the right edge so they stay
    /// inside the plot.
    fn draw_steps(
        &self,
        chart: &mut Chart<'_, '_>,
        top: u32,
        services: &[String],
    ) -> Result<(), String> {
        let span = self.x(self.duration).max(1e-9);
        let mut last_label: Option<(f64, usize)> = None;
        for (at, label) in &self.steps {
            let service = label.split_once(' ').map_or(label.as_str(), |(s, _)| s);
            if !services.is_empty() && !services.iter().any(|s| s == service) {
                continue;
            }
            let x = self.x(*at);
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, 0.0), (x, f64::from(top))],
                    BLACK.mix(0.2),
                )))
                .map_err(|e| e.to_string())?;
            if !is_milestone(label) {
                continue;
            }
            let level = match last_label {
                Some((lx, level)) if (x - lx) / span < 0.12 => (level + 1) % 4,
                _ => 0,
            };
            last_label = Some((x, level));
            let y = f64::from(top) * (0.97 - 0.08 * level as f64);
            let h = if x / span > 0.75 {
                HPos::Right
            } else {
                HPos::Left
            };
            let style = ("sans-serif", 11)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(h, VPos::Top));
            let text = format!(" {label} ({}) ", self.x_text(x));
            chart
                .draw_series(std::iter::once(Text::new(text, (x, y), style)))
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

const BLUE_LINE: RGBColor = RGBColor(31, 119, 180);
const ORANGE_LINE: RGBColor = RGBColor(255, 127, 14);
const READY_SHADE: RGBColor = RGBColor(214, 39, 40);
const ROUTABLE_SHADE: RGBColor = RGBColor(255, 190, 120);
const UNOBSERVED_SHADE: RGBColor = RGBColor(150, 150, 150);

/// One legend row above the panels (never over the data).
fn draw_legend(
    band: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    floor: u32,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let font = ("sans-serif", 13).into_font().color(&BLACK);
    let y = 14;
    let mut x = 60;
    let label = |band: &DrawingArea<SVGBackend<'_>, _>, x: &mut i32, text: String| {
        let width = 30 + 7 * text.len() as i32;
        let r = band.draw(&Text::new(text, (*x + 26, y - 7), font.clone()));
        *x += width;
        r
    };
    band.draw(&PathElement::new(
        vec![(x, y), (x + 20, y)],
        BLUE_LINE.stroke_width(3),
    ))?;
    label(band, &mut x, "Ready".into())?;
    band.draw(&PathElement::new(
        vec![(x, y), (x + 20, y)],
        ORANGE_LINE.stroke_width(2),
    ))?;
    label(band, &mut x, "routable".into())?;
    band.draw(&PathElement::new(
        vec![(x, y), (x + 20, y)],
        RED.stroke_width(2),
    ))?;
    label(band, &mut x, format!("--min-ready {floor}"))?;
    band.draw(&Rectangle::new(
        [(x, y - 7), (x + 20, y + 7)],
        READY_SHADE.mix(0.35).filled(),
    ))?;
    label(band, &mut x, "Ready below min".into())?;
    band.draw(&Rectangle::new(
        [(x, y - 7), (x + 20, y + 7)],
        ROUTABLE_SHADE.mix(0.5).filled(),
    ))?;
    label(band, &mut x, "Ready, but routable below min".into())?;
    band.draw(&Rectangle::new(
        [(x, y - 7), (x + 20, y + 7)],
        UNOBSERVED_SHADE.mix(0.55).filled(),
    ))?;
    label(band, &mut x, "unobserved (bounds)".into())?;
    band.draw(&PathElement::new(
        vec![(x + 10, y - 8), (x + 10, y + 8)],
        BLACK.mix(0.3),
    ))?;
    label(band, &mut x, "this role's steps".into())?;
    Ok(())
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// `m:ss` (`1:05`, `12:00`); negative and non-finite input reads `0:00`.
pub fn minutes_seconds(seconds: f64) -> String {
    let total = if seconds.is_finite() && seconds > 0.0 {
        seconds.round() as u64
    } else {
        0
    };
    format!("{}:{:02}", total / 60, total % 60)
}

mod lane;

/// Step kinds worth a label on the chart (the rest are unlabelled lines).
fn is_milestone(label: &str) -> bool {
    let kind = label.rsplit(' ').next().unwrap_or(label);
    matches!(
        kind,
        "trigger"
            | "ready"
            | "old-gone"
            | "leg-complete"
            | "stalled"
            | "aborted"
            | "reverted"
            | "rolling"
            | "complete"
    )
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Errors writing report files.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot write {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot draw the timeline {path}: {message}")]
    Draw { path: String, message: String },
    #[error(
        "cannot tell the timeline format of {path}: name it FILE.svg (chart) or FILE.csv (rows)"
    )]
    UnknownFormat { path: String },
    #[error("cannot write {path}: directory {dir} does not exist")]
    NoDirectory { path: String, dir: String },
    #[error("cannot write {path}: it is a directory")]
    IsDirectory { path: String },
    #[error("cannot encode the report as JSON: {0}")]
    Encode(String),
    #[error("writing the samples CSV failed part-way: {0}")]
    Samples(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeline(seconds: f64) -> Timeline {
        Timeline {
            time_scale: 1.0,
            duration: Duration::from_secs_f64(seconds),
            ..Timeline::default()
        }
    }

    #[test]
    fn axis_labels_are_m_ss_and_distinct_on_short_charts() {
        assert_eq!(minutes_seconds(65.4), "1:05");
        assert_eq!(minutes_seconds(-3.0), "0:00");
        assert_eq!(minutes_seconds(f64::NAN), "0:00");
        let long = timeline(340.0);
        assert_eq!(long.x_text(1.5), "1:30");
        let medium = timeline(90.0);
        assert_eq!(medium.x_text(75.0), "1:15");
        let short = timeline(6.4);
        assert_eq!(short.x_text(0.5), "0:00.5");
        assert_ne!(short.x_text(1.0), short.x_text(1.5));
    }

    #[test]
    fn a_role_panel_marks_only_its_own_steps_and_shades_gaps() {
        let point = |s: u64, ready: u32, routable: u32| TimelinePoint {
            at: Duration::from_secs(s),
            ready,
            routable,
        };
        let t = Timeline {
            time_scale: 1.0,
            duration: Duration::from_secs(300),
            roles: vec![
                ("prefill".into(), vec![point(0, 1, 1), point(300, 1, 1)]),
                (
                    "decode".into(),
                    vec![
                        point(0, 1, 1),
                        point(10, 0, 0),
                        point(40, 1, 0),
                        point(90, 1, 1),
                    ],
                ),
            ],
            samples: Vec::new(),
            unobserved: vec![(Duration::from_secs(50), Duration::from_secs(70))],
            uncertain: vec![
                Vec::new(),
                vec![(Duration::from_secs(50), Duration::from_secs(70))],
            ],
            steps: vec![
                (Duration::from_secs(10), "decode trigger".into()),
                (Duration::from_secs(200), "prefill trigger".into()),
            ],
        };
        let services = [vec!["prefill".to_string()], vec!["decode".to_string()]];
        let svg = t.svg("idep/x", 1, &services, &[]).unwrap();
        assert_eq!(svg.matches("decode trigger (0:10)").count(), 1, "{svg}");
        assert_eq!(svg.matches("prefill trigger (3:20)").count(), 1);
        // decode: Ready below 10..40 s, routable-only below 40..90 s; each
        // shade once there plus once in the legend; prefill never below.
        let ready_shade = svg.matches("fill=\"#D62728\"").count();
        let routable_shade = svg.matches("fill=\"#FFBE78\"").count();
        assert_eq!((ready_shade, routable_shade), (2, 2), "{svg}");
        // decode's unobserved span is shaded apart (and in the legend).
        assert_eq!(svg.matches("fill=\"#969696\"").count(), 2, "{svg}");
    }

    fn mark(elapsed_s: f64, class: crate::traffic::Class, unattributed: bool) -> RequestMark {
        RequestMark {
            elapsed_s,
            class,
            status: (class == crate::traffic::Class::Status).then_some(503),
            unattributed,
        }
    }

    fn marks() -> Vec<RequestMark> {
        use crate::traffic::Class;
        let mut out: Vec<RequestMark> = (0..600)
            .map(|i| mark(f64::from(i) * 0.5, Class::Ok, false))
            .collect();
        out.extend([
            mark(100.25, Class::Cut, false),
            mark(100.75, Class::Status, false),
            mark(200.0, Class::Refused, true),
        ]);
        out.sort_by(|a, b| a.elapsed_s.total_cmp(&b.elapsed_s));
        out
    }

    #[test]
    fn the_csv_has_a_row_per_request_at_its_start_in_time_order() {
        let mut t = timeline(300.0);
        t.steps = vec![(Duration::from_secs(100), "w old-deleting".into())];
        let path = std::env::temp_dir().join(format!("infera-lane-{}.csv", std::process::id()));
        t.write_csv(&path, &marks()).unwrap();
        let csv = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let requests: Vec<&str> = csv.lines().filter(|l| l.contains(",request:")).collect();
        assert_eq!(requests.len(), 603);
        let around: Vec<&str> = csv
            .lines()
            .skip_while(|l| !l.starts_with("100.000"))
            .take(5)
            .collect();
        assert_eq!(
            around,
            [
                "100.000,,,,step:w old-deleting",
                "100.000,,,,request:ok",
                "100.250,,,,request:cut",
                "100.500,,,,request:ok",
                "100.750,,,,request:HTTP 503",
            ]
        );
        assert!(
            csv.contains("200.000,,,,request:refused unattributed\n"),
            "{csv}"
        );
        for line in csv.lines() {
            assert_eq!(line.split(',').count(), 5, "{line}");
        }
    }

    #[test]
    fn the_svg_lane_counts_every_request_and_marks_each_row() {
        let t = Timeline {
            roles: vec![(
                "w".into(),
                vec![TimelinePoint {
                    at: Duration::ZERO,
                    ready: 1,
                    routable: 1,
                }],
            )],
            ..timeline(300.0)
        };
        let none = t.svg("idep/x", 1, &[], &[]).unwrap();
        assert!(
            !none.contains("requests by start"),
            "a lane without requests"
        );
        let svg = t.svg("idep/x", 1, &[], &marks()).unwrap();
        assert!(
            svg.contains(
                "requests by start: 603 sent, 600 ok, 2 failed, 1 unattributed (infera blind)"
            ),
            "{svg}"
        );
        // 600 ok starts half a second apart over 300 s: one mark per
        // thousandth of the axis at most; the failures two red marks, the
        // blind one grey.
        let ok = svg.matches("stroke=\"#2CA02C\"").count();
        assert!((290..=601).contains(&ok), "{ok} ok marks");
        assert_eq!(svg.matches("stroke=\"#D62728\"").count(), 2, "{svg}");
        for row in ["ok", "failed", "blind"] {
            let row = format!(">\n{row}\n</text>");
            assert!(svg.contains(&row), "no row {row}: {svg}");
        }
    }
}
