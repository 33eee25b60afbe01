//! The [`Report`] an [`Auditor`] ends with: the settled statistics of each
//! role joined with what its pods' histories still hold, as exact figures
//! where infera saw (or the server's timestamps tell) everything, and as
//! bounds where it was blind.

use std::time::{Duration, Instant};

use super::auditor::{Auditor, RoleSlot, round3};
use super::evidence::{Bounds, RoleStats, Stretch, sweep, undecided};
use super::pods::Histories;
use super::report::{AlreadyBelow, Outcome, Report, RoleBounds, RoleReport, Undecided, Unobserved};
use super::timeline::{Timeline, TimelinePoint};

impl Unobserved {
    pub(crate) fn new(
        a: &Auditor,
        since: Instant,
        until: Instant,
        reason: String,
        changed: bool,
    ) -> Unobserved {
        let origin = a.origin.unwrap_or(since);
        let from = since.saturating_duration_since(origin);
        let to = until.saturating_duration_since(origin);
        Unobserved {
            watch: "pods".to_string(),
            from: a.clock.utc(since),
            to: a.clock.utc(until),
            from_s: a.scaled(from),
            to_s: a.scaled(to),
            seconds: a.scaled(to.saturating_sub(from)),
            reason,
            changed,
            wall: (from, to),
        }
    }
}

impl Auditor {
    pub(crate) fn scaled(&self, d: Duration) -> f64 {
        round3(d.as_secs_f64() * self.time_scale)
    }

    /// Close the audit at `now` and build the report. Open intervals below
    /// the floor are counted up to `now`; an audit that ends blind counts
    /// every pod as unknown from the last proof. May be called more than
    /// once.
    pub fn finish(&mut self, outcome: Outcome, now: Instant) -> Report {
        let (closing, unobserved) = self.closing(now);
        report(self, &closing, unobserved, outcome, now)
    }
}

/// The report of `a` closed at `now`, with `closing` as the pods'
/// histories (the auditor's own, or a copy made unknown where it ends
/// blind).
pub(crate) fn report(
    a: &Auditor,
    closing: &Histories,
    unobserved: Vec<Unobserved>,
    outcome: Outcome,
    now: Instant,
) -> Report {
    let origin = a.origin.unwrap_or(now);
    let duration = now.saturating_duration_since(origin);
    let synced = a.origin.is_some();
    let mut slots: Vec<RoleSlot> = a.roles.clone();
    let mut live_bounds: Vec<Vec<Bounds>> = Vec::new();
    for (i, slot) in slots.iter_mut().enumerate() {
        let pods = closing
            .pods
            .values()
            .filter(|h| h.facts.role == i)
            .map(|h| (&h.ready, &h.serving));
        let bounds = sweep(pods, origin);
        if slot.timeline.is_empty() && bounds.first().is_none_or(|b| !b.at.is_zero()) {
            slot.push(Bounds {
                at: Duration::ZERO,
                ready: (0, 0),
                routable: (0, 0),
            });
        }
        bounds.iter().for_each(|b| slot.push(*b));
        live_bounds.push(bounds);
    }
    let roles = slots
        .iter()
        .zip(&live_bounds)
        .map(|(slot, bounds)| role_report(a, slot, bounds, synced, duration))
        .collect();
    let offset = a.clock.offset_s();
    Report {
        target: a.target.clone(),
        activity: a.activity.unwrap_or("audit"),
        outcome,
        sample_interval_s: round3(a.sample_interval.as_secs_f64()),
        samples: a.samples,
        duration_s: a.scaled(duration),
        roles,
        steps: a.steps.clone(),
        operator_generation: None,
        min_ready: a.min_ready,
        timeline: timeline(a, &slots, &unobserved, duration),
        unobserved,
        reconstructed_changes: closing.reconstructed,
        samples_unobserved: a.samples_unobserved,
        clock_skew_s: (offset != 0.0).then(|| (offset * 10.0).round() / 10.0),
        synced,
        samples_csv_error: a.samples_csv_error.clone(),
        chart_services: None,
        origin: a.origin,
        started_at: a.origin.map(|o| a.clock.utc(o)),
        undone_restarts: a.undone_restarts.clone(),
        mixed_windows: mixed_windows(a, closing, origin, now),
        traffic: None,
    }
}

/// The mixed windows of a fleet with `prefill` and `decode` roles.
fn mixed_windows(
    a: &Auditor,
    closing: &Histories,
    origin: Instant,
    now: Instant,
) -> Vec<crate::mixed::MixedWindow> {
    let of = |name: &str| -> Vec<usize> {
        (a.roles.iter().enumerate())
            .filter(|(_, r)| r.spec.role == name)
            .map(|(i, _)| i)
            .collect()
    };
    let (prefill, decode) = (of("prefill"), of("decode"));
    if prefill.is_empty() || decode.is_empty() {
        return Vec::new();
    }
    crate::mixed::windows(closing, &prefill, &decode, origin, now, a.time_scale())
}

fn role_report(
    a: &Auditor,
    slot: &RoleSlot,
    live: &[Bounds],
    synced: bool,
    duration: Duration,
) -> RoleReport {
    let stretch = slot.onset.stretch().filter(|_| a.activity.is_some());
    let s: RoleStats = match stretch {
        None => slot.accum.at_end(duration),
        Some(Stretch { until: None, .. }) => quiet(slot.accum.at_end(duration)),
        Some(_) => slot.onset.during.at_end(duration),
    };
    let exact = |(lo, hi): (u32, u32)| (synced && lo == hi).then_some(lo);
    let blind = s.uncertain > Duration::ZERO
        || s.min_ready.0 != s.min_ready.1
        || s.min_routable.0 != s.min_routable.1;
    let bounds = blind.then(|| RoleBounds {
        min_ready: [s.min_ready.0, s.min_ready.1],
        min_routable: [s.min_routable.0, s.min_routable.1],
        seconds_possibly_below_min_ready: a.scaled(s.below_ready.1),
        seconds_possibly_below_min_routable: a.scaled(s.below_routable.1),
        longest_possible_gap_s: a.scaled(s.longest_gap.1),
        unobserved_s: a.scaled(s.uncertain),
        undecided: undecided(live, a.min_ready, duration)
            .into_iter()
            .map(|(from, to, ready, routable)| Undecided {
                from: a.clock.utc(origin_plus(a, from)),
                to: a.clock.utc(origin_plus(a, to)),
                from_s: a.scaled(from),
                to_s: a.scaled(to),
                ready: [ready.0, ready.1],
                routable: [routable.0, routable.1],
            })
            .collect(),
    });
    RoleReport {
        role: slot.spec.role.clone(),
        services: slot.spec.services.clone(),
        min_ready_sampled: slot.min_sampled.map(|m| m.0),
        min_ready_exact: exact(s.min_ready),
        min_routable_exact: exact(s.min_routable),
        seconds_below_min_ready: a.scaled(s.below_ready.0),
        seconds_below_min_routable: a.scaled(s.below_routable.0),
        longest_gap_s: a.scaled(s.longest_gap.0),
        bounds,
        min_routable_sampled: slot.min_sampled.map(|m| m.1),
        min_ready_range: synced.then_some(s.min_ready),
        min_routable_range: synced.then_some(s.min_routable),
        already_below: stretch.filter(|_| synced).map(|st| AlreadyBelow {
            ready: st.ready,
            routable: st.routable,
            seconds: a.scaled(st.until.unwrap_or(duration)),
            to_end: st.until.is_none(),
        }),
    }
}

/// The stats of a role that stayed below the floor it began below, at no
/// lower count, throughout: its minima, and no time below of the audited
/// change's doing.
fn quiet(whole: RoleStats) -> RoleStats {
    RoleStats {
        below_ready: (Duration::ZERO, Duration::ZERO),
        below_routable: (Duration::ZERO, Duration::ZERO),
        longest_gap: (Duration::ZERO, Duration::ZERO),
        below: (Duration::ZERO, Duration::ZERO),
        gaps: 0,
        ..whole
    }
}

fn origin_plus(a: &Auditor, d: Duration) -> Instant {
    a.origin.map_or_else(Instant::now, |o| o + d)
}

fn timeline(
    a: &Auditor,
    slots: &[RoleSlot],
    unobserved: &[Unobserved],
    duration: Duration,
) -> Timeline {
    let mut roles = Vec::new();
    let mut uncertain = Vec::new();
    for slot in slots {
        let mut points = slot.timeline.clone();
        // Close every step series at the end, so the chart runs to it.
        if let Some(last) = points.last().cloned() {
            points.push(TimelinePoint {
                at: duration,
                ..last
            });
        }
        roles.push((slot.spec.role.clone(), points));
        let mut spans = slot.uncertain.clone();
        if let Some(from) = slot.uncertain_open {
            spans.push((from, duration));
        }
        uncertain.push(spans);
    }
    let n = a.roles.len().max(1);
    Timeline {
        time_scale: a.time_scale,
        duration,
        roles,
        samples: a
            .sample_series
            .chunks(n)
            .map(<[TimelinePoint]>::to_vec)
            .collect(),
        steps: a
            .steps
            .iter()
            .map(|s| (s.wall_offset, format!("{} {}", s.service, s.kind)))
            .collect(),
        unobserved: unobserved.iter().map(|u| u.wall).collect(),
        uncertain,
    }
}
