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

/// `--report` (or `--timeline`) where it cannot be written: exit 2 before
/// anything is rolled, with one line naming the file; the same for `rollout`
/// and `demo` (and `audit`, in tests/audit.rs).
#[test]
fn unwritable_outputs_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("missing").join("report.json");
    let cases: [Vec<String>; 3] = [
        vec![
            "rollout".into(),
            "restart".into(),
            "idep/qwen".into(),
            "--report".into(),
        ],
        vec!["demo".into(), "--report".into()],
        vec!["demo".into(), "--timeline".into()],
    ];
    for args in cases {
        let out = infera()
            .args(&args)
            .arg(&report)
            .assert()
            .code(2)
            .get_output()
            .stderr
            .clone();
        let text = String::from_utf8_lossy(&out);
        assert_eq!(text.trim_end().lines().count(), 1, "{args:?}: {text}");
        assert!(
            text.contains(&report.display().to_string()) && text.contains("does not exist"),
            "{args:?}: {text}"
        );
    }
    // A directory named as the report file.
    let out = infera()
        .args(["rollout", "restart", "idep/qwen", "--report"])
        .arg(dir.path())
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("is a directory"), "{text}");
}
