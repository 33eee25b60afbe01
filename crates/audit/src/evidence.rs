//! What is known of each pod over time, and the per-role bounds swept from
//! it.
//!
//! Each pod has two signals, Ready and serving (routable for an infera
//! worker), kept as change points of a three-valued [`Known`]: `Yes`, `No`,
//! or `Unknown` while infera was blind and no server timestamp fixes the
//! change. A role's count at an instant is then a bound: `low` counts the
//! pods known to be up, `high` adds the unknown ones. Where nothing is
//! unknown the two are equal and the figure is exact.

use std::time::{Duration, Instant};

/// What is known of a yes/no signal from a change point on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    No,
    Yes,
    Unknown,
}

impl From<bool> for Known {
    fn from(b: bool) -> Known {
        if b { Known::Yes } else { Known::No }
    }
}

/// One signal of one pod: change points in time order; each value holds
/// from its instant to the next point (before the first: the pod did not
/// exist, i.e. `No`).
#[derive(Debug, Clone, Default)]
pub struct Track {
    points: Vec<(Instant, Known)>,
}

impl Track {
    pub fn points(&self) -> &[(Instant, Known)] {
        &self.points
    }

    /// The value after the last change point.
    pub fn last(&self) -> Known {
        self.points.last().map_or(Known::No, |p| p.1)
    }

    /// The instant of the last change point.
    pub fn last_at(&self) -> Option<Instant> {
        self.points.last().map(|p| p.0)
    }

    /// `value` from `at` on. A change is never placed before the last one
    /// (server timestamps are truncated to the second; events arrive in the
    /// server's order), so `at` is clamped to it.
    pub fn set(&mut self, at: Instant, value: Known) {
        let at = self.last_at().map_or(at, |last| at.max(last));
        match self.points.last_mut() {
            Some(last) if last.0 == at => last.1 = value,
            Some(last) if last.1 == value => {}
            _ => self.points.push((at, value)),
        }
    }

    /// Unknown from `from` until `to`, then `value`.
    pub fn unknown_until(&mut self, from: Instant, to: Instant, value: Known) {
        self.set(from, Known::Unknown);
        self.set(to, value);
    }

    /// Forget the change points before `horizon`, keeping the value at it
    /// (as a point at `horizon`). An empty track is a pod that is gone.
    pub fn fold_before(&mut self, horizon: Instant) {
        let before = self.points.iter().take_while(|p| p.0 < horizon).count();
        if before == 0 {
            return;
        }
        let value = self.points[before - 1].1;
        self.points.drain(..before);
        if self.points.first().is_none_or(|p| p.0 > horizon) && value != Known::No {
            self.points.insert(0, (horizon, value));
        }
    }

    /// Replace what the track says from `from` on by `points` (a
    /// reconstruction that found the exact instant of a change).
    pub fn rewrite_from(&mut self, from: Instant, points: &[(Instant, Known)]) {
        self.points.retain(|p| p.0 < from);
        for (at, v) in points {
            self.set(*at, *v);
        }
    }
}

/// A role's bounds from one instant on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Offset from the audit's origin.
    pub at: Duration,
    pub ready: (u32, u32),
    pub routable: (u32, u32),
}

impl Bounds {
    /// Whether the bounds differ anywhere (something was unknown).
    pub fn uncertain(&self) -> bool {
        self.ready.0 != self.ready.1 || self.routable.0 != self.routable.1
    }
}

/// The per-role step function of bounds, from the pods' tracks.
///
/// `pods` yields each pod's (ready, serving) tracks. Points before `origin`
/// are folded into the value at `origin`.
pub fn sweep<'a>(
    pods: impl Iterator<Item = (&'a Track, &'a Track)>,
    origin: Instant,
) -> Vec<Bounds> {
    // (instant, signal 0|1, delta of (yes, unknown))
    let mut changes: Vec<(Instant, usize, i64, i64)> = Vec::new();
    for (ready, serving) in pods {
        for (signal, track) in [(0usize, ready), (1, serving)] {
            let mut prev = Known::No;
            for &(at, v) in track.points() {
                let (dy, du) = delta(prev, v);
                if dy != 0 || du != 0 {
                    changes.push((at.max(origin), signal, dy, du));
                }
                prev = v;
            }
        }
    }
    changes.sort_by_key(|c| c.0);
    let mut counts = [(0i64, 0i64); 2];
    let mut out: Vec<Bounds> = Vec::new();
    let mut i = 0;
    while i < changes.len() {
        let at = changes[i].0;
        while i < changes.len() && changes[i].0 == at {
            let (_, s, dy, du) = changes[i];
            counts[s].0 += dy;
            counts[s].1 += du;
            i += 1;
        }
        push_bounds(&mut out, at.saturating_duration_since(origin), counts);
    }
    out
}

fn delta(prev: Known, next: Known) -> (i64, i64) {
    let v = |k: Known| match k {
        Known::Yes => (1, 0),
        Known::Unknown => (0, 1),
        Known::No => (0, 0),
    };
    let (a, b) = (v(prev), v(next));
    (b.0 - a.0, b.1 - a.1)
}

fn push_bounds(out: &mut Vec<Bounds>, at: Duration, counts: [(i64, i64); 2]) {
    let bound = |(yes, unknown): (i64, i64)| {
        let yes = u32::try_from(yes.max(0)).unwrap_or(u32::MAX);
        let unknown = u32::try_from(unknown.max(0)).unwrap_or(u32::MAX);
        (yes, yes.saturating_add(unknown))
    };
    let b = Bounds {
        at,
        ready: bound(counts[0]),
        routable: bound(counts[1]),
    };
    match out.last_mut() {
        Some(last) if last.at == at => *last = b,
        Some(last) if last.ready == b.ready && last.routable == b.routable => {}
        _ => out.push(b),
    }
}

/// Statistics of one role's bounds, against a floor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoleStats {
    /// (lowest `low`, lowest `high`) of the Ready count: the true minimum
    /// lies between them.
    pub min_ready: (u32, u32),
    pub min_routable: (u32, u32),
    /// Time certainly below the floor, and time possibly below it.
    pub below_ready: (Duration, Duration),
    pub below_routable: (Duration, Duration),
    /// Longest run certainly below the floor (either count), and possibly.
    pub longest_gap: (Duration, Duration),
    /// Time during which either count was uncertain.
    pub uncertain: Duration,
    /// Time certainly below the floor (either count), and possibly.
    pub below: (Duration, Duration),
    /// Gaps: runs of time certainly below the floor (either count).
    pub gaps: u64,
}

/// [`RoleStats`] accumulated span by span: bounds are pushed in time order
/// and each holds until the next (or the `end` given to [`Accum::at_end`]).
#[derive(Debug, Clone)]
pub struct Accum {
    floor: u32,
    stats: RoleStats,
    runs: (Duration, Duration),
    open: Option<Bounds>,
    /// The last span of non-zero length was certainly below the floor.
    in_gap: bool,
}

impl Accum {
    pub fn new(floor: u32) -> Accum {
        Accum {
            floor,
            stats: RoleStats {
                min_ready: (u32::MAX, u32::MAX),
                min_routable: (u32::MAX, u32::MAX),
                below_ready: (Duration::ZERO, Duration::ZERO),
                below_routable: (Duration::ZERO, Duration::ZERO),
                longest_gap: (Duration::ZERO, Duration::ZERO),
                uncertain: Duration::ZERO,
                below: (Duration::ZERO, Duration::ZERO),
                gaps: 0,
            },
            runs: (Duration::ZERO, Duration::ZERO),
            open: None,
            in_gap: false,
        }
    }

    /// The next bounds (ignored when equal to the open ones).
    pub fn push(&mut self, b: Bounds) {
        if let Some(open) = self.open {
            if open.ready == b.ready && open.routable == b.routable {
                return;
            }
            self.close(open, b.at);
        }
        self.open = Some(b);
    }

    fn close(&mut self, b: Bounds, until: Duration) {
        let span = until.saturating_sub(b.at);
        let s = &mut self.stats;
        let floor = self.floor;
        s.min_ready = (s.min_ready.0.min(b.ready.0), s.min_ready.1.min(b.ready.1));
        s.min_routable = (
            s.min_routable.0.min(b.routable.0),
            s.min_routable.1.min(b.routable.1),
        );
        add_below(&mut s.below_ready, b.ready, floor, span);
        add_below(&mut s.below_routable, b.routable, floor, span);
        let certain = b.ready.1 < floor || b.routable.1 < floor;
        let possible = b.ready.0 < floor || b.routable.0 < floor;
        if certain {
            s.below.0 += span;
        }
        if possible {
            s.below.1 += span;
        }
        if !span.is_zero() {
            if certain && !self.in_gap {
                s.gaps += 1;
            }
            self.in_gap = certain;
        }
        self.runs.0 = if certain {
            self.runs.0 + span
        } else {
            Duration::ZERO
        };
        self.runs.1 = if possible {
            self.runs.1 + span
        } else {
            Duration::ZERO
        };
        s.longest_gap = (
            s.longest_gap.0.max(self.runs.0),
            s.longest_gap.1.max(self.runs.1),
        );
        if b.uncertain() {
            s.uncertain += span;
        }
    }

    /// The stats with the open bounds held until `end`.
    pub fn at_end(&self, end: Duration) -> RoleStats {
        let mut copy = self.clone();
        if let Some(open) = copy.open.take() {
            copy.close(open, end.max(open.at));
        }
        let mut s = copy.stats;
        if s.min_ready.0 == u32::MAX {
            s.min_ready = (0, 0);
            s.min_routable = (0, 0);
        }
        s
    }
}

/// Whether a role was already below the floor when the audit began, and
/// until when it stayed so, never lower than it began: that stretch is not
/// the audited change's doing. The bounds after it (all of them, for a
/// role that began at the floor) go to `during`, the change's own part.
#[derive(Debug, Clone)]
pub struct Onset {
    floor: u32,
    state: OnsetState,
    pub during: Accum,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum OnsetState {
    Unseen,
    Held,
    Below(Stretch),
}

/// A role below the floor from the start: its lowest counts then (Ready,
/// routable) and the end of the stretch (`None`: it lasts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stretch {
    pub ready: u32,
    pub routable: u32,
    pub until: Option<Duration>,
}

impl Onset {
    pub fn new(floor: u32) -> Onset {
        Onset {
            floor,
            state: OnsetState::Unseen,
            during: Accum::new(floor),
        }
    }

    /// The next bounds, in time order.
    pub fn push(&mut self, b: Bounds) {
        let below = b.ready.1 < self.floor || b.routable.1 < self.floor;
        self.state = match self.state {
            OnsetState::Unseen if below => OnsetState::Below(Stretch {
                ready: b.ready.0,
                routable: b.routable.0,
                until: None,
            }),
            OnsetState::Unseen => OnsetState::Held,
            OnsetState::Below(s @ Stretch { until: None, .. })
                if below && b.ready.0 >= s.ready && b.routable.0 >= s.routable =>
            {
                return;
            }
            OnsetState::Below(s @ Stretch { until: None, .. }) => OnsetState::Below(Stretch {
                until: Some(b.at),
                ..s
            }),
            other => other,
        };
        if !matches!(self.state, OnsetState::Below(Stretch { until: None, .. })) {
            self.during.push(b);
        }
    }

    /// The stretch below the floor the role began with, if it did.
    pub fn stretch(&self) -> Option<Stretch> {
        match self.state {
            OnsetState::Below(s) => Some(s),
            _ => None,
        }
    }
}

/// Stats of `bounds` (as [`sweep`] gives them) up to `end`.
#[cfg(test)]
pub fn stats(bounds: &[Bounds], floor: u32, end: Duration) -> RoleStats {
    let mut acc = Accum::new(floor);
    for b in bounds.iter().filter(|b| b.at <= end) {
        acc.push(*b);
    }
    acc.at_end(end)
}

fn add_below(acc: &mut (Duration, Duration), (low, high): (u32, u32), floor: u32, span: Duration) {
    if high < floor {
        acc.0 += span;
    }
    if low < floor {
        acc.1 += span;
    }
}

/// (from, to, lowest Ready bounds, lowest routable bounds) of a span.
pub type OpenSpan = (Duration, Duration, (u32, u32), (u32, u32));

/// The spans during which `bounds` leave it open whether the role held
/// `floor`: (from, to, ready bounds, routable bounds) at their lowest.
pub fn undecided(bounds: &[Bounds], floor: u32, end: Duration) -> Vec<OpenSpan> {
    let mut out: Vec<OpenSpan> = Vec::new();
    for (i, b) in bounds.iter().enumerate() {
        let until = bounds.get(i + 1).map_or(end, |n| n.at).min(end);
        let open = |(lo, hi): (u32, u32)| lo < floor && hi >= floor;
        let certain_gap = b.ready.1 < floor || b.routable.1 < floor;
        if certain_gap || !(open(b.ready) || open(b.routable)) || b.at >= end {
            continue;
        }
        let min2 = |a: (u32, u32), b: (u32, u32)| (a.0.min(b.0), a.1.min(b.1));
        match out.last_mut() {
            Some(last) if last.1 == b.at => {
                last.1 = until;
                last.2 = min2(last.2, b.ready);
                last.3 = min2(last.3, b.routable);
            }
            _ => out.push((b.at, until, b.ready, b.routable)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn an_unknown_deletion_bounds_the_role_and_a_known_one_fixes_it() {
        let t0 = Instant::now();
        let at = |n| t0 + secs(n);
        // Old pod up from 0; blind 10..60; the new pod Ready at 40 (server
        // timestamp); the old pod's deletion is not seen: unknown 10..60.
        let mut old = Track::default();
        old.set(at(0), Known::Yes);
        old.unknown_until(at(10), at(60), Known::No);
        let mut new = Track::default();
        new.set(at(30), Known::No);
        new.set(at(40), Known::Yes);
        let bounds = sweep([(&old, &old), (&new, &new)].into_iter(), t0);
        let s = stats(&bounds, 1, secs(100));
        assert_eq!(s.min_ready, (0, 1));
        // Folding the settled past changes nothing of what is swept.
        let (mut o2, mut n2) = (old.clone(), new.clone());
        o2.fold_before(at(35));
        n2.fold_before(at(35));
        let mut acc = Accum::new(1);
        bounds
            .iter()
            .filter(|b| b.at < secs(35))
            .for_each(|b| acc.push(*b));
        sweep([(&o2, &o2), (&n2, &n2)].into_iter(), t0)
            .into_iter()
            .for_each(|b| acc.push(b));
        assert_eq!(acc.at_end(secs(100)), s);
        assert_eq!(s.below_ready, (secs(0), secs(30)));
        let open = undecided(&bounds, 1, secs(100));
        assert_eq!(open.len(), 1);
        assert_eq!((open[0].0, open[0].1), (secs(10), secs(40)));
        // An event says the old pod was deleted at 20: exact, a 20 s gap.
        old.rewrite_from(at(10), &[(at(20), Known::No)]);
        let bounds = sweep([(&old, &old), (&new, &new)].into_iter(), t0);
        let s = stats(&bounds, 1, secs(100));
        assert_eq!(s.min_ready, (0, 0));
        assert_eq!(s.below_ready, (secs(20), secs(20)));
        assert_eq!(s.longest_gap, (secs(20), secs(20)));
        assert_eq!(s.uncertain, secs(0));
    }

    #[test]
    fn a_change_never_goes_back_before_the_last() {
        let t0 = Instant::now();
        let mut t = Track::default();
        t.set(t0 + secs(5), Known::Yes);
        t.set(t0 + secs(3), Known::No);
        assert_eq!(t.points(), &[(t0 + secs(5), Known::No)]);
    }

    fn exact(at: u64, ready: u32, routable: u32) -> Bounds {
        Bounds {
            at: secs(at),
            ready: (ready, ready),
            routable: (routable, routable),
        }
    }

    /// Below from the start and then Ready: a stretch, and no gap of the
    /// change's own; a role that began at the floor has no stretch.
    #[test]
    fn a_role_below_from_the_start_is_a_stretch_not_a_gap() {
        let mut onset = Onset::new(1);
        [
            exact(0, 0, 0),
            exact(10, 1, 0),
            exact(15, 1, 1),
            exact(30, 0, 0),
        ]
        .into_iter()
        .for_each(|b| onset.push(b));
        let stretch = onset.stretch();
        assert_eq!(
            stretch,
            Some(Stretch {
                ready: 0,
                routable: 0,
                until: Some(secs(15))
            })
        );
        let during = onset.during.at_end(secs(40));
        assert_eq!(during.below.0, secs(10), "{during:?}");
        let mut held = Onset::new(1);
        held.push(exact(0, 1, 1));
        held.push(exact(5, 0, 0));
        assert_eq!(held.stretch(), None);
        assert_eq!(held.during.at_end(secs(10)).below.0, secs(5));
    }

    /// A role that began below and fell lower fell during the change.
    #[test]
    fn falling_lower_than_it_began_ends_the_stretch() {
        let mut onset = Onset::new(2);
        onset.push(exact(0, 1, 1));
        onset.push(exact(4, 0, 0));
        assert_eq!(onset.stretch().and_then(|s| s.until), Some(secs(4)));
        let during = onset.during.at_end(secs(6));
        assert_eq!(during.min_ready, (0, 0));
        let mut lasting = Onset::new(1);
        lasting.push(exact(0, 0, 0));
        assert_eq!(lasting.stretch().and_then(|s| s.until), None);
    }

    #[test]
    fn gaps_are_runs_certainly_below_and_below_counts_either_count() {
        let b = |at: u64, ready: (u32, u32), routable: (u32, u32)| Bounds {
            at: secs(at),
            ready,
            routable,
        };
        // Up; Ready lost 2..3; routable lost 5..6 with a zero-length
        // recovery inside (not a second gap); possibly below 8..9.
        let bounds = [
            b(0, (1, 1), (1, 1)),
            b(2, (0, 0), (1, 1)),
            b(3, (1, 1), (1, 1)),
            b(5, (1, 1), (0, 0)),
            b(6, (1, 1), (1, 1)),
            b(6, (1, 1), (0, 0)),
            b(7, (1, 1), (1, 1)),
            b(8, (0, 1), (1, 1)),
            b(9, (1, 1), (1, 1)),
        ];
        let s = stats(&bounds, 1, secs(10));
        assert_eq!(s.gaps, 2);
        assert_eq!(s.below, (secs(3), secs(4)));
    }
}
