//! Running the rules on one workload: the context they read ([`Cx`]), the
//! registry in order (IR011 last), one finding per root cause, and the
//! suppression annotation.

use super::finding::RuleMeta;
use super::options::LintOptions;
use super::rules::{Capacity, Check, Hit, REGISTRY, Workload, rule};

/// Object annotation listing rule codes/names to ignore (`IR001/prefill` per service).
pub const LINT_IGNORE_ANNOTATION: &str = "infera.amd.com/lint-ignore";

/// What the rules read besides the workload itself.
#[derive(Clone, Copy)]
pub(crate) struct Cx<'a> {
    pub opts: &'a LintOptions,
    pub capacity: &'a Capacity,
    /// The DRA claims of the same source (file, stdin, live list).
    pub claims: &'a infera_model::dra::Claims,
    /// The object's namespace, budgets, claims and progress deadline.
    pub around: super::rules::Around<'a>,
    /// Where workloads the engine-dependent rules could not judge are told.
    pub unjudged: &'a std::cell::RefCell<Vec<crate::engine::summary::Unjudged>>,
}

/// The rules that need the engine of a GPU container to judge it: the
/// volume attach of its surge (IR015), its shutdown budget (IR016), its
/// startup budget (IR017).
pub(crate) const NEED_ENGINE: [&str; 3] = ["IR015", "IR016", "IR017"];

/// Tell (in `cx.unjudged`) a GPU workload whose main container runs no
/// engine the catalogue recognises: the rules of [`NEED_ENGINE`] that are
/// enabled did not judge it. Nothing for the common case (an engine).
pub(crate) fn note_unjudged(w: &Workload<'_>, cx: Cx<'_>) {
    if w.engine.is_some() || w.kind == "InferaDeployment" {
        return;
    }
    let Some((resource, n)) = w.gpu_request().filter(|(_, n)| *n > 0) else {
        return;
    };
    let opts = cx.opts;
    let rules: Vec<&'static str> = NEED_ENGINE
        .into_iter()
        .filter(|c| opts.enabled.is_empty() || opts.enabled.contains(c))
        .collect();
    let Some(main) = w.main_container().filter(|_| !rules.is_empty()) else {
        return;
    };
    cx.unjudged
        .borrow_mut()
        .push(crate::engine::summary::Unjudged {
            file: String::new(),
            workload: w.who(),
            container: main.name.clone(),
            gpus: format!("{n} {resource}"),
            rules,
        });
}

pub(crate) fn ignored(
    annotations: Option<&std::collections::BTreeMap<String, String>>,
    code: &str,
    service: Option<&str>,
) -> bool {
    let Some(list) = annotations.and_then(|a| a.get(LINT_IGNORE_ANNOTATION)) else {
        return false;
    };
    let Some(meta) = rule(code) else { return false };
    list.split(',').map(str::trim).any(|entry| {
        let (r, svc) = match entry.split_once('/') {
            Some((r, s)) => (r.trim(), Some(s.trim())),
            None => (entry, None),
        };
        (r.eq_ignore_ascii_case(meta.code) || r.eq_ignore_ascii_case(meta.name))
            && svc.is_none_or(|s| Some(s) == service)
    })
}

pub(crate) fn run_rules(w: &Workload<'_>, cx: Cx<'_>) -> Vec<Hit> {
    let mut hits = Vec::new();
    let opts = cx.opts;
    let enabled = |code: &str| opts.enabled.is_empty() || opts.enabled.contains(&code);
    // IR011 last: it reports which verdicts its placeholders blocked.
    let last = |meta: &RuleMeta| meta.code == super::rules::PLACEHOLDER_RULE;
    let rest = REGISTRY.iter().filter(|(meta, _)| !last(meta));
    let ordered = rest.chain(REGISTRY.iter().filter(|(meta, _)| last(meta)));
    for (_, check) in ordered.filter(|(meta, _)| enabled(meta.code)) {
        match check {
            Check::Pod(check) => check(w, &mut hits),
            Check::Around(check) => check(w, &cx.around, &mut hits),
        }
    }
    // One root cause, one finding: a skipped probe or an unknowable port
    // already explains the gap a generic rule would report again.
    let has = |hits: &[Hit], c: &str| hits.iter().any(|h| h.code == c);
    if has(&hits, "IR001") || has(&hits, "IR006") || has(&hits, "IR005") {
        hits.retain(|h| h.code != "IR008" && h.code != "IR007");
    }
    if has(&hits, "IR001") {
        hits.retain(|h| h.code != "IR006" && h.code != "IR005");
    }
    // An unpinned worker that needs a spare node (IR004, with the numbers
    // and the inventory's verdict) is not also reported as IR002's "no
    // eligible node holds both" from the same inventory.
    if has(&hits, "IR004") {
        hits.retain(|h| h.code != "IR002");
    }
    hits
}

#[cfg(test)]
mod unjudged_tests {
    use crate::engine::lint_source;
    use crate::options::LintOptions;

    fn deployment(image: &str, command: &str, args: &str, gpus: u32) -> String {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d}}\nspec:\n  replicas: 2\n  selector: {{matchLabels: {{app: d}}}}\n  template:\n    metadata: {{labels: {{app: d}}}}\n    spec:\n      containers:\n      - name: server\n        image: {image}\n        command: {command}\n        args: {args}\n        resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}\n"
        )
    }

    /// (image, command, args, GPUs, rules enabled, the rules said not to
    /// have judged it, the codes found).
    type Row<'a> = (
        &'a str,
        &'a str,
        &'a str,
        u32,
        &'a [&'static str],
        &'a [&'a str],
        &'a [&'a str],
    );

    /// A GPU container no engine is recognised on is said to be unjudged
    /// by the rules that need one; a rebuilt image or a script with the
    /// engine's flags is judged (IR007: no readiness probe; IR016 on
    /// vLLM's 60 s drain).
    #[test]
    fn gpu_workloads_without_an_engine_are_said_not_judged() {
        let all: [&str; 3] = ["IR015", "IR016", "IR017"];
        let table: [Row<'_>; 6] = [
            (
                "acme/llm-server:1",
                "[python3, serve.py]",
                "[]",
                1,
                &[],
                &all,
                &[],
            ),
            (
                "acme/llm-server:1",
                "[python3, serve.py]",
                "[]",
                0,
                &[],
                &[],
                &[],
            ),
            (
                "acme/llm-server:1",
                "[python3, serve.py]",
                "[]",
                1,
                &["IR016", "IR001"],
                &["IR016"],
                &[],
            ),
            (
                "acme/llm-server:1",
                "[python3, serve.py]",
                "[]",
                1,
                &["IR001"],
                &[],
                &[],
            ),
            (
                "acme/vllm-rebuild:1",
                "[]",
                "[--shutdown-timeout, \"60\"]",
                1,
                &[],
                &[],
                &["IR007", "IR016"],
            ),
            (
                "acme/llm:1",
                "[/entrypoint.sh]",
                "[--tensor-parallel-size, \"1\", --shutdown-timeout, \"60\"]",
                1,
                &[],
                &[],
                &["IR007", "IR016"],
            ),
        ];
        for (image, command, args, gpus, enabled, unjudged, codes) in table {
            let yaml = deployment(image, command, args, gpus);
            let opts = LintOptions {
                enabled: enabled.to_vec(),
                ..LintOptions::default()
            };
            let out = lint_source("t.yaml", yaml.as_bytes(), &opts);
            let said: Vec<&str> = out
                .summary
                .unjudged
                .iter()
                .flat_map(|u| u.rules.iter().copied())
                .collect();
            assert_eq!(said, unjudged, "{image} {command} {enabled:?}");
            let found: Vec<&str> = out.findings.iter().map(|f| f.code).collect();
            assert_eq!(found, codes, "{image} {command}");
        }
        let yaml = deployment("acme/llm-server:1", "[python3, serve.py]", "[]", 1);
        let out = lint_source("t.yaml", yaml.as_bytes(), &LintOptions::default());
        let line = crate::report::unjudged_line(&out.summary.unjudged[0]);
        assert!(
            line.starts_with("not judged: t.yaml: deployment d (container server, 1 nvidia.com/gpu) runs no engine infera recognises, so IR015, IR016, IR017 did not judge it; name the engine: "),
            "{line}"
        );
    }
}
