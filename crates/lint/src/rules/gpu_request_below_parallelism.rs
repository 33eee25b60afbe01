use super::{Hit, Workload, declare_rule};
use crate::finding::Severity;

declare_rule! {
    /// ## What it does
    /// Compares the GPUs the engine's parallelism flags need on the node with
    /// the GPUs the main container requests, for every engine the catalogue
    /// (`infera_model::catalogue`) knows the flags of. SGLang: `--tp-size` ×
    /// `--pp-size` × `--dp-size` (DP drops to 1 with
    /// `--enable-dp-attention`); vLLM: `--tensor-parallel-size` ×
    /// `--pipeline-parallel-size` × (`--data-parallel-size-local`, else
    /// `--data-parallel-size`); TGI: `--num-shard` (or env `NUM_SHARD`).
    /// Short forms (`--tp`, `--dp`, `-tp`, `-dp`, `--flag=value`) count. A
    /// multi-node group divides the product by its nodes; vLLM on Ray's
    /// distributed executor (`--distributed-executor-backend ray`) in a Ray
    /// cluster (RayService, RayClusterFleet) is compared with the GPUs of
    /// the whole cluster, where Ray places its workers. An unknown value
    /// (placeholder, env expansion, a DRA claim defined elsewhere) means no
    /// finding; GPUs claimed through DRA (a ResourceClaimTemplate or
    /// ResourceClaim of the same file, `gpu.*` device classes) count as
    /// requested; NIM and Triton take
    /// parallelism from their profile or built engine, not from flags; a
    /// plain workload that requests no GPU resource (a TPU or CPU server)
    /// is left alone.
    ///
    /// ## Why is this bad?
    /// The device plugin isolates GPUs: a container sees only the GPUs it
    /// requested. An engine told to shard itself over more (`TP=4` with
    /// `nvidia.com/gpu: 1`) fails at start-up, so the pod never becomes
    /// Ready: a new Deployment never serves, and a rollout to this spec
    /// waits on a replacement that crash-loops until it times out (with
    /// maxUnavailable > 0 the old pods it retired are gone meanwhile).
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
        (true, e) => e.unwrap_or(infera_model::catalogue::INFERA),
        (false, Some(e)) => e,
        (false, None) => return,
    };
    let Some(c) = w.main_container() else { return };
    let Some(needed) = engine.gpus_needed(c) else {
        return;
    };
    // A DRA claim infera cannot count (defined in another source, or every
    // GPU of the node) is an unknown GPU count, not zero.
    if w.unknown(super::Slot::Gpu, RULE.code) || w.claimed_gpus == super::ClaimedGpus::Unknown {
        return;
    }
    // Ray's distributed executor places the engine's workers on the whole
    // Ray cluster's GPUs, whichever pod launches it.
    if let Some(cluster) = w.ray_cluster_gpus.filter(|_| engine.spreads_over_ray(c)) {
        if needed > cluster {
            out.push(ray_hit(w, engine.name, needed, cluster));
        }
        return;
    }
    // Multi-node groups split parallelism across nodes.
    let per_node = needed / i64::from(w.number_of_nodes.unwrap_or(1).max(1));
    // A plain model server that requests no GPU at all runs on another
    // accelerator (TPU, CPU, a non-GPU DRA device): its flags say nothing
    // about GPUs.
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
    let hit = Hit::new(
        &RULE,
        Severity::Error,
        path.clone(),
        format!(
            "{}: the {} parallelism flags shard the engine over {per_node} GPUs on the node, but the container requests {requested}; the device plugin gives a container only the GPUs it requests, so the engine fails at start-up and the pod never becomes Ready (a rollout to this spec waits on a crash-looping replacement); request {per_node} GPUs",
            w.who(),
            engine.name,
        ),
    );
    out.push(match gpu_fix(w, per_node) {
        Some(value) if w.pod_path.is_some() => {
            hit.with_fix(format!("request {per_node} GPUs"), vec![(path, value)])
        }
        _ => hit,
    });
}

/// An engine on Ray's distributed executor that needs more GPUs than its
/// whole Ray cluster has: no single pod's request fixes that.
fn ray_hit(w: &Workload<'_>, engine: &str, needed: i64, cluster: i64) -> Hit {
    let path = if w.pod_path.is_some() {
        w.main_field(&["resources"])
    } else {
        w.base_field(&[])
    };
    Hit::new(
        &RULE,
        Severity::Error,
        path,
        format!(
            "{}: the {engine} parallelism flags shard the engine over {needed} GPUs, placed by Ray's distributed executor (`--distributed-executor-backend ray`) on the GPUs of the whole Ray cluster, which has {cluster}; the engine cannot start, so the cluster never serves; give the cluster's pods {needed} GPUs in all",
            w.who(),
        ),
    )
}

/// The GPU request and limit set to `n`, under the resource name the
/// container already uses (None when it requests no GPU).
fn gpu_fix(w: &Workload<'_>, n: i64) -> Option<serde_json::Value> {
    let (name, _) = w.gpu_request()?;
    let res = w.main_container()?.resources.as_ref()?;
    let mut value = serde_json::Map::new();
    for (field, map) in [("requests", &res.requests), ("limits", &res.limits)] {
        if map.as_ref().is_some_and(|m| m.contains_key(&name)) {
            value.insert(field.into(), serde_json::json!({ name.clone(): n }));
        }
    }
    // GPUs from a DRA claim are counted in the claim template, not here.
    (!value.is_empty()).then_some(serde_json::Value::Object(value))
}
