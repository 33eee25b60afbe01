//! KubeAI `Model` (kubeai-project/kubeai): the operator creates the pods
//! itself, no Deployment between.

use k8s_openapi::api::core::v1::{Container, EnvVar, PodSpec, Probe};
use serde_json::{Value, json};

use super::{CrdRollout, Out, Placeholders, Roll, Unit, count, gpu_resources, path, run};
use crate::runner::Cx;
use infera_model::manifest::serving::ServingObject;

/// KubeAI's `modelRollouts.surge` as its chart ships it
/// (`charts/kubeai/values.yaml`).
const SURGE: i64 = 1;

/// The GPU resource of one unit of a resource profile KubeAI's chart
/// ships (`charts/kubeai/values.yaml`, `resourceProfiles`: every
/// `nvidia-gpu-*` profile is one `nvidia.com/gpu`, `amd-gpu-mi300x` one
/// `amd.com/gpu`, `cpu` none). A profile the cluster defines itself is not
/// in the object: its GPUs stay unknown.
fn profile_gpu(name: &str) -> Option<&'static str> {
    if name.starts_with("nvidia-gpu-") {
        Some("nvidia.com/gpu")
    } else if name.starts_with("amd-gpu-") {
        Some("amd.com/gpu")
    } else {
        None
    }
}

/// The server container of `engine_vllm.go` / `engine_sglang.go`: the
/// engine's module, the model flags the operator writes, then `spec.args`;
/// `/health` readiness and startup probes on port `http` (8000).
fn server(obj: &ServingObject, engine: &str) -> Container {
    let name = obj.metadata.name.clone().unwrap_or_default();
    let (module, mut args) = if engine == "SGLang" {
        let args = vec![
            "--model-path=MODEL".to_string(),
            format!("--served-model-name={name}"),
            "--host=0.0.0.0".into(),
            "--port=8000".into(),
        ];
        ("sglang.launch_server", args)
    } else {
        let args = vec![
            "--model=MODEL".to_string(),
            format!("--served-model-name={name}"),
        ];
        ("vllm.entrypoints.openai.api_server", args)
    };
    args.extend(
        obj.at("/spec/args")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_string)),
    );
    let env = obj.at("/spec/env").and_then(Value::as_object).map(|m| {
        m.iter()
            .map(|(k, v)| EnvVar {
                name: k.clone(),
                value: v.as_str().map(str::to_string),
                ..EnvVar::default()
            })
            .collect()
    });
    let health = |extra: Value| -> Option<Probe> {
        let mut p = json!({"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10, "timeoutSeconds": 2, "failureThreshold": 3});
        if let (Some(p), Some(e)) = (p.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        serde_json::from_value(p).ok()
    };
    Container {
        name: "server".into(),
        image: obj
            .at("/spec/image")
            .and_then(Value::as_str)
            .map(str::to_string),
        command: Some(vec!["python3".into(), "-m".into(), module.into()]),
        args: Some(args),
        env,
        ports: serde_json::from_value(json!([{"containerPort": 8000, "name": "http"}])).ok(),
        readiness_probe: health(json!({})),
        startup_probe: health(json!({"failureThreshold": 5400, "periodSeconds": 2})),
        ..Container::default()
    }
}

/// The replicas KubeAI serves: `replicas`, held between `minReplicas` and
/// `maxReplicas` unless autoscaling is disabled
/// (`applyAutoscalingReplicaBounds`), where an absent `replicas` is 0.
fn replicas(obj: &ServingObject) -> Option<i32> {
    let set = obj.at("/spec/replicas").map(|v| count(Some(v), 0));
    if obj.at("/spec/autoscalingDisabled").and_then(Value::as_bool) == Some(true) {
        return set.unwrap_or(Some(0));
    }
    let min = count(obj.at("/spec/minReplicas"), 0)?;
    let n = set.unwrap_or(Some(min))?.max(min);
    Some(
        match obj.at("/spec/maxReplicas").map(|v| count(Some(v), n)) {
            Some(Some(max)) => n.min(max),
            _ => n,
        },
    )
}

/// KubeAI `calculatePodPlan`: a change adds `modelRollouts.surge` pods,
/// and deletes an out-of-date Ready pod only when every pod is Ready
/// (an out-of-date pod that is not Ready is replaced at once): surge
/// first, maxUnavailable 0. The pod is the engine's (`vLLMPodForModel`,
/// `sGLangPodForModel`) with the resource profile's requests times its
/// count (`getModelConfig`). Engines other than VLLM and SGLang are named
/// as skipped.
pub(super) fn model(
    obj: &ServingObject,
    placeholders: &Placeholders,
    cx: Cx<'_>,
    out: &mut Out,
) -> Result<(), String> {
    let engine = obj.at("/spec/engine").and_then(Value::as_str).unwrap_or("");
    if !matches!(engine, "VLLM" | "SGLang") {
        return Err(format!(
            "engine `{engine}`: infera reads KubeAI's VLLM and SGLang pods (engine_vllm.go, engine_sglang.go); this engine's pod is not modelled"
        ));
    }
    let mut c = server(obj, engine);
    let profile = obj.at("/spec/resourceProfile").and_then(Value::as_str);
    let gpus = profile
        .and_then(|p| p.split_once(':'))
        .and_then(|(name, n)| Some((profile_gpu(name)?, n.trim().parse::<u32>().ok()?)));
    if let Some((gpu, n)) = gpus {
        c.resources = Some(gpu_resources(gpu, &n.to_string()));
    }
    let replicas = replicas(obj);
    let roll = Roll::deployment(replicas, Some(&json!(SURGE)), Some(&json!(0)), ("1", "0"));
    let crd = CrdRollout {
        unit: Some("replica(s)"),
        renders: format!(
            "KubeAI creates its pods itself: {SURGE} surge pod first (`modelRollouts.surge` as its chart ships it), an old pod deleted only once every pod is Ready"
        ),
        field: path(&["spec", "resourceProfile"]),
        replicas: Some(path(&["spec", "minReplicas"])),
        fix: None,
        advice: "keep a node free for the surge pod".into(),
    };
    let pod = PodSpec {
        containers: vec![c],
        priority_class_name: obj
            .at("/spec/priorityClassName")
            .and_then(Value::as_str)
            .map(str::to_string),
        ..PodSpec::default()
    };
    let unit = Unit::whole(obj, pod, None, roll, crd);
    run(unit, placeholders, cx, out);
    Ok(())
}
