//! `infera audit`: per-role Ready/routable tracking, sampler, report, timeline.
//!
//! The pieces, for `infera rollout` and `infera demo` as much as for
//! `infera audit`:
//!
//! * [`Auditor`] — the synchronous tracker: feed it
//!   `kube::runtime::watcher::Event<Pod>`s with [`Auditor::apply`], call
//!   [`Auditor::sample`] every [`Auditor::sample_wall_interval`], mark
//!   rollout steps with [`Auditor::step`], end with [`Auditor::finish`].
//! * [`AuditSession`] — an `Auditor` fed by a background pod watcher and
//!   sampling tick (one watch, no request per sample); [`run_auditor`] is
//!   its one-call form.
//! * [`Report`] — JSON (the machine-readable report), a table, one sentence, timeline
//!   SVG/CSV, and the exit code.
//! * [`Target`], [`roles_from_inferadeployment`], [`parse_role_flag`] — what
//!   to audit and how its pods are grouped into roles.
//! * [`Selection`], [`audit_many_with`], [`ManyReport`] — several targets
//!   (`idep/a deploy/b`, `-l SELECTOR`, `-A`) in one run, one pod watch.

mod auditor;
mod command;
mod complete;
mod evidence;
pub use evidence::RoleStats;
pub mod exit;
mod group;
mod mixed;
mod narrate;
mod pods;
mod report;
mod roles;
mod server_clock;
mod session;
mod timeline;
pub use report::traffic;
mod verdict;

pub use auditor::{Auditor, RoleCounts, RoleSpec};
pub use command::{AuditCommandError, Options, SETTLE, audit_target, audit_target_with};
pub use group::{
    ManyReport, Selected, Selection, audit_many_during, audit_many_with, target_label,
};
pub use mixed::MixedWindow;
pub use narrate::Step;
pub use report::{
    AlreadyBelow, Outcome, Outputs, Report, ReportError, RoleBounds, RoleReport, StepRecord,
    Undecided, Unobserved, fit_terminal, format_seconds,
};
pub use roles::{
    Target, TargetError, common_selector, deployment_selector, is_worker_service, parse_role_flag,
    parse_selector, roles_from_inferadeployment, service_role,
};
pub use server_clock::{PROMPT, ServerClock, Timed};
pub use session::{AuditError, AuditSession, date_deletions, run_auditor};
pub use timeline::{Timeline, TimelinePoint, minutes_seconds};

#[cfg(test)]
mod tests;
