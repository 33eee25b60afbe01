//! What lint is told besides the manifests: node GPUs, the operator
//! generation (configured or detected live), the rules enabled, how charts
//! are rendered, and whether the input holds every budget and claim.

use std::path::PathBuf;

use infera_model::generation::{Detection, Generation};
use infera_model::manifest;
use infera_model::operator::InferaDeployment;

/// What the rules need to know that is not in the manifests.
#[derive(Debug, Clone, Default)]
pub struct LintOptions {
    /// GPUs per node when no inventory is given (`--node-gpus`, the
    /// `node-gpus:` config key); 0 when neither says: then the node labels
    /// a pod pins decide (`infera_model::accelerator`), else 8.
    pub node_gpus: u32,
    /// Node inventory (`--nodes FILE`), if given.
    pub nodes: Option<PathBuf>,
    /// Rule codes to run (after config/--select/--ignore); empty = all.
    pub enabled: Vec<&'static str>,
    /// Files linted at once (`--threads`); 0 = `RAYON_NUM_THREADS` when
    /// set (the variable parallel Rust tools share), else one per CPU.
    pub threads: usize,
    /// Keep the lines findings point at in [`LintOutcome::sources`] (the
    /// human printer's code frames need them; the other printers do not).
    pub keep_sources: bool,
    /// The operator generation InferaDeployments are rendered as (the
    /// `--operator` flag / `operator` config key; latest by default).
    pub operator: Generation,
    /// Live: the generation each InferaDeployment's operator showed
    /// ((namespace, name) → detection). A known one wins over `operator`.
    pub detected: std::collections::BTreeMap<(String, String), Detection>,
    /// The input holds every PodDisruptionBudget of the namespaces linted
    /// (`lint --cluster` listed them): then a serving worker with none can
    /// be reported (IR014). Never true for files.
    pub every_budget: bool,
    /// The input holds every PersistentVolumeClaim of those namespaces.
    pub every_claim: bool,
    /// How Helm charts and Kustomize directories are rendered.
    pub render: manifest::render::RenderOptions,
}

impl LintOptions {
    /// The generation an InferaDeployment is rendered as: the one its live
    /// workers show, else the configured one.
    pub fn generation_for(&self, idep: &InferaDeployment) -> Generation {
        let key = (
            idep.metadata.namespace.clone().unwrap_or_default(),
            idep.metadata.name.clone().unwrap_or_default(),
        );
        self.detected
            .get(&key)
            .and_then(Detection::generation)
            .unwrap_or(self.operator)
    }
}
