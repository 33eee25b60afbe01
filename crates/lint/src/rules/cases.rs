//! Every rule on a manifest where it must fire and one where it must not: a
//! table of (rule, manifest, expected), run through the engine with only
//! that rule enabled, so each row reads like the rule's spec.

use crate::engine::lint_source;
use crate::options::LintOptions;

/// `spec.services.w` of an InferaDeployment, in YAML flow style.
fn idep(service: &str) -> String {
    format!(
        "apiVersion: infera.amd.com/v1alpha1\nkind: InferaDeployment\nmetadata: {{name: t}}\nspec:\n  services:\n    w: {service}\n"
    )
}

/// A worker service whose pod is `pod` (an `extraPodSpec`, flow style).
fn idep_pod(pod: &str) -> String {
    idep(&format!("{{componentType: worker, extraPodSpec: {pod}}}"))
}

/// A main container that runs the engine, with `extra` fields.
fn engine(extra: &str) -> String {
    let sep = if extra.is_empty() { "" } else { ", " };
    format!("{{name: main, image: x, command: [python3, -m, infera.engine.sglang]{sep}{extra}}}")
}

/// An apps/v1 Deployment of `replicas` pods with `strategy` and `container`.
fn deployment(replicas: u32, strategy: &str, container: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d}}\nspec:\n  replicas: {replicas}\n  strategy: {strategy}\n  selector: {{matchLabels: {{app: d}}}}\n  template:\n    metadata: {{labels: {{app: d}}}}\n    spec: {{containers: [{container}]}}\n"
    )
}

/// An apps/v1 StatefulSet of `replicas` pods with `strategy` and `container`.
fn statefulset(replicas: u32, strategy: &str, container: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: s}}\nspec:\n  replicas: {replicas}\n  updateStrategy: {strategy}\n  serviceName: s\n  selector: {{matchLabels: {{app: s}}}}\n  template:\n    metadata: {{labels: {{app: s}}}}\n    spec: {{containers: [{container}]}}\n"
    )
}

/// A LeaderWorkerSet of `replicas` groups of `size` pods, rolled by
/// `rollout`, whose leader runs `leader`.
fn lws(replicas: u32, size: u32, rollout: &str, leader: &str) -> String {
    format!(
        "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {{name: l}}\nspec:\n  replicas: {replicas}\n  rolloutStrategy: {rollout}\n  leaderWorkerTemplate:\n    size: {size}\n    leaderTemplate: {{spec: {{containers: [{leader}]}}}}\n    workerTemplate: {{spec: {{containers: [{{name: w, image: x, command: [ray, start]}}]}}}}\n"
    )
}

/// A DynamoGraphDeployment with one worker service `s` (flow style).
fn dynamo(service: &str) -> String {
    format!(
        "apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeployment\nmetadata: {{name: g}}\nspec:\n  services:\n    Frontend: {{componentType: frontend, replicas: 1}}\n    w: {service}\n"
    )
}

/// A Dynamo vLLM worker with `args`, `gpu` GPUs and `extra` service fields.
fn dynamo_vllm(args: &str, gpu: u32, extra: &str) -> String {
    dynamo(&format!(
        "{{componentType: worker, {extra}resources: {{limits: {{gpu: \"{gpu}\"}}}}, extraPodSpec: {{mainContainer: {{image: x, command: [python3, -m, dynamo.vllm], args: [{args}]}}}}}}"
    ))
}

/// A NIMService of one replica on KServe, with `annotations` (flow style
/// entries) for the InferenceService.
fn nim_on_kserve(annotations: &str) -> String {
    format!(
        "apiVersion: apps.nvidia.com/v1alpha1\nkind: NIMService\nmetadata: {{name: nim}}\nspec:\n  inferencePlatform: kserve\n  annotations: {{{annotations}}}\n  image: {{repository: nvcr.io/nim/meta/llama-3.2-1b-instruct, tag: \"1.12.0\"}}\n  resources: {{limits: {{nvidia.com/gpu: 1}}}}\n  replicas: 1\n"
    )
}

/// An AIBrix RayClusterFleet whose head (8 GPUs) runs vLLM at TP 16 with
/// `flags`, beside `workers` worker pods of 8 GPUs.
fn ray_fleet(flags: &str, workers: u32) -> String {
    format!(
        "apiVersion: orchestration.aibrix.ai/v1alpha1\nkind: RayClusterFleet\nmetadata: {{name: f}}\nspec:\n  replicas: 1\n  strategy: {{type: RollingUpdate, rollingUpdate: {{maxSurge: 1, maxUnavailable: 0}}}}\n  template:\n    spec:\n      headGroupSpec: {{template: {{spec: {{containers: [{{name: head, image: vllm/vllm-openai, command: [vllm, serve, m, --tensor-parallel-size, \"16\", {flags}], resources: {{limits: {{nvidia.com/gpu: 8}}}}}}]}}}}}}\n      workerGroupSpecs:\n        - {{replicas: {workers}, template: {{spec: {{containers: [{{name: w, image: vllm/vllm-openai, command: [ray, start], resources: {{limits: {{nvidia.com/gpu: 8}}}}}}]}}}}}}\n"
    )
}

const VLLM: &str = "{name: vllm, image: vllm/vllm-openai:v0.9.0, command: [vllm, serve, m]}";
const VLLM_TP4_1GPU: &str = "{name: vllm, image: vllm/vllm-openai:v0.9.0, args: [--model, m, --tensor-parallel-size, \"4\"], resources: {limits: {nvidia.com/gpu: 1}}}";
const VLLM_PROBED: &str = "{name: vllm, image: x, command: [python3, -m, vllm.entrypoints.openai.api_server], readinessProbe: {httpGet: {path: /health, port: 8000}}}";
const SIDECAR_READY: &str = "{name: aibrix-runtime, image: aibrix/runtime, command: [aibrix_runtime], readinessProbe: {httpGet: {path: /ready, port: 8080}, timeoutSeconds: 1}}";
const LEADER_TCP: &str = "{name: leader, image: vllm/vllm-openai, command: [sh, -c, \"vllm serve m --tensor-parallel-size 8 --pipeline-parallel-size 2\"], resources: {limits: {nvidia.com/gpu: 8}}, readinessProbe: {tcpSocket: {port: 8080}}}";
const LEADER_BARE: &str = "{name: leader, image: x, command: [python3, -m, sglang.launch_server, --tp, \"16\"], resources: {limits: {nvidia.com/gpu: 8}}}";

const PIN: &str = "nodeSelector: {kubernetes.io/hostname: gpu-1}";
const READY: &str = "readinessProbe: {httpGet: {path: /ready, port: 30090}, timeoutSeconds: 10}";

/// A required pod anti-affinity on the hostname, of this label selector (flow style).
fn anti(selector: &str) -> String {
    format!(
        "affinity: {{podAntiAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: [{{topologyKey: kubernetes.io/hostname, labelSelector: {{{selector}}}}}]}}}}"
    )
}

/// (rule, what the row shows, manifest, fires).
#[rustfmt::skip]
fn cases() -> Vec<(&'static str, &'static str, String, bool)> {
    let gpus = |n: u32| format!("resources: {{limits: {{amd.com/gpu: {n}}}}}");
    let mut rows = vec![
        // IR001 skip-probe-serving
        ("IR001", "serving worker skips the probe", idep("{componentType: worker, skipReadinessProbe: true}"), true),
        ("IR001", "probe kept", idep("{componentType: worker}"), false),
        ("IR001", "idle-deployed worker", idep_pod("{containers: [{name: main, image: x, command: [sleep, infinity]}]}").replace("worker,", "worker, skipReadinessProbe: true,"), false),
        // IR002 surge-stall-gpu
        ("IR002", "pinned, 8 of 8 GPUs", idep_pod(&format!("{{{PIN}, containers: [{}]}}", engine(&gpus(8)))), true),
        ("IR002", "pinned, 4 of 8 GPUs", idep_pod(&format!("{{{PIN}, containers: [{}]}}", engine(&gpus(4)))), false),
        ("IR002", "8 GPUs, not pinned", idep_pod(&format!("{{containers: [{}]}}", engine(&gpus(8)))), false),
        ("IR002", "pinned to a placeholder, 8 of 8 GPUs", idep_pod(&format!("{{nodeSelector: {{kubernetes.io/hostname: <NODE>}}, containers: [{}]}}", engine(&gpus(8)))), true),
        ("IR002", "pinned, GPU count a placeholder", idep_pod(&format!("{{{PIN}, containers: [{}]}}", engine("resources: {limits: {amd.com/gpu: \"${GPUS}\"}}"))), false),
        // IR003 surge-stall-host-port
        ("IR003", "hostNetwork, pinned", idep_pod(&format!("{{hostNetwork: true, {PIN}, containers: [{}]}}", engine(""))), true),
        ("IR003", "hostNetwork, not pinned", idep_pod(&format!("{{hostNetwork: true, containers: [{}]}}", engine(""))), false),
        // IR004 surge-needs-spare-node
        ("IR004", "hostNetwork, not pinned", idep_pod(&format!("{{hostNetwork: true, containers: [{}]}}", engine(""))), true),
        ("IR004", "shares a node", idep_pod(&format!("{{containers: [{}]}}", engine(""))), false),
        ("IR004", "8 of 8 GPUs, not pinned", idep_pod(&format!("{{containers: [{}]}}", engine(&gpus(8)))), true),
        ("IR004", "4 of 8 GPUs, not pinned", idep_pod(&format!("{{containers: [{}]}}", engine(&gpus(4)))), false),
        ("IR004", "8 of 8 GPUs, pinned (IR002's)", idep_pod(&format!("{{{PIN}, containers: [{}]}}", engine(&gpus(8)))), false),
        ("IR004", "anti-affine to its own pods by expression", idep_pod(&format!("{{{}, containers: [{}]}}", anti("matchExpressions: [{key: infera.amd.com/deployment, operator: In, values: [t, u]}]"), engine(""))), true),
        ("IR004", "anti-affine to other pods by expression", idep_pod(&format!("{{{}, containers: [{}]}}", anti("matchExpressions: [{key: infera.amd.com/deployment, operator: NotIn, values: [t]}]"), engine(""))), false),
        // IR005 probe-not-registration
        ("IR005", "probes /health", idep_pod(&format!("{{containers: [{}]}}", engine("readinessProbe: {httpGet: {path: /health, port: 30000}}"))), true),
        ("IR005", "probes /health, two replicas", idep_pod(&format!("{{containers: [{}]}}", engine("readinessProbe: {httpGet: {path: /health, port: 30000}}"))).replace("worker,", "worker, replicas: 2,"), true),
        ("IR005", "probes /ready on the readiness port", idep_pod(&format!("{{containers: [{}]}}", engine(READY))), false),
        // IR006 readiness-port-unknowable
        ("IR006", "port with a space", idep("{componentType: worker, env: [{name: INFERA_READINESS_PORT, value: \" 30090\"}]}"), true),
        ("IR006", "port from valueFrom", idep("{componentType: worker, env: [{name: INFERA_READINESS_PORT, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]}"), true),
        ("IR006", "port with a space, two replicas", idep("{componentType: worker, replicas: 2, env: [{name: INFERA_READINESS_PORT, value: \" 30090\"}]}"), true),
        ("IR006", "plain integer port", idep("{componentType: worker, env: [{name: INFERA_READINESS_PORT, value: \"30090\"}]}"), false),
        // IR007 surge-without-readiness
        ("IR007", "engine, default strategy, no probe", deployment(1, "{}", &engine("")), true),
        ("IR007", "engine with a /ready probe", deployment(1, "{}", &engine(READY)), false),
        ("IR007", "not the engine", deployment(1, "{}", "{name: web, image: nginx}"), false),
        ("IR007", "vllm serve, no probe", deployment(1, "{}", VLLM), true),
        ("IR007", "vllm api_server with a probe", deployment(1, "{}", VLLM_PROBED), false),
        ("IR007", "four vllm replicas (surge 1, unavailable 1), no probe", deployment(4, "{}", VLLM), true),
        ("IR007", "sglang.launch_server, no probe", deployment(1, "{}", "{name: s, image: x, command: [python3, -m, sglang.launch_server]}"), true),
        ("IR007", "TGI image keeps its entrypoint, no probe", deployment(1, "{}", "{name: tgi, image: ghcr.io/huggingface/text-generation-inference:2.0}"), true),
        ("IR007", "NIM image, no probe", deployment(1, "{}", "{name: nim, image: nvcr.io/nim/meta/llama3-8b-instruct:1.0.0}"), true),
        ("IR007", "Triton with /v2/health/ready", deployment(1, "{}", "{name: t, image: nvcr.io/nvidia/tritonserver:24.05-trtllm-python-py3, readinessProbe: {httpGet: {path: /v2/health/ready, port: 8000}}}"), false),
        ("IR007", "engine image running a shell, no probe", deployment(1, "{}", "{name: v, image: vllm/vllm-openai, command: [sleep, infinity]}"), false),
        ("IR007", "engine after a sidecar, no probe", deployment(1, "{}", &format!("{SIDECAR_READY}, {VLLM}")), true),
        ("IR007", "old pod first (IR008's)", deployment(1, "{rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}", VLLM), false),
        ("IR007", "a LeaderWorkerSet (IR012's)", lws(1, 2, "{}", LEADER_BARE), false),
        // IR008 single-replica-gap
        ("IR008", "one replica, Recreate", deployment(1, "{type: Recreate}", "{name: web, image: nginx}"), true),
        ("IR008", "one replica, maxSurge 0", deployment(1, "{rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}", "{name: web, image: nginx}"), true),
        ("IR008", "two replicas, Recreate (every pod goes first)", deployment(2, "{type: Recreate}", "{name: web, image: nginx}"), true),
        ("IR008", "scaled to zero: nothing serves, nothing to keep", deployment(0, "{rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}", "{name: web, image: nginx}"), false),
        ("IR008", "one replica, surge first", deployment(1, "{rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}", "{name: web, image: nginx}"), false),
        ("IR008", "one replica, maxSurge 1 and maxUnavailable 1", deployment(1, "{rollingUpdate: {maxSurge: 1, maxUnavailable: 1}}", VLLM_PROBED), true),
        ("IR008", "two replicas, maxSurge 1 and maxUnavailable 1", deployment(2, "{rollingUpdate: {maxSurge: 1, maxUnavailable: 1}}", VLLM_PROBED), false),
        ("IR008", "two replicas, maxUnavailable 100%", deployment(2, "{rollingUpdate: {maxSurge: 1, maxUnavailable: \"100%\"}}", VLLM_PROBED), true),
        ("IR008", "one replica, maxUnavailable 50% rounds down to 0", deployment(1, "{rollingUpdate: {maxUnavailable: \"50%\"}}", VLLM_PROBED), false),
        ("IR008", "one infera engine, maxSurge 1 and maxUnavailable 1", deployment(1, "{rollingUpdate: {maxSurge: 1, maxUnavailable: 1}}", &engine(READY)), true),
        ("IR008", "StatefulSet of one model server", statefulset(1, "{}", VLLM_PROBED), true),
        ("IR008", "StatefulSet of two model servers", statefulset(2, "{}", VLLM_PROBED), false),
        ("IR008", "StatefulSet of one model server, OnDelete", statefulset(1, "{type: OnDelete}", VLLM_PROBED), false),
        ("IR008", "StatefulSet of one web server", statefulset(1, "{}", "{name: web, image: nginx}"), false),
        ("IR008", "NIMService on KServe, no deployment mode: a Knative Revision surges", nim_on_kserve(""), false),
        ("IR008", "NIMService on KServe, Standard: maxSurge 0", nim_on_kserve("serving.kserve.io/deploymentMode: Standard"), true),
        // IR009 gpu-request-below-parallelism
        ("IR009", "tp 8 on 1 GPU", idep("{componentType: worker, args: [--tp-size, \"8\"], resources: {gpu: 1}}"), true),
        ("IR009", "tp 8 on 8 GPUs", idep("{componentType: worker, args: [--tp-size, \"8\"], resources: {gpu: 8}}"), false),
        ("IR009", "tp from a variable", idep("{componentType: worker, args: [--tp-size, $TP], resources: {gpu: 1}}"), false),
        ("IR009", "vLLM image, tp 4 on 1 GPU", deployment(1, "{}", VLLM_TP4_1GPU), true),
        ("IR009", "TGI --num-shard 2 on 2 GPUs", deployment(1, "{}", "{name: tgi, image: ghcr.io/huggingface/text-generation-inference:2, args: [--num-shard, \"2\"], resources: {limits: {nvidia.com/gpu: 2}}}"), false),
        ("IR009", "TGI NUM_SHARD 4 on 2 GPUs", deployment(1, "{}", "{name: tgi, image: ghcr.io/huggingface/text-generation-inference:2, env: [{name: NUM_SHARD, value: \"4\"}], resources: {limits: {nvidia.com/gpu: 2}}}"), true),
        ("IR009", "vLLM on TPU: tp 4, no GPU request", deployment(1, "{}", "{name: v, image: vllm/vllm-tpu, command: [vllm, serve, m, -tp, \"4\"], resources: {limits: {google.com/tpu: 4}}}"), false),
        ("IR009", "LWS leader tp 8 x pp 2 over 2 nodes of 8", lws(1, 2, "{}", LEADER_TCP), false),
        ("IR009", "Dynamo vLLM tp 2 over 2 nodes of 1", dynamo_vllm("--tensor-parallel-size, \"2\"", 1, "replicas: 1, multinode: {nodeCount: 2}, "), false),
        ("IR009", "Dynamo vLLM tp 4 on 1 GPU", dynamo_vllm("--tensor-parallel-size, \"4\"", 1, "replicas: 2, "), true),
        ("IR009", "vLLM on Ray's executor, tp 16 over a head and a worker of 8", ray_fleet("--distributed-executor-backend, ray", 1), false),
        ("IR009", "vLLM on Ray's executor, tp 16 over a head of 8 alone", ray_fleet("--distributed-executor-backend, ray", 0), true),
        ("IR009", "vLLM on its own executor, tp 16 in a head of 8", ray_fleet("--distributed-executor-backend, mp", 1), true),
        // IR010 ready-probe-timeout-short
        ("IR010", "/ready with timeoutSeconds 5", idep_pod(&format!("{{containers: [{}]}}", engine("readinessProbe: {httpGet: {path: /ready, port: 30090}, timeoutSeconds: 5}"))), true),
        ("IR010", "/ready with timeoutSeconds 10", idep_pod(&format!("{{containers: [{}]}}", engine(READY))), false),
        ("IR010", "the operator's injected probe", idep("{componentType: worker}"), false),
        ("IR010", "a sidecar's own /ready", deployment(1, "{}", &format!("{VLLM_PROBED}, {SIDECAR_READY}")), false),
        ("IR010", "plain Deployment of the infera engine, /ready 5 s", deployment(1, "{}", &engine("readinessProbe: {httpGet: {path: /ready, port: 30090}, timeoutSeconds: 5}")), true),
        // IR011 unresolved-placeholder
        ("IR011", "replicas placeholder", idep("{componentType: worker, replicas: \"${N}\"}"), true),
        ("IR011", "replicas as a Helm expression", idep("{componentType: worker, replicas: \"{{ .Values.n }}\"}"), true),
        ("IR011", "hostname as a Helm expression, in a block mapping", "apiVersion: infera.amd.com/v1alpha1\nkind: InferaDeployment\nmetadata:\n  name: t\nspec:\n  services:\n    w:\n      componentType: worker\n      extraPodSpec:\n        nodeSelector:\n          kubernetes.io/hostname: \"{{ .Values.node }}\"\n".to_string(), true),
        ("IR011", "hostname placeholder", idep_pod(&format!("{{nodeSelector: {{kubernetes.io/hostname: <NODE>}}, containers: [{}]}}", engine(""))), true),
        // Block style throughout: the text's only way to a `$` is the escape.
        ("IR011", "placeholder spelled by a double-quoted escape", "apiVersion: infera.amd.com/v1alpha1\nkind: InferaDeployment\nmetadata:\n  name: t\nspec:\n  services:\n    w:\n      componentType: worker\n      replicas: \"\\u0024\\u007bN\\u007d\"\n".to_string(), true),
        ("IR011", "placeholder in a field no rule needs", idep("{componentType: worker, image: \"<IMAGE>\"}"), false),
        // IR012 multinode-gap
        ("IR012", "two nodes, one group", idep("{componentType: worker, numberOfNodes: 2, replicas: 1}"), true),
        ("IR012", "two nodes, two groups", idep("{componentType: worker, numberOfNodes: 2, replicas: 2}"), false),
        ("IR012", "one node", idep("{componentType: worker, replicas: 1}"), false),
        ("IR012", "LWS, one group with a tcpSocket probe", lws(1, 2, "{}", LEADER_TCP), true),
        ("IR012", "LWS, two groups", lws(2, 2, "{}", LEADER_TCP), false),
        ("IR012", "LWS, two groups, maxUnavailable 2", lws(2, 2, "{rollingUpdateConfiguration: {maxUnavailable: 2}}", LEADER_TCP), true),
        ("IR012", "LWS, one group, surge group with a probe", lws(1, 2, "{rollingUpdateConfiguration: {maxSurge: 1, maxUnavailable: 0}}", LEADER_TCP), false),
        ("IR012", "LWS, one group, surge group without a probe", lws(1, 2, "{rollingUpdateConfiguration: {maxSurge: 1, maxUnavailable: 0}}", LEADER_BARE), true),
        ("IR012", "LWS of size 1", lws(1, 1, "{}", LEADER_BARE), false),
        ("IR012", "Dynamo multinode service, one replica", dynamo_vllm("--tensor-parallel-size, \"2\"", 1, "replicas: 1, multinode: {nodeCount: 2}, "), true),
        ("IR012", "Dynamo multinode service, two replicas", dynamo_vllm("--tensor-parallel-size, \"2\"", 1, "replicas: 2, multinode: {nodeCount: 2}, "), false),
        ("IR012", "Dynamo single-node service, one replica", dynamo_vllm("", 1, "replicas: 1, "), false),
    ];
    rows.extend(disruption_cases());
    rows
}

/// The rows of the disruption rules (IR013–IR017).
#[rustfmt::skip]
fn disruption_cases() -> Vec<(&'static str, &'static str, String, bool)> {
    vec![
        // IR013 budget-blocks-drain
        ("IR013", "minAvailable 1 of 1 replica", deployment(1, "{}", VLLM) + &budget("minAvailable: 1", "app: d"), true),
        ("IR013", "minAvailable 2 of 2 replicas", deployment(2, "{}", VLLM) + &budget("minAvailable: 2", "app: d"), true),
        ("IR013", "maxUnavailable 0%", deployment(3, "{}", VLLM) + &budget("maxUnavailable: 0%", "app: d"), true),
        ("IR013", "InferaDeployment worker, maxUnavailable 0", idep("{componentType: worker, replicas: 2}") + &budget("maxUnavailable: 0", "infera.amd.com/deployment: t"), true),
        ("IR013", "minAvailable 1 of 2 replicas", deployment(2, "{}", VLLM) + &budget("minAvailable: 1", "app: d"), false),
        ("IR013", "maxUnavailable 1", deployment(1, "{}", VLLM) + &budget("maxUnavailable: 1", "app: d"), false),
        ("IR013", "budget selects other pods", deployment(1, "{}", VLLM) + &budget("minAvailable: 1", "app: other"), false),
        ("IR013", "budget in another namespace", deployment(1, "{}", VLLM) + &budget("minAvailable: 1", "app: d").replace("name: b}", "name: b, namespace: other}"), false),
        ("IR013", "not a model server", deployment(1, "{}", "{name: web, image: nginx}") + &budget("minAvailable: 1", "app: d"), false),
        // IR014 single-replica-no-budget (the harness lints these as live: every budget listed)
        ("IR014", "one replica, no budget", deployment(1, "{}", VLLM), true),
        ("IR014", "InferaDeployment worker, one replica, no budget", idep("{componentType: worker, replicas: 1}"), true),
        ("IR014", "one replica, a budget covers it", deployment(1, "{}", VLLM) + &budget("maxUnavailable: 1", "app: d"), false),
        ("IR014", "two replicas", deployment(2, "{}", VLLM), false),
        // IR015 surge-volume-attach
        ("IR015", "ReadWriteOnce claim, whole-node GPUs", surge_with_claim(VLLM_8GPU) + &claim("ReadWriteOnce"), true),
        ("IR015", "ReadWriteOncePod claim", surge_with_claim(VLLM) + &claim("ReadWriteOncePod"), true),
        ("IR015", "claim not in the input, whole-node GPUs", surge_with_claim(VLLM_8GPU), true),
        ("IR015", "ReadWriteOnce claim, the surge pod may share the node", surge_with_claim(VLLM) + &claim("ReadWriteOnce"), false),
        ("IR015", "ReadWriteMany claim, whole-node GPUs", surge_with_claim(VLLM_8GPU) + &claim("ReadWriteMany"), false),
        ("IR015", "claim not in the input, nothing forces a move", surge_with_claim(VLLM), false),
        ("IR015", "old pod first", surge_with_claim(VLLM).replace("maxSurge: 1, maxUnavailable: 0", "maxSurge: 0, maxUnavailable: 1") + &claim("ReadWriteOncePod"), false),
        // IR016 shutdown-budget-short
        ("IR016", "vLLM drains 60 s after a 15 s preStop, grace 30", deployment(2, "{}", "{name: vllm, image: vllm/vllm-openai, args: [--model, m, --shutdown-timeout, \"60\"], lifecycle: {preStop: {exec: {command: [sleep, \"15\"]}}}}"), true),
        ("IR016", "preStop sleep 45, default grace", deployment(2, "{}", "{name: vllm, image: vllm/vllm-openai, lifecycle: {preStop: {sleep: {seconds: 45}}}}"), true),
        ("IR016", "TGI's default drain of 90 s, default grace", deployment(2, "{}", "{name: tgi, image: ghcr.io/huggingface/text-generation-inference:3.0}"), true),
        ("IR016", "InferaDeployment worker, preStop 200 s beyond the operator's 120 s grace", idep_pod(&format!("{{containers: [{}]}}", engine("lifecycle: {preStop: {exec: {command: [sleep, \"200\"]}}}"))), true),
        ("IR016", "vLLM drains 60 s after a 15 s preStop, grace 90", deployment(2, "{}", "{name: vllm, image: vllm/vllm-openai, args: [--model, m, --shutdown-timeout, \"60\"], lifecycle: {preStop: {exec: {command: [sleep, \"15\"]}}}}").replace("spec: {containers:", "spec: {terminationGracePeriodSeconds: 90, containers:"), false),
        ("IR016", "vLLM's default drain (none), preStop 20", deployment(2, "{}", "{name: vllm, image: vllm/vllm-openai, lifecycle: {preStop: {exec: {command: [sleep, \"20\"]}}}}"), false),
        ("IR016", "InferaDeployment worker, the operator's grace", idep_pod(&format!("{{containers: [{}]}}", engine(""))), false),
        // IR017 progress-deadline-short
        ("IR017", "startup budget 1800 s, default deadline", deployment(1, "{}", "{name: vllm, image: vllm/vllm-openai, startupProbe: {httpGet: {path: /health, port: 8000}, periodSeconds: 10, failureThreshold: 180}}"), true),
        ("IR017", "readiness initial delay 900 s", deployment(1, "{}", "{name: vllm, image: vllm/vllm-openai, readinessProbe: {httpGet: {path: /health, port: 8000}, initialDelaySeconds: 900}}"), true),
        ("IR017", "startup budget 1800 s, deadline 1800", deployment(1, "{}", "{name: vllm, image: vllm/vllm-openai, startupProbe: {httpGet: {path: /health, port: 8000}, periodSeconds: 10, failureThreshold: 180}}").replace("  strategy:", "  progressDeadlineSeconds: 1800\n  strategy:"), false),
        ("IR017", "startup budget 300 s", deployment(1, "{}", "{name: vllm, image: vllm/vllm-openai, startupProbe: {httpGet: {path: /health, port: 8000}, periodSeconds: 10, failureThreshold: 30}}"), false),
        ("IR017", "InferaDeployment: the operator owns the deadline", idep_pod(&format!("{{containers: [{}]}}", engine("startupProbe: {httpGet: {path: /health, port: 30000}, periodSeconds: 10, failureThreshold: 300}"))), false),
    ]
}

/// A PodDisruptionBudget document (`---` first) with `rule` selecting `labels`.
fn budget(rule: &str, labels: &str) -> String {
    format!(
        "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: b}}\nspec: {{{rule}, selector: {{matchLabels: {{{labels}}}}}}}\n"
    )
}

/// A PersistentVolumeClaim `weights` document (`---` first).
fn claim(mode: &str) -> String {
    format!(
        "---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: weights}}\nspec: {{accessModes: [{mode}], resources: {{requests: {{storage: 100Gi}}}}}}\n"
    )
}

const VLLM_8GPU: &str = "{name: vllm, image: vllm/vllm-openai, args: [--model, m, --tensor-parallel-size, \"8\"], resources: {limits: {nvidia.com/gpu: 8}}}";

/// A surge-first Deployment of `container` mounting the claim `weights`.
fn surge_with_claim(container: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d}}\nspec:\n  replicas: 1\n  strategy: {{rollingUpdate: {{maxSurge: 1, maxUnavailable: 0}}}}\n  selector: {{matchLabels: {{app: d}}}}\n  template:\n    metadata: {{labels: {{app: d}}}}\n    spec: {{containers: [{container}], volumes: [{{name: w, persistentVolumeClaim: {{claimName: weights}}}}]}}\n"
    )
}

/// Rules reported only where every budget is listed (`lint --cluster`):
/// their rows are linted as such.
const LIVE_ONLY: [&str; 1] = ["IR014"];

#[test]
fn single_replica_without_a_budget_is_never_reported_on_files() {
    let opts = LintOptions {
        node_gpus: 8,
        enabled: vec!["IR014"],
        ..LintOptions::default()
    };
    let out = lint_source("case.yaml", deployment(1, "{}", VLLM).as_bytes(), &opts);
    assert!(out.findings.is_empty(), "{:?}", out.findings);
}

#[test]
fn every_rule_fires_and_stays_quiet() {
    let mut failures = Vec::new();
    for (code, what, manifest, fires) in cases() {
        let opts = LintOptions {
            node_gpus: 8,
            enabled: vec![code],
            every_budget: LIVE_ONLY.contains(&code),
            ..LintOptions::default()
        };
        let out = lint_source("case.yaml", manifest.as_bytes(), &opts);
        if !out.input_errors.is_empty() {
            failures.push(format!(
                "{code} {what}: input errors {:?}\n{manifest}",
                out.input_errors
            ));
            continue;
        }
        let found = out.findings.iter().filter(|f| f.code == code).count();
        if (found > 0) != fires {
            failures.push(format!(
                "{code} {what}: expected {}, got {:?}\n{manifest}",
                if fires { "a finding" } else { "none" },
                out.findings
                    .iter()
                    .map(|f| (f.code, f.message.as_str()))
                    .collect::<Vec<_>>()
            ));
        }
        // Every finding points into the manifest.
        for f in &out.findings {
            if f.line == 0 || f.line > manifest.lines().count() {
                failures.push(format!("{code} {what}: line {} out of range", f.line));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_rule_has_a_positive_and_a_negative_case() {
    let cases = cases();
    for (meta, _) in &super::REGISTRY {
        for want in [true, false] {
            assert!(
                cases
                    .iter()
                    .any(|(c, _, _, f)| *c == meta.code && *f == want),
                "{} has no {} case",
                meta.code,
                if want { "positive" } else { "negative" }
            );
        }
    }
}

#[test]
fn declared_and_emitted_severities_agree() {
    use crate::finding::Severity;
    let mut failures = Vec::new();
    let mut declared_seen = std::collections::BTreeSet::new();
    for (code, what, manifest, _) in cases() {
        let Some(meta) = crate::engine::rule(code) else {
            failures.push(format!("{code}: no such rule"));
            continue;
        };
        let opts = LintOptions {
            node_gpus: 8,
            enabled: vec![code],
            every_budget: LIVE_ONLY.contains(&code),
            ..LintOptions::default()
        };
        let out = lint_source("case.yaml", manifest.as_bytes(), &opts);
        for f in out.findings.iter().filter(|f| f.code == code) {
            if f.severity == meta.default_severity {
                declared_seen.insert(code);
                continue;
            }
            // Any other severity must be documented on the rule's page.
            let documented = match f.severity {
                Severity::Error => "**Escalates to an error**",
                Severity::Warning => "**Lowered to a warning**",
            };
            if !(meta.doc.contains("## Severity") && meta.doc.contains(documented)) {
                failures.push(format!(
                    "{code} {what}: emits {:?}, declares {:?}, and its page does not say when",
                    f.severity, meta.default_severity
                ));
            }
        }
    }
    for (meta, _) in &super::REGISTRY {
        if !declared_seen.contains(meta.code) {
            failures.push(format!(
                "{}: no case emits its declared severity {:?}",
                meta.code, meta.default_severity
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A worker pinned (by `pin`) to one node, binding host ports, requesting
/// `gpus`, rolled surge-first.
fn pinned_worker(pin: &str, gpus: &str) -> String {
    idep_pod(&format!(
        "{{hostNetwork: true, {pin}, containers: [{}]}}",
        engine(&format!(
            "args: [--tp-size, \"8\"], resources: {{limits: {{amd.com/gpu: {gpus}}}}}"
        ))
    ))
}

fn selector_pin(host: &str) -> String {
    format!("nodeSelector: {{kubernetes.io/hostname: {host:?}}}")
}

fn affinity_pin(host: &str) -> String {
    format!(
        "affinity: {{nodeAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: {{nodeSelectorTerms: [{{matchExpressions: [{{key: kubernetes.io/hostname, operator: In, values: [{host:?}]}}]}}]}}}}}}"
    )
}

/// Node inventory (`kubectl get nodes -o yaml` shape): name → GPUs.
fn inventory(nodes: &[(&str, u32)]) -> tempfile::NamedTempFile {
    let items: Vec<String> = nodes
        .iter()
        .map(|(n, g)| {
            format!(
                "- {{kind: Node, metadata: {{name: {n}, labels: {{kubernetes.io/hostname: {n}}}}}, status: {{allocatable: {{amd.com/gpu: \"{g}\"}}}}}}"
            )
        })
        .collect();
    let mut f = tempfile::NamedTempFile::new().expect("temp file");
    std::io::Write::write_all(
        &mut f,
        format!("apiVersion: v1\nkind: List\nitems:\n{}\n", items.join("\n")).as_bytes(),
    )
    .expect("write inventory");
    f
}

/// Hostname placeholders in every form, in nodeSelector and node affinity,
/// with and without `--nodes`: the pin is one node whatever it names, so
/// IR002 and IR003 are decided and IR011 says it blocked nothing.
#[test]
fn hostname_placeholders_block_no_verdict() {
    use crate::finding::Severity::{Error, Warning};
    let small = inventory(&[("gpu-a", 8), ("gpu-b", 8)]);
    let mixed = inventory(&[("gpu-a", 8), ("gpu-b", 16)]);
    let mut failures = Vec::new();
    for host in ["<NODE>", "${NODE}", "{{ .Values.node }}", "gpu-a"] {
        for (how, pin) in [
            ("nodeSelector", selector_pin(host)),
            ("affinity", affinity_pin(host)),
        ] {
            // (inventory, IR002 severity expected)
            let runs: [(
                &str,
                Option<&std::path::Path>,
                Option<crate::finding::Severity>,
            ); 3] = [
                ("no --nodes", None, Some(Error)),
                ("--nodes all 8-GPU", Some(small.path()), Some(Error)),
                // A placeholder may name the 16-GPU node: only a warning. A
                // real name is matched: gpu-a has 8.
                (
                    "--nodes 8 and 16",
                    Some(mixed.path()),
                    Some(if host == "gpu-a" { Error } else { Warning }),
                ),
            ];
            for (inv, nodes, ir002) in runs {
                let manifest = pinned_worker(&pin, "8");
                let opts = LintOptions {
                    node_gpus: 8,
                    nodes: nodes.map(std::path::Path::to_path_buf),
                    ..LintOptions::default()
                };
                let out = lint_source("case.yaml", manifest.as_bytes(), &opts);
                let row = format!("{host} in {how}, {inv}");
                let find = |c: &str| out.findings.iter().find(|f| f.code == c);
                if !out.input_errors.is_empty() {
                    failures.push(format!("{row}: input errors {:?}", out.input_errors));
                    continue;
                }
                if find("IR002").map(|f| f.severity) != ir002 {
                    failures.push(format!("{row}: IR002 {:?}, want {ir002:?}", find("IR002")));
                }
                let Some(ir003) = find("IR003") else {
                    failures.push(format!("{row}: no IR003"));
                    continue;
                };
                let pinned = if host == "gpu-a" {
                    "pinned to node gpu-a".to_string()
                } else {
                    format!("pinned to one node (whichever `{host}` names)")
                };
                if !ir003.message.contains(&pinned) {
                    failures.push(format!("{row}: IR003 says {:?}", ir003.message));
                }
                let ir011 = find("IR011");
                match (host == "gpu-a", ir011) {
                    (true, None) => {}
                    (false, Some(f)) if f.message.contains("blocks: none") => {}
                    (_, other) => failures.push(format!("{row}: IR011 {other:?}")),
                }
                if find("IR004").is_some() {
                    failures.push(format!("{row}: IR004 on a pinned pod"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A GPU count placeholder blocks the GPU arithmetic (IR002, IR009) and
/// nothing else: IR003 and IR001 are still decided.
#[test]
fn gpu_count_placeholder_blocks_only_gpu_arithmetic() {
    let opts = LintOptions {
        node_gpus: 8,
        ..LintOptions::default()
    };
    let manifest = pinned_worker(&selector_pin("<NODE>"), "\"${GAIE_GPUS}\"");
    let out = lint_source("case.yaml", manifest.as_bytes(), &opts);
    let codes: Vec<_> = out.findings.iter().map(|f| f.code).collect();
    assert!(codes.contains(&"IR003"), "{codes:?}");
    assert!(
        !codes.contains(&"IR002") && !codes.contains(&"IR009"),
        "{codes:?}"
    );
    let gpu = out
        .findings
        .iter()
        .find(|f| f.code == "IR011" && f.message.contains("GAIE_GPUS"))
        .expect("IR011 on the GPU count");
    assert!(
        gpu.message
            .contains("blocks: IR002 surge-stall-gpu, IR009 gpu-request-below-parallelism"),
        "{}",
        gpu.message
    );
    let host = out
        .findings
        .iter()
        .find(|f| f.code == "IR011" && f.message.contains("<NODE>"))
        .expect("IR011 on the hostname");
    assert!(host.message.contains("blocks: none"), "{}", host.message);
    // The same worker skipping its probe: IR001 is decided.
    let skip = manifest.replace("worker,", "worker, skipReadinessProbe: true,");
    let out = lint_source("case.yaml", skip.as_bytes(), &opts);
    assert!(
        out.findings.iter().any(|f| f.code == "IR001"),
        "{:?}",
        out.findings
    );
}

/// An unpinned worker with more than half a node's GPUs needs a free node
/// per surge pod: a warning with the numbers; an error when the inventory
/// has none.
#[test]
fn whole_node_worker_needs_a_spare_node() {
    use crate::finding::Severity::{Error, Warning};
    let worker = idep_pod(&format!(
        "{{containers: [{}]}}",
        engine("resources: {limits: {amd.com/gpu: 8}}")
    ));
    let one = inventory(&[("gpu-a", 8)]);
    let two = inventory(&[("gpu-a", 8), ("gpu-b", 8)]);
    let cases: [(
        &str,
        Option<&std::path::Path>,
        crate::finding::Severity,
        &str,
    ); 3] = [
        (
            "no inventory",
            None,
            Warning,
            "needs 1 free node with 8 amd.com/gpu while the old pod runs",
        ),
        (
            "one node",
            Some(one.path()),
            Error,
            "none can take the surge pod",
        ),
        ("two nodes", Some(two.path()), Warning, "[gpu-a, gpu-b]"),
    ];
    for (what, nodes, severity, needle) in cases {
        let opts = LintOptions {
            node_gpus: 8,
            nodes: nodes.map(std::path::Path::to_path_buf),
            ..LintOptions::default()
        };
        let out = lint_source("case.yaml", worker.as_bytes(), &opts);
        // One root cause, one finding: IR004, not also IR002 (no node
        // holds both) from the same inventory.
        let f = out
            .findings
            .iter()
            .find(|f| f.code == "IR004" || f.code == "IR002")
            .unwrap_or_else(|| panic!("{what}: no IR004 in {:?}", out.findings));
        assert_eq!(f.code, "IR004", "{what}: {:?}", out.findings);
        assert_eq!(f.severity, severity, "{what}: {}", f.message);
        assert!(f.message.contains(needle), "{what}: {}", f.message);
    }
    // Two surge pods at once (maxSurge 2, maxUnavailable 0): two nodes.
    let d = deployment(
        4,
        "{rollingUpdate: {maxSurge: 2, maxUnavailable: 0}}",
        &engine(&format!(
            "{READY}, resources: {{limits: {{amd.com/gpu: 8}}}}"
        )),
    );
    let out = lint_source(
        "case.yaml",
        d.as_bytes(),
        &LintOptions {
            node_gpus: 8,
            ..LintOptions::default()
        },
    );
    let f = out
        .findings
        .iter()
        .find(|f| f.code == "IR004")
        .expect("IR004");
    assert!(
        f.message.contains("needs 2 free nodes with 8 amd.com/gpu"),
        "{}",
        f.message
    );
}

/// `--cluster`: free GPUs now (allocatable minus bound pods' requests).
#[test]
fn whole_node_worker_against_live_capacity() {
    use crate::engine::InventoryNode;
    use crate::engine::live::lint_live;
    use crate::finding::Severity::{Error, Warning};
    let node = |name: &str, free: i64| InventoryNode {
        name: name.into(),
        labels: Default::default(),
        gpus: [("amd.com/gpu".to_string(), 8)].into(),
        free: Some([("amd.com/gpu".to_string(), free)].into()),
    };
    let worker: serde_json::Value = serde_json::json!({
        "apiVersion": "infera.amd.com/v1alpha1", "kind": "InferaDeployment",
        "metadata": {"name": "big", "namespace": "prod"},
        "spec": {"services": {"w": {"componentType": "worker", "extraPodSpec": {"containers": [
            {"name": "main", "image": "x", "command": ["python3", "-m", "infera.engine.sglang"],
             "resources": {"limits": {"amd.com/gpu": 8}}}]}}}}
    });
    let opts = LintOptions {
        node_gpus: 8,
        ..LintOptions::default()
    };
    for (nodes, severity, needle) in [
        (
            vec![node("gpu-a", 0), node("gpu-b", 8)],
            Warning,
            "free now: [gpu-b]",
        ),
        (
            vec![node("gpu-a", 0), node("gpu-b", 4)],
            Error,
            "free now: [], so none can",
        ),
    ] {
        let out = lint_live(std::slice::from_ref(&worker), "cluster", &opts, Some(nodes));
        let f = out
            .findings
            .iter()
            .find(|f| f.code == "IR004")
            .expect("IR004");
        assert_eq!(f.severity, severity, "{}", f.message);
        assert!(f.message.contains(needle), "{}", f.message);
    }
}

/// What the message says matters as much as whether it fires: the numbers
/// and facts it prints are the manifest's.
#[test]
fn messages_say_what_the_manifest_says() {
    // (rule, manifest, must contain, must not contain)
    let table: [(&str, String, &[&str], &[&str]); 8] = [
        (
            "IR012",
            lws(
                2,
                2,
                "{rollingUpdateConfiguration: {maxUnavailable: 2}}",
                LEADER_TCP,
            ),
            &[
                "maxUnavailable 2",
                "no group stays up",
                "no readiness probe can help",
                "replicas: 3",
            ],
            &["mixed", "0 group(s)", "maxUnavailable 1"],
        ),
        (
            // maxUnavailable above the groups: no negative count.
            "IR012",
            lws(
                1,
                2,
                "{rollingUpdateConfiguration: {maxUnavailable: 2}}",
                LEADER_TCP,
            ),
            &["1 2-node group(s)", "no group stays up", "replicas: 3"],
            &["-1", "mixed"],
        ),
        (
            "IR012",
            lws(1, 2, "{}", LEADER_BARE),
            &[
                "leaderworkerset l is",
                "maxUnavailable 1",
                "so it will have",
                "replicas: 2",
            ],
            &["mixed"],
        ),
        (
            // The port TGI listens on (the image's PORT 80), not a declared one.
            "IR007",
            deployment(
                1,
                "{}",
                "{name: tgi, image: ghcr.io/huggingface/text-generation-inference:2, ports: [{containerPort: 8080}]}",
            ),
            &["TGI", "httpGet /health on port 80 (TGI's default)"],
            &[],
        ),
        (
            "IR007",
            deployment(
                1,
                "{}",
                "{name: tgi, image: ghcr.io/huggingface/text-generation-inference:2, env: [{name: PORT, value: '8080'}]}",
            ),
            &["httpGet /health on port 8080 (env PORT)"],
            &[],
        ),
        (
            "IR007",
            deployment(
                1,
                "{}",
                "{name: t, image: nvcr.io/nvidia/tritonserver:24.05-py3, ports: [{containerPort: 8001}, {containerPort: 8000}]}",
            ),
            &["/v2/health/ready on port 8000"],
            &["8001"],
        ),
        (
            "IR007",
            deployment(4, "{}", VLLM),
            &["maxSurge 1 and maxUnavailable 1", "/health on port 8000"],
            &[],
        ),
        (
            "IR008",
            deployment(
                1,
                "{rollingUpdate: {maxSurge: 1, maxUnavailable: 1}}",
                VLLM_PROBED,
            ),
            &["maxSurge 1 and maxUnavailable 1", "= 0"],
            &[],
        ),
    ];
    for (code, manifest, want, never) in table {
        let opts = LintOptions {
            enabled: vec![code],
            ..LintOptions::default()
        };
        let out = lint_source("case.yaml", manifest.as_bytes(), &opts);
        let messages: Vec<&str> = out.findings.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(messages.len(), 1, "{code}: {messages:?}\n{manifest}");
        for w in want {
            assert!(
                messages[0].contains(w),
                "{code}: {w:?} not in {}",
                messages[0]
            );
        }
        for n in never {
            assert!(!messages[0].contains(n), "{code}: {n:?} in {}", messages[0]);
        }
    }
}

/// The same manifests under either operator generation, every rule on: the
/// codes reported (in code order). Before PR #176 no worker surges, so the
/// surge rules stay quiet; `/health` on the engine port is the operator's
/// own probe; one replica is a certain gap (IR008, an error).
#[test]
fn rules_follow_the_operator_generation() {
    use infera_model::generation::Generation::{ProbeGatedSurge, SurgeFree};
    let gpus8 = "resources: {limits: {amd.com/gpu: 8}}";
    let health = "readinessProbe: {httpGet: {path: /health, port: 30000}}";
    let flat = idep("{componentType: worker}");
    let two = idep("{componentType: worker, replicas: 2}");
    let pinned = idep_pod(&format!("{{{PIN}, containers: [{}]}}", engine(gpus8)));
    let host_net = idep_pod(&format!(
        "{{hostNetwork: true, {PIN}, containers: [{}]}}",
        engine("")
    ));
    let own_health = idep_pod(&format!("{{containers: [{}]}}", engine(health)));
    let bad_port =
        idep("{componentType: worker, env: [{name: INFERA_READINESS_PORT, value: \" 30090\"}]}");
    let skip = idep("{componentType: worker, skipReadinessProbe: true}");
    let lws = idep("{componentType: worker, numberOfNodes: 2, replicas: 1}");
    #[rustfmt::skip]
    let rows: Vec<(&str, &String, _, &[&str])> = vec![
        ("flat, one replica", &flat, ProbeGatedSurge, &[]),
        ("flat, one replica", &flat, SurgeFree, &["IR008"]),
        ("flat, two replicas", &two, SurgeFree, &[]),
        ("pinned, 8 of 8 GPUs", &pinned, ProbeGatedSurge, &["IR002"]),
        ("pinned, 8 of 8 GPUs", &pinned, SurgeFree, &["IR008"]),
        ("hostNetwork, pinned", &host_net, ProbeGatedSurge, &["IR003"]),
        ("hostNetwork, pinned", &host_net, SurgeFree, &["IR008"]),
        ("own /health on the engine port", &own_health, ProbeGatedSurge, &["IR005"]),
        ("own /health on the engine port", &own_health, SurgeFree, &["IR008"]),
        ("readiness port with a space", &bad_port, ProbeGatedSurge, &["IR006"]),
        ("readiness port with a space", &bad_port, SurgeFree, &["IR008"]),
        ("skipReadinessProbe, one replica", &skip, ProbeGatedSurge, &["IR001"]),
        ("skipReadinessProbe, one replica", &skip, SurgeFree, &["IR001"]),
        ("one LWS group", &lws, SurgeFree, &["IR012"]),
    ];
    let mut failures = Vec::new();
    for (what, manifest, generation, want) in rows {
        let opts = LintOptions {
            node_gpus: 8,
            operator: generation,
            ..LintOptions::default()
        };
        let out = lint_source("case.yaml", manifest.as_bytes(), &opts);
        // IR009 (GPU request vs parallelism) does not depend on the
        // generation; the flat fixtures request no GPUs.
        let got: Vec<_> = out
            .findings
            .iter()
            .map(|f| f.code)
            .filter(|c| *c != "IR009")
            .collect();
        if got != want {
            failures.push(format!(
                "{what} ({generation}): want {want:?}, got {:?}",
                out.findings
                    .iter()
                    .map(|f| (f.code, f.message.as_str()))
                    .collect::<Vec<_>>()
            ));
        }
        let ir008 = out.findings.iter().find(|f| f.code == "IR008");
        if let Some(f) = ir008 {
            let ok = f.severity == crate::finding::Severity::Error
                && f.message.contains("before the worker has registered");
            if !ok {
                failures.push(format!("{what}: IR008 {:?}: {}", f.severity, f.message));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A Deployment whose vLLM (TP 4, a readiness probe) takes its GPUs from
/// a DRA claim template with `count` GPUs, in the same file (`template`
/// names the one the pod uses); the v1 (GA) shape.
fn dra_deployment(template: &str, count: u32) -> String {
    format!(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {{name: gpus}}\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n        exactly: {{deviceClassName: gpu.nvidia.com, count: {count}}}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d}}\nspec:\n  replicas: 2\n  selector: {{matchLabels: {{app: d}}}}\n  template:\n    metadata: {{labels: {{app: d}}}}\n    spec:\n      resourceClaims: [{{name: gpu, resourceClaimTemplateName: {template}}}]\n      containers:\n      - name: vllm\n        image: vllm/vllm-openai:v0.10.0\n        args: [--model, m, --tensor-parallel-size, '4']\n        readinessProbe: {{httpGet: {{path: /health, port: 8000}}}}\n        resources: {{claims: [{{name: gpu}}]}}\n"
    )
}

#[test]
fn gpus_claimed_through_dra_count() {
    let codes = |text: String| -> Vec<&'static str> {
        let out = lint_source("dra.yaml", text.as_bytes(), &LintOptions::default());
        assert!(out.input_errors.is_empty(), "{:?}", out.input_errors);
        out.findings.iter().map(|f| f.code).collect()
    };
    // TP 4 on 1 claimed GPU: IR009, naming the device plugin's resource.
    let out = lint_source(
        "dra.yaml",
        dra_deployment("gpus", 1).as_bytes(),
        &LintOptions::default(),
    );
    let f = out
        .findings
        .iter()
        .find(|f| f.code == "IR009")
        .expect("IR009");
    assert!(f.message.contains("requests 1"), "{}", f.message);
    assert!(f.fix.is_none(), "the count lives in the claim template");
    assert_eq!(codes(dra_deployment("gpus", 4)), Vec::<&str>::new());
    // All 8 GPUs of a node through the claim: the surge pod needs a spare node.
    assert_eq!(codes(dra_deployment("gpus", 8)), ["IR004"]);
    // A template from another file: the count is unknown, no verdict.
    assert_eq!(codes(dra_deployment("elsewhere", 1)), Vec::<&str>::new());
}

/// Without `--node-gpus` or the config key, the node labels a pod pins say
/// how many GPUs its node has.
#[test]
fn pinned_accelerator_and_instance_type_size_the_node() {
    let pod = |gpus: u32, selector: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d}}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: d}}}}\n  template:\n    metadata: {{labels: {{app: d}}}}\n    spec:\n      nodeSelector: {{{selector}}}\n      containers:\n      - {{name: vllm, image: vllm/vllm-openai:v0.10.0, args: [--model, m, --tensor-parallel-size, '{gpus}'], readinessProbe: {{httpGet: {{path: /health, port: 8000}}}}, resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}}}\n"
        )
    };
    let ir004 = |text: String, node_gpus: u32| {
        let opts = LintOptions {
            node_gpus,
            ..LintOptions::default()
        };
        let out = lint_source("n.yaml", text.as_bytes(), &opts);
        out.findings
            .iter()
            .find(|f| f.code == "IR004")
            .map(|f| f.message.clone())
    };
    let l4 = "cloud.google.com/gke-accelerator: nvidia-l4";
    // 4 L4s fill a g2-standard-48: the surge pod needs a spare node.
    let m = ir004(pod(4, l4), 0).expect("IR004 on a 4-L4 node");
    assert!(
        m.contains("half of a 4-GPU node") && m.contains("nvidia-l4"),
        "{m}"
    );
    // `--node-gpus 8` (or the config key) wins over the labels.
    assert_eq!(ir004(pod(4, l4), 8), None);
    // The machine type is exact: 4 of a g2-standard-96's 8 fit beside it.
    let g2_96 = format!("{l4}, node.kubernetes.io/instance-type: g2-standard-96");
    assert_eq!(ir004(pod(4, &g2_96), 0), None);
    let nc96 = "node.kubernetes.io/instance-type: Standard_NC96ads_A100_v4";
    assert!(ir004(pod(4, nc96), 0).is_some_and(|m| m.contains("4-GPU node")));
    // No label in the table: 8 GPUs a node, as before.
    assert_eq!(ir004(pod(4, "disk: ssd"), 0), None);
}

/// Live objects (`lint --cluster`): a budget's finding points at the budget
/// (its object, and a fix in its own document), a live claim's access mode
/// is known (an error), and a worker a budget covers is not IR014's.
#[test]
fn live_budgets_and_claims_are_judged_with_their_workload() {
    use crate::engine::live::lint_live;
    let deployment = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "v", "namespace": "llm"},
        "spec": {"replicas": 1, "strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "selector": {"matchLabels": {"app": "v"}},
            "template": {"metadata": {"labels": {"app": "v"}}, "spec": {
                "containers": [{"name": "vllm", "image": "vllm/vllm-openai",
                    "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}}}],
                "volumes": [{"name": "w", "persistentVolumeClaim": {"claimName": "weights"}}]}}}
    });
    let budget = serde_json::json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "v", "namespace": "llm"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "v"}}}
    });
    let claim = serde_json::json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "weights", "namespace": "llm"},
        "spec": {"accessModes": ["ReadWriteMany"]},
        "status": {"phase": "Bound", "accessModes": ["ReadWriteOncePod"]}
    });
    let opts = LintOptions {
        node_gpus: 8,
        enabled: vec!["IR013", "IR014", "IR015"],
        every_budget: true,
        every_claim: true,
        ..LintOptions::default()
    };
    let out = lint_live(&[deployment, budget, claim], "cluster", &opts, None);
    let codes: Vec<&str> = out.findings.iter().map(|f| f.code).collect();
    assert_eq!(codes, ["IR013", "IR015"], "{:?}", out.findings);
    let ir013 = &out.findings[0];
    assert_eq!(ir013.object.kind, "PodDisruptionBudget");
    let fix = ir013.fix.as_ref().expect("IR013 carries its fix");
    assert_eq!(fix.document, 1, "the budget's document");
    assert_eq!(fix.changes[0].path, "/spec");
    assert_eq!(fix.changes[0].value["maxUnavailable"], 1);
    let ir015 = &out.findings[1];
    assert_eq!(ir015.severity, crate::finding::Severity::Error);
    assert!(
        ir015.message.contains("ReadWriteOncePod"),
        "{}",
        ir015.message
    );
}
