//! The scenario's manifests, applied through the API (create; an object
//! that exists already is left as it is) and removed again by `cleanup`.

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, Scope};
use serde_json::{Value, json};

use super::{Shared, WorldError, ok_if_gone, retry, status_code, toleration};
use infera_sim_scenario::Scenario;

pub(super) struct Target {
    resource: ApiResource,
    namespaced: bool,
    namespace: Option<String>,
    pub(super) name: String,
}

fn manifest_err(scenario: &Scenario, index: usize, what: &str, message: String) -> WorldError {
    WorldError::Manifest {
        scenario: scenario.name.clone(),
        index,
        what: what.to_string(),
        message,
    }
}

fn describe(manifest: &Value) -> String {
    let s = |p: &str| manifest.pointer(p).and_then(Value::as_str).unwrap_or("");
    format!(
        "{} {} {}",
        s("/apiVersion"),
        s("/kind"),
        s("/metadata/name")
    )
}

pub(super) async fn target(
    client: &kube::Client,
    scenario: &Scenario,
    index: usize,
    manifest: &Value,
) -> Result<Target, WorldError> {
    let what = describe(manifest);
    let s = |p: &str| {
        manifest
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let gvk = gvk_of(manifest);
    let found: Result<(ApiResource, ApiCapabilities), _> =
        retry(|| async { kube::discovery::pinned_kind(client, &gvk).await }).await;
    let (resource, caps) = found.map_err(|e| {
        manifest_err(
            scenario,
            index,
            &what,
            format!("the server does not serve this kind: {e}"),
        )
    })?;
    let name = s("/metadata/name");
    if name.is_empty() {
        return Err(manifest_err(
            scenario,
            index,
            &what,
            "metadata.name is missing".into(),
        ));
    }
    let namespaced = caps.scope == Scope::Namespaced;
    let namespace = namespaced.then(|| {
        Some(s("/metadata/namespace"))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".into())
    });
    Ok(Target {
        resource,
        namespaced,
        namespace,
        name,
    })
}

/// The group, version and kind an object's `apiVersion` and `kind` name.
pub(super) fn gvk_of(obj: &Value) -> GroupVersionKind {
    let field = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or("");
    let api_version = field("/apiVersion");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    GroupVersionKind::gvk(group, version, field("/kind"))
}

pub(super) fn api_for(client: &kube::Client, t: &Target) -> Api<DynamicObject> {
    match (&t.namespace, t.namespaced) {
        (Some(ns), true) => Api::namespaced_with(client.clone(), ns, &t.resource),
        _ => Api::all_with(client.clone(), &t.resource),
    }
}

/// What the world applies: `manifest`, with the simulated nodes'
/// toleration in a Deployment's pod template when the nodes are tainted.
pub(super) fn prepared(shared: &Shared, manifest: &Value) -> Value {
    let mut obj = manifest.clone();
    let is_workload = matches!(obj.get("kind").and_then(Value::as_str), Some("Deployment"));
    if shared.options.taint && is_workload {
        let spec = &mut obj["spec"]["template"]["spec"];
        match spec.get_mut("tolerations").and_then(Value::as_array_mut) {
            Some(list) => list.push(toleration()),
            None => spec["tolerations"] = json!([toleration()]),
        }
    }
    obj
}

/// Create the manifests in order; a namespace a manifest names is created
/// first when missing.
pub(super) async fn apply(shared: &Shared) -> Result<(), WorldError> {
    let scenario = &shared.scenario;
    for (index, manifest) in scenario.manifests.iter().enumerate() {
        let t = target(&shared.client, scenario, index, manifest).await?;
        if let Some(ns) = &t.namespace {
            ensure_namespace(shared, ns).await?;
        }
        let obj: DynamicObject = serde_json::from_value(prepared(shared, manifest))
            .map_err(|e| manifest_err(scenario, index, &describe(manifest), e.to_string()))?;
        let api = api_for(&shared.client, &t);
        let pp = PostParams::default();
        match retry(|| api.create(&pp, &obj)).await {
            Ok(_) => {}
            Err(e) if status_code(&e) == Some(409) => {}
            Err(e) => {
                return Err(manifest_err(
                    scenario,
                    index,
                    &describe(manifest),
                    e.to_string(),
                ));
            }
        }
    }
    Ok(())
}

async fn ensure_namespace(shared: &Shared, ns: &str) -> Result<(), WorldError> {
    use k8s_openapi::api::core::v1::Namespace;
    let api: Api<Namespace> = Api::all(shared.client.clone());
    let obj: Namespace =
        serde_json::from_value(json!({"metadata": {"name": ns}})).map_err(|e| {
            WorldError::Manifest {
                scenario: shared.scenario.name.clone(),
                index: 0,
                what: format!("namespace {ns}"),
                message: e.to_string(),
            }
        })?;
    let pp = PostParams::default();
    match retry(|| api.create(&pp, &obj)).await {
        Ok(_) => Ok(()),
        Err(e) if status_code(&e) == Some(409) => Ok(()),
        Err(source) => Err(WorldError::Api {
            what: format!("cannot create namespace {ns}"),
            source,
        }),
    }
}

/// Delete the manifests, last first (dependents go by garbage collection).
pub(super) async fn remove(client: &kube::Client, scenario: &Scenario) -> Result<(), WorldError> {
    for (index, manifest) in scenario.manifests.iter().enumerate().rev() {
        let t = target(client, scenario, index, manifest).await?;
        let api = api_for(client, &t);
        let dp = DeleteParams::background();
        ok_if_gone(retry(|| api.delete(&t.name, &dp)).await).map_err(|source| WorldError::Api {
            what: format!("cannot delete {}", describe(manifest)),
            source,
        })?;
    }
    Ok(())
}
