//! Scenario time: durations scaled by `--speed`, timestamps left real.
//!
//! `speed` is simulated seconds per wall-clock second, so a 140 s weight load
//! at speed 70 takes 2 s of wall time. Object timestamps stay real UTC (so
//! `kubectl get` ages look right); only waits and elapsed spans are scaled.
//! Controllers compare two wall timestamps in scenario time with
//! [`SimClock::sim_between`].

use std::sync::Arc;
use std::time::{Duration, Instant};

/// Simulated seconds per wall second, and when the simulation started.
#[derive(Debug, Clone)]
pub struct SimClock {
    inner: Arc<ClockInner>,
}

#[derive(Debug)]
struct ClockInner {
    speed: f64,
    started: Instant,
}

/// Smallest and largest speeds accepted; outside them the value is clamped
/// (a zero, negative or NaN speed would stop or reverse time).
const MIN_SPEED: f64 = 0.001;
const MAX_SPEED: f64 = 1_000_000.0;

impl SimClock {
    /// A clock running `speed` simulated seconds per wall second.
    pub fn new(speed: f64) -> Self {
        let speed = if speed.is_finite() {
            speed.clamp(MIN_SPEED, MAX_SPEED)
        } else {
            1.0
        };
        SimClock {
            inner: Arc::new(ClockInner {
                speed,
                started: Instant::now(),
            }),
        }
    }

    /// Simulated seconds per wall second.
    pub fn speed(&self) -> f64 {
        self.inner.speed
    }

    /// Sleep for a span of scenario time.
    pub async fn sleep(&self, simulated: Duration) {
        tokio::time::sleep(self.to_wall(simulated)).await;
    }

    /// The wall-clock length of a span of scenario time.
    pub fn to_wall(&self, simulated: Duration) -> Duration {
        simulated.div_f64(self.inner.speed)
    }

    /// The scenario-time length of a span of wall time.
    pub fn to_sim(&self, wall: Duration) -> Duration {
        wall.mul_f64(self.inner.speed)
    }

    /// Scenario time since the clock was made.
    pub fn elapsed(&self) -> Duration {
        self.to_sim(self.inner.started.elapsed())
    }

    /// The wall instant at which `simulated` scenario time from now has passed.
    pub fn deadline(&self, simulated: Duration) -> Instant {
        Instant::now() + self.to_wall(simulated)
    }

    /// Now as an object timestamp (real UTC, millisecond precision so that
    /// scenario-time comparisons stay exact at high speeds).
    pub fn timestamp(&self) -> String {
        now_timestamp()
    }

    /// Scenario time between two RFC 3339 wall timestamps (`to` - `from`),
    /// zero when `to` is earlier or either does not parse.
    pub fn sim_between(&self, from: &str, to: &str) -> Duration {
        match (parse_timestamp(from), parse_timestamp(to)) {
            (Some(a), Some(b)) if b > a => {
                let wall = Duration::from_nanos(u64::try_from((b - a).max(0)).unwrap_or(u64::MAX));
                self.to_sim(wall)
            }
            _ => Duration::ZERO,
        }
    }

    /// Scenario time elapsed since an RFC 3339 wall timestamp.
    pub fn sim_since(&self, from: &str) -> Duration {
        self.sim_between(from, &now_timestamp())
    }
}

/// The simulated cluster's clock minus the host's, in milliseconds.
static SERVER_SKEW_MS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// Set the simulated cluster's clock offset from the host's (`sim serve
/// --clock-skew`): every timestamp the cluster writes and every `Date`
/// header it sends is that far off, as with a control plane whose clock
/// differs from the client's. Process-wide (one `sim serve` per process).
pub fn set_server_skew(skew: jiff::SignedDuration) {
    let ms = i64::try_from(skew.as_millis()).unwrap_or(0);
    SERVER_SKEW_MS.store(ms, std::sync::atomic::Ordering::Relaxed);
}

/// Now on the simulated cluster's clock.
pub fn server_now() -> jiff::Timestamp {
    let ms = SERVER_SKEW_MS.load(std::sync::atomic::Ordering::Relaxed);
    let now = jiff::Timestamp::now();
    now.checked_add(jiff::SignedDuration::from_millis(ms))
        .unwrap_or(now)
}

/// Now, as a Kubernetes `Time` (RFC 3339, second precision, UTC).
pub fn now_rfc3339() -> String {
    server_now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The current UTC time as an RFC 3339 string with milliseconds.
pub fn now_timestamp() -> String {
    let now = server_now();
    match jiff::Timestamp::from_millisecond(now.as_millisecond()) {
        Ok(ms) => ms.to_string(),
        Err(_) => now.to_string(),
    }
}

/// Nanoseconds since the Unix epoch of an RFC 3339 timestamp.
fn parse_timestamp(s: &str) -> Option<i128> {
    s.parse::<jiff::Timestamp>().ok().map(|t| t.as_nanosecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_scale_by_speed() {
        let clock = SimClock::new(70.0);
        assert_eq!(
            clock.to_wall(Duration::from_secs(140)),
            Duration::from_secs(2)
        );
        assert_eq!(
            clock.to_sim(Duration::from_secs(2)),
            Duration::from_secs(140)
        );
        assert_eq!(SimClock::new(f64::NAN).speed(), 1.0);
        assert_eq!(SimClock::new(-5.0).speed(), MIN_SPEED);
    }

    #[test]
    fn timestamps_compare_in_scenario_time() {
        let clock = SimClock::new(10.0);
        let d = clock.sim_between("2026-01-01T00:00:00.100Z", "2026-01-01T00:00:01.100Z");
        assert_eq!(d, Duration::from_secs(10));
        assert_eq!(
            clock.sim_between("2026-01-01T00:00:02Z", "2026-01-01T00:00:01Z"),
            Duration::ZERO
        );
        assert_eq!(
            clock.sim_between("garbage", "2026-01-01T00:00:01Z"),
            Duration::ZERO
        );
        assert!(now_timestamp().ends_with('Z'));
    }
}
