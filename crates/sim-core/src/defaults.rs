//! Defaulting: what `kube-apiserver` fills in on create and update, for the
//! fields the simulated controllers and `kubectl` rely on. Only fields that
//! are absent are set, so user values always win.
//!
//! Upstream keeps these beside the API types, not in the server
//! (k8s.io/kubernetes `pkg/apis/core/v1/defaults.go`,
//! `pkg/apis/apps/v1/defaults.go`), so that the registry and clients share
//! them; here likewise: the store (`infera_sim_store`) defaults every object created
//! or replaced, the API server previews defaults for a dry-run create, and the
//! world's operator compares against defaulted Deployments. None of them
//! depends on another for it.

use serde_json::{Map, Value, json};

use crate::kind::Kind;

fn object(v: &mut Value) -> Option<&mut Map<String, Value>> {
    v.as_object_mut()
}

fn set_default(map: &mut Map<String, Value>, key: &str, value: Value) {
    if !map.contains_key(key) || map.get(key).is_some_and(Value::is_null) {
        map.insert(key.to_string(), value);
    }
}

fn child<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    if !map.get(key).is_some_and(Value::is_object) {
        map.insert(key.to_string(), Value::Object(Map::new()));
    }
    map.get_mut(key).and_then(Value::as_object_mut)
}

/// Fill in upstream defaults for `kind`.
pub fn apply(kind: Kind, obj: &mut Value) {
    let Some(map) = object(obj) else { return };
    match kind {
        Kind::Pod => {
            if let Some(spec) = map.get_mut("spec").and_then(Value::as_object_mut) {
                pod_spec(spec);
            }
        }
        Kind::Deployment => {
            let Some(spec) = child(map, "spec") else {
                return;
            };
            set_default(spec, "replicas", json!(1));
            set_default(spec, "revisionHistoryLimit", json!(10));
            set_default(spec, "progressDeadlineSeconds", json!(600));
            let strategy = child(spec, "strategy");
            if let Some(strategy) = strategy {
                set_default(strategy, "type", json!("RollingUpdate"));
                if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                    && let Some(ru) = child(strategy, "rollingUpdate")
                {
                    set_default(ru, "maxUnavailable", json!("25%"));
                    set_default(ru, "maxSurge", json!("25%"));
                }
            }
            template(spec);
        }
        Kind::ReplicaSet => {
            let Some(spec) = child(map, "spec") else {
                return;
            };
            set_default(spec, "replicas", json!(1));
            template(spec);
        }
        // pkg/apis/apps/v1/defaults.go SetDefaults_StatefulSet.
        Kind::StatefulSet => {
            let Some(spec) = child(map, "spec") else {
                return;
            };
            set_default(spec, "replicas", json!(1));
            set_default(spec, "podManagementPolicy", json!("OrderedReady"));
            set_default(spec, "revisionHistoryLimit", json!(10));
            if let Some(strategy) = child(spec, "updateStrategy") {
                set_default(strategy, "type", json!("RollingUpdate"));
                if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                    && let Some(ru) = child(strategy, "rollingUpdate")
                {
                    set_default(ru, "partition", json!(0));
                }
            }
            template(spec);
        }
        // pkg/apis/core/v1/defaults.go SetDefaults_Service (no ClusterIP
        // is allocated: nothing routes to it in the simulator).
        Kind::Service => {
            let Some(spec) = child(map, "spec") else {
                return;
            };
            set_default(spec, "type", json!("ClusterIP"));
            set_default(spec, "sessionAffinity", json!("None"));
            for port in spec
                .get_mut("ports")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
                .filter_map(Value::as_object_mut)
            {
                set_default(port, "protocol", json!("TCP"));
                if let Some(p) = port.get("port").cloned() {
                    set_default(port, "targetPort", p);
                }
            }
        }
        Kind::Namespace => {
            if let Some(status) = child(map, "status") {
                set_default(status, "phase", json!("Active"));
            }
            if let Some(name) = map
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string)
                && let Some(meta) = child(map, "metadata")
                && let Some(labels) = child(meta, "labels")
            {
                set_default(labels, "kubernetes.io/metadata.name", json!(name));
            }
        }
        _ => {}
    }
}

fn template(spec: &mut Map<String, Value>) {
    if let Some(pod_spec_map) = spec
        .get_mut("template")
        .and_then(Value::as_object_mut)
        .and_then(|t| t.get_mut("spec"))
        .and_then(Value::as_object_mut)
    {
        pod_spec(pod_spec_map);
    }
}

fn pod_spec(spec: &mut Map<String, Value>) {
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    set_default(spec, "securityContext", json!({}));
    // The v1 conversion writes the deprecated alias beside the name
    // (`Convert_core_PodSpec_To_v1_PodSpec`: DeprecatedServiceAccount =
    // ServiceAccountName), so a stored pod spec carries both.
    if let Some(name) = spec.get("serviceAccountName").cloned() {
        set_default(spec, "serviceAccount", name);
    }
    for list in ["containers", "initContainers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for container in containers.iter_mut().filter_map(Value::as_object_mut) {
                container_defaults(container);
            }
        }
    }
}

fn container_defaults(c: &mut Map<String, Value>) {
    let latest = c.get("image").and_then(Value::as_str).is_some_and(|image| {
        let last = image.rsplit('/').next().unwrap_or(image);
        !last.contains(':') && !image.contains('@') || last.ends_with(":latest")
    });
    set_default(
        c,
        "imagePullPolicy",
        json!(if latest { "Always" } else { "IfNotPresent" }),
    );
    set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(c, "terminationMessagePolicy", json!("File"));
    set_default(c, "resources", json!({}));
    // SetDefaults_ObjectFieldSelector: a fieldRef without apiVersion reads v1.
    if let Some(env) = c.get_mut("env").and_then(Value::as_array_mut) {
        for var in env.iter_mut() {
            if let Some(field_ref) = var
                .pointer_mut("/valueFrom/fieldRef")
                .and_then(Value::as_object_mut)
            {
                set_default(field_ref, "apiVersion", json!("v1"));
            }
        }
    }
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(port, "protocol", json!("TCP"));
        }
    }
    for probe in ["readinessProbe", "livenessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).and_then(Value::as_object_mut) {
            set_default(p, "timeoutSeconds", json!(1));
            set_default(p, "periodSeconds", json!(10));
            set_default(p, "successThreshold", json!(1));
            set_default(p, "failureThreshold", json!(3));
            if let Some(http) = p.get_mut("httpGet").and_then(Value::as_object_mut) {
                set_default(http, "scheme", json!("HTTP"));
            }
        }
    }
}
