//! The CI integrations in the repository root, exercised as CI would run
//! them, offline, with the binary Cargo built: the pre-commit hook
//! (`.pre-commit-hooks.yaml`: its `entry` with the staged files appended)
//! and the GitHub Action (`action.yml`: its lint step's `run` script, with
//! the `${{ … }}` expressions filled in as the runner would, writing
//! `infera.sarif` for the upload step, which must be valid SARIF 2.1.0).

use std::path::Path;
use std::process::Command;

use crate::common::case::root;
use crate::common::process::infera_bin;
use crate::lint_cli::assert_valid_sarif;

fn yaml(file: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// A manifest with one error finding (IR007: vLLM, no readiness probe) and
/// one clean one.
const BAD: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: v}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: v}}\n  template:\n    metadata: {labels: {app: v}}\n    spec: {containers: [{name: vllm, image: vllm/vllm-openai:v0.9.0, command: [vllm, serve, m]}]}\n";
const GOOD: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n";

fn fixture(dir: &Path) {
    std::fs::create_dir_all(dir.join("deploy")).unwrap();
    std::fs::write(dir.join("deploy/bad.yaml"), BAD).unwrap();
    std::fs::write(dir.join("deploy/good.yaml"), GOOD).unwrap();
}

#[test]
fn pre_commit_hook_runs_its_entry_on_the_staged_files() {
    let hooks = yaml(".pre-commit-hooks.yaml");
    let hook = hooks
        .as_array()
        .and_then(|h| h.iter().find(|h| h["id"] == "infera-lint"))
        .expect("hook infera-lint");
    assert_eq!(hook["language"], "rust", "pre-commit builds it with cargo");
    let files = regex_lite(hook["files"].as_str().unwrap());
    assert!(files("deploy/bad.yaml") && files("a.yml") && !files("README.md"));
    let entry: Vec<&str> = hook["entry"].as_str().unwrap().split_whitespace().collect();
    assert_eq!(entry[0], "infera", "the entry runs the installed binary");
    let tmp = tempfile::tempdir().unwrap();
    fixture(tmp.path());
    // pre-commit appends the matching staged files to the entry.
    let run = |files: &[&str]| {
        Command::new(infera_bin())
            .args(&entry[1..])
            .args(files)
            .current_dir(tmp.path())
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    let bad = run(&["deploy/bad.yaml", "deploy/good.yaml"]);
    let text = String::from_utf8_lossy(&bad.stdout);
    assert_eq!(bad.status.code(), Some(1), "{text}");
    assert!(
        text.contains("IR007") && text.contains("deploy/bad.yaml"),
        "{text}"
    );
    let good = run(&["deploy/good.yaml"]);
    assert_eq!(good.status.code(), Some(0));
}

/// The hook's `files` pattern as pre-commit applies it (a Python regex
/// searched in the path): the subset the hook uses, `\.(a|b)$`.
fn regex_lite(pattern: &str) -> impl Fn(&str) -> bool {
    let inner = pattern
        .strip_prefix("\\.(")
        .and_then(|p| p.strip_suffix(")$"))
        .unwrap_or_else(|| panic!("unexpected files pattern {pattern}"));
    let exts: Vec<String> = inner
        .split('|')
        .flat_map(|alt| match alt.split_once('?') {
            // `ya?ml` → yml, yaml
            Some((head, tail)) => {
                let short = format!("{}{tail}", &head[..head.len() - 1]);
                vec![format!("{head}{tail}"), short]
            }
            None => vec![alt.to_string()],
        })
        .collect();
    move |path: &str| exts.iter().any(|e| path.ends_with(&format!(".{e}")))
}

/// The `run` script of a step, with the expressions the runner fills in.
fn expand(script: &str, vars: &[(&str, &str)]) -> String {
    let mut out = script.to_string();
    for (name, value) in vars {
        out = out.replace(&format!("${{{{ {name} }}}}"), value);
    }
    assert!(!out.contains("${{"), "unexpanded expression in {out}");
    out
}

#[test]
fn github_action_lints_to_sarif_and_uploads_it() {
    let action = yaml("action.yml");
    assert_eq!(action["runs"]["using"], "composite");
    let steps = action["runs"]["steps"].as_array().unwrap();
    let step = |pred: &dyn Fn(&serde_json::Value) -> bool| {
        steps.iter().find(|s| pred(s)).cloned().expect("step")
    };
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let runner_temp = tmp.path().join("runner");
    fixture(&work);
    // The install step puts the binary in runner.temp/infera/bin; the
    // test puts the one Cargo built there instead of building again.
    let install = step(&|s| {
        s["run"]
            .as_str()
            .is_some_and(|r| r.contains("cargo install"))
    });
    let install = install["run"].as_str().unwrap();
    assert!(
        install.contains("--root \"${{ runner.temp }}/infera\""),
        "{install}"
    );
    let bin = runner_temp.join("infera/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(infera_bin(), bin.join("infera")).unwrap();
    let lint = step(&|s| s["id"] == "lint");
    let defaults = |input: &str| {
        action["inputs"][input]["default"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let output_file = tmp.path().join("github_output");
    let script = expand(
        lint["run"].as_str().unwrap(),
        &[
            ("runner.temp", runner_temp.to_str().unwrap()),
            ("inputs.paths", "deploy"),
            ("inputs.fail-on", &defaults("fail-on")),
        ],
    );
    assert!(script.contains("--format sarif") && script.contains("> infera.sarif"));
    let status = Command::new("bash")
        .args(["-e", "-c", &script])
        .current_dir(&work)
        .env("GITHUB_OUTPUT", &output_file)
        .env("NO_COLOR", "1")
        .status()
        .unwrap();
    assert!(status.success(), "the lint step itself must not fail");
    let outputs = std::fs::read_to_string(&output_file).unwrap();
    assert_eq!(
        outputs.trim(),
        "status=1",
        "error findings → the last step fails"
    );
    let upload = step(&|s| {
        s["uses"]
            .as_str()
            .is_some_and(|u| u.starts_with("github/codeql-action/upload-sarif@"))
    });
    let sarif_file = upload["with"]["sarif_file"].as_str().unwrap();
    let sarif: serde_json::Value =
        serde_json::from_slice(&std::fs::read(work.join(sarif_file)).unwrap()).unwrap();
    assert_valid_sarif(&sarif);
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert!(
        results.iter().any(|r| r["ruleId"] == "IR007"),
        "{results:?}"
    );
    let fail = step(&|s| {
        s["run"]
            .as_str()
            .is_some_and(|r| r.contains("steps.lint.outputs.status"))
    });
    assert!(fail["run"].as_str().unwrap().starts_with("exit"));
}
