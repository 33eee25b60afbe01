use super::{Hit, Workload, declare_rule};
use crate::finding::Severity;
use infera_model::operator::command_tokens;

declare_rule! {
    /// ## What it does
    /// Compares the GPUs the engine's parallelism flags need on the node with
    /// the GPUs the main container requests. sglang: `--tp-size` × `--pp-size`
    /// × `--dp-size` (DP drops to 1 with `--enable-dp-attention`); vllm:
    /// `--tensor-parallel-size` × `--pipeline-parallel-size` ×
    /// (`--data-parallel-size-local`, else `--data-parallel-size`). Short
    /// forms (`--tp`, `--dp`, `-tp`, `-dp`, `--flag=value`) count. An unknown
    /// value (placeholder, env expansion) means no finding.
    ///
    /// ## Why is this bad?
    /// The scheduler sees the GPUs the engine uses but did not request as
    /// free, and places the surge pod on them: the replacement fails to
    /// allocate memory, or starves the serving pod.
    ///
    /// ## Example
    /// ```yaml
    /// args: ["--tp-size", "8"]
    /// resources: {gpu: 1}
    /// ```
    ///
    /// ## Use instead
    /// Request as many GPUs as the engine uses (`resources: {gpu: 8}`).
    RULE, "IR009", "gpu-request-below-parallelism", Error,
    "engine parallelism needs more GPUs than the container requests"
}

/// GPUs the engine needs on its node, or None when a factor is unknown.
pub fn gpus_needed(tokens: &[String]) -> Option<i64> {
    let text = tokens.join(" ");
    let vllm = text.contains("infera.engine.vllm")
        || text.contains("vllm ")
        || tokens
            .iter()
            .any(|t| t.starts_with("--tensor-parallel-size"));
    let mut flags: Vec<(String, Option<String>)> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if t.starts_with('-') {
            if let Some((k, v)) = t.split_once('=') {
                flags.push((k.to_string(), Some(v.to_string())));
            } else {
                let v = tokens.get(i + 1).filter(|v| !v.starts_with('-')).cloned();
                flags.push((t.clone(), v));
            }
        }
        i += 1;
    }
    // Later occurrences win, as argparse does.
    let get = |names: &[&str]| -> Result<Option<i64>, ()> {
        let mut found = None;
        for (k, v) in &flags {
            if names.contains(&k.as_str()) {
                found = Some(v.clone());
            }
        }
        match found {
            None => Ok(None),
            Some(Some(v)) => v.trim().parse::<i64>().map(Some).map_err(|_| ()),
            Some(None) => Err(()),
        }
    };
    let has = |name: &str| flags.iter().any(|(k, _)| k == name);
    let product = if vllm {
        let tp = get(&["--tensor-parallel-size", "-tp", "--tp"])
            .ok()?
            .unwrap_or(1);
        let pp = get(&["--pipeline-parallel-size", "-pp", "--pp"])
            .ok()?
            .unwrap_or(1);
        let dp_local = get(&["--data-parallel-size-local", "-dpl"]).ok()?;
        let dp = match dp_local {
            Some(n) => n,
            None => get(&["--data-parallel-size", "-dp", "--dp"])
                .ok()?
                .unwrap_or(1),
        };
        tp.checked_mul(pp)?.checked_mul(dp)?
    } else {
        let tp = get(&["--tp-size", "--tp", "--tensor-parallel-size", "-tp"])
            .ok()?
            .unwrap_or(1);
        let pp = get(&["--pp-size", "--pp", "--pipeline-parallel-size", "-pp"])
            .ok()?
            .unwrap_or(1);
        let dp = get(&["--dp-size", "--dp", "--data-parallel-size", "-dp"])
            .ok()?
            .unwrap_or(1);
        let dp = if has("--enable-dp-attention") { 1 } else { dp };
        tp.checked_mul(pp)?.checked_mul(dp)?
    };
    Some(product)
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    if !w.worker || !w.serving {
        return;
    }
    let Some(c) = w.main_container() else { return };
    let tokens = command_tokens(c);
    let Some(needed) = gpus_needed(&tokens) else {
        return;
    };
    if w.unknown(super::Slot::Gpu, RULE.code) {
        return;
    }
    // Multi-node groups split parallelism across nodes.
    let per_node = needed / i64::from(w.number_of_nodes.unwrap_or(1).max(1));
    let requested = w.gpu_request().map_or(0, |(_, n)| n);
    if per_node <= requested {
        return;
    }
    let path = if w.pod_path.is_some() {
        w.main_field(&["resources"])
    } else {
        w.base_field(&["resources"])
    };
    out.push(Hit::new(
        &RULE,
        Severity::Error,
        path,
        format!(
            "{}: the engine's parallelism flags use {per_node} GPUs on the node but the container requests {requested}: the scheduler counts {} GPUs as free and can place the surge pod on GPUs the serving pod is using; request {per_node} GPUs",
            w.who(),
            per_node - requested
        ),
    ));
}

#[cfg(test)]
mod tests {
    use super::gpus_needed;
    fn t(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }
    #[test]
    fn parallelism_flags() {
        assert_eq!(
            gpus_needed(&t(
                "python3 -m infera.engine.sglang --tp-size 4 --dp-size 2"
            )),
            Some(8)
        );
        assert_eq!(
            gpus_needed(&t(
                "python3 -m infera.engine.sglang --tp 4 --dp 2 --enable-dp-attention"
            )),
            Some(4)
        );
        assert_eq!(
            gpus_needed(&t(
                "python3 -m infera.engine.vllm --tensor-parallel-size=2 -pp 2 --data-parallel-size 4 --data-parallel-size-local 2"
            )),
            Some(8)
        );
        assert_eq!(
            gpus_needed(&t("python3 -m infera.engine.sglang --tp-size <TP>")),
            None
        );
        assert_eq!(
            gpus_needed(&t("python3 -m infera.engine.sglang --tp-size $TP")),
            None
        );
        assert_eq!(gpus_needed(&t("python3 -m infera.engine.sglang")), Some(1));
    }
}
