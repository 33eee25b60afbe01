//! What becomes of an object lint does not analyse: silent (a kind that
//! runs nothing, from one closed list), or named as skipped with its API
//! group, why, and what it holds that matters (containers, GPUs, replicas,
//! an engine) — so a new operator's kind is never passed over unread.

use infera_model::manifest::{Node, Value};

/// Kinds that run nothing (no pod, no model server, no rollout of their
/// own), by API group: the only objects lint passes over without a word.
/// The list is closed on purpose: any other kind lint does not read is
/// named in every report ("not read: Model (kubeai.org)"), so a serving
/// kind nobody has taught lint yet is never mistaken for one it checked.
/// Add a kind here only when it cannot run or roll a pod.
const RUNS_NOTHING: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "Service",
            "ConfigMap",
            "Secret",
            "ServiceAccount",
            "PersistentVolumeClaim",
            "PersistentVolume",
            "Namespace",
            "Endpoints",
            "LimitRange",
            "ResourceQuota",
            "Event",
        ],
    ),
    (
        "rbac.authorization.k8s.io",
        &["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"],
    ),
    (
        "networking.k8s.io",
        &["Ingress", "IngressClass", "NetworkPolicy"],
    ),
    (
        "gateway.networking.k8s.io",
        &[
            "Gateway",
            "GatewayClass",
            "HTTPRoute",
            "GRPCRoute",
            "TCPRoute",
            "TLSRoute",
            "UDPRoute",
            "ReferenceGrant",
        ],
    ),
    ("discovery.k8s.io", &["EndpointSlice"]),
    ("policy", &["PodDisruptionBudget"]),
    ("autoscaling", &["HorizontalPodAutoscaler"]),
    ("storage.k8s.io", &["StorageClass"]),
    ("scheduling.k8s.io", &["PriorityClass"]),
    ("apiextensions.k8s.io", &["CustomResourceDefinition"]),
    (
        "admissionregistration.k8s.io",
        &[
            "ValidatingWebhookConfiguration",
            "MutatingWebhookConfiguration",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
        ],
    ),
    (
        "resource.k8s.io",
        &["ResourceClaim", "ResourceClaimTemplate", "DeviceClass"],
    ),
    (
        "monitoring.coreos.com",
        &["ServiceMonitor", "PodMonitor", "PrometheusRule"],
    ),
    (
        "inference.networking.x-k8s.io",
        &["InferencePool", "InferenceModel", "InferenceObjective"],
    ),
    ("inference.networking.k8s.io", &["InferencePool"]),
    ("kustomize.config.k8s.io", &["Kustomization", "Component"]),
    (
        "cert-manager.io",
        &["Certificate", "Issuer", "ClusterIssuer"],
    ),
];

/// True for a kind of [`RUNS_NOTHING`]: skipped without a word.
pub fn runs_nothing(kind: &str, group: &str) -> bool {
    RUNS_NOTHING
        .iter()
        .find(|(g, _)| *g == group)
        .is_some_and(|(_, kinds)| kinds.contains(&kind))
}

/// An object's API group and version (`apps/v1` → `apps`, `v1`; `v1` → ``, `v1`).
pub fn group_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

/// The reason for a known kind at an API version lint does not read.
pub(super) fn unread_version(kind: &str, group: &str, version: &str) -> Option<String> {
    use infera_model::manifest::dynamo;
    let read: &[&str] = match (kind, group) {
        (dynamo::KIND, dynamo::GROUP) => &dynamo::VERSIONS,
        _ => return None,
    };
    (!read.contains(&version)).then(|| {
        format!(
            "API version {group}/{version} is not one lint reads ({}): its fields may differ, so nothing in it was checked",
            read.join(", ")
        )
    })
}

/// Why an object of a kind lint does not know is named.
pub(super) const NOT_READ: &str =
    "infera does not read this kind: what its operator runs, and how it rolls it, is not checked";

/// At most this many facts are listed for one object.
const MAX_FOUND: usize = 4;

/// What an unread object holds that matters for a rollout, each with where
/// it is: containers (`containers at spec.runner`), GPU or accelerator
/// requests, a replica count, an engine. Walked only for the kinds lint
/// neither reads nor keeps silent (never on the common kinds' path).
pub(super) fn found(node: &Node) -> Vec<String> {
    let mut out = Vec::new();
    let mut path = Vec::new();
    walk(node, &mut path, 0, &mut out);
    out
}

fn walk(node: &Node, path: &mut Vec<String>, depth: usize, out: &mut Vec<String>) {
    if depth > 12 || out.len() >= MAX_FOUND {
        return;
    }
    match &node.value {
        Value::Map(entries) => {
            for (k, v) in entries {
                let name: &str = k.name.as_ref();
                if depth == 0 && matches!(name, "metadata" | "status") {
                    continue;
                }
                path.push(name.to_string());
                let pods = is_container_list(v) || is_container(v);
                match fact(name, v, path, pods) {
                    Some(fact) if is_new(out, &fact) && out.len() < MAX_FOUND => out.push(fact),
                    Some(_) => {}
                    None => walk(v, path, depth + 1, out),
                }
                if pods {
                    walk(v, path, depth + 1, out);
                }
                path.pop();
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                let Some(last) = path.last_mut() else { return };
                let base_len = last.len();
                last.push_str(&format!("[{i}]"));
                walk(item, path, depth + 1, out);
                if let Some(last) = path.last_mut() {
                    last.truncate(base_len);
                }
            }
        }
        _ => {}
    }
}

/// False for a fact already said, or a GPU request already said at
/// another place (`requests` and `limits` of one container).
fn is_new(out: &[String], fact: &str) -> bool {
    let head = |f: &str| f.split(" at ").next().unwrap_or_default().to_string();
    !out.iter()
        .any(|f| f == fact || (f.starts_with("GPU/") && head(f) == head(fact)))
}

/// One fact from a key and its value, or None to look further in.
fn fact(name: &str, v: &Node, path: &[String], pods: bool) -> Option<String> {
    let at = path.join(".");
    let lower = name.to_ascii_lowercase();
    if pods {
        return Some(format!("containers at {at}"));
    }
    let scalar = v.as_str().map(str::to_string).or_else(|| scalar_text(v));
    let scalar = scalar.filter(|s| !s.is_empty())?;
    if lower.contains("gpu") || lower.contains("accelerator") || lower == "resourceprofile" {
        return Some(format!("GPU/accelerator request {name}: {scalar} at {at}"));
    }
    if matches!(name, "replicas" | "minReplicas") {
        return Some(format!("{name} {scalar} at {at}"));
    }
    if matches!(
        lower.as_str(),
        "engine" | "backendname" | "backend" | "runtime"
    ) {
        return Some(format!("engine {scalar} at {at}"));
    }
    None
}

/// A number or boolean as text (strings come from [`Node::as_str`]).
fn scalar_text(v: &Node) -> Option<String> {
    match &v.value {
        Value::Int(n) => Some(n.to_string()),
        Value::Float(f) => Some(f.to_string()),
        _ => None,
    }
}

/// A list of containers: maps with an `image` (or a `name` and `args`/`command`).
fn is_container_list(v: &Node) -> bool {
    match &v.value {
        Value::Seq(items) => !items.is_empty() && items.iter().all(is_container),
        _ => false,
    }
}

/// One container: a map with an `image`, or with `command`/`args` and a `name`.
fn is_container(v: &Node) -> bool {
    let Value::Map(_) = &v.value else {
        return false;
    };
    v.get("image").is_some()
        || (v.get("name").is_some() && (v.get("command").is_some() || v.get("args").is_some()))
}

#[cfg(test)]
mod tests {
    use crate::engine::lint_source;
    use crate::engine::summary::SkipStatus;
    use crate::options::LintOptions;

    /// How one object ended.
    #[derive(Debug, PartialEq)]
    enum End {
        Linted,
        Silent,
        /// `Kind (group)`, the status, a fact that must be among `found`.
        Named(&'static str, SkipStatus, &'static str),
    }

    fn end(yaml: &str) -> End {
        let out = lint_source("t.yaml", yaml.as_bytes(), &LintOptions::default());
        assert!(out.input_errors.is_empty(), "{:?}", out.input_errors);
        let s = &out.summary;
        match (s.objects, s.silent, s.skipped_kinds.as_slice()) {
            (1, 0, []) => End::Linted,
            (0, 1, []) => End::Silent,
            (0, 0, [k]) => End::Named(
                Box::leak(k.kind_and_group().into_boxed_str()),
                k.status,
                Box::leak(k.found.join("; ").into_boxed_str()),
            ),
            other => panic!("{yaml}: {other:?}"),
        }
    }

    const KUBEAI_MODEL: &str = "apiVersion: kubeai.org/v1\nkind: Model\nmetadata: {name: m}\nspec:\n  features: [TextGeneration]\n  url: hf://Qwen/Qwen2.5-7B\n  engine: VLLM\n  resourceProfile: nvidia-gpu-l4:1\n  minReplicas: 1\n";
    /// A kind no operator here renders, as a new operator's would be.
    const NEW_OPERATOR: &str = "apiVersion: serving.example.com/v1\nkind: LLMServer\nmetadata: {name: b}\nspec:\n  backends:\n  - name: b1\n    type: vLLM\n    minReplicas: 1\n    workers:\n    - {type: server, image: vllm/vllm-openai, replicas: 1, resources: {limits: {nvidia.com/gpu: 1}}}\n";
    const LLMAZ_SERVICE: &str = "apiVersion: inference.llmaz.io/v1alpha1\nkind: Service\nmetadata: {name: s}\nspec:\n  replicas: 2\n  workloadTemplate:\n    workerTemplate:\n      spec:\n        containers:\n        - name: model-runner\n          image: vllm/vllm-openai:v0.8.5\n          resources: {limits: {nvidia.com/gpu: 1}}\n";
    const OME_RUNTIME: &str = "apiVersion: ome.io/v1beta1\nkind: ClusterServingRuntime\nmetadata: {name: r}\nspec:\n  engineConfig:\n    runner:\n      name: ome-container\n      image: docker.io/lmsysorg/sglang:v0.4.8\n      args: [--tp-size, \"1\"]\n      resources: {limits: {nvidia.com/gpu: 1}}\n";

    /// (document, how it ends, the words the fact must hold).
    #[test]
    fn every_object_is_linted_named_or_silent_by_the_closed_list() {
        let named = |s: &'static str, k| End::Named(s, k, "");
        let table: [(&str, End, &str); 10] = [
            (
                "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
                End::Silent,
                "",
            ),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
                End::Silent,
                "",
            ),
            (
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: c}\n",
                End::Silent,
                "",
            ),
            (KUBEAI_MODEL, End::Linted, ""),
            (
                NEW_OPERATOR,
                named("LLMServer (serving.example.com)", SkipStatus::NotRead),
                "minReplicas 1 at spec.backends[0].minReplicas",
            ),
            (LLMAZ_SERVICE, End::Linted, ""),
            (
                OME_RUNTIME,
                named("ClusterServingRuntime (ome.io)", SkipStatus::Skipped),
                "",
            ),
            (
                "apiVersion: nvidia.com/v2\nkind: DynamoGraphDeployment\nmetadata: {name: g}\nspec: {}\n",
                named("DynamoGraphDeployment (nvidia.com)", SkipStatus::Skipped),
                "",
            ),
            (
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n",
                named("Pod (core)", SkipStatus::Skipped),
                "",
            ),
            (
                "replicaCount: 2\n",
                named("(no kind) (core)", SkipStatus::NotRead),
                "",
            ),
        ];
        for (yaml, want, fact) in table {
            let got = end(yaml);
            match (&got, &want) {
                (End::Named(k, s, found), End::Named(wk, ws, _)) => {
                    assert_eq!((k, s), (wk, ws), "{yaml}");
                    assert!(found.contains(fact), "{yaml}: found {found}");
                }
                _ => assert_eq!(got, want, "{yaml}"),
            }
        }
    }

    #[test]
    fn the_reports_name_the_group_and_what_was_found() {
        let out = lint_source("t.yaml", NEW_OPERATOR.as_bytes(), &LintOptions::default());
        let line = crate::report::skipped_line(&out.summary.skipped_kinds[0]);
        assert!(
            line.starts_with(
                "not read: LLMServer (serving.example.com) ×1 (infera does not read this kind"
            ) && line.contains("found: ")
                && line.contains("containers at spec.backends[0].workers")
                && line.contains("minReplicas 1 at spec.backends[0].minReplicas"),
            "{line}"
        );
    }

    /// The v1beta1 twin of a v1alpha1 DynamoGraphDeployment (the corpus'
    /// `dynamo/vllm-disagg-multinode.yaml`) gets the same findings: each
    /// single-group multi-node worker, on its `spec.components` entry.
    #[test]
    fn dynamo_v1beta1_components_are_read_as_v1alpha1_services() {
        let worker = |name: &str| {
            format!(
                "  - name: {name}\n    type: {name}\n    replicas: 1\n    multinode: {{nodeCount: 2}}\n    podTemplate:\n      spec:\n        containers:\n        - name: main\n          image: my-registry/vllm-runtime:my-tag\n          command: [python3, -m, dynamo.vllm]\n          args: [--model, Qwen/Qwen3-0.6B, --tensor-parallel-size, \"2\"]\n          resources: {{limits: {{nvidia.com/gpu: \"1\"}}}}\n"
            )
        };
        let yaml = format!(
            "apiVersion: nvidia.com/v1beta1\nkind: DynamoGraphDeployment\nmetadata: {{name: g}}\nspec:\n  backendFramework: vllm\n  components:\n  - name: Frontend\n    type: frontend\n    replicas: 1\n{}{}",
            worker("decode"),
            worker("prefill")
        );
        let out = lint_source("t.yaml", yaml.as_bytes(), &LintOptions::default());
        assert!(out.input_errors.is_empty(), "{:?}", out.input_errors);
        assert_eq!(out.summary.objects, 1);
        let hits: Vec<(&str, Option<&str>, usize)> = out
            .findings
            .iter()
            .map(|f| (f.code, f.object.service.as_deref(), f.line))
            .collect();
        assert_eq!(
            hits,
            [
                ("IR012", Some("decode"), 12),
                ("IR012", Some("prefill"), 24)
            ],
            "{:?}",
            out.findings
        );
    }
}
