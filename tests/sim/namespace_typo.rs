//! Issue 41: a namespace that does not exist is an error (exit 2, one
//! line, as kubectl makes it), never a clean, empty cluster; and the
//! commands that print objects put them in `-n` or the context's
//! namespace, never a hard-coded `default`.

use std::process::Output;

use crate::common::process::infera;
use crate::common::sim::Sim;

fn run(sim: &Sim, args: &[&str]) -> Output {
    let kubeconfig = sim.kubeconfig().display().to_string();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--kubeconfig", &kubeconfig]);
    infera(&all)
        .output()
        .unwrap_or_else(|e| panic!("running infera: {e}"))
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_typo_is_an_error_not_an_empty_cluster() {
    let sim = Sim::start("pd-1p1d", 200.0).await;
    let commands: [&[&str]; 4] = [
        &["lint", "--cluster", "-n", "nope"],
        &["audit", "idep/llama", "-n", "nope", "--for", "1s"],
        &["audit", "-l", "app=x", "-n", "nope", "--for", "1s"],
        &["monitor", "-n", "nope", "--listen", "127.0.0.1:0"],
    ];
    for args in commands {
        let out = tokio::task::block_in_place(|| run(&sim, args));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "{args:?}: one line: {stderr}"
        );
        assert!(
            stderr.contains("namespaces \"nope\" not found; check `-n`"),
            "{args:?}: {stderr}"
        );
        assert!(!text(&out.stdout).contains("No findings"), "{args:?}");
    }
    let ns = sim.namespace();
    let fine = tokio::task::block_in_place(|| run(&sim, &["lint", "--cluster", "-n", &ns]));
    assert_ne!(fine.status.code(), Some(2), "{}", text(&fine.stderr));
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn printed_objects_go_in_the_contexts_namespace() {
    let sim = Sim::unsteady(crate::common::sim::options("pd-1p1d", 200.0)).await;
    let ns = sim.namespace();
    assert_ne!(ns, "default");
    let expected = format!("namespace: {ns}\n");
    for args in [
        &["monitor", "--print-manifests"][..],
        &["monitor", "--print-rules"][..],
    ] {
        let out = run(&sim, args);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(stdout.contains(&expected), "{args:?}: {stdout}");
        assert!(!stdout.contains("namespace: default"), "{args:?}: {stdout}");
    }
    let out = infera(&["rbac"])
        .env("KUBECONFIG", sim.kubeconfig())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(&expected), "{stdout}");
    assert!(!stdout.contains("namespace: default"), "{stdout}");
    let out = infera(&["rbac", "-n", "other"])
        .env("KUBECONFIG", sim.kubeconfig())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(text(&out.stdout).contains("namespace: other\n"));
    sim.shutdown().await;
}
