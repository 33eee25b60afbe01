//! `infera rollout` at the CLI boundary: usage and connection errors. The
//! simulator-backed cases are in `tests/sim/rollout.rs` and
//! `tests/sim/rollout_interrupt.rs`.

use crate::common::case;

/// Usage errors: exit 2 and a line saying what to write instead.
#[test]
fn usage_errors_exit_2_and_say_what_to_write() {
    let cases: [(&[&str], &str); 3] = [
        (
            &["rollout", "restart", "qwen"],
            "use `idep/NAME` or `deploy/NAME`",
        ),
        (
            &["rollout", "restart", "idep/qwen", "--surge"],
            "`--surge` applies to plain Deployments",
        ),
        (
            &["rollout", "restart", "idep/qwen", "--set-env", "novalue"],
            "is not K=V",
        ),
    ];
    for (args, message) in cases {
        case::infera(args).status(2).stderr(message).run();
    }
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
    case::infera(&["rollout", "restart", "idep/qwen", "--kubeconfig"])
        .arg(&kubeconfig)
        .status(2)
        .stderr_one_line()
        .stderr("cannot reach the Kubernetes API")
        .stderr_lacks("token: t")
        .stderr_lacks(" t ")
        .run();
}

/// `--report` (or `--timeline`) where it cannot be written: exit 2 before
/// anything is rolled, with one line naming the file; the same for `rollout`
/// and `demo` (and `audit`, in `audit_usage.rs`).
#[test]
fn unwritable_outputs_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("missing").join("report.json");
    let cases: [&[&str]; 3] = [
        &["rollout", "restart", "idep/qwen", "--report"],
        &["demo", "--report"],
        &["demo", "--timeline"],
    ];
    for args in cases {
        case::infera(args)
            .arg(&report)
            .status(2)
            .stderr_one_line()
            .stderr(&report.display().to_string())
            .stderr("does not exist")
            .run();
    }
    // A directory named as the report file.
    case::infera(&["rollout", "restart", "idep/qwen", "--report"])
        .arg(dir.path())
        .status(2)
        .stderr("is a directory")
        .run();
}
