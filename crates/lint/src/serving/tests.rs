//! Each serving kind as its operator renders it, through the engine.

use crate::engine::lint_source;
use crate::options::LintOptions;

/// (code, path of the finding, fix change paths) of each finding of the
/// one object in `yaml`.
fn lint(yaml: &str) -> Vec<(String, String, Vec<String>)> {
    let (objects, hits) = lint_counted(yaml);
    assert_eq!(objects, 1, "{yaml}");
    hits
}

fn codes(yaml: &str) -> Vec<String> {
    lint(yaml).into_iter().map(|(c, _, _)| c).collect()
}

fn vllm_runtime(replicas: u32, strategy: &str) -> String {
    format!(
        "apiVersion: production-stack.vllm.ai/v1alpha1\nkind: VLLMRuntime\nmetadata: {{name: r}}\nspec:\n  model: {{modelURL: m}}\n  vllmConfig: {{port: 8000}}\n  deploymentConfig: {{replicas: {replicas}, deploymentStrategy: {strategy}, resources: {{gpu: \"1\"}}}}\n"
    )
}

#[test]
fn vllm_runtime_recreate_is_a_gap_fixed_in_its_own_field() {
    let hits = lint(&vllm_runtime(2, "Recreate"));
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].0, "IR008");
    assert!(
        hits[0]
            .1
            .contains("strategy Recreate (`deploymentConfig.deploymentStrategy`)"),
        "{}",
        hits[0].1
    );
    assert_eq!(hits[0].2, ["/spec/deploymentConfig/deploymentStrategy"]);
    assert!(codes(&vllm_runtime(2, "RollingUpdate")).is_empty());
    assert!(codes(&vllm_runtime(1, "RollingUpdate")).is_empty());
}

fn nim(replicas: u32, extra: &str) -> String {
    format!(
        "apiVersion: apps.nvidia.com/v1alpha1\nkind: NIMService\nmetadata: {{name: nim}}\nspec:\n  image: {{repository: nvcr.io/nim/meta/llama, tag: \"1\"}}\n  replicas: {replicas}\n  resources: {{limits: {{nvidia.com/gpu: 8}}}}\n{extra}"
    )
}

#[test]
fn nim_service_rolls_old_pod_first() {
    let hits = lint(&nim(1, ""));
    assert_eq!(
        hits.iter().map(|h| h.0.as_str()).collect::<Vec<_>>(),
        ["IR008"]
    );
    assert_eq!(hits[0].2, ["/spec/replicas"]);
    // maxUnavailable 25% of 2 rounds to 0, maxSurge 0: 1 at a time, 1 left.
    assert!(codes(&nim(2, "")).is_empty());
    let multi = lint(&nim(1, "  multiNode: {parallelism: {pipeline: 2}}\n"));
    assert_eq!(
        multi.iter().map(|h| h.0.as_str()).collect::<Vec<_>>(),
        ["IR012"]
    );
    assert!(multi[0].1.contains("1 2-node group(s)"), "{}", multi[0].1);
    assert_eq!(multi[0].2, ["/spec/replicas"]);
}

fn isvc(annotation: &str, predictor: &str) -> String {
    format!(
        "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata:\n  name: i\n  annotations: {{serving.kserve.io/deploymentMode: {annotation}}}\nspec:\n  predictor: {predictor}\n"
    )
}

#[test]
fn kserve_raw_deployment_follows_the_predictor() {
    let vllm = "{name: server, image: vllm/vllm-openai, command: [vllm, serve, m]}";
    // A custom container (not kserve-container) gets no default probe.
    let hits = lint(&isvc("RawDeployment", &format!("{{containers: [{vllm}]}}")));
    assert_eq!(
        hits.iter().map(|h| h.0.as_str()).collect::<Vec<_>>(),
        ["IR007"]
    );
    assert_eq!(hits[0].2, ["/spec/predictor/containers/0/readinessProbe"]);
    let named = vllm.replace("name: server", "name: kserve-container");
    assert!(codes(&isvc("Standard", &format!("{{containers: [{named}]}}"))).is_empty());
    let recreate = format!("{{deploymentStrategy: {{type: Recreate}}, containers: [{named}]}}");
    let hits = lint(&isvc("RawDeployment", &recreate));
    assert_eq!(
        hits.iter().map(|h| h.0.as_str()).collect::<Vec<_>>(),
        ["IR008"]
    );
    assert_eq!(hits[0].2, ["/spec/predictor/deploymentStrategy"]);
}

#[test]
fn knative_inference_service_surges_a_revision() {
    let gpu = "{name: server, image: vllm/vllm-openai, command: [vllm, serve, m], resources: {limits: {nvidia.com/gpu: 8}}}";
    // Knative's default TCP probe: no IR007; 8 of 8 GPUs: the new
    // Revision's pod needs a free node (IR004, no fix).
    let hits = lint(&isvc("Serverless", &format!("{{containers: [{gpu}]}}")));
    assert_eq!(
        hits.iter().map(|h| h.0.as_str()).collect::<Vec<_>>(),
        ["IR004"]
    );
    assert!(
        hits[0]
            .1
            .contains("inferenceservice i requests 8 nvidia.com/gpu"),
        "{}",
        hits[0].1
    );
    let small = gpu.replace("gpu: 8", "gpu: 1");
    assert!(codes(&isvc("Serverless", &format!("{{containers: [{small}]}}"))).is_empty());
}

#[test]
fn kaito_preset_workspace_is_one_unit_and_a_template_one_never_rolls() {
    let preset = "apiVersion: kaito.sh/v1beta1\nkind: Workspace\nmetadata: {name: w}\nresource: {count: 2, instanceType: x}\ninference: {preset: {name: m}}\n";
    let hits = lint(preset);
    assert_eq!(
        hits.iter().map(|h| h.0.as_str()).collect::<Vec<_>>(),
        ["IR008"]
    );
    assert!(
        hits[0]
            .1
            .contains("its 2 nodes (`resource.count`) serve the preset as one group"),
        "{}",
        hits[0].1
    );
    assert!(hits[0].2.is_empty(), "no field of a Workspace fixes it");
    let template = "apiVersion: kaito.sh/v1beta1\nkind: Workspace\nmetadata: {name: w}\ninference: {template: {spec: {containers: [{name: c, image: x}]}}}\n";
    assert!(codes(template).is_empty());
}

fn storm(strategy: &str, role: &str) -> String {
    format!(
        "apiVersion: orchestration.aibrix.ai/v1alpha1\nkind: StormService\nmetadata: {{name: s}}\nspec:\n  replicas: 2\n  updateStrategy: {strategy}\n  template:\n    spec:\n      roles:\n        - {role}\n"
    )
}

#[test]
fn storm_service_roles() {
    let role = |extra: &str| {
        format!(
            "{{name: decode, replicas: 1, {extra}template: {{spec: {{containers: [{{name: c, image: x, command: [vllm, serve, m]}}]}}}}}}"
        )
    };
    // Two RoleSets, default fenceposts (maxUnavailable 1): one stays.
    assert!(codes(&storm("{type: RollingUpdate}", &role(""))).is_empty());
    // In place: the role's single pod goes first.
    let hits = lint(&storm("{type: InPlaceUpdate}", &role("")));
    assert_eq!(
        hits.iter().map(|h| h.0.as_str()).collect::<Vec<_>>(),
        ["IR008"]
    );
    assert!(
        hits[0].1.contains("stormservice s role decode"),
        "{}",
        hits[0].1
    );
    // A surging role without a probe: IR007, fixed on the role's container.
    let surge = role("updateStrategy: {maxSurge: 1, maxUnavailable: 0}, ");
    let hits = lint(&storm("{type: InPlaceUpdate}", &surge));
    assert_eq!(
        hits.iter().map(|h| h.0.as_str()).collect::<Vec<_>>(),
        ["IR007"]
    );
    assert_eq!(
        hits[0].2,
        ["/spec/template/spec/roles/0/template/spec/containers/0/readinessProbe"]
    );
}

fn ray_service(upgrade: &str, gpus: u32) -> String {
    format!(
        "apiVersion: ray.io/v1\nkind: RayService\nmetadata: {{name: rs}}\nspec:\n  {upgrade}rayClusterConfig:\n    headGroupSpec: {{template: {{spec: {{containers: [{{name: head, image: x}}]}}}}}}\n    workerGroupSpecs:\n      - {{replicas: 2, template: {{spec: {{containers: [{{name: w, image: x, resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}}}]}}}}}}\n"
    )
}

#[test]
fn ray_service_surges_a_whole_cluster() {
    let hits = lint(&ray_service("", 8));
    assert_eq!(
        hits.iter().map(|h| h.0.as_str()).collect::<Vec<_>>(),
        ["IR004"]
    );
    assert!(
        hits[0]
            .1
            .contains("needs 2 free nodes with 8 nvidia.com/gpu"),
        "{}",
        hits[0].1
    );
    assert!(codes(&ray_service("", 4)).is_empty());
    assert!(codes(&ray_service("upgradeStrategy: {type: None}\n  ", 8)).is_empty());
}

#[test]
fn ray_cluster_fleet_defaults_retire_a_cluster_first() {
    let fleet = |strategy: &str| {
        format!(
            "apiVersion: orchestration.aibrix.ai/v1alpha1\nkind: RayClusterFleet\nmetadata: {{name: f}}\nspec:\n  replicas: 1\n  {strategy}template:\n    spec:\n      headGroupSpec: {{template: {{spec: {{containers: [{{name: head, image: x, resources: {{limits: {{nvidia.com/gpu: 2}}}}}}]}}}}}}\n"
        )
    };
    // No rollingUpdate: both fenceposts 0, so maxUnavailable 1.
    let hits = lint(&fleet(""));
    assert_eq!(
        hits.iter().map(|h| h.0.as_str()).collect::<Vec<_>>(),
        ["IR008"]
    );
    assert_eq!(hits[0].2, ["/spec/strategy"]);
    let surge =
        "strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}\n  ";
    assert!(codes(&fleet(surge)).is_empty());
}

/// What lint makes of one input: the finding codes, or the reason the
/// object is named as skipped.
#[derive(Debug, PartialEq)]
enum Outcome {
    Codes(Vec<String>),
    Named(String),
}

fn outcome(yaml: &str) -> Outcome {
    let opts = LintOptions {
        node_gpus: 8,
        ..LintOptions::default()
    };
    let out = lint_source("t.yaml", yaml.as_bytes(), &opts);
    assert!(out.input_errors.is_empty(), "{:?}", out.input_errors);
    assert_eq!(out.summary.silent, 0, "{yaml}");
    let named: Vec<_> = out
        .summary
        .skipped_kinds
        .iter()
        .filter(|k| !k.kind.ends_with("ServingRuntime"))
        .collect();
    match named.as_slice() {
        [] => Outcome::Codes(out.findings.iter().map(|f| f.code.to_string()).collect()),
        [k] => Outcome::Named(k.reason.clone()),
        more => panic!("{more:?}"),
    }
}

fn kubeai(engine: &str, profile: &str, args: &str, extra: &str) -> String {
    format!(
        "apiVersion: kubeai.org/v1\nkind: Model\nmetadata: {{name: m}}\nspec:\n  url: hf://org/m\n  engine: {engine}\n  resourceProfile: {profile}\n  args: [{args}]\n{extra}"
    )
}

/// An llmaz Service of `replicas` groups of a leader and a worker (SGLang
/// TP 2 over 2 nodes of 1 GPU, a TCP probe on the leader), with `extra`
/// spec fields.
fn llmaz(replicas: u32, extra: &str) -> String {
    let c = |probe: &str| {
        format!(
            "{{name: model-runner, image: lmsysorg/sglang, command: [python3, -m, sglang.launch_server, --tp, \"2\", --nnodes, \"2\"], resources: {{limits: {{nvidia.com/gpu: 1}}}}{probe}}}"
        )
    };
    format!(
        "apiVersion: inference.llmaz.io/v1alpha1\nkind: Service\nmetadata: {{name: s}}\nspec:\n  replicas: {replicas}\n{extra}  workloadTemplate:\n    size: 2\n    leaderTemplate: {{spec: {{containers: [{}]}}}}\n    workerTemplate: {{spec: {{containers: [{}]}}}}\n",
        c(", readinessProbe: {tcpSocket: {port: 40000}}"),
        c("")
    )
}

/// A DisaggregatedSet of a prefill and a decode role, each `replicas`
/// groups of 2 pods (`rollout`: the role spec's fields; `probe`: the
/// leader container's).
fn dset(replicas: u32, rollout: &str, probe: &str) -> String {
    let role = |name: &str| {
        format!(
            "{{name: {name}, spec: {{replicas: {replicas}, {rollout}leaderWorkerTemplate: {{size: 2, leaderTemplate: {{spec: {{containers: [{{name: l, image: vllm/vllm-openai, command: [vllm, serve, m]{probe}}}]}}}}, workerTemplate: {{spec: {{containers: [{{name: w, image: vllm/vllm-openai}}]}}}}}}}}}}"
        )
    };
    format!(
        "apiVersion: disaggregatedset.x-k8s.io/v1\nkind: DisaggregatedSet\nmetadata: {{name: d}}\nspec:\n  roles: [{}, {}]\n",
        role("prefill"),
        role("decode")
    )
}

/// A kthena ModelServing of `groups` ServingGroups rolled by `strategy`,
/// with a prefill and a decode role of `role_replicas`, each an entry pod
/// (vLLM, /health probe, 1 GPU) and `workers` worker pods.
fn kthena(groups: u32, strategy: &str, role_replicas: u32, workers: u32) -> String {
    let role = |name: &str| {
        format!(
            "{{name: {name}, replicas: {role_replicas}, workerReplicas: {workers}, entryTemplate: {{spec: {{containers: [{{name: e, image: vllm/vllm-openai, command: [vllm, serve, m], readinessProbe: {{httpGet: {{path: /health, port: 8000}}}}, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]}}}}, workerTemplate: {{spec: {{containers: [{{name: w, image: vllm/vllm-openai}}]}}}}}}"
        )
    };
    let strategy = if strategy.is_empty() {
        String::new()
    } else {
        format!("  rolloutStrategy: {strategy}\n")
    };
    format!(
        "apiVersion: workload.serving.volcano.sh/v1alpha1\nkind: ModelServing\nmetadata: {{name: ms}}\nspec:\n  replicas: {groups}\n{strategy}  template:\n    roles: [{}, {}]\n",
        role("prefill"),
        role("decode")
    )
}

/// An OME InferenceService whose `engine` is `engine` (flow style), with
/// `runtime` after it in the same input.
fn ome(runtime_name: &str, engine: &str, runtime: &str) -> String {
    let name = if runtime_name.is_empty() {
        String::new()
    } else {
        format!("  runtime: {{name: {runtime_name}}}\n")
    };
    format!(
        "apiVersion: ome.io/v1beta1\nkind: InferenceService\nmetadata: {{name: q, namespace: ns}}\nspec:\n  model: {{name: qwen}}\n{name}  engine: {engine}\n{runtime}"
    )
}

/// A ClusterServingRuntime `rt` whose runner runs SGLang at `tp` on `gpus`.
fn ome_runtime(tp: u32, gpus: u32) -> String {
    format!(
        "---\napiVersion: ome.io/v1beta1\nkind: ClusterServingRuntime\nmetadata: {{name: rt}}\nspec:\n  engineConfig:\n    runner:\n      name: ome-container\n      image: lmsysorg/sglang:v0.5.5\n      command: [python3, -m, sglang.launch_server, --port, \"8080\", --tp-size, \"{tp}\"]\n      ports: [{{containerPort: 8080}}]\n      resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}\n"
    )
}

/// Each kind of issue 42's item 3 as its operator renders it: one row a
/// case, (what the row shows, manifest, outcome).
#[rustfmt::skip]
fn operator_cases() -> Vec<(&'static str, String, Outcome)> {
    let codes = |c: &[&str]| Outcome::Codes(c.iter().map(|s| s.to_string()).collect());
    let named = |r: &str| Outcome::Named(r.to_string());
    vec![
        // KubeAI Model: KubeAI's own pods, a surge pod first, /health probes.
        ("kubeai vLLM, 1 L4, 1 replica", kubeai("VLLM", "nvidia-gpu-l4:1", "--max-model-len=8192", "  minReplicas: 1\n"), codes(&[])),
        ("kubeai vLLM, TP 2 on 1 GPU", kubeai("VLLM", "nvidia-gpu-l4:1", "--tensor-parallel-size=2", "  minReplicas: 1\n"), codes(&["IR009"])),
        ("kubeai vLLM, TP 2 on 2 GPUs", kubeai("VLLM", "nvidia-gpu-l4:2", "--tensor-parallel-size=2", "  minReplicas: 1\n"), codes(&[])),
        ("kubeai vLLM, 8 of 8 GPUs: the surge pod needs a free node", kubeai("VLLM", "nvidia-gpu-h100:8", "", "  replicas: 2\n"), codes(&["IR004"])),
        ("kubeai SGLang, --tp 2 on 2 MI300X", kubeai("SGLang", "amd-gpu-mi300x:2", "--tp=2", "  minReplicas: 1\n"), codes(&[])),
        ("kubeai SGLang, --tp 4 on 2 MI300X", kubeai("SGLang", "amd-gpu-mi300x:2", "--tp=4", "  minReplicas: 1\n"), codes(&["IR009"])),
        ("kubeai profile the cluster defines: GPUs unknown", kubeai("VLLM", "my-gpus:4", "--tensor-parallel-size=8", "  minReplicas: 1\n"), codes(&[])),
        ("kubeai OLlama engine", kubeai("OLlama", "cpu:1", "", ""), named("engine `OLlama`: infera reads KubeAI's VLLM and SGLang pods")),
        // llmaz Service: a LeaderWorkerSet of its workloadTemplate; a Playground is named.
        ("llmaz Service, 2 groups of 2", llmaz(2, ""), codes(&[])),
        ("llmaz Service, 1 group of 2, default rollout", llmaz(1, ""), codes(&["IR012"])),
        ("llmaz Service, 1 group of 2, a surge group", llmaz(1, "  rolloutStrategy: {type: RollingUpdate, rollingUpdateConfiguration: {maxSurge: 1, maxUnavailable: 0}}\n"), codes(&[])),
        ("llmaz Service without a pod template", "apiVersion: inference.llmaz.io/v1alpha1\nkind: Service\nmetadata: {name: s}\nspec: {replicas: 1, workloadTemplate: {size: 1}}\n".to_string(), named("no pod at `spec.workloadTemplate.workerTemplate.spec`")),
        ("llmaz Playground", "apiVersion: inference.llmaz.io/v1alpha1\nkind: Playground\nmetadata: {name: p}\nspec: {replicas: 1, modelClaim: {modelName: opt-125m}}\n".to_string(), named("llmaz builds a Service from it with its BackendRuntime")),
        // kthena ModelServing: ServingGroups (or role replicas) deleted, then rebuilt.
        ("kthena, 1 ServingGroup, 2 roles of 2 pods", kthena(1, "", 1, 1), codes(&["IR012", "IR012"])),
        ("kthena, 2 ServingGroups", kthena(2, "", 1, 1), codes(&[])),
        ("kthena, 2 ServingGroups, maxUnavailable 2", kthena(2, "{rollingUpdateConfiguration: {maxUnavailable: 2}}", 1, 1), codes(&["IR012", "IR012"])),
        ("kthena, 1 ServingGroup, 1-pod roles", kthena(1, "", 1, 0), codes(&["IR008", "IR008"])),
        ("kthena, partition protects every group", kthena(1, "{rollingUpdateConfiguration: {partition: 1}}", 1, 1), codes(&[])),
        ("kthena, RoleRollingUpdate, 2 replicas a role", kthena(1, "{type: RoleRollingUpdate}", 2, 1), codes(&[])),
        ("kthena, RoleRollingUpdate, 1 replica a role", kthena(1, "{type: RoleRollingUpdate}", 1, 1), codes(&["IR012", "IR012"])),
        ("kthena ModelBooster", "apiVersion: workload.serving.volcano.sh/v1alpha1\nkind: ModelBooster\nmetadata: {name: b}\nspec: {backends: [{name: b, type: vLLM, minReplicas: 1}]}\n".to_string(), named("kthena renders a ModelServing from it")),
        // LWS DisaggregatedSet: a new LeaderWorkerSet a role scaled up beside the old.
        ("DisaggregatedSet, 1 group a role, default surge, leader probe", dset(1, "", ", readinessProbe: {httpGet: {path: /health, port: 8000}}"), codes(&[])),
        ("DisaggregatedSet, 1 group a role, surge group without a probe", dset(1, "", ""), codes(&["IR012", "IR012"])),
        ("DisaggregatedSet, 1 group a role, maxUnavailable 1", dset(1, "rolloutStrategy: {rollingUpdateConfiguration: {maxSurge: 0, maxUnavailable: 1}}, ", ", readinessProbe: {httpGet: {path: /health, port: 8000}}"), codes(&["IR012", "IR012"])),
        // OME InferenceService: the runtime it names, merged under its engine.
        ("ome, runtime chosen from the model", ome("", "{minReplicas: 1}", ""), named("OME chooses its runtime when it is admitted, from the formats of its model `qwen`")),
        ("ome, runtime named but not in the input", ome("rt", "{minReplicas: 1}", ""), named("its runtime `rt`")),
        ("ome, runtime beside it: a Deployment, maxSurge 1", ome("rt", "{minReplicas: 1}", &ome_runtime(1, 1)), codes(&[])),
        ("ome, 8 of 8 GPUs: the surge pod needs a free node", ome("rt", "{minReplicas: 1}", &ome_runtime(8, 8)), codes(&["IR004"])),
        ("ome, TP 4 on 1 GPU", ome("rt", "{minReplicas: 1}", &ome_runtime(4, 1)), codes(&["IR009"])),
        ("ome, the engine overrides the runner's GPUs", ome("rt", "{minReplicas: 1, runner: {resources: {limits: {nvidia.com/gpu: 4}}}}", &ome_runtime(4, 1)), codes(&[])),
        ("ome, engine on Recreate", ome("rt", "{minReplicas: 1, deploymentStrategy: {type: Recreate}}", &ome_runtime(1, 1)), codes(&["IR008"])),
        ("ome, engine maxSurge 0, 1 replica", ome("rt", "{minReplicas: 1, deploymentStrategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}}", &ome_runtime(1, 1)), codes(&["IR008"])),
        ("ome, minReplicas 0: Knative", ome("rt", "{minReplicas: 0}", &ome_runtime(1, 1)), codes(&[])),
        ("ome, an annotation that names no mode is ignored", ome("rt", "{minReplicas: 1, deploymentStrategy: {type: Recreate}, annotations: {ome.io/deploymentMode: Fast}}", &ome_runtime(1, 1)), codes(&["IR008"])),
        ("ome, annotated MultiNodeRayVLLM", ome("rt", "{minReplicas: 1, annotations: {ome.io/deploymentMode: MultiNodeRayVLLM}}", &ome_runtime(1, 1)), named("`engine` deploys as MultiNodeRayVLLM")),
        ("ome, the decoder on Recreate", ome("rt", "{minReplicas: 1}\n  decoder: {minReplicas: 1, deploymentStrategy: {type: Recreate}}", &ome_runtime(1, 1)), codes(&["IR008"])),
        ("ome, leader and worker: multi-node", ome("rt", "{minReplicas: 1, leader: {}, worker: {size: 1}}", &ome_runtime(1, 1)), named("`engine` deploys as MultiNode")),
        ("ome, a namespaced runtime of another namespace", ome("rt", "{minReplicas: 1}", &ome_runtime(1, 1).replace("ClusterServingRuntime", "ServingRuntime").replace("{name: rt}", "{name: rt, namespace: other}")), named("its runtime `rt`")),
    ]
}

#[test]
fn operators_render_as_their_sources_say() {
    let mut failed = Vec::new();
    for (what, yaml, want) in operator_cases() {
        let got = outcome(&yaml);
        let ok = match (&got, &want) {
            (Outcome::Named(g), Outcome::Named(w)) => g.contains(w.as_str()),
            _ => got == want,
        };
        if !ok {
            failed.push(format!("{what}: got {got:?}, want {want:?}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn a_recreate_ome_engine_is_fixed_in_its_own_strategy() {
    let yaml = ome(
        "rt",
        "{minReplicas: 1, deploymentStrategy: {type: Recreate}}",
        &ome_runtime(1, 1),
    );
    let hits = lint_all(&yaml);
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert!(
        hits[0]
            .1
            .contains("OME renders a Deployment from the runtime and `engine`"),
        "{}",
        hits[0].1
    );
    assert_eq!(hits[0].2, ["/spec/engine/deploymentStrategy"]);
}

#[test]
fn kubeai_findings_name_what_kubeai_renders() {
    let hits = lint_all(&kubeai("VLLM", "nvidia-gpu-h100:8", "", "  replicas: 2\n"));
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert!(
        hits[0].1.contains("model m requests 8 nvidia.com/gpu"),
        "{}",
        hits[0].1
    );
}

/// As [`lint`], without the one-object check (a runtime beside it is named).
fn lint_all(yaml: &str) -> Vec<(String, String, Vec<String>)> {
    lint_counted(yaml).1
}

/// The objects linted, and each finding as [`lint`] gives it.
fn lint_counted(yaml: &str) -> (usize, Vec<(String, String, Vec<String>)>) {
    let opts = LintOptions {
        node_gpus: 8,
        ..LintOptions::default()
    };
    let out = lint_source("t.yaml", yaml.as_bytes(), &opts);
    assert!(out.input_errors.is_empty(), "{:?}", out.input_errors);
    let hits = out
        .findings
        .iter()
        .map(|f| {
            let fix = f
                .fix
                .iter()
                .flat_map(|x| x.changes.iter().map(|c| c.path.clone()))
                .collect();
            (f.code.to_string(), f.message.clone(), fix)
        })
        .collect();
    (out.summary.objects, hits)
}

#[test]
fn ray_executor_is_held_to_the_whole_clusters_gpus() {
    let fleet = |workers: u32| {
        format!(
            "apiVersion: orchestration.aibrix.ai/v1alpha1\nkind: RayClusterFleet\nmetadata: {{name: f}}\nspec:\n  replicas: 1\n  strategy: {{type: RollingUpdate, rollingUpdate: {{maxSurge: 1, maxUnavailable: 0}}}}\n  template:\n    spec:\n      headGroupSpec: {{template: {{spec: {{containers: [{{name: head, image: vllm/vllm-openai, command: [vllm, serve, m, --tensor-parallel-size, \"16\", --distributed-executor-backend, ray], resources: {{limits: {{nvidia.com/gpu: 8}}}}}}]}}}}}}\n      workerGroupSpecs:\n        - {{replicas: {workers}, template: {{spec: {{containers: [{{name: w, image: x, command: [ray, start], resources: {{limits: {{nvidia.com/gpu: 8}}}}}}]}}}}}}\n"
        )
    };
    let hits: Vec<_> = lint(&fleet(0))
        .into_iter()
        .filter(|h| h.0 == "IR009")
        .collect();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert!(
        hits[0].1.contains("placed by Ray's distributed executor (`--distributed-executor-backend ray`) on the GPUs of the whole Ray cluster, which has 8"),
        "{}",
        hits[0].1
    );
    assert!(hits[0].2.is_empty(), "no pod's request fixes it");
    assert!(lint(&fleet(1)).iter().all(|h| h.0 != "IR009"));
}

#[test]
fn kthena_findings_say_what_kthena_does() {
    let hits = lint(&kthena(1, "", 1, 1));
    assert!(
        hits[0]
            .1
            .starts_with("modelserving ms role prefill is 1 2-node group(s)"),
        "{}",
        hits[0].1
    );
    assert!(
        hits[0]
            .1
            .contains("since kthena deletes a ServingGroup before it rebuilds it"),
        "{}",
        hits[0].1
    );
    let hits = lint(&kthena(1, "", 1, 0));
    assert!(
        hits[0]
            .1
            .contains("kthena deletes an outdated ServingGroup and then rebuilds it, keeping 1 - maxUnavailable 1 available (no surge)"),
        "{}",
        hits[0].1
    );
}

#[test]
fn a_nim_service_on_kserve_rolls_as_its_deployment_mode() {
    let nim = |annotations: &str| {
        format!(
            "apiVersion: apps.nvidia.com/v1alpha1\nkind: NIMService\nmetadata: {{name: nim}}\nspec:\n  inferencePlatform: kserve\n  annotations: {{{annotations}}}\n  image: {{repository: nvcr.io/nim/meta/llama, tag: \"1\"}}\n  replicas: 1\n  resources: {{limits: {{nvidia.com/gpu: 8}}}}\n"
        )
    };
    let standard = lint(&nim("serving.kserve.io/deploymentMode: Standard"));
    assert_eq!(standard.len(), 1, "{standard:?}");
    assert!(
        standard[0].1.contains("the NIM operator renders a KServe InferenceService (`inferencePlatform: kserve`, deployment mode Standard) whose predictor Deployment rolls with maxSurge 0 and maxUnavailable 25%"),
        "{}",
        standard[0].1
    );
    // Knative: the new Revision (8 of 8 GPUs) needs a free node, no gap.
    let knative = lint(&nim(""));
    assert_eq!(
        knative.iter().map(|h| h.0.as_str()).collect::<Vec<_>>(),
        ["IR004"]
    );
    assert!(
        knative[0]
            .1
            .contains("nimservice nim requests 8 nvidia.com/gpu"),
        "{}",
        knative[0].1
    );
    assert_eq!(
        outcome(&nim("serving.kserve.io/deploymentMode: ModelMesh")),
        Outcome::Named("`inferencePlatform: kserve` with deployment mode ModelMesh: infera reads the NIM operator's Standard and Knative InferenceServices".into())
    );
}
