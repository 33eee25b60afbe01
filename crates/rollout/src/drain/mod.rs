//! `infera drain`: a node drain as a rollout.
//!
//! * [`gather`] — one read of the cluster: nodes, pods (the capacity
//!   list), PodDisruptionBudgets, and each pod's owner.
//! * [`plan`] — every pod on the node(s) grouped by owner and role, and a
//!   verdict per workload: evict, move, GAP or STALL, with the reason.
//! * [`state`] — the resume record on the node (any machine finds it).
//! * [`dry_run`] — `--dry-run=server`: cordon and evictions sent with
//!   `dryRun=All`.
//! * [`evict`] — the Eviction API, 429 retried every 5 s as kubectl does.
//! * `traffic` — `--traffic`: a client per fleet's router, checked before
//!   the cordon, its requests in the fleet's report.
//! * [`run`] — cordon; move the workers leg by leg with the rollout
//!   [`crate::Driver`] (stall detection, abort, Ctrl-C, resume); evict the
//!   rest; wait until nothing evictable is left; all of it audited per
//!   fleet ([`infera_audit::audit_many_during`]).
//!
//! Exit codes as rollout's: 0 drained and every role held `--min-ready`;
//! 1 drained but a role fell below; 3 refused by the plan (GAP or STALL
//! without `--force`), or stopped (a move stalled or aborted, `--timeout`);
//! 2 usage, connection or permission; 130 interrupted. The node stays
//! cordoned whenever the drain stops.

pub mod dry_run;
pub mod evict;
pub mod gather;
pub mod plan;
mod run;
pub mod state;
mod traffic;

use infera_audit::AuditCommandError;
use infera_cluster::ClusterError;

use super::options::RolloutError;

pub use gather::Selection;
pub use plan::{DrainPath, DrainPlan, UnitPlan};
pub use run::{DrainOptions, DrainOutcome, DryRun, drain};
pub use traffic::DrainTraffic;

/// Errors of `infera drain` (all exit 2; nothing was changed unless the
/// message says so).
#[derive(Debug, thiserror::Error)]
pub enum DrainError {
    #[error("{0}")]
    Cluster(ClusterError),
    /// A right the drain needs is missing.
    #[error("{0}; for drain: `infera rbac --drain -n NAMESPACE` prints the ClusterRole it needs")]
    Forbidden(ClusterError),
    #[error(transparent)]
    Rollout(#[from] RolloutError),
    #[error(transparent)]
    Audit(#[from] AuditCommandError),
    #[error("{0}")]
    Usage(String),
    /// `--traffic`: a fleet's serving path did not answer before the
    /// drain (exit 3; nothing was changed).
    #[error("{0}")]
    NotServing(String),
}

impl From<ClusterError> for DrainError {
    fn from(e: ClusterError) -> Self {
        match e {
            ClusterError::Forbidden { .. } => DrainError::Forbidden(e),
            e => DrainError::Cluster(e),
        }
    }
}
