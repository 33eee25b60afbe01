//! GPUs per node from the node labels a pod pins, for when nothing else
//! says (no `--node-gpus`, no `node-gpus:` config key, no `--nodes`
//! inventory, no live nodes): the accelerator and instance-type labels of
//! GKE, EKS and AKS, and the count labels some node provisioners write.
//!
//! Labels, most exact first:
//! - `nvidia.com/gpu.count` (NVIDIA GPU Feature Discovery, which the GPU
//!   Operator runs), `cloud.google.com/gke-accelerator-count` (GKE) and
//!   `karpenter.k8s.aws/instance-gpu-count` (Karpenter on EKS): the count.
//! - `node.kubernetes.io/instance-type` (well-known, set by every cloud's
//!   node controller; `beta.kubernetes.io/instance-type` before it): the
//!   machine type's GPUs, from [`MACHINES`].
//! - `cloud.google.com/gke-accelerator` alone: the GPUs of the smallest
//!   machine shape of that accelerator that holds the pod, from
//!   [`GKE_ACCELERATORS`] — the node GKE Autopilot and node
//!   auto-provisioning create for it (a pod of 2 L4s gets a
//!   `g2-standard-24`, which holds 2).
//!
//! Sources: cloud.google.com/compute/docs/gpus ("GPU machine types": A2,
//! A3, A4, G2, N1+T4/V100) and cloud.google.com/kubernetes-engine/docs/
//! how-to/autopilot-gpus (the `gke-accelerator` values and counts);
//! docs.aws.amazon.com/ec2/latest/instancetypes/ac.html ("Accelerated
//! computing": P3, P4d, P4de, P5, P5e, P5en, P6, G5, G6, G6e);
//! learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated
//! (NCv3, NCasT4_v3, NC A100 v4, NCads H100 v5, ND A100 v4, ND H100 v5,
//! ND H200 v5); karpenter.sh/docs/reference/well-known-labels;
//! github.com/NVIDIA/k8s-device-plugin `docs/gpu-feature-discovery`.

/// GPUs of a machine type (instance-type label value, compared without
/// regard to case).
pub const MACHINES: &[(&str, u32)] = &[
    // GKE (Compute Engine)
    ("a2-highgpu-1g", 1),
    ("a2-highgpu-2g", 2),
    ("a2-highgpu-4g", 4),
    ("a2-highgpu-8g", 8),
    ("a2-megagpu-16g", 16),
    ("a2-ultragpu-1g", 1),
    ("a2-ultragpu-2g", 2),
    ("a2-ultragpu-4g", 4),
    ("a2-ultragpu-8g", 8),
    ("a3-highgpu-1g", 1),
    ("a3-highgpu-2g", 2),
    ("a3-highgpu-4g", 4),
    ("a3-highgpu-8g", 8),
    ("a3-edgegpu-8g", 8),
    ("a3-megagpu-8g", 8),
    ("a3-ultragpu-8g", 8),
    ("a4-highgpu-8g", 8),
    ("g2-standard-4", 1),
    ("g2-standard-8", 1),
    ("g2-standard-12", 1),
    ("g2-standard-16", 1),
    ("g2-standard-32", 1),
    ("g2-standard-24", 2),
    ("g2-standard-48", 4),
    ("g2-standard-96", 8),
    // EKS (EC2)
    ("p3.2xlarge", 1),
    ("p3.8xlarge", 4),
    ("p3.16xlarge", 8),
    ("p3dn.24xlarge", 8),
    ("p4d.24xlarge", 8),
    ("p4de.24xlarge", 8),
    ("p5.48xlarge", 8),
    ("p5e.48xlarge", 8),
    ("p5en.48xlarge", 8),
    ("p6-b200.48xlarge", 8),
    ("g5.xlarge", 1),
    ("g5.2xlarge", 1),
    ("g5.4xlarge", 1),
    ("g5.8xlarge", 1),
    ("g5.16xlarge", 1),
    ("g5.12xlarge", 4),
    ("g5.24xlarge", 4),
    ("g5.48xlarge", 8),
    ("g6.xlarge", 1),
    ("g6.2xlarge", 1),
    ("g6.4xlarge", 1),
    ("g6.8xlarge", 1),
    ("g6.16xlarge", 1),
    ("g6.12xlarge", 4),
    ("g6.24xlarge", 4),
    ("g6.48xlarge", 8),
    ("g6e.xlarge", 1),
    ("g6e.2xlarge", 1),
    ("g6e.4xlarge", 1),
    ("g6e.8xlarge", 1),
    ("g6e.16xlarge", 1),
    ("g6e.12xlarge", 4),
    ("g6e.24xlarge", 4),
    ("g6e.48xlarge", 8),
    // AKS (Azure)
    ("Standard_NC6s_v3", 1),
    ("Standard_NC12s_v3", 2),
    ("Standard_NC24s_v3", 4),
    ("Standard_NC4as_T4_v3", 1),
    ("Standard_NC8as_T4_v3", 1),
    ("Standard_NC16as_T4_v3", 1),
    ("Standard_NC64as_T4_v3", 4),
    ("Standard_NC24ads_A100_v4", 1),
    ("Standard_NC48ads_A100_v4", 2),
    ("Standard_NC96ads_A100_v4", 4),
    ("Standard_NC40ads_H100_v5", 1),
    ("Standard_NC80adis_H100_v5", 2),
    ("Standard_ND96asr_v4", 8),
    ("Standard_ND96amsr_A100_v4", 8),
    ("Standard_ND96isr_H100_v5", 8),
    ("Standard_ND96isr_H200_v5", 8),
];

/// GKE accelerators (`cloud.google.com/gke-accelerator`) and the GPU
/// counts of the machine shapes that carry them.
pub const GKE_ACCELERATORS: &[(&str, &[u32])] = &[
    ("nvidia-l4", &[1, 2, 4, 8]),
    ("nvidia-tesla-t4", &[1, 2, 4]),
    ("nvidia-tesla-v100", &[1, 2, 4, 8]),
    ("nvidia-tesla-p4", &[1, 2, 4]),
    ("nvidia-tesla-a100", &[1, 2, 4, 8, 16]),
    ("nvidia-a100-80gb", &[1, 2, 4, 8]),
    ("nvidia-h100-80gb", &[1, 2, 4, 8]),
    ("nvidia-h100-mega-80gb", &[8]),
    ("nvidia-h200-141gb", &[8]),
    ("nvidia-b200", &[8]),
];

/// Labels whose value is the node's GPU count.
const COUNT_LABELS: [&str; 3] = [
    "nvidia.com/gpu.count",
    "cloud.google.com/gke-accelerator-count",
    "karpenter.k8s.aws/instance-gpu-count",
];

const INSTANCE_TYPE_LABELS: [&str; 2] = [
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
];

/// GPUs per node, and the pinned label that says so (for messages:
/// `node.kubernetes.io/instance-type: g2-standard-24`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeGpus {
    pub gpus: u32,
    pub because: String,
}

/// GPUs per node for a pod pinned to `labels` (label → the one value it
/// must have) that asks for `pod_gpus` GPUs; None when no pinned label
/// is in the table.
pub fn node_gpus<'l>(labels: impl Fn(&str) -> Option<&'l str>, pod_gpus: i64) -> Option<NodeGpus> {
    let said = |k: &str, v: &str, gpus: u32| NodeGpus {
        gpus,
        because: format!("{k}: {v}"),
    };
    for k in COUNT_LABELS {
        if let Some(v) = labels(k)
            && let Ok(n) = v.trim().parse::<u32>()
        {
            return Some(said(k, v, n));
        }
    }
    for k in INSTANCE_TYPE_LABELS {
        if let Some(v) = labels(k)
            && let Some((_, n)) = MACHINES.iter().find(|(m, _)| m.eq_ignore_ascii_case(v))
        {
            return Some(said(k, v, *n));
        }
    }
    let k = "cloud.google.com/gke-accelerator";
    let v = labels(k)?;
    let (_, shapes) = GKE_ACCELERATORS.iter().find(|(a, _)| *a == v)?;
    let fits = shapes
        .iter()
        .find(|&&n| i64::from(n) >= pod_gpus)
        .or(shapes.last())?;
    Some(NodeGpus {
        gpus: *fits,
        because: format!(
            "{k}: {v}; the smallest machine with it that holds the pod, as GKE provisions one, has {fits}"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pinned<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> {
        move |k| pairs.iter().find(|(l, _)| *l == k).map(|(_, v)| *v)
    }

    /// (pinned labels, the pod's GPUs, GPUs per node).
    type Row<'a> = (&'a [(&'a str, &'a str)], i64, Option<u32>);

    #[test]
    fn gpus_per_node_from_pinned_labels() {
        let table: [Row<'_>; 9] = [
            (
                &[("cloud.google.com/gke-accelerator", "nvidia-l4")],
                1,
                Some(1),
            ),
            (
                &[("cloud.google.com/gke-accelerator", "nvidia-l4")],
                2,
                Some(2),
            ),
            (
                &[("cloud.google.com/gke-accelerator", "nvidia-l4")],
                3,
                Some(4),
            ),
            (
                &[("cloud.google.com/gke-accelerator", "nvidia-h100-80gb")],
                8,
                Some(8),
            ),
            // The machine type is exact, whatever the pod asks for.
            (
                &[
                    ("cloud.google.com/gke-accelerator", "nvidia-l4"),
                    ("node.kubernetes.io/instance-type", "g2-standard-96"),
                ],
                2,
                Some(8),
            ),
            (
                &[("node.kubernetes.io/instance-type", "p4d.24xlarge")],
                1,
                Some(8),
            ),
            (
                &[(
                    "node.kubernetes.io/instance-type",
                    "standard_nc96ads_a100_v4",
                )],
                1,
                Some(4),
            ),
            (&[("karpenter.k8s.aws/instance-gpu-count", "4")], 1, Some(4)),
            (&[("kubernetes.io/hostname", "gpu-1")], 1, None),
        ];
        for (labels, pod, want) in table {
            assert_eq!(
                node_gpus(pinned(labels), pod).map(|n| n.gpus),
                want,
                "{labels:?}"
            );
        }
        let n = node_gpus(
            pinned(&[("cloud.google.com/gke-accelerator", "nvidia-l4")]),
            2,
        );
        assert!(n.is_some_and(|n| {
            n.because
                .starts_with("cloud.google.com/gke-accelerator: nvidia-l4;")
        }));
    }
}
