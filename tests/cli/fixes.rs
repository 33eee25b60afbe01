//! Every structured fix, applied (ruff's fix tests are the model): for each
//! finding of the whole corpus (`tests/fixtures`, `tests/data/ecosystem`,
//! `tests/golden/input`) and of a few hand-written manifests, apply its
//! text edits to the file in memory and lint again. The finding must be
//! gone, no finding may be new, and the edited text must parse to exactly
//! the tree the fix's JSON merge patches give.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use infera_lint::engine::lint_source;
use infera_lint::finding::{Finding, ObjectRef};
use infera_lint::fix::{apply_edits, merge_patch};
use infera_lint::options::LintOptions;
use infera_model::manifest;

use crate::common::case::root;

fn options() -> LintOptions {
    LintOptions {
        node_gpus: 8,
        ..LintOptions::default()
    }
}

/// (code, object): what "the same finding" means across two runs.
type Key = (&'static str, ObjectRef);

fn keys(findings: &[Finding]) -> Vec<Key> {
    findings
        .iter()
        .map(|f| (f.code, f.object.clone()))
        .collect()
}

/// Each document's tree as JSON, by document index.
fn documents(text: &str) -> BTreeMap<usize, serde_json::Value> {
    manifest::split_documents(text.as_bytes())
        .iter()
        .filter_map(|raw| {
            let doc = manifest::parse_document("x", raw).ok()??;
            Some((doc.index, doc.root.to_json()))
        })
        .collect()
}

/// Resolve a JSON pointer, creating mappings on the way (as the fix's
/// merge patch does).
fn at_pointer<'v>(doc: &'v mut serde_json::Value, pointer: &str) -> &'v mut serde_json::Value {
    let mut cur = doc;
    for raw in pointer.split('/').skip(1) {
        let seg = raw.replace("~1", "/").replace("~0", "~");
        cur = match cur {
            serde_json::Value::Array(items) => {
                let i: usize = seg.parse().expect("index");
                &mut items[i]
            }
            _ => {
                if !cur.is_object() {
                    *cur = serde_json::json!({});
                }
                cur.as_object_mut()
                    .expect("object")
                    .entry(seg)
                    .or_insert(serde_json::Value::Null)
            }
        };
    }
    cur
}

/// Apply one finding's fix to `text`, and check what the brief of a fix
/// says; returns a description of what went wrong, if anything.
fn check_fix(name: &str, text: &str, before: &[Finding], f: &Finding) -> Result<(), String> {
    let fix = f.fix.as_ref().expect("a fix");
    let who = format!("{name}:{} {} ({})", f.line, f.code, fix.description);
    if fix.edits.is_empty() {
        return Err(format!("{who}: no text edits"));
    }
    let fixed = apply_edits(text, &fix.edits);
    // The text edits and the JSON patches say the same thing.
    let mut want = documents(text);
    let doc = want
        .get_mut(&fix.document)
        .ok_or(format!("{who}: no document"))?;
    for change in &fix.changes {
        merge_patch(at_pointer(doc, &change.path), &change.value);
    }
    let got = documents(&fixed);
    if got != want {
        return Err(format!(
            "{who}: the edited text is not the patched tree:\n{fixed}"
        ));
    }
    let after = lint_source(name, fixed.as_bytes(), &options());
    if !after.input_errors.is_empty() {
        return Err(format!("{who}: {:?}\n{fixed}", after.input_errors));
    }
    let after = keys(&after.findings);
    let before = keys(before);
    let this: Key = (f.code, f.object.clone());
    if after.contains(&this) {
        return Err(format!("{who}: still reported after the fix:\n{fixed}"));
    }
    if let Some(new) = after.iter().find(|k| !before.contains(k)) {
        return Err(format!("{who}: the fix raises {new:?}:\n{fixed}"));
    }
    Ok(())
}

fn corpus() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs: Vec<PathBuf> = [
        "tests/fixtures",
        "tests/data/ecosystem",
        "tests/golden/input",
    ]
    .iter()
    .map(|d| root().join(d))
    .collect();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("dir") {
            let p = entry.expect("entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// Fixes applied and failures, per rule code.
fn apply_all(name: &str, text: &str, fixed: &mut BTreeMap<&'static str, usize>) -> Vec<String> {
    let before = lint_source(name, text.as_bytes(), &options()).findings;
    let mut failures = Vec::new();
    for f in before.iter().filter(|f| f.fix.is_some()) {
        match check_fix(name, text, &before, f) {
            Ok(()) => *fixed.entry(f.code).or_default() += 1,
            Err(e) => failures.push(e),
        }
    }
    failures
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

#[test]
fn every_fix_in_the_corpus_removes_its_finding_and_raises_none() {
    let mut fixed = BTreeMap::new();
    let mut failures = Vec::new();
    let mut unfixed: BTreeMap<&str, usize> = BTreeMap::new();
    for path in corpus() {
        let text = std::fs::read_to_string(&path).expect("read");
        let name = rel(&path);
        failures.extend(apply_all(&name, &text, &mut fixed));
        for f in lint_source(&name, text.as_bytes(), &options()).findings {
            if f.fix.is_none() {
                *unfixed.entry(f.code).or_default() += 1;
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The rules that tell the user what to write carry a fix on every
    // finding of theirs in the corpus (IR001 and IR008 only where the fix
    // does not trade the gap for a stall).
    for code in ["IR007", "IR010", "IR012"] {
        assert!(fixed.get(code).is_some_and(|&n| n > 0), "{code}: {fixed:?}");
        assert_eq!(unfixed.get(code), None, "{code} findings without a fix");
    }
    for code in ["IR001", "IR008"] {
        assert!(fixed.get(code).is_some_and(|&n| n > 0), "{code}: {fixed:?}");
    }
}

/// Rules the corpus does not trigger (or not in every form), on small
/// manifests of their own.
#[test]
fn fixes_of_hand_written_findings_apply() {
    let cases: [(&str, &str); 7] = [
        ("IR005", IR005_TCP),
        ("IR009", IR009_TP4),
        ("IR007", IR007_TRITON_FLOW),
        ("IR012", IR012_LWS_PERCENT),
        ("IR008", IR008_STATEFULSET),
        ("IR013", IR013_BUDGET),
        ("IR016", IR016_VLLM_DRAIN),
    ];
    for (code, text) in cases {
        let mut fixed = BTreeMap::new();
        let failures = apply_all(code, text, &mut fixed);
        assert!(failures.is_empty(), "{}", failures.join("\n\n"));
        assert_eq!(fixed.get(code), Some(&1), "{code}: {fixed:?}");
    }
}

const IR005_TCP: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: w}
spec:
  replicas: 2
  selector: {matchLabels: {app: w}}
  template:
    metadata: {labels: {app: w}}
    spec:
      containers:
        - name: main
          image: engine:1
          command: [python3, -m, infera.engine.sglang, --tp-size, '1']
          readinessProbe:
            tcpSocket: {port: 30090}
            periodSeconds: 5
          resources: {limits: {amd.com/gpu: 1}}
";

const IR009_TP4: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: v}
spec:
  replicas: 2
  selector: {matchLabels: {app: v}}
  template:
    metadata: {labels: {app: v}}
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.10.0
        args: [--model, m, --tensor-parallel-size, '4']
        readinessProbe: {httpGet: {path: /health, port: 8000}}
        resources:
          requests:
            nvidia.com/gpu: 1
          limits:
            nvidia.com/gpu: \"1\"   # one GPU
";

const IR007_TRITON_FLOW: &str = r#"{"apiVersion": "apps/v1", "kind": "Deployment",
 "metadata": {"name": "t"},
 "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "t"}},
  "template": {"metadata": {"labels": {"app": "t"}},
   "spec": {"containers": [{"name": "triton", "image": "nvcr.io/nvidia/tritonserver:24.05-py3",
     "command": ["tritonserver", "--model-repository=/m", "--http-port=8080"],
     "ports": [{"containerPort": 8001, "name": "grpc"}, {"containerPort": 8080, "name": "http"}]}]}}}}
"#;

const IR012_LWS_PERCENT: &str = "\
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: g}
spec:
  replicas: 1
  rolloutStrategy:
    type: RollingUpdate
    rollingUpdateConfiguration: {maxUnavailable: 50%}
  leaderWorkerTemplate:
    size: 2
    workerTemplate:
      spec:
        containers:
        - name: vllm
          image: vllm/vllm-openai:v0.10.0
          args: [--model, m]
";

const IR008_STATEFULSET: &str = "\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s}
spec:
  serviceName: s
  selector: {matchLabels: {app: s}}
  template:
    metadata: {labels: {app: s}}
    spec:
      containers:
      - name: sglang
        image: lmsysorg/sglang:latest
        command: [python3, -m, sglang.launch_server, --port, '8000']
        readinessProbe: {httpGet: {path: /health, port: 8000}}
";

/// A budget that allows no eviction of a 2-replica vLLM Deployment: the fix
/// goes into the budget (the second document).
const IR013_BUDGET: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: v, namespace: llm}
spec:
  replicas: 2
  selector: {matchLabels: {app: v}}
  template:
    metadata: {labels: {app: v}}
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.10.0
        readinessProbe: {httpGet: {path: /health, port: 8000}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: v
  namespace: llm
spec:
  minAvailable: 2
  selector:
    matchLabels: {app: v}
";

/// vLLM drains 60 s after a 15 s preStop sleep inside a 30 s grace period.
const IR016_VLLM_DRAIN: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: v}
spec:
  replicas: 2
  selector: {matchLabels: {app: v}}
  template:
    metadata: {labels: {app: v}}
    spec:
      terminationGracePeriodSeconds: 30
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.10.0
        args: [--model, m, --shutdown-timeout=60]
        readinessProbe: {httpGet: {path: /health, port: 8000}}
        lifecycle:
          preStop:
            exec: {command: [/bin/sh, -c, sleep 15]}
";
