//! The LeaderWorkerSet ([`LEADER_WORKER_SET`]): a minimal typed view, and
//! the defaults its API server applies (upstream `SetDefaults_LeaderWorkerSet`
//! and the CRD's defaults, leaderworkerset.x-k8s.io/v1), one home for the
//! operator's render, lint, the admission policies, the rollout's plan, the
//! monitor and the simulator's LeaderWorkerSet controller.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Serialize};

use crate::api::LEADER_WORKER_SET;
use crate::operator::IntOrText;

/// `spec.replicas`: the number of groups.
pub const DEFAULT_REPLICAS: i32 = 1;
/// `spec.leaderWorkerTemplate.size`: the pods of a group, leader included.
pub const DEFAULT_SIZE: i32 = 1;
/// `spec.rolloutStrategy.type`, the only one there is.
pub const ROLLING_UPDATE: &str = "RollingUpdate";
/// `rollingUpdateConfiguration.maxUnavailable`: one group down at a time.
pub const DEFAULT_MAX_UNAVAILABLE: i32 = 1;
/// `rollingUpdateConfiguration.maxSurge`: no extra group.
pub const DEFAULT_MAX_SURGE: i32 = 0;
/// `leaderWorkerTemplate.restartPolicy` whereby a pod of a group deleted or
/// restarted takes its whole group with it; the default.
pub const RECREATE_GROUP_ON_POD_RESTART: &str = "RecreateGroupOnPodRestart";
pub const DEFAULT_RESTART_POLICY: &str = RECREATE_GROUP_ON_POD_RESTART;
/// `spec.startupPolicy`: the workers are created with the leader pod.
pub const DEFAULT_STARTUP_POLICY: &str = "LeaderCreated";

/// A LeaderWorkerSet, the fields infera reads and the operator writes.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaderWorkerSet {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: LeaderWorkerSetSpec,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaderWorkerSetSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<IntOrText>,
    #[serde(default)]
    pub leader_worker_template: LeaderWorkerTemplate,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_strategy: Option<LwsRolloutStrategy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_policy: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaderWorkerTemplate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<IntOrText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_template: Option<PodTemplateSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_template: Option<PodTemplateSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LwsRolloutStrategy {
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update_configuration: Option<LwsRollingUpdate>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LwsRollingUpdate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,
}

impl LeaderWorkerSet {
    /// A LeaderWorkerSet of `replicas` groups of `size` pods from
    /// `worker_template`, every defaulted field written out as the API
    /// server would fill it (what the infera operator creates, §3).
    pub fn with_defaults(
        metadata: ObjectMeta,
        worker_template: PodTemplateSpec,
        replicas: i32,
        size: i32,
    ) -> LeaderWorkerSet {
        LeaderWorkerSet {
            api_version: Some(LEADER_WORKER_SET.api_version.to_string()),
            kind: Some(LEADER_WORKER_SET.kind.to_string()),
            metadata,
            spec: LeaderWorkerSetSpec {
                replicas: Some(IntOrText::Int(i64::from(replicas))),
                leader_worker_template: LeaderWorkerTemplate {
                    size: Some(IntOrText::Int(i64::from(size))),
                    leader_template: None,
                    worker_template: Some(worker_template),
                    restart_policy: Some(DEFAULT_RESTART_POLICY.to_string()),
                },
                rollout_strategy: Some(LwsRolloutStrategy {
                    type_: Some(ROLLING_UPDATE.to_string()),
                    rolling_update_configuration: Some(LwsRollingUpdate {
                        max_unavailable: Some(IntOrString::Int(DEFAULT_MAX_UNAVAILABLE)),
                        max_surge: Some(IntOrString::Int(DEFAULT_MAX_SURGE)),
                    }),
                }),
                startup_policy: Some(DEFAULT_STARTUP_POLICY.to_string()),
            },
        }
    }

    /// `spec.replicas`, [`DEFAULT_REPLICAS`] when absent; None when it is
    /// not a whole number the API would take (a placeholder).
    pub fn replicas(&self) -> Option<i32> {
        count_or(self.spec.replicas.as_ref(), DEFAULT_REPLICAS)
    }

    /// `leaderWorkerTemplate.size`, [`DEFAULT_SIZE`] when absent; None when
    /// it is not a whole number.
    pub fn size(&self) -> Option<i32> {
        count_or(self.spec.leader_worker_template.size.as_ref(), DEFAULT_SIZE)
    }

    /// The rolling update as written (None: the defaults apply).
    pub fn rolling_update(&self) -> Option<&LwsRollingUpdate> {
        self.spec
            .rollout_strategy
            .as_ref()
            .and_then(|r| r.rolling_update_configuration.as_ref())
    }
}

fn count_or(v: Option<&IntOrText>, default: i32) -> Option<i32> {
    v.map_or(Some(default), |n| {
        n.as_i64().and_then(|n| i32::try_from(n).ok())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// One row a case: the LeaderWorkerSet's spec as written → (replicas,
    /// size) as read, the defaults filling what is absent.
    #[test]
    fn counts_default_where_absent() {
        let cases = [
            (json!({}), (Some(1), Some(1))),
            (json!({"replicas": 3}), (Some(3), Some(1))),
            (
                json!({"leaderWorkerTemplate": {"size": 4}}),
                (Some(1), Some(4)),
            ),
            (
                json!({"replicas": "${N}", "leaderWorkerTemplate": {"size": "2"}}),
                (None, Some(2)),
            ),
            (json!({"replicas": 5_000_000_000_i64}), (None, Some(1))),
        ];
        for (spec, want) in cases {
            let lws: LeaderWorkerSet = serde_json::from_value(json!({"spec": spec})).unwrap();
            assert_eq!((lws.replicas(), lws.size()), want, "{spec}");
        }
    }

    /// One row a field: what the operator writes (every default spelled
    /// out) → its JSON pointer and upstream's default value.
    #[test]
    fn written_defaults_are_upstreams() {
        let lws = LeaderWorkerSet::with_defaults(
            ObjectMeta::default(),
            PodTemplateSpec::default(),
            DEFAULT_REPLICAS,
            DEFAULT_SIZE,
        );
        let v = serde_json::to_value(&lws).unwrap();
        let cases = [
            ("/apiVersion", json!("leaderworkerset.x-k8s.io/v1")),
            ("/kind", json!("LeaderWorkerSet")),
            ("/spec/replicas", json!(1)),
            ("/spec/leaderWorkerTemplate/size", json!(1)),
            (
                "/spec/leaderWorkerTemplate/restartPolicy",
                json!("RecreateGroupOnPodRestart"),
            ),
            ("/spec/rolloutStrategy/type", json!("RollingUpdate")),
            (
                "/spec/rolloutStrategy/rollingUpdateConfiguration/maxUnavailable",
                json!(1),
            ),
            (
                "/spec/rolloutStrategy/rollingUpdateConfiguration/maxSurge",
                json!(0),
            ),
            ("/spec/startupPolicy", json!("LeaderCreated")),
        ];
        for (pointer, want) in cases {
            assert_eq!(v.pointer(pointer), Some(&want), "{pointer}");
        }
        assert!(lws.rolling_update().is_some());
        let bare: LeaderWorkerSet = serde_json::from_value(json!({"spec": {}})).unwrap();
        assert!(
            bare.rolling_update().is_none(),
            "absent: the defaults apply"
        );
    }
}
