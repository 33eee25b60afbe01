//! KAITO `Workspace` (kaito-project/kaito).

use k8s_openapi::api::core::v1::{Container, PodSpec};
use serde_json::json;

use super::{CrdRollout, Out, Placeholders, Roll, RollKind, Unit, count, http_probe, path, run};
use crate::runner::Cx;
use infera_model::manifest::serving::ServingObject;

/// KAITO `GeneratePresetInference`: one StatefulSet (default update
/// strategy: delete a pod, then create its replacement) whose pods are one
/// serving unit — a single pod, or one distributed vLLM group over the
/// nodes of `resource.count` — with its own `/health` readiness probe.
pub(super) fn kaito_workspace(
    obj: &ServingObject,
    placeholders: &Placeholders,
    cx: Cx<'_>,
    out: &mut Out,
) {
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
        ray_cluster_gpus: None,
    };
    run(unit, placeholders, cx, out);
}
