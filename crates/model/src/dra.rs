//! GPUs requested through Dynamic Resource Allocation: a pod's
//! `spec.resourceClaims` name a `ResourceClaimTemplate` (or a
//! `ResourceClaim`), whose device requests name a device class and a count;
//! a container uses the claim through `resources.claims`.
//!
//! The claims are read untyped (from the objects' JSON), not through
//! k8s-openapi: the workspace pins its `v1_33` feature, which has only
//! `resource.k8s.io/v1beta1`/`v1beta2`, while `resource.k8s.io/v1` is the GA
//! API from Kubernetes 1.34. Untyped reading takes all three shapes:
//! `v1beta1` puts `deviceClassName`, `count` and `allocationMode` on the
//! request; `v1beta2` and `v1` put them under `exactly` (or list
//! alternatives under `firstAvailable`, of which infera takes the first).
//! (kubernetes/kubernetes `staging/src/k8s.io/api/resource/v1/types.go`,
//! `DeviceRequest`/`ExactDeviceRequest`; kubernetes.io, "Dynamic Resource
//! Allocation".)
//!
//! A device class counts as GPUs when its name says so (`gpu.nvidia.com`,
//! `gpu.amd.com`, `gpu.intel.com`: the classes the vendors' DRA drivers
//! install); `mig.nvidia.com` slices and other devices do not.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec};
use serde_json::Value;

/// GPUs one claim asks for: each GPU request's device class and count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimGpus {
    /// (request name, device class, count); count None for
    /// `allocationMode: All` (every matching device on the node).
    pub requests: Vec<(String, String, Option<i64>)>,
}

/// Claims and claim templates of one source, by (kind, namespace, name);
/// kind is `ResourceClaimTemplate` or `ResourceClaim`.
pub type Claims = BTreeMap<(String, String, String), ClaimGpus>;

const GROUP: &str = "resource.k8s.io";

/// True for the device classes of GPUs (`gpu.nvidia.com`, `gpu.amd.com`, …).
pub fn is_gpu_class(class: &str) -> bool {
    class.starts_with("gpu.") || class.split(['.', '/', '-']).any(|p| p == "gpu")
}

/// One device request's (class, count), from either API shape.
fn request(r: &Value) -> Option<(String, Option<i64>)> {
    let exact = r
        .get("exactly")
        .or_else(|| r.pointer("/firstAvailable/0"))
        .unwrap_or(r);
    let class = exact.get("deviceClassName")?.as_str()?.to_string();
    let all = exact.get("allocationMode").and_then(Value::as_str) == Some("All");
    let count = if all {
        None
    } else {
        Some(exact.get("count").and_then(Value::as_i64).unwrap_or(1))
    };
    Some((class, count))
}

/// The claim an object is, with its GPU requests: a `ResourceClaimTemplate`
/// (`spec.spec.devices`) or a `ResourceClaim` (`spec.devices`) of
/// `resource.k8s.io`, any version; None for other objects.
pub fn read_claim(obj: &Value) -> Option<((String, String, String), ClaimGpus)> {
    let kind = obj.get("kind")?.as_str()?;
    let group = obj.get("apiVersion")?.as_str()?.split('/').next()?;
    let devices = match (kind, group) {
        ("ResourceClaimTemplate", GROUP) => obj.pointer("/spec/spec/devices"),
        ("ResourceClaim", GROUP) => obj.pointer("/spec/devices"),
        _ => return None,
    };
    let meta = |k: &str| {
        obj.pointer(&format!("/metadata/{k}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let requests = devices
        .and_then(|d| d.get("requests"))
        .and_then(Value::as_array)
        .map(|rs| {
            rs.iter()
                .filter_map(|r| {
                    let name = r.get("name")?.as_str()?.to_string();
                    let (class, count) = request(r)?;
                    is_gpu_class(&class).then_some((name, class, count))
                })
                .collect()
        })
        .unwrap_or_default();
    Some((
        (kind.to_string(), meta("namespace"), meta("name")),
        ClaimGpus { requests },
    ))
}

/// A claim by kind and name: in the pod's namespace, else one written
/// without a namespace (applied with `-n`); a pod written without one
/// takes the claim of that name in any namespace.
fn find<'c>(claims: &'c Claims, kind: &str, namespace: &str, name: &str) -> Option<&'c ClaimGpus> {
    let key = |ns: &str| (kind.to_string(), ns.to_string(), name.to_string());
    claims
        .get(&key(namespace))
        .or_else(|| claims.get(&key("")))
        .or_else(|| {
            namespace.is_empty().then(|| {
                claims
                    .iter()
                    .find(|((k, _, n), _)| k == kind && n == name)
                    .map(|(_, c)| c)
            })?
        })
}

/// The extended-resource name the device plugin of the same vendor uses
/// (`gpu.nvidia.com` → `nvidia.com/gpu`), so GPU arithmetic and node
/// inventories compare like with like; other classes keep their name.
pub fn resource_name(class: &str) -> String {
    match class {
        "gpu.nvidia.com" => "nvidia.com/gpu".into(),
        "gpu.amd.com" => "amd.com/gpu".into(),
        other => other.into(),
    }
}

/// GPUs a container gets through DRA.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ClaimedGpus {
    /// It uses no claim with a GPU device class.
    #[default]
    None,
    /// A name for them and the count (the device class from
    /// [`container_gpus`]).
    Known(String, i64),
    /// A claim defined elsewhere, or `allocationMode: All` (every GPU of
    /// the node).
    Unknown,
}

/// GPUs the container gets through its pod's resource claims, by device
/// class.
pub fn container_gpus(
    pod: &PodSpec,
    c: &Container,
    namespace: &str,
    claims: &Claims,
) -> ClaimedGpus {
    match claimed_sum(pod, c, namespace, claims) {
        Some(Some((class, n))) => ClaimedGpus::Known(class, n),
        Some(None) => ClaimedGpus::None,
        None => ClaimedGpus::Unknown,
    }
}

/// `Some(None)`: no GPU claim; `None`: a claim that cannot be counted.
fn claimed_sum(
    pod: &PodSpec,
    c: &Container,
    namespace: &str,
    claims: &Claims,
) -> Option<Option<(String, i64)>> {
    let used = c
        .resources
        .as_ref()
        .and_then(|r| r.claims.as_ref())
        .into_iter()
        .flatten();
    let mut total: Option<(String, i64)> = None;
    for u in used {
        let Some(pc) = pod
            .resource_claims
            .iter()
            .flatten()
            .find(|pc| pc.name == u.name)
        else {
            continue;
        };
        let (kind, name) = match (&pc.resource_claim_template_name, &pc.resource_claim_name) {
            (Some(t), _) => ("ResourceClaimTemplate", t),
            (None, Some(n)) => ("ResourceClaim", n),
            (None, None) => continue,
        };
        let claim = find(claims, kind, namespace, name)?;
        for (name, class, count) in &claim.requests {
            if u.request.as_ref().is_some_and(|r| r != name) {
                continue;
            }
            let count = (*count)?;
            let sum = total.as_ref().map_or(0, |(_, n)| *n) + count;
            total = Some((class.clone(), sum));
        }
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(claim: serde_json::Value) -> (PodSpec, Container) {
        let pod: PodSpec = serde_json::from_value(json!({
            "resourceClaims": [claim],
            "containers": [{"name": "c", "resources": {"claims": [{"name": "gpus"}]}}]
        }))
        .unwrap();
        let c = pod.containers[0].clone();
        (pod, c)
    }

    #[test]
    fn gpus_from_templates_of_every_api_version() {
        let v1 = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "four", "namespace": "llm"},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 4}}]}}}});
        let beta1 = json!({"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "two", "namespace": "llm"},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "g", "deviceClassName": "gpu.amd.com", "count": 2},
                {"name": "nic", "deviceClassName": "rdma.example.com", "count": 1}]}}}});
        let all = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "every", "namespace": "llm"},
            "spec": {"devices": {"requests": [
                {"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}]}}});
        let claims: Claims = [v1, beta1, all].iter().filter_map(read_claim).collect();
        let gpus = |claim| {
            let (p, c) = pod(claim);
            container_gpus(&p, &c, "llm", &claims)
        };
        assert_eq!(
            gpus(json!({"name": "gpus", "resourceClaimTemplateName": "four"})),
            ClaimedGpus::Known("gpu.nvidia.com".into(), 4)
        );
        assert_eq!(
            gpus(json!({"name": "gpus", "resourceClaimTemplateName": "two"})),
            ClaimedGpus::Known("gpu.amd.com".into(), 2)
        );
        // A template defined elsewhere, or every GPU of the node: unknown.
        assert_eq!(
            gpus(json!({"name": "gpus", "resourceClaimTemplateName": "gone"})),
            ClaimedGpus::Unknown
        );
        assert_eq!(
            gpus(json!({"name": "gpus", "resourceClaimName": "every"})),
            ClaimedGpus::Unknown
        );
        // Another namespace's template is not this pod's; a pod written
        // without a namespace takes it.
        let (p, c) = pod(json!({"name": "gpus", "resourceClaimTemplateName": "four"}));
        assert_eq!(
            container_gpus(&p, &c, "other", &claims),
            ClaimedGpus::Unknown
        );
        assert!(matches!(
            container_gpus(&p, &c, "", &claims),
            ClaimedGpus::Known(..)
        ));
        assert!(!is_gpu_class("mig.nvidia.com") && is_gpu_class("gpu.intel.com"));
    }
}
