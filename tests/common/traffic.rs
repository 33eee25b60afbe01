//! Requests through a simulated fleet's router during a roll (`--traffic`
//! as the library runs it), and the client's log held against the
//! simulator's record of every request.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use infera_audit::exit::Exit;
use infera_audit::traffic::{TrafficReport, TrafficRun};
use infera_cluster::Connection;
use infera_rollout::RolloutOutcome;
use infera_sim_core::requests::{Outcome, RequestRecord};
use serde_json::Value;

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

/// The requests `--traffic-log` wrote, one JSON object a line.
pub fn client_log(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// The truth outcome a client class must match (`None`: the router never
/// received it).
fn expected(record: &Value) -> Option<(Outcome, Option<u16>)> {
    let status = record["status"]
        .as_u64()
        .and_then(|s| u16::try_from(s).ok());
    match record["class"].as_str() {
        Some("ok") => Some((Outcome::Ok, None)),
        Some("error-event") => Some((Outcome::ErrorEvent, None)),
        Some("cut") => Some((Outcome::Cut, None)),
        Some("status") => Some((Outcome::Status, status)),
        Some("hung") => Some((Outcome::ClientGone, None)),
        _ => None,
    }
}

/// Every request the client logged matches the router's record of it, and
/// every request of this run the router recorded is in the client's log.
/// Returns the client's counts per class.
pub fn matches_truth(log: &[Value], truth: &[RequestRecord]) -> BTreeMap<String, u64> {
    let by_id: BTreeMap<&str, &RequestRecord> = truth.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut counts = BTreeMap::new();
    for r in log {
        let id = r["id"].as_str().unwrap_or_default();
        let want = expected(r);
        let got = by_id.get(id).map(|t| (t.outcome, t.code));
        assert_eq!(
            got,
            want,
            "request {id}: client {r}, router {:?}",
            by_id.get(id)
        );
        *counts
            .entry(r["class"].as_str().unwrap_or_default().to_string())
            .or_insert(0) += 1;
    }
    let logged: Vec<&str> = log.iter().filter_map(|r| r["id"].as_str()).collect();
    let run = logged
        .first()
        .and_then(|id| id.rsplit_once('-'))
        .map(|(p, _)| format!("{p}-"));
    for t in truth {
        let ours = run
            .as_ref()
            .is_some_and(|p| t.id.starts_with(p.as_str()) && !t.id.contains("-pre"));
        assert!(
            !ours || logged.contains(&t.id.as_str()),
            "the router served {t:?}, the client never logged it"
        );
    }
    counts
}
