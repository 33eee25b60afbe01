//! Integration tests on the upstream lab (`lab/up`: real etcd,
//! kube-apiserver, kube-controller-manager and kube-scheduler v1.37.2).
//! Each test skips with its reason when `INFERA_LAB_BIN` is unset and fails
//! instead under `INFERA_LAB_REQUIRED=1` (CI). Labs are started one at a time
//! (see `common::lab::Lab::up`).

#[path = "../common/mod.rs"]
mod common;

mod audit_many;
mod conformance;
mod disruption;
mod disruption_rules;
mod drain;
mod faults;
mod gitops;
mod monitor;
mod operator;
mod partition;
mod policy;
mod rbac;
mod smoke;
