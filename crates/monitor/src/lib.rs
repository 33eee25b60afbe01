//! `infera monitor`: the audit as a long-running service.
//!
//! One list+watch per resource (pods, InferaDeployments, Deployments,
//! StatefulSets, LeaderWorkerSets) keeps [`state::State`]: every InferaDeployment and every
//! catalogued serving workload in scope ([`workloads`]), each with the
//! audit's own [`infera_audit::Auditor`] (per-pod histories, exact minima,
//! time below the floor, bounds where blind). [`metrics`] writes it as
//! OpenMetrics text for `/metrics`; [`rules`] gives the alerts over those
//! metrics; [`manifests`] the objects that run it in a cluster; [`serve`]
//! runs it all until shutdown.

pub mod manifests;
pub mod metrics;
pub mod probe;
pub mod rules;
pub mod serve;
pub mod state;
pub mod workloads;

pub use rules::{RuleOptions, prometheus_rule, rule_groups};
pub use serve::{CONTENT_TYPE, MonitorError, Options, run};

/// The port `infera monitor` listens on unless told otherwise: outside the
/// Prometheus exporters' 9100–9999 range (allocated in full), off the ports
/// of Kubernetes' own components and the Prometheus stack, below the
/// NodePort range (docs/monitor.md).
pub const DEFAULT_PORT: u16 = 8491;
