//! Server-side printing (`Accept: application/json;as=Table;g=meta.k8s.io`):
//! the columns kubectl shows, computed as upstream's printers compute them.

use infera_model::selector::format_label_selector;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::{Value, json};

use infera_sim_core::kind::Kind;

/// What a Table row carries besides its cells (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(s: Option<&str>) -> IncludeObject {
        match s {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

/// upstream `duration.HumanDuration`.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

fn since(ts: Option<&Value>) -> String {
    let Some(t) = ts
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
    else {
        return "<unknown>".into();
    };
    let secs = infera_sim_core::clock::server_now().as_second() - t.as_second();
    human_duration(secs)
}

fn s<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn i(v: &Value, ptr: &str) -> i64 {
    v.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

fn none(v: Option<&str>) -> String {
    v.unwrap_or("<none>").to_string()
}

fn col(name: &str, ty: &str, priority: u8) -> Value {
    let format = if name == "Name" { "name" } else { "" };
    json!({"name": name, "type": ty, "format": format, "description": "", "priority": priority})
}

/// Each kind's columns as kubectl's server-side printing names them:
/// (name, type, priority).
fn column_specs(kind: Kind) -> &'static [(&'static str, &'static str, u8)] {
    match kind {
        Kind::Pod => &[
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            ("Age", "string", 0),
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ],
        Kind::Deployment => &[
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Up-to-date", "integer", 0),
            ("Available", "integer", 0),
            ("Age", "string", 0),
            ("Containers", "string", 1),
            ("Images", "string", 1),
            ("Selector", "string", 1),
        ],
        Kind::ReplicaSet => &[
            ("Name", "string", 0),
            ("Desired", "integer", 0),
            ("Current", "integer", 0),
            ("Ready", "integer", 0),
            ("Age", "string", 0),
            ("Containers", "string", 1),
            ("Images", "string", 1),
            ("Selector", "string", 1),
        ],
        Kind::StatefulSet => &[
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Age", "string", 0),
            ("Containers", "string", 1),
            ("Images", "string", 1),
        ],
        Kind::Node => &[
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Roles", "string", 0),
            ("Age", "string", 0),
            ("Version", "string", 0),
            ("Internal-IP", "string", 1),
            ("External-IP", "string", 1),
            ("OS-Image", "string", 1),
            ("Kernel-Version", "string", 1),
            ("Container-Runtime", "string", 1),
        ],
        Kind::Namespace => &[
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Age", "string", 0),
        ],
        Kind::Event => &[
            ("Last Seen", "string", 0),
            ("Type", "string", 0),
            ("Reason", "string", 0),
            ("Object", "string", 0),
            ("Subobject", "string", 1),
            ("Source", "string", 1),
            ("Message", "string", 0),
            ("First Seen", "string", 1),
            ("Count", "string", 1),
            ("Name", "string", 1),
        ],
        // The CRD's additionalPrinterColumns (lab/crd: Backend, State,
        // GAIE at priority 1, Age).
        Kind::InferaDeployment => &[
            ("Name", "string", 0),
            ("Backend", "string", 0),
            ("State", "string", 0),
            ("GAIE", "boolean", 1),
            ("Age", "date", 0),
        ],
        Kind::LeaderWorkerSet => &[("Name", "string", 0), ("Age", "string", 0)],
        Kind::Service => &[
            ("Name", "string", 0),
            ("Type", "string", 0),
            ("Cluster-IP", "string", 0),
            ("External-IP", "string", 0),
            ("Port(s)", "string", 0),
            ("Age", "string", 0),
            ("Selector", "string", 1),
        ],
        // pkg/printers/internalversion/printers.go (podDisruptionBudgetColumnDefinitions).
        Kind::PodDisruptionBudget => &[
            ("Name", "string", 0),
            ("Min Available", "string", 0),
            ("Max Unavailable", "string", 0),
            ("Allowed Disruptions", "integer", 0),
            ("Age", "string", 0),
        ],
    }
}

fn columns(kind: Kind) -> Vec<Value> {
    column_specs(kind)
        .iter()
        .map(|(name, ty, priority)| col(name, ty, *priority))
        .collect()
}

fn pod_status(pod: &Value) -> String {
    let mut reason = s(pod, "/status/phase").unwrap_or("Pending").to_string();
    if let Some(r) = s(pod, "/status/reason") {
        reason = r.to_string();
    }
    let mut has_running = false;
    let mut ready = false;
    if let Some(statuses) = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
    {
        for c in statuses.iter().rev() {
            if let Some(r) = s(c, "/state/waiting/reason") {
                reason = r.to_string();
            } else if let Some(r) = s(c, "/state/terminated/reason") {
                reason = r.to_string();
            } else if c.pointer("/state/terminated").is_some() {
                let code = i(c, "/state/terminated/exitCode");
                let signal = i(c, "/state/terminated/signal");
                reason = if signal != 0 {
                    format!("Signal:{signal}")
                } else {
                    format!("ExitCode:{code}")
                };
            } else if c.pointer("/state/running").is_some() {
                has_running = true;
                ready = ready || c.get("ready").and_then(Value::as_bool).unwrap_or(false);
            }
        }
    }
    if reason == "Completed" && has_running {
        reason = if ready { "Running" } else { "NotReady" }.to_string();
    }
    if pod.pointer("/metadata/deletionTimestamp").is_some() {
        reason = if s(pod, "/status/reason") == Some("NodeLost") {
            "Unknown".into()
        } else {
            "Terminating".into()
        };
    }
    reason
}

fn template_containers(obj: &Value) -> (String, String) {
    let containers = obj
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let names: Vec<&str> = containers.iter().filter_map(|c| s(c, "/name")).collect();
    let images: Vec<&str> = containers.iter().filter_map(|c| s(c, "/image")).collect();
    (names.join(","), images.join(","))
}

/// `spec.selector` as `kubectl get -o wide` prints it.
fn selector_string(obj: &Value) -> String {
    let selector: Option<LabelSelector> = obj
        .pointer("/spec/selector")
        .and_then(|s| serde_json::from_value(s.clone()).ok());
    format_label_selector(selector.as_ref())
}

/// `READY` of a Deployment or a StatefulSet: ready of desired.
fn ready_of(o: &Value) -> Value {
    json!(format!(
        "{}/{}",
        i(o, "/status/readyReplicas"),
        i(o, "/spec/replicas")
    ))
}

fn cells(kind: Kind, o: &Value) -> Vec<Value> {
    let name = s(o, "/metadata/name").unwrap_or_default().to_string();
    let age = since(o.pointer("/metadata/creationTimestamp"));
    match kind {
        Kind::Pod => pod_cells(name, age, o),
        Kind::Deployment => {
            let (containers, images) = template_containers(o);
            vec![
                json!(name),
                ready_of(o),
                json!(i(o, "/status/updatedReplicas")),
                json!(i(o, "/status/availableReplicas")),
                json!(age),
                json!(containers),
                json!(images),
                json!(selector_string(o)),
            ]
        }
        Kind::ReplicaSet => {
            let (containers, images) = template_containers(o);
            vec![
                json!(name),
                json!(i(o, "/spec/replicas")),
                json!(i(o, "/status/replicas")),
                json!(i(o, "/status/readyReplicas")),
                json!(age),
                json!(containers),
                json!(images),
                json!(selector_string(o)),
            ]
        }
        Kind::StatefulSet => {
            let (containers, images) = template_containers(o);
            vec![
                json!(name),
                ready_of(o),
                json!(age),
                json!(containers),
                json!(images),
            ]
        }
        Kind::Node => node_cells(name, age, o),
        Kind::Namespace => vec![
            json!(name),
            json!(s(o, "/status/phase").unwrap_or("Active")),
            json!(age),
        ],
        Kind::Event => event_cells(name, o),
        Kind::InferaDeployment => vec![
            json!(name),
            json!(s(o, "/spec/backendFramework").unwrap_or_default()),
            json!(s(o, "/status/state").unwrap_or_default()),
            o.pointer("/status/gaie/ready")
                .cloned()
                .unwrap_or(Value::Null),
            json!(age),
        ],
        Kind::LeaderWorkerSet => vec![json!(name), json!(age)],
        Kind::Service => service_cells(name, age, o),
        Kind::PodDisruptionBudget => vec![
            json!(name),
            json!(int_or_string_cell(o, "/spec/minAvailable")),
            json!(int_or_string_cell(o, "/spec/maxUnavailable")),
            json!(i(o, "/status/disruptionsAllowed")),
            json!(age),
        ],
    }
}

/// A Service's row as `printService` prints it (`8000/TCP`, the selector
/// as `k=v,…`).
fn service_cells(name: String, age: String, o: &Value) -> Vec<Value> {
    let ports: Vec<String> = o
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| format!("{}/{}", i(p, "/port"), s(p, "/protocol").unwrap_or("TCP")))
        .collect();
    let ports = if ports.is_empty() {
        "<none>".to_string()
    } else {
        ports.join(",")
    };
    let selector: Vec<String> = o
        .pointer("/spec/selector")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    let selector = if selector.is_empty() {
        "<none>".to_string()
    } else {
        selector.join(",")
    };
    vec![
        json!(name),
        json!(s(o, "/spec/type").unwrap_or("ClusterIP")),
        json!(none(s(o, "/spec/clusterIP"))),
        json!("<none>"),
        json!(ports),
        json!(age),
        json!(selector),
    ]
}

/// An IntOrString as `printPodDisruptionBudget` prints it: `N/A` when unset.
fn int_or_string_cell(o: &Value, pointer: &str) -> String {
    match o.pointer(pointer) {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "N/A".to_string(),
    }
}

fn pod_cells(name: String, age: String, o: &Value) -> Vec<Value> {
    let total = o
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let statuses = o
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let ready = statuses
        .iter()
        .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
        .count();
    let restarts: i64 = statuses.iter().map(|c| i(c, "/restartCount")).sum();
    let gates = o
        .pointer("/spec/readinessGates")
        .and_then(Value::as_array)
        .filter(|g| !g.is_empty())
        .map_or_else(|| "<none>".to_string(), |g| format!("0/{}", g.len()));
    vec![
        json!(name),
        json!(format!("{ready}/{total}")),
        json!(pod_status(o)),
        json!(restarts.to_string()),
        json!(age),
        json!(none(s(o, "/status/podIP"))),
        json!(none(s(o, "/spec/nodeName"))),
        json!(none(s(o, "/status/nominatedNodeName"))),
        json!(gates),
    ]
}

fn node_cells(name: String, age: String, o: &Value) -> Vec<Value> {
    let conditions = o
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let ready = conditions
        .iter()
        .find(|c| s(c, "/type") == Some("Ready"))
        .and_then(|c| s(c, "/status").map(str::to_string));
    let mut status = match ready.as_deref() {
        Some("True") => "Ready".to_string(),
        Some("False") => "NotReady".to_string(),
        _ => "Unknown".to_string(),
    };
    if o.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    let roles: Vec<&str> = o
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|l| {
            l.keys()
                .filter_map(|k| k.strip_prefix("node-role.kubernetes.io/"))
                .collect()
        })
        .unwrap_or_default();
    let address = |ty: &str| {
        o.pointer("/status/addresses")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find(|x| s(x, "/type") == Some(ty)))
            .and_then(|x| s(x, "/address"))
            .unwrap_or("<none>")
            .to_string()
    };
    vec![
        json!(name),
        json!(status),
        json!(if roles.is_empty() {
            "<none>".to_string()
        } else {
            roles.join(",")
        }),
        json!(age),
        json!(s(o, "/status/nodeInfo/kubeletVersion").unwrap_or_default()),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(none(s(o, "/status/nodeInfo/osImage"))),
        json!(none(s(o, "/status/nodeInfo/kernelVersion"))),
        json!(none(s(o, "/status/nodeInfo/containerRuntimeVersion"))),
    ]
}

fn event_cells(name: String, o: &Value) -> Vec<Value> {
    let last = o
        .pointer("/lastTimestamp")
        .filter(|v| v.is_string())
        .or_else(|| o.pointer("/eventTime").filter(|v| v.is_string()))
        .or_else(|| o.pointer("/metadata/creationTimestamp"));
    let first = o
        .pointer("/firstTimestamp")
        .filter(|v| v.is_string())
        .or_else(|| o.pointer("/eventTime").filter(|v| v.is_string()))
        .or_else(|| o.pointer("/metadata/creationTimestamp"));
    let count = i(o, "/count").max(1);
    let mut last_seen = since(last);
    if count > 1 {
        last_seen = format!("{last_seen} (x{count} over {})", since(first));
    }
    let object = format!(
        "{}/{}",
        s(o, "/involvedObject/kind")
            .unwrap_or_default()
            .to_lowercase(),
        s(o, "/involvedObject/name").unwrap_or_default()
    );
    let mut source = s(o, "/source/component")
        .or_else(|| s(o, "/reportingComponent"))
        .unwrap_or_default()
        .to_string();
    if let Some(host) = s(o, "/source/host") {
        source = format!("{source}, {host}");
    }
    vec![
        json!(last_seen),
        json!(s(o, "/type").unwrap_or_default()),
        json!(s(o, "/reason").unwrap_or_default()),
        json!(object),
        json!(s(o, "/involvedObject/fieldPath").unwrap_or_default()),
        json!(source),
        json!(s(o, "/message").unwrap_or_default().trim()),
        json!(since(first)),
        json!(count.to_string()),
        json!(name),
    ]
}

fn row(kind: Kind, o: &Value, include: IncludeObject) -> Value {
    let mut r = json!({"cells": cells(kind, o)});
    match include {
        IncludeObject::None => {}
        IncludeObject::Object => r["object"] = o.clone(),
        IncludeObject::Metadata => {
            r["object"] = json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": o.get("metadata").cloned().unwrap_or_else(|| json!({})),
            });
        }
    }
    r
}

/// A `meta.k8s.io/v1` Table of `objects`.
pub fn table<'a>(
    kind: Kind,
    objects: impl IntoIterator<Item = &'a Value>,
    resource_version: u64,
    include: IncludeObject,
) -> Value {
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version.to_string()},
        "columnDefinitions": columns(kind),
        "rows": objects.into_iter().map(|o| row(kind, o, include)).collect::<Vec<_>>(),
    })
}

/// Whether an `Accept` header asks for a Table.
pub fn wants_table(accept: &str) -> bool {
    accept.split(',').any(|part| {
        let params: Vec<&str> = part.split(';').map(str::trim).collect();
        params.contains(&"as=Table") && params.iter().any(|p| p.starts_with("g=meta.k8s.io"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_match_upstream() {
        for (secs, want) in [
            (5, "5s"),
            (119, "119s"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (10 * 3600, "10h"),
            (3 * 86400 + 3600, "3d1h"),
        ] {
            assert_eq!(human_duration(secs), want);
        }
    }

    #[test]
    fn pod_status_column() {
        let pending = json!({"status": {"phase": "Pending", "containerStatuses": [{"state": {"waiting": {"reason": "ContainerCreating"}}}]}});
        assert_eq!(pod_status(&pending), "ContainerCreating");
        let deleting = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": {"phase": "Running"}});
        assert_eq!(pod_status(&deleting), "Terminating");
    }

    #[test]
    fn accept_header_detection() {
        assert!(wants_table(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
        ));
        assert!(!wants_table("application/json"));
    }
}
