//! RBAC for real: on the upstream lab, a ServiceAccount bound
//! to exactly what `infera rbac` prints can run `rollout restart`, `audit`
//! and `lint --cluster`; removing any one verb of any rule makes the command
//! that needs it fail with exit 2 and one line naming the verb and the
//! resource. So the printed Role is sufficient and minimal.

use std::path::Path;
use std::process::Output;

use crate::common::lab::{Attached, Lab, SCENARIO_NAMESPACE, json, lab_or_skip, wait_steady};
use serde_json::Value;

const NS: &str = SCENARIO_NAMESPACE;

/// The commands the Role is for, cheapest first.
const COMMANDS: [&[&str]; 4] = [
    &["lint", "--cluster", "-n", NS],
    &["audit", "idep/llama", "-n", NS, "--for", "5s"],
    // A plain Deployment with no replicas (so no gap to report): the trigger
    // is a patch on it.
    &[
        "rollout",
        "restart",
        "deploy/plain",
        "-n",
        NS,
        "--yes",
        "--min-ready",
        "0",
    ],
    &["rollout", "restart", "idep/llama", "-n", NS, "--yes"],
];

/// What the plan says when the preflight cannot list nodes or pods.
const CAPACITY_UNKNOWN: &str = "unknown (nodes or pods";

const DRY_RUN: [&str; 6] = ["rollout", "restart", "idep/llama", "-n", NS, "--dry-run"];

fn kubectl_ok(lab: &Lab, args: &[&str]) -> Output {
    let out = lab.kubectl(args);
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn apply(lab: &Lab, object: &Value) {
    let file = lab.dir.path().join("object.json");
    std::fs::write(&file, object.to_string()).expect("write object");
    kubectl_ok(lab, &["apply", "-f", file.to_str().unwrap_or_default()]);
}

struct Ran {
    code: Option<i32>,
    text: String,
}

fn run(lab: &Lab, kubeconfig: &Path, token: &str, args: &[&str]) -> Ran {
    let out = lab
        .infera(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .output()
        .expect("run infera");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains(token), "{args:?} printed the token");
    Ran {
        code: out.status.code(),
        text,
    }
}

/// [`run`], which must exit with `code` (`context` says under what grant).
fn run_expecting(
    lab: &Lab,
    kubeconfig: &Path,
    token: &str,
    args: &[&str],
    code: i32,
    context: &str,
) -> Ran {
    let ran = run(lab, kubeconfig, token, args);
    assert_eq!(ran.code, Some(code), "{args:?} {context}:\n{}", ran.text);
    ran
}

/// `object` with `verb` removed from rule `rule` (the rule dropped when it
/// was its only verb).
fn without(object: &Value, rule: usize, verb: &str) -> Value {
    let mut object = object.clone();
    if let Some(rules) = object["rules"].as_array_mut() {
        if let Some(verbs) = rules[rule]["verbs"].as_array_mut() {
            verbs.retain(|v| v != verb);
        }
        if rules[rule]["verbs"].as_array().is_some_and(Vec::is_empty) {
            rules.remove(rule);
        }
    }
    object
}

/// Every (object index, rule index, resource, verb) of the Role and the
/// ClusterRole.
fn grants(objects: &[Value]) -> Vec<(usize, usize, String, String)> {
    let mut out = Vec::new();
    for (oi, o) in objects.iter().enumerate() {
        for (ri, r) in o["rules"].as_array().into_iter().flatten().enumerate() {
            let resource = r["resources"][0].as_str().unwrap_or("?").to_string();
            for v in r["verbs"].as_array().into_iter().flatten() {
                out.push((
                    oi,
                    ri,
                    resource.clone(),
                    v.as_str().unwrap_or("?").to_string(),
                ));
            }
        }
    }
    out
}

#[test]
fn printed_role_is_sufficient_and_minimal() {
    let Some(lab) = lab_or_skip("printed_role_is_sufficient_and_minimal") else {
        return;
    };
    let attached = Attached::start(&lab, "pd-1p1d");
    wait_steady(&lab, NS, 3);
    kubectl_ok(
        &lab,
        &[
            "create",
            "deployment",
            "plain",
            "--image=rocm/infera:0.9.1",
            "--replicas=0",
            "-n",
            NS,
        ],
    );
    kubectl_ok(&lab, &["create", "serviceaccount", "infera", "-n", NS]);
    let printed = lab
        .infera(&["rbac", "-n", NS, "-o", "json"])
        .output()
        .expect("infera rbac");
    let objects: Vec<Value> = json(&printed)["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    objects.iter().for_each(|o| apply(&lab, o));
    let (kubeconfig, token) = lab.sa_kubeconfig(NS, "infera");

    // Sufficient: everything works with exactly the printed objects.
    for args in COMMANDS {
        run_expecting(&lab, &kubeconfig, &token, args, 0, "with the printed Role");
    }

    let full_plan = run(&lab, &kubeconfig, &token, &DRY_RUN).text;
    assert!(!full_plan.contains(CAPACITY_UNKNOWN), "{full_plan}");
    // Minimal: each verb is needed by some command, which says so.
    let mut unused = Vec::new();
    for (oi, ri, resource, verb) in grants(&objects) {
        if resource == "events" {
            // Read only at a stall, to quote the FailedScheduling event; a
            // denied list falls back to the pod's PodScheduled message
            // (docs/lab.md, "RBAC, proven minimal"), so no command fails
            // without it here.
            continue;
        }
        if infera_model::manifest::serving::ServingKind::ALL
            .iter()
            .any(|k| k.plural() == resource)
        {
            // A serving CRD's list is needed only where the CRD is
            // installed; the lab installs none, so discovery skips the
            // group and no command can fail without the rule.
            continue;
        }
        apply(&lab, &without(&objects[oi], ri, &verb));
        if resource == "nodes" {
            // The preflight's capacity check degrades to "unknown" rather
            // than failing: the plan must change.
            let plan = run(&lab, &kubeconfig, &token, &DRY_RUN).text;
            apply(&lab, &objects[oi]);
            if !plan.contains(CAPACITY_UNKNOWN) {
                unused.push(format!("{} {verb} {resource}", objects[oi]["kind"]));
            }
            eprintln!("without {verb} {resource}: the plan's capacity is unknown:\n{plan}");
            continue;
        }
        let failed = COMMANDS.iter().find_map(|args| {
            let ran = run(&lab, &kubeconfig, &token, args);
            (ran.code != Some(0)).then_some((args, ran))
        });
        apply(&lab, &objects[oi]);
        let Some((args, ran)) = failed else {
            unused.push(format!("{} {verb} {resource}", objects[oi]["kind"]));
            continue;
        };
        assert_eq!(
            ran.code,
            Some(2),
            "{args:?} without {verb} {resource}:\n{}",
            ran.text
        );
        let named = format!("cannot {verb} {resource}");
        let lines: Vec<&str> = ran.text.lines().filter(|l| l.contains(&named)).collect();
        assert_eq!(
            lines.len(),
            1,
            "{args:?} without {verb} {resource}: want one line with `{named}`:\n{}",
            ran.text
        );
        eprintln!("without {verb} {resource}: {args:?} -> {}", lines[0].trim());
    }
    assert!(unused.is_empty(), "granted but never needed: {unused:?}");
    every_namespace_needs_rbac_all_namespaces(&lab, &kubeconfig, &token);
    drop(attached);
}

/// `audit -A` and `lint --cluster -A` list and watch in every namespace:
/// refused under the namespaced Role, each refusal one line naming the
/// cluster-wide verb and `infera rbac -A`, and allowed once what `infera
/// rbac -A` prints is applied.
fn every_namespace_needs_rbac_all_namespaces(lab: &Lab, kubeconfig: &Path, token: &str) {
    kubectl_ok(
        lab,
        &[
            "label",
            "inferadeployments.infera.amd.com",
            "llama",
            "rbac-scope=all",
            "-n",
            NS,
        ],
    );
    let commands: [&[&str]; 2] = [
        &["audit", "-A", "-l", "rbac-scope=all", "--for", "5s"],
        &["lint", "--cluster", "-A"],
    ];
    for args in commands {
        let ran = run_expecting(lab, kubeconfig, token, args, 2, "under the namespaced Role");
        // One line per refused request (`lint` reports each kind it
        // could not list), each naming the cluster-wide grant.
        let refusals: Vec<&str> = ran
            .text
            .lines()
            .filter(|l| l.contains("forbidden"))
            .collect();
        assert!(!refusals.is_empty(), "{args:?}: no refusal:\n{}", ran.text);
        for line in refusals {
            assert!(
                line.contains("forbidden: cannot ")
                    && line.contains(" cluster-wide; `infera rbac -A -n NAMESPACE`"),
                "{args:?}: {line}"
            );
        }
    }
    let printed = lab
        .infera(&["rbac", "-A", "-n", NS, "-o", "json"])
        .output()
        .expect("infera rbac -A");
    let objects = json(&printed)["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(objects[0]["kind"], "ClusterRole");
    objects.iter().for_each(|o| apply(lab, o));
    for args in commands {
        run_expecting(lab, kubeconfig, token, args, 0, "with `infera rbac -A`");
    }
}
