//! `infera rollout`: plan, drive, step events.

use crate::cli::RolloutArgs;
use crate::exit::Exit;

/// `infera rollout restart|set-image`.
pub async fn run(_args: RolloutArgs, _image: Option<String>) -> anyhow::Result<Exit> {
    anyhow::bail!("infera rollout is not implemented yet")
}
