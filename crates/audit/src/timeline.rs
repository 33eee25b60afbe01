//! The timeline of an audit: Ready and routable per role over time, with
//! rollout step markers. SVG (plotters' SVG backend) or CSV.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

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

    /// Rows `elapsed_s,role,ready,routable,event`: one per count change,
    /// one per sample (`event` = `change` or `sample`), one per step marker
    /// (`event` = `step:<label>`, role empty), in time order.
    pub fn write_csv(&self, path: &Path) -> Result<(), ReportError> {
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
        rows.sort_by(|a, b| a.0.total_cmp(&b.0));
        writeln!(out, "elapsed_s,role,ready,routable,event").map_err(io_err(path))?;
        for (t, rest) in rows {
            writeln!(out, "{t:.3},{rest}").map_err(io_err(path))?;
        }
        out.flush().map_err(io_err(path))
    }

    /// A chart: one panel per role, Ready (blue) and routable (orange) as
    /// step lines, samples as dots, the floor in red, steps as grey lines.
    pub fn write_svg(&self, path: &Path, target: &str, floor: u32) -> Result<(), ReportError> {
        let draw_err = |e: &dyn std::fmt::Display| ReportError::Draw {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let panels = self.roles.len().max(1);
        let height = 120 + 260 * panels as u32;
        let root = SVGBackend::new(path, (1100, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_err(&e))?;
        let title = if target.is_empty() {
            "Ready and routable pods per role".to_string()
        } else {
            format!("{target}: Ready and routable pods per role")
        };
        let root = root
            .titled(&title, ("sans-serif", 22))
            .map_err(|e| draw_err(&e))?;
        let areas = root.split_evenly((panels, 1));
        let end = self.secs(self.duration).max(1.0);
        let x_label = if (self.time_scale - 1.0).abs() > f64::EPSILON {
            "simulated seconds since the audit started"
        } else {
            "seconds since the audit started"
        };
        for (i, ((role, points), area)) in self.roles.iter().zip(areas.iter()).enumerate() {
            let top = points
                .iter()
                .map(|p| p.ready.max(p.routable))
                .max()
                .unwrap_or(0)
                .max(floor)
                + 1;
            let mut chart = ChartBuilder::on(area)
                .caption(format!("role {role}"), ("sans-serif", 16))
                .margin(10)
                .x_label_area_size(35)
                .y_label_area_size(45)
                .build_cartesian_2d(0f64..end, 0f64..f64::from(top))
                .map_err(|e| draw_err(&e))?;
            chart
                .configure_mesh()
                .x_desc(x_label)
                .y_desc("pods")
                .y_labels(top as usize + 1)
                .draw()
                .map_err(|e| draw_err(&e))?;
            let step_line = |value: fn(&TimelinePoint) -> u32| {
                let mut line = Vec::with_capacity(points.len() * 2);
                for (j, p) in points.iter().enumerate() {
                    let v = f64::from(value(p));
                    let x = self.secs(p.at);
                    line.push((x, v));
                    let next_x = points.get(j + 1).map_or(end, |n| self.secs(n.at));
                    line.push((next_x, v));
                }
                line
            };
            let blue = RGBColor(31, 119, 180);
            let orange = RGBColor(255, 127, 14);
            chart
                .draw_series(LineSeries::new(
                    step_line(|p| p.ready),
                    blue.stroke_width(3),
                ))
                .map_err(|e| draw_err(&e))?
                .label("Ready")
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], blue));
            chart
                .draw_series(LineSeries::new(
                    step_line(|p| p.routable)
                        .into_iter()
                        .map(|(x, y)| (x, (y - 0.06).max(0.0))),
                    orange.stroke_width(2),
                ))
                .map_err(|e| draw_err(&e))?
                .label("routable")
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], orange));
            chart
                .draw_series(LineSeries::new(
                    vec![(0.0, f64::from(floor)), (end, f64::from(floor))],
                    RED.mix(0.6).stroke_width(1),
                ))
                .map_err(|e| draw_err(&e))?
                .label(format!("min-ready {floor}"))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
            chart
                .draw_series(
                    self.samples.iter().filter_map(|s| s.get(i)).map(|p| {
                        Circle::new((self.secs(p.at), f64::from(p.ready)), 2, blue.filled())
                    }),
                )
                .map_err(|e| draw_err(&e))?;
            self.draw_steps(&mut chart, top, path)?;
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK.mix(0.3))
                .position(SeriesLabelPosition::LowerRight)
                .draw()
                .map_err(|e| draw_err(&e))?;
        }
        root.present().map_err(|e| draw_err(&e))
    }

    /// Every step is a grey line; only the milestones get a label,
    /// staggered downwards when they would overlap the previous one.
    fn draw_steps(
        &self,
        chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
        top: u32,
        path: &Path,
    ) -> Result<(), ReportError> {
        let draw_err = |e: &dyn std::fmt::Display| ReportError::Draw {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let span = self.secs(self.duration).max(1e-9);
        let mut last_label: Option<(f64, usize)> = None;
        for (at, label) in &self.steps {
            let x = self.secs(*at);
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, 0.0), (x, f64::from(top))],
                    BLACK.mix(0.15),
                )))
                .map_err(|e| draw_err(&e))?;
            if !is_milestone(label) {
                continue;
            }
            let level = match last_label {
                Some((lx, level)) if (x - lx) / span < 0.12 => (level + 1) % 4,
                _ => 0,
            };
            last_label = Some((x, level));
            let y = f64::from(top) * (0.93 - 0.08 * level as f64);
            chart
                .draw_series(std::iter::once(Text::new(
                    label.clone(),
                    (x, y),
                    ("sans-serif", 11).into_font(),
                )))
                .map_err(|e| draw_err(&e))?;
        }
        Ok(())
    }
}

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
