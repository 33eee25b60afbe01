//! The simulator through the real `kubectl`: a client that was written for
//! real clusters must not be able to tell the difference for the commands
//! infera's users run (apply, get, rollout, scale, delete, patch, events, raw
//! pod proxy).
//!
//! The simulator runs in-process; kubectl runs as a subprocess with
//! `--kubeconfig` (and its own `--cache-dir`). Every test is skipped, saying
//! why, when `kubectl` is not on PATH.
//!
//! The clusters serve HTTPS: client-go (so kubectl) only sends a
//! kubeconfig's credentials over TLS ("only try to read the auth information
//! if we are secure", `clientcmd`), so against a plain-HTTP simulator it
//! arrives anonymous and gets 401 — `plain_http_sends_no_token` pins that.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use infera_sim::{RunningSim, SimOptions};
use infera_sim_scenario::Scenario;

const TOKEN: &str = "sim-kubectl-test-token";

fn kubectl_bin() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("kubectl"))
        .find(|p| p.is_file())
}

macro_rules! require_kubectl {
    () => {
        match kubectl_bin() {
            Some(bin) => bin,
            None => {
                eprintln!("skipping: kubectl is not on PATH");
                return;
            }
        }
    };
}

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Out {
    fn ok(&self) -> bool {
        self.code == Some(0)
    }

    #[track_caller]
    fn expect_ok(&self, what: &str) -> &str {
        assert!(
            self.ok(),
            "{what}: kubectl exited {:?}\nstdout:\n{}\nstderr:\n{}",
            self.code,
            self.stdout,
            self.stderr
        );
        &self.stdout
    }

    #[track_caller]
    fn expect_err(&self, what: &str) -> &str {
        assert!(
            !self.ok(),
            "{what}: kubectl unexpectedly succeeded\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        &self.stderr
    }
}

/// A running simulator and a kubectl pointed at it.
struct Cluster {
    sim: Option<RunningSim>,
    bin: PathBuf,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

impl Cluster {
    async fn start(bin: PathBuf, scenario: Scenario, speed: f64, tls: bool) -> Cluster {
        let mut options = SimOptions::new(scenario, speed);
        options.tls = tls;
        options.token = Some(TOKEN.to_string());
        let sim = RunningSim::start(options)
            .await
            .unwrap_or_else(|e| panic!("starting the simulator: {e}"));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let kubeconfig = dir.path().join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig)
            .unwrap_or_else(|e| panic!("{e}"));
        Cluster {
            sim: Some(sim),
            bin,
            dir,
            kubeconfig,
        }
    }

    async fn builtin(bin: PathBuf, name: &str, speed: f64) -> Cluster {
        let scenario = Scenario::load(name).unwrap_or_else(|e| panic!("{e}"));
        Cluster::start(bin, scenario, speed, true).await
    }

    fn sim(&self) -> &RunningSim {
        self.sim.as_ref().unwrap_or_else(|| panic!("shut down"))
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("writing {name}: {e}"));
        path
    }

    async fn kubectl(&self, args: &[&str]) -> Out {
        self.kubectl_with(&self.kubeconfig, args).await
    }

    async fn kubectl_with(&self, kubeconfig: &Path, args: &[&str]) -> Out {
        let mut cmd = tokio::process::Command::new(&self.bin);
        cmd.arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .arg("--request-timeout=30s")
            .args(args)
            .env_remove("KUBECONFIG")
            .env("HOME", self.dir.path())
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let output = tokio::time::timeout(Duration::from_secs(120), cmd.output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} did not finish in 120 s"))
            .unwrap_or_else(|e| panic!("running kubectl: {e}"));
        Out {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Run `kubectl args` until `done(output)` holds.
    async fn eventually(&self, what: &str, args: &[&str], done: impl Fn(&Out) -> bool) -> Out {
        let start = Instant::now();
        loop {
            let out = self.kubectl(args).await;
            if done(&out) {
                return out;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "timed out waiting for {what}; last `kubectl {}`:\nstdout:\n{}\nstderr:\n{}",
                args.join(" "),
                out.stdout,
                out.stderr
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn shutdown(mut self) {
        if let Some(sim) = self.sim.take() {
            sim.shutdown().await;
        }
    }
}

fn web_deployment(image: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: llm
  labels: {{app: web}}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: web
        image: {image}
        ports: [{{containerPort: 80}}]
        resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}
"#
    )
}

/// Data rows of a `kubectl get` table (header dropped).
fn rows(table: &str) -> Vec<Vec<&str>> {
    table
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .filter(|r: &Vec<&str>| !r.is_empty())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_get_rollout_restart_and_scale() {
    let bin = require_kubectl!();
    let c = Cluster::builtin(bin, "pd-1p1d", 200.0).await;

    // Client-side apply with kubectl's default (strict) validation: needs
    // OpenAPI v3 discovery to learn the server validates fields itself.
    let manifest = c.write("web.yaml", &web_deployment("nginx:1.27"));
    let manifest = manifest.to_string_lossy().into_owned();
    let out = c.kubectl(&["apply", "-f", &manifest]).await;
    assert!(
        out.expect_ok("apply")
            .contains("deployment.apps/web created"),
        "{}",
        out.stdout
    );
    let out = c
        .kubectl(&["rollout", "status", "deploy/web", "--timeout=60s"])
        .await;
    assert!(
        out.expect_ok("rollout status")
            .contains("successfully rolled out")
    );

    let out = c
        .kubectl(&["get", "pods", "-o", "wide", "-l", "app=web"])
        .await;
    let table = out.expect_ok("get pods -o wide");
    let header = table.lines().next().unwrap_or_default();
    for col in ["NAME", "READY", "STATUS", "IP", "NODE"] {
        assert!(header.contains(col), "{header}");
    }
    let pods = rows(table);
    assert_eq!(pods.len(), 2, "{table}");
    for row in &pods {
        assert!(row[0].starts_with("web-"), "{table}");
        assert_eq!(row[1], "1/1", "{table}");
        assert_eq!(row[2], "Running", "{table}");
        assert!(row[5].starts_with("127.77."), "pod IP: {table}");
        assert!(row[6].starts_with("gpu-node-"), "node: {table}");
    }

    // Chunked: one pod per request, every pod listed once.
    let out = c.kubectl(&["get", "pods", "-A", "--chunk-size=1"]).await;
    assert_eq!(
        rows(out.expect_ok("chunked get")).len(),
        5,
        "{}",
        out.stdout
    );

    let out = c.kubectl(&["get", "nodes"]).await;
    let nodes = rows(out.expect_ok("get nodes"));
    assert_eq!(nodes.len(), 3, "{}", out.stdout);
    assert!(nodes.iter().all(|r| r[1] == "Ready"), "{}", out.stdout);

    reapply_restart_and_scale(&c, &manifest).await;
    strict_validation_and_server_side_apply(&c, &manifest).await;
    c.shutdown().await;
}

/// Re-apply (a three-way strategic merge), rollout restart, status, history and scale.
async fn reapply_restart_and_scale(c: &Cluster, manifest: &str) {
    // Re-apply, changed: a three-way strategic merge patch.
    c.write("web.yaml", &web_deployment("nginx:1.28"));
    let out = c.kubectl(&["apply", "-f", manifest]).await;
    assert!(
        out.expect_ok("re-apply")
            .contains("deployment.apps/web configured"),
        "{}",
        out.stdout
    );
    let out = c.kubectl(&["apply", "-f", manifest]).await;
    assert!(
        out.expect_ok("apply unchanged")
            .contains("deployment.apps/web unchanged")
    );
    c.kubectl(&["rollout", "status", "deploy/web", "--timeout=60s"])
        .await
        .expect_ok("rollout status after the image change");
    let out = c
        .kubectl(&[
            "get",
            "pods",
            "-l",
            "app=web",
            "-o",
            "jsonpath={.items[*].spec.containers[0].image}",
        ])
        .await;
    let images = out.expect_ok("pod images");
    assert!(
        images.split_whitespace().all(|i| i == "nginx:1.28"),
        "{images}"
    );

    // rollout restart + status.
    let out = c.kubectl(&["rollout", "restart", "deploy/web"]).await;
    assert!(
        out.expect_ok("rollout restart")
            .contains("deployment.apps/web restarted")
    );
    let out = c
        .kubectl(&["rollout", "status", "deploy/web", "--timeout=60s"])
        .await;
    assert!(
        out.expect_ok("rollout status after restart")
            .contains("successfully rolled out")
    );
    let out = c.kubectl(&["rollout", "history", "deploy/web"]).await;
    let history = out.expect_ok("rollout history");
    assert!(
        history.lines().any(|l| l.trim_start().starts_with('3')),
        "three revisions (create, image, restart): {history}"
    );

    // scale
    let out = c.kubectl(&["scale", "deploy/web", "--replicas=3"]).await;
    assert!(
        out.expect_ok("scale")
            .contains("deployment.apps/web scaled")
    );
    c.kubectl(&["rollout", "status", "deploy/web", "--timeout=60s"])
        .await
        .expect_ok("rollout status after scale");
    c.eventually(
        "3 ready replicas",
        &[
            "get",
            "deploy/web",
            "-o",
            "jsonpath={.status.readyReplicas}",
        ],
        |o| o.ok() && o.stdout.trim() == "3",
    )
    .await;
    let out = c.kubectl(&["get", "deploy", "web"]).await;
    let table = out.expect_ok("get deploy");
    assert_eq!(rows(table)[0][1], "3/3", "{table}");
}

/// Strict, warn and no validation of an unknown field; server-side apply.
async fn strict_validation_and_server_side_apply(c: &Cluster, manifest: &str) {
    // kubectl's default strict validation: the server refuses unknown
    // fields; --validate=warn gets a warning; false ignores them.
    let typo = web_deployment("nginx:1.27")
        .replace("name: web\n", "name: typo\n")
        .replace("replicas: 2", "replicass: 2");
    let typo = c.write("typo.yaml", &typo);
    let typo = typo.to_string_lossy().into_owned();
    let out = c.kubectl(&["apply", "-f", &typo]).await;
    let err = out.expect_err("apply with an unknown field");
    assert!(err.contains(r#"unknown field "spec.replicass""#), "{err}");
    let out = c.kubectl(&["apply", "--validate=warn", "-f", &typo]).await;
    out.expect_ok("apply --validate=warn");
    assert!(
        out.stderr
            .contains(r#"Warning: unknown field "spec.replicass""#),
        "{}",
        out.stderr
    );

    // Server-side apply is accepted too.
    let out = c
        .kubectl(&[
            "apply",
            "--server-side",
            "--field-manager=sim-test",
            "-f",
            manifest,
        ])
        .await;
    assert!(
        out.expect_ok("server-side apply")
            .contains("serverside-applied"),
        "{}",
        out.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_pod_terminates_gracefully() {
    let bin = require_kubectl!();
    let c = Cluster::builtin(bin, "pd-1p1d", 200.0).await;
    // preStop sleeps 400 s of the 600 s grace period: 2 s of wall time.
    let manifest = c.write(
        "slow.yaml",
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: slow, namespace: llm}
spec:
  replicas: 1
  selector: {matchLabels: {app: slow}}
  template:
    metadata: {labels: {app: slow}}
    spec:
      terminationGracePeriodSeconds: 600
      containers:
      - name: main
        image: busybox:1.36
        command: [sleep, infinity]
        lifecycle: {preStop: {exec: {command: [sleep, "400"]}}}
"#,
    );
    c.kubectl(&["apply", "-f", &manifest.to_string_lossy()])
        .await
        .expect_ok("apply");
    c.kubectl(&["rollout", "status", "deploy/slow", "--timeout=60s"])
        .await
        .expect_ok("rollout status");
    let out = c
        .kubectl(&[
            "get",
            "pods",
            "-l",
            "app=slow",
            "-o",
            "jsonpath={.items[0].metadata.name}",
        ])
        .await;
    let pod = out.expect_ok("pod name").trim().to_string();
    assert!(pod.starts_with("slow-"), "{pod}");

    let out = c.kubectl(&["delete", "pod", &pod, "--wait=false"]).await;
    assert!(
        out.expect_ok("delete pod")
            .contains(&format!("pod \"{pod}\" deleted"))
    );
    // Still there, marked for deletion with the pod's grace period.
    let out = c
        .kubectl(&[
            "get",
            "pod",
            &pod,
            "-o",
            "jsonpath={.metadata.deletionTimestamp} {.metadata.deletionGracePeriodSeconds}",
        ])
        .await;
    let marks = out.expect_ok("the terminating pod");
    let (ts, grace) = marks.trim().split_once(' ').unwrap_or_default();
    assert!(ts.ends_with('Z'), "deletionTimestamp: {marks}");
    assert_eq!(grace, "600", "{marks}");
    let out = c.kubectl(&["get", "pod", &pod]).await;
    assert!(
        out.expect_ok("get terminating pod").contains("Terminating"),
        "{}",
        out.stdout
    );
    // The ReplicaSet replaces it at once; the old one goes after preStop.
    let out = c
        .kubectl(&[
            "wait",
            "--for=delete",
            &format!("pod/{pod}"),
            "--timeout=60s",
        ])
        .await;
    out.expect_ok("wait for the deletion");
    let out = c
        .eventually(
            "a replacement pod",
            &["get", "pods", "-l", "app=slow"],
            |o| o.ok() && rows(&o.stdout).len() == 1,
        )
        .await;
    assert!(!out.stdout.contains(&pod), "{}", out.stdout);

    // A second, immediate delete (grace 0 with --force) removes it at once.
    let out = c
        .kubectl(&[
            "get",
            "pods",
            "-l",
            "app=slow",
            "-o",
            "jsonpath={.items[0].metadata.name}",
        ])
        .await;
    let second = out.expect_ok("second pod").trim().to_string();
    let out = c
        .kubectl(&["delete", "pod", &second, "--grace-period=0", "--force"])
        .await;
    out.expect_ok("force delete");
    let out = c.kubectl(&["get", "pod", &second]).await;
    assert!(
        out.expect_err("get force-deleted pod").contains("NotFound"),
        "{}",
        out.stderr
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idep_rollout_on_pinned_nodes_shows_failed_scheduling() {
    let bin = require_kubectl!();
    let c = Cluster::builtin(bin, "whole-node-pinned", 200.0).await;
    // The CRD's short name comes from discovery.
    let out = c
        .eventually("the InferaDeployment to be Ready", &["get", "idep"], |o| {
            o.ok() && o.stdout.contains(" ready")
        })
        .await;
    let table = &out.stdout;
    assert!(
        table.lines().next().unwrap_or_default().contains("NAME"),
        "{table}"
    );
    assert_eq!(rows(table)[0][0], "kimi", "{table}");
    let out = c
        .kubectl(&[
            "get",
            "inferadeployments.infera.amd.com",
            "kimi",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(
        out.expect_ok("get by the full name").trim(),
        "inferadeployment.infera.amd.com/kimi"
    );

    // A podLabels change rolls the prefill worker (surge-first); its node
    // is full, so the surge pod cannot be placed.
    let out = c
        .kubectl(&[
            "patch",
            "idep/kimi",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"services":{"prefill":{"podLabels":{"rollout":"1"}}}}}"#,
        ])
        .await;
    assert!(
        out.expect_ok("patch idep")
            .contains("inferadeployment.infera.amd.com/kimi patched")
    );
    let out = c
        .eventually("a FailedScheduling event", &["get", "events"], |o| {
            o.ok() && o.stdout.contains("FailedScheduling")
        })
        .await;
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("FailedScheduling"))
        .unwrap_or_default();
    assert!(line.contains("Warning"), "{line}");
    assert!(line.contains("pod/kimi-prefill-"), "{line}");
    assert!(
        line.contains("0/2 nodes are available: 1 Insufficient amd.com/gpu, 1 node(s) didn't match Pod's node affinity/selector."),
        "{line}"
    );
    let out = c
        .kubectl(&[
            "get",
            "events",
            "--field-selector",
            "reason=FailedScheduling",
            "-o",
            "jsonpath={.items[*].involvedObject.kind}",
        ])
        .await;
    assert!(out.expect_ok("events by reason").contains("Pod"));
    let out = c
        .kubectl(&["get", "pods", "-l", "infera.amd.com/service=prefill"])
        .await;
    let table = out.expect_ok("prefill pods");
    assert!(
        rows(table).iter().any(|r| r[2] == "Pending")
            && rows(table).iter().any(|r| r[2] == "Running"),
        "the old pod keeps running beside the Pending surge pod: {table}"
    );
    // The rollout stalls until the deployment's 600 s deadline (3 s here).
    let out = c
        .kubectl(&["rollout", "status", "deploy/kimi-prefill", "--timeout=60s"])
        .await;
    assert!(
        out.expect_err("rollout status of the stalled rollout")
            .contains("exceeded its progress deadline"),
        "{}",
        out.stderr
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_status_reports_the_progress_deadline() {
    let bin = require_kubectl!();
    let scenario = Scenario::from_yaml(
        "one-small-node.yaml",
        r#"
name: one-small-node
nodes:
  - {name: small, count: 1, allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
manifests:
  - {apiVersion: v1, kind: Namespace, metadata: {name: apps}}
"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let c = Cluster::start(bin, scenario, 200.0, true).await;
    let manifest = c.write(
        "big.yaml",
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: big}
spec:
  replicas: 1
  progressDeadlineSeconds: 30
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  selector: {matchLabels: {app: big}}
  template:
    metadata: {labels: {app: big}}
    spec:
      containers:
      - {name: main, image: busybox:1.36, resources: {requests: {cpu: "3"}}}
"#,
    );
    c.kubectl(&["apply", "-f", &manifest.to_string_lossy()])
        .await
        .expect_ok("apply");
    c.kubectl(&["rollout", "status", "deploy/big", "--timeout=60s"])
        .await
        .expect_ok("first rollout");
    c.kubectl(&["rollout", "restart", "deploy/big"])
        .await
        .expect_ok("restart");
    let out = c
        .kubectl(&["rollout", "status", "deploy/big", "--timeout=60s"])
        .await;
    let err = out.expect_err("rollout status of a stalled rollout");
    assert!(
        err.contains("deployment \"big\" exceeded its progress deadline"),
        "{err}"
    );
    let out = c
        .kubectl(&[
            "get",
            "deploy/big",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Progressing\")].reason}",
        ])
        .await;
    assert_eq!(
        out.expect_ok("Progressing reason").trim(),
        "ProgressDeadlineExceeded"
    );
    // The old pod still serves: surge-first never removed it.
    let out = c.kubectl(&["get", "deploy", "big", "--no-headers"]).await;
    let line = out.expect_ok("get deploy");
    assert!(line.split_whitespace().nth(1) == Some("1/1"), "{line}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_pod_proxy_answers_while_the_worker_is_ready() {
    let bin = require_kubectl!();
    let c = Cluster::builtin(bin, "pd-1p1d", 200.0).await;
    let out = c
        .eventually(
            "a Ready decode worker",
            &[
                "get",
                "pods",
                "-l",
                "infera.amd.com/service=decode",
                "-o",
                "jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}",
            ],
            |o| o.ok() && o.stdout.lines().any(|l| l.ends_with(" True")),
        )
        .await;
    let pod = out
        .stdout
        .lines()
        .find(|l| l.ends_with(" True"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_default()
        .to_string();
    let path = format!("/api/v1/namespaces/llm/pods/{pod}:30090/proxy/ready");
    let out = c.kubectl(&["get", "--raw", &path]).await;
    out.expect_ok("proxy to the readiness port");

    // The router runs no engine: nothing listens on 30090.
    let out = c
        .kubectl(&[
            "get",
            "pods",
            "-l",
            "infera.amd.com/service=router",
            "-o",
            "jsonpath={.items[0].metadata.name}",
        ])
        .await;
    let router = out.expect_ok("router pod").trim().to_string();
    let out = c
        .kubectl(&[
            "get",
            "--raw",
            &format!("/api/v1/namespaces/llm/pods/{router}:30090/proxy/ready"),
        ])
        .await;
    let err = out.expect_err("proxy to a closed port");
    assert!(err.contains("ServiceUnavailable"), "{err}");
    assert!(err.contains("connection refused"), "{err}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_token_is_unauthorized() {
    let bin = require_kubectl!();
    let c = Cluster::builtin(bin, "pd-1p1d", 200.0).await;
    let yaml = c.sim().kubeconfig_yaml();
    assert!(yaml.contains(TOKEN));
    let wrong = c.write("wrong", &yaml.replace(TOKEN, "not-the-token"));
    let out = c.kubectl_with(&wrong, &["get", "pods"]).await;
    let err = out.expect_err("get pods with a wrong token");
    assert!(err.contains("You must be logged in to the server"), "{err}");
    let out = c
        .kubectl_with(&wrong, &["get", "--raw", "/api/v1/namespaces/llm/pods"])
        .await;
    let err = out.expect_err("raw get with a wrong token");
    assert!(err.contains("Unauthorized"), "{err}");
    // The right token works.
    c.kubectl(&["get", "pods"]).await.expect_ok("get pods");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_kubeconfig_trusts_the_generated_ca() {
    let bin = require_kubectl!();
    let c = Cluster::builtin(bin, "pd-1p1d", 200.0).await;
    let yaml = c.sim().kubeconfig_yaml();
    assert!(c.sim().url().starts_with("https://127.0.0.1:"));
    assert!(yaml.contains("certificate-authority-data"), "{yaml}");
    let out = c.kubectl(&["version", "-o", "json"]).await;
    let version: serde_json::Value =
        serde_json::from_str(out.expect_ok("version")).unwrap_or_default();
    assert_eq!(version["serverVersion"]["minor"], "33", "{}", out.stdout);
    c.kubectl(&["get", "nodes"]).await.expect_ok("get nodes");

    // Without the CA the server's certificate is not trusted.
    let untrusted = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster: {{server: \"{}\"}}\nusers:\n- name: sim\n  user: {{token: {TOKEN}}}\ncontexts:\n- name: sim\n  context: {{cluster: sim, user: sim}}\ncurrent-context: sim\n",
        c.sim().url()
    );
    let untrusted = c.write("untrusted", &untrusted);
    let out = c.kubectl_with(&untrusted, &["get", "nodes"]).await;
    let err = out.expect_err("get nodes without the CA");
    assert!(err.contains("certificate"), "{err}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_sends_no_token() {
    let bin = require_kubectl!();
    let scenario = Scenario::load("pd-1p1d").unwrap_or_else(|e| panic!("{e}"));
    let c = Cluster::start(bin, scenario, 200.0, false).await;
    assert!(c.sim().url().starts_with("http://"));
    // kubectl drops the kubeconfig's token for an http:// server.
    let out = c.kubectl(&["get", "pods"]).await;
    let err = out.expect_err("get pods over plain HTTP");
    assert!(err.contains("You must be logged in to the server"), "{err}");
    c.shutdown().await;
}

/// The lab's kubectl (v1.37, `$INFERA_LAB_BIN/kubectl`): it sends protobuf
/// bodies for typed commands. Skipped, saying why, when INFERA_LAB_BIN is
/// not set, unless INFERA_LAB_REQUIRED is.
fn lab_kubectl() -> Option<PathBuf> {
    let found = std::env::var_os("INFERA_LAB_BIN")
        .map(|dir| PathBuf::from(dir).join("kubectl"))
        .filter(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("INFERA_LAB_REQUIRED").is_none(),
            "INFERA_LAB_REQUIRED is set but $INFERA_LAB_BIN/kubectl is missing: run lab/build"
        );
        eprintln!(
            "skipping: INFERA_LAB_BIN is not set (export INFERA_LAB_BIN=$(lab/build | tail -n1))"
        );
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn current_kubectl_creates_scales_drains_and_reads_events() {
    let Some(bin) = lab_kubectl() else { return };
    let c = Cluster::builtin(bin, "pd-1p1d", 20.0).await;
    // Protobuf bodies: create namespace|deployment, scale.
    c.kubectl(&["create", "namespace", "x"])
        .await
        .expect_ok("create namespace");
    let out = c
        .kubectl(&["create", "deployment", "web", "--image=nginx", "-n", "x"])
        .await;
    assert!(
        out.expect_ok("create deployment")
            .contains("deployment.apps/web created")
    );
    c.kubectl(&["scale", "deploy/web", "--replicas=2", "-n", "x"])
        .await
        .expect_ok("scale");
    c.kubectl(&[
        "rollout",
        "status",
        "deploy/web",
        "-n",
        "x",
        "--timeout=60s",
    ])
    .await
    .expect_ok("rollout status");
    // Defaulting saw Go's empty strategy type as unset.
    let strategy = c
        .kubectl(&[
            "get",
            "deploy/web",
            "-n",
            "x",
            "-o",
            "jsonpath={.spec.strategy.type}",
        ])
        .await;
    assert_eq!(strategy.expect_ok("strategy"), "RollingUpdate");
    events_and_can_i(&c).await;
    drain_and_configmaps(&c).await;
    c.shutdown().await;
}

/// Events as on a cluster (describe, get events); auth can-i.
async fn events_and_can_i(c: &Cluster) {
    // Events, as on a cluster.
    let describe = c.kubectl(&["describe", "deploy/web", "-n", "x"]).await;
    let describe = describe.expect_ok("describe deploy");
    assert!(
        describe.contains("Scaled up replica set web-") && describe.contains("from 1 to 2"),
        "{describe}"
    );
    let events = c
        .eventually("kubelet events", &["get", "events", "-n", "x"], |o| {
            o.ok() && o.stdout.contains("Started")
        })
        .await;
    for reason in [
        "ScalingReplicaSet",
        "SuccessfulCreate",
        "Scheduled",
        "Pulling",
        "Pulled",
        "Created",
    ] {
        assert!(
            events.stdout.contains(reason),
            "no {reason} in\n{}",
            events.stdout
        );
    }
    assert!(
        events.stdout.contains("Successfully assigned x/web-"),
        "{}",
        events.stdout
    );
    // auth can-i: no RBAC in the sim, everything is allowed.
    let can = c
        .kubectl(&["auth", "can-i", "create", "deployments", "-n", "x"])
        .await;
    assert_eq!(can.expect_ok("auth can-i").trim(), "yes");
}

/// drain (cordon, then Evictions) and the evicted pods rescheduled; ConfigMaps are a clean NotFound.
async fn drain_and_configmaps(c: &Cluster) {
    // drain: cordon (patch) then policy/v1 Evictions (protobuf).
    let node = c
        .kubectl(&[
            "get",
            "pods",
            "-n",
            "x",
            "-o",
            "jsonpath={.items[0].spec.nodeName}",
        ])
        .await;
    let node = node.expect_ok("node of web").trim().to_string();
    let drain = c
        .kubectl(&[
            "drain",
            &node,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=60s",
        ])
        .await;
    let drained = drain.expect_ok("drain");
    assert!(
        drained.contains("evicted") && drained.contains("drained"),
        "{drained}"
    );
    let cordoned = c
        .kubectl(&["get", "node", &node, "-o", "jsonpath={.spec.unschedulable}"])
        .await;
    assert_eq!(cordoned.expect_ok("node").trim(), "true");
    // Evicted web pods come back on the other nodes.
    c.kubectl(&[
        "rollout",
        "status",
        "deploy/web",
        "-n",
        "x",
        "--timeout=60s",
    ])
    .await
    .expect_ok("rollout status after drain");
    let nodes = c
        .kubectl(&[
            "get",
            "pods",
            "-n",
            "x",
            "-o",
            "jsonpath={.items[*].spec.nodeName}",
        ])
        .await;
    let nodes = nodes.expect_ok("web nodes").to_string();
    assert!(!nodes.split_whitespace().any(|n| n == node), "{nodes}");
    // ConfigMaps are not simulated: a clean NotFound, not a decode error.
    let cm = c
        .kubectl(&["create", "configmap", "c", "--from-literal=a=b", "-n", "x"])
        .await;
    assert!(
        cm.expect_err("configmap")
            .contains("could not find the requested resource")
    );
}
