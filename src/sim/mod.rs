//! `infera sim`: a simulated cluster speaking the real Kubernetes API.

pub mod api;
pub mod clock;
pub mod controllers;
pub mod faults;
pub mod scenario;
pub mod store;

use crate::cli::SimServeArgs;
use crate::exit::Exit;

/// `infera sim serve`.
pub async fn serve(_args: SimServeArgs) -> anyhow::Result<Exit> {
    anyhow::bail!("infera sim serve is not implemented yet")
}

/// `infera sim scenarios`.
pub fn list_scenarios() -> anyhow::Result<Exit> {
    anyhow::bail!("infera sim scenarios is not implemented yet")
}
