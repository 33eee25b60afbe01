use super::{Hit, Slot, Workload, declare_rule};
use crate::finding::Severity;

declare_rule! {
    /// ## What it does
    /// Flags `<…>`, `${…}` or `{{…}}` left in a field the rules read: node
    /// selector values and affinity, GPU requests, replicas, numberOfNodes,
    /// ports. Says which verdicts it actually blocked (`blocks: none` when
    /// none): a hostname pin is one node whatever it names, so IR002 and
    /// IR003 are decided for it; a GPU count placeholder blocks only the GPU
    /// arithmetic (IR002, IR004's whole-node check, IR009). The other rules
    /// still run.
    ///
    /// ## Why is this bad?
    /// A template that was not rendered cannot be applied as is, and whether
    /// its rollout stalls or gaps depends on the value that will be filled
    /// in: infera cannot tell you.
    ///
    /// ## Example
    /// ```yaml
    /// nodeSelector: {kubernetes.io/hostname: <PREFILL_NODE>}
    /// ```
    ///
    /// ## Use instead
    /// Lint the rendered output (`envsubst < f.yaml | infera lint -`,
    /// `helm template … | infera lint -`).
    RULE, "IR011", "unresolved-placeholder", Warning,
    "a placeholder left in a field a rule needs"
}

/// Runs after every other rule (see `runner::run_rules`), so it knows which
/// verdicts each placeholder actually blocked.
pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    let blocked = w.blocked.borrow();
    for (path, raw) in &w.placeholders {
        let Some(slot) = w.slot_of(path, raw) else {
            continue;
        };
        let text = infera_model::manifest::node::path_string(path);
        let codes: Vec<String> = blocked
            .iter()
            .filter(|(s, _)| *s == slot)
            .filter_map(|(_, code)| {
                let meta = super::rule(code)?;
                Some(format!("{} {}", meta.code, meta.name))
            })
            .collect();
        let blocks = if codes.is_empty() {
            let why = if slot == Slot::Host {
                " (a hostname pin is one node whatever it names, so the rules decided without it)"
            } else {
                " (no rule's verdict depended on it)"
            };
            format!("blocks: none{why}")
        } else {
            format!("blocks: {}", codes.join(", "))
        };
        out.push(Hit::new(
            &RULE,
            Severity::Warning,
            path.clone(),
            format!(
                "{}: `{text}` ({}) is the unresolved placeholder {raw:?}; {blocks}; lint the rendered manifest (e.g. `envsubst < FILE | infera lint -`)",
                w.who(),
                slot.describe()
            ),
        ));
    }
}
