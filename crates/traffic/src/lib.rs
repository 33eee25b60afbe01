//! `--traffic`: infera's synthetic client. OpenAI-compatible requests
//! (streaming chat completions and plain completions, alternating) sent at
//! a steady, capped rate through the serving path while a roll, drain or
//! audit runs, each read to its end and classed; a control probe beside
//! them tells the prober's own faults from the fleet's.
//!
//! * [`route`] — where the requests go (the router's Service through the
//!   API server's proxy, or a URL).
//! * `request` — one request, sent and classed.
//! * `sse` — the stream parser.
//! * [`run`] — the preflight (the path must answer in a row), the rate
//!   loop, the control probe, and [`run::Traffic::stop`].
//!
//! The evidence types, the tally and the verdict are `infera_audit::traffic`:
//! they join the requests with the steps of the audit report. The wire
//! contract is `docs/traffic.md`.

mod request;
pub mod route;
pub mod run;
mod sse;

pub use request::{Kind, MAX_TOKENS, first_model, send};
pub use route::{Route, RouteError};
pub use run::{Config, MAX_RATE, PREFLIGHT_IN_A_ROW, Traffic, TrafficError, start};
