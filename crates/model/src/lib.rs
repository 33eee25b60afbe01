//! The infera model: manifests with spans, the `InferaDeployment` types, the
//! operator's render, rolling arithmetic, scheduling predicates, label
//! selectors and the worker facts. No `kube`, `tokio` or `clap`: everything above builds on it.

pub mod accelerator;
pub mod api;
pub mod catalogue;
pub mod dra;
pub mod duration;
pub mod generation;
pub mod kv;
pub mod lws;
pub mod manifest;
pub mod operator;
pub mod pdb;
pub mod pod;
pub mod rolling;
pub mod scheduling;
pub mod selector;
pub mod volume;
pub mod worker;
