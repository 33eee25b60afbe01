//! `--operator GENERATION` on `infera lint` and `infera render`, and the
//! `operator` key of `.infera-lint.yaml` they fall back on.

use crate::common::case::{infera, root};

/// The Infera operator's own sample: a server and two single-replica
/// workers, all flat fields.
const SAMPLE: &str = "tests/fixtures/infera_v1alpha1_inferadeployment.yaml";

/// The rendered objects of `infera render -o json` (run in `cwd`).
fn render(extra: &[&str], cwd: &std::path::Path) -> Vec<serde_json::Value> {
    let sample = root().join(SAMPLE);
    let mut args = vec!["render", "-o", "json"];
    args.extend_from_slice(extra);
    let out = infera(&args).arg(&sample).cwd(cwd).status(0).run();
    let list: serde_json::Value = serde_json::from_str(&out).expect("a JSON List");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// (maxSurge, readiness probe path) of every worker Deployment.
fn workers(items: &[serde_json::Value]) -> Vec<(serde_json::Value, serde_json::Value)> {
    items
        .iter()
        .filter(|o| o["kind"] == "Deployment")
        .filter(|o| o["spec"]["strategy"]["rollingUpdate"]["maxSurge"].is_number())
        .map(|o| {
            let c = &o["spec"]["template"]["spec"]["containers"][0];
            (
                o["spec"]["strategy"]["rollingUpdate"]["maxSurge"].clone(),
                c["readinessProbe"]["httpGet"]["path"].clone(),
            )
        })
        .collect()
}

#[test]
fn render_follows_flag_then_config_then_latest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pre = vec![(0.into(), "/health".into()); 2];
    let latest = vec![(1.into(), "/ready".into()); 2];
    assert_eq!(
        workers(&render(&[], dir.path())),
        latest,
        "latest by default"
    );
    assert_eq!(
        workers(&render(&["--operator", "pre-176"], dir.path())),
        pre
    );
    std::fs::write(dir.path().join(".infera-lint.yaml"), "operator: pre-176\n").expect("write");
    assert_eq!(workers(&render(&[], dir.path())), pre, "the config key");
    assert_eq!(
        workers(&render(&["--operator", "latest"], dir.path())),
        latest,
        "the flag wins over the config"
    );
    let kinds: Vec<_> = render(&[], dir.path())
        .iter()
        .filter(|o| o["metadata"]["name"] == "demo-disc")
        .map(|o| o["kind"].clone())
        .collect();
    assert_eq!(kinds, ["ServiceAccount", "Role", "RoleBinding"]);
}

#[test]
fn lint_reports_the_pre_176_gap() {
    // Clean on the latest operator; before #176 both single-replica workers gap.
    infera(&["lint", SAMPLE]).status(0).run();
    let out = infera(&["lint", "--operator", "pre-176", "--format", "json", SAMPLE])
        .status(1)
        .run();
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let codes: Vec<_> = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| (f["code"].clone(), f["severity"].clone()))
        .collect();
    assert_eq!(codes, vec![("IR008".into(), "error".into()); 2], "{out}");
    infera(&["lint", "--operator", "175", SAMPLE])
        .status(2)
        .stderr("pre-176")
        .run();
}
