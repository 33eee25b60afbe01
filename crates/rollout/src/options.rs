//! What to roll ([`Request`]), how ([`Options`]), how it went
//! ([`RolloutOutcome`]) and what can go wrong ([`RolloutError`]): library
//! types, built from the command line in `crate::console`.

use std::time::{Duration, Instant};

use infera_audit::Report;
use infera_audit::exit::Exit;
use infera_cluster::ClusterError;

use super::leg_tracker::Observation;
use super::plan::Plan;
use super::target::Target;
use super::trigger;

/// What to roll.
#[derive(Debug, Clone)]
pub struct Request {
    pub target: Target,
    /// `--service` (empty: every worker service).
    pub services: Vec<String>,
    /// `--order`.
    pub order: Vec<String>,
    /// `restart` or `set-image`.
    pub command: &'static str,
    pub image: Option<String>,
    pub env: Vec<trigger::EnvSetting>,
    /// `--surge` (plain Deployment).
    pub surge: bool,
}

impl Request {
    /// `infera rollout restart TARGET` of every worker service, nothing else
    /// changed.
    pub fn restart(target: Target) -> Request {
        Request {
            target,
            services: Vec::new(),
            order: Vec::new(),
            command: "restart",
            image: None,
            env: Vec::new(),
            surge: false,
        }
    }
}

/// `--pause-between`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseBetween {
    Legs,
    Pods,
    Never,
}

/// `--on-stall`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnStall {
    Abort,
    Wait,
}

/// How to roll it.
#[derive(Debug, Clone)]
pub struct Options {
    pub dry_run: bool,
    pub force: bool,
    pub yes: bool,
    pub abort: bool,
    pub pause_between: PauseBetween,
    /// In reported time.
    pub step_timeout: Duration,
    /// In reported time.
    pub stall_after: Duration,
    pub on_stall: OnStall,
    pub sample_interval: Duration,
    pub min_ready: u32,
    /// Reported seconds per wall second (1 on a real cluster, the sim speed).
    pub time_scale: f64,
    /// Label durations as simulated time.
    pub simulated: bool,
    /// The command line to print for resume / abort hints.
    pub command_line: String,
}

impl Options {
    /// A forced, non-interactive rollout on the simulator at `speed`
    /// (`infera demo`, tests, benches): no prompt, no pause, proceed despite
    /// a predicted stall/gap, abort on a stall after 5 min, a step timeout
    /// of 30 min, a sample every 10 s, floor 1; durations are simulated time.
    pub fn unattended(speed: f64) -> Options {
        Options {
            dry_run: false,
            force: true,
            yes: true,
            abort: false,
            pause_between: PauseBetween::Never,
            step_timeout: Duration::from_secs(30 * 60),
            stall_after: Duration::from_secs(5 * 60),
            on_stall: OnStall::Abort,
            sample_interval: Duration::from_secs(10),
            min_ready: 1,
            time_scale: speed,
            simulated: true,
            command_line: "infera rollout restart".into(),
        }
    }
}

/// How it went.
#[derive(Debug)]
pub struct RolloutOutcome {
    pub exit: Exit,
    pub plan: Option<Plan>,
    pub report: Option<Report>,
    /// Every step observed, in order, with the instant this process saw it.
    pub steps: Vec<(String, Observation, Instant)>,
}

impl RolloutOutcome {
    /// Ended before driving (dry run, refused, nothing to abort, …).
    pub(crate) fn early(exit: Exit, plan: Option<Plan>) -> RolloutOutcome {
        RolloutOutcome {
            exit,
            plan,
            report: None,
            steps: Vec::new(),
        }
    }
}

/// Errors of `infera rollout` (all exit 2).
#[derive(Debug, thiserror::Error)]
pub enum RolloutError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error(transparent)]
    Trigger(#[from] trigger::TriggerError),
    #[error(transparent)]
    Record(#[from] super::record::RecordError),
    #[error("{0}")]
    Usage(String),
    #[error("cannot read {what} as JSON: {source}")]
    Encode {
        what: String,
        #[source]
        source: serde_json::Error,
    },
}
