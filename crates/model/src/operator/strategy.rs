//! How a rendered workload will roll (§3), and why: the operator's choice
//! of rolling update for each service, predicted from what it renders.

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Serialize};

use super::{Component, ServiceSpec};
use crate::generation::Generation;
use crate::lws::{DEFAULT_MAX_SURGE, DEFAULT_MAX_UNAVAILABLE};
use crate::pod::probed_on_readiness_port;
use crate::rolling::{APPS_V1_DEFAULT, Roll};
use crate::worker::{READINESS_PORT_ENV, READY_PATH, ReadinessPort};

/// How the rendered workload will roll (§3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// RollingUpdate maxSurge 1 / maxUnavailable 0: replacement first.
    SurgeFirst,
    /// RollingUpdate maxSurge 0 / maxUnavailable 1: the old pod goes first.
    OldPodFirst,
    /// LeaderWorkerSet rolling update (maxUnavailable 1, maxSurge 0).
    Lws,
    /// Servers keep the apps/v1 default 25 % / 25 %.
    ServerDefault,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::SurgeFirst => "surge-first",
            Strategy::OldPodFirst => "old-pod-first",
            Strategy::Lws => "lws",
            Strategy::ServerDefault => "server-default",
        }
    }

    /// The maxSurge and maxUnavailable the operator writes on the rendered
    /// Deployment.
    pub fn rolling_update(self) -> (IntOrString, IntOrString) {
        match self {
            Strategy::SurgeFirst => (IntOrString::Int(1), IntOrString::Int(0)),
            Strategy::OldPodFirst | Strategy::Lws => (IntOrString::Int(0), IntOrString::Int(1)),
            Strategy::ServerDefault => (
                IntOrString::String(APPS_V1_DEFAULT.to_string()),
                IntOrString::String(APPS_V1_DEFAULT.to_string()),
            ),
        }
    }

    /// How the rendered workload replaces its `replicas` pods (a
    /// LeaderWorkerSet with its defaults, else the Deployment as rendered).
    pub fn roll(self, replicas: i64) -> Roll {
        if self == Strategy::Lws {
            return Roll::lws(None, None, replicas);
        }
        let (surge, unavailable) = self.rolling_update();
        Roll::deployment(None, Some(&surge), Some(&unavailable), replicas)
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What decides a rendered workload's strategy besides its pod.
pub(super) struct StrategyFacts {
    pub(super) component: Component,
    pub(super) multinode: bool,
    pub(super) generation: Generation,
    pub(super) probe_injected: bool,
}

pub(super) fn predict_strategy(
    facts: &StrategyFacts,
    svc: &ServiceSpec,
    pod: &PodSpec,
    readiness: &ReadinessPort,
) -> (Strategy, String) {
    let StrategyFacts {
        component,
        multinode,
        generation,
        probe_injected,
    } = *facts;
    if multinode {
        return (
            Strategy::Lws,
            format!(
                "numberOfNodes > 1: a LeaderWorkerSet without a readiness probe, rolled by the LWS \
                 rolling update (maxUnavailable {DEFAULT_MAX_UNAVAILABLE}, maxSurge {DEFAULT_MAX_SURGE})"
            ),
        );
    }
    if component == Component::Server {
        return (
            Strategy::ServerDefault,
            "a server keeps the apps/v1 default rolling update (maxSurge 25%, maxUnavailable 25%)"
                .to_string(),
        );
    }
    if !generation.surges() {
        return (
            Strategy::OldPodFirst,
            "the operator before PR #176 rolls every worker surge-free → maxSurge 0, \
             maxUnavailable 1"
                .to_string(),
        );
    }
    if probed_on_readiness_port(pod) {
        let how = if probe_injected {
            format!(
                "the operator injects httpGet {READY_PATH} on readiness port {}",
                readiness.describe()
            )
        } else {
            format!(
                "a container's own readinessProbe is httpGet {READY_PATH} on its readiness port"
            )
        };
        return (
            Strategy::SurgeFirst,
            format!("probed on the readiness port ({how}) → maxSurge 1, maxUnavailable 0"),
        );
    }
    let cause = if svc.skip_readiness_probe.unwrap_or(false) {
        "skipReadinessProbe: true, so no probe is injected".to_string()
    } else if !readiness.is_knowable() {
        format!(
            "{READINESS_PORT_ENV} is {}, so no probe is injected",
            readiness.describe()
        )
    } else {
        "the main container has its own readinessProbe that is not httpGet /ready on the integer \
         readiness port, so none is injected"
            .to_string()
    };
    (
        Strategy::OldPodFirst,
        format!("not probed on the readiness port ({cause}) → maxSurge 0, maxUnavailable 1"),
    )
}
