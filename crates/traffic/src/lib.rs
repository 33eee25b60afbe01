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
pub use run::{
    Config, MAX_RATE, PREFLIGHT_IN_A_ROW, Settings, Traffic, TrafficError, readyz, start,
};

use infera_audit::Report;
use infera_audit::exit::Exit;
use infera_audit::traffic::{TrafficReport, TrafficRun};

/// Put `run` into `report` (joined with its steps) and give the exit the
/// run makes: a failed request the prober cannot be blamed for turns a
/// clean (0) or unproven (4) run into a gap (1); a stall, an abort or an
/// interruption keeps its own code.
pub fn attach(run: &TrafficRun, report: &mut Report, exit: Exit) -> Exit {
    let traffic = TrafficReport::build(run, report);
    let failed = traffic.has_failures();
    report.traffic = Some(traffic);
    match exit {
        Exit::Ok | Exit::Unproven if failed => Exit::Findings,
        other => other,
    }
}

/// Start sending on `config` with the client its route needs
/// ([`client_for`]): the one way in for every command.
pub async fn start_on(
    conn: &infera_cluster::Connection,
    config: Config,
) -> Result<Traffic, TrafficError> {
    let client = client_for(&config.route, conn).map_err(TrafficError::Client)?;
    start(client, config).await
}

/// The client requests go out on: the connection's (no retries: a 503 is
/// an answer to count, not a fault to retry) for the proxy path, a plain
/// one for a URL.
pub fn client_for(
    route: &Route,
    conn: &infera_cluster::Connection,
) -> Result<kube::Client, String> {
    match route {
        Route::Proxy { .. } => Ok(conn.probe_client.clone()),
        Route::Url { base } => {
            let uri: http::Uri = base
                .parse()
                .map_err(|_| format!("--traffic-url {base:?} is not a URL"))?;
            let mut config = kube::Config::new(uri);
            config.default_retry = false;
            infera_cluster::trace::client(config).map_err(|e| {
                format!(
                    "--traffic-url {base}: {}",
                    infera_cluster::redact::kube_error(&e)
                )
            })
        }
    }
}
