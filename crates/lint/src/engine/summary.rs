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
    /// Skipped kinds that carry pods (and so may hide a rollout hazard),
    /// with why infera cannot lint them: reports say "skipped: KIND
    /// (reason)", never silently.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped_kinds: Vec<SkippedKind>,
    /// Charts and Kustomize directories not rendered (no tool), with the
    /// command that renders them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped_inputs: Vec<SkippedInput>,
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

/// A kind that carries pods but whose rollout infera does not model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedKind {
    pub kind: String,
    /// Objects of that kind skipped.
    pub count: usize,
    pub reason: String,
}

/// Add `more` to `into`, one entry a kind (in kind order).
pub fn merge_skipped_kinds(into: &mut Vec<SkippedKind>, more: &[SkippedKind]) {
    for k in more {
        match into.iter_mut().find(|e| e.kind == k.kind) {
            Some(e) => e.count += k.count,
            None => into.push(k.clone()),
        }
    }
    into.sort_by(|a, b| a.kind.cmp(&b.kind));
}

impl LintSummary {
    /// Count one file's outcome (files, documents, objects, skipped kinds;
    /// not findings, which the caller counts after its configuration).
    pub fn add_file(&mut self, f: &FileOutcome) {
        self.files += f.files;
        self.documents += f.documents;
        self.objects += f.objects;
        self.skipped += f.skipped;
        merge_skipped_kinds(&mut self.skipped_kinds, &f.skipped_kinds);
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
        ("MultiRoleInference", "kaito.sh") => {
            "each role becomes a KAITO InferenceSet, which reconciles only the number and labels of its Workspaces (addOrUpdateInferenceSet); what replaces them is the cluster's auto-upgrade strategy, which is not in the object"
        }
        ("RoleSet" | "PodSet", "orchestration.aibrix.ai") => {
            "rendered by AIBrix from a StormService; lint that instead"
        }
        ("NIMCache", "apps.nvidia.com") => "downloads a model: it serves nothing",
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

/// The skipped-kind entry for an object infera does not analyse, when it
/// runs pods (a known kind, or any kind with a container list).
pub(super) fn skipped_kind(node: &Node) -> Option<SkippedKind> {
    let kind = node.get("kind").and_then(Node::as_str).unwrap_or("object");
    let api = node.get("apiVersion").and_then(Node::as_str).unwrap_or("");
    let group = api.rsplit_once('/').map_or("", |(g, _)| g);
    let reason = match known_skip_reason(kind, group) {
        Some(r) => r,
        None if carries_pods(node, 0) => {
            "it carries pods, but infera does not know how its controller rolls them out"
        }
        None => return None,
    };
    Some(SkippedKind {
        kind: kind.to_string(),
        count: 1,
        reason: reason.to_string(),
    })
}

/// True when an object's tree holds a container list (a pod template).
fn carries_pods(node: &Node, depth: usize) -> bool {
    use infera_model::manifest::Value;
    if depth > 12 {
        return false;
    }
    match &node.value {
        Value::Map(entries) => entries.iter().any(|(k, v)| {
            matches!(k.name.as_ref(), "containers" | "mainContainer") || carries_pods(v, depth + 1)
        }),
        Value::Seq(items) => items.iter().any(|v| carries_pods(v, depth + 1)),
        _ => false,
    }
}
