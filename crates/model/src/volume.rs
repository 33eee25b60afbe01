//! PersistentVolumeClaims: which claims a pod mounts, and whether their
//! access mode ties the volume to one node (ReadWriteOnce) or to one pod
//! (ReadWriteOncePod). A surge-first roll needs the replacement pod to
//! attach the claim while the old pod still holds it.
//!
//! Upstream: k8s.io/api core/v1 `PersistentVolumeAccessMode`; the
//! attach/detach controller refuses a second node for a volume that is not
//! multi-attachable ("Multi-Attach error for volume … Volume is already
//! used by pod(s) …"), and the scheduler's VolumeRestrictions plugin keeps a
//! pod off every node while another pod uses its ReadWriteOncePod claim
//! (kubernetes/kubernetes `pkg/scheduler/framework/plugins/volumerestrictions`).

use k8s_openapi::api::core::v1::PodSpec;
use serde_json::Value;

/// How widely a claim's volume can be used at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reach {
    /// ReadWriteOncePod: one pod in the whole cluster.
    OnePod,
    /// ReadWriteOnce (and nothing wider): the pods of one node.
    OneNode,
    /// ReadOnlyMany or ReadWriteMany: any node.
    ManyNodes,
}

impl Reach {
    /// The reach of a claim with these access modes (the widest one wins:
    /// a claim that also allows ReadWriteMany can be attached elsewhere);
    /// None when the list is empty.
    pub fn of<'a>(modes: impl IntoIterator<Item = &'a str>) -> Option<Reach> {
        modes
            .into_iter()
            .filter_map(|m| match m {
                "ReadWriteOncePod" => Some(Reach::OnePod),
                "ReadWriteOnce" => Some(Reach::OneNode),
                "ReadOnlyMany" | "ReadWriteMany" => Some(Reach::ManyNodes),
                _ => None,
            })
            .max()
    }

    /// The access mode as a manifest spells it.
    pub fn mode(self) -> &'static str {
        match self {
            Reach::OnePod => "ReadWriteOncePod",
            Reach::OneNode => "ReadWriteOnce",
            Reach::ManyNodes => "ReadWriteMany",
        }
    }
}

/// A PersistentVolumeClaim: where it lives and how widely it reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub namespace: String,
    pub name: String,
    pub reach: Option<Reach>,
}

/// A PersistentVolumeClaim read from a wire-form object (a manifest
/// document or a live one): the bound volume's modes (`status.accessModes`)
/// when it is bound, else the requested ones. None for any other kind.
pub fn read_claim(obj: &Value) -> Option<Claim> {
    if obj.get("kind")?.as_str()? != "PersistentVolumeClaim" {
        return None;
    }
    let modes = |p: &str| {
        obj.pointer(p)
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .map(|a| Reach::of(a.iter().filter_map(Value::as_str)))
    };
    let text = |p: &str| {
        obj.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    Some(Claim {
        namespace: text("/metadata/namespace"),
        name: text("/metadata/name"),
        reach: modes("/status/accessModes")
            .or_else(|| modes("/spec/accessModes"))
            .flatten(),
    })
}

/// The claims a pod mounts by name (`persistentVolumeClaim.claimName`), with
/// the index of the volume that names each. Generic ephemeral volumes are
/// not among them: each pod gets a claim of its own.
pub fn mounted_claims(pod: &PodSpec) -> Vec<(usize, &str)> {
    pod.volumes
        .iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, v)| {
            let claim = v.persistent_volume_claim.as_ref()?;
            Some((i, claim.claim_name.as_str()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_widest_mode_decides_and_the_bound_modes_win() {
        assert_eq!(Reach::of(["ReadWriteOnce"]), Some(Reach::OneNode));
        assert_eq!(Reach::of(["ReadWriteOncePod"]), Some(Reach::OnePod));
        assert_eq!(
            Reach::of(["ReadWriteOnce", "ReadWriteMany"]),
            Some(Reach::ManyNodes)
        );
        assert_eq!(Reach::of([]), None);
        let pvc = serde_json::json!({
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "weights", "namespace": "llm"},
            "spec": {"accessModes": ["ReadWriteMany"]},
            "status": {"accessModes": ["ReadWriteOnce"]}
        });
        let claim = read_claim(&pvc).unwrap();
        assert_eq!(claim.reach, Some(Reach::OneNode));
        assert_eq!(
            (claim.namespace.as_str(), claim.name.as_str()),
            ("llm", "weights")
        );
        assert!(read_claim(&serde_json::json!({"kind": "Pod"})).is_none());
    }

    #[test]
    fn only_named_claims_are_mounted_claims() {
        let pod: PodSpec = serde_json::from_value(serde_json::json!({
            "containers": [],
            "volumes": [
                {"name": "cache", "emptyDir": {}},
                {"name": "w", "persistentVolumeClaim": {"claimName": "weights"}},
                {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
            ]
        }))
        .unwrap();
        assert_eq!(mounted_claims(&pod), vec![(1, "weights")]);
    }
}
