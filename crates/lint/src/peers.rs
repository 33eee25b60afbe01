//! The objects of one source (a file, stdin, the live list) that the
//! disruption rules read besides the workload itself: its
//! PodDisruptionBudgets and PersistentVolumeClaims. A finding about a
//! budget points at the budget (where the fix goes), so each budget keeps
//! where it is.

use infera_model::pdb::Budget;
use infera_model::volume::Claim;

use super::finding::{Fix, ObjectRef};

/// The budgets and claims of one source.
#[derive(Debug, Clone, Default)]
pub struct Peers {
    pub budgets: Vec<PeerBudget>,
    pub claims: Vec<Claim>,
    /// True when `budgets` holds every budget of the namespaces linted
    /// (`lint --cluster`, which lists them): only then can a workload be
    /// said to have none.
    pub every_budget: bool,
    /// True when `claims` holds every claim of the namespaces linted.
    pub every_claim: bool,
    /// The OME runtimes (`ServingRuntime`, `ClusterServingRuntime` of
    /// `ome.io`) an OME InferenceService's engine is merged with.
    pub runtimes: Vec<Runtime>,
}

/// An OME runtime: its kind, namespace (empty for a cluster runtime), name
/// and spec.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub cluster: bool,
    pub namespace: String,
    pub name: String,
    pub spec: serde_json::Value,
}

/// OME's runtime kinds (`ome.io`).
pub const OME_RUNTIMES: [&str; 2] = ["ServingRuntime", "ClusterServingRuntime"];

/// `v` as an OME runtime, when it is one.
pub fn read_runtime(v: &serde_json::Value) -> Option<Runtime> {
    let kind = v.get("kind")?.as_str()?;
    let group = v.get("apiVersion")?.as_str()?.split('/').next()?;
    if group != "ome.io" || !OME_RUNTIMES.contains(&kind) {
        return None;
    }
    let meta = v.get("metadata");
    let text = |k: &str| {
        meta.and_then(|m| m.get(k))
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    Some(Runtime {
        cluster: kind == "ClusterServingRuntime",
        namespace: text("namespace"),
        name: text("name"),
        spec: v.get("spec").cloned().unwrap_or_default(),
    })
}

/// A budget and where findings about it point.
#[derive(Debug, Clone)]
pub struct PeerBudget {
    pub budget: Budget,
    /// Line and column of the field that sets the budget (0, 0 live).
    pub line: usize,
    pub column: usize,
    pub object: ObjectRef,
    /// Allow one disruption at a time: `maxUnavailable: 1`, without
    /// `minAvailable`.
    pub fix: Fix,
}

/// The merge patch at a budget's `spec` that lets one pod go at a time.
pub fn one_at_a_time() -> serde_json::Value {
    serde_json::json!({"maxUnavailable": 1, "minAvailable": null})
}

impl Peers {
    /// The OME runtime `name` an InferenceService of `namespace` gets: the
    /// namespace's ServingRuntime, else the ClusterServingRuntime (OME's
    /// `RuntimeSelector.GetRuntime`).
    pub fn runtime(&self, namespace: &str, name: &str) -> Option<&Runtime> {
        let of = |cluster: bool| {
            self.runtimes.iter().find(|r| {
                r.cluster == cluster && r.name == name && (cluster || r.namespace == namespace)
            })
        };
        of(false).or_else(|| of(true))
    }

    /// The claim `name` of `namespace`, when the source has it.
    pub fn claim(&self, namespace: &str, name: &str) -> Option<&Claim> {
        self.claims
            .iter()
            .find(|c| c.namespace == namespace && c.name == name)
    }
}

/// The bytes mention one of `needles` (a cheap test before parsing a
/// source twice: memchr's vectorised substring search, a fraction of an
/// instruction per byte).
pub fn mentions_any(bytes: &[u8], needles: &[&[u8]]) -> bool {
    needles
        .iter()
        .any(|n| memchr::memmem::find(bytes, n).is_some())
}

#[cfg(test)]
mod tests {
    #[test]
    fn mentions_any_finds_each_needle_anywhere() {
        let needles: [&[u8]; 2] = [b"PodDisruptionBudget", b"ResourceClaim"];
        assert!(super::mentions_any(
            b"kind: PodDisruptionBudget\n",
            &needles
        ));
        assert!(super::mentions_any(b"x ResourceClaimTemplate", &needles));
        assert!(!super::mentions_any(b"kind: Deployment, Pod", &needles));
        assert!(!super::mentions_any(b"", &needles));
    }
}
