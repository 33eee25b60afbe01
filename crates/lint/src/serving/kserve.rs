//! KServe `InferenceService` (RawDeployment/Standard or Knative) and
//! `LLMInferenceService` (kserve/kserve, knative/serving).

use k8s_openapi::api::core::v1::Container;
use serde_json::{Value, json};

use super::{
    CrdRollout, Out, Placeholders, Roll, RollKind, Unit, count, default_tcp_probe, http_probe,
    path, pod_at, pointer, run, surge_strategy,
};
use crate::runner::Cx;
use infera_model::manifest::serving::{ServingObject, kserve_raw_mode};
use infera_model::manifest::{self};

/// The predictor fields that describe `kserve-container` (KServe's
/// `pkg/apis/serving/v1beta1/predictor.go`, `PredictorSpec`).
const PREDICTORS: [&str; 11] = [
    "model",
    "huggingface",
    "sklearn",
    "xgboost",
    "tensorflow",
    "pytorch",
    "triton",
    "onnx",
    "pmml",
    "lightgbm",
    "paddle",
];

/// KServe `createRawDefaultDeployment` (RawDeployment/Standard mode): the
/// predictor's pod (its `containers`, or the container of `model` whose
/// image the ServingRuntime supplies), `minReplicas` (default 1), the
/// predictor's `deploymentStrategy` or 25%/25% (`setDefaultDeploymentSpec`;
/// the cluster's `inferenceservice-config` may set another default; the
/// maxSurge 100%, maxUnavailable 0% of a multi-node predictor is its
/// worker Deployment's, `createRawWorkerDeployment`). `setDefaultPodSpec`
/// gives `kserve-container` a TCP readiness probe when it has none.
pub(super) fn inference_service(
    obj: &ServingObject,
    placeholders: &Placeholders,
    cx: Cx<'_>,
    out: &mut Out,
) {
    let Some(predictor) = obj.at("/spec/predictor") else {
        return;
    };
    let base = path(&["spec", "predictor"]);
    let (mut pod, pod_path) = if predictor.get("containers").is_some() {
        (pod_at(obj, &base).unwrap_or_default(), Some(base.clone()))
    } else {
        // `model`, or one of the older per-framework fields; each is the
        // container of `kserve-container` (KServe's `PredictorSpec`).
        let Some(model) = PREDICTORS.iter().find_map(|k| predictor.get(*k)) else {
            return;
        };
        let mut c = model.clone();
        c["name"] = json!("kserve-container");
        let mut spec = predictor.clone();
        spec["containers"] = json!([c]);
        (serde_json::from_value(spec).unwrap_or_default(), None)
    };
    // Knative gives its user container (the one with a port, else the
    // only one) a TCP probe when it has none (knative/serving
    // `pkg/apis/serving/v1/revision_defaults.go`,
    // `applyUserContainerDefaultReadinessProbe`); KServe gives one to
    // `kserve-container` in RawDeployment mode (`setDefaultPodSpec`).
    let knative = !kserve_raw_mode(obj.metadata.annotations.as_ref());
    let user = pod
        .containers
        .iter()
        .position(|c| c.ports.as_ref().is_some_and(|p| !p.is_empty()))
        .unwrap_or(0);
    for (_, c) in pod
        .containers
        .iter_mut()
        .enumerate()
        .filter(|(i, c)| c.name == "kserve-container" || (knative && *i == user))
    {
        default_tcp_probe(c);
    }
    let replicas = count(predictor.get("minReplicas"), 1);
    let (roll, crd) = if kserve_raw_mode(obj.metadata.annotations.as_ref()) {
        raw_rollout(predictor, replicas)
    } else {
        knative_rollout(obj, replicas)
    };
    let unit = Unit {
        obj,
        pod,
        pod_path,
        base,
        service: None,
        roll,
        crd,
        ray_cluster_gpus: None,
    };
    run(unit, placeholders, cx, out);
}

/// The predictor's Deployment in RawDeployment/Standard mode.
fn raw_rollout(predictor: &Value, replicas: Option<i32>) -> (Roll, CrdRollout) {
    let field = path(&["spec", "predictor", "deploymentStrategy"]);
    let roll = Roll::strategy(
        predictor.get("deploymentStrategy"),
        replicas,
        ("25%", "25%"),
    );
    let crd = CrdRollout {
        unit: Some("replica(s)"),
        renders: "KServe renders a Deployment from the predictor (`predictor.deploymentStrategy`, else maxSurge 25% and maxUnavailable 25%)".into(),
        field: field.clone(),
        replicas: Some(path(&["spec", "predictor", "minReplicas"])),
        fix: Some((
            "set predictor.deploymentStrategy to RollingUpdate with maxSurge 1, maxUnavailable 0".into(),
            vec![(field, surge_strategy())],
        )),
        advice: "set predictor.deploymentStrategy to maxSurge 1, maxUnavailable 0".into(),
    };
    (roll, crd)
}

/// Serverless (Knative) mode — KServe's shipped default without the
/// annotation: `createKnativeService` routes 100% of traffic to the latest
/// Revision, which Knative resolves to the latest *Ready* one (knative/serving
/// `pkg/reconciler/route/traffic/traffic.go`, `addConfigurationTarget`), so a
/// change starts a new Revision of `initial-scale` pods (default 1,
/// `pkg/autoscaler/config/config.go`) beside the serving one: surge first,
/// nothing retired before the new pod is Ready.
fn knative_rollout(obj: &ServingObject, replicas: Option<i32>) -> (Roll, CrdRollout) {
    let initial = obj
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("autoscaling.knative.dev/initial-scale"))
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1);
    let roll = Roll {
        replicas,
        number_of_nodes: None,
        roll: RollKind::SurgeFirst,
        max_surge: initial,
        max_unavailable: 0,
        max_unavailable_spec: None,
    };
    let crd = CrdRollout {
        unit: Some("replica(s)"),
        renders:
            "KServe renders a Knative Service, whose new Revision takes traffic only once Ready"
                .into(),
        field: path(&["spec", "predictor"]),
        replicas: Some(path(&["spec", "predictor", "minReplicas"])),
        fix: None,
        advice: "keep a node free for the new Revision".into(),
    };
    (roll, crd)
}

/// KServe `LLMInferenceService` (main workload at `spec`, `prefill`
/// beside it): a Deployment of `replicas` (`rolloutStrategy` when set,
/// else 25%/25%: `applyDeploymentRolloutStrategy`), or with `worker` a
/// LeaderWorkerSet whose groups are `parallelism.GetSize()` pods (data ÷
/// dataLocal, else pipeline), maxUnavailable 1 and maxSurge 0 unless
/// `rolloutStrategy` says otherwise (`rollingUpdateConfigFromWorkloadSpec`).
/// The `main` container gets `/health` on 8000 as its readiness probe from
/// the `kserve-config-llm-template` preset unless the template sets one.
pub(super) fn llm_inference_service(
    obj: &ServingObject,
    base: &manifest::Path,
    service: Option<&str>,
    placeholders: &Placeholders,
    cx: Cx<'_>,
    out: &mut Out,
) {
    let at = |segs: &[&str]| {
        let mut p = base.clone();
        p.extend(path(segs));
        p
    };
    let tpl = at(&["template"]);
    let mut pod = pod_at(obj, &tpl).unwrap_or_default();
    if pod.containers.is_empty() {
        pod.containers.push(Container {
            name: "main".into(),
            ..Container::default()
        });
    }
    for c in pod.containers.iter_mut().filter(|c| c.name == "main") {
        if c.readiness_probe.is_none() {
            c.readiness_probe = Some(http_probe("/health", json!(8000)));
        }
    }
    let replicas = count(obj.at(&pointer(&at(&["replicas"]))), 1);
    let rs = obj.at(&pointer(&at(&["rolloutStrategy"])));
    let (surge, unavailable) = (
        rs.and_then(|r| r.get("maxSurge")),
        rs.and_then(|r| r.get("maxUnavailable")),
    );
    let multinode = obj.at(&pointer(&at(&["worker"]))).is_some();
    let roll = if multinode {
        let p = |k: &str| {
            obj.at(&pointer(&at(&["parallelism", k])))
                .and_then(Value::as_i64)
        };
        let size = match (p("data"), p("dataLocal"), p("pipeline")) {
            (Some(d), local, _) if d > 0 => (d / local.unwrap_or(1).max(1)).max(1),
            (_, _, Some(pp)) => pp,
            _ => 1,
        };
        Roll {
            number_of_nodes: i32::try_from(size).ok(),
            roll: RollKind::Lws,
            ..Roll::deployment(replicas, surge, unavailable, ("0", "1"))
        }
    } else {
        Roll::deployment(replicas, surge, unavailable, ("25%", "25%"))
    };
    let what = if multinode {
        "a LeaderWorkerSet (`worker` set)"
    } else {
        "a Deployment"
    };
    let field = at(&["rolloutStrategy"]);
    let crd = CrdRollout {
        unit: Some("replica(s)"),
        renders: format!("KServe renders {what} of `replicas`, rolled by `rolloutStrategy`"),
        field: field.clone(),
        replicas: Some(at(&["replicas"])),
        fix: (!multinode).then(|| {
            (
                "set rolloutStrategy to maxSurge 1, maxUnavailable 0".to_string(),
                vec![(field, json!({"maxSurge": 1, "maxUnavailable": 0}))],
            )
        }),
        advice: if multinode {
            "or surge a group (`rolloutStrategy: {maxSurge: 1, maxUnavailable: 0}`; the `main` container's readiness probe comes from KServe's preset)".into()
        } else {
            "set rolloutStrategy to maxSurge 1, maxUnavailable 0 (the `main` container's readiness probe comes from KServe's preset)".into()
        },
    };
    let unit = Unit {
        obj,
        pod,
        pod_path: Some(tpl),
        base: base.clone(),
        service: service.map(str::to_string),
        roll,
        crd,
        ray_cluster_gpus: None,
    };
    run(unit, placeholders, cx, out);
}
