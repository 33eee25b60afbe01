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

use super::tracker::{Observation, StepKind};

/// Steps a bar counts per replaced pod (created, scheduled, loading, Ready,
/// /ready via proxy, routable, old terminating, old gone).
pub const STEPS_PER_POD: u64 = 8;

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
    time_scale: f64,
    simulated: bool,
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
    pub fn new(legs: &[(String, u64)], time_scale: f64, simulated: bool, bars: bool) -> Self {
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
            time_scale,
            simulated,
        }
    }

    /// Wall time since `since`, in reported time.
    pub fn scaled(&self, since: Instant, now: Instant) -> Duration {
        now.saturating_duration_since(since)
            .mul_f64(self.time_scale.max(0.0))
    }

    fn label(&self) -> &'static str {
        if self.simulated { " sim" } else { "" }
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
        tracing::debug!(target: "infera::rollout::driver", leg, "{text}");
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
        let p = Progress::new(&[("decode".into(), 1)], 70.0, true, false);
        let t0 = Instant::now();
        assert_eq!(
            p.scaled(t0, t0 + Duration::from_secs(2)),
            Duration::from_secs(140)
        );
    }
}
