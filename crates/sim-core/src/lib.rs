//! The simulator's base: what the store, the scenario, the API server, the
//! controllers and the world all stand on, and which names none of them
//! (the crate graph enforces it: this crate depends on no other sim crate).
//!
//! [`kind`] the served kinds; [`clock`] the scaled scenario clock and the
//! cluster's skewed wall clock; [`faults`] the API fault configuration and
//! its injector; [`json`] wire-form accessors; [`net`] the minimal HTTP GET
//! to a pod's listener and the streaming forwarder to a pod's server; [`defaults`] API defaulting; [`partition`] the
//! clients' front door and its partitions; [`budget`] the
//! PodDisruptionBudget arithmetic the Eviction API and the disruption
//! controller share; [`requests`] the ground truth of the requests the
//! simulated router received.

pub mod budget;
pub mod clock;
pub mod defaults;
pub mod faults;
pub mod json;
pub mod kind;
pub mod net;
pub mod partition;
pub mod requests;
