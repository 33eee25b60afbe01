//! `kubectl infera`: the real kubectl finds `kubectl-infera` on `PATH`
//! (its plugin discovery) and passes the arguments through, kubectl-style
//! flags included. Skipped, saying why, when no kubectl can be found;
//! `INFERA_LAB_REQUIRED` (set by `.ci/run`) turns that skip into a failure.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::common::sim::Sim;

/// The lab's kubectl (v1.37) when built, else the one on `PATH`.
fn kubectl() -> Option<PathBuf> {
    let lab = std::env::var_os("INFERA_LAB_BIN").map(|d| Path::new(&d).join("kubectl"));
    if let Some(k) = lab.filter(|k| k.is_file()) {
        return Some(k);
    }
    let found = Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    found.then(|| PathBuf::from("kubectl"))
}

fn kubectl_or_skip(test: &str) -> Option<PathBuf> {
    let k = kubectl();
    if k.is_none() {
        assert!(
            std::env::var_os("INFERA_LAB_REQUIRED").is_none(),
            "{test}: no kubectl (neither $INFERA_LAB_BIN/kubectl nor one on PATH)"
        );
        eprintln!(
            "skipping {test}: no kubectl on PATH (Debian: apt-get install kubernetes-client)"
        );
    }
    k
}

/// `PATH` with the directory of the built `kubectl-infera` first.
fn plugin_path() -> OsString {
    let plugin = Path::new(env!("CARGO_BIN_EXE_kubectl-infera"));
    let dir = plugin.parent().expect("plugin dir").to_path_buf();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(dir).chain(std::env::split_paths(&rest))).expect("PATH")
}

fn run(kubectl: &Path, args: &[&str]) -> Output {
    Command::new(kubectl)
        .args(args)
        .env("PATH", plugin_path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run kubectl")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn kubectl_discovers_the_plugin_and_passes_arguments_through() {
    let Some(kubectl) = kubectl_or_skip("kubectl_discovers_the_plugin") else {
        return;
    };
    let list = run(&kubectl, &["plugin", "list"]);
    assert!(
        text(&list.stdout).contains("kubectl-infera"),
        "kubectl plugin list: {}{}",
        text(&list.stdout),
        text(&list.stderr)
    );

    let help = run(&kubectl, &["infera", "--help"]);
    assert!(help.status.success(), "{}", text(&help.stderr));
    assert!(
        text(&help.stdout).contains("Usage: kubectl infera"),
        "help names the plugin as typed: {}",
        text(&help.stdout)
    );

    let rule = run(&kubectl, &["infera", "rules", "IR001"]);
    assert!(rule.status.success(), "{}", text(&rule.stderr));
    assert!(text(&rule.stdout).contains("skip-probe-serving"));

    // Exit codes pass through kubectl: a bad flag is a usage error.
    let bad = run(
        &kubectl,
        &["infera", "rollout", "restart", "--no-such-flag"],
    );
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_infera_rolls_with_kubectl_style_flags() {
    let Some(kubectl) = kubectl_or_skip("kubectl_infera_rolls") else {
        return;
    };
    let sim = Sim::start("pd-1p1d", 200.0).await;
    let ns = sim.namespace();
    let kubeconfig = sim.kubeconfig.clone();
    let report = sim.path("report.json");

    let args: Vec<String> = [
        "infera",
        "rollout",
        "restart",
        "idep/llama",
        "-n",
        &ns,
        "--kubeconfig",
        kubeconfig.to_str().expect("utf-8 path"),
        "--yes",
        "--report",
        report.to_str().expect("utf-8 path"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&kubectl, &args)
    })
    .await
    .expect("kubectl infera");
    assert_eq!(
        out.status.code(),
        Some(0),
        "kubectl infera rollout restart:\n{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let report: Value =
        serde_json::from_slice(&std::fs::read(&report).expect("report")).expect("JSON report");
    assert_eq!(report["outcome"], "complete", "{report}");
    assert_eq!(report["target"], "idep/llama", "{report}");
    sim.shutdown().await;
}
