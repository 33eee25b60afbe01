//! Cluster access through `kube`: client, watches, node inventory, capacity.

use crate::cli::RbacArgs;
use crate::exit::Exit;

/// `infera rbac`.
pub fn rbac_command(_args: &RbacArgs) -> anyhow::Result<Exit> {
    anyhow::bail!("infera rbac is not implemented yet")
}
