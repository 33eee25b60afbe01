//! Helpers shared by the integration-test binaries (`cli`, `sim`, `lab`).
//! Each binary uses a different subset, hence the blanket `dead_code` allow.
#![allow(dead_code)]

pub mod case;
pub mod disruption;
pub mod lab;
pub mod process;
pub mod sim;
pub mod traffic;
