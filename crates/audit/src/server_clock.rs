//! The API server's timestamps on this process's clock.
//!
//! Object timestamps (`lastTransitionTime`, `deletionTimestamp`,
//! `creationTimestamp`, `managedFields[].time`, Events) are the server's
//! wall clock, truncated to the second by a real API server. They are
//! placed on this process's monotonic clock through one anchor (an
//! `Instant` and the wall time at that instant) and the measured clock
//! offset ([`Skew`], from the heartbeats' `Date` headers).

use std::time::{Duration, Instant, SystemTime};

use infera_cluster::sight::Skew;
use jiff::Timestamp;

/// How much later than its server timestamp an event may arrive and still
/// be timed by its arrival (the finer clock): the timestamp's precision
/// (1 s) and a margin for the clock offset's uncertainty. Later than that,
/// the event was delivered late (a partition, a replay) and the server's
/// timestamp is the better time.
pub const PROMPT: Duration = Duration::from_secs(2);

/// Maps server timestamps to local instants and back.
#[derive(Debug, Clone, Copy)]
pub struct ServerClock {
    anchor: Instant,
    anchor_wall: SystemTime,
    skew: Skew,
}

impl Default for ServerClock {
    fn default() -> Self {
        ServerClock {
            anchor: Instant::now(),
            anchor_wall: SystemTime::now(),
            skew: Skew::default(),
        }
    }
}

impl ServerClock {
    pub fn set_skew(&mut self, skew: Skew) {
        self.skew = skew;
    }

    pub fn skew(&self) -> Skew {
        self.skew
    }

    /// The offset applied: the measured one when it is at least the `Date`
    /// header's own precision (1 s) plus its uncertainty; below that it is
    /// indistinguishable from none (and server timestamps are truncated to
    /// the second anyway).
    pub fn offset_s(&self) -> f64 {
        let offset = self.skew.offset_s();
        if offset.abs() >= 1.0 + self.skew.uncertainty_s() {
            offset
        } else {
            0.0
        }
    }

    /// The local instant at which the server's clock read `ts`.
    pub fn instant(&self, ts: Timestamp) -> Instant {
        let server_s = ts.as_millisecond() as f64 / 1000.0;
        let local_s = server_s - self.offset_s();
        let anchor_s = match self.anchor_wall.duration_since(SystemTime::UNIX_EPOCH) {
            Ok(d) => d.as_secs_f64(),
            Err(e) => -e.duration().as_secs_f64(),
        };
        let offset = local_s - anchor_s;
        if offset >= 0.0 {
            self.anchor + Duration::from_secs_f64(offset)
        } else {
            self.anchor
                .checked_sub(Duration::from_secs_f64(-offset))
                .unwrap_or(self.anchor)
        }
    }

    /// `at` as UTC (RFC 3339, milliseconds) on this machine's clock.
    pub fn utc(&self, at: Instant) -> String {
        let wall = match at.checked_duration_since(self.anchor) {
            Some(d) => self.anchor_wall + d,
            None => self.anchor_wall - self.anchor.saturating_duration_since(at),
        };
        Timestamp::try_from(wall)
            .map(|t| t.round(jiff::Unit::Millisecond).unwrap_or(t).to_string())
            .unwrap_or_default()
    }

    /// When a change that arrived at `arrival` happened: its server
    /// timestamp when the event came late (or infera was blind), its
    /// arrival when it came promptly. `None`: no timestamp, and infera was
    /// blind, so the instant is unknown.
    ///
    /// A timestamp on a whole second is taken as truncated (a real API
    /// server writes seconds): the change happened within the second after
    /// it, so the change is known only to that window.
    pub fn when(&self, ts: Option<Timestamp>, arrival: Instant, blind: bool) -> Timed {
        let Some(stamp) = ts else {
            return if blind {
                Timed::Unknown
            } else {
                Timed::Arrival(arrival)
            };
        };
        let t = self.instant(stamp);
        if !blind && arrival.saturating_duration_since(t) <= PROMPT {
            return Timed::Arrival(arrival);
        }
        let t = t.min(arrival);
        if stamp.subsec_nanosecond() == 0 {
            let end = (t + Duration::from_secs(1)).min(arrival);
            if end > t {
                return Timed::Window(t, end);
            }
        }
        Timed::Server(t)
    }
}

/// How a change was timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timed {
    Arrival(Instant),
    /// Reconstructed from the server's own timestamp.
    Server(Instant),
    /// Reconstructed from a timestamp truncated to the second: somewhere
    /// in this window.
    Window(Instant, Instant),
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_events_take_the_server_time_and_prompt_ones_their_arrival() {
        let clock = ServerClock::default();
        let now = Instant::now();
        let ts = |instant: Instant| {
            let wall = SystemTime::now() - now.saturating_duration_since(instant);
            Timestamp::try_from(wall).expect("a timestamp")
        };
        let ten_ago = now - Duration::from_secs(10);
        match clock.when(Some(ts(ten_ago)), now, false) {
            Timed::Server(t) => {
                assert!(t.max(ten_ago) - t.min(ten_ago) < Duration::from_millis(50))
            }
            other => panic!("{other:?}"),
        }
        let just_now = now - Duration::from_millis(300);
        assert_eq!(
            clock.when(Some(ts(just_now)), now, false),
            Timed::Arrival(now)
        );
        assert_eq!(clock.when(None, now, true), Timed::Unknown);
        assert_eq!(clock.when(None, now, false), Timed::Arrival(now));
    }
}
