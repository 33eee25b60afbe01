//! Integration tests that need no cluster: the linter's command line, the
//! corpus, generated files, hostile input, and the usage/connection errors
//! of `rollout` and `audit` (against unreachable or fake servers on loopback).
//!
//! One test binary per world (`cli`, `sim`, `lab`) so linking does not
//! dominate `cargo test`; each file below is one module.

#[path = "../common/mod.rs"]
mod common;

mod audit_usage;
mod charts;
mod corpus;
mod ecosystem;
mod ecosystem_ci;
mod ecosystem_next;
mod fixes;
mod fn_length;
mod generated;
mod import_cycles;
mod layout;
mod lint_cli;
mod no_panic;
mod operator_flag;
mod policy;
mod rollout_usage;
mod unread;
mod worker_rule;
