//! A minimal typed view of NVIDIA Dynamo's `DynamoGraphDeployment`
//! (`nvidia.com/v1alpha1`): the fields whose rollout meaning is known.
//! Each service (`spec.services.NAME`) runs `replicas` copies; a service
//! with `multinode.nodeCount > 1` runs each copy as one group of that many
//! pods (a LeaderWorkerSet, or a Grove PodClique), replaced whole. The
//! worker's container is `extraPodSpec.mainContainer`; its GPUs are
//! `resources.limits.gpu` (else `requests.gpu`) per node.
//! (ai-dynamo/dynamo, `docs/kubernetes/api_reference.md`,
//! `examples/backends/*/deploy/disagg-multinode.yaml`.)
//!
//! `nvidia.com/v1beta1` lists the same services as `spec.components`, each
//! with its `name`, `type` (`worker`, `prefill`, `decode`, `frontend`, …),
//! `replicas`, `multinode.nodeCount` and a native `podTemplate` whose
//! container `main` is the one the operator fills in (its GPUs are that
//! container's own `resources`): the ten v1alpha1 pod fields
//! (`resources`, `extraPodSpec`, …) are gone (ai-dynamo/dynamo
//! `deploy/operator/api/v1beta1/dynamographdeployment_types.go` at
//! 0fddc01b37244c4cfa5bcfd1c2e4f1a577ee833c, `Components`;
//! `dynamocomponentdeployment_types.go` at
//! 50820f5b16d01bf85205a5fa649e76ff68300c65,
//! `DynamoComponentDeploymentSharedSpec`, `MainContainerName`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::operator::IntOrText;

pub const GROUP: &str = "nvidia.com";
pub const KIND: &str = "DynamoGraphDeployment";
/// The API versions whose fields lint reads; any other is named as skipped.
pub const VERSIONS: [&str; 2] = ["v1alpha1", "v1beta1"];
/// The container of a v1beta1 `podTemplate` the operator fills in.
pub const MAIN_CONTAINER: &str = "main";

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamoGraphDeployment {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: DynamoSpec,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamoSpec {
    #[serde(default)]
    pub services: BTreeMap<String, DynamoService>,
    /// v1beta1: the services as a list.
    #[serde(default)]
    pub components: Vec<DynamoComponent>,
}

/// One entry of v1beta1's `spec.components`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamoComponent {
    #[serde(default)]
    pub name: String,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub component_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<IntOrText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multinode: Option<DynamoMultinode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplateSpec>,
}

impl DynamoComponent {
    /// True for the types that run an engine (`worker`, `prefill`, `decode`).
    pub fn is_worker(&self) -> bool {
        matches!(
            self.component_type.as_deref(),
            Some("worker" | "prefill" | "decode")
        )
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamoService {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_component_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<IntOrText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multinode: Option<DynamoMultinode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<DynamoResources>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_pod_spec: Option<DynamoPodSpec>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamoMultinode {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_count: Option<IntOrText>,
}

/// `resources: {requests: {gpu: "1"}, limits: {gpu: "1"}}` (strings or numbers).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamoResources {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<BTreeMap<String, IntOrText>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<BTreeMap<String, IntOrText>>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamoPodSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub main_container: Option<Container>,
}

impl DynamoService {
    /// GPUs per pod (`limits.gpu`, else `requests.gpu`), when a plain integer.
    pub fn gpus(&self) -> Option<i64> {
        let r = self.resources.as_ref()?;
        [r.limits.as_ref(), r.requests.as_ref()]
            .into_iter()
            .flatten()
            .find_map(|m| m.get("gpu"))
            .and_then(IntOrText::as_i64)
    }
}
