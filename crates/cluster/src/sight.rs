//! Whether infera's watches are current: what it did not see is part of the
//! evidence.
//!
//! A watch is *current* while it is proven to deliver what the API server
//! holds. Proofs are watch events and a cheap heartbeat (`GET /version`
//! every [`HEARTBEAT_PERIOD`], answered within [`HEARTBEAT_TIMEOUT`]). A
//! watch becomes *blind* at its last proof when a request fails (the
//! watcher's error: connection refused or reset, 5xx, 410 Gone) or a
//! heartbeat goes unanswered (a blackhole: the stream is held open and
//! nothing arrives). So silence is trusted for at most
//! [`TRUSTED_SILENCE`], and everything after the last proof is counted
//! unobserved, retroactively.
//!
//! A blind watch is current again when its stream delivers an event (the
//! watcher resumed; what it replays carries the server's timestamps) or a
//! re-list completes. When two heartbeats in a row are answered and the
//! stream is still silent, the sight asks for a re-list
//! ([`Transition::Resync`]): the caller starts the watch afresh. Waiting for
//! the old stream is not enough: a connection that was blackholed (or whose
//! API server restarted meanwhile) can stay silent long after the network
//! is back, while new requests succeed (seen on the lab: a partitioned
//! audit whose stream never delivered the roll it missed).
//!
//! [`Sight`] is the pure state machine (instants passed in, table-tested);
//! [`spawn_heartbeat`] sends the requests; [`Skew`] turns the `Date`
//! headers of the answers into the API server's clock offset.

use std::time::{Duration, Instant, SystemTime};

use tokio::sync::mpsc;

/// How often the heartbeat asks the API server.
pub const HEARTBEAT_PERIOD: Duration = Duration::from_secs(5);
/// How long a heartbeat may take before it counts as unanswered.
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest silence trusted: a blackhole is noticed within this long
/// of the last proof (the interval since that proof is then unobserved).
pub const TRUSTED_SILENCE: Duration = Duration::from_secs(10);

/// One heartbeat: when it was sent, and its answer if one came in time.
#[derive(Debug, Clone)]
pub struct Beat {
    pub sent: Instant,
    pub sent_wall: SystemTime,
    /// `Some` when the API server answered within the timeout.
    pub answered: Option<Answer>,
    /// Why not, in words (never a credential: the error's kind only).
    pub failure: Option<String>,
}

/// The API server's answer to a heartbeat.
#[derive(Debug, Clone)]
pub struct Answer {
    pub at: Instant,
    pub at_wall: SystemTime,
    /// The response's `Date` header (the server's clock, to the second).
    pub date: Option<SystemTime>,
}

/// What a watch's sight changed.
#[derive(Debug, Clone, PartialEq)]
pub enum Transition {
    None,
    /// The watch is blind from `since` (its last proof).
    Blind {
        since: Instant,
        reason: String,
    },
    /// The watch is current again from `at`.
    Sighted {
        at: Instant,
    },
    /// The API server answers again: start the watch afresh (a re-list);
    /// the watch stays blind until it completes.
    Resync,
}

#[derive(Debug, Clone)]
enum State {
    Current,
    Blind {
        reason: String,
        /// Heartbeats answered in a row since the last failure.
        answered: u32,
    },
}

/// The sight of one watch: current or blind, and the last proof.
#[derive(Debug, Clone)]
pub struct Sight {
    state: State,
    last_proof: Instant,
}

impl Sight {
    /// A watch that is current at `now` (its first list just arrived).
    pub fn new(now: Instant) -> Sight {
        Sight {
            state: State::Current,
            last_proof: now,
        }
    }

    pub fn is_current(&self) -> bool {
        matches!(self.state, State::Current)
    }

    /// The last instant the watch was proven current.
    pub fn last_proof(&self) -> Instant {
        self.last_proof
    }

    /// A watch event arrived at `at`: the stream delivers.
    ///
    /// A blind watch whose stream delivers again (the watcher resumed after
    /// a failed request; held events arrive after a blackhole) is current
    /// from this event on: what it replays carries the server's timestamps.
    pub fn event(&mut self, at: Instant) -> Transition {
        self.last_proof = self.last_proof.max(at);
        self.sighted(at)
    }

    /// A request of the watch failed.
    pub fn watch_error(&mut self, reason: &str) -> Transition {
        match &mut self.state {
            State::Blind { answered, .. } => {
                *answered = 0;
                Transition::None
            }
            State::Current => self.go_blind(reason),
        }
    }

    /// A re-list began: the watch could not resume, so it missed events.
    pub fn relisting(&mut self) -> Transition {
        match self.state {
            State::Blind { .. } => Transition::None,
            State::Current => self.go_blind("the watch had to re-list"),
        }
    }

    /// A re-list completed at `at`: the cache is the server's state again.
    pub fn relisted(&mut self, at: Instant) -> Transition {
        self.sighted(at)
    }

    /// A heartbeat's outcome.
    pub fn beat(&mut self, beat: &Beat) -> Transition {
        if beat.answered.is_none() {
            let reason = match &beat.failure {
                Some(f) => format!("the API server did not answer a heartbeat ({f})"),
                None => "the API server did not answer a heartbeat".to_string(),
            };
            return match &mut self.state {
                State::Blind { answered, .. } => {
                    *answered = 0;
                    Transition::None
                }
                State::Current => self.go_blind(&reason),
            };
        }
        match &mut self.state {
            State::Current => {
                self.last_proof = self.last_proof.max(beat.sent);
                Transition::None
            }
            State::Blind { answered, .. } => {
                *answered += 1;
                // Ask once, at the second answer in a row.
                if *answered == 2 {
                    Transition::Resync
                } else {
                    Transition::None
                }
            }
        }
    }

    fn go_blind(&mut self, reason: &str) -> Transition {
        self.state = State::Blind {
            reason: reason.to_string(),
            answered: 0,
        };
        Transition::Blind {
            since: self.last_proof,
            reason: reason.to_string(),
        }
    }

    fn sighted(&mut self, at: Instant) -> Transition {
        let was_blind = !self.is_current();
        self.state = State::Current;
        self.last_proof = self.last_proof.max(at);
        if was_blind {
            Transition::Sighted { at }
        } else {
            Transition::None
        }
    }

    /// Why the watch is blind, if it is.
    pub fn reason(&self) -> Option<&str> {
        match &self.state {
            State::Blind { reason, .. } => Some(reason),
            State::Current => None,
        }
    }
}

/// The API server's clock minus this machine's, from `Date` headers.
///
/// A `Date` header is the server's time truncated to the second, taken
/// somewhere between sending and receiving: each answer bounds the offset
/// to `(date - received, date + 1 s - sent)`. The bounds of every answer are
/// intersected, so the estimate tightens to about the round trip after a
/// few heartbeats (the heartbeats land at different fractions of a second).
#[derive(Debug, Clone, Copy, Default)]
pub struct Skew {
    bounds: Option<(f64, f64)>,
}

fn secs_since_epoch(t: SystemTime) -> f64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

impl Skew {
    /// Take one answer into account.
    pub fn observe(&mut self, sent: SystemTime, received: SystemTime, date: SystemTime) {
        let date = secs_since_epoch(date);
        let low = date - secs_since_epoch(received);
        let high = date + 1.0 - secs_since_epoch(sent);
        self.bounds = Some(match self.bounds {
            // A clock that jumped (the intersection is empty) starts over.
            Some((lo, hi)) if low.max(lo) <= high.min(hi) => (low.max(lo), high.min(hi)),
            _ => (low, high),
        });
    }

    /// Seconds to add to this machine's clock to get the server's (0 before
    /// any answer).
    pub fn offset_s(&self) -> f64 {
        self.bounds.map_or(0.0, |(lo, hi)| (lo + hi) / 2.0)
    }

    /// Half the width of the bounds: how far the estimate may be off.
    pub fn uncertainty_s(&self) -> f64 {
        self.bounds.map_or(1.0, |(lo, hi)| (hi - lo) / 2.0)
    }

    pub fn measured(&self) -> bool {
        self.bounds.is_some()
    }
}

/// Send a heartbeat (`GET /version`) now and then every `period`, each
/// bounded by `timeout`, reporting every outcome on the channel. The task
/// ends when the receiver is dropped.
pub fn spawn_heartbeat(
    client: kube::Client,
    period: Duration,
    timeout: Duration,
) -> mpsc::Receiver<Beat> {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let beat = heartbeat(&client, timeout).await;
            if tx.send(beat).await.is_err() {
                return;
            }
        }
    });
    rx
}

/// One heartbeat request.
pub async fn heartbeat(client: &kube::Client, timeout: Duration) -> Beat {
    let sent = Instant::now();
    let sent_wall = SystemTime::now();
    let request = http::Request::get("/version").body(kube::client::Body::empty());
    let outcome = match request {
        Ok(req) => tokio::time::timeout(timeout, client.send(req)).await,
        Err(e) => {
            return Beat {
                sent,
                sent_wall,
                answered: None,
                failure: Some(format!("cannot build the request: {e}")),
            };
        }
    };
    let (answered, failure) = match outcome {
        Ok(Ok(response)) => {
            let date = response
                .headers()
                .get(http::header::DATE)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| {
                    jiff::fmt::rfc2822::DateTimeParser::new()
                        .parse_timestamp(v)
                        .ok()
                })
                .map(SystemTime::from);
            (
                Some(Answer {
                    at: Instant::now(),
                    at_wall: SystemTime::now(),
                    date,
                }),
                None,
            )
        }
        Ok(Err(e)) => (None, Some(crate::redact::kube_error(&e))),
        Err(_) => (
            None,
            Some(format!("no answer within {}s", timeout.as_secs())),
        ),
    };
    Beat {
        sent,
        sent_wall,
        answered,
        failure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(sent: Instant, at: Instant) -> Beat {
        Beat {
            sent,
            sent_wall: SystemTime::now(),
            answered: Some(Answer {
                at,
                at_wall: SystemTime::now(),
                date: None,
            }),
            failure: None,
        }
    }

    fn unanswered(sent: Instant) -> Beat {
        Beat {
            sent,
            sent_wall: SystemTime::now(),
            answered: None,
            failure: Some("no answer within 5s".into()),
        }
    }

    #[test]
    fn a_blackhole_is_blind_from_the_last_proof_until_a_fresh_list() {
        let t0 = Instant::now();
        let s = |n: u64| t0 + Duration::from_secs(n);
        let mut sight = Sight::new(t0);
        assert_eq!(sight.event(s(3)), Transition::None);
        assert_eq!(sight.beat(&answered(s(5), s(5))), Transition::None);
        // Silence: the next beat times out; blind since the beat sent at 5.
        match sight.beat(&unanswered(s(10))) {
            Transition::Blind { since, .. } => assert_eq!(since, s(5)),
            other => panic!("{other:?}"),
        }
        assert!(!sight.is_current());
        assert_eq!(sight.beat(&answered(s(60), s(61))), Transition::None);
        // Answered twice: start the watch afresh; still blind until listed.
        assert_eq!(sight.beat(&answered(s(65), s(65))), Transition::Resync);
        assert_eq!(sight.beat(&answered(s(70), s(70))), Transition::None);
        assert!(!sight.is_current());
        assert!(matches!(sight.relisting(), Transition::None));
        assert_eq!(sight.relisted(s(71)), Transition::Sighted { at: s(71) });
    }

    #[test]
    fn a_watch_error_is_blind_from_the_last_proof() {
        let t0 = Instant::now();
        let s = |n: u64| t0 + Duration::from_secs(n);
        let mut sight = Sight::new(t0);
        assert!(matches!(
            sight.watch_error("connection refused"),
            Transition::Blind { since, .. } if since == t0
        ));
        assert_eq!(sight.watch_error("connection refused"), Transition::None);
        sight.beat(&answered(s(41), s(41)));
        assert_eq!(sight.beat(&answered(s(45), s(45))), Transition::Resync);
        assert_eq!(sight.relisted(s(46)), Transition::Sighted { at: s(46) });
        assert!(matches!(sight.relisting(), Transition::Blind { .. }));
        assert_eq!(sight.relisted(s(61)), Transition::Sighted { at: s(61) });
        // A resumed stream that delivers is current again at once.
        assert!(matches!(
            sight.watch_error("reset"),
            Transition::Blind { .. }
        ));
        assert_eq!(sight.event(s(71)), Transition::Sighted { at: s(71) });
    }

    #[test]
    fn skew_tightens_to_the_round_trip() {
        let epoch = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let at = |ms: u64| epoch + Duration::from_millis(ms);
        let mut skew = Skew::default();
        // The server runs 300.4 s ahead; each answer's Date is its clock
        // truncated to the second, taken 10 ms after sending.
        for sent in [0u64, 5_250, 10_500, 15_750, 21_000, 26_300] {
            let server_ms = sent + 10 + 300_400;
            let date = epoch + Duration::from_secs(server_ms / 1000);
            skew.observe(at(sent), at(sent + 20), date);
        }
        assert!((skew.offset_s() - 300.4).abs() < 0.3, "{}", skew.offset_s());
        assert!(skew.uncertainty_s() < 0.3, "{}", skew.uncertainty_s());
    }
}
