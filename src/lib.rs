//! infera: make rolling an LLM-serving worker on Kubernetes safe, and prove it was.
//!
//! Data flows one way: `manifest` → `operator` (the one model of what the
//! infera operator renders) → `lint`; `cluster` watch → `audit`; `rollout`
//! uses lint (preflight), cluster and audit; `sim` uses the operator model, so
//! what lint predicts and what the simulator does come from one function.
//! `console` is the command line's edge of `rollout`, `audit` and `demo`
//! (flags → library options, printing, prompts, output files, exit codes):
//! those three never import `cli`.

pub mod audit;
pub mod cli;
pub mod cluster;
pub mod console;
pub mod demo;
pub mod exit;
pub mod generate;
pub mod lint;
pub mod manifest;
pub mod operator;
pub mod rolling;
pub mod rollout;
pub mod scheduling;
pub mod sim;
