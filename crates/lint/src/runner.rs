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
