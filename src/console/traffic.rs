//! `--traffic` at the command line's edge: the route from the flags and the
//! target, the client started before the work and stopped after it, the
//! run put into the report, and the tally printed under the pod table.

use crate::cli::TrafficArgs;
use infera_audit::Report;
use infera_audit::exit::Exit;
use infera_cluster::Connection;
use infera_traffic::{Route, Settings, Traffic};

/// The path `--traffic-url` or `--traffic-service` names, if either does.
pub fn named_route(args: &TrafficArgs, conn: &Connection) -> Option<Result<Route, String>> {
    if let Some(url) = &args.traffic_url {
        return Some(Route::url(url).map_err(|e| e.to_string()));
    }
    let service = args.traffic_service.as_ref()?;
    Some(Route::service(&conn.namespace, service).map_err(|e| e.to_string()))
}

/// The route of `--traffic-url`, `--traffic-service`, or the router
/// Service of `target` (an `idep/NAME`).
async fn route(args: &TrafficArgs, conn: &Connection, target: &str) -> Result<Route, String> {
    if let Some(named) = named_route(args, conn) {
        return named;
    }
    let unknown = || {
        infera_traffic::RouteError::Unknown {
            target: target.into(),
        }
        .to_string()
    };
    let name = target
        .strip_prefix("idep/")
        .or_else(|| target.strip_prefix("inferadeployment/"))
        .ok_or_else(unknown)?;
    infera_traffic::route::of_inferadeployment(conn, name).await
}

/// How to send, from the flags.
pub fn settings(args: &TrafficArgs) -> Settings {
    Settings {
        rate: args.traffic_rate,
        concurrency: args.traffic_concurrency,
        deadline: args.traffic_deadline,
        model: args.traffic_model.clone(),
        log: args.traffic_log.clone(),
    }
}

/// `error: …` on stderr; `exit`.
fn said(exit: Exit, e: impl std::fmt::Display) -> Exit {
    eprintln!("error: {e}");
    exit
}

/// Start sending when `--traffic` is given: `Ok(None)` without it. An
/// error is said on stderr with its exit: 2 for the flags or the target,
/// 3 when the serving path does not answer (nothing was started).
pub async fn start(
    args: &TrafficArgs,
    conn: &Connection,
    target: &str,
) -> Result<Option<Traffic>, Exit> {
    if !args.traffic {
        return Ok(None);
    }
    let route = route(args, conn, target)
        .await
        .map_err(|e| said(Exit::Usage, e))?;
    let config = settings(args).on(route);
    config.check().map_err(|e| said(Exit::Usage, e))?;
    eprintln!(
        "traffic: checking {} ({} requests in a row must succeed)…",
        config.route.describe(),
        infera_traffic::PREFLIGHT_IN_A_ROW
    );
    let traffic = infera_traffic::start_on(conn, config).await.map_err(|e| {
        let exit = if e.not_serving() {
            Exit::Stalled
        } else {
            Exit::Usage
        };
        said(exit, e)
    })?;
    eprintln!("traffic: sending {}/s", args.traffic_rate);
    Ok(Some(traffic))
}

/// Stop sending and put the run into `report`; the exit it makes.
pub async fn finish(traffic: Option<Traffic>, report: Option<&mut Report>, exit: Exit) -> Exit {
    let Some(traffic) = traffic else {
        return exit;
    };
    let run = traffic.stop().await;
    match report {
        Some(report) => infera_traffic::attach(&run, report, exit),
        None => exit,
    }
}

/// The request table and sentence, under the pod table.
pub fn print(report: &Report) {
    let Some(traffic) = &report.traffic else {
        return;
    };
    println!("requests through {}:", traffic.path);
    println!("{}", traffic.table());
    println!("requests: {}", traffic.sentence());
}
