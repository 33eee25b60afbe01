//! What `infera lint --cluster` lists: the workloads infera analyses, the
//! serving custom resources whose operators render them, and the objects
//! the rules judge them with (budgets, volume claims, DRA claims).
//!
//! Kinds every cluster serves are listed at a fixed version. The serving
//! CRDs and `resource.k8s.io` are found by discovery (`GET /apis`, then one
//! request per group the server has), at the version the server prefers: a
//! KAITO still on `v1alpha1` or a cluster on DRA `v1beta2` is read as it is
//! served, and a group the cluster does not serve has no objects to lose.

use infera_cluster::{ClusterError, Connection};
use infera_lint::engine::summary::InputError;
use infera_model::api::{INFERA_DEPLOYMENT, LEADER_WORKER_SET};
use infera_model::manifest::serving::ServingKind;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};

/// Objects of one list page at most; the rest is fetched with continue tokens.
const LIST_PAGE: u32 = 500;

/// The DRA group and the kinds of it the GPU accounting reads (IR009).
const DRA_GROUP: &str = "resource.k8s.io";
const DRA_KINDS: [&str; 2] = ["ResourceClaimTemplate", "ResourceClaim"];

/// The kinds listed at a fixed version: the workloads, and the
/// PodDisruptionBudgets and PersistentVolumeClaims the disruption rules
/// judge them with (IR013–IR015).
fn fixed_kinds() -> [ApiResource; 6] {
    use k8s_openapi::api::{apps, core, policy};
    [
        infera_cluster::api_resource(&INFERA_DEPLOYMENT),
        ApiResource::erase::<apps::v1::Deployment>(&()),
        ApiResource::erase::<apps::v1::StatefulSet>(&()),
        infera_cluster::api_resource(&LEADER_WORKER_SET),
        ApiResource::erase::<policy::v1::PodDisruptionBudget>(&()),
        ApiResource::erase::<core::v1::PersistentVolumeClaim>(&()),
    ]
}

/// The groups found by discovery: each serving kind's, and DRA's.
fn discovered_groups() -> Vec<&'static str> {
    let mut groups = ServingKind::groups();
    groups.push(DRA_GROUP);
    groups
}

/// The serving and DRA kinds this cluster serves, at its preferred version.
async fn discovered_kinds(connection: &Connection) -> Result<Vec<ApiResource>, kube::Error> {
    let groups = discovered_groups();
    let discovery = kube::Discovery::new(connection.client.clone())
        .filter(&groups)
        .run()
        .await?;
    let wanted = ServingKind::ALL
        .iter()
        .map(|k| (k.group(), k.name()))
        .chain(DRA_KINDS.iter().map(|k| (DRA_GROUP, *k)));
    Ok(wanted
        .filter_map(|(group, kind)| discovery.get(group)?.recommended_kind(kind))
        .map(|(resource, _)| resource)
        .collect())
}

/// What `infera lint --cluster` lists.
pub struct LiveObjects {
    /// The objects to lint (wire form, `apiVersion`/`kind` set).
    pub objects: Vec<serde_json::Value>,
    /// Kinds that could not be listed.
    pub errors: Vec<InputError>,
    /// The Deployments the operator rendered for the InferaDeployments.
    pub rendered: Vec<k8s_openapi::api::apps::v1::Deployment>,
    /// The kinds (plural) that could not be listed, or not wholly.
    pub unlisted: Vec<String>,
}

/// A refusal that leaves the other kinds listable becomes an input error
/// (`what` names what was not linted); an unreachable server or rejected
/// credentials end the command.
fn refused(err: ClusterError, what: &str, out: &mut LiveObjects) -> Result<(), ClusterError> {
    match err {
        ClusterError::Unreachable { .. } | ClusterError::Unauthorized { .. } => Err(err),
        other => {
            out.errors.push(InputError {
                file: "cluster".to_string(),
                line: None,
                column: None,
                message: format!("{other}; {what} were not linted"),
            });
            Ok(())
        }
    }
}

/// List the analysed kinds from a cluster (`namespace` `None` = every
/// namespace), as wire-form JSON objects with `apiVersion`/`kind` set.
///
/// Kinds the cluster does not serve (CRD not installed: 404, or absent
/// from discovery) are skipped. A kind the caller may not list becomes an
/// input error, and the other kinds are still linted. An unreachable
/// server or rejected credentials end the command. Workloads owned by an
/// InferaDeployment are not linted (the InferaDeployment is, rendered as
/// the generation they show, so they would only repeat its findings); its
/// Deployments are kept in [`LiveObjects::rendered`] to read that
/// generation off.
pub async fn list_live_objects(
    connection: &Connection,
    namespace: Option<&str>,
) -> Result<LiveObjects, ClusterError> {
    let mut out = LiveObjects {
        objects: Vec::new(),
        errors: Vec::new(),
        rendered: Vec::new(),
        unlisted: Vec::new(),
    };
    let mut kinds = fixed_kinds().to_vec();
    match discovered_kinds(connection).await {
        Ok(found) => kinds.extend(found),
        Err(e) => {
            let err = ClusterError::from_kube(&e, &connection.url, "get", "/apis", None);
            let what = format!("the serving custom resources ({})", serving_names());
            refused(err, &what, &mut out)?;
            out.unlisted.push("serving custom resources".to_string());
        }
    }
    for resource in kinds {
        list_kind(connection, namespace, &resource, &mut out).await?;
    }
    Ok(out)
}

/// `VLLMRuntime, InferenceService, …`.
fn serving_names() -> String {
    ServingKind::ALL.map(ServingKind::name).join(", ")
}

/// Every page of one kind into `out`.
async fn list_kind(
    connection: &Connection,
    namespace: Option<&str>,
    resource: &ApiResource,
    out: &mut LiveObjects,
) -> Result<(), ClusterError> {
    let plural = resource.plural.as_str();
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(connection.client.clone(), ns, resource),
        None => Api::all_with(connection.client.clone(), resource),
    };
    let mut params = ListParams::default().limit(LIST_PAGE);
    loop {
        let page = match api.list(&params).await {
            Ok(page) => page,
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
            Err(e) => {
                let err = ClusterError::from_kube(&e, &connection.url, "list", plural, namespace);
                refused(err, plural, out)?;
                out.unlisted.push(plural.to_string());
                return Ok(());
            }
        };
        for item in page.items {
            keep(item, resource, out);
        }
        match page.metadata.continue_.as_deref() {
            Some(token) if !token.is_empty() => params = params.continue_token(token),
            _ => return Ok(()),
        }
    }
}

/// One listed object into `out`: linted, or kept as what an
/// InferaDeployment rendered.
fn keep(item: DynamicObject, resource: &ApiResource, out: &mut LiveObjects) {
    let owned_by_infera = item
        .metadata
        .owner_references
        .as_deref()
        .unwrap_or_default()
        .iter()
        .any(|o| o.kind == INFERA_DEPLOYMENT.kind);
    if owned_by_infera {
        if resource.kind == "Deployment"
            && let Ok(d) = serde_json::to_value(&item).and_then(serde_json::from_value)
        {
            out.rendered.push(d);
        }
        return;
    }
    let Ok(mut value) = serde_json::to_value(&item) else {
        return;
    };
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), resource.api_version.clone().into());
        map.insert("kind".into(), resource.kind.clone().into());
        if let Some(meta) = map.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            meta.remove("managedFields");
        }
    }
    out.objects.push(value);
}
