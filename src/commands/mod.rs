//! The commands whose work is one library call: flags → options, output to
//! stdout, outcome → exit code.

pub mod lint;
pub mod policy;
pub mod rbac;
pub mod render;
pub mod sim;
pub mod sim_attach;
