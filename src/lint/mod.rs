//! `infera lint`: rules over typed manifest views, reported by printers.

pub mod config;
pub mod engine;
pub mod finding;
pub mod report;
pub mod rules;

use crate::cli::{LintArgs, RulesArgs};
use crate::exit::Exit;

/// `infera lint`.
pub fn run(_args: &LintArgs) -> anyhow::Result<Exit> {
    anyhow::bail!("infera lint is not implemented yet")
}

/// `infera rules [CODE]`.
pub fn rules_command(_args: &RulesArgs) -> anyhow::Result<Exit> {
    anyhow::bail!("infera rules is not implemented yet")
}
