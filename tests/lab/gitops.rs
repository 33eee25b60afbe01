//! GitOps-aware triggers on the upstream lab (real kube-apiserver v1.37.2:
//! real managedFields and server-side apply), with `infera sim attach
//! --scenario pd-1p1d-gitops` bringing the self-healing
//! `kustomize-controller`. The same three runs as `tests/sim/rollout_gitops.rs`
//! checks on the embedded sim: `set-image` refused (exit 3, the manager
//! named), forced and reverted (named, outcome `reverted`, every role kept a
//! Ready and routable pod), and a restart (a label the manifest does not
//! set: kept by the server-side apply, complete). Skips with the reason
//! without the lab (see `tests/lab/main.rs`).

use std::process::Output;

use crate::common::lab::{Attached, SCENARIO_NAMESPACE, lab_or_skip, wait_steady};
use serde_json::Value;

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn result_line(out: &Output) -> Value {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .rfind(|v| v["event"] == "result")
        .unwrap_or_default()
}

#[test]
fn gitops_revert_on_the_lab() {
    let Some(lab) = lab_or_skip("gitops_revert_on_the_lab") else {
        return;
    };
    let attached = Attached::start(&lab, "pd-1p1d-gitops");
    wait_steady(&lab, SCENARIO_NAMESPACE, 3);
    let run = |args: &[&str]| {
        let mut all = vec!["rollout"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-n", SCENARIO_NAMESPACE, "--yes", "--stall-after", "20s"]);
        lab.infera(&all).output().expect("run infera in the lab")
    };
    let set_image = [
        "set-image",
        "idep/llama",
        "rocm/infera:0.9.2",
        "--service",
        "decode",
    ];

    let refused = run(&set_image);
    let all = text(&refused);
    assert_eq!(refused.status.code(), Some(3), "{all}");
    assert!(
        all.contains("services.decode.image is applied by kustomize-controller"),
        "{all}"
    );

    let mut forced_args = set_image.to_vec();
    forced_args.extend_from_slice(&["--force", "-o", "json"]);
    let forced = run(&forced_args);
    let all = text(&forced);
    eprintln!("forced set-image on the lab:\n{all}");
    assert_eq!(forced.status.code(), Some(3), "{all}");
    assert!(
        all.contains(
            "REVERTED: services.decode.image was reset to \\\"rocm/infera:0.9.1\\\" by kustomize-controller"
        ),
        "{all}"
    );
    let result = result_line(&forced);
    assert_eq!(result["report"]["outcome"], "reverted", "{all}");
    for r in result["report"]["roles"].as_array().into_iter().flatten() {
        assert_eq!(r["min_ready_exact"], 1, "{r}");
        assert_eq!(r["min_routable_exact"], 1, "{r}");
    }

    let restart = run(&["restart", "idep/llama", "-o", "json"]);
    let all = text(&restart);
    eprintln!("restart on the lab:\n{all}");
    assert_eq!(restart.status.code(), Some(0), "{all}");
    let plan: Value = String::from_utf8_lossy(&restart.stdout)
        .lines()
        .next()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_default();
    assert_eq!(
        plan["gitops"]["managers"][0], "kustomize-controller",
        "{all}"
    );
    assert_eq!(plan["gitops"]["refuses"], false, "{all}");
    assert_eq!(
        plan["gitops"]["fields"][0]["applied_by"],
        Value::Null,
        "{all}"
    );
    assert_eq!(result_line(&restart)["report"]["outcome"], "complete");
    drop(attached);
}
