//! `infera demo`: the simulator in-process, a rollout against it over HTTP.

use crate::cli::DemoArgs;
use crate::exit::Exit;

/// `infera demo`.
pub async fn run(_args: DemoArgs) -> anyhow::Result<Exit> {
    anyhow::bail!("infera demo is not implemented yet")
}
