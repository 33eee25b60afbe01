//! `application/vnd.kubernetes.protobuf` request bodies.
//!
//! A current kubectl (client-go typed clients: `create namespace|deployment`,
//! `drain`'s Eviction, `scale`) sends protobuf. The wire format is upstream's
//! (k8s.io/apimachinery/pkg/runtime/serializer/protobuf/protobuf.go): the
//! 4-byte magic `k8s\0`, then a `runtime.Unknown` whose `typeMeta` names the
//! kind and whose `raw` holds the typed message. The typed messages are
//! decoded with the `k8s-pb` crate (prost, no serde), then converted here to
//! the JSON the rest of the sim speaks.
//!
//! The conversion covers the kinds the sim serves and the fields those
//! clients send (metadata, selectors, pod templates with containers, ports,
//! env values, resources, probes are not carried: a typed client that sends a
//! probe or a volume in protobuf loses it — send JSON (`kubectl apply`) for
//! full pod specs). Responses are JSON: client-go's protobuf clients send
//! `Accept: application/vnd.kubernetes.protobuf, application/json` and accept
//! either.

use std::collections::BTreeMap;

use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message;
use serde_json::{Map, Value, json};

use super::status::ApiStatus;

/// The protobuf media type (upstream's `runtime.ContentTypeProtobuf`).
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
const MAGIC: &[u8] = b"k8s\0";

/// Whether a Content-Type header names the protobuf encoding.
pub fn is_protobuf(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case(MEDIA_TYPE))
}

/// Decode a protobuf body into the JSON object the handlers expect.
pub fn to_json(body: &[u8]) -> Result<Vec<u8>, ApiStatus> {
    if body.is_empty() {
        return Ok(Vec::new());
    }
    let rest = body.strip_prefix(MAGIC).ok_or_else(|| {
        ApiStatus::bad_request("the protobuf request body does not start with the k8s\\0 magic")
    })?;
    let unknown = Unknown::decode(rest).map_err(|e| {
        ApiStatus::bad_request(format!(
            "the protobuf request body is not a runtime.Unknown: {e}"
        ))
    })?;
    let tm = unknown.type_meta.unwrap_or_default();
    let api_version = tm.api_version.unwrap_or_default();
    let kind = tm.kind.unwrap_or_default();
    let raw = unknown.raw.unwrap_or_default();
    let mut obj = typed(&api_version, &kind, &raw)?;
    if let Value::Object(m) = &mut obj {
        m.insert("apiVersion".into(), Value::String(api_version));
        m.insert("kind".into(), Value::String(kind));
    }
    serde_json::to_vec(&obj).map_err(|e| ApiStatus::bad_request(e.to_string()))
}

fn decode<M: Message + Default>(raw: &[u8], kind: &str) -> Result<M, ApiStatus> {
    M::decode(raw).map_err(|e| {
        ApiStatus::bad_request(format!(
            "the protobuf {kind} in the request body is invalid: {e}"
        ))
    })
}

fn typed(api_version: &str, kind: &str, raw: &[u8]) -> Result<Value, ApiStatus> {
    Ok(match (api_version, kind) {
        ("v1", "Namespace") => namespace(decode(raw, kind)?),
        ("v1", "Pod") => pod(decode(raw, kind)?),
        ("v1", "Node") => node(decode(raw, kind)?),
        ("apps/v1", "Deployment") => deployment(decode(raw, kind)?),
        ("apps/v1", "ReplicaSet") => replicaset(decode(raw, kind)?),
        ("policy/v1", "PodDisruptionBudget") => pdb(decode(raw, kind)?),
        ("policy/v1", "Eviction") => {
            let e: k8s_pb::api::policy::v1::Eviction = decode(raw, kind)?;
            let mut m = Map::new();
            put(&mut m, "metadata", e.metadata.map(object_meta));
            put(
                &mut m,
                "deleteOptions",
                e.delete_options.map(delete_options),
            );
            Value::Object(m)
        }
        ("autoscaling/v1", "Scale") => {
            let s: k8s_pb::api::autoscaling::v1::Scale = decode(raw, kind)?;
            let mut m = Map::new();
            put(&mut m, "metadata", s.metadata.map(object_meta));
            let replicas = s.spec.and_then(|s| s.replicas);
            put(
                &mut m,
                "spec",
                Some(json!({ "replicas": replicas.unwrap_or(0) })),
            );
            Value::Object(m)
        }
        ("v1" | "meta.k8s.io/v1", "DeleteOptions") => delete_options(decode(raw, kind)?),
        _ => {
            return Err(ApiStatus::new(
                415,
                "UnsupportedMediaType",
                format!(
                    "the simulator decodes protobuf bodies for Namespace, Pod, Node, Deployment, \
                     ReplicaSet, PodDisruptionBudget, Eviction, Scale and DeleteOptions, not {api_version} {kind}: \
                     send it as application/json"
                ),
            ));
        }
    })
}

/// Insert `v` under `k` when it is present. Go writes its non-pointer
/// strings even when empty (`strategy: {type: ""}`); an empty string is
/// Go's zero value, which JSON omits and defaulting then fills, so it is
/// dropped here too.
fn put<T: Into<Value>>(m: &mut Map<String, Value>, k: &str, v: Option<T>) {
    if let Some(v) = v {
        let v = v.into();
        if v.as_str() != Some("") {
            m.insert(k.to_string(), v);
        }
    }
}

fn strings(v: Vec<String>) -> Option<Value> {
    (!v.is_empty()).then(|| json!(v))
}

fn string_map(v: BTreeMap<String, String>) -> Option<Value> {
    (!v.is_empty()).then(|| json!(v))
}

fn list<T>(v: Vec<T>, f: fn(T) -> Value) -> Option<Value> {
    (!v.is_empty()).then(|| Value::Array(v.into_iter().map(f).collect()))
}

fn object_meta(o: meta::ObjectMeta) -> Value {
    let mut m = Map::new();
    put(&mut m, "name", o.name);
    put(&mut m, "generateName", o.generate_name);
    put(&mut m, "namespace", o.namespace);
    put(&mut m, "uid", o.uid);
    put(&mut m, "resourceVersion", o.resource_version);
    put(&mut m, "labels", string_map(o.labels));
    put(&mut m, "annotations", string_map(o.annotations));
    put(&mut m, "finalizers", strings(o.finalizers));
    put(
        &mut m,
        "ownerReferences",
        list(o.owner_references, owner_ref),
    );
    Value::Object(m)
}

fn owner_ref(o: meta::OwnerReference) -> Value {
    let mut m = Map::new();
    put(&mut m, "apiVersion", o.api_version);
    put(&mut m, "kind", o.kind);
    put(&mut m, "name", o.name);
    put(&mut m, "uid", o.uid);
    put(&mut m, "controller", o.controller);
    put(&mut m, "blockOwnerDeletion", o.block_owner_deletion);
    Value::Object(m)
}

fn delete_options(d: meta::DeleteOptions) -> Value {
    let mut m = Map::new();
    put(&mut m, "gracePeriodSeconds", d.grace_period_seconds);
    put(&mut m, "propagationPolicy", d.propagation_policy);
    put(&mut m, "dryRun", strings(d.dry_run));
    if let Some(p) = d.preconditions {
        let mut pm = Map::new();
        put(&mut pm, "uid", p.uid);
        put(&mut pm, "resourceVersion", p.resource_version);
        m.insert("preconditions".into(), Value::Object(pm));
    }
    Value::Object(m)
}

fn label_selector(s: meta::LabelSelector) -> Value {
    let mut m = Map::new();
    put(&mut m, "matchLabels", string_map(s.match_labels));
    let exprs = list(s.match_expressions, |r| {
        let mut e = Map::new();
        put(&mut e, "key", r.key);
        put(&mut e, "operator", r.operator);
        put(&mut e, "values", strings(r.values));
        Value::Object(e)
    });
    put(&mut m, "matchExpressions", exprs);
    Value::Object(m)
}

fn int_or_string(v: IntOrString) -> Value {
    match v.r#type {
        Some(1) => json!(v.str_val.unwrap_or_default()),
        _ => json!(v.int_val.unwrap_or(0)),
    }
}

/// What `kubectl create poddisruptionbudget` sends (spec only; status is
/// the disruption controller's).
fn pdb(p: k8s_pb::api::policy::v1::PodDisruptionBudget) -> Value {
    let mut m = Map::new();
    put(&mut m, "metadata", p.metadata.map(object_meta));
    if let Some(s) = p.spec {
        let mut spec = Map::new();
        put(
            &mut spec,
            "minAvailable",
            s.min_available.map(int_or_string),
        );
        put(
            &mut spec,
            "maxUnavailable",
            s.max_unavailable.map(int_or_string),
        );
        put(&mut spec, "selector", s.selector.map(label_selector));
        put(
            &mut spec,
            "unhealthyPodEvictionPolicy",
            s.unhealthy_pod_eviction_policy.filter(|p| !p.is_empty()),
        );
        m.insert("spec".into(), Value::Object(spec));
    }
    Value::Object(m)
}

fn namespace(n: core::Namespace) -> Value {
    let mut m = Map::new();
    put(&mut m, "metadata", n.metadata.map(object_meta));
    if let Some(spec) = n.spec {
        put(
            &mut m,
            "spec",
            Some(json!({ "finalizers": spec.finalizers })),
        );
    }
    Value::Object(m)
}

fn node(n: core::Node) -> Value {
    let mut m = Map::new();
    put(&mut m, "metadata", n.metadata.map(object_meta));
    if let Some(spec) = n.spec {
        let mut s = Map::new();
        put(&mut s, "unschedulable", spec.unschedulable);
        put(&mut s, "podCIDR", spec.pod_cidr);
        put(&mut s, "providerID", spec.provider_id);
        let taints = list(spec.taints, |t| {
            let mut tm = Map::new();
            put(&mut tm, "key", t.key);
            put(&mut tm, "value", t.value);
            put(&mut tm, "effect", t.effect);
            Value::Object(tm)
        });
        put(&mut s, "taints", taints);
        m.insert("spec".into(), Value::Object(s));
    }
    Value::Object(m)
}

fn pod(p: core::Pod) -> Value {
    let mut m = Map::new();
    put(&mut m, "metadata", p.metadata.map(object_meta));
    put(&mut m, "spec", p.spec.map(pod_spec));
    Value::Object(m)
}

fn template(t: core::PodTemplateSpec) -> Value {
    let mut m = Map::new();
    put(&mut m, "metadata", t.metadata.map(object_meta));
    put(&mut m, "spec", t.spec.map(pod_spec));
    Value::Object(m)
}

fn pod_spec(s: core::PodSpec) -> Value {
    let mut m = Map::new();
    put(
        &mut m,
        "containers",
        Some(Value::Array(
            s.containers.into_iter().map(container).collect(),
        )),
    );
    put(&mut m, "initContainers", list(s.init_containers, container));
    put(&mut m, "restartPolicy", s.restart_policy);
    put(
        &mut m,
        "terminationGracePeriodSeconds",
        s.termination_grace_period_seconds,
    );
    put(&mut m, "dnsPolicy", s.dns_policy);
    put(&mut m, "nodeSelector", string_map(s.node_selector));
    put(&mut m, "serviceAccountName", s.service_account_name);
    put(&mut m, "nodeName", s.node_name);
    put(&mut m, "hostname", s.hostname);
    put(&mut m, "schedulerName", s.scheduler_name);
    put(&mut m, "priorityClassName", s.priority_class_name);
    Value::Object(m)
}

fn container(c: core::Container) -> Value {
    let mut m = Map::new();
    put(&mut m, "name", c.name);
    put(&mut m, "image", c.image);
    put(&mut m, "command", strings(c.command));
    put(&mut m, "args", strings(c.args));
    put(&mut m, "workingDir", c.working_dir);
    let ports = list(c.ports, |p| {
        let mut pm = Map::new();
        put(&mut pm, "name", p.name);
        put(&mut pm, "containerPort", p.container_port);
        put(&mut pm, "hostPort", p.host_port);
        put(&mut pm, "protocol", p.protocol);
        Value::Object(pm)
    });
    put(&mut m, "ports", ports);
    let env = list(c.env, |e| {
        let mut em = Map::new();
        put(&mut em, "name", e.name);
        put(&mut em, "value", e.value);
        Value::Object(em)
    });
    put(&mut m, "env", env);
    if let Some(r) = c.resources {
        let q = |v: BTreeMap<String, k8s_pb::apimachinery::pkg::api::resource::Quantity>| {
            let out: BTreeMap<String, String> = v
                .into_iter()
                .map(|(k, q)| (k, q.string.unwrap_or_default()))
                .collect();
            string_map(out)
        };
        let mut rm = Map::new();
        put(&mut rm, "limits", q(r.limits));
        put(&mut rm, "requests", q(r.requests));
        m.insert("resources".into(), Value::Object(rm));
    }
    put(&mut m, "imagePullPolicy", c.image_pull_policy);
    put(&mut m, "terminationMessagePath", c.termination_message_path);
    put(
        &mut m,
        "terminationMessagePolicy",
        c.termination_message_policy,
    );
    Value::Object(m)
}

fn deployment(d: apps::Deployment) -> Value {
    let mut m = Map::new();
    put(&mut m, "metadata", d.metadata.map(object_meta));
    if let Some(spec) = d.spec {
        let mut s = Map::new();
        put(&mut s, "replicas", spec.replicas);
        put(&mut s, "selector", spec.selector.map(label_selector));
        put(&mut s, "template", spec.template.map(template));
        if let Some(st) = spec.strategy {
            let mut sm = Map::new();
            put(&mut sm, "type", st.r#type);
            if let Some(ru) = st.rolling_update {
                let mut rm = Map::new();
                put(&mut rm, "maxSurge", ru.max_surge.map(int_or_string));
                put(
                    &mut rm,
                    "maxUnavailable",
                    ru.max_unavailable.map(int_or_string),
                );
                sm.insert("rollingUpdate".into(), Value::Object(rm));
            }
            s.insert("strategy".into(), Value::Object(sm));
        }
        put(&mut s, "minReadySeconds", spec.min_ready_seconds);
        put(&mut s, "revisionHistoryLimit", spec.revision_history_limit);
        put(&mut s, "paused", spec.paused);
        put(
            &mut s,
            "progressDeadlineSeconds",
            spec.progress_deadline_seconds,
        );
        m.insert("spec".into(), Value::Object(s));
    }
    Value::Object(m)
}

fn replicaset(r: apps::ReplicaSet) -> Value {
    let mut m = Map::new();
    put(&mut m, "metadata", r.metadata.map(object_meta));
    if let Some(spec) = r.spec {
        let mut s = Map::new();
        put(&mut s, "replicas", spec.replicas);
        put(&mut s, "selector", spec.selector.map(label_selector));
        put(&mut s, "template", spec.template.map(template));
        put(&mut s, "minReadySeconds", spec.min_ready_seconds);
        m.insert("spec".into(), Value::Object(s));
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let u = Unknown {
            type_meta: Some(k8s_pb::apimachinery::pkg::runtime::TypeMeta {
                api_version: Some(api_version.into()),
                kind: Some(kind.into()),
            }),
            raw: Some(raw),
            content_encoding: Some(String::new()),
            content_type: Some(String::new()),
        };
        let mut out = MAGIC.to_vec();
        out.extend(u.encode_to_vec());
        out
    }

    #[test]
    fn a_namespace_envelope_becomes_json() {
        let ns = core::Namespace {
            metadata: Some(meta::ObjectMeta {
                name: Some("x".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let body = envelope("v1", "Namespace", ns.encode_to_vec());
        let v: Value = serde_json::from_slice(&to_json(&body).unwrap()).unwrap();
        assert_eq!(v["kind"], "Namespace");
        assert_eq!(v["apiVersion"], "v1");
        assert_eq!(v["metadata"]["name"], "x");
    }

    #[test]
    fn garbage_and_unknown_kinds_are_errors_not_panics() {
        assert_eq!(to_json(b"not protobuf").unwrap_err().code, 400);
        assert_eq!(to_json(b"k8s\0\xff\xff\xff").unwrap_err().code, 400);
        let body = envelope("v1", "ConfigMap", Vec::new());
        assert_eq!(to_json(&body).unwrap_err().code, 415);
    }
}
