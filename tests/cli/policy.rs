//! `infera policy`: the flags reach the objects (`--fail-on`, `--action`,
//! `--operator`, `-o`), and a bad flag is a usage error.

use crate::common::case::infera;

/// (binding name, validationActions) of `infera policy -o json ARGS`.
fn bindings(args: &[&str]) -> Vec<(String, Vec<String>)> {
    let mut all = vec!["policy", "-o", "json"];
    all.extend_from_slice(args);
    let out = infera(&all).status(0).run();
    let list: serde_json::Value = serde_json::from_str(&out).expect("a JSON List");
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|o| o["kind"] == "ValidatingAdmissionPolicyBinding")
        .map(|o| {
            let actions = o["spec"]["validationActions"]
                .as_array()
                .expect("actions")
                .iter()
                .filter_map(|a| a.as_str().map(str::to_string))
                .collect();
            (
                o["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                actions,
            )
        })
        .collect()
}

#[test]
fn actions_follow_fail_on_and_action() {
    let deny = ["Deny".to_string(), "Audit".to_string()];
    let warn = ["Warn".to_string(), "Audit".to_string()];
    // Default: errors deny, warnings warn.
    let default = bindings(&[]);
    assert!(
        default
            .iter()
            .any(|(n, a)| n.ends_with("-deny") && a == &deny),
        "{default:?}"
    );
    assert!(
        default
            .iter()
            .any(|(n, a)| n.ends_with("-warn") && a == &warn),
        "{default:?}"
    );
    // --fail-on warning: everything denies.
    let strict = bindings(&["--fail-on", "warning"]);
    assert!(strict.iter().all(|(_, a)| a == &deny), "{strict:?}");
    // --action warn (and --fail-on never): nothing denies.
    for args in [&["--action", "warn"][..], &["--fail-on", "never"]] {
        let dry = bindings(args);
        assert!(
            !dry.is_empty() && dry.iter().all(|(_, a)| a == &warn),
            "{args:?}: {dry:?}"
        );
    }
}

#[test]
fn the_operator_generation_is_in_the_objects_and_the_yaml_header() {
    let out = infera(&["policy", "--operator", "pre-176"]).status(0).run();
    assert!(out.contains("operator generation pre-176"), "{out}");
    assert!(
        out.contains("infera.amd.com/operator-generation: pre-176"),
        "{out}"
    );
    // Before #176 the single-replica worker is a certain gap: IR008 on the CR.
    assert!(out.contains("IR008 single-replica-gap"), "{out}");
    let latest = infera(&["policy"]).status(0).run();
    assert!(latest.contains("operator generation 176"), "{latest}");
}

#[test]
fn a_bad_flag_is_a_usage_error() {
    infera(&["policy", "--action", "deny-all"])
        .status(2)
        .stderr("possible values: severity, warn")
        .run();
}
