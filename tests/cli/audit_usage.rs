//! `infera audit` and the cluster access layer over real HTTP.
//!
//! * A tiny fake API server (axum) for the error paths: a 403 on the pod
//!   list must give one line naming the verb, resource and namespace, and
//!   exit 2; an unreachable server names its URL.
//! * The simulator (`infera sim`, in-process, real HTTP, the production
//!   client path from a kubeconfig) for the numbers.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use assert_cmd::Command;
use axum::Json;
use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use serde_json::{Value, json};

use crate::common::case;

fn kubeconfig(dir: &Path, server: &str) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: fake\nclusters:\n- name: fake\n  cluster:\n    server: {server}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: u\n    namespace: prod\nusers:\n- name: u\n  user:\n    token: do-not-print-me\n"
        ),
    )
    .unwrap();
    path
}

fn forbidden(verb: &str, resource: &str) -> (StatusCode, Json<Value>) {
    (
        StatusCode::FORBIDDEN,
        Json(json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
            "message": format!("{resource} is forbidden: User \"system:serviceaccount:prod:x\" cannot {verb} resource \"{resource}\" in API group \"\" in the namespace \"prod\""),
            "details": {"kind": resource}
        })),
    )
}

/// An API server that knows one InferaDeployment but forbids listing pods.
async fn fake_forbidding_pods() -> SocketAddr {
    let app = Router::new()
        .route(
            "/version",
            get(|| async { Json(json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0"})) }),
        )
        .route(
            "/apis/infera.amd.com/v1alpha1/namespaces/prod/inferadeployments/llm",
            get(|| async {
                Json(json!({
                    "apiVersion": "infera.amd.com/v1alpha1", "kind": "InferaDeployment",
                    "metadata": {"name": "llm", "namespace": "prod", "generation": 1, "resourceVersion": "1"},
                    "spec": {"services": {
                        "prefill": {"componentType": "worker", "role": "prefill"},
                        "decode": {"componentType": "worker", "role": "decode"}
                    }}
                }))
            }),
        )
        .route(
            "/api/v1/namespaces/prod",
            get(|| async {
                Json(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}}))
            }),
        )
        .route(
            "/api/v1/namespaces/prod/pods",
            get(|| async { forbidden("list", "pods") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_rbac_is_one_line_naming_verb_resource_namespace_and_exit_2() {
    let addr = fake_forbidding_pods().await;
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), &format!("http://{addr}"));
    let out = tokio::task::spawn_blocking(move || {
        Command::cargo_bin("infera")
            .unwrap()
            .args(["audit", "idep/llm", "--until-complete", "--kubeconfig"])
            .arg(&config)
            .env_remove("KUBECONFIG")
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let error_lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(
        error_lines,
        [
            "error: forbidden: cannot list pods in namespace \"prod\"; `infera rbac -n prod` prints the Role to grant"
        ],
        "{stderr}"
    );
    assert!(!stderr.contains("do-not-print-me"));
}

#[test]
fn unreachable_api_names_the_url_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    // Port 9 (discard) on localhost: nothing listens there in CI.
    let config = kubeconfig(dir.path(), "https://127.0.0.1:9");
    case::infera(&["audit", "deploy/w", "--for", "1m", "--kubeconfig"])
        .arg(&config)
        .status(2)
        .stderr_starts("error: cannot reach the Kubernetes API at https://127.0.0.1:9")
        .stderr_one_line()
        .stderr_lacks("do-not-print-me")
        .run();
}

/// A server that accepts the connection and never answers: after 2 s the
/// user is told where infera is connecting (once), then the one-line error
/// at the probe's 15 s timeout, exit 2.
#[test]
fn a_silent_server_is_named_while_infera_waits() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accept (the kernel's backlog does) and never answer.
    let _held = std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().take(8).collect();
        std::thread::sleep(std::time::Duration::from_secs(60));
        drop(held);
    });
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let config = kubeconfig(dir.path(), &url);
    let out = Command::cargo_bin("infera")
        .unwrap()
        .args(["audit", "deploy/w", "--for", "1m", "--kubeconfig"])
        .arg(&config)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let notice = format!("connecting to {url}… (no answer yet; giving up after 15s)");
    assert_eq!(stderr.matches(&notice).count(), 1, "{stderr}");
    assert!(stderr.contains("no answer within 15s"), "{stderr}");
    assert!(!stderr.contains("do-not-print-me"), "{stderr}");
}

#[test]
fn unknown_context_lists_known_contexts_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), "https://127.0.0.1:9");
    case::infera(&["audit", "deploy/w", "--for", "1m", "--context", "prod-eu"])
        .env("KUBECONFIG", &config.display().to_string())
        .status(2)
        .stderr("context \"prod-eu\" not found")
        .stderr("known contexts: fake")
        .run();
}

#[test]
fn rbac_prints_role_and_cluster_role() {
    let out = Command::cargo_bin("infera")
        .unwrap()
        .args(["rbac", "-n", "serving", "-o", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let kinds: Vec<&str> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"]
    );
    assert_eq!(v["items"][0]["metadata"]["namespace"], "serving");
}

/// `--report` into a directory that does not exist: exit 2 before any
/// request, with one line naming the file.
#[test]
fn unwritable_report_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("missing").join("audit.json");
    case::infera(&["audit", "idep/qwen", "--for", "1m", "--report"])
        .arg(&report)
        .status(2)
        .stderr_one_line()
        .stderr(&report.display().to_string())
        .stderr("does not exist")
        .run();
}

/// A `-l` that does not parse (kubectl's grammar, the model's parser) is
/// one line naming what was found and what was expected, and exit 2, before
/// any request: the kubeconfig points at nothing, so reaching for the
/// cluster would say so instead.
#[test]
fn malformed_label_selectors_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), "https://127.0.0.1:9");
    let cases: [(&[&str], &str); 3] = [
        (
            &["audit", "-l", "tier in (a,b", "--for", "1m"],
            "error: cannot read -l `tier in (a,b`: found end of string, expected: ',' or ')'",
        ),
        (
            &["drain", "-l", "pool=mi355x,", "--ignore-daemonsets"],
            "error: cannot read -l `pool=mi355x,`: found end of string, expected: identifier after ','",
        ),
        (
            &["monitor", "-l", "a b"],
            "error: cannot read -l `a b`: found 'b', expected: '=', '==', '!=', 'in' or 'notin'",
        ),
    ];
    for (args, says) in cases {
        case::infera(args)
            .arg("--kubeconfig")
            .arg(&config)
            .status(2)
            .stderr_starts(says)
            .stderr_one_line()
            .run();
    }
}
