//! InferaDeployment → the workloads the infera operator would create.
//! The single source of truth shared by `lint`, `render`, `rollout` and `sim`.

use crate::cli::RenderArgs;
use crate::exit::Exit;

/// `infera render FILE`.
pub fn render_command(_args: &RenderArgs) -> anyhow::Result<Exit> {
    anyhow::bail!("infera render is not implemented yet")
}
