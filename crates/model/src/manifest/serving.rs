//! Serving custom resources whose operator renders the pods: an untyped
//! view (the object as JSON) and its kind. Their operators' rendering is
//! read in `infera_lint` (`serving/`), with the source it follows cited
//! there and in `docs/serving-kinds.md`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// A serving kind infera reads, by its operator's project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServingKind {
    /// vLLM production-stack `VLLMRuntime` (`production-stack.vllm.ai`).
    VllmRuntime,
    /// KServe `InferenceService` (`serving.kserve.io`).
    InferenceService,
    /// KServe `LLMInferenceService` (`serving.kserve.io`).
    LlmInferenceService,
    /// KAITO `Workspace` (`kaito.sh`).
    KaitoWorkspace,
    /// KubeRay `RayService` (`ray.io`).
    RayService,
    /// AIBrix `RayClusterFleet` (`orchestration.aibrix.ai`).
    RayClusterFleet,
    /// AIBrix `StormService` (`orchestration.aibrix.ai`).
    StormService,
    /// NVIDIA NIM operator `NIMService` (`apps.nvidia.com`).
    NimService,
    /// KubeAI `Model` (`kubeai.org`).
    KubeAiModel,
    /// OME `InferenceService` (`ome.io`), with the runtime it names.
    OmeInferenceService,
    /// llmaz `Service` (`inference.llmaz.io`: not a core Service).
    LlmazService,
    /// kthena `ModelServing` (`workload.serving.volcano.sh`).
    KthenaModelServing,
    /// LWS `DisaggregatedSet` (`disaggregatedset.x-k8s.io`).
    DisaggregatedSet,
}

impl ServingKind {
    /// The kind as the manifest spells it.
    pub fn name(self) -> &'static str {
        match self {
            ServingKind::VllmRuntime => "VLLMRuntime",
            ServingKind::InferenceService => "InferenceService",
            ServingKind::LlmInferenceService => "LLMInferenceService",
            ServingKind::KaitoWorkspace => "Workspace",
            ServingKind::RayService => "RayService",
            ServingKind::RayClusterFleet => "RayClusterFleet",
            ServingKind::StormService => "StormService",
            ServingKind::NimService => "NIMService",
            ServingKind::KubeAiModel => "Model",
            ServingKind::OmeInferenceService => "InferenceService",
            ServingKind::LlmazService => "Service",
            ServingKind::KthenaModelServing => "ModelServing",
            ServingKind::DisaggregatedSet => "DisaggregatedSet",
        }
    }

    /// Every serving kind infera reads.
    pub const ALL: [ServingKind; 13] = [
        ServingKind::VllmRuntime,
        ServingKind::InferenceService,
        ServingKind::LlmInferenceService,
        ServingKind::KaitoWorkspace,
        ServingKind::RayService,
        ServingKind::RayClusterFleet,
        ServingKind::StormService,
        ServingKind::NimService,
        ServingKind::KubeAiModel,
        ServingKind::OmeInferenceService,
        ServingKind::LlmazService,
        ServingKind::KthenaModelServing,
        ServingKind::DisaggregatedSet,
    ];

    /// The API groups of [`Self::ALL`], each once, in that order.
    pub fn groups() -> Vec<&'static str> {
        let mut groups = Vec::new();
        for kind in Self::ALL {
            if !groups.contains(&kind.group()) {
                groups.push(kind.group());
            }
        }
        groups
    }

    /// The API group its operator's CRD serves it in.
    pub fn group(self) -> &'static str {
        match self {
            ServingKind::VllmRuntime => "production-stack.vllm.ai",
            ServingKind::InferenceService | ServingKind::LlmInferenceService => "serving.kserve.io",
            ServingKind::KaitoWorkspace => "kaito.sh",
            ServingKind::RayService => "ray.io",
            ServingKind::RayClusterFleet | ServingKind::StormService => "orchestration.aibrix.ai",
            ServingKind::NimService => "apps.nvidia.com",
            ServingKind::KubeAiModel => "kubeai.org",
            ServingKind::OmeInferenceService => "ome.io",
            ServingKind::LlmazService => "inference.llmaz.io",
            ServingKind::KthenaModelServing => "workload.serving.volcano.sh",
            ServingKind::DisaggregatedSet => "disaggregatedset.x-k8s.io",
        }
    }

    /// The resource name its CRD serves it under (RBAC rules name it).
    pub fn plural(self) -> &'static str {
        match self {
            ServingKind::VllmRuntime => "vllmruntimes",
            ServingKind::InferenceService => "inferenceservices",
            ServingKind::LlmInferenceService => "llminferenceservices",
            ServingKind::KaitoWorkspace => "workspaces",
            ServingKind::RayService => "rayservices",
            ServingKind::RayClusterFleet => "rayclusterfleets",
            ServingKind::StormService => "stormservices",
            ServingKind::NimService => "nimservices",
            ServingKind::KubeAiModel => "models",
            ServingKind::OmeInferenceService => "inferenceservices",
            ServingKind::LlmazService => "services",
            ServingKind::KthenaModelServing => "modelservings",
            ServingKind::DisaggregatedSet => "disaggregatedsets",
        }
    }

    /// The kind of `kind` in API group `group`, when infera reads it.
    pub fn of(kind: &str, group: &str) -> Option<ServingKind> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == kind && k.group() == group)
    }
}

/// KServe's annotation choosing how an InferenceService is deployed.
pub const KSERVE_DEPLOYMENT_MODE: &str = "serving.kserve.io/deploymentMode";

/// True when an InferenceService's own annotation makes KServe render it as
/// Deployments (`RawDeployment`, or `Standard` as newer releases call it);
/// without it, the cluster's `inferenceservice-config` decides (KServe's
/// shipped default is `Serverless`: Knative).
pub fn kserve_raw_mode(annotations: Option<&std::collections::BTreeMap<String, String>>) -> bool {
    annotations
        .and_then(|a| a.get(KSERVE_DEPLOYMENT_MODE))
        .is_some_and(|m| matches!(m.as_str(), "RawDeployment" | "Standard"))
}

/// One serving object: its kind, metadata and the whole object as JSON.
#[derive(Debug, Clone)]
pub struct ServingObject {
    pub kind: ServingKind,
    pub metadata: ObjectMeta,
    pub object: serde_json::Value,
}

impl ServingObject {
    /// The value at a JSON pointer (`/spec/replicas`), if any.
    pub fn at(&self, pointer: &str) -> Option<&serde_json::Value> {
        self.object.pointer(pointer).filter(|v| !v.is_null())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_known_only_in_their_own_group() {
        assert_eq!(
            ServingKind::of("Workspace", "kaito.sh"),
            Some(ServingKind::KaitoWorkspace)
        );
        assert_eq!(ServingKind::of("Workspace", "tekton.dev"), None);
        assert_eq!(ServingKind::of("RayCluster", "ray.io"), None);
        let groups = ServingKind::groups();
        assert_eq!(groups.len(), 11, "{groups:?}");
        assert_eq!(
            ServingKind::of("InferenceService", "ome.io"),
            Some(ServingKind::OmeInferenceService)
        );
        for kind in ServingKind::ALL {
            assert_eq!(ServingKind::of(kind.name(), kind.group()), Some(kind));
            assert_eq!(ServingKind::of(kind.name(), "example.com"), None);
        }
    }

    #[test]
    fn only_the_objects_own_annotation_makes_kserve_raw() {
        let ann = |v: &str| {
            [(KSERVE_DEPLOYMENT_MODE.to_string(), v.to_string())]
                .into_iter()
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        assert!(kserve_raw_mode(Some(&ann("RawDeployment"))));
        assert!(kserve_raw_mode(Some(&ann("Standard"))));
        assert!(!kserve_raw_mode(Some(&ann("Serverless"))));
        assert!(!kserve_raw_mode(None));
    }
}
