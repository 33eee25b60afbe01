//! Every rule on a manifest where it must fire and one where it must not: a
//! table of (rule, manifest, expected), run through the engine with only
//! that rule enabled, so each row reads like the rule's spec.

use crate::engine::{LintOptions, lint_source};

/// `spec.services.w` of an InferaDeployment, in YAML flow style.
fn idep(service: &str) -> String {
    format!(
        "apiVersion: infera.amd.com/v1alpha1\nkind: InferaDeployment\nmetadata: {{name: t}}\nspec:\n  services:\n    w: {service}\n"
    )
}

/// A worker service whose pod is `pod` (an `extraPodSpec`, flow style).
fn idep_pod(pod: &str) -> String {
    idep(&format!("{{componentType: worker, extraPodSpec: {pod}}}"))
}

/// A main container that runs the engine, with `extra` fields.
fn engine(extra: &str) -> String {
    let sep = if extra.is_empty() { "" } else { ", " };
    format!("{{name: main, image: x, command: [python3, -m, infera.engine.sglang]{sep}{extra}}}")
}

/// An apps/v1 Deployment of `replicas` pods with `strategy` and `container`.
fn deployment(replicas: u32, strategy: &str, container: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d}}\nspec:\n  replicas: {replicas}\n  strategy: {strategy}\n  selector: {{matchLabels: {{app: d}}}}\n  template:\n    metadata: {{labels: {{app: d}}}}\n    spec: {{containers: [{container}]}}\n"
    )
}

const PIN: &str = "nodeSelector: {kubernetes.io/hostname: gpu-1}";
const READY: &str = "readinessProbe: {httpGet: {path: /ready, port: 30090}, timeoutSeconds: 10}";

/// (rule, what the row shows, manifest, fires).
#[rustfmt::skip]
fn cases() -> Vec<(&'static str, &'static str, String, bool)> {
    let gpus = |n: u32| format!("resources: {{limits: {{amd.com/gpu: {n}}}}}");
    vec![
        // IR001 skip-probe-serving
        ("IR001", "serving worker skips the probe", idep("{componentType: worker, skipReadinessProbe: true}"), true),
        ("IR001", "probe kept", idep("{componentType: worker}"), false),
        ("IR001", "idle-deployed worker", idep_pod("{containers: [{name: main, image: x, command: [sleep, infinity]}]}").replace("worker,", "worker, skipReadinessProbe: true,"), false),
        // IR002 surge-stall-gpu
        ("IR002", "pinned, 8 of 8 GPUs", idep_pod(&format!("{{{PIN}, containers: [{}]}}", engine(&gpus(8)))), true),
        ("IR002", "pinned, 4 of 8 GPUs", idep_pod(&format!("{{{PIN}, containers: [{}]}}", engine(&gpus(4)))), false),
        ("IR002", "8 GPUs, not pinned", idep_pod(&format!("{{containers: [{}]}}", engine(&gpus(8)))), false),
        // IR003 surge-stall-host-port
        ("IR003", "hostNetwork, pinned", idep_pod(&format!("{{hostNetwork: true, {PIN}, containers: [{}]}}", engine(""))), true),
        ("IR003", "hostNetwork, not pinned", idep_pod(&format!("{{hostNetwork: true, containers: [{}]}}", engine(""))), false),
        // IR004 surge-needs-spare-node
        ("IR004", "hostNetwork, not pinned", idep_pod(&format!("{{hostNetwork: true, containers: [{}]}}", engine(""))), true),
        ("IR004", "shares a node", idep_pod(&format!("{{containers: [{}]}}", engine(""))), false),
        // IR005 probe-not-registration
        ("IR005", "probes /health", idep_pod(&format!("{{containers: [{}]}}", engine("readinessProbe: {httpGet: {path: /health, port: 30000}}"))), true),
        ("IR005", "probes /ready on the readiness port", idep_pod(&format!("{{containers: [{}]}}", engine(READY))), false),
        // IR006 readiness-port-unknowable
        ("IR006", "port with a space", idep("{componentType: worker, env: [{name: INFERA_READINESS_PORT, value: \" 30090\"}]}"), true),
        ("IR006", "port from valueFrom", idep("{componentType: worker, env: [{name: INFERA_READINESS_PORT, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]}"), true),
        ("IR006", "plain integer port", idep("{componentType: worker, env: [{name: INFERA_READINESS_PORT, value: \"30090\"}]}"), false),
        // IR007 surge-without-readiness
        ("IR007", "engine, default strategy, no probe", deployment(1, "{}", &engine("")), true),
        ("IR007", "engine with a /ready probe", deployment(1, "{}", &engine(READY)), false),
        ("IR007", "not the engine", deployment(1, "{}", "{name: web, image: nginx}"), false),
        // IR008 single-replica-gap
        ("IR008", "one replica, Recreate", deployment(1, "{type: Recreate}", "{name: web, image: nginx}"), true),
        ("IR008", "one replica, maxSurge 0", deployment(1, "{rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}", "{name: web, image: nginx}"), true),
        ("IR008", "two replicas, Recreate", deployment(2, "{type: Recreate}", "{name: web, image: nginx}"), false),
        ("IR008", "one replica, surge first", deployment(1, "{rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}", "{name: web, image: nginx}"), false),
        // IR009 gpu-request-below-parallelism
        ("IR009", "tp 8 on 1 GPU", idep("{componentType: worker, args: [--tp-size, \"8\"], resources: {gpu: 1}}"), true),
        ("IR009", "tp 8 on 8 GPUs", idep("{componentType: worker, args: [--tp-size, \"8\"], resources: {gpu: 8}}"), false),
        ("IR009", "tp from a variable", idep("{componentType: worker, args: [--tp-size, $TP], resources: {gpu: 1}}"), false),
        // IR010 ready-probe-timeout-short
        ("IR010", "/ready with timeoutSeconds 5", idep_pod(&format!("{{containers: [{}]}}", engine("readinessProbe: {httpGet: {path: /ready, port: 30090}, timeoutSeconds: 5}"))), true),
        ("IR010", "/ready with timeoutSeconds 10", idep_pod(&format!("{{containers: [{}]}}", engine(READY))), false),
        ("IR010", "the operator's injected probe", idep("{componentType: worker}"), false),
        // IR011 unresolved-placeholder
        ("IR011", "replicas placeholder", idep("{componentType: worker, replicas: \"${N}\"}"), true),
        ("IR011", "hostname placeholder", idep_pod(&format!("{{nodeSelector: {{kubernetes.io/hostname: <NODE>}}, containers: [{}]}}", engine(""))), true),
        ("IR011", "placeholder in a field no rule needs", idep("{componentType: worker, image: \"<IMAGE>\"}"), false),
        // IR012 multinode-gap
        ("IR012", "two nodes, one group", idep("{componentType: worker, numberOfNodes: 2, replicas: 1}"), true),
        ("IR012", "two nodes, two groups", idep("{componentType: worker, numberOfNodes: 2, replicas: 2}"), false),
        ("IR012", "one node", idep("{componentType: worker, replicas: 1}"), false),
    ]
}

#[test]
fn every_rule_fires_and_stays_quiet() {
    let mut failures = Vec::new();
    for (code, what, manifest, fires) in cases() {
        let opts = LintOptions {
            node_gpus: 8,
            enabled: vec![code],
            ..LintOptions::default()
        };
        let out = lint_source("case.yaml", manifest.as_bytes(), &opts);
        if !out.input_errors.is_empty() {
            failures.push(format!(
                "{code} {what}: input errors {:?}\n{manifest}",
                out.input_errors
            ));
            continue;
        }
        let found = out.findings.iter().filter(|f| f.code == code).count();
        if (found > 0) != fires {
            failures.push(format!(
                "{code} {what}: expected {}, got {:?}\n{manifest}",
                if fires { "a finding" } else { "none" },
                out.findings
                    .iter()
                    .map(|f| (f.code, f.message.as_str()))
                    .collect::<Vec<_>>()
            ));
        }
        // Every finding points into the manifest.
        for f in &out.findings {
            if f.line == 0 || f.line > manifest.lines().count() {
                failures.push(format!("{code} {what}: line {} out of range", f.line));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_rule_has_a_positive_and_a_negative_case() {
    let cases = cases();
    for (meta, _) in &super::REGISTRY {
        for want in [true, false] {
            assert!(
                cases
                    .iter()
                    .any(|(c, _, _, f)| *c == meta.code && *f == want),
                "{} has no {} case",
                meta.code,
                if want { "positive" } else { "negative" }
            );
        }
    }
}
