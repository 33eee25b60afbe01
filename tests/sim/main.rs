//! Integration tests against the embedded simulator: a real HTTP API server
//! on loopback, driven by kube-rs, kubectl and the `infera` binary.

#[path = "../common/mod.rs"]
mod common;

mod audit_many;
mod clock_skew;
mod coherence;
mod credentials;
mod disruption;
mod drain;
mod drain_stateful;
mod kubectl_plugin;
mod monitor;
mod namespace_typo;
mod operator_generation;
mod partition;
mod report_html;
mod rollout;
mod rollout_gitops;
mod rollout_history;
mod rollout_interrupt;
mod rollout_onset;
mod set_selector;
mod sim_attach;
mod sim_bounds;
mod sim_controllers;
mod sim_kube;
mod sim_kubectl;
mod traffic;
mod traffic_proof;
