//! infera: make rolling an LLM-serving worker on Kubernetes safe, and prove it was.
//!
//! The binary's library: the command line (`cli`), the commands that turn
//! `*Args` into library options, print, prompt and map outcomes to exit
//! codes (`commands`, `console`, `demo`), and `generate`. The work is done
//! by the workspace's library crates (see `docs/architecture.md`); tests,
//! benches and fuzz targets name those crates (`infera_sim::…`, `infera_sim_store::…`) directly.

pub mod app;
pub mod cli;
pub mod commands;
pub mod console;
pub mod demo;
pub mod generate;
pub mod logging;
