//! What becomes of an object lint does not analyse: silent (a kind that
//! runs nothing, from one closed list), or named as skipped with its API
//! group, why, and what it holds that matters (containers, GPUs, replicas,
//! an engine) — so a new operator's kind is never passed over unread.

use infera_model::manifest::{Node, Value};

/// Kinds that run nothing (no pod, no model server, no rollout of their
/// own), by API group: the only objects lint passes over without a word.
/// The list is closed on purpose: any other kind lint does not read is
/// named in every report ("not read: Model (kubeai.org)"), so a serving
/// kind nobody has taught lint yet is never mistaken for one it checked.
/// Add a kind here only when it cannot run or roll a pod.
const RUNS_NOTHING: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "Service",
            "ConfigMap",
            "Secret",
            "ServiceAccount",
            "PersistentVolumeClaim",
            "PersistentVolume",
            "Namespace",
            "Endpoints",
            "LimitRange",
            "ResourceQuota",
            "Event",
        ],
    ),
    (
        "rbac.authorization.k8s.io",
        &["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"],
    ),
    (
        "networking.k8s.io",
        &["Ingress", "IngressClass", "NetworkPolicy"],
    ),
    (
        "gateway.networking.k8s.io",
        &[
            "Gateway",
            "GatewayClass",
            "HTTPRoute",
            "GRPCRoute",
            "TCPRoute",
            "TLSRoute",
            "UDPRoute",
            "ReferenceGrant",
        ],
    ),
    ("discovery.k8s.io", &["EndpointSlice"]),
    ("policy", &["PodDisruptionBudget"]),
    ("autoscaling", &["HorizontalPodAutoscaler"]),
    ("storage.k8s.io", &["StorageClass"]),
    ("scheduling.k8s.io", &["PriorityClass"]),
    ("apiextensions.k8s.io", &["CustomResourceDefinition"]),
    (
        "admissionregistration.k8s.io",
        &[
            "ValidatingWebhookConfiguration",
            "MutatingWebhookConfiguration",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
        ],
    ),
    (
        "resource.k8s.io",
        &["ResourceClaim", "ResourceClaimTemplate", "DeviceClass"],
    ),
    (
        "monitoring.coreos.com",
        &["ServiceMonitor", "PodMonitor", "PrometheusRule"],
    ),
    (
        "inference.networking.x-k8s.io",
        &["InferencePool", "InferenceModel", "InferenceObjective"],
    ),
    ("inference.networking.k8s.io", &["InferencePool"]),
    ("kustomize.config.k8s.io", &["Kustomization", "Component"]),
    ("cert-manager.io", &["Certificate", "Issuer", "ClusterIssuer"]),
];

/// True for a kind of [`RUNS_NOTHING`]: skipped without a word.
pub fn runs_nothing(kind: &str, group: &str) -> bool {
    RUNS_NOTHING
        .iter()
        .find(|(g, _)| *g == group)
        .is_some_and(|(_, kinds)| kinds.contains(&kind))
}

/// An object's API group and version (`apps/v1` → `apps`, `v1`; `v1` → ``, `v1`).
pub fn group_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

/// The reason for a known kind at an API version lint does not read.
pub(super) fn unread_version(kind: &str, group: &str, version: &str) -> Option<String> {
    use infera_model::manifest::dynamo;
    let read: &[&str] = match (kind, group) {
        (dynamo::KIND, dynamo::GROUP) => &dynamo::VERSIONS,
        _ => return None,
    };
    (!read.contains(&version)).then(|| {
        format!(
            "API version {group}/{version} is not one lint reads ({}): its fields may differ, so nothing in it was checked",
            read.join(", ")
        )
    })
}

/// Why an object of a kind lint does not know is named.
pub(super) const NOT_READ: &str = "infera does not read this kind: what its operator runs, and how it rolls it, is not checked";

/// At most this many facts are listed for one object.
const MAX_FOUND: usize = 4;

/// What an unread object holds that matters for a rollout, each with where
/// it is: containers (`containers at spec.runner`), GPU or accelerator
/// requests, a replica count, an engine. Walked only for the kinds lint
/// neither reads nor keeps silent (never on the common kinds' path).
pub(super) fn found(node: &Node) -> Vec<String> {
    let mut out = Vec::new();
    let mut path = Vec::new();
    walk(node, &mut path, 0, &mut out);
    out
}

fn walk<'n>(node: &'n Node, path: &mut Vec<&'n str>, depth: usize, out: &mut Vec<String>) {
    if depth > 12 || out.len() >= MAX_FOUND {
        return;
    }
    match &node.value {
        Value::Map(entries) => {
            for (k, v) in entries {
                let name: &str = k.name.as_ref();
                if depth == 0 && matches!(name, "metadata" | "status") {
                    continue;
                }
                path.push(name);
                let pods = is_container_list(v) || is_container(v);
                match fact(name, v, path, pods) {
                    Some(fact) if !out.contains(&fact) && out.len() < MAX_FOUND => out.push(fact),
                    Some(_) => {}
                    None => walk(v, path, depth + 1, out),
                }
                if pods {
                    walk(v, path, depth + 1, out);
                }
                path.pop();
            }
        }
        Value::Seq(items) => {
            for item in items {
                walk(item, path, depth + 1, out);
            }
        }
        _ => {}
    }
}

/// One fact from a key and its value, or None to look further in.
fn fact(name: &str, v: &Node, path: &[&str], pods: bool) -> Option<String> {
    let at = path.join(".");
    let lower = name.to_ascii_lowercase();
    if pods {
        return Some(format!("containers at {at}"));
    }
    let scalar = v.as_str().map(str::to_string).or_else(|| scalar_text(v));
    let scalar = scalar.filter(|s| !s.is_empty())?;
    if lower.contains("gpu") || lower.contains("accelerator") || lower == "resourceprofile" {
        return Some(format!("GPU/accelerator request {name}: {scalar} at {at}"));
    }
    if matches!(name, "replicas" | "minReplicas") {
        return Some(format!("{name} {scalar} at {at}"));
    }
    if matches!(lower.as_str(), "engine" | "backendname" | "backend" | "runtime") {
        return Some(format!("engine {scalar} at {at}"));
    }
    None
}

/// A number or boolean as text (strings come from [`Node::as_str`]).
fn scalar_text(v: &Node) -> Option<String> {
    match &v.value {
        Value::Int(n) => Some(n.to_string()),
        Value::Float(f) => Some(f.to_string()),
        _ => None,
    }
}

/// A list of containers: maps with an `image` (or a `name` and `args`/`command`).
fn is_container_list(v: &Node) -> bool {
    match &v.value {
        Value::Seq(items) => !items.is_empty() && items.iter().all(is_container),
        _ => false,
    }
}

/// One container: a map with an `image`, or with `command`/`args` and a `name`.
fn is_container(v: &Node) -> bool {
    let Value::Map(_) = &v.value else {
        return false;
    };
    v.get("image").is_some()
        || (v.get("name").is_some() && (v.get("command").is_some() || v.get("args").is_some()))
}
