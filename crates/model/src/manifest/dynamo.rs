//! A minimal typed view of NVIDIA Dynamo's `DynamoGraphDeployment`
//! (`nvidia.com/v1alpha1`): the fields whose rollout meaning is known.
//! Each service (`spec.services.NAME`) runs `replicas` copies; a service
//! with `multinode.nodeCount > 1` runs each copy as one group of that many
//! pods (a LeaderWorkerSet, or a Grove PodClique), replaced whole. The
//! worker's container is `extraPodSpec.mainContainer`; its GPUs are
//! `resources.limits.gpu` (else `requests.gpu`) per node.
//! (ai-dynamo/dynamo, `docs/kubernetes/api_reference.md`,
//! `examples/backends/*/deploy/disagg-multinode.yaml`.)

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Container;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::operator::IntOrText;

pub const GROUP: &str = "nvidia.com";
pub const KIND: &str = "DynamoGraphDeployment";

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
