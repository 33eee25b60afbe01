//! Requests through a simulated fleet's router during a roll (`--traffic`
//! as the library runs it).

use std::time::Duration;

use infera_audit::exit::Exit;
use infera_audit::traffic::{TrafficReport, TrafficRun};
use infera_cluster::Connection;
use infera_rollout::RolloutOutcome;

/// Start requests through the router of InferaDeployment `name` at `rate`
/// per second (wall), 32 at a time, a 5 s deadline each.
pub async fn start(conn: &Connection, name: &str, rate: f64) -> infera_traffic::Traffic {
    let route = infera_traffic::route::of_inferadeployment(conn, name)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let config = infera_traffic::Config {
        route,
        rate,
        concurrency: 32,
        deadline: Duration::from_secs(5),
        model: None,
        log: None,
    };
    infera_traffic::start(conn.probe_client.clone(), config)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Stop `traffic` and put its run into the outcome's report: the run, the
/// exit it makes and the report's request evidence.
pub async fn attach(
    traffic: infera_traffic::Traffic,
    outcome: &mut RolloutOutcome,
) -> (TrafficRun, Exit, TrafficReport) {
    let run = traffic.stop().await;
    let report = outcome
        .report
        .as_mut()
        .unwrap_or_else(|| panic!("no report"));
    let exit = infera_traffic::attach(&run, report, outcome.exit);
    let evidence = report
        .traffic
        .clone()
        .unwrap_or_else(|| panic!("no traffic"));
    (run, exit, evidence)
}
