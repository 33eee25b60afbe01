//! The rule cases the policy is held to lint on: each enforced rule where
//! it fires and where it does not, the suppression annotation (whole object
//! and per service), every kind the policy matches. The offline agreement
//! test (`tests.rs`, the `cel` crate) and the lab's (`tests/lab/policy.rs`,
//! the real kube-apiserver) read the same cases. Lint is the oracle; the
//! cases only have to reach it.

/// An InferaDeployment with one service `w` (flow style), annotated.
fn idep_case(annotation: &str, service: &str) -> String {
    format!(
        "apiVersion: infera.amd.com/v1alpha1\nkind: InferaDeployment\nmetadata: {{name: t, annotations: {{{annotation}}}}}\nspec:\n  services:\n    w: {service}\n"
    )
}

/// An apps/v1 `kind` of `replicas` pods rolled by `strategy` (the kind's
/// strategy field, flow style), whose pod runs `containers`.
fn apps_case(kind: &str, replicas: &str, strategy: &str, containers: &str) -> String {
    let field = if kind == "StatefulSet" {
        "updateStrategy"
    } else {
        "strategy"
    };
    format!(
        "apiVersion: apps/v1\nkind: {kind}\nmetadata: {{name: d}}\nspec:\n  replicas: {replicas}\n  {field}: {strategy}\n  selector: {{matchLabels: {{app: d}}}}\n  template:\n    metadata: {{labels: {{app: d}}}}\n    spec: {{containers: [{containers}]}}\n"
    )
}

/// The rule cases: each rule where it fires and where it does not, the
/// suppression annotation (whole object and per service), both operator
/// generations. Lint is the oracle; the cases only have to reach it.
pub fn rule_cases() -> Vec<String> {
    let engine = |extra: &str| {
        format!("{{name: main, image: x, command: [python3, -m, infera.engine.sglang]{extra}}}")
    };
    let pod = |pod: &str| format!("{{componentType: worker, extraPodSpec: {pod}}}");
    let pin = "nodeSelector: {kubernetes.io/hostname: gpu-1}";
    let ready = |t: u32| {
        format!(", readinessProbe: {{httpGet: {{path: /ready, port: 30090}}, timeoutSeconds: {t}}}")
    };
    let health = ", readinessProbe: {httpGet: {path: /health, port: 30000}}";
    let vllm = "{name: vllm, image: vllm/vllm-openai:v0.9.0, command: [vllm, serve, m]}";
    let sh_vllm = "{name: v, image: x, command: [sh, -c, \"exec vllm serve m --port 8000\"]}";
    let tgi = "{name: tgi, image: ghcr.io/huggingface/text-generation-inference:2.0}";
    let nginx = "{name: web, image: nginx}";
    let bad_port = "env: [{name: INFERA_READINESS_PORT, value: \" 30090\"}]";
    let lws = |replicas: u32, rollout: &str, leader: &str| {
        format!(
            "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {{name: l}}\nspec:\n  replicas: {replicas}\n  rolloutStrategy: {rollout}\n  leaderWorkerTemplate:\n    size: 2\n    leaderTemplate: {{spec: {{containers: [{leader}]}}}}\n    workerTemplate: {{spec: {{containers: [{{name: w, image: x, command: [ray, start]}}]}}}}\n"
        )
    };
    let dynamo = |service: &str| {
        format!(
            "apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeployment\nmetadata: {{name: g}}\nspec:\n  services:\n    w: {service}\n"
        )
    };
    vec![
        idep_case("", "{componentType: worker, skipReadinessProbe: true}"),
        idep_case("infera.amd.com/lint-ignore: IR001", "{componentType: worker, skipReadinessProbe: true}"),
        idep_case("infera.amd.com/lint-ignore: \" Skip-Probe-Serving/w \"", "{componentType: worker, skipReadinessProbe: true}"),
        idep_case("infera.amd.com/lint-ignore: IR001/other", "{componentType: worker, skipReadinessProbe: true, replicas: 3}"),
        idep_case("", "{componentType: server, skipReadinessProbe: true}"),
        idep_case("", &pod(&format!("{{hostNetwork: true, {pin}, containers: [{}]}}", engine("")))),
        idep_case("", &pod(&format!("{{hostNetwork: true, containers: [{}]}}", engine("")))),
        idep_case("", &pod(&format!("{{{pin}, containers: [{}]}}", engine(", ports: [{containerPort: 80, hostPort: 8080}]")))),
        idep_case("", &pod(&format!("{{containers: [{}]}}", engine(health)))),
        idep_case("", &pod(&format!("{{containers: [{}]}}", engine(health))).replace("worker,", "worker, replicas: 2,")),
        idep_case("", &pod(&format!("{{containers: [{}]}}", engine(&ready(10))))),
        idep_case("", &pod(&format!("{{containers: [{}]}}", engine(&ready(5))))),
        idep_case("", &pod(&format!("{{containers: [{}, {}]}}", engine(""), "{name: side, image: x, command: [python3, -m, infera.engine.vllm], readinessProbe: {httpGet: {path: /ready, port: 30090}, timeoutSeconds: 2}}"))),
        idep_case("", &format!("{{componentType: worker, {bad_port}}}")),
        idep_case("", &format!("{{componentType: worker, replicas: 2, {bad_port}}}")),
        idep_case("", "{componentType: worker, env: [{name: INFERA_READINESS_PORT, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]}"),
        idep_case("", "{componentType: worker, env: [{name: INFERA_READINESS_PORT, value: \"+030091\"}]}"),
        idep_case("", &pod(&format!("{{containers: [{}]}}", engine(&format!(", {bad_port}"))))),
        idep_case("", "{componentType: worker, numberOfNodes: 2, replicas: 1}"),
        idep_case("", "{componentType: worker, numberOfNodes: 2, replicas: 2}"),
        idep_case("", "{componentType: worker, replicas: 2}"),
        idep_case("", &pod("{containers: [{name: main, image: x, command: [sleep, infinity]}]}").replace("worker,", "worker, skipReadinessProbe: true,")),
        apps_case("Deployment", "1", "{}", &engine("")),
        apps_case("Deployment", "1", "{}", vllm),
        apps_case("Deployment", "4", "{}", sh_vllm),
        apps_case("Deployment", "1", "{}", tgi),
        apps_case("Deployment", "1", "{}", &format!("{nginx}, {vllm}")),
        apps_case("Deployment", "1", "{rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}", vllm),
        apps_case("Deployment", "1", "{type: Recreate}", nginx),
        apps_case("Deployment", "0", "{rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}", nginx),
        apps_case("Deployment", "2", "{rollingUpdate: {maxSurge: 1, maxUnavailable: \"100%\"}}", nginx),
        apps_case("Deployment", "1", "{rollingUpdate: {maxUnavailable: \"50%\"}}", nginx),
        apps_case("Deployment", "3", "{rollingUpdate: {maxSurge: \"0%\", maxUnavailable: \"0%\"}}", nginx),
        apps_case("Deployment", "1", "{rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}", &format!("{{name: e, image: x, command: [python3, -m, infera.engine.vllm], ports: [{{containerPort: 1, hostPort: 9}}]{}}}", ready(10))).replace("spec: {containers", &format!("spec: {{{pin}, containers")),
        apps_case("Deployment", "1", "{}", &engine(&format!("{}, {bad_port}", ready(3)))),
        apps_case("Deployment", "1", "{}", &engine(health)),
        apps_case("Deployment", "1", "{}", "{name: aibrix-runtime, image: aibrix/runtime, readinessProbe: {httpGet: {path: /ready, port: 8080}, timeoutSeconds: 1}}"),
        apps_case("StatefulSet", "1", "{}", &format!("{{name: vllm, image: x, command: [vllm, serve, m]{health}}}")),
        apps_case("StatefulSet", "1", "{type: OnDelete}", vllm),
        apps_case("StatefulSet", "2", "{rollingUpdate: {maxUnavailable: \"50%\"}}", vllm),
        apps_case("StatefulSet", "1", "{}", nginx),
        lws(1, "{}", vllm),
        lws(2, "{}", vllm),
        lws(2, "{rollingUpdateConfiguration: {maxUnavailable: 2}}", vllm),
        lws(1, "{rollingUpdateConfiguration: {maxSurge: 1, maxUnavailable: 0}}", vllm),
        lws(1, "{rollingUpdateConfiguration: {maxSurge: 1, maxUnavailable: 0}}", &format!("{{name: vllm, image: x, command: [vllm, serve, m]{health}}}")),
        dynamo("{componentType: worker, replicas: 1, multinode: {nodeCount: 2}, extraPodSpec: {mainContainer: {image: x, command: [python3, -m, dynamo.vllm]}}}"),
        dynamo("{componentType: worker, replicas: 2, multinode: {nodeCount: 2}, extraPodSpec: {mainContainer: {image: x, command: [python3, -m, dynamo.vllm]}}}"),
        dynamo("{componentType: worker, replicas: 1, extraPodSpec: {mainContainer: {image: x, command: [python3, -m, dynamo.sglang], readinessProbe: {httpGet: {path: /ready, port: 30090}}}}}"),
    ]
}
