//! The policy evaluated offline by a real CEL implementation (the `cel`
//! crate, standard library and strings extension: what Kubernetes CEL also
//! has), against every workload object of the fixtures and the ecosystem
//! corpus, and held to `infera lint`'s findings per (object, rule).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ::cel::{Context, Env, Program, Value as CelValue};
use infera_lint::engine::live::lint_objects;
use infera_lint::finding::Severity;
use infera_lint::options::LintOptions;
use infera_model::generation::Generation;
use serde_json::Value;

use super::*;
use crate::cases::rule_cases;

/// The functions the policy may call: in Kubernetes CEL (standard library
/// and `ext.Strings`) and in the `cel` crate's standard library and strings
/// extension. Operators (`_&&_`, `@in`, indexing) are the standard
/// library's own.
const SHARED_FUNCTIONS: &[&str] = &[
    "has",
    "size",
    "type",
    "int",
    "matches",
    "contains",
    "startsWith",
    "endsWith",
    "exists",
    "all",
    "filter",
    "join",
    "split",
    "trim",
    "substring",
    "lastIndexOf",
];

fn env() -> Arc<Env> {
    let mut env = Env::stdlib();
    env.add_extension(::cel::extensions::strings)
        .expect("the strings extension registers once");
    Arc::new(env)
}

fn compile(env: &Env, source: &str) -> Program {
    env.compile(source)
        .unwrap_or_else(|e| panic!("CEL does not compile: {e:?}\n{source}"))
}

/// JSON as Kubernetes hands it to CEL: integers are `int`.
fn to_cel(v: &Value) -> CelValue {
    match v {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => CelValue::Int(i),
            None => CelValue::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(a) => CelValue::List(Arc::new(a.iter().map(to_cel).collect())),
        Value::Object(m) => {
            let map: std::collections::HashMap<String, CelValue> =
                m.iter().map(|(k, v)| (k.clone(), to_cel(v))).collect();
            CelValue::from(map)
        }
    }
}

/// A policy compiled once.
struct Compiled {
    policy: Policy,
    conditions: Vec<Program>,
    variables: Vec<(&'static str, Program)>,
    checks: Vec<(Check, Program, Program)>,
}

fn compiled(opts: &PolicyOptions) -> Vec<Compiled> {
    let env = env();
    policies(opts)
        .into_iter()
        .map(|p| Compiled {
            conditions: p
                .target
                .match_conditions
                .iter()
                .map(|(_, e)| compile(&env, e))
                .collect(),
            variables: p
                .target
                .variables
                .iter()
                .map(|(n, e)| (*n, compile(&env, e)))
                .collect(),
            checks: p
                .checks
                .iter()
                .map(|c| {
                    (
                        c.clone(),
                        compile(&env, &format!("!({})", c.condition)),
                        compile(&env, &message_expression(c)),
                    )
                })
                .collect(),
            policy: p,
        })
        .collect()
}

/// What admission does with one object: the (rule, bucket) pairs of the
/// validations that fail, or an evaluation error.
fn admit(
    policies: &[Compiled],
    object: &Value,
) -> Result<BTreeSet<(&'static str, Bucket)>, String> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let env = env();
    let mut out = BTreeSet::new();
    for p in policies.iter().filter(|p| p.policy.target.kind == kind) {
        let mut context = Context::with_env(env.clone());
        context.add_variable_from_value("object", to_cel(object));
        let mut matched = true;
        for c in &p.conditions {
            match c.execute(&context) {
                Ok(CelValue::Bool(b)) => matched &= b,
                other => return Err(format!("{}: match condition gave {other:?}", p.policy.name)),
            }
        }
        if !matched {
            continue;
        }
        // Variables in order; one that fails is left out, as a lazy
        // variable nobody reads never fails admission.
        let mut vars = std::collections::HashMap::<String, CelValue>::new();
        for (name, program) in &p.variables {
            let mut scope = Context::with_env(env.clone());
            scope.add_variable_from_value("object", to_cel(object));
            scope.add_variable_from_value("variables", CelValue::from(vars.clone()));
            if let Ok(v) = program.execute(&scope) {
                vars.insert((*name).to_string(), v);
            }
        }
        context.add_variable_from_value("variables", CelValue::from(vars));
        for (check, program, message) in &p.checks {
            match program.execute(&context) {
                Ok(CelValue::Bool(true)) => {}
                Ok(CelValue::Bool(false)) => {
                    if !matches!(message.execute(&context), Ok(CelValue::String(_))) {
                        return Err(format!("{}: messageExpression fails", check.code));
                    }
                    out.insert((check.code, p.policy.bucket));
                }
                other => {
                    return Err(format!("{} in {}: {other:?}", check.code, p.policy.name));
                }
            }
        }
    }
    Ok(out)
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every object of the fixtures and the ecosystem corpus that lint reads
/// (documents that do not parse are left out), with where it came from.
fn corpus() -> Vec<(String, Value)> {
    let root = repo_root();
    let (files, _) = infera_model::manifest::expand_paths(&[
        root.join("tests/fixtures"),
        root.join("tests/data/ecosystem"),
    ]);
    let kinds: BTreeSet<&str> = kinds::targets(Generation::LATEST)
        .iter()
        .map(|t| t.kind)
        .collect();
    let mut out = Vec::new();
    for file in files {
        let Ok(values) = infera_model::manifest::load_path_values(&file) else {
            continue;
        };
        for (line, v) in values.into_iter().flatten() {
            if kinds.contains(v["kind"].as_str().unwrap_or_default()) {
                let name = file
                    .strip_prefix(&root)
                    .unwrap_or(&file)
                    .display()
                    .to_string();
                out.push((format!("{name}:{line}"), v));
            }
        }
    }
    out
}

/// lint's verdicts on one object: rule → the severities it reports.
fn lint_verdicts(
    object: &Value,
    generation: Generation,
) -> BTreeMap<&'static str, BTreeSet<Severity>> {
    let opts = LintOptions {
        node_gpus: 8,
        operator: generation,
        ..LintOptions::default()
    };
    let outcome = lint_objects(std::slice::from_ref(object), "object", &opts);
    let mut out: BTreeMap<&'static str, BTreeSet<Severity>> = BTreeMap::new();
    for f in outcome.findings {
        out.entry(f.code).or_default().insert(f.severity);
    }
    out
}

/// Disagreements between the policy and lint on `objects`, per (object,
/// enforced rule): lint's error ↔ denied, warning ↔ warned, clean ↔
/// admitted.
fn disagreements(
    objects: &[(String, Value)],
    generation: Generation,
    seen: &mut usize,
) -> Vec<String> {
    let opts = PolicyOptions {
        generation,
        ..PolicyOptions::default()
    };
    let policies = compiled(&opts);
    let enforced: Vec<&str> = COVERAGE
        .iter()
        .filter(|(_, c)| matches!(c, Coverage::Enforced { .. }))
        .map(|(code, _)| *code)
        .collect();
    let mut out = Vec::new();
    for (name, object) in objects {
        let admitted = match admit(&policies, object) {
            Ok(a) => a,
            Err(e) => {
                out.push(format!("{name}: {e}"));
                continue;
            }
        };
        let lint = lint_verdicts(object, generation);
        for code in &enforced {
            let want: BTreeSet<Bucket> = lint
                .get(code)
                .into_iter()
                .flatten()
                .map(|s| bucket(*s, &opts))
                .collect();
            let got: BTreeSet<Bucket> = admitted
                .iter()
                .filter(|(c, _)| c == code)
                .map(|(_, b)| *b)
                .collect();
            *seen += usize::from(!want.is_empty());
            if want != got {
                out.push(format!(
                    "{name} {code} ({generation}): lint {want:?}, policy {got:?}"
                ));
            }
        }
    }
    out
}

/// Zero disagreements on `objects` under each generation, with at least
/// the given number of (object, rule) findings: agreement on clean objects
/// alone would prove nothing.
fn assert_agrees(objects: &[(String, Value)], runs: [(Generation, usize); 2]) {
    for (generation, findings) in runs {
        let mut seen = 0;
        let failures = disagreements(objects, generation, &mut seen);
        assert!(
            failures.is_empty(),
            "{} disagreements ({generation}):\n{}",
            failures.len(),
            failures.join("\n")
        );
        assert!(
            seen >= findings,
            "{generation}: only {seen} (object, rule) findings"
        );
    }
}

/// The ANTLR parser of the `cel` crate recurses deeply on long expressions.
fn with_big_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(f)
        .expect("spawn the CEL thread")
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e));
}

#[test]
fn the_policy_agrees_with_lint_on_every_fixture() {
    with_big_stack(|| {
        let objects = corpus();
        assert!(objects.len() >= 40, "only {} objects", objects.len());
        assert_agrees(
            &objects,
            [
                (Generation::ProbeGatedSurge, 20),
                (Generation::SurgeFree, 30),
            ],
        );
    });
}

/// Every function the generated CEL calls is one both Kubernetes CEL and
/// the `cel` crate provide.
#[test]
fn functions_are_in_both_libraries() {
    with_big_stack(functions_used_are_shared);
}

fn functions_used_are_shared() {
    let env = env();
    let mut used = BTreeSet::new();
    for generation in [Generation::ProbeGatedSurge, Generation::SurgeFree] {
        for t in kinds::targets(generation) {
            let sources = t
                .variables
                .iter()
                .chain(&t.match_conditions)
                .map(|(_, e)| e.clone())
                .chain(t.checks.iter().map(|c| c.condition.clone()))
                .chain(t.checks.iter().map(message_expression));
            for source in sources {
                let program = compile(&env, &source);
                for f in program.references().functions() {
                    used.insert(f.to_string());
                }
            }
        }
    }
    let operators = |f: &str| f.starts_with('_') || f.starts_with('@') || f.starts_with('!');
    let foreign: Vec<&String> = used
        .iter()
        .filter(|f| !operators(f) && !SHARED_FUNCTIONS.contains(&f.as_str()))
        .collect();
    assert!(
        foreign.is_empty(),
        "outside the shared set: {foreign:?} (all: {used:?})"
    );
}

/// One YAML document as the wire-form JSON an API server would hand CEL.
fn yaml(text: &str) -> Value {
    let docs = infera_model::manifest::split_documents(text.as_bytes());
    let doc = infera_model::manifest::parse_document("case.yaml", &docs[0])
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("case does not parse:\n{text}"));
    doc.root.to_json()
}

#[test]
fn the_policy_agrees_with_lint_on_the_rule_cases() {
    with_big_stack(|| {
        let objects: Vec<(String, Value)> = rule_cases()
            .iter()
            .enumerate()
            .map(|(i, text)| (format!("case {i}"), yaml(text)))
            .collect();
        assert_agrees(
            &objects,
            [
                (Generation::ProbeGatedSurge, 30),
                (Generation::SurgeFree, 25),
            ],
        );
    });
}
