//! The published Infera operator (AMD-AGI/Infera `deploy/operator` before
//! PR #176, read-only in `../shared/upstream/infera-operator`), built and
//! run out of cluster next to the upstream lab by `lab/operator` (issue 19
//! §2). Its code is not in this repository; these tests talk to it only
//! through the API server, as a user would.
//!
//! * `operator_render_differential`: for every fixture with an
//!   InferaDeployment, what the real operator creates against what
//!   `infera render --operator pre-176` says it creates, after the API
//!   server's defaults (a server-side dry run of each rendered object) and
//!   server-written metadata are normalized away. Every difference must be
//!   in the table of docs/operator-differential.md, and every row there must
//!   still be seen.
//! * `operator_gap_is_linted_refused_and_measured`: with `infera sim attach
//!   --no-operator --no-taint` as nodes and kubelet, `lint --cluster` finds
//!   the single-replica gap (IR008), `rollout restart` refuses with GAP and
//!   measures it with `--force`, and an audit of a roll the InferaDeployment
//!   triggers shows the seed's story: under the operator's `/health` probe a
//!   replacement prefill is Ready before it is routable (min Ready 1, min
//!   routable 0).
//!
//! Both skip with a printed reason without the lab (`INFERA_LAB_BIN`, root)
//! or without the operator (`../shared` absent and no `INFERA_OPERATOR_BIN`);
//! `.ci/run` sets `INFERA_OPERATOR_REQUIRED=1` when `../shared` exists.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::lab::{
    Attached, Lab, SCENARIO_NAMESPACE, json, operator_skip_reason, root, wait_steady,
};

/// The operator generation the published operator is (before PR #176).
const GENERATION: &str = "pre-176";

fn timed(what: &str, t: Instant) -> Duration {
    let took = t.elapsed();
    eprintln!("[operator lab] {what}: {:.1} s", took.as_secs_f64());
    took
}

/// The lab with the operator reconciling, its start timed (the issue's
/// budget is 30 s on a warm cache).
fn lab_with_operator() -> Lab {
    let t = Instant::now();
    let lab = Lab::up();
    let up = timed("lab/up", t);
    let operator = lab.start_operator();
    eprintln!(
        "[operator lab] lab/operator start: {:.1} s; lab + operator up: {:.1} s",
        operator.as_secs_f64(),
        (up + operator).as_secs_f64()
    );
    lab
}

fn kubectl_ok(lab: &Lab, args: &[&str]) -> Output {
    let out = lab.kubectl(args);
    assert!(
        out.status.success(),
        "kubectl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `kubectl ARGS` with `input` on stdin.
fn kubectl_stdin(lab: &Lab, args: &[&str], input: &str) -> Output {
    let kubectl = lab.dir.path().join("bin/kubectl");
    let mut child = lab
        .command(&kubectl)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the lab's kubectl");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input.as_bytes());
    }
    child.wait_with_output().expect("kubectl output")
}

// ---------------------------------------------------------------------------
// The render differential
// ---------------------------------------------------------------------------

/// The kinds the operator creates (for a LeaderWorkerSet, an InferencePool
/// and an HTTPRoute, from the permissive CRDs below).
const OWNED_KINDS: &str = "deployments.apps,statefulsets.apps,services,serviceaccounts,roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io,leaderworkersets.leaderworkerset.x-k8s.io,inferencepools.inference.networking.k8s.io,httproutes.gateway.networking.k8s.io";

/// The third-party kinds the operator writes for multi-node and GAIE
/// services. Their real CRDs are not in the repository; these accept any
/// spec and default nothing, so the operator's objects land as it wrote
/// them (and a dry run of a rendered one adds nothing either).
fn permissive_crd(group: &str, kind: &str, plural: &str) -> Value {
    // Groups under k8s.io (not x-k8s.io) are protected: the API server
    // wants the approval annotation (the real CRDs carry their KEP's URL).
    let protected = group.ends_with(".k8s.io") && !group.ends_with(".x-k8s.io");
    let annotations = if protected {
        json!({"api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/gateway-api/pull/1538"})
    } else {
        json!({})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}"), "annotations": annotations},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List")},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            }],
        },
    })
}

fn install_third_party_crds(lab: &Lab) {
    let crds = [
        (
            "leaderworkerset.x-k8s.io",
            "LeaderWorkerSet",
            "leaderworkersets",
        ),
        (
            "inference.networking.k8s.io",
            "InferencePool",
            "inferencepools",
        ),
        ("gateway.networking.k8s.io", "HTTPRoute", "httproutes"),
    ];
    let list = json!({"apiVersion": "v1", "kind": "List", "items": crds
        .iter().map(|(g, k, p)| permissive_crd(g, k, p)).collect::<Vec<_>>()});
    let out = kubectl_stdin(lab, &["apply", "-f", "-"], &list.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (group, _, plural) in crds {
        kubectl_ok(
            lab,
            &[
                "wait",
                "--for=condition=Established",
                "--timeout=30s",
                &format!("crd/{plural}.{group}"),
            ],
        );
    }
}

/// One difference between the operator's objects and the rendered ones.
#[derive(Debug, Clone, PartialEq)]
struct Diff {
    fixture: String,
    /// `Kind/name`.
    object: String,
    /// Dotted path in the object (`spec.template.spec.containers[0].args`),
    /// or `(object)` for an object only one side has, `(reconcile)`,
    /// `(render)`, `(apply)`, `(dry-run)` for a step that failed.
    path: String,
    detail: String,
}

impl std::fmt::Display for Diff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let detail = self.detail.replace('\n', " ⏎ ");
        write!(
            f,
            "{} | {} | {} | {detail}",
            self.fixture, self.object, self.path
        )
    }
}

/// A row of the table in docs/operator-differential.md: patterns (`*`
/// matches any run of characters) for the fixture, the object and the path.
#[derive(Debug)]
struct Explained {
    fixture: String,
    object: String,
    path: String,
}

fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, rest)) => {
            let Some(tail) = text.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len())
                .filter(|&i| tail.is_char_boundary(i))
                .any(|i| glob(rest, &tail[i..]))
        }
    }
}

impl Explained {
    fn covers(&self, d: &Diff) -> bool {
        glob(&self.fixture, &d.fixture)
            && glob(&self.object, &d.object)
            && glob(&self.path, &d.path)
    }
}

/// The table's rows: lines `| fixture | object | path | why |` below the
/// heading "## Explained differences" (header and separator rows skipped).
fn explained_differences() -> Vec<Explained> {
    let doc = std::fs::read_to_string(root().join("docs/operator-differential.md"))
        .expect("docs/operator-differential.md");
    let Some((_, table)) = doc.split_once("## Explained differences") else {
        panic!("docs/operator-differential.md has no \"## Explained differences\" section");
    };
    let table = table.split("\n## ").next().unwrap_or_default();
    table
        .lines()
        .filter(|l| l.starts_with('|'))
        .filter_map(|l| {
            let cells: Vec<String> = l
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().trim_matches('`').to_string())
                .collect();
            let [fixture, object, path, ..] = cells.as_slice() else {
                return None;
            };
            let header = fixture == "fixture" || fixture.starts_with("---");
            (!header).then(|| Explained {
                fixture: fixture.clone(),
                object: object.clone(),
                path: path.clone(),
            })
        })
        .collect()
}

/// Drop what the API server writes or allocates and render cannot know:
/// identity, bookkeeping, the controller's revision annotation, allocated
/// cluster IPs, the owner reference (it carries the live object's UID) and
/// status.
fn normalize(mut v: Value) -> Value {
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in [
            "uid",
            "resourceVersion",
            "managedFields",
            "creationTimestamp",
            "generation",
            "ownerReferences",
            "selfLink",
        ] {
            meta.remove(k);
        }
        if let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            a.remove("deployment.kubernetes.io/revision");
            if a.is_empty() {
                meta.remove("annotations");
            }
        }
    }
    if let Some(o) = v.as_object_mut() {
        o.remove("status");
    }
    if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut)
        && spec.get("clusterIP").and_then(Value::as_str) != Some("None")
    {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    v
}

/// Where `live` and `rendered` differ, as (path, detail). Objects are
/// compared field by field and arrays of objects element by element (a
/// missing side counts as empty), so each difference names its own path.
fn diff_values(path: &str, live: &Value, rendered: &Value, out: &mut Vec<(String, String)>) {
    if live == rendered {
        return;
    }
    let at = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    let object = |v: &Value| match v {
        Value::Object(m) => Some(m.clone()),
        Value::Null => Some(serde_json::Map::new()),
        _ => None,
    };
    let objects = |v: &Value| match v {
        Value::Array(a) if a.iter().all(Value::is_object) => Some(a.clone()),
        Value::Null => Some(Vec::new()),
        _ => None,
    };
    if (live.is_object() || rendered.is_object())
        && let (Some(l), Some(r)) = (object(live), object(rendered))
    {
        let keys: std::collections::BTreeSet<&String> = l.keys().chain(r.keys()).collect();
        for k in keys {
            let null = Value::Null;
            diff_values(
                &at(k),
                l.get(k).unwrap_or(&null),
                r.get(k).unwrap_or(&null),
                out,
            );
        }
        return;
    }
    if (live.is_array() || rendered.is_array())
        && let (Some(l), Some(r)) = (objects(live), objects(rendered))
    {
        for i in 0..l.len().max(r.len()) {
            let null = Value::Null;
            let (a, b) = (l.get(i).unwrap_or(&null), r.get(i).unwrap_or(&null));
            diff_values(&format!("{path}[{i}]"), a, b, out);
        }
        return;
    }
    let short = |v: &Value| {
        let s = v.to_string();
        match s.char_indices().nth(300) {
            Some((i, _)) => format!("{}…", &s[..i]),
            None => s,
        }
    };
    out.push((
        path.to_string(),
        format!("operator {} / render {}", short(live), short(rendered)),
    ));
}

fn key(o: &Value) -> String {
    format!(
        "{}/{}",
        o["kind"].as_str().unwrap_or("?"),
        o["metadata"]["name"].as_str().unwrap_or("?")
    )
}

/// `<UPPER_SNAKE>` placeholders (the fixtures are recipes to fill in)
/// made concrete: `<DECODE_NODE>` → `decode-node`, a valid name and label
/// value, the same text for the operator and for render.
fn fill_placeholders(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(after.len());
        if name_len > 0 && after[name_len..].starts_with('>') {
            out.push_str(&after[..name_len].to_ascii_lowercase().replace('_', "-"));
            rest = &after[name_len + 1..];
        } else {
            out.push('<');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The InferaDeployments of a fixture, placeholders filled, moved into
/// namespace `ns`.
fn idep_docs(text: &str, ns: &str) -> Result<Vec<Value>, String> {
    let text = fill_placeholders(text);
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|e| e.to_string())?;
    Ok(docs
        .into_iter()
        .filter(|d| d["kind"] == "InferaDeployment")
        .map(|mut d| {
            d["metadata"]["namespace"] = Value::from(ns);
            d
        })
        .collect())
}

/// Poll until every InferaDeployment in `ns` was reconciled
/// (`status.observedGeneration == metadata.generation`); the names that
/// never were.
fn wait_reconciled(lab: &Lab, ns: &str, limit: Duration) -> Vec<String> {
    let deadline = Instant::now() + limit;
    loop {
        let list = json(&kubectl_ok(
            lab,
            &[
                "get",
                "inferadeployments.infera.amd.com",
                "-n",
                ns,
                "-o",
                "json",
            ],
        ));
        let pending: Vec<String> = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["status"]["observedGeneration"] != i["metadata"]["generation"])
            .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
            .collect();
        if pending.is_empty() || Instant::now() > deadline {
            return pending;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The operator's last error line about `name`, for a diff's detail.
fn operator_error(lab: &Lab, name: &str) -> String {
    lab.operator_log()
        .lines()
        .rev()
        .find(|l| l.contains("ERROR") && l.contains(name))
        .map(|l| l.chars().take(400).collect())
        .unwrap_or_else(|| "no error in the operator's log".into())
}

/// The objects the operator created in `ns` (owned by an InferaDeployment).
fn operator_objects(lab: &Lab, ns: &str) -> BTreeMap<String, Value> {
    let list = json(&kubectl_ok(
        lab,
        &["get", OWNED_KINDS, "-n", ns, "-o", "json"],
    ));
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| {
            o["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|refs| refs.iter().any(|r| r["kind"] == "InferaDeployment"))
        })
        .map(|o| (key(o), normalize(o.clone())))
        .collect()
}

/// `infera render --operator GENERATION -o json FILE`'s objects, each
/// passed through a server-side dry run (in namespace `dry`) so that the
/// API server's defaults are on both sides.
fn rendered_objects(
    lab: &Lab,
    file: &Path,
    ns: &str,
) -> Result<(BTreeMap<String, Value>, Vec<Diff>), Diff> {
    let fail = |path: &str, detail: String| Diff {
        fixture: String::new(),
        object: "*".into(),
        path: path.into(),
        detail,
    };
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_infera"))
        .args(["render", "--operator", GENERATION, "-o", "json"])
        .arg(file)
        .stdin(Stdio::null())
        .output()
        .expect("infera render");
    if !out.status.success() {
        return Err(fail(
            "(render)",
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    let list: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| fail("(render)", format!("not JSON: {e}")))?;
    let mut objects = BTreeMap::new();
    let mut failed = Vec::new();
    for item in list["items"].as_array().into_iter().flatten() {
        let mut dry = item.clone();
        dry["metadata"]["namespace"] = Value::from("dry");
        let out = kubectl_stdin(
            lab,
            &["create", "--dry-run=server", "-o", "json", "-f", "-"],
            &dry.to_string(),
        );
        if !out.status.success() {
            let mut d = fail(
                "(dry-run)",
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            );
            d.object = key(item);
            failed.push(d);
            continue;
        }
        let mut defaulted: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        defaulted["metadata"]["namespace"] = Value::from(ns);
        objects.insert(key(item), normalize(defaulted));
    }
    Ok((objects, failed))
}

/// The differences for one fixture (`index` names its namespace).
fn fixture_diffs(lab: &Lab, index: usize, fixture: &Path) -> Vec<Diff> {
    let name = fixture
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ns = format!("diff-{index}");
    let text = std::fs::read_to_string(fixture).expect("fixture");
    let d = |object: &str, path: &str, detail: String| Diff {
        fixture: name.clone(),
        object: object.into(),
        path: path.into(),
        detail,
    };
    let docs = match idep_docs(&text, &ns) {
        Ok(docs) if docs.is_empty() => return Vec::new(),
        Ok(docs) => docs,
        Err(e) => return vec![d("*", "(parse)", e)],
    };
    let manifest: String = docs.iter().map(|doc| format!("---\n{doc}\n")).collect();
    let file = lab.dir.path().join(format!("fixture-{index}.yaml"));
    std::fs::write(&file, &manifest).expect("write the fixture's InferaDeployments");
    kubectl_ok(lab, &["create", "namespace", &ns]);
    let applied = kubectl_stdin(lab, &["apply", "-f", "-"], &manifest);
    if !applied.status.success() {
        let why = String::from_utf8_lossy(&applied.stderr).trim().to_string();
        return vec![d("*", "(apply)", why)];
    }
    let mut diffs: Vec<Diff> = wait_reconciled(lab, &ns, Duration::from_secs(20))
        .into_iter()
        .map(|i| {
            d(
                &format!("InferaDeployment/{i}"),
                "(reconcile)",
                operator_error(lab, &i),
            )
        })
        .collect();
    let live = operator_objects(lab, &ns);
    let rendered = match rendered_objects(lab, &file, &ns) {
        Ok((r, failed)) => {
            diffs.extend(failed.into_iter().map(|f| Diff {
                fixture: name.clone(),
                ..f
            }));
            r
        }
        Err(mut e) => {
            e.fixture = name;
            diffs.push(e);
            return diffs;
        }
    };
    let keys: std::collections::BTreeSet<&String> = live.keys().chain(rendered.keys()).collect();
    for k in keys {
        match (live.get(k), rendered.get(k)) {
            (Some(l), Some(r)) => {
                let mut found = Vec::new();
                diff_values("", l, r, &mut found);
                diffs.extend(found.into_iter().map(|(p, detail)| d(k, &p, detail)));
            }
            (Some(_), None) => diffs.push(d(
                k,
                "(object)",
                "created by the operator, not rendered".into(),
            )),
            (None, _) => diffs.push(d(
                k,
                "(object)",
                "rendered, not created by the operator".into(),
            )),
        }
    }
    diffs
}

#[test]
fn operator_render_differential() {
    if operator_skip_reason("operator_render_differential").is_some() {
        return;
    }
    let lab = lab_with_operator();
    let t = Instant::now();
    install_third_party_crds(&lab);
    kubectl_ok(&lab, &["create", "namespace", "dry"]);
    let mut fixtures: Vec<_> = std::fs::read_dir(root().join("tests/fixtures"))
        .expect("tests/fixtures")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    fixtures.sort();
    let diffs: Vec<Diff> = fixtures
        .iter()
        .enumerate()
        .flat_map(|(i, f)| fixture_diffs(&lab, i, f))
        .collect();
    timed(&format!("differential over {} fixtures", fixtures.len()), t);

    let table = explained_differences();
    let unexplained: Vec<&Diff> = diffs
        .iter()
        .filter(|d| !table.iter().any(|e| e.covers(d)))
        .collect();
    let stale: Vec<&Explained> = table
        .iter()
        .filter(|e| !diffs.iter().any(|d| e.covers(d)))
        .collect();
    let report: String = diffs
        .iter()
        .map(|d| {
            let mark = if unexplained.contains(&d) {
                "UNEXPLAINED"
            } else {
                "explained"
            };
            format!("{mark} | {d}\n")
        })
        .collect();
    std::fs::write(lab.dir.path().join("operator-diff.txt"), &report).expect("write the diff");
    if let Some(out) = std::env::var_os("INFERA_OPERATOR_DIFF_OUT") {
        std::fs::write(out, &report).expect("write INFERA_OPERATOR_DIFF_OUT");
    }
    assert!(
        unexplained.is_empty() && stale.is_empty(),
        "{} difference(s) between the real operator and `infera render --operator {GENERATION}` are not in docs/operator-differential.md:\n{}\nrows there that no longer match anything: {stale:#?}",
        unexplained.len(),
        unexplained
            .iter()
            .map(|d| format!("  {d}\n"))
            .collect::<String>(),
    );
}

// ---------------------------------------------------------------------------
// The gap: lint, rollout, audit
// ---------------------------------------------------------------------------

/// Nodes and an InferaDeployment for the real operator (`sim attach
/// --no-operator`): two prefills and one decode, no NATS (its StatefulSet
/// needs a volume no lab provisions). The operator gives every worker
/// `maxSurge 0, maxUnavailable 1` and a `GET /health` probe on port 30000:
/// the lone decode is the single-replica gap. Why two prefills and a long
/// barrier: when the InferaDeployment changes, one old prefill and the old
/// decode go first; the replacement prefill loads (40 s), passes `/health`
/// at once (Ready) and then waits for the new decode plus the 30 s PD
/// barrier before it registers. The Deployment controller, counting it
/// available, deletes the other old prefill meanwhile: for about 30 s the
/// role has one Ready pod and no routable one. Jitter 0 keeps it
/// deterministic; at speed 20 the window is 1.5 s of wall time.
const STORY: &str = r#"name: operator-story
description: "The published operator's rendering (maxSurge 0, /health probes): two prefills, one decode."
seed: 1
nodes:
  - name: gpu-node
    count: 2
    allocatable: {cpu: "128", memory: 2Ti, amd.com/gpu: "8", pods: "110"}
timings: {imagePull: 2, weightLoad: 40, weightLoadJitter: 0, barrier: 30, teardown: 5}
manifests:
  - {apiVersion: v1, kind: Namespace, metadata: {name: llm}}
  - apiVersion: infera.amd.com/v1alpha1
    kind: InferaDeployment
    metadata: {name: llama, namespace: llm}
    spec:
      backendFramework: sglang
      image: rocm/infera:0.9.1
      nats: {deploy: false}
      services:
        router: {componentType: server, replicas: 1}
        prefill: {componentType: worker, role: prefill, replicas: 2, resources: {gpu: 1}, args: [--model-path, meta-llama/Llama-3.1-8B-Instruct]}
        decode: {componentType: worker, role: decode, replicas: 1, resources: {gpu: 1}, args: [--model-path, meta-llama/Llama-3.1-8B-Instruct]}
"#;

/// router, prefill, decode.
const DEPLOYMENTS: usize = 3;

/// role → (min Ready exact, min routable exact).
type Minima = BTreeMap<String, (Option<u64>, Option<u64>)>;

/// The outcome and the per-role minima of a rollout or audit `--report`.
fn report_minima(path: &Path) -> (String, Minima) {
    let report: Value = std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| panic!("no JSON report at {}", path.display()));
    let roles = report["roles"].as_array().cloned().unwrap_or_default();
    let minima = roles
        .iter()
        .map(|r| {
            let role = r["role"].as_str().unwrap_or("?").to_string();
            (
                role,
                (
                    r["min_ready_exact"].as_u64(),
                    r["min_routable_exact"].as_u64(),
                ),
            )
        })
        .collect();
    (
        report["outcome"].as_str().unwrap_or("?").to_string(),
        minima,
    )
}

fn run(lab: &Lab, args: &[&str]) -> (Option<i32>, String) {
    let out = lab.infera(args).output().expect("run infera");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// The operator's worker Deployments are what issue 19 saw: surge-free,
/// probed with `GET /health` on the engine port.
fn assert_operator_rendering(lab: &Lab) {
    let dep = json(&kubectl_ok(
        lab,
        &[
            "get",
            "deploy",
            "llama-decode",
            "-n",
            SCENARIO_NAMESPACE,
            "-o",
            "json",
        ],
    ));
    assert_eq!(
        dep["spec"]["strategy"]["rollingUpdate"],
        json!({"maxSurge": 0, "maxUnavailable": 1}),
        "{}",
        dep["spec"]["strategy"]
    );
    let probe = &dep["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"];
    assert_eq!(
        (&probe["path"], &probe["port"]),
        (&json!("/health"), &json!(30000)),
        "{probe}"
    );
}

fn lint_finds_the_gap(lab: &Lab) {
    let t = Instant::now();
    let (code, out) = run(lab, &["lint", "--cluster", "-n", SCENARIO_NAMESPACE]);
    timed("lint --cluster", t);
    assert!(
        out.contains("IR008"),
        "lint --cluster misses the single-replica gap:\n{out}"
    );
    assert_eq!(code, Some(1), "an error finding exits 1:\n{out}");
}

fn rollout_refuses_then_measures(lab: &Lab) {
    let t = Instant::now();
    let report = lab.dir.path().join("rollout-refused.json");
    let report_arg = report.display().to_string();
    let target = [
        "rollout",
        "restart",
        "idep/llama",
        "-n",
        SCENARIO_NAMESPACE,
        "--yes",
        "--report",
    ];
    let (code, out) = run(lab, &[&target[..], &[&report_arg]].concat());
    timed("rollout restart (refused)", t);
    assert_eq!(code, Some(3), "the preflight refuses (exit 3):\n{out}");
    assert!(out.contains("GAP"), "{out}");

    let t = Instant::now();
    let report = lab.dir.path().join("rollout-forced.json");
    let report_arg = report.display().to_string();
    let (code, out) = run(lab, &[&target[..], &[&report_arg, "--force"]].concat());
    timed("rollout restart --force", t);
    let (outcome, minima) = report_minima(&report);
    assert_eq!(outcome, "complete", "{out}");
    assert_eq!(
        minima.get("decode").map(|m| m.0),
        Some(Some(0)),
        "the gap, measured: {minima:?}\n{out}"
    );
    assert_eq!(code, Some(1), "completed below the floor exits 1:\n{out}");
}

fn audit_shows_ready_before_routable(lab: &Lab) {
    let t = Instant::now();
    let patch = json!({"spec": {"services": {
        "prefill": {"podLabels": {"infera.amd.com/story": "1"}},
        "decode": {"podLabels": {"infera.amd.com/story": "1"}},
    }}});
    kubectl_ok(
        lab,
        &[
            "patch",
            "inferadeployments.infera.amd.com",
            "llama",
            "-n",
            SCENARIO_NAMESPACE,
            "--type",
            "merge",
            "-p",
            &patch.to_string(),
        ],
    );
    let report = lab.dir.path().join("audit-story.json");
    let report_arg = report.display().to_string();
    let (code, out) = run(
        lab,
        &[
            "audit",
            "idep/llama",
            "-n",
            SCENARIO_NAMESPACE,
            "--until-complete",
            "--for",
            "5m",
            "--report",
            &report_arg,
        ],
    );
    timed("audit of the operator's roll", t);
    let (outcome, minima) = report_minima(&report);
    assert_eq!(outcome, "complete", "{out}");
    assert_eq!(
        minima.get("prefill"),
        Some(&(Some(1), Some(0))),
        "prefill (min Ready, min routable): Ready before routable\n{out}"
    );
    assert_eq!(code, Some(1), "{out}");
}

#[test]
fn operator_gap_is_linted_refused_and_measured() {
    if operator_skip_reason("operator_gap_is_linted_refused_and_measured").is_some() {
        return;
    }
    let lab = lab_with_operator();
    let scenario = lab.dir.path().join("operator-story.yaml");
    std::fs::write(&scenario, STORY).expect("scenario file");
    let t = Instant::now();
    let _attached = Attached::start_with(
        &lab,
        &scenario.to_string_lossy(),
        &["--no-operator", "--no-taint"],
    );
    wait_steady(&lab, SCENARIO_NAMESPACE, DEPLOYMENTS);
    timed("steady state through the real operator", t);
    assert_operator_rendering(&lab);
    lint_finds_the_gap(&lab);
    rollout_refuses_then_measures(&lab);
    wait_steady(&lab, SCENARIO_NAMESPACE, DEPLOYMENTS);
    audit_shows_ready_before_routable(&lab);
}
