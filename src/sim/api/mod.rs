//! The simulated API server: Kubernetes' HTTP wire protocol over the `Store`.

pub mod defaults;
