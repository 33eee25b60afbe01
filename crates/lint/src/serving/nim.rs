//! NVIDIA NIM operator `NIMService` (NVIDIA/k8s-nim-operator).

use k8s_openapi::api::core::v1::{Container, PodSpec};
use serde_json::{Value, json};

use super::{
    CrdRollout, Out, Placeholders, Roll, RollKind, Unit, count, dotted, http_probe, path, pointer,
    run,
};
use crate::runner::Cx;
use infera_model::manifest::serving::{KSERVE_DEPLOYMENT_MODE, ServingObject};

/// NIM operator: `manifests/deployment.yaml` (maxSurge 0, maxUnavailable
/// 25%, not settable), or `manifests/lws.yaml` with `multiNode` (size the
/// pipeline parallelism, maxSurge 0, maxUnavailable 1); replicas are
/// `spec.replicas`, or `scale.hpa.minReplicas` when autoscaling
/// (`GetReplicas`); the probe is `readinessProbe.probe`, else
/// `/v1/health/ready` on the `api` port (`GetDefaultReadinessProbe`).
pub(super) fn nim_service(
    obj: &ServingObject,
    placeholders: &Placeholders,
    cx: Cx<'_>,
    out: &mut Out,
) -> Result<(), String> {
    let autoscaled = obj.at("/spec/scale/enabled").and_then(Value::as_bool) == Some(true);
    let replicas_field = if autoscaled {
        path(&["spec", "scale", "hpa", "minReplicas"])
    } else {
        path(&["spec", "replicas"])
    };
    let replicas = count(obj.at(&pointer(&replicas_field)), 1);
    let image = format!(
        "{}:{}",
        obj.at("/spec/image/repository")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        obj.at("/spec/image/tag")
            .and_then(Value::as_str)
            .unwrap_or("latest")
    );
    let probe = obj
        .at("/spec/readinessProbe/probe")
        .and_then(|p| serde_json::from_value(p.clone()).ok())
        .unwrap_or_else(|| http_probe("/v1/health/ready", json!("api")));
    let c = Container {
        name: obj.metadata.name.clone().unwrap_or_else(|| "nim".into()),
        image: Some(image),
        resources: obj
            .at("/spec/resources")
            .and_then(|r| serde_json::from_value(r.clone()).ok()),
        readiness_probe: Some(probe),
        ..Container::default()
    };
    let pod = PodSpec {
        containers: vec![c],
        node_selector: obj
            .at("/spec/nodeSelector")
            .and_then(|v| serde_json::from_value(v.clone()).ok()),
        ..PodSpec::default()
    };
    let pipeline = obj
        .at("/spec/multiNode")
        .map(|_| count(obj.at("/spec/multiNode/parallelism/pipeline"), 1));
    if obj.at("/spec/inferencePlatform").and_then(Value::as_str) == Some("kserve") {
        return on_kserve(
            obj,
            pod,
            (replicas_field, replicas),
            (placeholders, cx, out),
        );
    }
    let (roll, renders) = match pipeline {
        Some(size) => (
            Roll {
                number_of_nodes: size,
                ..Roll::deployment(replicas, Some(&json!(0)), Some(&json!(1)), ("0", "1"))
            },
            "the NIM operator renders a LeaderWorkerSet of `multiNode.parallelism.pipeline` pods per group, rolled with maxSurge 0 and maxUnavailable 1 (not settable in the NIMService)".to_string(),
        ),
        None => (
            Roll::deployment(replicas, Some(&json!(0)), Some(&json!("25%")), ("0", "25%")),
            "the NIM operator renders a Deployment that rolls with maxSurge 0 and maxUnavailable 25% (not settable in the NIMService)".to_string(),
        ),
    };
    let roll = Roll {
        roll: if pipeline.is_some() {
            RollKind::Lws
        } else {
            roll.roll
        },
        ..roll
    };
    let fix = (!autoscaled || obj.at("/spec/scale/hpa/minReplicas").is_some()).then(|| {
        (
            format!(
                "set {} to 2: one pod serves while the other is replaced",
                dotted(&replicas_field)
            ),
            vec![(replicas_field.clone(), json!(2))],
        )
    });
    let crd = CrdRollout {
        unit: Some("replica(s)"),
        renders,
        field: replicas_field.clone(),
        replicas: Some(replicas_field.clone()),
        fix,
        // IR012 names the group count itself; IR008 needs the field.
        advice: if pipeline.is_some() {
            "since the NIM operator's rollout cannot surge".to_string()
        } else {
            format!(
                "run 2 or more replicas (`{}`): the NIM operator's rollout cannot surge",
                dotted(&replicas_field)
            )
        },
    };
    let unit = Unit::whole(obj, pod, None, roll, crd);
    run(unit, placeholders, cx, out);
    Ok(())
}

/// `inferencePlatform: kserve`: the NIM operator renders a KServe
/// InferenceService (`manifests/inferenceservice.yaml`) in the mode of
/// `spec.annotations` `serving.kserve.io/deploymentMode`, else the
/// cluster's `inferenceservice-config` default (`GetKServeDeploymentMode`;
/// KServe ships Serverless). Standard/RawDeployment: the predictor's
/// Deployment with the strategy the template writes (maxSurge 0,
/// maxUnavailable 25%). Knative/Serverless: a Knative Service, whose new
/// Revision takes traffic only once Ready.
fn on_kserve(
    obj: &ServingObject,
    pod: PodSpec,
    (replicas_field, replicas): (infera_model::manifest::Path, Option<i32>),
    (placeholders, cx, out): (&Placeholders, Cx<'_>, &mut Out),
) -> Result<(), String> {
    let mode = obj
        .at("/spec/annotations")
        .and_then(|a| a.get(KSERVE_DEPLOYMENT_MODE))
        .and_then(Value::as_str);
    let field = path(&["spec", "annotations"]);
    let (roll, renders, advice) = match mode {
        Some("Standard" | "RawDeployment") => (
            Roll::deployment(replicas, Some(&json!(0)), Some(&json!("25%")), ("0", "25%")),
            "the NIM operator renders a KServe InferenceService (`inferencePlatform: kserve`, deployment mode Standard) whose predictor Deployment rolls with maxSurge 0 and maxUnavailable 25% (written by the operator)",
            "run 2 or more replicas: the NIM operator's predictor Deployment cannot surge",
        ),
        None | Some("Knative" | "Serverless") => (
            Roll {
                roll: RollKind::SurgeFirst,
                max_surge: 1,
                max_unavailable: 0,
                ..Roll::recreate(replicas)
            },
            "the NIM operator renders a KServe InferenceService (`inferencePlatform: kserve`) in Serverless mode (`serving.kserve.io/deploymentMode` in `spec.annotations`, else the cluster's default, Serverless as KServe ships it): a Knative Service whose new Revision takes traffic only once Ready",
            "keep a node free for the new Revision",
        ),
        Some(other) => {
            return Err(format!(
                "`inferencePlatform: kserve` with deployment mode {other}: infera reads the NIM operator's Standard and Knative InferenceServices"
            ));
        }
    };
    let crd = CrdRollout {
        unit: Some("replica(s)"),
        renders: renders.into(),
        field,
        replicas: Some(replicas_field),
        fix: None,
        advice: advice.into(),
    };
    let unit = Unit::whole(obj, pod, None, roll, crd);
    run(unit, placeholders, cx, out);
    Ok(())
}
