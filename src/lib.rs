//! infera: make rolling an LLM-serving worker on Kubernetes safe, and prove it was.
//!
//! The binary's library: the command line (`cli`), the commands that turn
//! `*Args` into library options, print, prompt and map outcomes to exit
//! codes (`commands`, `console`, `demo`), and `generate`. The work is done
//! by the workspace's library crates (see `docs/architecture.md`), re-exported
//! here under their module names so `infera::sim::…` paths keep working.

pub mod app;
pub mod cli;
pub mod commands;
pub mod console;
pub mod demo;
pub mod generate;
pub mod logging;

pub use infera_audit as audit;
pub use infera_audit::exit;
pub use infera_cluster as cluster;
pub use infera_lint as lint;
pub use infera_model::{manifest, operator, rolling, scheduling};
pub use infera_monitor as monitor;
pub use infera_rollout as rollout;
pub use infera_sim as sim;
