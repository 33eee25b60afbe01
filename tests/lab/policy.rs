//! `infera policy` at the door of the real kube-apiserver v1.37.2: the
//! generated ValidatingAdmissionPolicies are created (the API server's own
//! cost estimate and type checking against the CRDs' schemas), then every
//! workload object of `tests/fixtures` and `tests/data/ecosystem`, and
//! every rule case of `infera_policy::cases`, is
//! dry-run (`kubectl apply --dry-run=server`), and admission's verdict per
//! (object, enforced rule) is held to `infera lint`'s, for both operator
//! generations: zero disagreements. Objects the API server refuses by
//! schema before admission are counted apart, with the server's reason.
//! The admission latency of the largest object, with and without the
//! policy, is printed (a measurement, not an assertion).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use infera_lint::engine::live::lint_objects;
use infera_lint::finding::Severity;
use infera_lint::options::LintOptions;
use infera_model::generation::Generation;
use infera_policy::{COVERAGE, Coverage};
use serde_json::Value;

use crate::common::lab::{Lab, lab_or_skip, root};

/// The CRDs of the kinds the policy matches besides InferaDeployment (which
/// `lab/up` installs): published YAML, `lab/crd/SOURCES.md`.
const CRDS: [(&str, &str); 2] = [
    (
        "lab/crd/leaderworkerset.x-k8s.io_leaderworkersets.yaml",
        "leaderworkersets.leaderworkerset.x-k8s.io",
    ),
    (
        "lab/crd/nvidia.com_dynamographdeployments.yaml",
        "dynamographdeployments.nvidia.com",
    ),
];

/// One workload object of the corpus, as the lab receives it (namespace
/// dropped: everything goes to `default`).
struct Object {
    origin: String,
    value: Value,
    file: PathBuf,
}

/// Admission's answer to one dry-run apply.
#[derive(Debug, PartialEq)]
enum Answer {
    /// Admitted, with the rule codes of the warnings it carried.
    Admitted(BTreeSet<String>),
    /// Refused by a ValidatingAdmissionPolicy naming these codes.
    Refused(BTreeSet<String>),
    /// Refused before admission (schema validation), with the reason.
    Schema(String),
}

fn codes(text: &str) -> BTreeSet<String> {
    let bytes = text.as_bytes();
    (0..bytes.len().saturating_sub(4))
        .filter(|&i| {
            bytes[i..i + 2] == *b"IR"
                && bytes[i + 2..i + 5].iter().all(u8::is_ascii_digit)
                && bytes.get(i + 5).is_none_or(|b| !b.is_ascii_digit())
        })
        .map(|i| text[i..i + 5].to_string())
        .collect()
}

fn answer(out: &Output) -> Answer {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warned: String = stderr
        .lines()
        .filter(|l| l.starts_with("Warning:"))
        .collect::<Vec<_>>()
        .join("\n");
    if out.status.success() {
        return Answer::Admitted(codes(&warned));
    }
    let errors: String = stderr
        .lines()
        .filter(|l| !l.starts_with("Warning:"))
        .collect::<Vec<_>>()
        .join("\n");
    if errors.contains("ValidatingAdmissionPolicy") {
        Answer::Refused(codes(&errors))
    } else {
        Answer::Schema(errors.trim().to_string())
    }
}

fn corpus(dir: &Path) -> Vec<Object> {
    let kinds: BTreeSet<&str> = infera_policy::kinds::targets(Generation::LATEST)
        .iter()
        .map(|t| t.kind)
        .collect();
    let (files, _) = infera_model::manifest::expand_paths(&[
        root().join("tests/fixtures"),
        root().join("tests/data/ecosystem"),
    ]);
    let mut out = Vec::new();
    for file in files {
        let Ok(values) = infera_model::manifest::load_path_values(&file) else {
            continue;
        };
        for (line, mut value) in values.into_iter().flatten() {
            if !kinds.contains(value["kind"].as_str().unwrap_or_default()) {
                continue;
            }
            if let Some(meta) = value["metadata"].as_object_mut() {
                meta.remove("namespace");
            }
            let origin = format!(
                "{}:{line}",
                file.strip_prefix(root()).unwrap_or(&file).display()
            );
            let path = dir.join(format!("object-{}.json", out.len()));
            std::fs::write(&path, value.to_string()).expect("write the object");
            out.push(Object {
                origin,
                value,
                file: path,
            });
        }
    }
    for (i, text) in infera_policy::cases::rule_cases().iter().enumerate() {
        let docs = infera_model::manifest::split_documents(text.as_bytes());
        let parsed = infera_model::manifest::parse_document("case.yaml", &docs[0]);
        let Some(doc) = parsed.ok().flatten() else {
            panic!("rule case {i} does not parse:\n{text}");
        };
        let path = dir.join(format!("object-{}.json", out.len()));
        let value = doc.root.to_json();
        std::fs::write(&path, value.to_string()).expect("write the object");
        out.push(Object {
            origin: format!("rule case {i}"),
            value,
            file: path,
        });
    }
    out
}

/// Lint's verdict on the enforced rules: code → severities.
fn lint(object: &Value, generation: Generation) -> BTreeMap<&'static str, BTreeSet<Severity>> {
    let enforced: BTreeSet<&str> = COVERAGE
        .iter()
        .filter(|(_, c)| matches!(c, Coverage::Enforced { .. }))
        .map(|(code, _)| *code)
        .collect();
    let opts = LintOptions {
        node_gpus: 8,
        operator: generation,
        ..LintOptions::default()
    };
    let mut out: BTreeMap<&'static str, BTreeSet<Severity>> = BTreeMap::new();
    for f in lint_objects(std::slice::from_ref(object), "object", &opts).findings {
        if enforced.contains(f.code) {
            out.entry(f.code).or_default().insert(f.severity);
        }
    }
    out
}

fn kubectl_ok(lab: &Lab, args: &[&str]) -> Output {
    let out = lab.kubectl(args);
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn install_crds(lab: &Lab) {
    for (file, name) in CRDS {
        let path = root().join(file);
        kubectl_ok(
            lab,
            &[
                "apply",
                "--server-side",
                "-f",
                path.to_str().unwrap_or_default(),
            ],
        );
        // `kubectl wait` fails outright while the CRD has no conditions yet.
        let deadline = Instant::now() + Duration::from_secs(60);
        let jsonpath = "-o=jsonpath={.status.conditions[?(@.type==\"Established\")].status}";
        while String::from_utf8_lossy(&lab.kubectl(&["get", "crd", name, jsonpath]).stdout)
            != "True"
        {
            assert!(Instant::now() < deadline, "CRD {name} never Established");
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

/// `infera policy ARGS | kubectl apply -f -`, then wait until the API
/// server's type checker has looked at every policy; returns its warnings.
fn apply_policy(lab: &Lab, args: &[&str]) -> Vec<String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_infera"))
        .arg("policy")
        .args(args)
        .output()
        .expect("run infera policy");
    assert!(out.status.success(), "infera policy {args:?} failed");
    // `--action warn` names its policies apart from `severity`'s: the last
    // pass's policies go first, or they would still answer.
    kubectl_ok(
        lab,
        &[
            "delete",
            "validatingadmissionpolicies,validatingadmissionpolicybindings",
            "--all",
            "--wait",
        ],
    );
    let file = lab.dir.path().join("policy.yaml");
    std::fs::write(&file, &out.stdout).expect("write the policy");
    kubectl_ok(lab, &["apply", "-f", file.to_str().unwrap_or_default()]);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = kubectl_ok(lab, &["get", "validatingadmissionpolicies", "-o", "json"]);
        let list: Value = serde_json::from_slice(&out.stdout).expect("a JSON list");
        let items = list["items"].as_array().cloned().unwrap_or_default();
        let checked = items
            .iter()
            .all(|p| p["status"]["observedGeneration"] == p["metadata"]["generation"]);
        if checked && !items.is_empty() {
            return items
                .iter()
                .flat_map(|p| {
                    let name = p["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    p["status"]["typeChecking"]["expressionWarnings"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                        .into_iter()
                        .map(move |w| format!("{name}: {w}"))
                })
                .collect();
        }
        assert!(
            Instant::now() < deadline,
            "the policies were never type-checked"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn dry_run(lab: &Lab, object: &Object) -> Answer {
    let file = object.file.to_str().unwrap_or_default();
    answer(&lab.kubectl(&["apply", "--dry-run=server", "-f", file]))
}

/// One probe per (kind, policy) the pass installs: per kind, the first
/// object lint refuses and, when errors deny, the first it only warns
/// about. Each kind's binding reaches the API server's policy cache on its
/// own, so one probe in force says nothing about the others.
fn probes(objects: &[Object], generation: Generation, warn_only: bool) -> Vec<&Object> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for object in objects {
        let verdict = lint(&object.value, generation);
        let errors = verdict.values().any(|s| s.contains(&Severity::Error));
        let warnings = verdict.values().any(|s| s.contains(&Severity::Warning));
        let policy = match (errors, warnings) {
            (true, _) => "deny",
            (false, true) if !warn_only => "warn",
            _ => continue,
        };
        let kind = object.value["kind"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if seen.insert((kind, policy)) {
            out.push(object);
        }
    }
    out
}

/// Dry-run every probe until admission agrees with lint on all of them (a
/// new binding reaches the API server's policy cache within a second or
/// so, and a deleted one leaves it as late).
fn wait_in_force(lab: &Lab, probes: &[&Object], generation: Generation, warn_only: bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut wrong = Vec::new();
        for probe in probes {
            let one = std::slice::from_ref(*probe);
            wrong.extend(compare(lab, one, generation, warn_only, &mut BTreeMap::new()).0);
        }
        if wrong.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the policies never took effect:\n{}",
            wrong.join("\n")
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Disagreements with lint, one line per (object, rule); schema refusals
/// land in `schema`.
fn compare(
    lab: &Lab,
    objects: &[Object],
    generation: Generation,
    warn_only: bool,
    schema: &mut BTreeMap<String, String>,
) -> (Vec<String>, usize) {
    let mut wrong = Vec::new();
    let mut pairs = 0;
    for object in objects {
        let verdict = lint(&object.value, generation);
        let has = |s: Severity| -> BTreeSet<String> {
            verdict
                .iter()
                .filter(|(_, sev)| warn_only || sev.contains(&s))
                .map(|(c, _)| (*c).to_string())
                .collect()
        };
        let (errors, warnings) = (has(Severity::Error), has(Severity::Warning));
        pairs += verdict.len();
        match dry_run(lab, object) {
            Answer::Schema(reason) => {
                schema.insert(object.origin.clone(), reason);
            }
            Answer::Admitted(got) if warn_only || errors.is_empty() => {
                let want = if warn_only { &errors } else { &warnings };
                for code in got.symmetric_difference(want) {
                    wrong.push(format!(
                        "{} {code}: warned {got:?}, lint {verdict:?}",
                        object.origin
                    ));
                }
            }
            Answer::Refused(got) if !warn_only && !errors.is_empty() => {
                if got.is_empty() || !got.is_subset(&errors) {
                    wrong.push(format!(
                        "{}: refused for {got:?}, lint errors {errors:?}",
                        object.origin
                    ));
                }
            }
            other => wrong.push(format!(
                "{}: admission {other:?}, lint {verdict:?}",
                object.origin
            )),
        }
    }
    (wrong, pairs)
}

/// The API server's own timing of `POST` (from `kubectl -v=6`), in ms.
fn post_latency(lab: &Lab, object: &Object) -> Option<u64> {
    let file = object.file.to_str().unwrap_or_default();
    let out = lab.kubectl(&[
        "create",
        "--dry-run=server",
        "-v=6",
        "-f",
        file,
        "-o",
        "name",
    ]);
    let log = String::from_utf8_lossy(&out.stderr);
    // klog's structured `"Response" verb="POST" … milliseconds=12`, or the
    // older `POST https://… 201 Created in 12 milliseconds`.
    let line = log
        .lines()
        .find(|l| l.contains("POST") && l.contains("milliseconds"))?;
    let ms = match line.split_once("milliseconds=") {
        Some((_, rest)) => rest.split(|c: char| !c.is_ascii_digit()).next()?,
        None => line.split(" in ").nth(1)?.split_whitespace().next()?,
    };
    ms.parse().ok()
}

fn percentiles(lab: &Lab, object: &Object) -> (u64, u64) {
    let mut ms: Vec<u64> = (0..40).filter_map(|_| post_latency(lab, object)).collect();
    ms.sort_unstable();
    assert!(ms.len() >= 30, "kubectl -v=6 printed no POST timing");
    (ms[ms.len() / 2], ms[ms.len() * 99 / 100])
}

#[test]
fn the_policy_on_the_real_apiserver_agrees_with_lint() {
    let Some(lab) = lab_or_skip("the_policy_on_the_real_apiserver_agrees_with_lint") else {
        return;
    };
    install_crds(&lab);
    let objects = corpus(lab.dir.path());
    let largest = objects
        .iter()
        .max_by_key(|o| o.value.to_string().len())
        .expect("a corpus");
    let before = percentiles(&lab, largest);
    let mut schema = BTreeMap::new();
    let mut report = Vec::new();
    for (generation, name) in [
        (Generation::ProbeGatedSurge, "176"),
        (Generation::SurgeFree, "pre-176"),
    ] {
        for warn_only in [true, false] {
            let action = if warn_only { "warn" } else { "severity" };
            let warnings = apply_policy(&lab, &["--operator", name, "--action", action]);
            assert!(warnings.is_empty(), "type checking warned: {warnings:#?}");
            let probes = probes(&objects, generation, warn_only);
            assert!(!probes.is_empty(), "the corpus has no object lint flags");
            wait_in_force(&lab, &probes, generation, warn_only);
            let (wrong, pairs) = compare(&lab, &objects, generation, warn_only, &mut schema);
            report.push(format!(
                "operator {name}, --action {action}: {} objects, {pairs} (object, rule) findings, {} disagreements",
                objects.len(),
                wrong.len()
            ));
            assert!(
                wrong.is_empty(),
                "admission disagrees with lint ({name}, {action}):\n{}",
                wrong.join("\n")
            );
        }
    }
    let after = percentiles(&lab, largest);
    for (origin, reason) in &schema {
        assert!(
            !reason.contains("cost") && !reason.contains("ValidatingAdmissionPolicy"),
            "{origin}: {reason}"
        );
        report.push(format!(
            "refused by schema before admission: {origin}: {reason}"
        ));
    }
    assert!(
        objects.len() - schema.len() >= 30,
        "too few objects reached admission: {} of {}",
        objects.len() - schema.len(),
        objects.len()
    );
    report.push(format!(
        "dry-run POST of {} ({} bytes), API server timing over 40: without the policy p50 {} ms p99 {} ms; with it p50 {} ms p99 {} ms",
        largest.origin,
        largest.value.to_string().len(),
        before.0,
        before.1,
        after.0,
        after.1
    ));
    eprintln!("{}", report.join("\n"));
}
