//! How a rollout tells what it does: the [`Reporter`] trait. The driver
//! never prints and never reads a terminal; the command line implements
//! this trait (bars on a TTY, plain lines otherwise: `crate::console`),
//! tests capture it ([`Recorder`]), library callers may ignore it
//! ([`Silent`]).
//!
//! Durations are in *reported* time: wall time × `time_scale` (1 for a real
//! cluster, the simulator speed for `infera demo`, labelled "simulated").

use std::time::{Duration, Instant};

use super::leg_tracker::Observation;
use super::plan::Plan;

/// `1m05s`, `3.2s`, `250ms`.
pub fn human_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 1.0 {
        return format!("{}ms", d.as_millis());
    }
    if secs < 60.0 {
        return format!("{secs:.1}s");
    }
    let total = d.as_secs();
    let (h, m, s) = (total / 3600, (total % 3600) / 60, total % 60);
    if h > 0 {
        format!("{h}h{m:02}m{s:02}s")
    } else {
        format!("{m}m{s:02}s")
    }
}

/// How wall time maps to reported time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clock {
    /// Reported seconds per wall second.
    pub time_scale: f64,
    /// Label durations as simulated time.
    pub simulated: bool,
}

impl Clock {
    /// Wall time from `since` to `now`, in reported time.
    pub fn scaled(&self, since: Instant, now: Instant) -> Duration {
        now.saturating_duration_since(since)
            .mul_f64(self.time_scale.max(0.0))
    }
}

/// A question only a person at a terminal can answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Question {
    /// After the plan, before any change.
    Start,
    /// `--pause-between pods`: `replaced` of `of` pods done.
    NextPod { replaced: usize, of: u32 },
    /// `--pause-between legs`.
    NextLeg,
}

impl Question {
    pub fn text(&self) -> String {
        match self {
            Question::Start => "Start the rollout?".into(),
            Question::NextPod { replaced, of } => {
                format!("{replaced} of {of} pods replaced. Go on with the next pod?")
            }
            Question::NextLeg => "Leg done. Go on with the next leg?".into(),
        }
    }
}

/// A leg that stopped progressing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stall {
    /// The unschedulable surge pod (`None`: the Deployment is past its
    /// progress deadline).
    pub pod: Option<String>,
    /// The FailedScheduling event or the Deployment's condition, quoted.
    pub message: String,
    /// `--stall-after` (reported time).
    pub after: Duration,
}

impl Stall {
    /// `STALLED: surge pod P unschedulable for 5m00s: FailedScheduling: …`.
    pub fn describe(&self) -> String {
        format!(
            "STALLED: {} for {}: {}",
            self.pod
                .as_deref()
                .map(|p| format!("surge pod {p} unschedulable"))
                .unwrap_or_else(|| "progress deadline exceeded".into()),
            human_duration(self.after),
            self.message
        )
    }
}

/// Where a rollout's output goes.
pub trait Reporter {
    /// The preflight plan.
    fn plan(&mut self, plan: &Plan);
    /// The drain plan (`infera drain`); by default its text, as a note.
    fn drain_plan(&mut self, plan: &crate::drain::DrainPlan) {
        self.note(&plan.render());
    }
    /// A message that is not a step of a leg (resuming, dry run, refusal,
    /// state after an interruption, a watch note).
    fn note(&mut self, text: &str);
    /// Driving begins: the legs with the pods each replaces.
    fn start(&mut self, legs: &[(String, u64)], clock: Clock);
    /// Something the driver did or decided on `leg`, at `at`.
    fn event(&mut self, leg: &str, text: &str, at: Instant);
    /// A step observed on `leg`.
    fn step(&mut self, leg: &str, obs: &Observation, at: Instant);
    /// `leg` stalled (reported once per leg); the driver's decision
    /// (abort or wait) follows as an event.
    fn stall(&mut self, leg: &str, stall: &Stall, at: Instant);
    /// What `leg` is waiting for now.
    fn activity(&mut self, leg: &str, what: &str, at: Instant);
    /// Periodic refresh (every 100 ms while driving).
    fn tick(&mut self, now: Instant);
    /// `leg` finished.
    fn leg_done(&mut self, leg: &str, summary: &str);
    /// Driving ended; later output is not drawn over.
    fn finish(&mut self);
    /// Whether someone can answer questions (a terminal on stdin).
    fn interactive(&self) -> bool;
    /// Ask; `None` when nobody can answer (no terminal).
    fn ask(&mut self, question: &Question) -> Option<bool>;
}

/// Reports nothing and cannot ask.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Reporter for Silent {
    fn plan(&mut self, _: &Plan) {}
    fn note(&mut self, _: &str) {}
    fn start(&mut self, _: &[(String, u64)], _: Clock) {}
    fn event(&mut self, _: &str, _: &str, _: Instant) {}
    fn step(&mut self, _: &str, _: &Observation, _: Instant) {}
    fn stall(&mut self, _: &str, _: &Stall, _: Instant) {}
    fn activity(&mut self, _: &str, _: &str, _: Instant) {}
    fn tick(&mut self, _: Instant) {}
    fn leg_done(&mut self, _: &str, _: &str) {}
    fn finish(&mut self) {}
    fn interactive(&self) -> bool {
        false
    }
    fn ask(&mut self, _: &Question) -> Option<bool> {
        None
    }
}

/// One thing reported, as [`Recorder`] keeps it.
#[derive(Debug, Clone, PartialEq)]
pub enum Reported {
    Plan { target: String, legs: usize },
    Note(String),
    Start(Vec<(String, u64)>),
    Event { leg: String, text: String },
    Step { leg: String, obs: Observation },
    Stall { leg: String, stall: Stall },
    LegDone { leg: String, summary: String },
    Finish,
    Asked(Question),
}

/// Keeps everything reported, in order; answers questions from a script.
#[derive(Debug, Default, Clone)]
pub struct Recorder {
    pub reported: Vec<Reported>,
    /// Answers to questions, in order; `None` (or none left): cannot ask.
    pub answers: Vec<Option<bool>>,
}

impl Recorder {
    /// The notes and events as text, in order.
    pub fn lines(&self) -> Vec<String> {
        self.reported
            .iter()
            .filter_map(|r| match r {
                Reported::Note(t) => Some(t.clone()),
                Reported::Event { leg, text } => Some(format!("{leg}: {text}")),
                Reported::Stall { leg, stall } => Some(format!("{leg}: {}", stall.describe())),
                _ => None,
            })
            .collect()
    }
}

impl Reporter for Recorder {
    fn plan(&mut self, plan: &Plan) {
        self.reported.push(Reported::Plan {
            target: plan.target.clone(),
            legs: plan.legs.len(),
        });
    }
    fn note(&mut self, text: &str) {
        self.reported.push(Reported::Note(text.to_string()));
    }
    fn start(&mut self, legs: &[(String, u64)], _: Clock) {
        self.reported.push(Reported::Start(legs.to_vec()));
    }
    fn event(&mut self, leg: &str, text: &str, _: Instant) {
        self.reported.push(Reported::Event {
            leg: leg.to_string(),
            text: text.to_string(),
        });
    }
    fn step(&mut self, leg: &str, obs: &Observation, _: Instant) {
        self.reported.push(Reported::Step {
            leg: leg.to_string(),
            obs: obs.clone(),
        });
    }
    fn stall(&mut self, leg: &str, stall: &Stall, _: Instant) {
        self.reported.push(Reported::Stall {
            leg: leg.to_string(),
            stall: stall.clone(),
        });
    }
    fn activity(&mut self, _: &str, _: &str, _: Instant) {}
    fn tick(&mut self, _: Instant) {}
    fn leg_done(&mut self, leg: &str, summary: &str) {
        self.reported.push(Reported::LegDone {
            leg: leg.to_string(),
            summary: summary.to_string(),
        });
    }
    fn finish(&mut self) {
        self.reported.push(Reported::Finish);
    }
    fn interactive(&self) -> bool {
        self.answers.iter().any(Option::is_some)
    }
    fn ask(&mut self, question: &Question) -> Option<bool> {
        self.reported.push(Reported::Asked(question.clone()));
        if self.answers.is_empty() {
            None
        } else {
            self.answers.remove(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(human_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(human_duration(Duration::from_millis(3200)), "3.2s");
        assert_eq!(human_duration(Duration::from_secs(65)), "1m05s");
        assert_eq!(human_duration(Duration::from_secs(3725)), "1h02m05s");
    }

    #[test]
    fn scaled_time() {
        let clock = Clock {
            time_scale: 70.0,
            simulated: true,
        };
        let t0 = Instant::now();
        assert_eq!(
            clock.scaled(t0, t0 + Duration::from_secs(2)),
            Duration::from_secs(140)
        );
    }
}
