//! API-level fault injection: what a flaky control plane does to clients.
//!
//! `FaultConfig` is the scenario file's `faults:` key and the `sim serve`
//! fault flags. `FaultInjector` makes the per-request decisions from a seeded
//! RNG, so a run with the same seed and the same request sequence sees the
//! same faults. Pod crash and node NotReady faults are scenario keys handled
//! by the controllers, not here.

use std::sync::Mutex;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Deserializer, Serialize};

/// Faults the simulated API server injects. Every field is optional; the
/// default is a healthy server.
///
/// Durations are written like the CLI flags: `90s`, `5m`, `1h30m`, or a bare
/// number of seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultConfig {
    /// Close every open watch stream this often (wall clock).
    #[serde(
        default,
        deserialize_with = "opt_duration",
        alias = "drop_watches_every"
    )]
    pub drop_watches_every: Option<Duration>,
    /// Fraction (0..1) of requests that start a burst of 500/503/429 answers
    /// carrying `Retry-After`.
    #[serde(default, alias = "error_rate")]
    pub error_rate: Option<f64>,
    /// Requests answered with an error per burst (default 3).
    #[serde(default, alias = "error_burst")]
    pub error_burst: Option<u32>,
    /// The `Retry-After` seconds sent with injected errors (default 1).
    #[serde(default, alias = "retry_after_seconds")]
    pub retry_after_seconds: Option<u64>,
    /// Fraction (0..1) of updates and patches answered with 409 Conflict.
    #[serde(default, alias = "conflict_rate")]
    pub conflict_rate: Option<f64>,
    /// Compact the watch history this often, so resuming gets 410 Gone.
    #[serde(default, deserialize_with = "opt_duration", alias = "compact_every")]
    pub compact_every: Option<Duration>,
    /// Latency added to every request.
    #[serde(default, deserialize_with = "opt_duration")]
    pub latency: Option<Duration>,
    /// Partitions of the clients from the API server: `[{kind: cut|blackhole,
    /// at: 30s, for: 55s}]` (wall clock from the start).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<crate::partition::ScheduledPartition>,
    /// Close the listener and reopen it on the same port this often (state kept).
    #[serde(
        default,
        deserialize_with = "opt_duration",
        alias = "restart_api_every"
    )]
    pub restart_api_every: Option<Duration>,
}

fn opt_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Seconds(f64),
        Text(String),
    }
    match Option::<Raw>::deserialize(d)? {
        None => Ok(None),
        Some(Raw::Seconds(s)) if s.is_finite() && s >= 0.0 => Ok(Some(Duration::from_secs_f64(s))),
        Some(Raw::Seconds(s)) => Err(serde::de::Error::custom(format!(
            "`{s}` is not a non-negative duration"
        ))),
        Some(Raw::Text(t)) => infera_model::duration::parse_duration(&t)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

impl FaultConfig {
    /// `self` with every field `other` sets taken from `other` (flags over
    /// scenario file).
    pub fn overridden_by(&self, other: &FaultConfig) -> FaultConfig {
        FaultConfig {
            drop_watches_every: other.drop_watches_every.or(self.drop_watches_every),
            error_rate: other.error_rate.or(self.error_rate),
            error_burst: other.error_burst.or(self.error_burst),
            retry_after_seconds: other.retry_after_seconds.or(self.retry_after_seconds),
            conflict_rate: other.conflict_rate.or(self.conflict_rate),
            compact_every: other.compact_every.or(self.compact_every),
            latency: other.latency.or(self.latency),
            restart_api_every: other.restart_api_every.or(self.restart_api_every),
            partitions: if other.partitions.is_empty() {
                self.partitions.clone()
            } else {
                other.partitions.clone()
            },
        }
    }

    /// Check rates are fractions and periods are non-zero.
    pub fn validate(&self) -> Result<(), String> {
        for (name, rate) in [
            ("errorRate", self.error_rate),
            ("conflictRate", self.conflict_rate),
        ] {
            if let Some(r) = rate
                && !(0.0..=1.0).contains(&r)
            {
                return Err(format!(
                    "faults.{name}: {r} is not a fraction between 0 and 1"
                ));
            }
        }
        for (name, period) in [
            ("dropWatchesEvery", self.drop_watches_every),
            ("compactEvery", self.compact_every),
            ("restartApiEvery", self.restart_api_every),
        ] {
            if period.is_some_and(|p| p.is_zero()) {
                return Err(format!("faults.{name}: the period must be longer than 0s"));
            }
        }
        Ok(())
    }

    pub fn is_healthy(&self) -> bool {
        *self == FaultConfig::default()
    }
}

/// An error the injector wants a request answered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InjectedError {
    /// 500, 503 or 429.
    pub code: u16,
    pub retry_after_seconds: u64,
}

/// Per-request fault decisions, deterministic for a seed and request order.
#[derive(Debug)]
pub struct FaultInjector {
    config: FaultConfig,
    state: Mutex<InjectorState>,
}

#[derive(Debug)]
struct InjectorState {
    rng: ChaCha8Rng,
    burst_left: u32,
    burst_code: u16,
}

impl FaultInjector {
    pub fn new(config: FaultConfig, seed: u64) -> FaultInjector {
        FaultInjector {
            config,
            state: Mutex::new(InjectorState {
                rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_fa17),
                burst_left: 0,
                burst_code: 503,
            }),
        }
    }

    pub fn config(&self) -> &FaultConfig {
        &self.config
    }

    fn state(&self) -> std::sync::MutexGuard<'_, InjectorState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether this request is answered with a 5xx/429 instead.
    pub fn error(&self) -> Option<InjectedError> {
        let rate = self.config.error_rate.filter(|r| *r > 0.0)?;
        let retry_after_seconds = self.config.retry_after_seconds.unwrap_or(1);
        let mut s = self.state();
        if s.burst_left == 0 {
            if !s.rng.random_bool(rate.clamp(0.0, 1.0)) {
                return None;
            }
            s.burst_left = self.config.error_burst.unwrap_or(3).max(1);
            s.burst_code = match s.rng.random_range(0..3u8) {
                0 => 500,
                1 => 503,
                _ => 429,
            };
        }
        s.burst_left -= 1;
        Some(InjectedError {
            code: s.burst_code,
            retry_after_seconds,
        })
    }

    /// Whether this update or patch is answered with 409 Conflict.
    pub fn conflict(&self) -> bool {
        let Some(rate) = self.config.conflict_rate.filter(|r| *r > 0.0) else {
            return false;
        };
        self.state().rng.random_bool(rate.clamp(0.0, 1.0))
    }

    pub fn latency(&self) -> Option<Duration> {
        self.config.latency.filter(|l| !l.is_zero())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_scenario_keys() {
        let cfg: FaultConfig = serde_saphyr::from_str(
            "dropWatchesEvery: 30s\nerrorRate: 0.1\ncompactEvery: 5\nlatency: 20ms\n",
        )
        .unwrap();
        assert_eq!(cfg.drop_watches_every, Some(Duration::from_secs(30)));
        assert_eq!(cfg.compact_every, Some(Duration::from_secs(5)));
        assert_eq!(cfg.latency, Some(Duration::from_millis(20)));
        assert_eq!(cfg.error_rate, Some(0.1));
        assert!(serde_saphyr::from_str::<FaultConfig>("bogus: 1\n").is_err());
    }

    #[test]
    fn same_seed_same_faults() {
        let cfg = FaultConfig {
            error_rate: Some(0.3),
            conflict_rate: Some(0.5),
            ..FaultConfig::default()
        };
        let run = |seed| {
            let inj = FaultInjector::new(cfg.clone(), seed);
            (0..200)
                .map(|_| (inj.error().map(|e| e.code), inj.conflict()))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        assert!(run(7).iter().any(|(e, _)| e.is_some()));
    }

    #[test]
    fn bursts_are_consecutive() {
        let inj = FaultInjector::new(
            FaultConfig {
                error_rate: Some(1.0),
                error_burst: Some(2),
                ..FaultConfig::default()
            },
            1,
        );
        let first = inj.error().unwrap();
        assert_eq!(inj.error().unwrap().code, first.code);
        assert_eq!(first.retry_after_seconds, 1);
    }
}
