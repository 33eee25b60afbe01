//! core/v1 Events recorded by the simulator's own components (Deployment and
//! ReplicaSet controllers, scheduler), as upstream's event recorder writes
//! them (k8s.io/client-go tools/record/event.go, events_cache.go): a repeat of
//! the same source, object, type, reason and message bumps `count` and
//! `lastTimestamp` of the one Event instead of creating another.

use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::{Value, json};

use infera_sim_core::clock::now_rfc3339;
use infera_sim_core::kind::Kind;

use crate::Store;

/// One event to record: who reports it, about what, and what happened.
pub struct Event<'a> {
    /// `source.component` (`deployment-controller`, `default-scheduler`…).
    pub component: &'a str,
    /// The object the event is about (its apiVersion/kind/metadata are read).
    pub involved: &'a Value,
    /// `Normal` or `Warning`.
    pub type_: &'a str,
    pub reason: &'a str,
    pub message: String,
    /// `Some(action)` for a component that records through events.k8s.io/v1
    /// (the scheduler: action `Binding`). Its core/v1 view has an empty
    /// `source`, `reportingComponent` set and `eventTime` instead of
    /// first/lastTimestamp, so `kubectl get events` shows no SOURCE for it.
    pub action: Option<&'a str>,
}

fn at<'v>(v: &'v Value, p: &str) -> &'v str {
    v.pointer(p).and_then(Value::as_str).unwrap_or_default()
}

/// Record `e` in `store` (create, or bump the count of the same event).
pub fn record(store: &Store, e: &Event<'_>) {
    let ns = at(e.involved, "/metadata/namespace");
    let ns = if ns.is_empty() { "default" } else { ns };
    let name = at(e.involved, "/metadata/name");
    let uid = at(e.involved, "/metadata/uid");
    let mut h = DefaultHasher::new();
    (e.component, uid, e.type_, e.reason, &e.message).hash(&mut h);
    let event_name = format!("{name}.{:016x}", h.finish());
    let now = now_rfc3339();
    let bumped = store.mutate_shared(Kind::Event, Some(ns), &event_name, |ev| {
        let count = ev.get("count").and_then(Value::as_i64).unwrap_or(1) + 1;
        ev["count"] = Value::from(count);
        ev["lastTimestamp"] = Value::from(now.clone());
    });
    if bumped.is_ok() {
        return;
    }
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": event_name, "namespace": ns},
        "involvedObject": {
            "apiVersion": at(e.involved, "/apiVersion"),
            "kind": at(e.involved, "/kind"),
            "namespace": at(e.involved, "/metadata/namespace"),
            "name": name,
            "uid": uid,
            "resourceVersion": at(e.involved, "/metadata/resourceVersion"),
        },
        "reason": e.reason,
        "message": e.message,
        "type": e.type_,
        "source": {"component": e.component},
        "reportingComponent": e.component,
        "reportingInstance": "",
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "eventTime": null,
    });
    let mut event = event;
    if let Some(action) = e.action {
        event["source"] = json!({});
        event["action"] = json!(action);
        event["eventTime"] = json!(micro_time(&now));
        event["firstTimestamp"] = Value::Null;
        event["lastTimestamp"] = Value::Null;
        event["reportingInstance"] = json!(format!("{}-infera-sim", e.component));
    }
    let _ = store.create_shared(Kind::Event, event);
}

/// An RFC 3339 timestamp with microseconds (metav1.MicroTime).
fn micro_time(rfc3339: &str) -> String {
    match rfc3339.strip_suffix('Z') {
        Some(base) if !base.contains('.') => format!("{base}.000000Z"),
        _ => rfc3339.to_string(),
    }
}
