//! The change that starts a rollout, as JSON merge patches, and its undo.
//!
//! An InferaDeployment is changed on the CR (`spec.services.<S>`), never on
//! the Deployments the operator renders from it: the operator replaces their
//! whole spec about every 15 s (operator-semantics §1). A plain Deployment is
//! changed the way `kubectl rollout restart` / `kubectl set image` do.
//!
//! Lists (containers, env) are replaced whole by a merge patch, so patches are
//! computed from the live object and sent with its `resourceVersion`: a
//! concurrent writer gets a 409 and we re-read, never a lost update.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// Pod label the restart trigger sets through `services.<S>.podLabels`.
pub const RESTARTED_AT_LABEL: &str = "infera.amd.com/restarted-at";
/// kubectl's restart annotation on a Deployment's pod template.
pub const KUBECTL_RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";

/// What a rollout changes on one leg (the same for every leg).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Change {
    /// Restart marker: a label-safe UTC timestamp (`20261202T184512Z`) for an
    /// InferaDeployment (label values cannot hold `:`), RFC 3339 for a
    /// Deployment annotation, as kubectl writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_at: Option<String>,
    /// New image of the main container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Environment variables to set on the main container, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvSetting>,
}

impl Change {
    /// The fields it sets on `leg`, for the driver's "trigger applied" line.
    pub fn describe(&self, is_idep: bool, leg: &str) -> String {
        let mut parts = Vec::new();
        if let Some(at) = &self.restart_at {
            if is_idep {
                parts.push(format!(
                    "services.{leg}.podLabels[\"{RESTARTED_AT_LABEL}\"]={at}"
                ));
            } else {
                parts.push(format!("template annotation {KUBECTL_RESTARTED_AT}={at}"));
            }
        }
        if let Some(image) = &self.image {
            parts.push(format!("image {image}"));
        }
        for e in &self.env {
            parts.push(format!("env {}={}", e.name, e.value));
        }
        parts.join(", ")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvSetting {
    pub name: String,
    pub value: String,
}

/// The values a trigger overwrote, so an abort can put them back.
/// `None` means the field was absent (restored by removing it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Original {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restarted_at: Option<String>,
    /// Whether `image` below is meaningful (set-image was part of the change).
    #[serde(default)]
    pub image_changed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Env var name → its original `EnvVar` object (or absent).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, Option<Value>>,
    /// The Deployment strategy before `--surge` changed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Value>,
    #[serde(default)]
    pub strategy_changed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TriggerError {
    #[error("service `{service}` is not in the InferaDeployment (it has: {known})")]
    NoSuchService { service: String, known: String },
    #[error("`{0}` has no containers to change; check its extraPodSpec / pod template")]
    NoContainers(String),
    #[error("`--set-env {0}` is not K=V with a valid variable name")]
    BadEnv(String),
    #[error("the object has no `{0}`; is this the right target?")]
    Missing(&'static str),
}

/// Parse `--set-env K=V`.
pub fn parse_env(arg: &str) -> Result<EnvSetting, TriggerError> {
    let (name, value) = arg
        .split_once('=')
        .ok_or_else(|| TriggerError::BadEnv(arg.to_string()))?;
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
    if !valid {
        return Err(TriggerError::BadEnv(arg.to_string()));
    }
    Ok(EnvSetting {
        name: name.to_string(),
        value: value.to_string(),
    })
}

/// A label-safe UTC timestamp for the InferaDeployment restart label.
pub fn label_timestamp(now: jiff::Timestamp) -> String {
    now.strftime("%Y%m%dT%H%M%SZ").to_string()
}

/// The RFC 3339 timestamp kubectl writes into `restartedAt`.
pub fn annotation_timestamp(now: jiff::Timestamp) -> String {
    now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The main container: named `main` or `infera`, else the first
/// (operator-semantics §2).
pub fn main_container_index(containers: &[Value]) -> Option<usize> {
    infera_model::worker::main_container_position(
        containers
            .iter()
            .map(|c| c.get("name").and_then(Value::as_str).unwrap_or_default()),
    )
}

fn service<'a>(cr: &'a Value, name: &str) -> Result<&'a Value, TriggerError> {
    let services = cr
        .pointer("/spec/services")
        .and_then(Value::as_object)
        .ok_or(TriggerError::Missing("spec.services"))?;
    services
        .get(name)
        .ok_or_else(|| TriggerError::NoSuchService {
            service: name.to_string(),
            known: services.keys().cloned().collect::<Vec<_>>().join(", "),
        })
}

fn containers_of(spec: &Value) -> Vec<Value> {
    spec.get("containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Set `env` on an env list; returns the overwritten entries.
fn set_env(list: &mut Vec<Value>, env: &[EnvSetting]) -> BTreeMap<String, Option<Value>> {
    let mut original = BTreeMap::new();
    for setting in env {
        let entry = json!({"name": setting.name, "value": setting.value});
        match list
            .iter()
            .position(|e| e.get("name").and_then(Value::as_str) == Some(setting.name.as_str()))
        {
            Some(i) => {
                if let Some(slot) = list.get_mut(i) {
                    original
                        .entry(setting.name.clone())
                        .or_insert(Some(slot.clone()));
                    *slot = entry;
                }
            }
            None => {
                original.entry(setting.name.clone()).or_insert(None);
                list.push(entry);
            }
        }
    }
    original
}

/// Put back env entries recorded in `original`.
fn restore_env(list: &mut Vec<Value>, original: &BTreeMap<String, Option<Value>>) {
    for (name, value) in original {
        let pos = list
            .iter()
            .position(|e| e.get("name").and_then(Value::as_str) == Some(name.as_str()));
        match (pos, value) {
            (Some(i), Some(v)) => {
                if let Some(slot) = list.get_mut(i) {
                    *slot = v.clone();
                }
            }
            (Some(i), None) => {
                list.remove(i);
            }
            (None, Some(v)) => list.push(v.clone()),
            (None, None) => {}
        }
    }
}

fn with_rv(cr: &Value, mut patch: Value) -> Value {
    if let (Some(rv), Some(obj)) = (
        cr.pointer("/metadata/resourceVersion")
            .and_then(Value::as_str),
        patch.as_object_mut(),
    ) {
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
    }
    patch
}

/// The merge patch that applies `change` to service `name` of the
/// InferaDeployment `cr`, and the values it overwrites.
/// The patch carries the CR's `resourceVersion` (optimistic concurrency).
pub fn idep_patch(
    cr: &Value,
    name: &str,
    change: &Change,
) -> Result<(Value, Original), TriggerError> {
    let svc = service(cr, name)?;
    let mut original = Original::default();
    let mut svc_patch = Map::new();
    if let Some(at) = &change.restart_at {
        original.restarted_at = svc
            .pointer("/podLabels")
            .and_then(|l| l.get(RESTARTED_AT_LABEL))
            .and_then(Value::as_str)
            .map(str::to_string);
        svc_patch.insert("podLabels".into(), json!({ RESTARTED_AT_LABEL: at }));
    }
    let touches_container = change.image.is_some() || !change.env.is_empty();
    if let Some(extra) = svc.get("extraPodSpec").filter(|_| touches_container) {
        let mut containers = containers_of(extra);
        let i = main_container_index(&containers)
            .ok_or_else(|| TriggerError::NoContainers(format!("service {name}")))?;
        let main = containers
            .get_mut(i)
            .ok_or_else(|| TriggerError::NoContainers(format!("service {name}")))?;
        if let Some(image) = &change.image {
            original.image_changed = true;
            original.image = main
                .get("image")
                .and_then(Value::as_str)
                .map(str::to_string);
            main["image"] = Value::String(image.clone());
        }
        if !change.env.is_empty() {
            let mut env = main
                .get("env")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            original.env = set_env(&mut env, &change.env);
            main["env"] = Value::Array(env);
        }
        svc_patch.insert("extraPodSpec".into(), json!({ "containers": containers }));
    } else if touches_container {
        if let Some(image) = &change.image {
            original.image_changed = true;
            original.image = svc.get("image").and_then(Value::as_str).map(str::to_string);
            svc_patch.insert("image".into(), Value::String(image.clone()));
        }
        if !change.env.is_empty() {
            let mut env = svc
                .get("env")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            original.env = set_env(&mut env, &change.env);
            svc_patch.insert("env".into(), Value::Array(env));
        }
    }
    let patch = json!({"spec": {"services": { name: Value::Object(svc_patch) }}});
    Ok((with_rv(cr, patch), original))
}

/// The merge patch that puts back what [`idep_patch`] overwrote on service
/// `name`, computed against the live `cr` (other edits are kept).
pub fn idep_undo_patch(cr: &Value, name: &str, original: &Original) -> Result<Value, TriggerError> {
    let svc = service(cr, name)?;
    let mut svc_patch = Map::new();
    let has_restart_label = svc
        .pointer("/podLabels")
        .and_then(|l| l.get(RESTARTED_AT_LABEL))
        .is_some();
    if has_restart_label || original.restarted_at.is_some() {
        svc_patch.insert(
            "podLabels".into(),
            json!({ RESTARTED_AT_LABEL: original.restarted_at }),
        );
    }
    let touches_container = original.image_changed || !original.env.is_empty();
    if let Some(extra) = svc.get("extraPodSpec").filter(|_| touches_container) {
        let mut containers = containers_of(extra);
        if let Some(main) = main_container_index(&containers).and_then(|i| containers.get_mut(i)) {
            if original.image_changed {
                match (&original.image, main.as_object_mut()) {
                    (Some(image), _) => main["image"] = Value::String(image.clone()),
                    (None, Some(obj)) => {
                        obj.remove("image");
                    }
                    (None, None) => {}
                }
            }
            if !original.env.is_empty() {
                let mut env = main
                    .get("env")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                restore_env(&mut env, &original.env);
                main["env"] = Value::Array(env);
            }
        }
        svc_patch.insert("extraPodSpec".into(), json!({ "containers": containers }));
    } else if touches_container {
        if original.image_changed {
            svc_patch.insert("image".into(), json!(original.image));
        }
        if !original.env.is_empty() {
            let mut env = svc
                .get("env")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            restore_env(&mut env, &original.env);
            svc_patch.insert("env".into(), Value::Array(env));
        }
    }
    let patch = json!({"spec": {"services": { name: Value::Object(svc_patch) }}});
    Ok(with_rv(cr, patch))
}

/// The strategy `--surge` sets: replacement first, old pod retired when the
/// new one is Ready.
pub fn surge_strategy() -> Value {
    json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}})
}

/// The merge patch that applies `change` (and `--surge`) to a Deployment.
pub fn deployment_patch(
    dep: &Value,
    change: &Change,
    surge: bool,
) -> Result<(Value, Original), TriggerError> {
    let template = dep
        .pointer("/spec/template")
        .ok_or(TriggerError::Missing("spec.template"))?;
    let mut original = Original::default();
    let mut spec_patch = Map::new();
    let mut template_patch = Map::new();
    if let Some(at) = &change.restart_at {
        original.restarted_at = template
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(KUBECTL_RESTARTED_AT))
            .and_then(Value::as_str)
            .map(str::to_string);
        template_patch.insert(
            "metadata".into(),
            json!({"annotations": { KUBECTL_RESTARTED_AT: at }}),
        );
    }
    if change.image.is_some() || !change.env.is_empty() {
        let pod_spec = template
            .get("spec")
            .ok_or(TriggerError::Missing("spec.template.spec"))?;
        let mut containers = containers_of(pod_spec);
        let i = main_container_index(&containers)
            .ok_or_else(|| TriggerError::NoContainers("the pod template".into()))?;
        let main = containers
            .get_mut(i)
            .ok_or_else(|| TriggerError::NoContainers("the pod template".into()))?;
        if let Some(image) = &change.image {
            original.image_changed = true;
            original.image = main
                .get("image")
                .and_then(Value::as_str)
                .map(str::to_string);
            main["image"] = Value::String(image.clone());
        }
        if !change.env.is_empty() {
            let mut env = main
                .get("env")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            original.env = set_env(&mut env, &change.env);
            main["env"] = Value::Array(env);
        }
        template_patch.insert("spec".into(), json!({ "containers": containers }));
    }
    if surge {
        let current = dep.pointer("/spec/strategy").cloned();
        let surge = surge_strategy();
        if current.as_ref() != Some(&surge) {
            original.strategy = current;
            original.strategy_changed = true;
            // Recreate has no rollingUpdate; a merge patch must null nothing
            // else, so the whole strategy object is written.
            spec_patch.insert("strategy".into(), surge);
        }
    }
    spec_patch.insert("template".into(), Value::Object(template_patch));
    Ok((with_rv(dep, json!({ "spec": spec_patch })), original))
}

/// The merge patch that puts back what [`deployment_patch`] overwrote.
pub fn deployment_undo_patch(dep: &Value, original: &Original) -> Result<Value, TriggerError> {
    let template = dep
        .pointer("/spec/template")
        .ok_or(TriggerError::Missing("spec.template"))?;
    let mut spec_patch = Map::new();
    let mut template_patch = Map::new();
    let has_annotation = template
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(KUBECTL_RESTARTED_AT))
        .is_some();
    if has_annotation || original.restarted_at.is_some() {
        template_patch.insert(
            "metadata".into(),
            json!({"annotations": { KUBECTL_RESTARTED_AT: original.restarted_at }}),
        );
    }
    if original.image_changed || !original.env.is_empty() {
        let pod_spec = template
            .get("spec")
            .ok_or(TriggerError::Missing("spec.template.spec"))?;
        let mut containers = containers_of(pod_spec);
        if let Some(main) = main_container_index(&containers).and_then(|i| containers.get_mut(i)) {
            if original.image_changed
                && let Some(image) = &original.image
            {
                main["image"] = Value::String(image.clone());
            }
            if !original.env.is_empty() {
                let mut env = main
                    .get("env")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                restore_env(&mut env, &original.env);
                main["env"] = Value::Array(env);
            }
        }
        template_patch.insert("spec".into(), json!({ "containers": containers }));
    }
    // The strategy stays as --surge set it: putting back old-pod-first while
    // the abort is rolling back would take the serving pod down first.
    spec_patch.insert("template".into(), Value::Object(template_patch));
    // A rollout stopped between pods (`--pause-between pods`) left the
    // Deployment paused: the rollback must be able to proceed.
    if dep.pointer("/spec/paused").and_then(Value::as_bool) == Some(true) {
        spec_patch.insert("paused".into(), Value::Bool(false));
    }
    Ok(with_rv(dep, json!({ "spec": spec_patch })))
}

/// Whether a pod was created from a template that carries `change`.
/// `inferadeployment` selects where the restart marker lives.
pub fn pod_has_change(pod: &Pod, change: &Change, inferadeployment: bool) -> bool {
    if let Some(at) = &change.restart_at {
        let meta = &pod.metadata;
        let found = if inferadeployment {
            meta.labels.as_ref().and_then(|l| l.get(RESTARTED_AT_LABEL))
        } else {
            meta.annotations
                .as_ref()
                .and_then(|a| a.get(KUBECTL_RESTARTED_AT))
        };
        if found.map(String::as_str) != Some(at.as_str()) {
            return false;
        }
    }
    if change.image.is_none() && change.env.is_empty() {
        return true;
    }
    let containers = pod
        .spec
        .as_ref()
        .map_or(&[][..], |s| s.containers.as_slice());
    let Some(main) =
        infera_model::worker::main_container_position(containers.iter().map(|c| c.name.as_str()))
            .and_then(|i| containers.get(i))
    else {
        return false;
    };
    if let Some(image) = &change.image
        && main.image.as_deref() != Some(image.as_str())
    {
        return false;
    }
    change.env.iter().all(|setting| {
        main.env.as_ref().is_some_and(|env| {
            env.iter().any(|e| {
                e.name == setting.name && e.value.as_deref() == Some(setting.value.as_str())
            })
        })
    })
}

/// Apply a JSON merge patch locally (RFC 7386), e.g. to tell whether a
/// patch would change anything.
pub fn merged(target: &Value, patch: &Value) -> Value {
    let mut out = target.clone();
    json_patch::merge(&mut out, patch);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_description_names_the_cr_field() {
        let c = Change {
            restart_at: Some("T".into()),
            image: None,
            env: vec![],
        };
        assert_eq!(
            c.describe(true, "decode"),
            "services.decode.podLabels[\"infera.amd.com/restarted-at\"]=T"
        );
    }

    /// Merge patches leave `{}` where a key was nulled; the API server does too.
    fn pruned(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| (k.clone(), pruned(v)))
                    .filter(|(_, v)| !matches!(v, Value::Object(m) if m.is_empty()))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn cr() -> Value {
        json!({
            "apiVersion": "infera.amd.com/v1alpha1", "kind": "InferaDeployment",
            "metadata": {"name": "qwen", "namespace": "infera", "resourceVersion": "42"},
            "spec": {"image": "base:1", "services": {
                "server": {"componentType": "server"},
                "prefill": {"componentType": "worker", "role": "prefill",
                            "env": [{"name": "A", "value": "1"}]},
                "decode": {"componentType": "worker", "role": "decode",
                           "podLabels": {"team": "x"},
                           "extraPodSpec": {"containers": [
                               {"name": "sidecar", "image": "side:1"},
                               {"name": "main", "image": "eng:1", "env": [{"name": "B", "value": "2"}]}
                           ]}}
            }}
        })
    }

    fn change(restart: bool, image: Option<&str>, env: &[(&str, &str)]) -> Change {
        Change {
            restart_at: restart.then(|| "20261202T184512Z".to_string()),
            image: image.map(str::to_string),
            env: env
                .iter()
                .map(|(k, v)| EnvSetting {
                    name: k.to_string(),
                    value: v.to_string(),
                })
                .collect(),
        }
    }

    #[test]
    fn restart_sets_pod_label_on_cr_and_undo_removes_it() {
        let live = cr();
        let (patch, original) = idep_patch(&live, "prefill", &change(true, None, &[])).unwrap();
        assert_eq!(
            patch,
            json!({"metadata": {"resourceVersion": "42"},
                   "spec": {"services": {"prefill": {"podLabels": {RESTARTED_AT_LABEL: "20261202T184512Z"}}}}})
        );
        assert_eq!(original.restarted_at, None);
        let after = merged(&live, &patch);
        let undo = idep_undo_patch(&after, "prefill", &original).unwrap();
        let back = merged(&after, &undo);
        assert_eq!(pruned(&back["spec"]), live["spec"]);
    }

    #[test]
    fn restart_keeps_other_pod_labels() {
        let live = cr();
        let (patch, _) = idep_patch(&live, "decode", &change(true, None, &[])).unwrap();
        let after = merged(&live, &patch);
        assert_eq!(
            after["spec"]["services"]["decode"]["podLabels"]["team"],
            "x"
        );
    }

    #[test]
    fn set_image_on_flat_service_and_env_then_undo() {
        let live = cr();
        let c = change(false, Some("base:2"), &[("A", "9"), ("C", "3")]);
        let (patch, original) = idep_patch(&live, "prefill", &c).unwrap();
        let after = merged(&live, &patch);
        let svc = &after["spec"]["services"]["prefill"];
        assert_eq!(svc["image"], "base:2");
        assert_eq!(
            svc["env"],
            json!([{"name": "A", "value": "9"}, {"name": "C", "value": "3"}])
        );
        let undo = idep_undo_patch(&after, "prefill", &original).unwrap();
        let back = merged(&after, &undo);
        assert_eq!(back["spec"], live["spec"]);
    }

    #[test]
    fn set_image_goes_to_main_container_of_extra_pod_spec() {
        let live = cr();
        let c = change(false, Some("eng:2"), &[("B", "5")]);
        let (patch, original) = idep_patch(&live, "decode", &c).unwrap();
        let after = merged(&live, &patch);
        let containers = &after["spec"]["services"]["decode"]["extraPodSpec"]["containers"];
        assert_eq!(containers[0]["image"], "side:1");
        assert_eq!(containers[1]["image"], "eng:2");
        assert_eq!(containers[1]["env"], json!([{"name": "B", "value": "5"}]));
        assert_eq!(original.image.as_deref(), Some("eng:1"));
        let back = merged(
            &after,
            &idep_undo_patch(&after, "decode", &original).unwrap(),
        );
        assert_eq!(back["spec"], live["spec"]);
    }

    #[test]
    fn unknown_service_names_the_known_ones() {
        let err = idep_patch(&cr(), "nope", &change(true, None, &[])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "service `nope` is not in the InferaDeployment (it has: decode, prefill, server)"
        );
    }

    #[test]
    fn main_container_rule() {
        let c = |names: &[&str]| names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>();
        assert_eq!(main_container_index(&c(&["a", "infera"])), Some(1));
        assert_eq!(main_container_index(&c(&["a", "main", "infera"])), Some(1));
        assert_eq!(main_container_index(&c(&["a", "b"])), Some(0));
        assert_eq!(main_container_index(&[]), None);
    }

    #[test]
    fn deployment_restart_image_and_surge() {
        let dep = json!({"metadata": {"name": "web", "resourceVersion": "7"},
            "spec": {"strategy": {"type": "Recreate"},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "web:1"}]}}}});
        let c = Change {
            restart_at: Some("2026-12-02T18:45:12Z".into()),
            image: Some("web:2".into()),
            env: vec![],
        };
        let (patch, original) = deployment_patch(&dep, &c, true).unwrap();
        let after = merged(&dep, &patch);
        assert_eq!(after["spec"]["strategy"], surge_strategy());
        assert_eq!(
            after["spec"]["template"]["metadata"]["annotations"][KUBECTL_RESTARTED_AT],
            "2026-12-02T18:45:12Z"
        );
        assert_eq!(
            after["spec"]["template"]["spec"]["containers"][0]["image"],
            "web:2"
        );
        assert!(original.strategy_changed);
        let back = merged(&after, &deployment_undo_patch(&after, &original).unwrap());
        assert_eq!(pruned(&back["spec"]["template"]), dep["spec"]["template"]);
        // The surge strategy is kept on abort (old-pod-first would retire the serving pod).
        assert_eq!(back["spec"]["strategy"], surge_strategy());
    }

    fn typed(pod: &Value) -> Pod {
        serde_json::from_value(pod.clone()).unwrap()
    }

    #[test]
    fn pods_are_matched_by_the_change_they_carry() {
        let c = change(true, Some("eng:2"), &[("B", "5")]);
        let new_pod = json!({"metadata": {"labels": {RESTARTED_AT_LABEL: "20261202T184512Z"}},
            "spec": {"containers": [{"name": "main", "image": "eng:2", "env": [{"name": "B", "value": "5"}]}]}});
        assert!(pod_has_change(&typed(&new_pod), &c, true));
        let mut old_pod = new_pod.clone();
        old_pod["metadata"]["labels"] = json!({});
        assert!(!pod_has_change(&typed(&old_pod), &c, true));
        let mut other_image = new_pod.clone();
        other_image["spec"]["containers"][0]["image"] = json!("eng:1");
        assert!(!pod_has_change(&typed(&other_image), &c, true));
        assert!(
            !pod_has_change(&typed(&new_pod), &c, false),
            "deploy restart lives in annotations"
        );
    }

    #[test]
    fn the_main_container_carries_the_change() {
        let c = change(false, Some("eng:2"), &[("B", "5")]);
        let pod = |containers: Value| typed(&json!({"spec": {"containers": containers}}));
        // The sidecar has the change, the main container (named `main`, not first) does not.
        let sidecar =
            json!({"name": "side", "image": "eng:2", "env": [{"name": "B", "value": "5"}]});
        let main = |image: &str, env: Value| json!({"name": "main", "image": image, "env": env});
        let old = pod(json!([
            sidecar,
            main("eng:1", json!([{"name": "B", "value": "5"}]))
        ]));
        assert!(!pod_has_change(&old, &c, false));
        let new = pod(json!([
            sidecar,
            main("eng:2", json!([{"name": "B", "value": "5"}]))
        ]));
        assert!(pod_has_change(&new, &c, false));
        // An env var set from a reference is not the value the change wrote.
        let by_ref =
            json!([{"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]);
        assert!(!pod_has_change(
            &pod(json!([main("eng:2", by_ref)])),
            &c,
            false
        ));
        assert!(!pod_has_change(&pod(json!([])), &c, false), "no container");
        assert!(!pod_has_change(&typed(&json!({})), &c, false), "no spec");
    }

    #[test]
    fn env_parsing() {
        assert_eq!(
            parse_env("A=b=c").unwrap(),
            EnvSetting {
                name: "A".into(),
                value: "b=c".into()
            }
        );
        assert_eq!(parse_env("A=").unwrap().value, "");
        assert!(parse_env("=x").is_err());
        assert!(parse_env("noequals").is_err());
        assert!(parse_env("1A=x").is_err());
    }

    #[test]
    fn timestamps() {
        let t: jiff::Timestamp = "2026-12-02T18:45:12.5Z".parse().unwrap();
        assert_eq!(label_timestamp(t), "20261202T184512Z");
        assert_eq!(annotation_timestamp(t), "2026-12-02T18:45:12Z");
    }
}
