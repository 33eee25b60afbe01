use super::{Hit, Workload, declare_rule};
use crate::finding::Severity;

declare_rule! {
    /// ## What it does
    /// Compares the GPUs the engine's parallelism flags need on the node with
    /// the GPUs the main container requests, for every engine the catalogue
    /// (`infera_model::engine`) knows the flags of. SGLang: `--tp-size` ×
    /// `--pp-size` × `--dp-size` (DP drops to 1 with
    /// `--enable-dp-attention`); vLLM: `--tensor-parallel-size` ×
    /// `--pipeline-parallel-size` × (`--data-parallel-size-local`, else
    /// `--data-parallel-size`); TGI: `--num-shard` (or env `NUM_SHARD`).
    /// Short forms (`--tp`, `--dp`, `-tp`, `-dp`, `--flag=value`) count. A
    /// multi-node group divides the product by its nodes. An unknown value
    /// (placeholder, env expansion) means no finding; NIM and Triton take
    /// parallelism from their profile or built engine, not from flags; a
    /// plain workload that requests no GPU resource (a TPU or CPU server)
    /// is left alone.
    ///
    /// ## Why is this bad?
    /// The scheduler sees the GPUs the engine uses but did not request as
    /// free, and places the surge pod on them: the replacement fails to
    /// allocate memory, or starves the serving pod.
    ///
    /// ## Example
    /// ```yaml
    /// command: [vllm, serve, my/model, --tensor-parallel-size, "4"]
    /// resources: {limits: {nvidia.com/gpu: 1}}
    /// ```
    ///
    /// ## Use instead
    /// Request as many GPUs as the engine uses (`nvidia.com/gpu: 4`).
    RULE, "IR009", "gpu-request-below-parallelism", Error,
    "engine parallelism needs more GPUs than the container requests"
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    // An infera worker counts when it serves (not idle-deployed); a plain
    // workload or a Dynamo service when it runs a catalogued engine.
    let engine = match (w.worker, w.engine) {
        (true, _) if !w.serving => return,
        (true, e) => e.unwrap_or(infera_model::engine::INFERA),
        (false, Some(e)) => e,
        (false, None) => return,
    };
    let Some(c) = w.main_container() else { return };
    let Some(needed) = engine.gpus_needed(c) else {
        return;
    };
    if w.unknown(super::Slot::Gpu, RULE.code) {
        return;
    }
    // Multi-node groups split parallelism across nodes.
    let per_node = needed / i64::from(w.number_of_nodes.unwrap_or(1).max(1));
    // A plain model server that requests no GPU at all runs on another
    // accelerator (TPU, CPU, a DRA claim): its flags say nothing about GPUs.
    let requested = match w.gpu_request() {
        Some((_, n)) => n,
        None if w.worker => 0,
        None => return,
    };
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
            "{}: the {} parallelism flags use {per_node} GPUs on the node but the container requests {requested}: the scheduler counts {} GPUs as free and can place the surge pod on GPUs the serving pod is using; request {per_node} GPUs",
            w.who(),
            engine.name,
            per_node - requested
        ),
    ));
}
