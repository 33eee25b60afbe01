//! The runner: check that the serving path answers, then send requests at
//! a steady rate beside a control probe until told to stop.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::Client;
use tokio::sync::watch;
use tokio::task::JoinSet;

use infera_audit::traffic::{Class, RequestRecord, TrafficRun};

use super::request::{self, Kind};
use super::route::Route;

/// The hard cap of `--traffic-rate`, requests per second.
pub const MAX_RATE: f64 = 50.0;
/// Requests in a row the path must answer before a roll starts.
pub const PREFLIGHT_IN_A_ROW: u32 = 5;
/// How often the control probe asks the API server.
const CONTROL_EVERY: Duration = Duration::from_secs(1);

/// How to send, wherever to: the flags beside the path.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Requests per second (at most [`MAX_RATE`]).
    pub rate: f64,
    /// At most this many in flight.
    pub concurrency: usize,
    /// Each request's deadline.
    pub deadline: Duration,
    /// `--traffic-model`; `None`: the first of `/v1/models`.
    pub model: Option<String>,
    /// `--traffic-log FILE.jsonl`.
    pub log: Option<PathBuf>,
}

impl Settings {
    /// These settings on `route`.
    pub fn on(&self, route: Route) -> Config {
        Config {
            route,
            rate: self.rate,
            concurrency: self.concurrency,
            deadline: self.deadline,
            model: self.model.clone(),
            log: self.log.clone(),
        }
    }
}

/// How to send.
#[derive(Debug, Clone)]
pub struct Config {
    pub route: Route,
    /// Requests per second (at most [`MAX_RATE`]).
    pub rate: f64,
    /// At most this many in flight.
    pub concurrency: usize,
    /// Each request's deadline.
    pub deadline: Duration,
    /// `--traffic-model`; `None`: the first of `/v1/models`.
    pub model: Option<String>,
    /// `--traffic-log FILE.jsonl`.
    pub log: Option<PathBuf>,
}

/// Why traffic could not start.
#[derive(Debug, thiserror::Error)]
pub enum TrafficError {
    #[error(
        "--traffic-rate {0} is out of range: it must be above 0 and at most {MAX_RATE} requests per second"
    )]
    Rate(f64),
    #[error("--traffic-concurrency must be at least 1")]
    Concurrency,
    #[error("cannot list the models on {path}: {reason}")]
    Models { path: String, reason: String },
    #[error(
        "the serving path ({path}) did not answer {PREFLIGHT_IN_A_ROW} requests in a row (last: {last}); not starting: fix the path or name it with --traffic-service / --traffic-url"
    )]
    NotServing { path: String, last: String },
    /// The client for `--traffic-url` could not be made.
    #[error("{0}")]
    Client(String),
    #[error("cannot write --traffic-log {path}: {source}")]
    Log {
        path: String,
        source: std::io::Error,
    },
}

impl TrafficError {
    /// The path was checked and does not serve (exit 3: nothing started),
    /// rather than the flags being wrong (exit 2).
    pub fn not_serving(&self) -> bool {
        matches!(
            self,
            TrafficError::NotServing { .. } | TrafficError::Models { .. }
        )
    }
}

/// The rate and concurrency are within their bounds.
fn check(rate: f64, concurrency: usize) -> Result<(), TrafficError> {
    if !(rate > 0.0 && rate <= MAX_RATE) {
        return Err(TrafficError::Rate(rate));
    }
    if concurrency == 0 {
        return Err(TrafficError::Concurrency);
    }
    Ok(())
}

impl Settings {
    /// The rate and concurrency are within their bounds.
    pub fn check(&self) -> Result<(), TrafficError> {
        check(self.rate, self.concurrency)
    }
}

impl Config {
    /// The rate and concurrency are within their bounds.
    pub fn check(&self) -> Result<(), TrafficError> {
        check(self.rate, self.concurrency)
    }
}

/// Traffic being sent; [`Traffic::stop`] ends it and hands over the run.
pub struct Traffic {
    stop: watch::Sender<bool>,
    sender: tokio::task::JoinHandle<(Vec<RequestRecord>, u64)>,
    control: Option<tokio::task::JoinHandle<Vec<(Instant, Instant)>>>,
    path: String,
    rate: f64,
}

/// A short random run id (`X-Request-Id: infera-<run>-<seq>`).
fn run_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{:08x}", nanos ^ std::process::id().rotate_left(16))
}

/// Check the path (the model, then [`PREFLIGHT_IN_A_ROW`] successes in a
/// row), then start sending. `client` carries the credentials of the proxy
/// path (or none, for a URL); the control probe runs on the proxy path.
pub async fn start(client: Client, config: Config) -> Result<Traffic, TrafficError> {
    config.check()?;
    let path = config.route.describe();
    let model = match &config.model {
        Some(m) => m.clone(),
        None => request::first_model(&client, &config.route, config.deadline)
            .await
            .map_err(|reason| TrafficError::Models {
                path: path.clone(),
                reason,
            })?,
    };
    let run = run_id();
    preflight(&client, &config, &model, &run).await?;
    let log = open_log(config.log.as_ref())?;
    let (stop, stopped) = watch::channel(false);
    let control = matches!(config.route, Route::Proxy { .. })
        .then(|| tokio::spawn(control_probe(client.clone(), stopped.clone())));
    let rate = config.rate;
    let sender = tokio::spawn(send_loop(client, config, model, run, log, stopped));
    Ok(Traffic {
        stop,
        sender,
        control,
        path,
        rate,
    })
}

async fn preflight(
    client: &Client,
    config: &Config,
    model: &str,
    run: &str,
) -> Result<(), TrafficError> {
    let mut in_a_row = 0;
    let mut last = String::from("nothing sent");
    let spacing = Duration::from_secs_f64(1.0 / config.rate);
    for seq in 0..PREFLIGHT_IN_A_ROW * 3 {
        let kind = Kind::nth(u64::from(seq));
        let id = format!("infera-{run}-pre{seq}");
        let r = request::send(client, &config.route, kind, model, id, config.deadline).await;
        if r.class == Class::Ok {
            in_a_row += 1;
            if in_a_row == PREFLIGHT_IN_A_ROW {
                return Ok(());
            }
        } else {
            in_a_row = 0;
            last = match &r.detail {
                Some(d) => format!("{}: {d}", r.label()),
                None => r.label(),
            };
        }
        tokio::time::sleep(spacing).await;
    }
    Err(TrafficError::NotServing {
        path: config.route.describe(),
        last,
    })
}

type Log = Option<Arc<Mutex<std::io::BufWriter<std::fs::File>>>>;

fn open_log(path: Option<&PathBuf>) -> Result<Log, TrafficError> {
    let Some(path) = path else { return Ok(None) };
    let file = std::fs::File::create(path).map_err(|source| TrafficError::Log {
        path: path.display().to_string(),
        source,
    })?;
    Ok(Some(Arc::new(Mutex::new(std::io::BufWriter::new(file)))))
}

fn log_line(log: &Log, record: &RequestRecord) {
    let Some(log) = log else { return };
    let mut out = log
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Ok(line) = serde_json::to_string(record) {
        let _ = writeln!(out, "{line}");
    }
}

/// Send at the rate until stopped, then wait for those in flight (each
/// bounded by its deadline).
async fn send_loop(
    client: Client,
    config: Config,
    model: String,
    run: String,
    log: Log,
    mut stopped: watch::Receiver<bool>,
) -> (Vec<RequestRecord>, u64) {
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / config.rate));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut in_flight: JoinSet<RequestRecord> = JoinSet::new();
    let mut records = Vec::new();
    let mut not_sent = 0;
    let mut seq: u64 = 0;
    let route = Arc::new(config.route.clone());
    loop {
        tokio::select! {
            _ = stopped.changed() => break,
            Some(done) = in_flight.join_next(), if !in_flight.is_empty() => {
                if let Ok(r) = done { log_line(&log, &r); records.push(r); }
            }
            _ = tick.tick() => {
                if in_flight.len() >= config.concurrency { not_sent += 1; continue; }
                let kind = Kind::nth(seq);
                let id = format!("infera-{run}-{seq}");
                seq += 1;
                let (client, route, model) = (client.clone(), route.clone(), model.clone());
                let deadline = config.deadline;
                in_flight.spawn(async move { request::send(&client, &route, kind, &model, id, deadline).await });
            }
        }
    }
    while let Some(done) = in_flight.join_next().await {
        if let Ok(r) = done {
            log_line(&log, &r);
            records.push(r);
        }
    }
    if let Some(log) = &log {
        let _ = log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .flush();
    }
    records.sort_by_key(|r| r.start);
    (records, not_sent)
}

/// `GET /readyz` on the API server once a second: the intervals in which it
/// did not answer 200 (infera was blind).
async fn control_probe(
    client: Client,
    mut stopped: watch::Receiver<bool>,
) -> Vec<(Instant, Instant)> {
    let mut blind: Vec<(Instant, Instant)> = Vec::new();
    let mut since: Option<Instant> = None;
    let mut tick = tokio::time::interval(CONTROL_EVERY);
    loop {
        tokio::select! {
            _ = stopped.changed() => break,
            _ = tick.tick() => {}
        }
        let at = Instant::now();
        let ok = readyz(&client).await;
        match (ok, since) {
            (false, None) => since = Some(at),
            (true, Some(from)) => {
                blind.push((from, at));
                since = None;
            }
            _ => {}
        }
    }
    if let Some(from) = since {
        blind.push((from, Instant::now()));
    }
    blind
}

/// `GET /readyz` on the API server answered 200 within two control
/// periods: the control request (also the monitor's, beside each probe).
pub async fn readyz(client: &Client) -> bool {
    let Ok(request) = http::Request::get("/readyz").body(kube::client::Body::empty()) else {
        return false;
    };
    let answer = tokio::time::timeout(CONTROL_EVERY * 2, client.send(request)).await;
    matches!(answer, Ok(Ok(r)) if r.status() == http::StatusCode::OK)
}

impl Traffic {
    /// Stop sending, wait for the requests in flight, and hand over the run
    /// (failures during a blind interval already unattributed).
    pub async fn stop(self) -> TrafficRun {
        let _ = self.stop.send(true);
        let (records, not_sent) = self.sender.await.unwrap_or_default();
        let blind = match self.control {
            Some(c) => c.await.unwrap_or_default(),
            None => Vec::new(),
        };
        let mut run = TrafficRun {
            path: self.path,
            rate: self.rate,
            records,
            not_sent,
            blind,
        };
        run.attribute(CONTROL_EVERY);
        run
    }
}
