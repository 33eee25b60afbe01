//! `infera audit`: per-role Ready/routable tracking, sampler, report, timeline.

use crate::cli::AuditArgs;
use crate::exit::Exit;

/// `infera audit TARGET`.
pub async fn run(_args: AuditArgs) -> anyhow::Result<Exit> {
    anyhow::bail!("infera audit is not implemented yet")
}
