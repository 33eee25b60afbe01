//! vLLM production-stack `VLLMRuntime` (vllm-project/production-stack).

use k8s_openapi::api::core::v1::{Container, PodSpec};
use serde_json::{Value, json};

use super::{
    CrdRollout, Out, Placeholders, Roll, Unit, count, gpu_resources, http_probe, path, run,
};
use crate::runner::Cx;
use infera_model::manifest::serving::ServingObject;

/// production-stack `deploymentForVLLMRuntime`: container `vllm` running
/// `vllm serve MODEL --port P [--tensor-parallel-size N]`, the GPUs of
/// `deploymentConfig.resources`, its own `/health` readiness probe; the
/// Deployment's strategy type is `deploymentConfig.deploymentStrategy`
/// (default RollingUpdate, so the Deployment defaults 25%/25% apply).
pub(super) fn vllm_runtime(
    obj: &ServingObject,
    placeholders: &Placeholders,
    cx: Cx<'_>,
    out: &mut Out,
) {
    let s = |p: &str| obj.at(p).and_then(Value::as_str).map(str::to_string);
    let port = count(obj.at("/spec/vllmConfig/port"), 8000).unwrap_or(8000);
    let mut args = vec![
        s("/spec/model/modelURL").unwrap_or_default(),
        "--port".into(),
        port.to_string(),
    ];
    if let Some(tp) = count(obj.at("/spec/vllmConfig/tensorParallelSize"), 0).filter(|&n| n > 0) {
        args.extend(["--tensor-parallel-size".into(), tp.to_string()]);
    }
    let mut c = Container {
        name: "vllm".into(),
        command: Some(vec!["/opt/venv/bin/vllm".into(), "serve".into()]),
        args: Some(args),
        readiness_probe: Some(http_probe("/health", json!(port))),
        ..Container::default()
    };
    if let Some(gpu) = s("/spec/deploymentConfig/resources/gpu") {
        let name = s("/spec/deploymentConfig/resources/gpuType")
            .unwrap_or_else(|| "nvidia.com/gpu".into());
        c.resources = Some(gpu_resources(&name, &gpu));
    }
    let replicas = count(obj.at("/spec/deploymentConfig/replicas"), 1);
    let strategy =
        s("/spec/deploymentConfig/deploymentStrategy").unwrap_or_else(|| "RollingUpdate".into());
    let field = path(&["spec", "deploymentConfig", "deploymentStrategy"]);
    let roll = if strategy == "Recreate" {
        Roll::recreate(replicas)
    } else {
        Roll::deployment(replicas, None, None, ("25%", "25%"))
    };
    let fix = (strategy == "Recreate").then(|| {
        (
            "set deploymentConfig.deploymentStrategy to RollingUpdate (the Deployment then surges with its /health probe)".to_string(),
            vec![(field.clone(), json!("RollingUpdate"))],
        )
    });
    let crd = CrdRollout {
        unit: Some("replica(s)"),
        renders: format!(
            "its operator renders a Deployment with strategy {strategy} (`deploymentConfig.deploymentStrategy`)"
        ),
        field,
        replicas: Some(path(&["spec", "deploymentConfig", "replicas"])),
        fix,
        advice: "set deploymentConfig.deploymentStrategy to RollingUpdate".into(),
    };
    let pod = PodSpec {
        containers: vec![c],
        ..PodSpec::default()
    };
    let unit = Unit::whole(obj, pod, None, roll, crd);
    run(unit, placeholders, cx, out);
}
