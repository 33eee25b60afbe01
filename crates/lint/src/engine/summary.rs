//! What a run counts and what it leaves out: input errors, the summary,
//! and the skipped inputs and kinds with why each is skipped.

use serde::Serialize;

use infera_model::manifest::Node;

use super::FileOutcome;

/// A file or document that could not be read or parsed. Never hides the
/// findings of other documents.
#[derive(Debug, Clone, Serialize)]
pub struct InputError {
    pub file: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// What is wrong and what to do.
    pub message: String,
}

impl From<infera_model::manifest::ManifestError> for InputError {
    fn from(e: infera_model::manifest::ManifestError) -> Self {
        InputError {
            file: e.file,
            line: e.line,
            column: e.column,
            message: e.message,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct LintSummary {
    pub files: usize,
    pub documents: usize,
    /// Objects of the analysed kinds (InferaDeployment, Deployment, LeaderWorkerSet).
    pub objects: usize,
    /// Documents of other kinds, skipped.
    pub skipped: usize,
    pub errors: usize,
    pub warnings: usize,
    /// Objects skipped without a word: kinds that run nothing (the closed
    /// list of `engine/unread.rs`). `skipped` less this is what is named in
    /// `skipped_kinds`.
    pub silent: usize,
    /// Every kind skipped that is not silent, with its API group and why:
    /// reports say "skipped: KIND (GROUP) ×N (reason)" or "not read: …",
    /// never nothing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped_kinds: Vec<SkippedKind>,
    /// GPU workloads whose engine lint did not recognise, so the rules
    /// that need one did not judge them: said, never silent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unjudged: Vec<Unjudged>,
    /// Charts and Kustomize directories not rendered (no tool), with the
    /// command that renders them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped_inputs: Vec<SkippedInput>,
}

/// A GPU workload whose main container runs no engine lint recognises:
/// the rules that need the engine (IR015–IR017) did not judge it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unjudged {
    pub file: String,
    /// `Deployment vllm` or `StormService s role decode`, as findings say it.
    pub workload: String,
    /// The main container's name.
    pub container: String,
    /// Its GPUs (`1 nvidia.com/gpu`).
    pub gpus: String,
    /// The codes of the rules that did not judge it.
    pub rules: Vec<&'static str>,
}

/// A directory that is not manifests until rendered, left unlinted because
/// its tool is missing: not an error in the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedInput {
    pub path: String,
    /// Why (`a Helm chart, and no helm on PATH (--helm, INFERA_HELM)`).
    pub reason: String,
    /// What renders and lints it by hand.
    pub command: String,
}

/// A kind lint does not analyse and does not keep silent, named in every
/// report with its API group and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedKind {
    pub kind: String,
    /// The API group (`kubeai.org`; empty for the core group).
    pub group: String,
    /// Objects of that kind skipped.
    pub count: usize,
    pub reason: String,
    /// `skipped` (a kind lint knows and leaves out, or an API version it
    /// does not read) or `not_read` (a kind lint does not know).
    pub status: SkipStatus,
    /// What the first such object holds that matters, with where
    /// (`containers at spec.runner`, a GPU request, replicas, an engine).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub found: Vec<String>,
}

/// Why an object is named instead of linted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipStatus {
    /// A kind lint knows and leaves out (with its reason), or a known kind
    /// at an API version lint does not read.
    Skipped,
    /// A kind lint does not know.
    NotRead,
}

impl SkippedKind {
    /// `Model (kubeai.org)`; the core group as `core`.
    pub fn kind_and_group(&self) -> String {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        format!("{} ({group})", self.kind)
    }
}

/// Add `more` to `into`, one entry a kind (in kind order).
pub fn merge_skipped_kinds(into: &mut Vec<SkippedKind>, more: &[SkippedKind]) {
    for k in more {
        match into
            .iter_mut()
            .find(|e| e.kind == k.kind && e.group == k.group)
        {
            Some(e) => e.count += k.count,
            None => into.push(k.clone()),
        }
    }
    into.sort_by(|a, b| (&a.kind, &a.group).cmp(&(&b.kind, &b.group)));
}

impl LintSummary {
    /// Count one file's outcome (files, documents, objects, skipped kinds;
    /// not findings, which the caller counts after its configuration).
    pub fn add_file(&mut self, f: &FileOutcome) {
        self.files += f.files;
        self.documents += f.documents;
        self.objects += f.objects;
        self.skipped += f.skipped;
        self.silent += f.silent;
        merge_skipped_kinds(&mut self.skipped_kinds, &f.skipped_kinds);
        self.unjudged.extend_from_slice(&f.unjudged);
        self.skipped_inputs.extend_from_slice(&f.skipped_inputs);
    }
}

/// Why a kind that runs pods is skipped, for the kinds real fleets use
/// (listed even when their pods are described without a container list,
/// like KServe's `predictor.model` or a NIMService's `image`).
fn known_skip_reason(kind: &str, group: &str) -> Option<&'static str> {
    Some(match (kind, group) {
        ("ServingRuntime" | "ClusterServingRuntime", "serving.kserve.io") => {
            "a KServe runtime template: it runs no pods itself"
        }
        ("ServingRuntime" | "ClusterServingRuntime", "ome.io") => {
            "an OME runtime template: it runs no pods itself; an InferenceService that names it is read with it when the two are in the same input"
        }
        ("MultiRoleInference", "kaito.sh") => {
            "each role becomes a KAITO InferenceSet, which reconciles only the number and labels of its Workspaces (addOrUpdateInferenceSet); what replaces them is the cluster's auto-upgrade strategy, which is not in the object"
        }
        ("RoleSet" | "PodSet", "orchestration.aibrix.ai") => {
            "rendered by AIBrix from a StormService; lint that instead"
        }
        ("NIMCache", "apps.nvidia.com") => "downloads a model: it serves nothing",
        ("ModelBooster", "workload.serving.volcano.sh") => {
            "kthena renders a ModelServing from it (`pkg/model-booster-controller/convert/model_serving.go`), which infera does not render from a ModelBooster yet; lint that ModelServing (`kubectl get modelservings -o yaml`)"
        }
        ("Playground", "inference.llmaz.io") => {
            "llmaz builds a Service from it with its BackendRuntime (the engine's command, args and resources) and OpenModel, cluster objects not in the input (buildServiceApplyConfiguration); lint that Service (`kubectl get services.inference.llmaz.io -o yaml`)"
        }
        ("RayCluster" | "RayJob", "ray.io") => {
            "KubeRay replaces Ray clusters whole; infera does not model that rollout"
        }
        ("ModelService", "llm-d.ai") => {
            "llm-d renders the Deployments; lint the rendered Deployments instead"
        }
        ("DynamoComponentDeployment", "nvidia.com") => {
            "rendered by the Dynamo operator from a DynamoGraphDeployment; lint that instead"
        }
        ("DaemonSet", "apps") => "one pod per node: no surge or replica count to check",
        ("Job" | "CronJob", "batch") => "runs to completion: no rollout",
        ("Pod", "") => "a bare pod is never rolled",
        _ => return None,
    })
}

/// The entry naming an object of a kind lint renders whose render needs
/// what the input does not hold (`missing`: what, and how to supply it).
pub(super) fn missing_kind(node: &Node, missing: String) -> SkippedKind {
    let kind = node.get("kind").and_then(Node::as_str).unwrap_or("");
    let api = node.get("apiVersion").and_then(Node::as_str).unwrap_or("");
    SkippedKind {
        kind: kind.to_string(),
        group: super::unread::group_version(api).0.to_string(),
        count: 1,
        reason: missing,
        status: SkipStatus::Skipped,
        found: Vec::new(),
    }
}

/// The entry naming an object infera does not analyse, or None for a kind
/// that runs nothing ([`super::unread::runs_nothing`]): a known kind with
/// its reason, a known kind at an API version lint does not read, or any
/// other kind as not read, with what it holds.
pub(super) fn skipped_kind(node: &Node) -> Option<SkippedKind> {
    use super::unread;
    let kind = node.get("kind").and_then(Node::as_str).unwrap_or("");
    let api = node.get("apiVersion").and_then(Node::as_str).unwrap_or("");
    let (group, version) = unread::group_version(api);
    if unread::runs_nothing(kind, group) {
        return None;
    }
    let (status, reason) = if let Some(r) = unread::unread_version(kind, group, version) {
        (SkipStatus::Skipped, r)
    } else if let Some(r) = known_skip_reason(kind, group) {
        (SkipStatus::Skipped, r.to_string())
    } else if kind.is_empty() {
        let r = "not a Kubernetes object: it has no `kind`, so nothing in it was read";
        (SkipStatus::NotRead, r.to_string())
    } else {
        (SkipStatus::NotRead, unread::NOT_READ.to_string())
    };
    let found = match status {
        SkipStatus::NotRead if !kind.is_empty() => unread::found(node),
        _ => Vec::new(),
    };
    Some(SkippedKind {
        kind: if kind.is_empty() { "(no kind)" } else { kind }.to_string(),
        group: group.to_string(),
        count: 1,
        reason,
        status,
        found,
    })
}
