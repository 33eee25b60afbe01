//! The always-on request probe: every `--probe-interval`, one small
//! OpenAI request through the serving path of each InferaDeployment in
//! scope that has a router (`componentType: server`), sent and classed by
//! `infera-traffic` (`docs/traffic.md`), beside a control request (`GET
//! /readyz` on the API server: the same path without the serving backend).
//!
//! A failure while the control request fails is the prober's, not the
//! fleet's: it is counted as unattributed, never in `infera_requests_total`.
//! At most one probe per InferaDeployment is in flight; each is bounded by
//! [`DEADLINE`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use tokio::task::JoinSet;

use infera_audit::traffic::{Class, RequestRecord};
use infera_traffic::{Kind, Route};

/// The shortest `--probe-interval`: the probe measures, it is not load.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// The default `--probe-interval`.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);
/// Each probe request's deadline (past it: `hung`).
pub const DEADLINE: Duration = Duration::from_secs(30);
/// The TTFT histogram's buckets, in seconds.
pub const TTFT_BUCKETS: [f64; 10] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0];

/// The InferaDeployment a probe goes to: (namespace, name).
pub type Target = (String, String);

type Labels = Vec<(&'static str, String)>;

/// The probe's metric families, shared by the probe loop (which counts)
/// and every scrape (which registers clones: the families are `Arc`s).
#[derive(Clone)]
pub struct Metrics {
    requests: Family<Labels, Counter>,
    unattributed: Family<Labels, Counter>,
    ttft: Family<Labels, Histogram>,
    blind: Counter<u64, AtomicU64>,
    /// The targets counted so far, so a deleted InferaDeployment's series go.
    counted: Arc<Mutex<BTreeSet<Target>>>,
}

fn new_histogram() -> Histogram {
    Histogram::new(TTFT_BUCKETS)
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            requests: Family::default(),
            unattributed: Family::default(),
            ttft: Family::new_with_constructor(new_histogram),
            blind: Counter::default(),
            counted: Arc::default(),
        }
    }
}

fn target_labels((namespace, name): &Target) -> Labels {
    vec![
        ("namespace", namespace.clone()),
        ("inferadeployment", name.clone()),
    ]
}

fn class_labels(target: &Target, class: Class) -> Labels {
    let mut l = target_labels(target);
    l.push(("class", class.as_str().to_string()));
    l
}

const CLASSES: [Class; 6] = [
    Class::Ok,
    Class::Refused,
    Class::Status,
    Class::ErrorEvent,
    Class::Cut,
    Class::Hung,
];

impl Metrics {
    /// Into a scrape's registry.
    pub fn register(&self, r: &mut Registry) {
        r.register(
            "infera_requests",
            "Probe requests through the serving path of the InferaDeployment, by how they ended (failures while the control probe failed are not counted here: infera_requests_unattributed)",
            self.requests.clone(),
        );
        r.register(
            "infera_requests_unattributed",
            "Probe requests that failed while the control probe (GET /readyz on the API server) failed too: the prober's fault, not the fleet's",
            self.unattributed.clone(),
        );
        r.register_with_unit(
            "infera_request_ttft",
            "Time to the first token of the probe's streaming requests",
            Unit::Seconds,
            self.ttft.clone(),
        );
        r.register(
            "infera_probe_blind",
            "Control probes (GET /readyz on the API server, beside each probe request) that failed: infera could not tell the path's faults from the fleet's",
            self.blind.clone(),
        );
    }

    /// One request's outcome; `blind`: the control probe failed around it.
    pub fn record(&self, target: &Target, r: &RequestRecord, blind: bool) {
        self.first_count(target);
        if r.class != Class::Ok && blind {
            self.unattributed
                .get_or_create(&class_labels(target, r.class))
                .inc();
            return;
        }
        self.requests
            .get_or_create(&class_labels(target, r.class))
            .inc();
        if let (true, Some(ms)) = (r.stream, r.ttft_ms) {
            #[allow(clippy::cast_precision_loss)]
            let seconds = ms as f64 / 1000.0;
            self.ttft
                .get_or_create(&target_labels(target))
                .observe(seconds);
        }
    }

    /// A control probe failed.
    pub fn blind(&self) {
        self.blind.inc();
    }

    /// A target's first outcome: its `ok` series exists from then on (at
    /// 0), so a rate over it is defined before the first success.
    fn first_count(&self, target: &Target) {
        let mut counted = self.counted.lock().unwrap_or_else(PoisonError::into_inner);
        if counted.insert(target.clone()) {
            let _ = self
                .requests
                .get_or_create(&class_labels(target, Class::Ok));
        }
    }

    /// Forget the series of targets no longer in scope.
    pub fn retain(&self, keep: impl Fn(&Target) -> bool) {
        let mut counted = self.counted.lock().unwrap_or_else(PoisonError::into_inner);
        let gone: Vec<Target> = counted.iter().filter(|t| !keep(t)).cloned().collect();
        for t in gone {
            for class in CLASSES {
                self.requests.remove(&class_labels(&t, class));
                self.unattributed.remove(&class_labels(&t, class));
            }
            self.ttft.remove(&target_labels(&t));
            counted.remove(&t);
        }
    }
}

/// The model an InferaDeployment's workers serve, from their `--model` or
/// `--served-model-name` argument: what a probe asks for while
/// `/v1/models` does not answer. `default` when none is named.
pub fn model_of(idep: &serde_json::Value) -> String {
    use serde_json::Value;
    let services = idep.pointer("/spec/services").and_then(Value::as_object);
    let args: Vec<&str> = services
        .into_iter()
        .flat_map(|s| s.values())
        .filter_map(|s| s.get("args").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let value_of = |flag: &str| {
        args.iter()
            .zip(args.iter().skip(1))
            .find(|(f, _)| **f == flag)
            .map(|(_, v)| (*v).to_string())
    };
    value_of("--served-model-name")
        .or_else(|| value_of("--model"))
        .unwrap_or_else(|| "default".to_string())
}

/// What the probe loop keeps per target between rounds.
#[derive(Default)]
struct Probed {
    /// The model `/v1/models` named (asked again after a failure).
    model: Option<String>,
    /// Requests sent: the kinds alternate, a stream first.
    seq: u64,
}

/// One probe: the model (from `/v1/models`, else `fallback`), one request,
/// the control request beside it (and once more after a failure).
async fn probe_once(
    client: kube::Client,
    route: Route,
    model: Option<String>,
    fallback: String,
    (id, kind): (String, Kind),
) -> (Option<String>, RequestRecord, u32) {
    let model = match model {
        Some(m) => Some(m),
        None => infera_traffic::first_model(&client, &route, DEADLINE)
            .await
            .ok(),
    };
    let name = model.clone().unwrap_or(fallback);
    let (record, before) = tokio::join!(
        infera_traffic::send(&client, &route, kind, &name, id, DEADLINE),
        infera_traffic::readyz(&client),
    );
    let after = record.class == Class::Ok || infera_traffic::readyz(&client).await;
    let model = if record.class != Class::Ok {
        None
    } else {
        model
    };
    (model, record, u32::from(!before) + u32::from(!after))
}

/// The probe loop's state: targets' models and sequence numbers, the
/// probes in flight.
pub struct Prober {
    client: kube::Client,
    metrics: Metrics,
    probed: BTreeMap<Target, Probed>,
    in_flight: JoinSet<(Target, Option<String>, RequestRecord, u32)>,
    /// The targets with a probe in flight, by task.
    busy: BTreeMap<tokio::task::Id, Target>,
    run: String,
}

impl Prober {
    pub fn new(client: kube::Client, metrics: Metrics) -> Prober {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        Prober {
            client,
            metrics,
            probed: BTreeMap::new(),
            in_flight: JoinSet::new(),
            busy: BTreeMap::new(),
            run: format!("{nanos:08x}"),
        }
    }

    /// A round: a probe to each target not already in flight.
    pub fn round(&mut self, targets: &BTreeMap<Target, (Route, String)>) {
        self.metrics.retain(|t| targets.contains_key(t));
        self.probed.retain(|t, _| targets.contains_key(t));
        for (target, (route, fallback)) in targets {
            if self.busy.values().any(|t| t == target) {
                continue;
            }
            let p = self.probed.entry(target.clone()).or_default();
            let kind = Kind::nth(p.seq);
            let id = format!("infera-monitor-{}-{}-{}", self.run, target.1, p.seq);
            p.seq += 1;
            let (client, route, model) = (self.client.clone(), route.clone(), p.model.clone());
            let (owner, fallback) = (target.clone(), fallback.clone());
            let task = self.in_flight.spawn(async move {
                let (model, record, blind) =
                    probe_once(client, route, model, fallback, (id, kind)).await;
                (owner, model, record, blind)
            });
            self.busy.insert(task.id(), target.clone());
        }
    }

    /// Wait for the next probe to end and count it (pending forever when
    /// none is in flight).
    pub async fn next(&mut self) {
        let Some(done) = self.in_flight.join_next_with_id().await else {
            return std::future::pending().await;
        };
        let (target, model, record, blind) = match done {
            Ok((task, done)) => {
                self.busy.remove(&task);
                done
            }
            Err(e) => {
                // A probe that panicked: its target is free for the next round.
                self.busy.remove(&e.id());
                return;
            }
        };
        for _ in 0..blind {
            self.metrics.blind();
        }
        self.metrics.record(&target, &record, blind > 0);
        if let Some(p) = self.probed.get_mut(&target) {
            p.model = model;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    fn record(class: Class, stream: bool, ttft_ms: Option<u64>) -> RequestRecord {
        RequestRecord {
            id: "x".into(),
            path: "/v1/chat/completions".into(),
            stream,
            started_ms: 0,
            ended_ms: 10,
            ttft_ms,
            class,
            status: Some(200),
            detail: None,
            served_by: Vec::new(),
            unattributed: false,
            mixed_pair: false,
            start: None,
        }
    }

    fn text(m: &Metrics) -> String {
        let mut r = Registry::default();
        m.register(&mut r);
        let mut out = String::new();
        encode(&mut out, &r).unwrap_or_else(|e| panic!("{e}"));
        out
    }

    #[test]
    fn outcomes_are_counted_by_class_and_blind_failures_apart() {
        let m = Metrics::default();
        let t: Target = ("llm".into(), "llama".into());
        m.record(&t, &record(Class::Ok, true, Some(250)), false);
        m.record(&t, &record(Class::Refused, false, None), false);
        m.record(&t, &record(Class::Cut, true, None), true);
        m.record(&t, &record(Class::Ok, false, None), true);
        m.blind();
        let out = text(&m);
        let l = "namespace=\"llm\",inferadeployment=\"llama\"";
        for line in [
            format!("infera_requests_total{{{l},class=\"ok\"}} 2"),
            format!("infera_requests_total{{{l},class=\"refused\"}} 1"),
            format!("infera_requests_unattributed_total{{{l},class=\"cut\"}} 1"),
            format!("infera_request_ttft_seconds_count{{{l}}} 1"),
            format!("infera_request_ttft_seconds_bucket{{le=\"0.25\",{l}}} 1"),
            "infera_probe_blind_total 1".to_string(),
        ] {
            assert!(out.contains(&line), "{line} missing:\n{out}");
        }
        let cut = format!("infera_requests_total{{{l},class=\"cut\"}}");
        assert!(
            !out.contains(&cut),
            "an unattributed failure was counted:\n{out}"
        );
    }

    #[test]
    fn the_model_is_read_from_the_workers_args() {
        let model = |args: &[&str]| {
            model_of(&serde_json::json!({"spec": {"services": {
                "router": {"componentType": "server"},
                "worker": {"componentType": "worker", "args": args}}}}))
        };
        let cases: [(&[&str], &str); 3] = [
            (
                &["--model", "meta-llama/L", "--drain-timeout", "0"],
                "meta-llama/L",
            ),
            (&["--model", "a", "--served-model-name", "b"], "b"),
            (&[], "default"),
        ];
        for (args, want) in cases {
            assert_eq!(model(args), want, "{args:?}");
        }
    }

    #[test]
    fn a_target_gone_takes_its_series_with_it() {
        let m = Metrics::default();
        let t: Target = ("llm".into(), "llama".into());
        m.record(&t, &record(Class::Hung, true, None), false);
        assert!(text(&m).contains("class=\"ok\"} 0"), "{}", text(&m));
        m.retain(|_| false);
        let out = text(&m);
        assert!(!out.contains("llama"), "{out}");
    }
}
