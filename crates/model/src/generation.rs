//! Which Infera operator `infera` predicts: its generation (operator
//! semantics §8). Offline commands are told (`--operator`, the config key
//! `operator`); live ones read it off what the operator rendered
//! ([`detect`]).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Container;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::worker::{LABEL_DEPLOYMENT, LABEL_MANAGED_BY, MANAGED_BY_VALUE};

/// Path of the probe the operator before PR #176 injects.
pub const HEALTH_PATH: &str = "/health";

/// A generation of the Infera operator, as far as rolling a worker goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Generation {
    /// Before PR #176: every worker Deployment rolls surge-free
    /// (maxSurge 0, maxUnavailable 1) and the injected readiness probe is
    /// `GET /health` on the engine port.
    SurgeFree,
    /// PR #176 and later: surge-first only when probed `/ready` on the
    /// readiness port (operator semantics §2, §3).
    #[default]
    ProbeGatedSurge,
}

/// The generation names accepted on the command line and in files.
pub const GENERATION_NAMES: &[&str] = &["pre-176", "176", "latest"];

impl Generation {
    /// The newest generation `infera` knows (the default).
    pub const LATEST: Generation = Generation::ProbeGatedSurge;

    /// `pre-176` or `176`.
    pub fn as_str(self) -> &'static str {
        match self {
            Generation::SurgeFree => "pre-176",
            Generation::ProbeGatedSurge => "176",
        }
    }

    /// One human sentence: what this generation does to a worker.
    pub fn describe(self) -> &'static str {
        match self {
            Generation::SurgeFree => "before PR #176: surge-free, /health on the engine port",
            Generation::ProbeGatedSurge => {
                "PR #176 and later: surge-first when probed /ready on the readiness port"
            }
        }
    }

    /// True when this operator ever rolls a worker surge-first.
    pub fn surges(self) -> bool {
        self == Generation::ProbeGatedSurge
    }

    /// True when its workers check KV compatibility before they register
    /// (PR #176's barrier: a starting decode probes every registered
    /// prefill, a starting prefill moves a KV block to a registered decode;
    /// a failure is fatal). Before it a worker registers unchecked.
    pub fn kv_barrier(self) -> bool {
        self == Generation::ProbeGatedSurge
    }
}

impl std::fmt::Display for Generation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A generation name that is none of [`GENERATION_NAMES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown operator generation `{0}`; use one of: pre-176, 176, latest")]
pub struct UnknownGeneration(pub String);

impl std::str::FromStr for Generation {
    type Err = UnknownGeneration;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "pre-176" | "pre176" => Ok(Generation::SurgeFree),
            "176" | "latest" => Ok(Generation::ProbeGatedSurge),
            _ => Err(UnknownGeneration(s.to_string())),
        }
    }
}

impl Serialize for Generation {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Generation {
    /// A name, or the bare number `176` (YAML reads `operator: 176` as one).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        let text = match Raw::deserialize(d)? {
            Raw::Number(n) => n.to_string(),
            Raw::Text(s) => s,
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// What a live cluster says about its operator's generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "generation", content = "why", rename_all = "kebab-case")]
pub enum Detection {
    /// The rendered workers show this generation; `why` says which worker
    /// and what in it.
    Known(Generation, String),
    /// Nothing rendered decides it (no worker Deployment yet, only workers
    /// either generation renders alike, or workers that fit neither).
    Unknown(String),
}

impl Detection {
    pub fn generation(&self) -> Option<Generation> {
        match self {
            Detection::Known(g, _) => Some(*g),
            Detection::Unknown(_) => None,
        }
    }

    /// `pre-176`, `176` or `unknown`.
    pub fn label(&self) -> &'static str {
        self.generation().map_or("unknown", Generation::as_str)
    }

    /// One line for plans and reports.
    pub fn describe(&self) -> String {
        match self {
            Detection::Known(g, why) => format!("{g} ({}): {why}", g.describe()),
            Detection::Unknown(why) => format!("unknown: {why}"),
        }
    }
}

fn int(v: Option<&IntOrString>) -> Option<i32> {
    match v {
        Some(IntOrString::Int(n)) => Some(*n),
        _ => None,
    }
}

/// The probe of a container, as (path, integer port), when it is httpGet.
fn http_probe(c: &Container) -> Option<(&str, i32)> {
    let http = c.readiness_probe.as_ref()?.http_get.as_ref()?;
    Some((http.path.as_deref().unwrap_or("/"), int(Some(&http.port))?))
}

/// The generation one operator-rendered **worker** Deployment shows, read
/// off its strategy and its main container's readiness probe (§8):
///
/// - maxSurge 0 / maxUnavailable 1 with `GET /health` on a port the main
///   container declares → before #176;
/// - maxSurge 0 / maxUnavailable 1 although the main container is probed
///   `/ready` on its readiness port → before #176 (#176 would surge);
/// - maxSurge 1 / maxUnavailable 0 with `/ready` on the readiness port → #176;
/// - anything else (no probe: both render it alike) → unknown.
pub fn detect_deployment(d: &Deployment) -> Detection {
    let name = d.metadata.name.as_deref().unwrap_or("?");
    let Some(spec) = d.spec.as_ref() else {
        return Detection::Unknown(format!("deployment {name} has no spec"));
    };
    let rolling = spec
        .strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref());
    let surge = int(rolling.and_then(|r| r.max_surge.as_ref()));
    let unavailable = int(rolling.and_then(|r| r.max_unavailable.as_ref()));
    let Some(pod) = spec.template.spec.as_ref() else {
        return Detection::Unknown(format!("deployment {name} has no pod template"));
    };
    let main = crate::pod::main_container_index(pod);
    let Some(c) = pod.containers.get(main) else {
        return Detection::Unknown(format!("deployment {name} has no containers"));
    };
    let on_ready = crate::pod::container_probed_on_readiness_port(c);
    let declared = |port: i32| c.ports.iter().flatten().any(|p| p.container_port == port);
    let on_health = http_probe(c).is_some_and(|(path, port)| path == HEALTH_PATH && declared(port));
    match (surge, unavailable) {
        (Some(0), Some(1)) if on_health => Detection::Known(
            Generation::SurgeFree,
            format!(
                "deployment {name} rolls maxSurge 0 / maxUnavailable 1 with GET /health on its engine port"
            ),
        ),
        (Some(0), Some(1)) if on_ready => Detection::Known(
            Generation::SurgeFree,
            format!(
                "deployment {name} rolls maxSurge 0 / maxUnavailable 1 although it is probed /ready on its readiness port"
            ),
        ),
        (Some(1), Some(0)) if on_ready => Detection::Known(
            Generation::ProbeGatedSurge,
            format!(
                "deployment {name} rolls maxSurge 1 / maxUnavailable 0, probed /ready on its readiness port"
            ),
        ),
        _ => Detection::Unknown(format!(
            "deployment {name} (maxSurge {}, maxUnavailable {}, {}) is rendered alike by every generation or by none",
            surge.map_or("unset".into(), |n| n.to_string()),
            unavailable.map_or("unset".into(), |n| n.to_string()),
            http_probe(c).map_or(
                "no httpGet readiness probe".to_string(),
                |(p, port)| format!("probe GET {p} on {port}")
            ),
        )),
    }
}

/// One verdict from several worker Deployments of the same operator: the
/// generation they agree on; unknown when none decides or two disagree.
pub fn detect<'a>(workers: impl IntoIterator<Item = &'a Deployment>) -> Detection {
    let mut found: Option<(Generation, String)> = None;
    let mut last_unknown = None;
    for d in workers {
        match detect_deployment(d) {
            Detection::Known(g, why) => match &found {
                Some((seen, first)) if *seen != g => {
                    return Detection::Unknown(format!("the workers disagree: {first}, but {why}"));
                }
                Some(_) => {}
                None => found = Some((g, why)),
            },
            Detection::Unknown(why) => last_unknown = Some(why),
        }
    }
    match (found, last_unknown) {
        (Some((g, why)), _) => Detection::Known(g, why),
        (None, Some(why)) => Detection::Unknown(why),
        (None, None) => Detection::Unknown("no operator-rendered worker Deployment".to_string()),
    }
}

/// True when a Deployment was rendered by the operator (its
/// `app.kubernetes.io/managed-by` label).
pub fn operator_owned(d: &Deployment) -> bool {
    d.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_MANAGED_BY))
        .is_some_and(|v| v == MANAGED_BY_VALUE)
}

/// Per InferaDeployment (namespace, name): the generation its worker
/// Deployments show. Deployments that are not the operator's, or are not
/// workers (no engine in the main container), are ignored.
pub fn detect_per_deployment(deployments: &[Deployment]) -> BTreeMap<(String, String), Detection> {
    let mut groups: BTreeMap<(String, String), Vec<&Deployment>> = BTreeMap::new();
    for d in deployments.iter().filter(|d| operator_owned(d)) {
        let Some(idep) = d
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL_DEPLOYMENT))
        else {
            continue;
        };
        let runs_engine = d
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .and_then(|p| p.containers.get(crate::pod::main_container_index(p)))
            .is_some_and(crate::pod::container_runs_engine);
        if runs_engine {
            let ns = d.metadata.namespace.clone().unwrap_or_default();
            groups.entry((ns, idep.clone())).or_default().push(d);
        }
    }
    groups.into_iter().map(|(k, ds)| (k, detect(ds))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_round_trip() {
        for (text, g) in [
            ("pre-176", Generation::SurgeFree),
            ("176", Generation::ProbeGatedSurge),
            ("latest", Generation::ProbeGatedSurge),
            (" Pre-176 ", Generation::SurgeFree),
        ] {
            assert_eq!(text.parse::<Generation>(), Ok(g), "{text}");
        }
        assert!("175".parse::<Generation>().is_err());
        assert_eq!(Generation::default(), Generation::LATEST);
        assert_eq!(Generation::SurgeFree.to_string(), "pre-176");
        let from_yaml: Generation = serde_json::from_value(json!(176)).unwrap();
        assert_eq!(from_yaml, Generation::ProbeGatedSurge);
        let from_text: Generation = serde_json::from_value(json!("pre-176")).unwrap();
        assert_eq!(from_text, Generation::SurgeFree);
        assert!(serde_json::from_value::<Generation>(json!("v2")).is_err());
    }

    /// A worker Deployment with the given strategy and probe.
    fn worker(
        surge: i32,
        unavailable: i32,
        probe: Option<(&str, i32)>,
        ready_env: bool,
    ) -> Deployment {
        let mut c = json!({"name": "infera", "image": "x",
            "command": ["python3", "-m", "infera.engine.sglang"],
            "ports": [{"containerPort": 30000}]});
        if let Some((path, port)) = probe {
            c["readinessProbe"] = json!({"httpGet": {"path": path, "port": port}});
        }
        if ready_env {
            c["env"] = json!([{"name": "INFERA_READINESS_PORT", "value": "30090"}]);
        }
        serde_json::from_value(json!({
            "metadata": {"name": "d-decode", "namespace": "llm",
                "labels": {LABEL_MANAGED_BY: MANAGED_BY_VALUE, LABEL_DEPLOYMENT: "d"}},
            "spec": {"selector": {}, "strategy": {"type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}},
                "template": {"spec": {"containers": [c]}}}
        }))
        .unwrap()
    }

    #[test]
    fn detection_table() {
        let cases: &[(Deployment, Option<Generation>)] = &[
            (
                worker(0, 1, Some(("/health", 30000)), false),
                Some(Generation::SurgeFree),
            ),
            (
                worker(0, 1, Some(("/ready", 30090)), true),
                Some(Generation::SurgeFree),
            ),
            (
                worker(1, 0, Some(("/ready", 30090)), true),
                Some(Generation::ProbeGatedSurge),
            ),
            // No probe: both generations render it surge-free.
            (worker(0, 1, None, true), None),
            // /health on a port the container does not declare.
            (worker(0, 1, Some(("/health", 8080)), false), None),
            // Surge with /health: neither generation renders that.
            (worker(1, 0, Some(("/health", 30000)), false), None),
            // /ready without a knowable readiness port (the env is absent
            // here, so the default 30090 counts): a different port is not.
            (worker(1, 0, Some(("/ready", 30091)), true), None),
        ];
        for (i, (d, want)) in cases.iter().enumerate() {
            assert_eq!(detect_deployment(d).generation(), *want, "case {i}");
        }
    }

    #[test]
    fn several_workers() {
        let pre = worker(0, 1, Some(("/health", 30000)), false);
        let silent = worker(0, 1, None, true);
        let new = worker(1, 0, Some(("/ready", 30090)), true);
        assert_eq!(
            detect([&silent, &pre]).generation(),
            Some(Generation::SurgeFree)
        );
        assert_eq!(detect([&pre, &new]).generation(), None, "they disagree");
        assert_eq!(detect([&silent]).label(), "unknown");
        assert_eq!(detect([]).label(), "unknown");
        let per = detect_per_deployment(&[pre, silent]);
        assert_eq!(
            per.get(&("llm".to_string(), "d".to_string()))
                .and_then(Detection::generation),
            Some(Generation::SurgeFree)
        );
    }
}
