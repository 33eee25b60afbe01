//! GitOps-aware triggers on the embedded simulator, with the
//! `pd-1p1d-gitops` scenario: a simulated Flux kustomize-controller
//! server-side applies `idep/llama` (field manager `kustomize-controller`,
//! Flux's labels) and re-applies it 20 s (scenario time) after a field it
//! applies drifts. The real binary is driven over HTTPS with the
//! simulator's kubeconfig; `-o json` gives the events as JSON lines.

use std::process::Output;
use std::time::{Duration, Instant};

use infera_sim::RunningSim;
use infera_sim_core::kind::Kind;
use serde_json::Value;

use crate::common::sim::Sim;

const SPEED: f64 = 100.0;
const NEW_IMAGE: &str = "rocm/infera:0.9.2";
const OLD_IMAGE: &str = "rocm/infera:0.9.1";

/// The scenario running, steady, and the self-healer's first apply done.
async fn start() -> Sim {
    let s = Sim::start("pd-1p1d-gitops", SPEED).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while managers(&idep(&s))
        .iter()
        .all(|m| m != "kustomize-controller")
    {
        assert!(Instant::now() < deadline, "the self-healer never applied");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    s
}

fn idep(sim: &RunningSim) -> Value {
    sim.store()
        .get(Kind::InferaDeployment, Some(&sim.namespace()), "llama")
        .unwrap_or_else(|| panic!("no idep/llama"))
}

fn managers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(|e| e.get("manager").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn decode_image(obj: &Value) -> String {
    obj.pointer("/spec/services/decode/image")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

async fn infera(s: &Sim, args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_infera"))
        .args(args)
        .arg("--kubeconfig")
        .arg(&s.kubeconfig)
        .env_remove("KUBECONFIG")
        .output()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_names_the_manager_and_refuses_a_change_it_would_revert() {
    let s = start().await;
    let set_image = [
        "rollout",
        "set-image",
        "idep/llama",
        NEW_IMAGE,
        "--service",
        "decode",
        "--yes",
    ];
    let out = infera(&s, &set_image).await;
    let all = text(&out);
    assert_eq!(out.status.code(), Some(3), "{all}");
    for expected in [
        "GitOps: Flux (kustomize-controller) manages idep/llama (label kustomize.toolkit.fluxcd.io/name=llama",
        "services.decode.image is applied by kustomize-controller: with self-heal / drift correction its next sync puts the old value back",
        "`flux suspend kustomization llama -n flux-system`",
        "Stopping before any change: Flux (kustomize-controller) would revert it mid-roll",
    ] {
        assert!(all.contains(expected), "missing {expected:?} in:\n{all}");
    }
    assert_eq!(decode_image(&idep(&s)), OLD_IMAGE, "nothing changed");

    // A restart sets a label the manifest does not carry: named, not refused.
    let out = infera(&s, &["rollout", "restart", "idep/llama", "--dry-run"]).await;
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(
        all.contains("services.decode.podLabels[\"infera.amd.com/restarted-at\"] is not a field Flux applies: a sync keeps it"),
        "{all}"
    );
    assert!(
        all.contains("infera watches idep/llama and stops if the change is reverted"),
        "{all}"
    );
    s.shutdown().await;
}

/// Every line of `-o json` output, parsed.
fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: not JSON: {l}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_change_reverted_by_the_manager_is_named_and_stops_safely() {
    let s = start().await;
    let report = s.dir.path().join("report.json");
    let report_arg = report.to_string_lossy().to_string();
    let args = [
        "rollout",
        "set-image",
        "idep/llama",
        NEW_IMAGE,
        "--yes",
        "--force",
        "-o",
        "json",
        "--report",
        &report_arg,
    ];
    let out = infera(&s, &args).await;
    let all = text(&out);
    assert_eq!(out.status.code(), Some(3), "{all}");
    let lines = json_lines(&out);
    assert_eq!(lines[0]["event"], "plan", "{all}");
    assert_eq!(lines[0]["gitops"]["managers"][0], "kustomize-controller");
    assert_eq!(lines[0]["refuses"], true);
    // Each role's serving pods now, as the plan's `Serving now` line.
    let serving = lines[0]["serving_now"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(serving.len(), 2, "{all}");
    for role in serving {
        assert_eq!(
            (&role["ready"], &role["routable"]),
            (&1.into(), &1.into()),
            "{all}"
        );
        assert_eq!(role["below_floor"], false, "{all}");
    }
    let result = lines.last().cloned().unwrap_or_default();
    assert_eq!(result["event"], "result", "{all}");
    assert_eq!(result["exit"], 3);
    assert_eq!(result["report"]["outcome"], "reverted", "{all}");

    // Named, with the time since infera set it.
    let events: Vec<String> = lines
        .iter()
        .filter(|l| l["event"] == "event")
        .map(|l| {
            format!(
                "{}: {}",
                l["leg"].as_str().unwrap_or(""),
                l["text"].as_str().unwrap_or("")
            )
        })
        .collect();
    let reverted = events
        .iter()
        .find(|e| e.contains("REVERTED"))
        .unwrap_or_else(|| panic!("no REVERTED event:\n{all}"));
    let expected = format!(
        "decode: REVERTED: services.decode.image was reset to \"{OLD_IMAGE}\" by kustomize-controller "
    );
    assert!(reverted.starts_with(&expected), "{reverted}");
    assert!(
        reverted.contains("after infera set it; stopping: no further leg"),
        "{reverted}"
    );
    // Stopped: the prefill leg was never triggered.
    assert!(
        !events
            .iter()
            .any(|e| e.starts_with("prefill: trigger applied")),
        "{events:#?}"
    );

    // Safe: every role kept a Ready and routable pod at every instant.
    let roles = result["report"]["roles"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(roles.len(), 2, "{all}");
    for r in &roles {
        assert_eq!(r["min_ready_exact"], 1, "{r}");
        assert_eq!(r["min_routable_exact"], 1, "{r}");
    }
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file, result["report"], "the file is the same report");

    // The object: Git's image, no in-flight record, the outcome in history.
    let live = idep(&s);
    assert_eq!(decode_image(&live), OLD_IMAGE);
    let annotations = live
        .pointer("/metadata/annotations")
        .cloned()
        .unwrap_or_default();
    assert!(
        annotations
            .get(infera_rollout::record::IN_FLIGHT_ANNOTATION)
            .is_none(),
        "{annotations}"
    );
    let history = infera(&s, &["rollout", "history", "idep/llama", "-o", "json"]).await;
    let entries: Value = serde_json::from_slice(&history.stdout).unwrap_or_default();
    assert_eq!(entries[0]["outcome"], "reverted", "{}", text(&history));
    s.shutdown().await;
}
