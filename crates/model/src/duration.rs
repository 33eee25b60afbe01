//! Durations as the command line and scenario files spell them.

use std::time::Duration;

/// Parse `90s`, `5m`, `1h30m`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(Duration::from_secs_f64(secs));
        }
        return Err(format!("`{s}` is not a non-negative duration"));
    }
    humantime::parse_duration(s)
        .map_err(|e| format!("`{s}` is not a duration ({e}); use e.g. `90s`, `5m`, `1h30m`"))
}
