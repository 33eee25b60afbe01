//! Helm charts and Kustomize directories (`infera_model::manifest::render`):
//! rendered by the real tools (helm.sh/helm/v4 built by `lab/helm/build`,
//! kubectl's kustomize), each finding placed in the template file and line
//! its object came from, in every format; without the tool, the directory
//! is named as skipped with the command that renders it, and the exit code
//! says nothing was wrong with the input.

use std::path::{Path, PathBuf};

use crate::common::case::{infera, root};

const CHART: &str = "tests/data/charts/vllm-worker";
const TEMPLATE: &str = "tests/data/charts/vllm-worker/templates/deployment.yaml";

/// The helm of `lab/helm/build` (`INFERA_HELM`). Skipped, saying why, when
/// it is not set, unless `INFERA_HELM_REQUIRED` is (CI).
fn helm() -> Option<String> {
    let found = std::env::var("INFERA_HELM")
        .ok()
        .filter(|p| Path::new(p).is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("INFERA_HELM_REQUIRED").is_none(),
            "INFERA_HELM_REQUIRED is set but INFERA_HELM names no helm: export INFERA_HELM=$(lab/helm/build | tail -n1)"
        );
        eprintln!(
            "skipping: INFERA_HELM is not set (export INFERA_HELM=$(lab/helm/build | tail -n1))"
        );
    }
    found
}

/// A kubectl with kustomize: the lab's when `INFERA_LAB_BIN` is set, else
/// the one on `PATH`. Skipped, saying why, when there is none, unless
/// `INFERA_LAB_REQUIRED` is.
fn kubectl() -> Option<PathBuf> {
    let lab = std::env::var_os("INFERA_LAB_BIN").map(|d| PathBuf::from(d).join("kubectl"));
    let on_path = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file());
    let found = lab.filter(|p| p.is_file()).or(on_path);
    if found.is_none() {
        assert!(
            std::env::var_os("INFERA_LAB_REQUIRED").is_none(),
            "INFERA_LAB_REQUIRED is set but there is no kubectl: run lab/build"
        );
        eprintln!("skipping: no kubectl (install kubernetes-client or export INFERA_LAB_BIN)");
    }
    found
}

/// The 1-based line of `file` (from the repository root) holding `text`.
fn line_of(file: &str, text: &str) -> usize {
    let body = std::fs::read_to_string(root().join(file)).expect("read");
    let hits: Vec<usize> = body
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(text))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(hits.len(), 1, "{text:?} once in {file}");
    hits[0]
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).expect("stdout is JSON")
}

#[test]
fn chart_findings_name_the_template_file_and_line_in_every_format() {
    let Some(helm) = helm() else { return };
    let line = line_of(TEMPLATE, "- name: vllm");
    let out = infera(&["lint", CHART, "--helm", &helm, "-o", "json"])
        .status(1)
        .run();
    let v = json(&out);
    assert_eq!(
        v["errors"],
        serde_json::json!([]),
        "no template read as YAML"
    );
    let findings = v["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 1, "{out}");
    let f = &findings[0];
    assert_eq!(f["code"], "IR007");
    assert_eq!(f["file"], TEMPLATE);
    assert_eq!(f["line"], line);
    assert_eq!(
        f["fix"]["edits"],
        serde_json::json!([]),
        "text edits of the rendered stream would land on the wrong template lines"
    );
    assert_eq!(
        f["fix"]["changes"][0]["path"],
        "/spec/template/spec/containers/0/readinessProbe"
    );
    assert_eq!(v["summary"]["files"], 2, "deployment.yaml and service.yaml");

    let at = format!("{TEMPLATE}:{line}:");
    infera(&["lint", CHART, "--helm", &helm])
        .status(1)
        .stdout(&at)
        .stdout("- name: vllm") // the code frame shows the template's line
        .run();
    infera(&["lint", CHART, "--helm", &helm, "-o", "github"])
        .status(1)
        .stdout(&format!("file={TEMPLATE},line={line},"))
        .run();
    let sarif = json(
        &infera(&["lint", CHART, "--helm", &helm, "-o", "sarif"])
            .status(1)
            .run(),
    );
    crate::lint_cli::assert_valid_sarif(&sarif);
    let location = &sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], TEMPLATE);
    assert_eq!(location["region"]["startLine"], line);
}

/// `helm template CHART | infera lint -`, the command a skipped chart's
/// note suggests: the chart is found under the working directory by the
/// name Helm's `# Source:` gives, and the findings point at the template
/// file and line, as `infera lint CHART` does. From a directory that does
/// not hold the chart, they stay on stdin's own lines.
#[test]
fn helm_template_on_stdin_points_at_the_template() {
    let Some(helm) = helm() else { return };
    let rendered = std::process::Command::new(&helm)
        .args(["template", CHART])
        .current_dir(root())
        .output()
        .expect("run helm template");
    assert!(rendered.status.success(), "{rendered:?}");
    let stream = String::from_utf8_lossy(&rendered.stdout).into_owned();
    let as_dir = json(
        &infera(&["lint", CHART, "--helm", &helm, "-o", "json"])
            .status(1)
            .run(),
    );
    let piped = json(
        &infera(&["lint", "-", "-o", "json"])
            .stdin(&stream)
            .cwd(root())
            .status(1)
            .run(),
    );
    let place = |v: &serde_json::Value| {
        v["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|f| (f["code"].clone(), f["file"].clone(), f["line"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(place(&piped), place(&as_dir), "{piped}");
    assert_eq!(piped["findings"][0]["file"], TEMPLATE);

    let elsewhere = tempfile::tempdir().expect("tempdir");
    let unplaced = json(
        &infera(&["lint", "-", "-o", "json"])
            .stdin(&stream)
            .cwd(elsewhere.path())
            .status(1)
            .run(),
    );
    assert_eq!(unplaced["findings"][0]["code"], "IR007");
    assert_eq!(unplaced["findings"][0]["file"], "-");
}

#[test]
fn values_and_set_pass_through_to_helm() {
    let Some(helm) = helm() else { return };
    infera(&[
        "lint",
        CHART,
        "--helm",
        &helm,
        "--set",
        "readinessProbe=true",
    ])
    .status(0)
    .stdout("No findings in 2 files")
    .run();
    let dir = tempfile::tempdir().expect("tempdir");
    let values = dir.path().join("probe.yaml");
    std::fs::write(&values, "readinessProbe: true\n").expect("write");
    infera(&["lint", CHART, "--helm", &helm, "--values"])
        .arg(&values)
        .status(0)
        .stdout("No findings in 2 files")
        .run();
    // As in helm, --set wins over --values.
    infera(&["lint", CHART, "--helm", &helm, "--set", "port=7080"])
        .arg("--values")
        .arg(&values)
        .arg("--set")
        .arg("readinessProbe=false")
        .status(1)
        .stdout("httpGet /health on port 7080 (--port 7080)")
        .run();
}

#[test]
fn a_chart_helm_cannot_render_is_an_input_error_naming_it() {
    let Some(helm) = helm() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let chart = dir.path().join("needs-model");
    std::fs::create_dir_all(chart.join("templates")).expect("mkdir");
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: needs-model\nversion: 0.1.0\n",
    )
    .expect("write");
    std::fs::write(
        chart.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ required \"set .Values.model\" .Values.model }}\n",
    )
    .expect("write");
    let ok = dir.path().join("ok.yaml");
    std::fs::write(
        &ok,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .expect("write");
    infera(&["lint", "--helm", &helm])
        .arg(dir.path())
        .status(2)
        .stderr("needs-model: a Helm chart could not be rendered")
        .stderr("set .Values.model")
        .run();
    infera(&["lint", "--helm", &helm, "--set", "model=m"])
        .arg(dir.path())
        .status(0)
        .stdout("No findings in 2 files")
        .run();
}

#[test]
fn without_helm_a_chart_is_skipped_with_the_command_that_renders_it() {
    let empty = tempfile::tempdir().expect("tempdir");
    let path = empty.path().to_str().expect("utf-8 path");
    let command = format!("helm template {CHART} --set replicas=2 | infera lint -");
    let run = |format: &str| {
        infera(&[
            "lint",
            "tests/data/charts",
            "--set",
            "replicas=2",
            "-o",
            format,
        ])
        .env_remove("INFERA_HELM")
        .env("PATH", path)
        .status(0)
        .stdout(&command)
        .stdout_lacks("invalid YAML")
        .stderr_empty()
        .run()
    };
    let human = run("human");
    assert!(
        human.contains(&format!(
            "skipped: {CHART} (a Helm chart, and no helm on PATH (--helm or INFERA_HELM)"
        )),
        "{human}"
    );
    let v = json(&run("json"));
    assert_eq!(v["summary"]["skipped_inputs"][0]["path"], CHART);
    assert_eq!(v["summary"]["skipped_inputs"][0]["command"], command);
    assert_eq!(v["summary"]["input_errors"], 0);
    assert!(run("github").starts_with("::notice title=infera lint::skipped: "));
    let sarif = json(&run("sarif"));
    crate::lint_cli::assert_valid_sarif(&sarif);
    let notes = &sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"];
    assert_eq!(notes[0]["level"], "note");
    assert_eq!(
        sarif["runs"][0]["invocations"][0]["executionSuccessful"],
        true
    );
}

#[test]
fn a_kustomize_overlay_is_rendered_and_findings_name_the_base_file() {
    let Some(kubectl) = kubectl() else { return };
    let base = "tests/data/kustomize/base/deployment.yaml";
    let out = infera(&[
        "lint",
        "tests/data/kustomize/overlay",
        "-o",
        "json",
        "--kubectl",
    ])
    .arg(&kubectl)
    .status(1)
    .run();
    let v = json(&out);
    let f = &v["findings"][0];
    assert_eq!(f["code"], "IR007", "{out}");
    assert_eq!(f["object"]["name"], "prod-vllm", "the overlay's prefix");
    assert_eq!(f["file"], base, "from config.kubernetes.io/origin");
    // kustomize rewrites the YAML (keys sorted, flow to block): the
    // container's own line has no literal twin, so the finding lands on
    // the nearest line before it that has one.
    assert_eq!(f["line"], line_of(base, "containers:"));
    // Linting the base directory itself renders it too (it holds a
    // kustomization.yaml): no origin annotation, so the kustomization is named.
    let out = infera(&[
        "lint",
        "tests/data/kustomize/base",
        "-o",
        "json",
        "--kubectl",
    ])
    .arg(&kubectl)
    .status(1)
    .run();
    assert_eq!(
        json(&out)["findings"][0]["file"],
        "tests/data/kustomize/base/kustomization.yaml"
    );
}
