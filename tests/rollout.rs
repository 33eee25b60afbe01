//! `infera rollout` at the CLI boundary: usage and connection errors. The
//! simulator-backed cases are in `rollout_sim.rs` and `rollout_interrupt.rs`.

use assert_cmd::Command;
use predicates::str::contains;

fn infera() -> Command {
    let mut cmd = Command::cargo_bin("infera").unwrap();
    cmd.env_remove("KUBECONFIG");
    cmd
}

#[test]
fn malformed_target_is_a_usage_error() {
    infera()
        .args(["rollout", "restart", "qwen"])
        .assert()
        .code(2)
        .stderr(contains("use `idep/NAME` or `deploy/NAME`"));
}

#[test]
fn surge_is_refused_on_an_inferadeployment() {
    infera()
        .args(["rollout", "restart", "idep/qwen", "--surge"])
        .assert()
        .code(2)
        .stderr(contains("`--surge` applies to plain Deployments"));
}

#[test]
fn bad_set_env_is_a_usage_error() {
    infera()
        .args(["rollout", "restart", "idep/qwen", "--set-env", "novalue"])
        .assert()
        .code(2)
        .stderr(contains("is not K=V"));
}

#[test]
fn unreachable_api_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("config");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"http://127.0.0.1:1\"}}]\n\
         users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u, namespace: ns}}]\n\
         current-context: x\n",
    )
    .unwrap();
    let out = infera()
        .args(["rollout", "restart", "idep/qwen", "--kubeconfig"])
        .arg(&kubeconfig)
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert_eq!(text.trim_end().lines().count(), 1, "{text}");
    assert!(text.contains("cannot reach the Kubernetes API"), "{text}");
    assert!(
        !text.contains("token: t") && !text.contains(" t "),
        "no credentials in: {text}"
    );
}
