use super::{Hit, Workload, declare_rule};
use crate::finding::Severity;

declare_rule! {
    /// ## What it does
    /// Flags `<…>`, `${…}` or `{{…}}` left in a field the rules need: node
    /// selector values and affinity, resources, replicas, ports. Says which
    /// rules could not decide; the other rules still run.
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

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    for (path, raw) in &w.placeholders {
        let text = infera_model::manifest::node::path_string(path);
        let rules = if text.contains("nodeSelector") || text.contains("affinity") {
            "IR002 surge-stall-gpu, IR003 surge-stall-host-port, IR004 surge-needs-spare-node"
        } else if text.contains("resources") {
            "IR002 surge-stall-gpu, IR009 gpu-request-below-parallelism"
        } else if text.contains("replicas") || text.contains("numberOfNodes") {
            "IR001/IR005/IR006/IR008 (how large the gap is), IR012 multinode-gap"
        } else {
            "the capacity and port rules"
        };
        out.push(Hit::new(
            &RULE,
            Severity::Warning,
            path.clone(),
            format!(
                "{}: `{text}` is the unresolved placeholder {raw:?}, so {rules} could not decide; lint the rendered manifest (e.g. `envsubst < FILE | infera lint -`)",
                w.who()
            ),
        ));
    }
}
