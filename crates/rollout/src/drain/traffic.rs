//! `infera drain --traffic`: a client per InferaDeployment fleet with a pod
//! on the node(s), started (its path checked) before the cordon and
//! stopped after the drain, each run put into its fleet's report.

use infera_audit::traffic::TrafficRun;
use infera_audit::{ManyReport, Selected, Target};
use infera_cluster::Connection;
use infera_traffic::{Route, Traffic};

use super::DrainError;
use crate::reporter::Reporter;

/// `--traffic` on a drain: each InferaDeployment fleet with a pod on the
/// node(s) gets a client on its router's Service, or the one fleet gets
/// the path `--traffic-service`/`--traffic-url` names.
#[derive(Debug, Clone)]
pub struct DrainTraffic {
    pub named: Option<Route>,
    pub settings: infera_traffic::Settings,
}

/// One fleet's client: the index of its fleet (and of its report).
pub struct Sending {
    fleet: usize,
    traffic: Traffic,
}

/// Where each fleet's requests go: its router's Service, or the named
/// path for the one fleet. A plain Deployment has no router: said, and
/// skipped.
async fn routes(
    conn: &Connection,
    traffic: &DrainTraffic,
    fleets: &[Selected],
    out: &mut dyn Reporter,
) -> Result<Vec<(usize, Route)>, DrainError> {
    if let Some(named) = &traffic.named {
        return match fleets {
            [_] => Ok(vec![(0, named.clone())]),
            _ => Err(DrainError::Usage(format!(
                "--traffic-service and --traffic-url name one serving path, and this drain moves {} fleets; drop them to send through each InferaDeployment's router",
                fleets.len()
            ))),
        };
    }
    let mut routes = Vec::new();
    for (i, fleet) in fleets.iter().enumerate() {
        match &fleet.target {
            Target::InferaDeployment(name) => {
                let route = infera_traffic::route::of_inferadeployment_in(
                    conn,
                    &fleet.namespace,
                    name,
                )
                .await
                .map_err(DrainError::Usage)?;
                routes.push((i, route));
            }
            Target::Deployment(name) => out.note(&format!(
                "traffic: not sent to deploy/{name} in {}: a plain Deployment has no router Service (name one with --traffic-service when it is the only fleet)",
                fleet.namespace
            )),
        }
    }
    Ok(routes)
}

/// Check each fleet's path and start sending, before anything changes.
/// [`DrainError::NotServing`] when a path does not answer (the clients
/// already started are stopped: nothing is left sending).
pub async fn start(
    conn: &Connection,
    traffic: Option<&DrainTraffic>,
    fleets: &[Selected],
    out: &mut dyn Reporter,
) -> Result<Vec<Sending>, DrainError> {
    let Some(traffic) = traffic else {
        return Ok(Vec::new());
    };
    let routes = routes(conn, traffic, fleets, out).await?;
    if routes.len() > 1 && traffic.settings.log.is_some() {
        return Err(DrainError::Usage(format!(
            "--traffic-log names one file, and this drain sends through {} routers; drop it (the report carries every request)",
            routes.len()
        )));
    }
    let mut sending = Vec::new();
    for (fleet, route) in routes {
        out.note(&format!(
            "traffic: checking {} ({} requests in a row must succeed)",
            route.describe(),
            infera_traffic::PREFLIGHT_IN_A_ROW
        ));
        let config = traffic.settings.on(route);
        match infera_traffic::start_on(conn, config).await {
            Ok(traffic) => sending.push(Sending { fleet, traffic }),
            Err(e) => {
                stop(sending).await;
                return Err(if e.not_serving() {
                    DrainError::NotServing(e.to_string())
                } else {
                    DrainError::Usage(e.to_string())
                });
            }
        }
    }
    if !sending.is_empty() {
        out.note(&format!(
            "traffic: sending {}/s through each of {} router(s)",
            traffic.settings.rate,
            sending.len()
        ));
    }
    Ok(sending)
}

async fn stop(sending: Vec<Sending>) -> Vec<(usize, TrafficRun)> {
    let mut runs = Vec::new();
    for s in sending {
        runs.push((s.fleet, s.traffic.stop().await));
    }
    runs
}

/// Stop every client and put each run into its fleet's report (the
/// report's exit then counts its failed requests).
pub async fn finish(sending: Vec<Sending>, mut report: Option<ManyReport>) -> Option<ManyReport> {
    for (fleet, run) in stop(sending).await {
        if let Some(r) = report.as_mut().and_then(|m| m.reports.get_mut(fleet)) {
            let exit = r.exit();
            infera_traffic::attach(&run, r, exit);
        }
    }
    report
}
