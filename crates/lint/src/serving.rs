//! Serving custom resources → what their operators render, as the
//! [`Workload`](super::rules::Workload) views the rules read. Each builder
//! follows its operator's published source (repository, file, function
//! and commit in `docs/serving-kinds.md`):
//!
//! - production-stack `VLLMRuntime`: one Deployment (`deploymentForVLLMRuntime`).
//! - NIM operator `NIMService`: a Deployment with maxSurge 0 and
//!   maxUnavailable 25% (`manifests/deployment.yaml`), or a
//!   LeaderWorkerSet of `multiNode.parallelism.pipeline` pods.
//! - KServe `InferenceService`: a Deployment (`createRawDefaultDeployment`)
//!   with `deploymentMode` RawDeployment/Standard, else a Knative Service
//!   whose new Revision takes traffic once Ready (`createKnativeService`).
//! - KServe `LLMInferenceService`: a Deployment, or a LeaderWorkerSet with
//!   `worker`, for the main workload and for `prefill`.
//! - KAITO `Workspace` (preset): one StatefulSet whose pods are one
//!   serving unit (`GeneratePresetInference`).
//! - AIBrix `StormService`: RoleSets replaced whole (RollingUpdate) or
//!   each role's pods replaced in place (InPlaceUpdate).
//! - AIBrix `RayClusterFleet` and KubeRay `RayService`: whole Ray clusters,
//!   rolled as a Deployment rolls pods / replaced by a new cluster.

use k8s_openapi::api::core::v1::{Container, PodSpec, Probe, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::{Value, json};

use super::finding::ObjectRef;
use super::kinds::{Cx, Plain, plain_workload};
use super::rules::{CrdRollout, Hit, RollKind};
use infera_model::manifest::serving::{ServingKind, ServingObject, kserve_raw_mode};
use infera_model::manifest::{self, Seg};

type Placeholders = Vec<(manifest::Path, String)>;
type Out = Vec<(Hit, ObjectRef)>;

/// A path from JSON-pointer-like segments (`"roles"`, `"0"` as an index).
fn path(segs: &[&str]) -> manifest::Path {
    segs.iter()
        .map(|s| match s.parse::<usize>() {
            Ok(i) => Seg::Index(i),
            Err(_) => Seg::Key((*s).to_string()),
        })
        .collect()
}

fn pointer(p: &manifest::Path) -> String {
    p.iter()
        .map(|s| match s {
            Seg::Key(k) => format!("/{}", k.replace('~', "~0").replace('/', "~1")),
            Seg::Index(i) => format!("/{i}"),
        })
        .collect()
}

fn dotted(p: &manifest::Path) -> String {
    manifest::path_string(p)
}

fn count(v: Option<&Value>, default: i32) -> Option<i32> {
    match v {
        None | Some(Value::Null) => Some(default),
        Some(v) => v
            .as_i64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .and_then(|n| i32::try_from(n).ok()),
    }
}

/// maxSurge and maxUnavailable after the controller's rounding (surge up,
/// unavailable down, both 0 → unavailable 1), with its defaults.
fn fenceposts(
    surge: Option<&Value>,
    unavailable: Option<&Value>,
    n: i32,
    defaults: (&str, &str),
) -> (i64, i64) {
    use infera_model::rolling::scaled_value;
    let total = i64::from(n);
    let s = scaled_value(surge, defaults.0, total, true);
    let mut u = scaled_value(unavailable, defaults.1, total, false);
    if s == 0 && u == 0 {
        u = 1;
    }
    (s, u)
}

fn roll_of(surge: i64, unavailable: i64) -> RollKind {
    match (surge > 0, unavailable > 0) {
        (true, false) => RollKind::SurgeFirst,
        (true, true) => RollKind::SurgeOrRetire,
        _ => RollKind::OldPodFirst,
    }
}

fn pod_at(obj: &ServingObject, p: &manifest::Path) -> Option<PodSpec> {
    serde_json::from_value(obj.at(&pointer(p))?.clone()).ok()
}

/// The rollout numbers of one unit.
struct Roll {
    replicas: Option<i32>,
    number_of_nodes: Option<i32>,
    roll: RollKind,
    max_surge: i64,
    max_unavailable: i64,
    max_unavailable_spec: Option<Value>,
}

impl Roll {
    fn deployment(
        replicas: Option<i32>,
        surge: Option<&Value>,
        unavailable: Option<&Value>,
        defaults: (&str, &str),
    ) -> Roll {
        let (max_surge, max_unavailable) =
            fenceposts(surge, unavailable, replicas.unwrap_or(1), defaults);
        Roll {
            replicas,
            number_of_nodes: None,
            roll: roll_of(max_surge, max_unavailable),
            max_surge,
            max_unavailable,
            max_unavailable_spec: unavailable.cloned(),
        }
    }

    fn recreate(replicas: Option<i32>) -> Roll {
        Roll {
            replicas,
            number_of_nodes: None,
            roll: RollKind::Recreate,
            max_surge: 0,
            max_unavailable: i64::from(replicas.unwrap_or(1)),
            max_unavailable_spec: None,
        }
    }
}

/// One unit an operator renders, ready for the rules.
struct Unit<'a> {
    obj: &'a ServingObject,
    pod: PodSpec,
    pod_path: Option<manifest::Path>,
    base: manifest::Path,
    service: Option<String>,
    roll: Roll,
    crd: CrdRollout,
}

fn run(unit: Unit<'_>, placeholders: &Placeholders, cx: Cx<'_>, out: &mut Out) {
    let labels = Default::default();
    let plain = Plain {
        kind: unit.obj.kind.name(),
        meta: &unit.obj.metadata,
        pod: &unit.pod,
        pod_path: unit.pod_path,
        pod_labels: labels,
        replicas: unit.roll.replicas,
        number_of_nodes: unit.roll.number_of_nodes,
        roll: unit.roll.roll,
        max_surge: unit.roll.max_surge,
        max_unavailable: Some(unit.roll.max_unavailable),
        max_unavailable_spec: unit.roll.max_unavailable_spec,
        base: unit.base,
        service: unit.service,
        crd: Some(unit.crd),
    };
    out.extend(plain_workload(plain, placeholders.clone(), cx));
}

pub(crate) fn lint_serving(obj: &ServingObject, placeholders: &Placeholders, cx: Cx<'_>) -> Out {
    let mut out = Vec::new();
    match obj.kind {
        ServingKind::VllmRuntime => vllm_runtime(obj, placeholders, cx, &mut out),
        ServingKind::NimService => nim_service(obj, placeholders, cx, &mut out),
        ServingKind::InferenceService => inference_service(obj, placeholders, cx, &mut out),
        ServingKind::LlmInferenceService => {
            llm_inference_service(obj, &path(&["spec"]), None, placeholders, cx, &mut out);
            if obj.at("/spec/prefill").is_some() {
                let base = path(&["spec", "prefill"]);
                llm_inference_service(obj, &base, Some("prefill"), placeholders, cx, &mut out);
            }
        }
        ServingKind::KaitoWorkspace => kaito_workspace(obj, placeholders, cx, &mut out),
        ServingKind::StormService => storm_service(obj, placeholders, cx, &mut out),
        ServingKind::RayClusterFleet => ray_cluster_fleet(obj, placeholders, cx, &mut out),
        ServingKind::RayService => ray_service(obj, placeholders, cx, &mut out),
    }
    out
}

fn http_probe(path: &str, port: Value) -> Probe {
    serde_json::from_value(json!({"httpGet": {"path": path, "port": port}})).unwrap_or_default()
}

fn gpu_resources(name: &str, n: &str) -> ResourceRequirements {
    let q = [(name.to_string(), Quantity(n.to_string()))]
        .into_iter()
        .collect::<std::collections::BTreeMap<_, _>>();
    ResourceRequirements {
        requests: Some(q.clone()),
        limits: Some(q),
        ..ResourceRequirements::default()
    }
}

/// production-stack `deploymentForVLLMRuntime`: container `vllm` running
/// `vllm serve MODEL --port P [--tensor-parallel-size N]`, the GPUs of
/// `deploymentConfig.resources`, its own `/health` readiness probe; the
/// Deployment's strategy type is `deploymentConfig.deploymentStrategy`
/// (default RollingUpdate, so the Deployment defaults 25%/25% apply).
fn vllm_runtime(obj: &ServingObject, placeholders: &Placeholders, cx: Cx<'_>, out: &mut Out) {
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
    let unit = Unit {
        obj,
        pod,
        pod_path: None,
        base: path(&["spec"]),
        service: None,
        roll,
        crd,
    };
    run(unit, placeholders, cx, out);
}

/// NIM operator: `manifests/deployment.yaml` (maxSurge 0, maxUnavailable
/// 25%, not settable), or `manifests/lws.yaml` with `multiNode` (size the
/// pipeline parallelism, maxSurge 0, maxUnavailable 1); replicas are
/// `spec.replicas`, or `scale.hpa.minReplicas` when autoscaling
/// (`GetReplicas`); the probe is `readinessProbe.probe`, else
/// `/v1/health/ready` on the `api` port (`GetDefaultReadinessProbe`).
fn nim_service(obj: &ServingObject, placeholders: &Placeholders, cx: Cx<'_>, out: &mut Out) {
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
        advice: format!("run 2 or more replicas (`{}`)", dotted(&replicas_field)),
    };
    let unit = Unit {
        obj,
        pod,
        pod_path: None,
        base: path(&["spec"]),
        service: None,
        roll,
        crd,
    };
    run(unit, placeholders, cx, out);
}

/// The surge-first strategy a fix writes where the resource takes a
/// Deployment strategy of its own.
fn surge_strategy() -> Value {
    json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}})
}

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
fn inference_service(obj: &ServingObject, placeholders: &Placeholders, cx: Cx<'_>, out: &mut Out) {
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
        if c.readiness_probe.is_none() {
            let port = c
                .ports
                .iter()
                .flatten()
                .next()
                .map_or(8080, |p| p.container_port);
            c.readiness_probe = serde_json::from_value(json!({"tcpSocket": {"port": port}})).ok();
        }
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
    };
    run(unit, placeholders, cx, out);
}

/// The predictor's Deployment in RawDeployment/Standard mode.
fn raw_rollout(predictor: &Value, replicas: Option<i32>) -> (Roll, CrdRollout) {
    let field = path(&["spec", "predictor", "deploymentStrategy"]);
    let roll = match predictor.get("deploymentStrategy") {
        Some(s) if s.get("type").and_then(Value::as_str) == Some("Recreate") => {
            Roll::recreate(replicas)
        }
        Some(s) => Roll::deployment(
            replicas,
            s.pointer("/rollingUpdate/maxSurge"),
            s.pointer("/rollingUpdate/maxUnavailable"),
            ("25%", "25%"),
        ),
        None => Roll::deployment(replicas, None, None, ("25%", "25%")),
    };
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
fn llm_inference_service(
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
        advice: "set rolloutStrategy to maxSurge 1, maxUnavailable 0".into(),
    };
    let unit = Unit {
        obj,
        pod,
        pod_path: Some(tpl),
        base: base.clone(),
        service: service.map(str::to_string),
        roll,
        crd,
    };
    run(unit, placeholders, cx, out);
}

/// KAITO `GeneratePresetInference`: one StatefulSet (default update
/// strategy: delete a pod, then create its replacement) whose pods are one
/// serving unit — a single pod, or one distributed vLLM group over the
/// nodes of `resource.count` — with its own `/health` readiness probe.
fn kaito_workspace(obj: &ServingObject, placeholders: &Placeholders, cx: Cx<'_>, out: &mut Out) {
    if obj.at("/inference/preset").is_none() {
        return;
    }
    let c = Container {
        name: "inference".into(),
        readiness_probe: Some(http_probe("/health", json!(5000))),
        ..Container::default()
    };
    let pod = PodSpec {
        containers: vec![c],
        ..PodSpec::default()
    };
    let nodes = count(obj.at("/resource/count"), 1).unwrap_or(1);
    let group = if nodes > 1 {
        format!(
            "its {nodes} nodes (`resource.count`) serve the preset as one group, so the first pod replaced stops it"
        )
    } else {
        "its one pod serves the preset".to_string()
    };
    let crd = CrdRollout {
        unit: None,
        renders: format!("KAITO renders one StatefulSet for it, which deletes each pod before creating its replacement, and {group}"),
        field: path(&["inference", "preset"]),
        replicas: None,
        fix: None,
        advice: "a Workspace has no replica or surge setting: change it in a maintenance window, or serve the model from two Workspaces (an InferenceSet with replicas: 2)".into(),
    };
    let roll = Roll {
        replicas: Some(1),
        number_of_nodes: None,
        roll: RollKind::OldPodFirst,
        max_surge: 0,
        max_unavailable: 1,
        max_unavailable_spec: None,
    };
    let unit = Unit {
        obj,
        pod,
        pod_path: None,
        base: Vec::new(),
        service: None,
        roll,
        crd,
    };
    run(unit, placeholders, cx, out);
}

/// AIBrix StormService (`pkg/controller/stormservice/sync.go`): with
/// RollingUpdate (the default) whole RoleSets are replaced, `replicas`
/// of them, maxSurge and maxUnavailable from `updateStrategy` (both
/// default 0, then maxUnavailable 1: `ResolveFenceposts`); with
/// InPlaceUpdate every RoleSet is updated at once and each rolls a role's
/// pods by the role's own `updateStrategy` (same defaults,
/// `pkg/controller/roleset/utils.go`). Each role is linted on its pod
/// template, which the user writes.
fn storm_service(obj: &ServingObject, placeholders: &Placeholders, cx: Cx<'_>, out: &mut Out) {
    let sets = count(obj.at("/spec/replicas"), 1);
    let us = obj.at("/spec/updateStrategy");
    let in_place = us.and_then(|u| u.get("type")).and_then(Value::as_str) == Some("InPlaceUpdate");
    let roles = obj
        .at("/spec/template/spec/roles")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, role) in roles.iter().enumerate() {
        let idx = i.to_string();
        let role_base = path(&["spec", "template", "spec", "roles", &idx]);
        let tpl = path(&[
            "spec", "template", "spec", "roles", &idx, "template", "spec",
        ]);
        let Some(pod) = pod_at(obj, &tpl) else {
            continue;
        };
        let name = role
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("role")
            .to_string();
        let (roll, crd) = if in_place {
            let ru = role.get("updateStrategy");
            let n = count(role.get("replicas"), 1);
            let roll = Roll::deployment(
                n,
                ru.and_then(|u| u.get("maxSurge")),
                ru.and_then(|u| u.get("maxUnavailable")),
                ("0", "0"),
            );
            let mut field = role_base.clone();
            field.push(Seg::Key("replicas".into()));
            let crd = CrdRollout {
                unit: Some("pod(s) in the role"),
                renders: format!(
                    "AIBrix updates every RoleSet in place (`updateStrategy.type: InPlaceUpdate`), each replacing role {name}'s pods by the role's own updateStrategy (maxSurge {}, maxUnavailable {})",
                    roll.max_surge, roll.max_unavailable
                ),
                field,
                replicas: None,
                fix: None,
                advice: "give the role more replicas than its maxUnavailable, or a surge (`updateStrategy: {maxSurge: 1, maxUnavailable: 0}`) with a readiness probe on its serving endpoint".into(),
            };
            (roll, crd)
        } else {
            let roll = Roll::deployment(
                sets,
                us.and_then(|u| u.get("maxSurge")),
                us.and_then(|u| u.get("maxUnavailable")),
                ("0", "0"),
            );
            let crd = CrdRollout {
                unit: Some("RoleSet(s)"),
                renders: format!(
                    "AIBrix replaces whole RoleSets (`updateStrategy` RollingUpdate: maxSurge {}, maxUnavailable {} of `replicas`), role {name} with them",
                    roll.max_surge, roll.max_unavailable
                ),
                field: path(&["spec", "updateStrategy"]),
                replicas: None,
                fix: None,
                advice: "run more RoleSets than maxUnavailable (`replicas`), or surge one (`updateStrategy: {maxSurge: 1, maxUnavailable: 0}`) with a readiness probe on each role's serving endpoint".into(),
            };
            (roll, crd)
        };
        let unit = Unit {
            obj,
            pod,
            pod_path: Some(tpl),
            base: role_base,
            service: Some(name),
            roll,
            crd,
        };
        run(unit, placeholders, cx, out);
    }
}

/// The pod group of a RayCluster spec that holds the most GPUs per pod:
/// its pod, where it is written, and how many such pods one cluster runs
/// (head 1; a worker group `replicas` × `numOfHosts`). KubeRay gives every
/// Ray container a readiness probe of its own when it has none
/// (`initLivenessAndReadinessProbe`, on unless `ENABLE_PROBES_INJECTION`
/// is false), which says the Raylet is up, not that a model serves.
fn ray_gpu_group(
    obj: &ServingObject,
    cluster: &manifest::Path,
) -> Option<(PodSpec, manifest::Path, i32)> {
    let mut head = cluster.clone();
    head.extend(path(&["headGroupSpec", "template", "spec"]));
    let mut groups = vec![(head, 1)];
    let workers = obj
        .at(&pointer(cluster))
        .and_then(|c| c.get("workerGroupSpecs"))
        .and_then(Value::as_array);
    for (j, g) in workers.into_iter().flatten().enumerate() {
        let mut p = cluster.clone();
        p.extend(path(&[
            "workerGroupSpecs",
            &j.to_string(),
            "template",
            "spec",
        ]));
        let n =
            count(g.get("replicas"), 1).unwrap_or(1) * count(g.get("numOfHosts"), 1).unwrap_or(1);
        groups.push((p, n));
    }
    let gpus = |pod: &PodSpec| -> i64 {
        pod.containers
            .iter()
            .flat_map(|c| {
                c.resources
                    .iter()
                    .flat_map(|r| [r.requests.as_ref(), r.limits.as_ref()])
                    .flatten()
            })
            .flat_map(|m| m.iter())
            .filter(|(k, _)| infera_model::worker::is_gpu_resource(k))
            .filter_map(|(_, v)| infera_model::worker::whole_quantity(&v.0))
            .max()
            .unwrap_or(0)
    };
    let mut best: Option<(PodSpec, manifest::Path, i32)> = None;
    for (p, n) in groups {
        let Some(mut pod) = pod_at(obj, &p) else {
            continue;
        };
        if best.as_ref().is_some_and(|(b, _, _)| gpus(b) >= gpus(&pod)) {
            continue;
        }
        for c in &mut pod.containers {
            if c.readiness_probe.is_none() {
                c.readiness_probe =
                    serde_json::from_value(json!({"exec": {"command": ["ray-health-check"]}})).ok();
            }
        }
        best = Some((pod, p, n));
    }
    best
}

/// AIBrix RayClusterFleet (`pkg/controller/rayclusterfleet`): the
/// Deployment controller's rollout over whole Ray clusters — `replicas`
/// clusters, `strategy` Recreate or RollingUpdate with maxSurge and
/// maxUnavailable rounded by `ResolveFenceposts` (absent fields are 0, then
/// maxUnavailable 1).
fn ray_cluster_fleet(obj: &ServingObject, placeholders: &Placeholders, cx: Cx<'_>, out: &mut Out) {
    let cluster = path(&["spec", "template", "spec"]);
    let Some((pod, pod_path, per_cluster)) = ray_gpu_group(obj, &cluster) else {
        return;
    };
    let replicas = count(obj.at("/spec/replicas"), 1);
    let st = obj.at("/spec/strategy");
    let recreate = st.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("Recreate");
    let mut roll = if recreate {
        Roll::recreate(replicas)
    } else {
        let ru = st.and_then(|s| s.get("rollingUpdate"));
        Roll::deployment(
            replicas,
            ru.and_then(|r| r.get("maxSurge")),
            ru.and_then(|r| r.get("maxUnavailable")),
            ("0", "0"),
        )
    };
    // Each surge cluster brings all its pods of the GPU group at once.
    let surge_clusters = roll.max_surge;
    roll.max_surge = surge_clusters * i64::from(per_cluster);
    let field = path(&["spec", "strategy"]);
    let crd = CrdRollout {
        unit: Some("Ray cluster(s)"),
        renders: format!(
            "AIBrix rolls whole Ray clusters ({per_cluster} pod(s) of this group each) as a Deployment rolls pods: strategy {}, maxSurge {surge_clusters} cluster(s), maxUnavailable {}",
            if recreate { "Recreate" } else { "RollingUpdate" },
            roll.max_unavailable
        ),
        field: field.clone(),
        replicas: Some(path(&["spec", "replicas"])),
        fix: Some((
            "set strategy to RollingUpdate with maxSurge 1, maxUnavailable 0 (one new cluster before an old one goes)".into(),
            vec![(field, surge_strategy())],
        )),
        advice: "set strategy to maxSurge 1, maxUnavailable 0".into(),
    };
    let unit = Unit {
        obj,
        pod,
        pod_path: Some(pod_path),
        base: path(&["spec"]),
        service: None,
        roll,
        crd,
    };
    run(unit, placeholders, cx, out);
}

/// KubeRay RayService (`rayservice_controller.go`): unless
/// `upgradeStrategy.type` is `None` (or the operator runs with
/// `ENABLE_ZERO_DOWNTIME=false`), a change to `rayClusterConfig` creates a
/// whole new cluster beside the serving one and switches traffic when its
/// Serve applications are healthy (`shouldPrepareNewCluster`): one cluster
/// surges, none goes first.
fn ray_service(obj: &ServingObject, placeholders: &Placeholders, cx: Cx<'_>, out: &mut Out) {
    let kind = obj.at("/spec/upgradeStrategy/type").and_then(Value::as_str);
    if matches!(kind, Some("None" | "NewClusterWithIncrementalUpgrade")) {
        return;
    }
    let cluster = path(&["spec", "rayClusterConfig"]);
    let Some((pod, pod_path, per_cluster)) = ray_gpu_group(obj, &cluster) else {
        return;
    };
    let roll = Roll {
        replicas: Some(1),
        number_of_nodes: None,
        roll: RollKind::SurgeFirst,
        max_surge: i64::from(per_cluster),
        max_unavailable: 0,
        max_unavailable_spec: None,
    };
    let crd = CrdRollout {
        unit: Some("Ray cluster(s)"),
        renders: format!(
            "KubeRay upgrades it by a whole new Ray cluster ({per_cluster} pod(s) of this group) beside the serving one"
        ),
        field: path(&["spec", "upgradeStrategy"]),
        replicas: None,
        fix: None,
        advice: "keep the capacity of a second cluster free".into(),
    };
    let unit = Unit {
        obj,
        pod,
        pod_path: Some(pod_path),
        base: path(&["spec"]),
        service: None,
        roll,
        crd,
    };
    run(unit, placeholders, cx, out);
}

#[cfg(test)]
mod tests {
    use crate::engine::{LintOptions, lint_source};

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
}
