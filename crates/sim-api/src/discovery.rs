//! Discovery documents: `/version`, `/api`, `/api/v1`, `/apis`,
//! `/apis/<group>/<version>`. Only the legacy (unaggregated) forms are
//! served; kubectl and kube-rs fall back to them when the aggregated
//! `apidiscovery.k8s.io` form is not offered.

use serde_json::{Value, json};

use infera_sim_core::kind::Kind;

pub const KUBERNETES_VERSION: (&str, &str) = ("1", "33");

pub fn version() -> Value {
    json!({
        "major": KUBERNETES_VERSION.0,
        "minor": KUBERNETES_VERSION.1,
        "gitVersion": format!("v{}.{}.0-infera-sim", KUBERNETES_VERSION.0, KUBERNETES_VERSION.1),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
    })
}

/// (group, version) pairs served under `/apis`.
pub fn groups() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for k in Kind::ALL {
        if !k.group().is_empty() && !out.contains(&(k.group(), k.version())) {
            out.push((k.group(), k.version()));
        }
    }
    out
}

fn group_json(group: &str, version: &str) -> Value {
    let gv = json!({"groupVersion": format!("{group}/{version}"), "version": version});
    json!({"name": group, "versions": [gv.clone()], "preferredVersion": gv})
}

pub fn group_list() -> Value {
    json!({
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": groups().into_iter().map(|(g, v)| group_json(g, v)).collect::<Vec<_>>()
    })
}

pub fn group(group: &str) -> Option<Value> {
    let (g, v) = groups().into_iter().find(|(g, _)| *g == group)?;
    let mut doc = group_json(g, v);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

const ALL_VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn resource(k: Kind) -> Value {
    let mut r = json!({
        "name": k.plural(),
        "singularName": k.singular(),
        "namespaced": k.namespaced(),
        "kind": k.kind(),
        "verbs": ALL_VERBS,
        "storageVersionHash": "",
    });
    if !k.short_names().is_empty() {
        r["shortNames"] = json!(k.short_names());
    }
    if matches!(
        k,
        Kind::Pod
            | Kind::Service
            | Kind::Deployment
            | Kind::ReplicaSet
            | Kind::StatefulSet
            | Kind::InferaDeployment
    ) {
        r["categories"] = json!(["all"]);
    }
    r
}

fn subresource(k: Kind, sub: &str, sub_kind: &str, verbs: &[&str]) -> Value {
    let mut r = json!({
        "name": format!("{}/{sub}", k.plural()),
        "singularName": "",
        "namespaced": k.namespaced(),
        "kind": sub_kind,
        "verbs": verbs,
    });
    if sub == "scale" {
        r["group"] = json!("autoscaling");
        r["version"] = json!("v1");
    }
    if sub == "eviction" {
        // kubectl drain evicts (not deletes) only when discovery lists
        // pods/eviction with its group/version (kubectl's
        // pkg/drain/drain.go CheckEvictionSupport).
        r["group"] = json!("policy");
        r["version"] = json!("v1");
    }
    r
}

/// The `APIResourceList` for `group/version` ("" group for `/api/v1`).
pub fn resource_list(group: &str, version: &str) -> Option<Value> {
    let kinds: Vec<Kind> = Kind::ALL
        .into_iter()
        .filter(|k| k.group() == group && k.version() == version)
        .collect();
    if kinds.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for k in kinds {
        resources.push(resource(k));
        if k.has_status() {
            resources.push(subresource(
                k,
                "status",
                k.kind(),
                &["get", "patch", "update"],
            ));
        }
        if matches!(
            k,
            Kind::Deployment | Kind::ReplicaSet | Kind::StatefulSet | Kind::LeaderWorkerSet
        ) {
            resources.push(subresource(
                k,
                "scale",
                "Scale",
                &["get", "patch", "update"],
            ));
        }
        if k == Kind::Pod {
            resources.push(subresource(
                k,
                "proxy",
                "PodProxyOptions",
                &["create", "delete", "get", "patch", "update"],
            ));
            resources.push(subresource(k, "eviction", "Eviction", &["create"]));
        }
        if k == Kind::Service {
            resources.push(subresource(
                k,
                "proxy",
                "ServiceProxyOptions",
                &["create", "delete", "get", "patch", "update"],
            ));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": resources
    }))
}
