//! `infera rollout`: plan, drive, step events.
//!
//! * [`target`] — `idep/NAME` | `deploy/NAME`.
//! * [`trigger`] — the change as merge patches on the CR (or Deployment), and its undo.
//! * [`history`] — the last rollouts, kept on the object (`infera rollout history`).
//! * [`record`] — the in-flight record (annotation) that makes resume and `--abort` work.
//! * [`plan`] — the preflight table: strategy, surge capacity, lint, verdict; leg order.
//! * [`gitops`], [`revert`] — who else keeps the target (Argo CD, Flux), and
//!   a trigger reverted while driving.
//! * [`leg_tracker`] — the per-leg step state machine over pod watch events.
//! * `leg_monitor` — the per-leg decisions (blind, done, pause, stall,
//!   revert, controller, step timeout, Ctrl-C) from what the driver sees; pure.
//! * [`reporter`] — where the driver's output and questions go (the CLI
//!   implements it in `crate::console`; tests capture it).
//! * [`options`] — [`Request`], [`Options`] (library types; the CLI converts
//!   its flags in `crate::console`), [`RolloutOutcome`], [`RolloutError`].
//! * [`drain`] — `infera drain`: a node drain planned and run as a rollout.
//! * `prepare` — before the drive: the legs and the change, resume or refuse
//!   an in-flight rollout, drive or stop after the plan.
//! * `abort` — undoing a leg (`--abort`, and the driver's abort on a stall or revert).
//! * [`drive`] — the [`Driver`]: the I/O loop tying them together with the
//!   Auditor (requests, watches, reporting), asking the leg monitor what to do.
//!
//! Exit codes: 0 complete and every role held `--min-ready`; 1 complete but
//! a role fell below; 3 stalled, aborted, timed out, reverted by another
//! writer, or stopped by the preflight (a predicted stall/gap, or a GitOps
//! tool that would revert the change, without `--force`); 2 usage, connection
//! or permission; 130 interrupted.

mod abort;
mod api;
pub mod coherence;
mod controller;
pub mod drain;
pub mod drive;
pub mod gitops;
pub mod history;
mod leg_monitor;
pub mod leg_tracker;
mod legs;
mod lint_bridge;
pub mod options;
pub mod plan;
mod prepare;
pub mod record;
pub mod reporter;
pub mod revert;
pub mod target;
pub mod trigger;
mod watch;

pub use drive::{Driver, execute, execute_with};
pub use options::{OnStall, Options, PauseBetween, Request, RolloutError, RolloutOutcome};
pub use reporter::{Clock, Question, Recorder, Reported, Reporter, Silent, Stall, human_duration};
