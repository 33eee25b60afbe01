//! Scenario files: the cluster a simulation starts from.
//!
//! A scenario is YAML (every key optional except `name`):
//!
//! ```yaml
//! name: my-cluster
//! description: One line shown by `infera sim scenarios`.
//! seed: 42                      # jitter and generated names derive from it
//! operator: pre-176             # the operator generation the world's operator
//!                               # renders as: pre-176, 176 or latest (default)
//! nodes:
//!   - name: gpu                 # with `count`, nodes are gpu-0 .. gpu-(count-1)
//!     count: 3
//!     labels: {node.kubernetes.io/instance-type: mi355x}
//!     allocatable: {cpu: "128", memory: 2Ti, amd.com/gpu: "8", pods: "110"}
//!     taints: [{key: amd.com/gpu, value: present, effect: NoSchedule}]
//! timings:                      # scenario seconds
//!   imagePull: 20               # per pod, before containers start
//!   weightLoad: 140             # infera worker: container start -> weights loaded
//!   weightLoadJitter: 10        # +/- uniform, from the seed
//!   barrier: 5                  # prefill: KV transfer to a registered decode
//!   teardown: 10                # after the readiness port closes (bounded by grace)
//!   restartBackoff: 10          # crashed container -> restarted
//!   ttft: 0.2                   # engine: request received -> first token
//!   tokenRate: 50               # engine: tokens per second after the first
//!   routerLag: 1                # router: a pod's registration change -> applied
//!   recomputeTtft: 2            # decode: first token after a KV mismatch under
//!                               # kv_load_failure_policy recompute (its own prefill)
//! manifests:                    # created at start, in order (inline objects)
//!   - {apiVersion: v1, kind: Namespace, metadata: {name: llm}}
//! faults: {errorRate: 0.01}     # API faults, see `infera sim serve --help`
//! podFaults:                    # controller-level faults, scenario time
//!   - {at: 300, crash: {namespace: llm, podPrefix: demo-decode}}
//!   - {at: 600, nodeNotReady: {node: gpu-1, duration: 60}}
//! selfHeal:                     # a GitOps controller's drift correction (infera-sim-world, selfheal.rs):
//!   manager: kustomize-controller  # field manager of its server-side applies
//!   after: 20                   # scenario seconds a drift lasts before it re-applies
//!   every: 2                    # scenario seconds between checks
//! ```
//!
//! Every node gets `kubernetes.io/hostname=<name>`, `kubernetes.io/os=linux`
//! and a `Ready=True` condition.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use infera_sim_core::faults::FaultConfig;

const BUILTINS: [(&str, &str); 8] = [
    ("pd-1p1d", include_str!("scenarios/pd-1p1d.yaml")),
    (
        "pd-1p1d-gitops",
        include_str!("scenarios/pd-1p1d-gitops.yaml"),
    ),
    (
        "pd-1p1d-skip-probe",
        include_str!("scenarios/pd-1p1d-skip-probe.yaml"),
    ),
    (
        "pd-1p1d-pre176",
        include_str!("scenarios/pd-1p1d-pre176.yaml"),
    ),
    (
        "whole-node-pinned",
        include_str!("scenarios/whole-node-pinned.yaml"),
    ),
    (
        "surge-no-readiness",
        include_str!("scenarios/surge-no-readiness.yaml"),
    ),
    ("drain", include_str!("scenarios/drain.yaml")),
    (
        "vllm-short-drain",
        include_str!("scenarios/vllm-short-drain.yaml"),
    ),
];

/// Errors loading or applying a scenario; each names the file (or built-in).
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error(
        "no built-in scenario or file named `{0}`; run `infera sim scenarios` to list the built-ins"
    )]
    NotFound(String),
    #[error("cannot read scenario file {file}: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}:{line}: invalid scenario: {message}")]
    Parse {
        file: String,
        line: u64,
        message: String,
    },
    #[error("{file}: manifest {index} ({what}): {message}")]
    Manifest {
        file: String,
        index: usize,
        what: String,
        message: String,
    },
}

/// A node template (expanded to `count` nodes when `count` is set).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    #[serde(default)]
    pub count: Option<u32>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub allocatable: BTreeMap<String, String>,
    #[serde(default)]
    pub taints: Vec<Value>,
}

/// Scenario-time durations, in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Timings {
    pub image_pull: f64,
    pub weight_load: f64,
    pub weight_load_jitter: f64,
    pub barrier: f64,
    pub teardown: f64,
    pub restart_backoff: f64,
    /// The engine's time to first token.
    pub ttft: f64,
    /// The engine's tokens per second after the first.
    pub token_rate: f64,
    /// How late the router applies a change of a worker's registration
    /// (the propagation of its pod watch).
    pub router_lag: f64,
    /// A decode's time to first token when it prefills a request itself
    /// (`kv_load_failure_policy: recompute` after a KV handshake mismatch).
    pub recompute_ttft: f64,
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            image_pull: 20.0,
            weight_load: 140.0,
            weight_load_jitter: 10.0,
            barrier: 5.0,
            teardown: 10.0,
            restart_backoff: 10.0,
            ttft: 0.2,
            token_rate: 50.0,
            router_lag: 1.0,
            recompute_ttft: 2.0,
        }
    }
}

/// Which pods a crash fault hits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CrashTarget {
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// Pods whose name starts with this (all pods of the namespace when empty).
    #[serde(default)]
    pub pod_prefix: String,
}

fn default_namespace() -> String {
    "default".to_string()
}

/// A node going NotReady for a while.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeNotReady {
    pub node: String,
    /// Scenario seconds until it is Ready again (forever when absent).
    #[serde(default)]
    pub duration: Option<f64>,
}

/// A controller-level fault at a scenario time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodFault {
    /// Scenario seconds after start.
    pub at: f64,
    #[serde(default)]
    pub crash: Option<CrashTarget>,
    #[serde(default)]
    pub node_not_ready: Option<NodeNotReady>,
}

/// A loaded scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub seed: u64,
    /// The Infera operator generation the world's operator renders as.
    #[serde(default)]
    pub operator: infera_model::generation::Generation,
    #[serde(default)]
    pub nodes: Vec<NodeSpec>,
    #[serde(default)]
    pub timings: Timings,
    #[serde(default)]
    pub manifests: Vec<Value>,
    #[serde(default)]
    pub faults: FaultConfig,
    #[serde(default)]
    pub pod_faults: Vec<PodFault>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_heal: Option<SelfHeal>,
}

/// A GitOps controller that re-applies the manifests (every one but the
/// Namespaces) when their applied fields drift.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelfHeal {
    /// Its field manager (`kustomize-controller`, `argocd-controller`).
    pub manager: String,
    /// Scenario seconds a drift lasts before it re-applies.
    #[serde(default = "default_heal_after")]
    pub after: f64,
    /// Scenario seconds between checks.
    #[serde(default = "default_heal_every")]
    pub every: f64,
}

fn default_heal_after() -> f64 {
    20.0
}

fn default_heal_every() -> f64 {
    2.0
}

/// The built-in scenarios: name and description (the file's `description:` line).
pub fn builtins() -> Vec<(&'static str, &'static str)> {
    BUILTINS
        .iter()
        .map(|(name, text)| {
            let description = text
                .lines()
                .find_map(|l| l.strip_prefix("description: "))
                .map(|d| d.trim().trim_matches('"'))
                .unwrap_or("");
            (*name, description)
        })
        .collect()
}

fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    serde_saphyr::from_str::<Scenario>(text).map_err(|e| ScenarioError::Parse {
        file: file.to_string(),
        line: e.location().map(|l| l.line()).unwrap_or(0),
        message: e.to_string(),
    })
}

impl Scenario {
    /// A built-in by name, else a file path.
    pub fn load(name_or_path: &str) -> Result<Scenario, ScenarioError> {
        if let Some((name, text)) = BUILTINS.iter().find(|(n, _)| *n == name_or_path) {
            return parse(&format!("built-in scenario {name}"), text);
        }
        let path = Path::new(name_or_path);
        if !path.exists() {
            return Err(ScenarioError::NotFound(name_or_path.to_string()));
        }
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
            file: name_or_path.to_string(),
            source,
        })?;
        parse(name_or_path, &text)
    }

    /// Parse scenario YAML text (`file` names it in errors).
    pub fn from_yaml(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
        parse(file, text)
    }

    /// The node objects this scenario starts with.
    pub fn node_objects(&self) -> Vec<Value> {
        let mut out = Vec::new();
        for spec in &self.nodes {
            let names: Vec<String> = match spec.count {
                Some(n) => (0..n).map(|i| format!("{}-{i}", spec.name)).collect(),
                None => vec![spec.name.clone()],
            };
            for name in names {
                let mut labels = spec.labels.clone();
                labels.insert("kubernetes.io/hostname".into(), name.clone());
                labels.insert("kubernetes.io/os".into(), "linux".into());
                labels.insert("kubernetes.io/arch".into(), "amd64".into());
                let mut allocatable = spec.allocatable.clone();
                allocatable
                    .entry("pods".into())
                    .or_insert_with(|| "110".into());
                let now = infera_sim_core::clock::now_rfc3339();
                out.push(json!({
                    "apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "labels": labels},
                    "spec": {"taints": if spec.taints.is_empty() { Value::Null } else { Value::from(spec.taints.clone()) }},
                    "status": {
                        "capacity": allocatable.clone(),
                        "allocatable": allocatable,
                        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "kubelet is posting ready status",
                            "lastHeartbeatTime": now, "lastTransitionTime": now}],
                        "nodeInfo": {"kubeletVersion": "v1.33.0", "containerRuntimeVersion": "containerd://1.7.0",
                            "osImage": "infera sim", "architecture": "amd64", "operatingSystem": "linux"},
                        "addresses": [{"type": "Hostname", "address": name}]
                    }
                }));
            }
        }
        for node in &mut out {
            if let Some(spec) = node.get_mut("spec").and_then(Value::as_object_mut) {
                spec.retain(|_, v| !v.is_null());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// That each also seeds a store is `infera_sim`'s test (`seed.rs`).
    #[test]
    fn every_builtin_parses() {
        for (name, description) in builtins() {
            let scenario = Scenario::load(name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(scenario.name, name);
            assert!(!description.is_empty(), "{name} has a description");
        }
    }

    #[test]
    fn operator_generation_key() {
        use infera_model::generation::Generation;
        let load = |name: &str| Scenario::load(name).map(|s| s.operator).ok();
        assert_eq!(load("pd-1p1d-pre176"), Some(Generation::SurgeFree));
        assert_eq!(load("pd-1p1d"), Some(Generation::LATEST));
        let parsed = |text: &str| Scenario::from_yaml("s.yaml", text).map(|s| s.operator);
        assert_eq!(
            parsed("name: x\noperator: 176\n").ok(),
            Some(Generation::ProbeGatedSurge)
        );
        assert_eq!(
            parsed("name: x\noperator: latest\n").ok(),
            Some(Generation::ProbeGatedSurge)
        );
        let err = parsed("name: x\noperator: v2\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with("s.yaml:2:") && err.contains("pre-176, 176, latest"),
            "{err}"
        );
    }

    #[test]
    fn errors_name_file_and_line() {
        let err = Scenario::from_yaml("bad.yaml", "name: x\nnodes:\n  - name: a\n    bogus: 1\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.starts_with("bad.yaml:4:"), "{err}");
        let missing = Scenario::load("/nonexistent/x.yaml")
            .err()
            .map(|e| e.to_string());
        assert!(missing.unwrap_or_default().contains("infera sim scenarios"));
    }

    #[test]
    fn node_count_expands() {
        let s = Scenario::from_yaml(
            "t",
            "name: t\nnodes:\n  - {name: gpu, count: 3, allocatable: {amd.com/gpu: '8'}}\n",
        );
        let nodes = s.map(|s| s.node_objects()).unwrap_or_default();
        let names: Vec<&str> = nodes
            .iter()
            .filter_map(|n| n.pointer("/metadata/name").and_then(Value::as_str))
            .collect();
        assert_eq!(names, ["gpu-0", "gpu-1", "gpu-2"]);
    }
}
