//! Each serving kind as its operator renders it, through the engine.

use crate::engine::lint_source;
use crate::options::LintOptions;

/// (code, path of the finding, fix change paths) of each finding.
fn lint(yaml: &str) -> Vec<(String, String, Vec<String>)> {
    let opts = LintOptions {
        node_gpus: 8,
        ..LintOptions::default()
    };
    let out = lint_source("t.yaml", yaml.as_bytes(), &opts);
    assert!(out.input_errors.is_empty(), "{:?}", out.input_errors);
    assert_eq!(out.summary.objects, 1, "{yaml}");
    out.findings
        .iter()
        .map(|f| {
            let fix = f
                .fix
                .iter()
                .flat_map(|x| x.changes.iter().map(|c| c.path.clone()))
                .collect();
            (f.code.to_string(), f.message.clone(), fix)
        })
        .collect()
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
