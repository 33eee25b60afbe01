//! The kinds the simulator serves (below `store` and `api`, which both use it).
//! The custom resources' identity comes from `infera_model::api`.

use infera_model::api::{INFERA_DEPLOYMENT, LEADER_WORKER_SET};

/// The kinds the simulator serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Namespace,
    Node,
    Pod,
    Service,
    Event,
    Deployment,
    ReplicaSet,
    StatefulSet,
    InferaDeployment,
    LeaderWorkerSet,
    PodDisruptionBudget,
}

impl Kind {
    pub const ALL: [Kind; 11] = [
        Kind::Namespace,
        Kind::Node,
        Kind::Pod,
        Kind::Service,
        Kind::Event,
        Kind::Deployment,
        Kind::ReplicaSet,
        Kind::StatefulSet,
        Kind::InferaDeployment,
        Kind::LeaderWorkerSet,
        Kind::PodDisruptionBudget,
    ];

    /// API group ("" for core).
    pub fn group(self) -> &'static str {
        match self {
            Kind::Namespace | Kind::Node | Kind::Pod | Kind::Service | Kind::Event => "",
            Kind::Deployment | Kind::ReplicaSet | Kind::StatefulSet => "apps",
            Kind::InferaDeployment => INFERA_DEPLOYMENT.group,
            Kind::LeaderWorkerSet => LEADER_WORKER_SET.group,
            Kind::PodDisruptionBudget => "policy",
        }
    }

    pub fn version(self) -> &'static str {
        match self {
            Kind::Namespace | Kind::Node | Kind::Pod | Kind::Service | Kind::Event => "v1",
            Kind::Deployment | Kind::ReplicaSet | Kind::StatefulSet => "v1",
            Kind::InferaDeployment => INFERA_DEPLOYMENT.version,
            Kind::LeaderWorkerSet => LEADER_WORKER_SET.version,
            Kind::PodDisruptionBudget => "v1",
        }
    }

    /// `apiVersion` as written in objects (`v1`, `apps/v1`, ...).
    pub fn api_version(self) -> &'static str {
        match self {
            Kind::Namespace | Kind::Node | Kind::Pod | Kind::Service | Kind::Event => "v1",
            Kind::Deployment | Kind::ReplicaSet | Kind::StatefulSet => "apps/v1",
            Kind::InferaDeployment => INFERA_DEPLOYMENT.api_version,
            Kind::LeaderWorkerSet => LEADER_WORKER_SET.api_version,
            Kind::PodDisruptionBudget => "policy/v1",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Kind::Namespace => "Namespace",
            Kind::Node => "Node",
            Kind::Pod => "Pod",
            Kind::Service => "Service",
            Kind::Event => "Event",
            Kind::Deployment => "Deployment",
            Kind::ReplicaSet => "ReplicaSet",
            Kind::StatefulSet => "StatefulSet",
            Kind::InferaDeployment => INFERA_DEPLOYMENT.kind,
            Kind::LeaderWorkerSet => LEADER_WORKER_SET.kind,
            Kind::PodDisruptionBudget => "PodDisruptionBudget",
        }
    }

    pub fn plural(self) -> &'static str {
        match self {
            Kind::Namespace => "namespaces",
            Kind::Node => "nodes",
            Kind::Pod => "pods",
            Kind::Service => "services",
            Kind::Event => "events",
            Kind::Deployment => "deployments",
            Kind::ReplicaSet => "replicasets",
            Kind::StatefulSet => "statefulsets",
            Kind::InferaDeployment => INFERA_DEPLOYMENT.plural,
            Kind::LeaderWorkerSet => LEADER_WORKER_SET.plural,
            Kind::PodDisruptionBudget => "poddisruptionbudgets",
        }
    }

    pub fn singular(self) -> &'static str {
        match self {
            Kind::Namespace => "namespace",
            Kind::Node => "node",
            Kind::Pod => "pod",
            Kind::Service => "service",
            Kind::Event => "event",
            Kind::Deployment => "deployment",
            Kind::ReplicaSet => "replicaset",
            Kind::StatefulSet => "statefulset",
            Kind::InferaDeployment => INFERA_DEPLOYMENT.singular,
            Kind::LeaderWorkerSet => LEADER_WORKER_SET.singular,
            Kind::PodDisruptionBudget => "poddisruptionbudget",
        }
    }

    pub fn short_names(self) -> &'static [&'static str] {
        match self {
            Kind::Namespace => &["ns"],
            Kind::Node => &["no"],
            Kind::Pod => &["po"],
            Kind::Service => &["svc"],
            Kind::Event => &["ev"],
            Kind::Deployment => &["deploy"],
            Kind::ReplicaSet => &["rs"],
            Kind::StatefulSet => &["sts"],
            Kind::InferaDeployment => INFERA_DEPLOYMENT.short_names,
            Kind::LeaderWorkerSet => LEADER_WORKER_SET.short_names,
            Kind::PodDisruptionBudget => &["pdb"],
        }
    }

    pub fn namespaced(self) -> bool {
        !matches!(self, Kind::Namespace | Kind::Node)
    }

    /// Whether the kind has a `status` subresource (so a main-resource update
    /// keeps the stored status and `update_status` only changes status).
    pub fn has_status(self) -> bool {
        !matches!(self, Kind::Event)
    }

    /// The kind served at `/<group>/<version>/<plural>`.
    pub fn from_plural(group: &str, version: &str, plural: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.group() == group && k.version() == version && k.plural() == plural)
    }

    /// The kind of an `apiVersion` + `kind` pair from an object.
    pub fn from_api_version_kind(api_version: &str, kind: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.api_version() == api_version && k.kind() == kind)
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.plural())
    }
}
