//! The real InferaDeployment manifests Infera ships, copied unchanged into
//! `tests/fixtures/` (origin and licence in `tests/fixtures/README.md`).

use std::path::PathBuf;

use infera_lint::engine::lint_paths;
use infera_lint::options::LintOptions;

fn corpus(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn codes(name: &str) -> Vec<(String, Option<String>, String)> {
    let out = lint_paths(
        &[corpus(name)],
        &LintOptions {
            node_gpus: 8,
            ..Default::default()
        },
    );
    assert!(
        out.input_errors.is_empty(),
        "{name}: {:?}",
        out.input_errors
    );
    out.findings
        .iter()
        .map(|f| {
            (
                f.code.to_string(),
                f.object.service.clone(),
                format!("{:?}", f.severity),
            )
        })
        .collect()
}

#[test]
fn skip_probe_recipes_raise_ir001_for_prefill_and_decode() {
    for file in ["pd-1p1d-mooncake.yaml", "pd-kvd.yaml"] {
        let found = codes(file);
        for svc in ["prefill", "decode"] {
            assert!(
                found
                    .iter()
                    .any(|(c, s, sev)| c == "IR001" && s.as_deref() == Some(svc) && sev == "Error"),
                "{file}: no IR001 for {svc}: {found:?}"
            );
        }
        // One root cause, one finding: no second gap rule on top of IR001.
        assert!(
            !found
                .iter()
                .any(|(c, _, _)| c == "IR005" || c == "IR006" || c == "IR008"),
            "{found:?}"
        );
    }
}

#[test]
fn multinode_recipe_raises_ir012() {
    let found = codes("multinode-tp-aggregated.yaml");
    assert!(
        found
            .iter()
            .any(|(c, s, _)| c == "IR012" && s.as_deref() == Some("worker")),
        "{found:?}"
    );
}

#[test]
fn operator_samples_raise_no_error() {
    for file in [
        "infera_v1alpha1_inferadeployment.yaml",
        "infera_v1alpha1_inferadeployment_gaie.yaml",
    ] {
        let found = codes(file);
        assert!(
            !found.iter().any(|(_, _, sev)| sev == "Error"),
            "{file}: {found:?}"
        );
    }
}

#[test]
fn a_broken_document_does_not_hide_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(corpus("pd-1p1d-mooncake.yaml")).unwrap();
    let text = format!(
        "a: [unclosed\n---\n{good}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: x}}\nspec: {{replicas: \"three\"}}\n"
    );
    let path = dir.path().join("mixed.yaml");
    std::fs::write(&path, text).unwrap();
    let out = lint_at(path);
    assert_eq!(out.input_errors.len(), 2, "{:?}", out.input_errors);
    assert!(out.input_errors.iter().all(|e| e.line.is_some()));
    assert!(
        out.input_errors
            .iter()
            .any(|e| e.message.contains("replicas"))
    );
    assert_eq!(out.findings.iter().filter(|f| f.code == "IR001").count(), 2);
}

#[test]
fn lint_ignore_annotation_suppresses_per_service() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(corpus("pd-1p1d-mooncake.yaml")).unwrap();
    let text = good.replacen(
        "  namespace: infera\n",
        "  namespace: infera\n  annotations: {infera.amd.com/lint-ignore: \"IR001/prefill,IR011\"}\n",
        1,
    );
    let path = dir.path().join("ignored.yaml");
    std::fs::write(&path, text).unwrap();
    let out = lint_at(path);
    let found: Vec<_> = out
        .findings
        .iter()
        .map(|f| (f.code, f.object.service.clone()))
        .collect();
    assert_eq!(found, vec![("IR001", Some("decode".to_string()))]);
}

#[test]
fn pinned_whole_node_worker_stalls_and_fits_with_an_inventory() {
    let dir = tempfile::tempdir().unwrap();
    let idep = r#"
apiVersion: infera.amd.com/v1alpha1
kind: InferaDeployment
metadata: {name: big}
spec:
  services:
    worker:
      componentType: worker
      extraPodSpec:
        nodeSelector: {kubernetes.io/hostname: gpu-1}
        containers:
          - name: main
            image: x
            command: [python3, -m, infera.engine.sglang, --tp-size, "8"]
            resources: {limits: {amd.com/gpu: 8}}
"#;
    let path = dir.path().join("big.yaml");
    std::fs::write(&path, idep).unwrap();
    let out = lint_paths(
        std::slice::from_ref(&path),
        &LintOptions {
            node_gpus: 8,
            ..Default::default()
        },
    );
    let f = out
        .findings
        .iter()
        .find(|f| f.code == "IR002")
        .expect("IR002");
    assert!(
        f.message.contains("gpu-1") && f.message.contains("8"),
        "{}",
        f.message
    );
    assert_eq!(f.line, 10, "points at the hostname pin");
    let out16 = lint_paths(
        std::slice::from_ref(&path),
        &LintOptions {
            node_gpus: 16,
            ..Default::default()
        },
    );
    assert!(!out16.findings.iter().any(|f| f.code == "IR002"));
    // Fewer GPUs requested than tp-size: IR009.
    let low = idep
        .replace("amd.com/gpu: 8", "amd.com/gpu: 4")
        .replace("gpu-1}", "gpu-1}\n        hostNetwork: false");
    std::fs::write(&path, low).unwrap();
    let out = lint_at(path);
    assert!(
        out.findings.iter().any(|f| f.code == "IR009"),
        "{:?}",
        out.findings
    );
}

#[test]
fn plain_deployments_single_replica_gap_and_silent_surge() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: gap}
spec:
  replicas: 1
  strategy: {type: Recreate}
  selector: {matchLabels: {app: gap}}
  template:
    metadata: {labels: {app: gap}}
    spec:
      containers: [{name: c, image: x}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: silent}
spec:
  replicas: 1
  selector: {matchLabels: {app: s}}
  template:
    metadata: {labels: {app: s}}
    spec:
      containers: [{name: engine, image: x, command: [python3, -m, infera.engine.sglang]}]
"#;
    let path = dir.path().join("d.yaml");
    std::fs::write(&path, text).unwrap();
    let out = lint_at(path);
    let found: Vec<_> = out
        .findings
        .iter()
        .map(|f| (f.code, f.object.name.as_str()))
        .collect();
    assert!(found.contains(&("IR008", "gap")), "{found:?}");
    assert!(found.contains(&("IR007", "silent")), "{found:?}");
    assert!(!found.contains(&("IR008", "silent")), "{found:?}");
}

#[test]
fn hostile_input_gets_an_error_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let deep = format!("a: {}{}\n", "[".repeat(200), "]".repeat(200));
    let mut bomb = String::from("a: &a [x,x,x,x,x,x,x,x,x,x]\n");
    for i in 0..9u8 {
        let (me, prev) = ((b'b' + i) as char, (b'a' + i) as char);
        bomb.push_str(&format!(
            "{me}: &{me} [{}]\n",
            vec![format!("*{prev}"); 10].join(",")
        ));
    }
    let cases: [(&str, Vec<u8>, &str); 4] = [
        ("deep.yaml", deep.into_bytes(), "budget"),
        ("bomb.yaml", bomb.into_bytes(), "alias"),
        ("bin.yaml", vec![0xff, 0xfe, 0x00, 0x01], "binary"),
        ("dup.yaml", b"a: 1\na: 2\n".to_vec(), "duplicate"),
    ];
    for (name, bytes, needle) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let out = lint_paths(
            &[path, corpus("multinode-tp-aggregated.yaml")],
            &LintOptions::default(),
        );
        assert_eq!(out.input_errors.len(), 1, "{name}: {:?}", out.input_errors);
        let msg = out.input_errors[0].message.to_lowercase();
        assert!(msg.contains(needle), "{name}: {msg}");
        assert!(
            out.findings.iter().any(|f| f.code == "IR012"),
            "{name}: other file still linted"
        );
    }
}

/// Lint one file with 8 GPUs a node.
fn lint_at(path: PathBuf) -> infera_lint::engine::LintOutcome {
    lint_paths(
        &[path],
        &LintOptions {
            node_gpus: 8,
            ..Default::default()
        },
    )
}

fn lint_text(name: &str, text: &str) -> Vec<infera_lint::finding::Finding> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    let out = lint_at(path);
    assert!(out.input_errors.is_empty(), "{:?}", out.input_errors);
    out.findings
}

fn has(found: &[infera_lint::finding::Finding], code: &str, svc: &str) -> bool {
    found
        .iter()
        .any(|f| f.code == code && f.object.service.as_deref() == Some(svc))
}

/// The pinned hostNetwork recipes as shipped skip the probe (IR001, an
/// old-pod-first gap); IR001 warns that its fix alone would stall, and the
/// hostname placeholder blocks nothing.
#[test]
fn pinned_host_network_recipes_as_shipped() {
    let found = lint_text(
        "pd.yaml",
        &std::fs::read_to_string(corpus("pd-1p1d-mooncake.yaml")).unwrap(),
    );
    for (svc, node) in [("prefill", "<PREFILL_NODE>"), ("decode", "<DECODE_NODE>")] {
        let ir001 = found
            .iter()
            .find(|f| f.code == "IR001" && f.object.service.as_deref() == Some(svc))
            .expect("IR001");
        assert!(
            ir001
                .message
                .contains(&format!("pinned to one node (whichever `{node}` names)"))
                && ir001.message.contains("stall"),
            "{}",
            ir001.message
        );
        let ir011 = found
            .iter()
            .find(|f| {
                f.code == "IR011"
                    && f.message.contains(node)
                    && f.object.service.as_deref() == Some(svc)
            })
            .expect("IR011 on the hostname");
        assert!(ir011.message.contains("blocks: none"), "{}", ir011.message);
        // Old-pod-first: no surge, so no surge stall to report.
        assert!(!has(&found, "IR002", svc) && !has(&found, "IR003", svc));
    }
}

/// The recipe family the issue describes: probed (IR001's fix applied),
/// pinned with `<PREFILL_NODE>`, `hostNetwork: true`, 8 GPUs. Every pinned
/// service raises IR002 and IR003; IR011 stays as information.
#[test]
fn probed_whole_node_pinned_recipe_raises_ir002_and_ir003_per_service() {
    let shipped = std::fs::read_to_string(corpus("pd-1p1d-mooncake.yaml")).unwrap();
    let probed = shipped
        .replace("      skipReadinessProbe: true\n", "")
        .replace("amd.com/gpu: 1}", "amd.com/gpu: 8}");
    assert_ne!(probed, shipped);
    let found = lint_text("pd.yaml", &probed);
    for (svc, node) in [("prefill", "<PREFILL_NODE>"), ("decode", "<DECODE_NODE>")] {
        for code in ["IR002", "IR003"] {
            let f = found
                .iter()
                .find(|f| f.code == code && f.object.service.as_deref() == Some(svc))
                .unwrap_or_else(|| panic!("no {code} for {svc}: {found:?}"));
            assert!(
                f.message
                    .contains(&format!("pinned to one node (whichever `{node}` names)")),
                "{}",
                f.message
            );
        }
        assert!(has(&found, "IR011", svc));
        assert!(!has(&found, "IR001", svc) && !has(&found, "IR004", svc));
    }
    // 1 GPU of 8 fits twice: IR003 (host ports) only.
    let one_gpu = shipped.replace("      skipReadinessProbe: true\n", "");
    let found = lint_text("pd.yaml", &one_gpu);
    assert!(has(&found, "IR003", "prefill") && has(&found, "IR003", "decode"));
    assert!(!has(&found, "IR002", "prefill") && !has(&found, "IR002", "decode"));
}

/// The 8-GPU Kimi-K3 and GLM-5.2 recipes are probed and not pinned: the
/// surge pod needs a whole free node (IR004, a warning without inventory).
#[test]
fn whole_node_recipes_need_a_spare_node() {
    for file in ["kimi-k3-vllm.yaml", "glm5.2-sglang.yaml"] {
        let found = lint_text(file, &std::fs::read_to_string(corpus(file)).unwrap());
        let f = found
            .iter()
            .find(|f| f.code == "IR004" && f.object.service.as_deref() == Some("worker"))
            .unwrap_or_else(|| panic!("{file}: no IR004 in {found:?}"));
        assert!(
            f.message
                .contains("needs 1 free node with 8 amd.com/gpu while the old pod runs"),
            "{file}: {}",
            f.message
        );
    }
}
