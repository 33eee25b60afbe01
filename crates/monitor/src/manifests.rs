//! `infera monitor --print-manifests`: what runs the monitor in a cluster,
//! on the cluster's own machinery: a ServiceAccount (its token is the
//! in-cluster credential), the read-only Role from `infera rbac`'s source
//! (`infera_cluster::monitor_rbac_objects`), a Deployment, a Service and
//! a prometheus-operator ServiceMonitor.

use serde_json::{Value, json};

use infera_cluster::{MONITOR_NAME, RbacScope, monitor_rbac_objects};

/// What the printed objects say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestOptions {
    /// Where the monitor runs (and, without `-A`, what it watches).
    pub namespace: String,
    /// Watch every namespace (a ClusterRole then).
    pub all_namespaces: bool,
    pub image: String,
    pub min_ready: u32,
    /// `-l`, passed through.
    pub selector: Option<String>,
}

/// The labels of the monitor's pods, Service and ServiceMonitor.
fn labels() -> Value {
    json!({ "app.kubernetes.io/name": MONITOR_NAME })
}

/// The container port's name (the ServiceMonitor scrapes it by name).
const PORT_NAME: &str = "metrics";

/// The objects, in apply order.
pub fn objects(o: &ManifestOptions) -> Vec<Value> {
    let scope = if o.all_namespaces {
        RbacScope::AllNamespaces
    } else {
        RbacScope::Namespace
    };
    let meta = json!({ "name": MONITOR_NAME, "namespace": o.namespace, "labels": labels() });
    let mut out = vec![json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": meta,
    })];
    out.extend(monitor_rbac_objects(&o.namespace, scope));
    out.push(deployment(o, &meta));
    out.push(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {
            "selector": labels(),
            // Scraped also while /readyz fails: infera_watch_up 0 is the news.
            "publishNotReadyAddresses": true,
            "ports": [{ "name": PORT_NAME, "port": crate::DEFAULT_PORT, "targetPort": PORT_NAME }],
        },
    }));
    out.push(json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": meta,
        "spec": {
            "selector": { "matchLabels": labels() },
            "namespaceSelector": { "matchNames": [o.namespace] },
            "endpoints": [{ "port": PORT_NAME, "path": "/metrics", "interval": "30s" }],
        },
    }));
    out
}

fn deployment(o: &ManifestOptions, meta: &Value) -> Value {
    let mut args = vec![
        "monitor".to_string(),
        format!("--listen=0.0.0.0:{}", crate::DEFAULT_PORT),
        format!("--min-ready={}", o.min_ready),
    ];
    if o.all_namespaces {
        args.push("--all-namespaces".to_string());
    } else {
        args.push(format!("--namespace={}", o.namespace));
    }
    if let Some(sel) = &o.selector {
        args.push(format!("--selector={sel}"));
    }
    let probe =
        |path: &str| json!({ "httpGet": { "path": path, "port": PORT_NAME }, "periodSeconds": 10 });
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": 1,
            "selector": { "matchLabels": labels() },
            "template": {
                "metadata": { "labels": labels() },
                "spec": {
                    "serviceAccountName": MONITOR_NAME,
                    // SIGTERM stops it within a second or two.
                    "terminationGracePeriodSeconds": 10,
                    "securityContext": { "runAsNonRoot": true, "runAsUser": 65532 },
                    "containers": [{
                        "name": "monitor",
                        "image": o.image,
                        "command": ["infera"],
                        "args": args,
                        "ports": [{ "name": PORT_NAME, "containerPort": crate::DEFAULT_PORT }],
                        "livenessProbe": probe("/healthz"),
                        "readinessProbe": probe("/readyz"),
                        "resources": {
                            "requests": { "cpu": "50m", "memory": "64Mi" },
                            "limits": { "memory": "256Mi" },
                        },
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": true,
                            "capabilities": { "drop": ["ALL"] },
                        },
                    }],
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_objects_fit_together() {
        let o = ManifestOptions {
            namespace: "mon".into(),
            all_namespaces: true,
            image: "reg/infera:1".into(),
            min_ready: 2,
            selector: Some("model=kimi".into()),
        };
        let objects = objects(&o);
        let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(
            kinds,
            [
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "Deployment",
                "Service",
                "ServiceMonitor"
            ]
        );
        let pod = &objects[3]["spec"]["template"]["spec"];
        assert_eq!(pod["serviceAccountName"], objects[0]["metadata"]["name"]);
        let args = pod["containers"][0]["args"].as_array().unwrap();
        for want in [
            "--all-namespaces",
            "--min-ready=2",
            "--selector=model=kimi",
            "--listen=0.0.0.0:8491",
        ] {
            assert!(args.iter().any(|a| a == want), "{want} in {args:?}");
        }
        assert_eq!(
            objects[4]["spec"]["ports"][0]["name"],
            objects[5]["spec"]["endpoints"][0]["port"]
        );
        assert_eq!(
            objects[4]["spec"]["selector"],
            objects[3]["spec"]["template"]["metadata"]["labels"]
        );
    }
}
