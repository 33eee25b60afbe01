//! The Kubernetes requests of a rollout: the target object (get, patch with
//! conflict retry), retries through transient failures, the `/ready` check
//! through the pod proxy, and the FailedScheduling event of a stalled pod.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Event as K8sEvent;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::Value;

use super::options::RolloutError;
use super::target::{Target, TargetKind};
use infera_cluster::{Connection, inferadeployment_resource};
use infera_model::api::INFERA_DEPLOYMENT;

pub(crate) static LIST: std::sync::LazyLock<ListParams> =
    std::sync::LazyLock::new(ListParams::default);

pub(crate) fn deployment_resource() -> ApiResource {
    ApiResource::erase::<Deployment>(&())
}

/// Retry a request through transient failures (5xx, 429, a restarting API
/// server): the faults a rollout must ride out.
pub(crate) async fn retrying<T, F, Fut>(what: &str, mut f: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut delay = Duration::from_millis(50);
    let mut attempt = 0;
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) if attempt < 12 && transient(&e) => {
                attempt += 1;
                tracing_note(what, &e, attempt, delay);
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
            }
            Err(e) => return Err(e),
        }
    }
}

fn tracing_note(what: &str, e: &kube::Error, attempt: u32, delay: Duration) {
    tracing::info!(
        target: infera_cluster::trace::target::ROLLOUT_API,
        attempt,
        backoff_ms = delay.as_millis() as u64,
        "retrying {what} after a transient error: {}",
        infera_cluster::redact::kube_error(e)
    );
}

fn transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s.code == 429 || s.code >= 500,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// The rolled object (InferaDeployment or Deployment) through the API.
pub(crate) struct TargetApi<'a> {
    pub conn: &'a Connection,
    pub target: &'a Target,
    api: Api<DynamicObject>,
}

impl<'a> TargetApi<'a> {
    pub fn new(conn: &'a Connection, target: &'a Target) -> Self {
        let resource = match target.kind {
            TargetKind::InferaDeployment => inferadeployment_resource(),
            TargetKind::Deployment => deployment_resource(),
        };
        TargetApi {
            conn,
            target,
            api: Api::namespaced_with(conn.client.clone(), &conn.namespace, &resource),
        }
    }

    pub fn resource(&self) -> &'static str {
        match self.target.kind {
            TargetKind::InferaDeployment => INFERA_DEPLOYMENT.qualified_plural,
            TargetKind::Deployment => "deployments.apps",
        }
    }

    pub async fn get(&self) -> Result<Value, RolloutError> {
        let obj = retrying("get", || self.api.get(&self.target.name))
            .await
            .map_err(|e| self.conn.error(&e, "get", self.resource()))?;
        self.encode(&obj)
    }

    fn encode(&self, obj: &DynamicObject) -> Result<Value, RolloutError> {
        serde_json::to_value(obj).map_err(|source| RolloutError::Encode {
            what: self.target.to_string(),
            source,
        })
    }

    async fn patch(&self, patch: &Value) -> Result<DynamicObject, kube::Error> {
        let params = PatchParams {
            field_manager: Some(super::gitops::FIELD_MANAGER.to_string()),
            ..PatchParams::default()
        };
        let merge = Patch::Merge(patch);
        let obj = retrying("patch", || {
            self.api.patch(&self.target.name, &params, &merge)
        })
        .await?;
        Ok(obj)
    }

    /// Re-read and re-build on 409 (a concurrent writer, e.g. the operator).
    pub async fn patch_with<F>(&self, mut build: F) -> Result<Value, RolloutError>
    where
        F: FnMut(&Value) -> Result<Value, RolloutError>,
    {
        let mut attempts = 0;
        loop {
            let live = self.get().await?;
            let patch = build(&live)?;
            match self.patch(&patch).await {
                Ok(obj) => return self.encode(&obj),
                Err(kube::Error::Api(s)) if s.code == 409 && attempts < 10 => attempts += 1,
                Err(e) => return Err(self.conn.error(&e, "patch", self.resource()).into()),
            }
        }
    }
}

pub(crate) fn spawn_proxy_probe(
    client: kube::Client,
    ns: String,
    leg: String,
    pod: String,
    port: u16,
    tx: tokio::sync::mpsc::UnboundedSender<(String, String, Result<(), String>)>,
) {
    tokio::spawn(async move {
        let path = format!("/api/v1/namespaces/{ns}/pods/{pod}:{port}/proxy/ready");
        let result = match http::Request::get(path).body(Vec::new()) {
            Ok(request) => {
                match tokio::time::timeout(Duration::from_secs(10), client.request_text(request))
                    .await
                {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(kube::Error::Api(s))) => Err(format!(
                        "HTTP {} {}",
                        s.code,
                        s.message.lines().next().unwrap_or("")
                    )),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err("no answer within 10 s".into()),
                }
            }
            Err(e) => Err(e.to_string()),
        };
        let _ = tx.send((leg, pod, result));
    });
}

/// The latest FailedScheduling event message of `pod` (one list request, at
/// stall time only).
pub(crate) async fn failed_scheduling_event(
    client: &kube::Client,
    ns: &str,
    pod: &str,
) -> Option<String> {
    let api: Api<K8sEvent> = Api::namespaced(client.clone(), ns);
    let list = retrying("list events", || api.list(&LIST)).await.ok()?;
    list.items
        .into_iter()
        .filter(|e| {
            e.involved_object.name.as_deref() == Some(pod)
                && e.reason.as_deref() == Some("FailedScheduling")
        })
        .filter_map(|e| e.message)
        .next_back()
        .map(|m| format!("FailedScheduling: {m}"))
}
