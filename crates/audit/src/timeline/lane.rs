//! The request lane of the SVG timeline (`--traffic`): under the role
//! panels, each request a mark at its start, in one of three rows: ok,
//! failed (counted against the roll) and unattributed (failed while infera
//! was blind).

use std::collections::BTreeSet;

use plotters::prelude::*;

use super::{Chart, Timeline};
use crate::traffic::RequestMark;

/// Pixels the lane adds to the chart.
pub(super) const HEIGHT: u32 = 150;

/// Marks closer than this share of the x axis are drawn once (the file
/// stays small for an hour of requests; the caption counts them all).
const BUCKETS: f64 = 1000.0;

pub(super) const OK_MARK: RGBColor = RGBColor(44, 160, 44);
pub(super) const FAILED_MARK: RGBColor = RGBColor(214, 39, 40);
pub(super) const BLIND_MARK: RGBColor = RGBColor(150, 150, 150);

/// A lane row: its y, its name and its colour.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Row {
    Unattributed,
    Failed,
    Ok,
}

impl Row {
    fn of(mark: &RequestMark) -> Row {
        if mark.unattributed {
            Row::Unattributed
        } else if mark.counted_failure() {
            Row::Failed
        } else {
            Row::Ok
        }
    }

    fn y(self) -> f64 {
        match self {
            Row::Unattributed => 0.0,
            Row::Failed => 1.0,
            Row::Ok => 2.0,
        }
    }

    fn colour(self) -> RGBColor {
        match self {
            Row::Unattributed => BLIND_MARK,
            Row::Failed => FAILED_MARK,
            Row::Ok => OK_MARK,
        }
    }
}

/// `35 requests: 32 ok, 3 failed, 1 unattributed` (the last only when any).
pub(super) fn caption(requests: &[RequestMark]) -> String {
    let count = |row: Row| requests.iter().filter(|m| Row::of(m) == row).count();
    let mut text = format!(
        "requests by start: {} sent, {} ok, {} failed",
        requests.len(),
        count(Row::Ok),
        count(Row::Failed)
    );
    let blind = count(Row::Unattributed);
    if blind > 0 {
        text.push_str(&format!(", {blind} unattributed (infera blind)"));
    }
    text
}

impl Timeline {
    /// The lane: marks at each request's start (reported seconds), one
    /// per row and x bucket, and the steps as grey lines.
    pub(super) fn draw_lane(
        &self,
        area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
        requests: &[RequestMark],
    ) -> Result<(), String> {
        let err = |e: &dyn std::fmt::Display| e.to_string();
        let last = requests.last().map_or(0.0, |m| m.elapsed_s / self.unit());
        let end = self.x(self.duration).max(last).max(1.0 / self.unit());
        let mut chart = ChartBuilder::on(area)
            .caption(caption(requests), ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(45)
            .build_cartesian_2d(0f64..end, -0.5f64..2.5f64)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(3)
            .x_label_formatter(&|x| self.x_text(*x))
            .y_label_formatter(&|y| row_name(*y))
            .draw()
            .map_err(|e| err(&e))?;
        self.draw_lane_steps(&mut chart)?;
        let mut seen = BTreeSet::new();
        let marks = requests.iter().filter_map(|m| {
            let x = m.elapsed_s / self.unit();
            let row = Row::of(m);
            let bucket = (x / end * BUCKETS).round() as i64;
            seen.insert((row, bucket)).then(|| {
                PathElement::new(
                    vec![(x, row.y() - 0.3), (x, row.y() + 0.3)],
                    row.colour().stroke_width(2),
                )
            })
        });
        chart.draw_series(marks).map_err(|e| err(&e))?;
        Ok(())
    }

    fn draw_lane_steps(&self, chart: &mut Chart<'_, '_>) -> Result<(), String> {
        chart
            .draw_series(self.steps.iter().map(|(at, _)| {
                let x = self.x(*at);
                PathElement::new(vec![(x, -0.5), (x, 2.5)], BLACK.mix(0.12))
            }))
            .map_err(|e| e.to_string())?;
        Ok(())
    }
}

fn row_name(y: f64) -> String {
    match y.round() as i64 {
        0 => "blind".into(),
        1 => "failed".into(),
        2 => "ok".into(),
        _ => String::new(),
    }
}
