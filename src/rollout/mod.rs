//! `infera rollout`: plan, drive, step events.

pub mod plan;
pub mod progress;
pub mod record;
pub mod target;
pub mod tracker;
pub mod trigger;

use crate::cli::RolloutArgs;
use crate::exit::Exit;

/// `infera rollout restart|set-image`.
pub async fn run(_args: RolloutArgs, _image: Option<String>) -> anyhow::Result<Exit> {
    anyhow::bail!("infera rollout is not implemented yet")
}
