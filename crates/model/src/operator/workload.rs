//! The one render entry point, [`render`]: every service of an
//! InferaDeployment as the operator of a generation renders it, the pod
//! and its facts (strategy, readiness port, main container), and on demand
//! ([`RenderedWorkload::object`]) the Deployment or LeaderWorkerSet the
//! operator creates. The linter reads the pods only; `infera render` and the
//! simulator's operator print or create the objects.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use serde::Serialize;

use super::discovery::{discovery_account, k8s_discovery};
use super::flat::flat_pod;
use super::gaie::{GAIE_FRONTEND_LABEL, gaie_frontend, gaie_spec};
use super::inject::MainSettings;
use super::strategy::{Strategy, StrategyFacts, predict_strategy};
use super::{
    Component, InferaDeployment, IntOrText, Role, ServiceSpec, WorkloadKind, operator_labels,
    service_port,
};
use crate::api::INFERA_DEPLOYMENT;
use crate::generation::Generation;
use crate::lws::LeaderWorkerSet;
use crate::pod::main_container_index;
use crate::worker::ReadinessPort;

/// One workload the operator renders for one service.
#[derive(Debug, Clone, Serialize)]
pub struct RenderedWorkload {
    pub service: String,
    pub role: Role,
    pub component: Component,
    pub kind: WorkloadKind,
    /// The workload's metadata: `<idep>-<service>`, the operator's labels
    /// (also its selector), owned by the InferaDeployment when it has a uid.
    pub metadata: ObjectMeta,
    /// The readiness port of the main container (before injection: what the
    /// operator resolves).
    pub readiness_port: ReadinessPort,
    pub probe_injected: bool,
    pub strategy: Strategy,
    /// Why this strategy, in one sentence.
    pub why: String,
    /// Name of the main container.
    pub main_container: String,
    /// `replicas` when known (None: a placeholder; the object carries 1).
    pub replicas: Option<i32>,
    /// `numberOfNodes` when known.
    pub number_of_nodes: Option<i32>,
    /// True when the service uses the flat fields (no extraPodSpec).
    pub flat: bool,
    /// The rendered pod template spec (also inside [`RenderedWorkload::object`]).
    pub pod: PodSpec,
    /// The rendered pod template labels.
    pub pod_labels: BTreeMap<String, String>,
}

/// Render every service of a typed InferaDeployment as the operator of
/// `generation` does, in service-name order ([`super::typed`] reads one
/// from its wire form).
pub fn render(idep: &InferaDeployment, generation: Generation) -> Vec<RenderedWorkload> {
    idep.spec
        .services
        .iter()
        .map(|(name, svc)| {
            let own = svc.extra_pod_spec.clone();
            render_service(idep, (name, svc), own, generation)
        })
        .collect()
}

/// [`render`] for a caller done with the services' `extraPodSpec`s: each
/// moves into its rendered pod (left `None` in `idep`) instead of being
/// copied. Lint renders every InferaDeployment it reads, and copying whole
/// k8s-openapi `PodSpec`s only to drop the originals was a tenth of its
/// allocations (`docs/benchmarks.md`).
pub fn render_taking_pods(
    idep: &mut InferaDeployment,
    generation: Generation,
) -> Vec<RenderedWorkload> {
    let pods: Vec<Option<PodSpec>> = idep
        .spec
        .services
        .values_mut()
        .map(|svc| svc.extra_pod_spec.take())
        .collect();
    let idep = &*idep;
    idep.spec
        .services
        .iter()
        .zip(pods)
        .map(|(service, own)| render_service(idep, service, own, generation))
        .collect()
}

/// Pod template labels: `podLabels`, then the operator's keys (they win).
pub fn pod_labels(
    idep_name: &str,
    service_name: &str,
    svc: &ServiceSpec,
) -> BTreeMap<String, String> {
    let mut labels = svc.pod_labels.clone().unwrap_or_default();
    labels.extend(operator_labels(idep_name, service_name));
    labels
}

/// The rendered object's metadata: `<idep>-<service>`, the operator's
/// labels, owned by the InferaDeployment when it has a uid.
fn object_metadata(
    idep: &InferaDeployment,
    idep_name: &str,
    name: &str,
    namespace: String,
) -> ObjectMeta {
    let owner = idep.metadata.uid.as_ref().map(|uid| {
        vec![OwnerReference {
            api_version: INFERA_DEPLOYMENT.api_version.to_string(),
            kind: INFERA_DEPLOYMENT.kind.to_string(),
            name: idep_name.to_string(),
            uid: uid.clone(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]
    });
    ObjectMeta {
        name: Some(format!("{idep_name}-{name}")),
        namespace: Some(namespace),
        labels: Some(operator_labels(idep_name, name)),
        owner_references: owner,
        ..ObjectMeta::default()
    }
}

/// An apps/v1 Deployment rolling with `strategy`'s surge/unavailable.
fn deployment_object(
    metadata: ObjectMeta,
    template: PodTemplateSpec,
    selector: BTreeMap<String, String>,
    replicas: i32,
    strategy: Strategy,
) -> serde_json::Value {
    let (surge, unavailable) = strategy.rolling_update();
    let d = Deployment {
        metadata,
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(selector),
                ..LabelSelector::default()
            },
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".to_string()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(surge),
                    max_unavailable: Some(unavailable),
                }),
            }),
            template,
            ..DeploymentSpec::default()
        }),
        status: None,
    };
    let mut v = serde_json::to_value(&d).unwrap_or(serde_json::Value::Null);
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), "apps/v1".into());
        m.insert("kind".into(), "Deployment".into());
    }
    v
}

/// A LeaderWorkerSet of `number_of_nodes`-pod groups (§3: old-group-first),
/// its defaults written out.
fn lws_object(
    metadata: ObjectMeta,
    template: PodTemplateSpec,
    replicas: i32,
    number_of_nodes: i32,
) -> serde_json::Value {
    let lws = LeaderWorkerSet::with_defaults(metadata, template, replicas, number_of_nodes);
    serde_json::to_value(&lws).unwrap_or(serde_json::Value::Null)
}

/// One service; `extra_pod_spec` is the service's own (the caller copies or
/// moves it), not read from `svc`.
fn render_service(
    idep: &InferaDeployment,
    (name, svc): (&String, &ServiceSpec),
    extra_pod_spec: Option<PodSpec>,
    generation: Generation,
) -> RenderedWorkload {
    let idep_name = idep.metadata.name.clone().unwrap_or_default();
    let namespace = idep
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_string());
    let component = Component::parse(svc.component_type.as_deref());
    let role = Role::parse(svc.role.as_deref());
    let replicas = count_or_one(svc.replicas.as_ref());
    let number_of_nodes = count_or_one(svc.number_of_nodes.as_ref());
    let multinode = number_of_nodes.is_some_and(|n| n > 1);
    let kind = if multinode {
        WorkloadKind::LeaderWorkerSet
    } else {
        WorkloadKind::Deployment
    };
    let flat = extra_pod_spec.is_none();
    let mut pod = match extra_pod_spec {
        Some(p) => p,
        None => flat_pod(idep, svc, component, role),
    };
    if pod.containers.is_empty() {
        // A PodSpec without containers is invalid; give the operator's
        // container so the rendered object stays a valid Deployment.
        pod.containers = flat_pod(idep, svc, component, role).containers;
    }
    let main_idx = main_container_index(&pod).min(pod.containers.len().saturating_sub(1));
    let port = service_port(svc, component);

    let main = MainSettings {
        idep,
        svc,
        flat,
        component,
        multinode,
        port,
        generation,
    };
    let (main_name, readiness, probe_injected) = main.apply(&mut pod, main_idx);

    if k8s_discovery(idep)
        && pod
            .service_account_name
            .as_deref()
            .is_none_or(str::is_empty)
    {
        pod.service_account_name = Some(discovery_account(&idep_name));
    }
    let gaie = gaie_spec(idep).filter(|_| component == Component::Worker);
    if let Some(gaie) = gaie {
        pod.containers.push(gaie_frontend(idep, gaie));
    }
    let facts = StrategyFacts {
        component,
        multinode,
        generation,
        probe_injected,
    };
    let (strategy, why) = predict_strategy(&facts, svc, &pod, &readiness);
    let mut labels = pod_labels(&idep_name, name, svc);
    if gaie.is_some() {
        labels.insert(GAIE_FRONTEND_LABEL.to_string(), "true".to_string());
    }
    RenderedWorkload {
        service: name.to_string(),
        role,
        component,
        kind,
        metadata: object_metadata(idep, &idep_name, name, namespace),
        readiness_port: readiness,
        probe_injected,
        strategy,
        why,
        main_container: main_name,
        replicas,
        number_of_nodes,
        flat,
        pod,
        pod_labels: labels,
    }
}

/// A count field of a service (`replicas`, `numberOfNodes`): 1 when
/// absent, `None` when it is not a whole number the API would take.
fn count_or_one(v: Option<&IntOrText>) -> Option<i32> {
    match v {
        None => Some(1),
        Some(n) => n.as_i64().and_then(|n| i32::try_from(n).ok()),
    }
}

impl RenderedWorkload {
    /// The complete apps/v1 Deployment or LeaderWorkerSet, as the operator
    /// creates it (selected by the operator's labels, its metadata's).
    pub fn object(&self) -> serde_json::Value {
        let selector = self.metadata.labels.clone().unwrap_or_default();
        let template = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(self.pod_labels.clone()),
                ..ObjectMeta::default()
            }),
            spec: Some(self.pod.clone()),
        };
        let metadata = self.metadata.clone();
        match self.kind {
            WorkloadKind::Deployment => deployment_object(
                metadata,
                template,
                selector,
                self.replicas.unwrap_or(1),
                self.strategy,
            ),
            WorkloadKind::LeaderWorkerSet => lws_object(
                metadata,
                template,
                self.replicas.unwrap_or(1),
                self.number_of_nodes.unwrap_or(2),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::discovery::{LABEL_SELECTOR_ENV, NATS_SERVER_ENV, discovery_objects};
    use crate::operator::flat::BOOT_VOLUME;
    use crate::operator::gaie::{GAIE_FRONTEND_CONTAINER, GAIE_READY_PATH};
    use crate::operator::typed;
    use crate::pod::DRAIN_TIMEOUT_ENV;
    use crate::worker::{LABEL_MANAGED_BY, LABEL_SERVICE, MANAGED_BY_VALUE, READINESS_PORT_ENV};
    use k8s_openapi::api::core::v1::Container;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use serde_json::json;

    /// [`render`] of a wire-form InferaDeployment, as the latest operator.
    fn render_wire(
        idep: &serde_json::Value,
    ) -> Result<Vec<RenderedWorkload>, crate::operator::OperatorError> {
        render_wire_as(idep, Generation::LATEST)
    }

    /// [`render`] of a wire-form InferaDeployment ([`typed`] first).
    fn render_wire_as(
        idep: &serde_json::Value,
        generation: Generation,
    ) -> Result<Vec<RenderedWorkload>, crate::operator::OperatorError> {
        Ok(render(&typed(idep.clone())?, generation))
    }

    fn idep(services: serde_json::Value) -> serde_json::Value {
        json!({"apiVersion": INFERA_DEPLOYMENT.api_version, "kind": INFERA_DEPLOYMENT.kind,
               "metadata": {"name": "demo", "namespace": "ns"},
               "spec": {"backendFramework": "sglang", "image": "img:1", "services": services}})
    }

    #[test]
    fn flat_worker_gets_probe_and_surge_first() {
        let ws = render_wire(&idep(json!({
            "prefill": {"componentType": "worker", "role": "prefill",
                        "resources": {"gpu": 2, "memory": "64Gi", "sharedMemory": "32Gi"},
                        "args": ["--tp-size", "2"]}
        })))
        .unwrap();
        let w = &ws[0];
        assert_eq!(w.strategy, Strategy::SurgeFirst);
        assert!(w.probe_injected);
        let o = &w.object();
        assert_eq!(o["kind"], "Deployment");
        assert_eq!(o["apiVersion"], "apps/v1");
        assert_eq!(o["metadata"]["name"], "demo-prefill");
        assert_eq!(o["metadata"]["namespace"], "ns");
        assert_eq!(o["spec"]["replicas"], 1);
        assert_eq!(o["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 1);
        assert_eq!(o["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 0);
        let sel = o["spec"]["selector"]["matchLabels"].as_object().unwrap();
        let tl = &o["spec"]["template"]["metadata"]["labels"];
        for (k, v) in sel {
            assert_eq!(&tl[k], v, "selector must match template labels");
        }
        let c = &o["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["name"], "infera");
        assert_eq!(
            c["command"],
            json!([
                "python3",
                "-m",
                "infera.engine.sglang",
                "--host",
                "0.0.0.0",
                "--port",
                "30000",
                "--discovery-backend",
                "kubernetes",
                "--disaggregation-mode",
                "prefill",
                "--kv-event-transport",
                "nats",
                "--nats-server",
                "nats://demo-nats:4222",
                "--tp-size",
                "2"
            ])
        );
        assert!(c.get("args").is_none(), "the operator sets no args");
        assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/ready");
        assert_eq!(c["readinessProbe"]["httpGet"]["port"], 30090);
        assert_eq!(c["readinessProbe"]["timeoutSeconds"], 10);
        assert_eq!(c["readinessProbe"]["failureThreshold"], 6);
        assert_eq!(
            c["lifecycle"]["preStop"]["exec"]["command"],
            json!(["/bin/sh", "-c", "sleep 15"])
        );
        assert_eq!(c["ports"], json!([{"containerPort": 30000}]));
        assert_eq!(
            o["spec"]["selector"]["matchLabels"][LABEL_MANAGED_BY],
            MANAGED_BY_VALUE
        );
        assert_eq!(
            o["spec"]["template"]["spec"]["serviceAccountName"],
            "demo-disc"
        );
        assert_eq!(c["resources"]["requests"]["amd.com/gpu"], "2");
        assert_eq!(c["resources"]["limits"]["amd.com/gpu"], "2");
        assert!(
            c["env"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["name"] == READINESS_PORT_ENV && e["value"] == "30090")
        );
        assert_eq!(
            o["spec"]["template"]["spec"]["terminationGracePeriodSeconds"],
            120
        );
        // Typed round trip: a valid apps/v1 Deployment.
        let d: Deployment = serde_json::from_value(o.clone()).unwrap();
        assert_eq!(d.spec.unwrap().replicas, Some(1));
    }

    /// Before #176 (the published operator's `buildDeployment` and
    /// `injectWorkerRolloutDefaults`): every worker surge-free, `/health`
    /// on the engine port, no readiness-port env; the rest as in #176.
    #[test]
    fn pre_176_renders_surge_free_with_health_probe() {
        let spec = idep(json!({
            "decode": {"componentType": "worker", "role": "decode", "port": 31000},
            "lws": {"componentType": "worker", "numberOfNodes": 2},
            "own": {"componentType": "worker", "extraPodSpec": {"containers": [
                {"name": "main", "image": "x", "command": ["python3", "-m", "infera.engine.vllm"],
                 "ports": [{"containerPort": 9, "name": "metrics"}],
                 "readinessProbe": {"httpGet": {"path": "/ready", "port": 30090}}}]}},
            "router": {"componentType": "server"}
        }));
        let ws = render_wire_as(&spec, Generation::SurgeFree).unwrap();
        let by = |n: &str| ws.iter().find(|w| w.service == n).unwrap();
        let decode = by("decode");
        assert_eq!(decode.strategy, Strategy::OldPodFirst);
        assert!(decode.probe_injected);
        let o = &decode.object();
        assert_eq!(o["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 0);
        assert_eq!(o["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 1);
        let c = &o["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(
            c["readinessProbe"]["httpGet"],
            json!({"path": "/health", "port": 31000})
        );
        assert_eq!(c["readinessProbe"]["periodSeconds"], 15);
        assert!(
            !c["env"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["name"] == READINESS_PORT_ENV),
            "no readiness-port env before #176"
        );
        let own = by("own");
        assert_eq!(own.strategy, Strategy::OldPodFirst, "even probed /ready");
        assert!(!own.probe_injected);
        let own_object = own.object();
        let main = &own_object["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(
            main["ports"],
            json!([{"containerPort": 9, "name": "metrics"}, {"containerPort": 30000}])
        );
        let env_names: Vec<_> = main["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].clone())
            .collect();
        assert_eq!(
            env_names,
            json!(["POD_NAME", "POD_NAMESPACE", "POD_IP"])
                .as_array()
                .unwrap()
                .clone()
        );
        let lws = by("lws");
        assert_eq!(lws.strategy, Strategy::Lws);
        assert!(!lws.probe_injected);
        let router = by("router");
        assert_eq!(router.strategy, Strategy::ServerDefault);
        let router_object = router.object();
        let env = router_object["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array()
            .unwrap()
            .clone();
        assert!(
            env.iter().any(|e| e["name"] == LABEL_SELECTOR_ENV
                && e["value"] == "infera.amd.com/deployment=demo")
        );
        // #176 renders the same fixture surge-first on /ready.
        let latest = render_wire(&spec).unwrap();
        let decode = latest.iter().find(|w| w.service == "decode").unwrap();
        assert_eq!(decode.strategy, Strategy::SurgeFirst);
        let typed: InferaDeployment = serde_json::from_value(spec).unwrap();
        let extra = discovery_objects(&typed);
        let kinds: Vec<_> = extra.iter().map(|o| o["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["ServiceAccount", "Role", "RoleBinding"]);
        assert!(extra.iter().all(|o| o["metadata"]["name"] == "demo-disc"));
        assert_eq!(extra[2]["subjects"][0]["name"], "demo-disc");
    }

    #[test]
    fn skip_probe_is_old_pod_first() {
        let ws = render_wire(&idep(json!({
            "decode": {"componentType": "worker", "role": "decode", "skipReadinessProbe": true}
        })))
        .unwrap();
        assert_eq!(ws[0].strategy, Strategy::OldPodFirst);
        assert!(!ws[0].probe_injected);
        assert_eq!(
            ws[0].object()["spec"]["strategy"]["rollingUpdate"]["maxSurge"],
            0
        );
        assert_eq!(
            ws[0].object()["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"],
            1
        );
    }

    #[test]
    fn unknowable_port_and_own_probe_are_old_pod_first() {
        let ws = render_wire(&idep(json!({
            "a": {"componentType": "worker", "env": [{"name": READINESS_PORT_ENV, "value": " 30090"}]},
            "b": {"componentType": "worker", "extraPodSpec": {"containers": [
                {"name": "main", "image": "x", "command": ["python3", "-m", "infera.engine.vllm"],
                 "readinessProbe": {"httpGet": {"path": "/health", "port": 30000}}}]}},
            "c": {"componentType": "worker", "extraPodSpec": {"containers": [
                {"name": "sidecar", "image": "y"},
                {"name": "main", "image": "x", "env": [{"name": READINESS_PORT_ENV, "value": "+30091"}],
                 "readinessProbe": {"httpGet": {"path": "/ready", "port": 30091}}}]}}
        })))
        .unwrap();
        assert_eq!(ws[0].strategy, Strategy::OldPodFirst);
        assert!(!ws[0].probe_injected);
        assert_eq!(ws[1].strategy, Strategy::OldPodFirst);
        assert_eq!(ws[1].main_container, "main");
        assert_eq!(ws[2].strategy, Strategy::SurgeFirst);
        assert!(!ws[2].probe_injected);
        assert_eq!(ws[2].main_container, "main");
        assert_eq!(ws[2].readiness_port.known(), Some(30091));
    }

    #[test]
    fn server_default_and_multinode_lws() {
        let ws = render_wire(&idep(json!({
            "server": {"componentType": "server", "replicas": 2},
            "worker": {"componentType": "worker", "numberOfNodes": 2}
        })))
        .unwrap();
        let server = ws.iter().find(|w| w.service == "server").unwrap();
        assert_eq!(server.strategy, Strategy::ServerDefault);
        assert_eq!(
            server.object()["spec"]["strategy"]["rollingUpdate"]["maxSurge"],
            "25%"
        );
        assert_eq!(server.object()["spec"]["replicas"], 2);
        let worker = ws.iter().find(|w| w.service == "worker").unwrap();
        assert_eq!(worker.kind, WorkloadKind::LeaderWorkerSet);
        assert_eq!(worker.strategy, Strategy::Lws);
        assert!(!worker.probe_injected);
        assert_eq!(worker.object()["kind"], "LeaderWorkerSet");
        assert_eq!(worker.object()["spec"]["leaderWorkerTemplate"]["size"], 2);
        assert!(
            worker.object()["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"]
                [0]
            .get("readinessProbe")
            .is_none()
        );
    }

    /// The pod facts outside PR #176, alike in both generations and checked
    /// against the published operator by the lab's render differential:
    /// the whole entrypoint in `command`, `NATS_SERVER` after `envs`, the
    /// `/boot` mount, the GAIE frontend sidecar and its pod label.
    #[test]
    fn entrypoint_env_boot_and_gaie_as_the_operator_writes_them() {
        for case in &fidelity_cases() {
            for generation in [Generation::SurgeFree, Generation::LATEST] {
                check_fidelity(case, generation);
            }
        }
    }

    struct FidelityCase {
        name: &'static str,
        spec: serde_json::Value,
        service: &'static str,
        command_has: &'static [&'static str],
        command_lacks: &'static [&'static str],
        env_names: &'static [&'static str],
        mounts: &'static [&'static str],
        sidecar: bool,
    }

    /// A flat server's env with NATS and Kubernetes discovery, in order.
    const SERVER_ENV: &[&str] = &[
        NATS_SERVER_ENV,
        "POD_NAME",
        "POD_NAMESPACE",
        "POD_IP",
        LABEL_SELECTOR_ENV,
    ];

    fn fidelity_cases() -> Vec<FidelityCase> {
        let worker = json!({"componentType": "worker", "args": ["--tp-size", "2"],
                            "resources": {"sharedMemory": "1Gi"}});
        let extra = json!({"componentType": "worker",
            "extraPodSpec": {"containers": [{"name": "main", "image": "x",
                "command": ["python3", "-m", "infera.engine.sglang"]}]}});
        vec![
            FidelityCase {
                name: "default NATS: flags after discovery, env after envs",
                spec: json!({"envs": [{"name": "A", "value": "1"}],
                             "services": {"w": worker.clone()}}),
                service: "w",
                command_has: &["--discovery-backend kubernetes --kv-event-transport nats \
                                --nats-server nats://demo-nats:4222 --tp-size 2"],
                command_lacks: &["--k8s-label-selector", "--router-mode"],
                env_names: &["A", NATS_SERVER_ENV, "POD_NAME", "POD_NAMESPACE", "POD_IP"],
                mounts: &["dshm", BOOT_VOLUME],
                sidecar: false,
            },
            FidelityCase {
                name: "nats given without deploy: no broker, no flags",
                spec: json!({"nats": {"storageSize": "1Gi"}, "services": {"w": worker.clone()}}),
                service: "w",
                command_has: &["--discovery-backend kubernetes --tp-size 2"],
                command_lacks: &["--kv-event-transport", NATS_SERVER_ENV],
                env_names: &["POD_NAME", "POD_NAMESPACE", "POD_IP"],
                mounts: &["dshm", BOOT_VOLUME],
                sidecar: false,
            },
            FidelityCase {
                name: "server: selector flag after the discovery backend",
                spec: json!({"services": {"s": {"componentType": "server"}}}),
                service: "s",
                command_has: &["python3 -m infera.server --host 0.0.0.0 --port 8000 \
                    --discovery-backend kubernetes --k8s-label-selector \
                    infera.amd.com/deployment=demo --kv-event-transport nats"],
                command_lacks: &["--disaggregation-mode"],
                env_names: SERVER_ENV,
                mounts: &[BOOT_VOLUME],
                sidecar: false,
            },
            FidelityCase {
                name: "GAIE flat worker: sidecar and label",
                spec: json!({"gaie": {"enabled": true, "tokenizerPath": "tok"},
                             "services": {"w": worker.clone()}}),
                service: "w",
                command_has: &["--kv-event-transport nats"],
                command_lacks: &["--router-mode"],
                env_names: &[NATS_SERVER_ENV, "POD_NAME", "POD_NAMESPACE", "POD_IP"],
                mounts: &["dshm", BOOT_VOLUME],
                sidecar: true,
            },
            FidelityCase {
                name: "GAIE extraPodSpec worker: sidecar, template untouched otherwise",
                spec: json!({"gaie": {"enabled": true, "tokenizerPath": "tok"},
                             "services": {"w": extra}}),
                service: "w",
                command_has: &["python3 -m infera.engine.sglang"],
                command_lacks: &["--nats-server", "--discovery-backend"],
                env_names: &["POD_NAME", "POD_NAMESPACE", "POD_IP"],
                mounts: &[],
                sidecar: true,
            },
            FidelityCase {
                name: "GAIE server: no sidecar",
                spec: json!({"gaie": {"enabled": true, "tokenizerPath": "tok"},
                             "services": {"s": {"componentType": "server"}}}),
                service: "s",
                command_has: &["--k8s-label-selector"],
                command_lacks: &["--router-mode"],
                env_names: SERVER_ENV,
                mounts: &[BOOT_VOLUME],
                sidecar: false,
            },
        ]
    }

    fn check_fidelity(case: &FidelityCase, generation: Generation) {
        let mut doc = idep(json!({}));
        let spec = doc["spec"].as_object_mut().unwrap();
        for (k, v) in case.spec.as_object().unwrap() {
            spec.insert(k.clone(), v.clone());
        }
        let ws = render_wire_as(&doc, generation).unwrap();
        let w = ws.iter().find(|w| w.service == case.service).unwrap();
        let at = format!("{} ({generation:?})", case.name);
        let main = &w.pod.containers[main_container_index(&w.pod)];
        assert!(main.args.is_none(), "{at}: no args");
        let command = main.command.clone().unwrap_or_default().join(" ");
        for want in case.command_has {
            let want = want.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(command.contains(&want), "{at}: {command:?} lacks {want:?}");
        }
        for not in case.command_lacks {
            assert!(!command.contains(not), "{at}: {command:?} has {not:?}");
        }
        let names: Vec<&str> = main
            .env
            .iter()
            .flatten()
            .map(|e| e.name.as_str())
            .filter(|n| *n != READINESS_PORT_ENV)
            .collect();
        assert_eq!(names, case.env_names, "{at}: env order");
        let mounts: Vec<&str> = main
            .volume_mounts
            .iter()
            .flatten()
            .map(|m| m.name.as_str())
            .collect();
        assert_eq!(mounts, case.mounts, "{at}: mounts");
        let sidecar = w
            .pod
            .containers
            .iter()
            .find(|c| c.name == GAIE_FRONTEND_CONTAINER);
        assert_eq!(sidecar.is_some(), case.sidecar, "{at}: sidecar");
        assert_eq!(
            w.pod_labels.get(GAIE_FRONTEND_LABEL).map(String::as_str),
            case.sidecar.then_some("true"),
            "{at}: label"
        );
        let object = w.object();
        let tmpl = &object["spec"]["template"];
        assert_eq!(
            tmpl["metadata"]["labels"][GAIE_FRONTEND_LABEL].as_str(),
            case.sidecar.then_some("true"),
            "{at}: object label"
        );
        if let Some(s) = sidecar {
            check_gaie_sidecar(s, &at);
        }
        if case.mounts.contains(&BOOT_VOLUME) {
            check_boot(&w.pod, main, &at);
        }
    }

    fn check_gaie_sidecar(s: &Container, at: &str) {
        assert_eq!(
            s.command.clone().unwrap().join(" "),
            "python3 -m infera.server --router-mode direct --host 0.0.0.0 \
     --port 8000 --router-tokenizer-path tok --discovery-backend kubernetes \
     --k8s-label-selector infera.amd.com/deployment=demo \
     --kv-event-transport nats --nats-server nats://demo-nats:4222 \
     --request-transport nats",
            "{at}: sidecar command"
        );
        let env: Vec<&str> = s.env.iter().flatten().map(|e| e.name.as_str()).collect();
        assert_eq!(
            env,
            [
                NATS_SERVER_ENV,
                "POD_NAME",
                "POD_NAMESPACE",
                LABEL_SELECTOR_ENV
            ],
            "{at}: sidecar env"
        );
        let probe = s
            .readiness_probe
            .as_ref()
            .unwrap()
            .http_get
            .as_ref()
            .unwrap();
        assert_eq!(
            (probe.path.as_deref(), &probe.port),
            (Some(GAIE_READY_PATH), &IntOrString::Int(8000)),
            "{at}"
        );
        assert_eq!(
            s.ports.as_ref().unwrap()[0].name.as_deref(),
            Some("frontend")
        );
    }

    fn check_boot(pod: &PodSpec, main: &Container, at: &str) {
        let boot = pod
            .volumes
            .iter()
            .flatten()
            .find(|v| v.name == BOOT_VOLUME)
            .unwrap();
        let hp = boot.host_path.as_ref().unwrap();
        assert_eq!(
            (hp.path.as_str(), hp.type_.as_deref()),
            ("/boot", Some("Directory"))
        );
        let m = main
            .volume_mounts
            .iter()
            .flatten()
            .find(|m| m.name == BOOT_VOLUME)
            .unwrap();
        assert_eq!(
            (m.mount_path.as_str(), m.read_only),
            ("/boot", Some(true)),
            "{at}"
        );
    }

    #[test]
    fn pod_labels_operator_keys_win() {
        let ws = render_wire(&idep(json!({
            "w": {"componentType": "worker", "podLabels": {"team": "a", LABEL_SERVICE: "evil"}}
        })))
        .unwrap();
        assert_eq!(ws[0].pod_labels.get("team").map(String::as_str), Some("a"));
        assert_eq!(
            ws[0].pod_labels.get(LABEL_SERVICE).map(String::as_str),
            Some("w")
        );
    }

    #[test]
    fn grace_period_from_drain_timeout() {
        let ws = render_wire(&idep(json!({
            "a": {"componentType": "worker", "args": ["--drain-timeout", "600"]},
            "b": {"componentType": "worker", "env": [{"name": DRAIN_TIMEOUT_ENV, "value": "100000"}]},
            "c": {"componentType": "worker", "args": ["--drain-timeout=10"]}
        })))
        .unwrap();
        assert_eq!(ws[0].pod.termination_grace_period_seconds, Some(665));
        assert_eq!(ws[1].pod.termination_grace_period_seconds, Some(3665));
        assert_eq!(ws[2].pod.termination_grace_period_seconds, Some(120));
    }
}
