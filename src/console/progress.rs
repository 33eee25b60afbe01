//! How a rollout shows its steps: on a TTY an indicatif multi-progress (one
//! bar per leg, a spinner with the elapsed time of the current step); without
//! a TTY (or with `NO_COLOR`) plain timestamped lines fit for an incident log.
//!
//! Durations are in *reported* time: wall time × `time_scale` (1 for a real
//! cluster, the simulator speed for `infera demo`, labelled "simulated").

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use infera_rollout::leg_tracker::{Observation, StepKind};
use infera_rollout::plan::Plan;
use infera_rollout::reporter::{Clock, Question, Reporter, Stall, human_duration};

/// Steps a bar counts per replaced pod (created, scheduled, loading, Ready,
/// /ready via proxy, routable, old terminating, old gone).
pub const STEPS_PER_POD: u64 = 8;

#[derive(Debug)]
struct LegBar {
    bar: Option<ProgressBar>,
    step: String,
    step_started: Instant,
}

/// The printer of one rollout.
#[derive(Debug)]
pub struct Progress {
    multi: Option<MultiProgress>,
    legs: BTreeMap<String, LegBar>,
    started: Instant,
    clock: Clock,
}

/// Whether to draw bars: both streams a terminal and `NO_COLOR` unset.
pub fn interactive() -> bool {
    std::io::stdout().is_terminal()
        && std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

impl Progress {
    /// `legs`: (name, number of pods to replace). `simulated` labels every
    /// duration as simulated time.
    pub fn new(legs: &[(String, u64)], clock: Clock, bars: bool) -> Self {
        let started = Instant::now();
        let multi = bars.then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        let style = ProgressStyle::with_template(
            "{spinner:.cyan} {prefix:<10.bold} [{bar:24.cyan/blue}] {pos}/{len} {wide_msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        let legs = legs
            .iter()
            .map(|(name, pods)| {
                let bar = multi.as_ref().map(|m| {
                    let bar = m.add(ProgressBar::new(pods.max(&1) * STEPS_PER_POD));
                    bar.set_style(style.clone());
                    bar.set_prefix(name.clone());
                    bar.set_message("waiting");
                    bar
                });
                (
                    name.clone(),
                    LegBar {
                        bar,
                        step: "waiting".into(),
                        step_started: started,
                    },
                )
            })
            .collect();
        Progress {
            multi,
            legs,
            started,
            clock,
        }
    }

    /// Wall time since `since`, in reported time.
    pub fn scaled(&self, since: Instant, now: Instant) -> Duration {
        self.clock.scaled(since, now)
    }

    fn label(&self) -> &'static str {
        if self.clock.simulated { " sim" } else { "" }
    }

    /// Print a line above the bars (or plainly).
    pub fn line(&self, text: &str) {
        match &self.multi {
            Some(m) => {
                if m.println(text).is_err() {
                    eprintln!("{text}");
                }
            }
            None => println!("{text}"),
        }
    }

    /// A timestamped line: `18:45:12Z +1m05s sim  decode  text`.
    pub fn event(&self, leg: &str, text: &str, now: Instant) {
        tracing::debug!(target: infera_cluster::trace::target::ROLLOUT_DRIVER, leg, "{text}");
        let at = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ");
        let elapsed = human_duration(self.scaled(self.started, now));
        self.line(&format!(
            "{at}  +{elapsed:>8}{}  {leg:<10}  {text}",
            self.label()
        ));
    }

    /// A step observed on leg `leg`; `step_elapsed` is since the previous step
    /// of the same leg (reported time).
    pub fn step(&mut self, leg: &str, obs: &Observation, now: Instant) {
        let since = self
            .legs
            .get(leg)
            .map(|l| l.step_started)
            .unwrap_or(self.started);
        let took = human_duration(self.scaled(since, now));
        let node = obs
            .node
            .as_deref()
            .filter(|_| matches!(obs.kind, StepKind::Scheduled | StepKind::SurgeCreated))
            .map(|n| format!(" on {n}"))
            .unwrap_or_default();
        let detail = obs
            .detail
            .as_deref()
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        let text = format!(
            "{:<16} {}{node}  ({}{} after the previous step){detail}",
            obs.kind.as_str(),
            obs.pod,
            took,
            self.label()
        );
        self.event(leg, &text, now);
        if let Some(l) = self.legs.get_mut(leg) {
            l.step = format!("{} {}", obs.kind.describe(), obs.pod);
            l.step_started = now;
            if let Some(bar) = &l.bar
                && counts(obs.kind)
            {
                bar.inc(1);
            }
        }
    }

    /// Mark a leg as started / its current activity.
    pub fn activity(&mut self, leg: &str, what: &str, now: Instant) {
        if let Some(l) = self.legs.get_mut(leg) {
            l.step = what.to_string();
            l.step_started = now;
        }
    }

    /// Refresh spinners with the elapsed time of the current step.
    pub fn tick(&self, now: Instant) {
        for l in self.legs.values() {
            if let Some(bar) = &l.bar {
                let took = human_duration(self.scaled(l.step_started, now));
                bar.set_message(format!("{} ({took}{})", l.step, self.label()));
                bar.tick();
            }
        }
    }

    pub fn leg_done(&mut self, leg: &str, summary: &str) {
        if let Some(l) = self.legs.get_mut(leg) {
            l.step = summary.to_string();
            if let Some(bar) = &l.bar {
                bar.finish_with_message(summary.to_string());
            }
        }
    }

    /// Stop drawing; later output goes straight to the streams.
    pub fn finish(&mut self) {
        for l in self.legs.values() {
            if let Some(bar) = &l.bar
                && !bar.is_finished()
            {
                bar.abandon();
            }
        }
        if let Some(m) = self.multi.take() {
            let _ = m.clear();
        }
    }

    /// Run `f` (e.g. a confirmation prompt) with the bars hidden.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.multi {
            Some(m) => m.suspend(f),
            None => f(),
        }
    }
}

/// Which observations advance a leg's bar.
fn counts(kind: StepKind) -> bool {
    !matches!(
        kind,
        StepKind::Unschedulable
            | StepKind::ProxyDisagrees
            | StepKind::NotReadyAgain
            | StepKind::SurgeGone
    )
}

/// The command line's [`Reporter`]: the plan and notes on stdout, steps as
/// bars on a TTY (timestamped lines otherwise), questions on the terminal.
#[derive(Debug)]
pub struct Terminal {
    bars: bool,
    progress: Option<Progress>,
}

impl Terminal {
    /// `bars`: draw progress bars (see [`interactive`]).
    pub fn new(bars: bool) -> Self {
        Terminal {
            bars,
            progress: None,
        }
    }
}

impl Reporter for Terminal {
    fn plan(&mut self, plan: &Plan) {
        self.note(&plan.render());
    }

    fn note(&mut self, text: &str) {
        match &self.progress {
            Some(p) => p.line(text),
            None => println!("{text}"),
        }
    }

    fn start(&mut self, legs: &[(String, u64)], clock: Clock) {
        self.progress = Some(Progress::new(legs, clock, self.bars));
    }

    fn event(&mut self, leg: &str, text: &str, at: Instant) {
        if let Some(p) = &self.progress {
            p.event(leg, text, at);
        }
    }

    fn step(&mut self, leg: &str, obs: &Observation, at: Instant) {
        if let Some(p) = &mut self.progress {
            p.step(leg, obs, at);
        }
    }

    fn stall(&mut self, leg: &str, stall: &Stall, at: Instant) {
        self.event(leg, &stall.describe(), at);
    }

    fn activity(&mut self, leg: &str, what: &str, at: Instant) {
        if let Some(p) = &mut self.progress {
            p.activity(leg, what, at);
        }
    }

    fn tick(&mut self, now: Instant) {
        if let Some(p) = &self.progress {
            p.tick(now);
        }
    }

    fn leg_done(&mut self, leg: &str, summary: &str) {
        if let Some(p) = &mut self.progress {
            p.leg_done(leg, summary);
        }
    }

    fn finish(&mut self) {
        if let Some(p) = &mut self.progress {
            p.finish();
        }
    }

    fn interactive(&self) -> bool {
        std::io::stdin().is_terminal()
    }

    fn ask(&mut self, question: &Question) -> Option<bool> {
        let terminal = match question {
            Question::Start => self.interactive() && std::io::stdout().is_terminal(),
            _ => self.interactive(),
        };
        if !terminal {
            return None;
        }
        let text = question.text();
        Some(match &self.progress {
            Some(p) => p.suspend(|| confirm(&text)),
            None => confirm(&text),
        })
    }
}

/// `question [y/N]` on stdout, the answer from stdin.
fn confirm(question: &str) -> bool {
    use std::io::Write;
    print!("{question} [y/N] ");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).is_ok() && matches!(line.trim(), "y" | "Y" | "yes")
}
