//! OME `InferenceService` (sgl-project/ome) with the `ServingRuntime` or
//! `ClusterServingRuntime` it names: the runtime's `engineConfig` (and
//! `decoderConfig`), its `runner` the main container, under the object's
//! own `engine` (`decoder`).

use k8s_openapi::api::core::v1::PodSpec;
use serde_json::{Value, json};

use super::{
    CrdRollout, Out, Placeholders, Roll, RollKind, Unit, count, default_tcp_probe, path, run,
    surge_strategy,
};
use crate::runner::Cx;
use infera_model::manifest::serving::ServingObject;

/// OME's main container (`constants.MainContainerName`).
const MAIN: &str = "ome-container";
/// The annotation that sets a component's deployment mode.
const MODE: &str = "ome.io/deploymentMode";

/// `over` merged onto `base`: objects key by key, anything else replaced.
/// (OME merges with a strategic merge patch, `mergeSpec`, which merges
/// `containers` and `env` lists by name; an engine's lists are replaced
/// here, which only matters when both the runtime and the object write
/// one.)
fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(slot) if v.is_object() => merge(slot, v),
                    _ => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// The runtime the object names, or what is missing. Without
/// `spec.runtime.name` OME picks one at admission from the formats of the
/// object's model (`RuntimeSelector.SelectRuntime` on a BaseModel or
/// ClusterBaseModel), which no manifest of the object holds.
fn runtime<'c>(obj: &ServingObject, cx: &Cx<'c>) -> Result<&'c Value, String> {
    let Some(name) = obj.at("/spec/runtime/name").and_then(Value::as_str) else {
        let model = obj
            .at("/spec/model/name")
            .and_then(Value::as_str)
            .unwrap_or("?");
        return Err(format!(
            "OME chooses its runtime when it is admitted, from the formats of its model `{model}` (a BaseModel or ClusterBaseModel, not in the object): set `spec.runtime.name` and lint the runtime with it"
        ));
    };
    let namespace = obj.metadata.namespace.as_deref().unwrap_or_default();
    match cx.around.peers.runtime(namespace, name) {
        Some(r) => Ok(&r.spec),
        None => Err(format!(
            "its runtime `{name}` (`spec.runtime.name`: a ServingRuntime or ClusterServingRuntime of ome.io) is not in the same input, and the pods are built from it: lint the two together"
        )),
    }
}

/// One component's spec as OME renders it: the runtime's config under the
/// object's fields (`MergeEngineSpec`, `MergeDecoderSpec`).
fn merged(runtime: &Value, config: &str, own: &Value) -> Value {
    let mut spec = runtime.get(config).cloned().unwrap_or_else(|| json!({}));
    merge(&mut spec, own);
    spec
}

/// The component's pod: its pod fields, the `runner` merged into the
/// container of the same name or added (`resolveContainer`), and a TCP
/// readiness probe on `ome-container` when it has none
/// (`setDefaultReadinessProbe`: its first port, else 8080).
fn pod(spec: &Value) -> PodSpec {
    let mut pod = spec.clone();
    if let Some(runner) = spec.get("runner") {
        let name = runner.get("name").cloned().unwrap_or(json!(MAIN));
        let containers = pod
            .as_object_mut()
            .map(|p| p.entry("containers").or_insert_with(|| json!([])));
        if let Some(Value::Array(list)) = containers {
            match list.iter_mut().find(|c| c.get("name") == Some(&name)) {
                Some(c) => merge(c, runner),
                None => list.push(runner.clone()),
            }
        }
    }
    let mut pod: PodSpec = serde_json::from_value(pod).unwrap_or_default();
    for c in pod.containers.iter_mut().filter(|c| c.name == MAIN) {
        default_tcp_probe(c);
    }
    pod
}

/// OME's deployment modes (`DeploymentModeType.IsValid`).
const MODES: [&str; 6] = [
    "Serverless",
    "RawDeployment",
    "MultiNodeRayVLLM",
    "PDDisaggregated",
    "MultiNode",
    "VirtualDeployment",
];

/// The deployment mode of a component (`DetermineDeploymentModes`). The
/// engine: its annotation when it names a mode
/// (`DetermineEngineDeploymentMode`), else MultiNode with a leader or
/// worker, else Serverless at `minReplicas: 0`; Serverless becomes
/// RawDeployment beside a decoder. The decoder: MultiNode with a leader or
/// worker, else RawDeployment.
fn mode(spec: &Value, field: &str, decoder_beside: bool) -> &'static str {
    let multi = spec.get("leader").is_some() || spec.get("worker").is_some();
    if field == "decoder" {
        return if multi { "MultiNode" } else { "RawDeployment" };
    }
    let annotated = spec
        .pointer(&format!("/annotations/{}", MODE.replace('/', "~1")))
        .and_then(Value::as_str)
        .and_then(|m| MODES.into_iter().find(|v| *v == m));
    let mode = match annotated {
        Some(m) => m,
        None if multi => "MultiNode",
        None if spec.get("minReplicas").and_then(Value::as_i64) == Some(0) => "Serverless",
        None => "RawDeployment",
    };
    if mode == "Serverless" && decoder_beside {
        "RawDeployment"
    } else {
        mode
    }
}

/// OME `createRawDeployment`: the component's `deploymentStrategy`, else
/// maxSurge 1, maxUnavailable 0 (`setDefaultDeploymentSpec`); replicas
/// `minReplicas` (`DefaultMinReplicas` 1).
fn raw(spec: &Value, field: &str, replicas: Option<i32>) -> (Roll, CrdRollout) {
    let strategy = path(&["spec", field, "deploymentStrategy"]);
    let roll = Roll::strategy(spec.get("deploymentStrategy"), replicas, ("1", "0"));
    let crd = CrdRollout {
        unit: Some("replica(s)"),
        renders: format!(
            "OME renders a Deployment from the runtime and `{field}` (`{field}.deploymentStrategy`, else maxSurge 1 and maxUnavailable 0)"
        ),
        fix: Some((
            format!(
                "set {field}.deploymentStrategy to RollingUpdate with maxSurge 1, maxUnavailable 0"
            ),
            vec![(strategy.clone(), surge_strategy())],
        )),
        advice: format!("set {field}.deploymentStrategy to maxSurge 1, maxUnavailable 0"),
        replicas: Some(path(&["spec", field, "minReplicas"])),
        field: strategy,
    };
    (roll, crd)
}

/// Serverless: OME's `ksvc_reconciler` routes 100% of traffic to the
/// latest Revision, which Knative resolves to the latest Ready one: a new
/// Revision comes up beside the serving one.
fn serverless(field: &str, replicas: Option<i32>) -> (Roll, CrdRollout) {
    let roll = Roll {
        replicas,
        number_of_nodes: None,
        roll: RollKind::SurgeFirst,
        max_surge: 1,
        max_unavailable: 0,
        max_unavailable_spec: None,
    };
    let crd = CrdRollout {
        unit: Some("replica(s)"),
        renders: "OME renders a Knative Service, whose new Revision takes traffic only once Ready"
            .into(),
        field: path(&["spec", field]),
        replicas: Some(path(&["spec", field, "minReplicas"])),
        fix: None,
        advice: "keep a node free for the new Revision".into(),
    };
    (roll, crd)
}

/// OME's reconcile of an InferenceService: the runtime it names (in the
/// same input), its `engine` and `decoder` (the router serves no model and
/// is not read) each as a Deployment (RawDeployment) or a Knative Service
/// (Serverless). A component in another mode (MultiNode, MultiNodeRayVLLM,
/// PDDisaggregated, VirtualDeployment) is named as skipped.
pub(super) fn inference_service(
    obj: &ServingObject,
    placeholders: &Placeholders,
    cx: Cx<'_>,
    out: &mut Out,
) -> Result<(), String> {
    let Some(engine) = obj.at("/spec/engine") else {
        return Err("no `spec.engine`: OME refuses it (\"engine component is required\")".into());
    };
    let runtime = runtime(obj, &cx)?;
    let decoder = obj.at("/spec/decoder");
    let mut units = vec![("engine", merged(runtime, "engineConfig", engine))];
    if let Some(d) = decoder {
        units.push(("decoder", merged(runtime, "decoderConfig", d)));
    }
    let beside = decoder.is_some();
    for (field, spec) in &units {
        let mode = mode(spec, field, beside);
        if !matches!(mode, "RawDeployment" | "Serverless") {
            return Err(format!(
                "`{field}` deploys as {mode}, which infera does not model for OME (it reads RawDeployment and Serverless components)"
            ));
        }
    }
    for (field, spec) in units {
        let replicas = count(spec.get("minReplicas"), 1);
        let (roll, crd) = match mode(&spec, field, beside) {
            "Serverless" => serverless(field, replicas),
            _ => raw(&spec, field, replicas),
        };
        let unit = Unit {
            obj,
            pod: pod(&spec),
            pod_path: None,
            base: path(&["spec", field]),
            service: (field != "engine").then(|| field.to_string()),
            roll,
            crd,
            ray_cluster_gpus: None,
        };
        run(unit, placeholders, cx, out);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// (component, its spec, a decoder beside it, the mode OME deploys it in).
    #[test]
    fn modes_follow_determine_deployment_modes() {
        let rows = [
            ("engine", json!({"minReplicas": 1}), false, "RawDeployment"),
            ("engine", json!({"minReplicas": 0}), false, "Serverless"),
            ("engine", json!({"minReplicas": 0}), true, "RawDeployment"),
            ("engine", json!({"worker": {}}), false, "MultiNode"),
            (
                "engine",
                json!({"annotations": {"ome.io/deploymentMode": "PDDisaggregated"}}),
                false,
                "PDDisaggregated",
            ),
            (
                "engine",
                json!({"annotations": {"ome.io/deploymentMode": "Fast"}}),
                false,
                "RawDeployment",
            ),
            ("decoder", json!({"minReplicas": 0}), false, "RawDeployment"),
            ("decoder", json!({"leader": {}}), false, "MultiNode"),
        ];
        for (field, spec, beside, want) in rows {
            assert_eq!(super::mode(&spec, field, beside), want, "{field} {spec}");
        }
    }
}
