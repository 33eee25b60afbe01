//! The resume state of a drain, kept as an annotation on every draining
//! node, so a rerun of the same command from any machine finds it — also
//! after SIGKILL.
//!
//! A workload is recorded as `moving` *before* its restart is triggered;
//! the rollout's own in-flight record (on the owner, written in the same
//! patch as the trigger) then makes a rerun resume that restart instead of
//! starting another. It is recorded as `moved` when the restart completed.
//! So a rerun never restarts a workload a second time: it resumes the one
//! in flight, skips the ones done, and finds nothing left on the node for a
//! restart that finished before its record did.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Annotation on each draining node.
pub const DRAIN_ANNOTATION: &str = "infera.amd.com/drain-in-flight";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrainState {
    /// The nodes drained together.
    pub nodes: Vec<String>,
    /// Workload keys ([`super::plan::Workload::key`]) whose restart finished.
    #[serde(default)]
    pub moved: Vec<String>,
    /// Workload keys whose restart was started (and maybe not finished).
    #[serde(default)]
    pub moving: Vec<String>,
    /// UTC, RFC 3339.
    pub started_at: String,
}

impl DrainState {
    /// The state on a node object, if any; an unreadable one is an error
    /// naming the annotation.
    pub fn from_node(node: &Value) -> Result<Option<DrainState>, String> {
        let Some(text) = node
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(DRAIN_ANNOTATION))
            .and_then(Value::as_str)
        else {
            return Ok(None);
        };
        serde_json::from_str(text).map(Some).map_err(|e| {
            format!(
                "the drain record `{DRAIN_ANNOTATION}` on the node is unreadable ({e}); \
                 inspect it with `kubectl get node -o yaml` and remove it if no drain is running"
            )
        })
    }

    /// Merge patch: cordon and write the state.
    pub fn cordon_patch(&self) -> Value {
        let text = serde_json::to_string(self).unwrap_or_default();
        json!({"spec": {"unschedulable": true}, "metadata": {"annotations": {DRAIN_ANNOTATION: text}}})
    }

    /// Merge patch removing the state (the node stays cordoned).
    pub fn removal_patch() -> Value {
        json!({"metadata": {"annotations": {DRAIN_ANNOTATION: null}}})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_the_node() {
        let state = DrainState {
            nodes: vec!["n0".into()],
            moved: vec!["llm/idep/llama/decode".into()],
            moving: vec!["llm/idep/llama/prefill".into()],
            started_at: "2026-12-06T05:00:00Z".into(),
        };
        let patch = state.cordon_patch();
        assert_eq!(patch["spec"]["unschedulable"], true);
        let node = json!({"metadata": patch["metadata"].clone()});
        assert_eq!(DrainState::from_node(&node), Ok(Some(state)));
        assert_eq!(DrainState::from_node(&json!({"metadata": {}})), Ok(None));
        let broken = json!({"metadata": {"annotations": {DRAIN_ANNOTATION: "{"}}});
        assert!(
            DrainState::from_node(&broken)
                .unwrap_err()
                .contains(DRAIN_ANNOTATION)
        );
    }
}
