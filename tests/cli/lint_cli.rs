//! `infera lint` / `infera rules` at the command line: a table of cases
//! (arguments, stdin, expected stdout/stderr and exit status), golden files
//! for every output format, and SARIF schema validation.
//!
//! Golden files live in `tests/golden/`; rewrite them with
//! `UPDATE_GOLDEN=1 cargo test --test cli lint_cli`. Every command runs from the
//! project root with paths relative to it, so the paths in the output are
//! stable.

use infera_lint::engine::summary::{InputError, LintSummary};
use infera_lint::engine::{LintOutcome, RuleMeta};
use infera_lint::finding::{Finding, ObjectRef, Severity};

use crate::common::case::{infera, root};

// ---------------------------------------------------------------------------
// SARIF against the 2.1.0 schema
// ---------------------------------------------------------------------------

pub(crate) fn sarif_validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join("tests/data/sarif-schema-2.1.0.json"))
        .expect("schema file");
    let schema: serde_json::Value = serde_json::from_str(&text).expect("schema JSON");
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft7)
        .should_validate_formats(true)
        .build(&schema)
        .expect("compile SARIF schema offline")
}

pub(crate) fn assert_valid_sarif(doc: &serde_json::Value) {
    let validator = sarif_validator();
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "SARIF invalid: {errors:#?}\n{doc:#}");
}

const RULES: &[RuleMeta] = &[RuleMeta {
    code: "IR001",
    name: "skip-probe-serving",
    default_severity: Severity::Error,
    summary: "skipReadinessProbe on a serving worker",
    doc: "## What it does\nFlags it.\n\n## Why is this bad?\nGap.\n",
}];

fn hand_built_outcome() -> LintOutcome {
    let object = ObjectRef {
        kind: "InferaDeployment".into(),
        name: "pd".into(),
        namespace: None,
        service: Some("decode".into()),
    };
    let finding = |file: &str, line, column| Finding {
        code: "IR001",
        name: "skip-probe-serving",
        severity: Severity::Error,
        message: "decode will have no serving pod".into(),
        file: file.into(),
        line,
        column,
        object: object.clone(),
        fix: None,
    };
    LintOutcome {
        findings: vec![
            finding("recipes/a b.yaml", 3, 5),
            finding("cluster", 0, 0),
            finding("-", 1, 1),
        ],
        input_errors: vec![InputError {
            file: "bad.yaml".into(),
            line: None,
            column: None,
            message: "not YAML".into(),
        }],
        summary: LintSummary::default(),
        sources: Default::default(),
    }
}

#[test]
fn sarif_schema_rejects_an_invalid_log() {
    // The validator must be able to fail, or the tests below prove nothing.
    let bad = serde_json::json!({"version": "2.1.0", "runs": [{"tool": {"driver": {}}}]});
    assert!(!sarif_validator().is_valid(&bad));
    // Formats are checked too: a URI with a raw space is not a uri-reference.
    let mut doc = serde_json::to_value(infera_lint::report::sarif::to_sarif(
        &hand_built_outcome(),
        RULES,
        None,
    ))
    .expect("serialize");
    doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] =
        "a b%zz".into();
    assert!(!sarif_validator().is_valid(&doc));
}

#[test]
fn sarif_of_hand_built_findings_is_valid() {
    let sarif = infera_lint::report::sarif::to_sarif(&hand_built_outcome(), RULES, None);
    assert_valid_sarif(&serde_json::to_value(sarif).expect("serialize"));
}

// ---------------------------------------------------------------------------
// Fixtures (paths relative to the project root, so output paths are stable)
// ---------------------------------------------------------------------------

const PD: &str = "tests/golden/input/pd-skip-probe.yaml";
const PLAIN: &str = "tests/golden/input/plain-deployments.yaml";
const BROKEN: &str = "tests/golden/input/broken.yaml";
const OPERATOR_SAMPLE: &str = "tests/fixtures/infera_v1alpha1_inferadeployment.yaml";

fn fixture_text(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).expect("fixture")
}

// ---------------------------------------------------------------------------
// Golden output of every format
// ---------------------------------------------------------------------------

#[test]

fn golden_human() {
    infera(&["lint", PD, PLAIN])
        .status(1)
        .stdout("error[IR001]")
        .stdout("--> tests/golden/input/pd-skip-probe.yaml:")
        .stdout_lacks("\u{1b}[")
        .stderr_empty()
        .golden("human.txt")
        .run();
}

#[test]

fn golden_json() {
    let out = infera(&["lint", "--format", "json", PD, PLAIN])
        .status(1)
        .stderr_empty()
        .golden("json.json")
        .run();
    let v: serde_json::Value = serde_json::from_str(&out).expect("stdout is JSON");
    let first = &v["findings"][0];
    for key in [
        "code", "name", "severity", "message", "file", "line", "column",
    ] {
        assert!(!first[key].is_null(), "finding lacks {key}: {first}");
    }
    for key in ["kind", "name", "namespace", "service"] {
        assert!(
            first["object"].get(key).is_some(),
            "object lacks {key}: {first}"
        );
    }
    assert_eq!(v["errors"], serde_json::json!([]));
    assert_eq!(v["summary"]["files"], 2);
    // Rules that say what to write carry it as data.
    let fix = &first["fix"];
    for key in ["description", "document", "changes", "edits"] {
        assert!(!fix[key].is_null(), "fix lacks {key}: {first}");
    }
    assert!(
        fix["changes"][0]["path"]
            .as_str()
            .is_some_and(|p| p.starts_with("/spec/"))
    );
}

#[test]
fn thread_count_does_not_change_the_report() {
    for threads in [["-j", "1"], ["--threads", "2"]] {
        infera(&[
            "lint", "--format", "json", threads[0], threads[1], PD, PLAIN,
        ])
        .status(1)
        .stderr_empty()
        .golden("json.json")
        .run();
    }
}

#[test]

fn golden_sarif_is_schema_valid() {
    let out = infera(&["lint", "-o", "sarif", PD, PLAIN])
        .status(1)
        .stderr_empty()
        .golden("sarif.json")
        .run();
    let doc: serde_json::Value = serde_json::from_str(&out).expect("stdout is JSON");
    assert_valid_sarif(&doc);
    let run = &doc["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().expect("rules");
    assert!(rules.len() >= 12, "every rule of the registry is described");
    for r in run["results"].as_array().expect("results") {
        let index = r["ruleIndex"].as_u64().expect("ruleIndex") as usize;
        assert_eq!(rules[index]["id"], r["ruleId"]);
        let loc = &r["locations"][0]["physicalLocation"];
        assert!(loc["region"]["startLine"].as_u64().unwrap_or(0) >= 1);
        let uri = loc["artifactLocation"]["uri"].as_str().expect("uri");
        assert!(uri.starts_with("tests/golden/input/"), "{uri}");
        // Every finding of the golden input has a fix: one change of its file.
        let change = &r["fixes"][0]["artifactChanges"][0];
        assert_eq!(change["artifactLocation"]["uri"], uri, "{r}");
        assert!(change["replacements"][0]["deletedRegion"]["startLine"].as_u64() >= Some(1));
    }
}

#[test]

fn golden_github() {
    let out = infera(&["lint", "--format", "github", PD, PLAIN])
        .status(1)
        .stdout("::error file=tests/golden/input/pd-skip-probe.yaml,line=")
        .stdout(",title=IR001 skip-probe-serving::")
        .golden("github.txt")
        .run();
    for line in out.lines() {
        assert!(
            line.starts_with("::error ") || line.starts_with("::warning "),
            "every line is a workflow command: {line}"
        );
    }
}

#[test]

fn sarif_with_input_errors_is_valid_and_says_so() {
    let out = infera(&["lint", "-o", "sarif", BROKEN, PD]).status(2).run();
    let doc: serde_json::Value = serde_json::from_str(&out).expect("stdout is JSON");
    assert_valid_sarif(&doc);
    let invocation = &doc["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false);
    assert!(
        !doc["runs"][0]["results"]
            .as_array()
            .expect("results")
            .is_empty()
    );
}

// ---------------------------------------------------------------------------
// Exit codes, selection, input errors
// ---------------------------------------------------------------------------

#[test]

fn exit_codes_follow_fail_on() {
    // 1: errors at the default --fail-on error.
    infera(&["lint", PD]).status(1).stdout("IR001").run();
    // 0: the same findings, but nothing fails the run.
    infera(&["lint", "--fail-on", "never", PD])
        .status(0)
        .stdout("IR001")
        .run();
    // 0: the operator's own sample raises no error.
    infera(&["lint", OPERATOR_SAMPLE]).status(0).run();
    // 0: only skipped kinds.
    infera(&["lint", "-"])
        .stdin("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
        .status(0)
        .stdout("No findings in 1 file (0 objects).")
        .run();
}

#[test]

fn bad_yaml_among_good_files_still_lints_the_others_and_exits_2() {
    let out = infera(&["lint", "--format", "json", BROKEN, PD])
        .status(2)
        .stderr("error: tests/golden/input/broken.yaml:")
        .run();
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON despite the bad file");
    assert!(
        v["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .any(|f| f["code"] == "IR001" && f["file"] == PD),
        "the good file's findings are still reported: {v:#}"
    );
    assert_eq!(v["errors"][0]["file"], BROKEN);
    assert!(
        v["errors"][0]["line"].as_u64().is_some(),
        "bad YAML has a line: {v:#}"
    );
    // Human format: findings on stdout, the error on stderr, exit 2 even
    // with --fail-on never.
    infera(&["lint", "--fail-on", "never", BROKEN, PD])
        .status(2)
        .stdout("error[IR001]")
        .stderr("broken.yaml:")
        .run();
}

#[test]

fn stdin_is_linted_as_dash() {
    infera(&["lint", "--format", "github", "-"])
        .stdin(&fixture_text(PD))
        .status(1)
        .stdout("::error file=-,line=")
        .run();
}

#[test]

fn select_and_ignore_take_codes_or_names() {
    infera(&["lint", "--select", "IR008", PD, PLAIN])
        .status(1)
        .stdout("IR008")
        .stdout_lacks("IR001")
        .run();
    infera(&["lint", "--ignore", "skip-probe-serving", PD])
        .stdout_lacks("IR001")
        .run();
    infera(&[
        "lint",
        "--select",
        "IR001,single-replica-gap",
        "--ignore",
        "IR001",
        PD,
        PLAIN,
    ])
    .status(1)
    .stdout("IR008")
    .stdout_lacks("[IR001]")
    .run();
}

#[test]

fn unknown_rule_is_a_usage_error_naming_it() {
    infera(&["lint", "--select", "IR999", PD])
        .status(2)
        .stderr("unknown rule `IR999` in --select")
        .run();
    infera(&["lint", "--ignore", "no-such-rule", PD])
        .status(2)
        .stderr("unknown rule `no-such-rule` in --ignore")
        .run();
}

#[test]

fn missing_file_is_an_input_error() {
    infera(&["lint", "tests/golden/input/does-not-exist.yaml", PD])
        .status(2)
        .stdout("IR001")
        .stderr("does-not-exist.yaml")
        .run();
}

#[test]

fn default_path_is_the_current_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("pd.yaml"), fixture_text(PD)).expect("write");
    infera(&["lint"])
        .cwd(dir.path())
        .status(1)
        .stdout("pd.yaml")
        .stdout("IR001")
        .run();
}

// ---------------------------------------------------------------------------
// Colour
// ---------------------------------------------------------------------------

#[test]

fn colour_never_when_piped_or_no_color() {
    // Not a TTY (assert_cmd pipes stdout), NO_COLOR unset: plain.
    infera(&["lint", PD])
        .env_remove("NO_COLOR")
        .status(1)
        .stdout_lacks("\u{1b}[")
        .run();
    // Forced colour shows escape codes...
    infera(&["lint", PD])
        .env_remove("NO_COLOR")
        .env("CLICOLOR_FORCE", "1")
        .status(1)
        .stdout("\u{1b}[")
        .run();
    // ...unless NO_COLOR is set, which wins.
    infera(&["lint", PD])
        .env("CLICOLOR_FORCE", "1")
        .status(1)
        .stdout_lacks("\u{1b}[")
        .run();
}

// ---------------------------------------------------------------------------
// Config file
// ---------------------------------------------------------------------------

/// A temp project with `.infera-lint.yaml` and the PD fixture in it; the
/// commands run from a subdirectory so discovery has to walk upward.
fn project_with_config(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(".infera-lint.yaml"), config).expect("config");
    std::fs::create_dir_all(dir.path().join("recipes/sub")).expect("mkdir");
    std::fs::write(dir.path().join("recipes/pd.yaml"), fixture_text(PD)).expect("fixture");
    dir
}

#[test]

fn config_found_upward_disables_rules() {
    let dir = project_with_config("disable: [IR001]\n");
    infera(&["lint", "../pd.yaml"])
        .cwd(&dir.path().join("recipes/sub"))
        .status(0)
        .stdout_lacks("IR001")
        .run();
}

#[test]

fn config_changes_severity_and_flags_win() {
    let dir = project_with_config("severity:\n  skip-probe-serving: warning\n");
    let cwd = dir.path().join("recipes");
    infera(&["lint", "pd.yaml"])
        .cwd(&cwd)
        .status(0)
        .stdout("warning[IR001]")
        .run();
    infera(&["lint", "--fail-on", "warning", "pd.yaml"])
        .cwd(&cwd)
        .status(1)
        .run();
    // --select on the command line re-enables what the config disables.
    let dir = project_with_config("ignore: [IR001]\n");
    infera(&["lint", "--select", "IR001", "pd.yaml"])
        .cwd(&dir.path().join("recipes"))
        .status(1)
        .stdout("IR001")
        .run();
}

#[test]

fn explicit_config_wins_over_discovery() {
    let dir = project_with_config("disable: [IR001]\n");
    let other = dir.path().join("strict.yaml");
    std::fs::write(&other, "severity: {IR001: error}\n").expect("write");
    infera(&[
        "lint",
        "--config",
        other.to_str().expect("utf-8 path"),
        "pd.yaml",
    ])
    .cwd(&dir.path().join("recipes"))
    .status(1)
    .stdout("error[IR001]")
    .run();
}

#[test]

fn bad_config_is_a_usage_error_with_file_and_line() {
    let dir = project_with_config("node-gpus: 8\nseverty: {IR001: error}\n");
    infera(&["lint", "pd.yaml"])
        .cwd(&dir.path().join("recipes"))
        .status(2)
        .stderr(".infera-lint.yaml:2:1: invalid lint config: unknown field `severty`")
        .run();
    let dir = project_with_config("severity:\n  IR077: error\n");
    infera(&["lint", "pd.yaml"])
        .cwd(&dir.path().join("recipes"))
        .status(2)
        .stderr(".infera-lint.yaml:2:3: unknown rule `IR077` in severity")
        .run();
}

// ---------------------------------------------------------------------------
// infera rules
// ---------------------------------------------------------------------------

#[test]

fn rules_lists_every_rule() {
    let out = infera(&["rules"]).status(0).stdout("| code").run();
    for code in [
        "IR001", "IR002", "IR003", "IR004", "IR005", "IR006", "IR007", "IR008", "IR009", "IR010",
        "IR011", "IR012",
    ] {
        assert!(
            out.contains(code),
            "{code} missing from `infera rules`:\n{out}"
        );
    }
    let json = infera(&["rules", "--json"]).status(0).run();
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v[1]["code"], "IR002");
    assert_eq!(v[1]["name"], "surge-stall-gpu");
}

#[test]

fn rules_prints_one_page_by_code_or_name() {
    let by_code = infera(&["rules", "IR002"])
        .status(0)
        .stdout("# IR002 surge-stall-gpu")
        .stdout("What it does")
        .run();
    let by_name = infera(&["rules", "surge-stall-gpu"]).status(0).run();
    assert_eq!(by_code, by_name);
    infera(&["rules", "--json", "IR012"])
        .status(0)
        .stdout("\"multinode-gap\"")
        .run();
    infera(&["rules", "IR999"])
        .status(2)
        .stderr("unknown rule `IR999`")
        .run();
}

// ---------------------------------------------------------------------------
// Hostname placeholders, end to end (stdin, with and without --nodes)
// ---------------------------------------------------------------------------

/// A probed worker pinned by `pin`, `hostNetwork: true`, 8 GPUs.
fn pinned_idep(pin: &str) -> String {
    format!(
        "apiVersion: infera.amd.com/v1alpha1\nkind: InferaDeployment\nmetadata: {{name: big}}\nspec:\n  services:\n    prefill:\n      componentType: worker\n      role: prefill\n      extraPodSpec:\n        hostNetwork: true\n        {pin}\n        containers:\n          - name: main\n            image: x\n            command: [python3, -m, infera.engine.sglang]\n            resources: {{limits: {{amd.com/gpu: 8}}}}\n"
    )
}

#[test]
fn hostname_placeholders_are_one_node_on_the_command_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nodes = dir.path().join("nodes.yaml");
    std::fs::write(
        &nodes,
        "apiVersion: v1\nkind: List\nitems:\n- {kind: Node, metadata: {name: gpu-a}, status: {allocatable: {amd.com/gpu: \"8\"}}}\n- {kind: Node, metadata: {name: gpu-b}, status: {allocatable: {amd.com/gpu: \"16\"}}}\n",
    )
    .expect("write nodes");
    let nodes = nodes.to_string_lossy().into_owned();
    let affinity = |h: &str| {
        format!(
            "affinity: {{nodeAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: {{nodeSelectorTerms: [{{matchExpressions: [{{key: kubernetes.io/hostname, operator: In, values: [\"{h}\"]}}]}}]}}}}}}"
        )
    };
    for host in [
        "<PREFILL_NODE>",
        "${PREFILL_NODE}",
        "{{ .Values.prefillNode }}",
    ] {
        let pinned = format!("pinned to one node (whichever `{host}` names)");
        for pin in [
            format!("nodeSelector: {{kubernetes.io/hostname: \"{host}\"}}"),
            affinity(host),
        ] {
            let text = pinned_idep(&pin);
            // 8-GPU nodes assumed: IR002 and IR003 are errors.
            infera(&["lint", "--format", "github", "-"])
                .stdin(&text)
                .status(1)
                .stdout("::error file=-,line=")
                .stdout("title=IR002")
                .stdout("title=IR003")
                .stdout(&pinned)
                .stdout("blocks: none")
                .run();
            // An inventory of 8 and 16 GPUs: the placeholder may name
            // either, so IR002 is decided on both (a warning), IR003 stays.
            infera(&["lint", "--format", "github", "--nodes", &nodes, "-"])
                .stdin(&text)
                .status(1)
                .stdout("::warning file=-,line=")
                .stdout("worst gpu-a (8 amd.com/gpu), best gpu-b (16 amd.com/gpu)")
                .stdout("title=IR003")
                .run();
        }
    }
}
