//! The in-flight record: what a rollout changed and how far it got, kept as
//! an annotation on the target itself so that a second run of the same
//! command (from any machine) resumes it, and `--abort` can undo it.
//!
//! It is written in the same merge patch as each leg's trigger, so there is
//! no moment where a trigger is applied but not recorded.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::trigger::{Change, Original};

/// Annotation on the InferaDeployment (or Deployment) holding the record.
pub const IN_FLIGHT_ANNOTATION: &str = "infera.amd.com/rollout-in-flight";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InFlight {
    /// `restart` or `set-image`.
    pub command: String,
    pub change: Change,
    /// Legs in the order they run (service names; the Deployment's name for
    /// a plain Deployment).
    pub legs: Vec<String>,
    /// Legs finished.
    #[serde(default)]
    pub done: Vec<String>,
    /// The leg whose trigger is applied and not yet finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<LegRecord>,
    /// UTC, RFC 3339.
    pub started_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LegRecord {
    pub leg: String,
    pub original: Original,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error(
        "the in-flight rollout record `{IN_FLIGHT_ANNOTATION}` is unreadable ({0}); \
         inspect it with `kubectl get -o yaml` and remove it if nothing is rolling"
    )]
    Corrupt(String),
    #[error("cannot encode the in-flight rollout record: {0}")]
    Encode(String),
}

impl InFlight {
    /// Read the record from a live object, if there is one.
    pub fn from_object(obj: &Value) -> Result<Option<InFlight>, RecordError> {
        let Some(text) = obj
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(IN_FLIGHT_ANNOTATION))
            .and_then(Value::as_str)
        else {
            return Ok(None);
        };
        serde_json::from_str(text)
            .map(Some)
            .map_err(|e| RecordError::Corrupt(e.to_string()))
    }

    /// The `metadata` part of a merge patch writing this record.
    pub fn annotation_patch(&self) -> Result<Value, RecordError> {
        let text = serde_json::to_string(self).map_err(|e| RecordError::Encode(e.to_string()))?;
        Ok(json!({"metadata": {"annotations": { IN_FLIGHT_ANNOTATION: text }}}))
    }

    /// The merge patch removing the record.
    pub fn removal_patch() -> Value {
        json!({"metadata": {"annotations": { IN_FLIGHT_ANNOTATION: null }}})
    }

    /// Whether a new invocation asks for the same rollout as this record:
    /// same command, same image and env, same set of legs. (The restart
    /// timestamp is the record's: a resume reuses it.)
    pub fn same_request(&self, command: &str, change: &Change, legs: &[String]) -> bool {
        let mut mine = self.legs.clone();
        mine.sort();
        let mut theirs = legs.to_vec();
        theirs.sort();
        self.command == command
            && self.change.image == change.image
            && self.change.env == change.env
            && (theirs.is_empty() || mine == theirs)
    }

    /// Legs still to run, in order (the current one first).
    pub fn remaining(&self) -> Vec<String> {
        self.legs
            .iter()
            .filter(|l| !self.done.contains(l))
            .cloned()
            .collect()
    }

    /// One line for humans: what is in flight and where it stands.
    pub fn describe(&self) -> String {
        let what = match (&self.change.image, self.command.as_str()) {
            (Some(image), _) => format!("set-image {image}"),
            (None, c) => c.to_string(),
        };
        let current = self
            .current
            .as_ref()
            .map(|c| format!(", leg `{}` in progress", c.leg))
            .unwrap_or_default();
        format!(
            "{what} started {} over legs [{}]: {} of {} done{current}",
            self.started_at,
            self.legs.join(", "),
            self.done.len(),
            self.legs.len()
        )
    }
}

/// Deep-merge two merge patches (`b` wins), so a trigger and the record go
/// out in one request.
pub fn combine(mut a: Value, b: &Value) -> Value {
    json_patch::merge(&mut a, b);
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trigger::EnvSetting;

    fn record() -> InFlight {
        InFlight {
            command: "restart".into(),
            change: Change {
                restart_at: Some("20261202T184512Z".into()),
                image: None,
                env: vec![EnvSetting {
                    name: "A".into(),
                    value: "1".into(),
                }],
            },
            legs: vec!["decode".into(), "prefill".into()],
            done: vec!["decode".into()],
            current: Some(LegRecord {
                leg: "prefill".into(),
                original: Original::default(),
            }),
            started_at: "2026-12-02T18:45:12Z".into(),
        }
    }

    #[test]
    fn round_trips_through_the_annotation() {
        let r = record();
        let obj = combine(
            json!({"metadata": {"name": "x"}}),
            &r.annotation_patch().unwrap(),
        );
        assert_eq!(InFlight::from_object(&obj).unwrap(), Some(r));
        let cleared = combine(obj, &InFlight::removal_patch());
        assert_eq!(InFlight::from_object(&cleared).unwrap(), None);
    }

    #[test]
    fn corrupt_record_is_an_error_not_a_fresh_start() {
        let obj = json!({"metadata": {"annotations": { IN_FLIGHT_ANNOTATION: "{not json" }}});
        assert!(InFlight::from_object(&obj).is_err());
    }

    #[test]
    fn same_request_ignores_timestamp_and_order() {
        let r = record();
        let mut c = r.change.clone();
        c.restart_at = Some("other".into());
        assert!(r.same_request("restart", &c, &["prefill".into(), "decode".into()]));
        assert!(r.same_request("restart", &c, &[]));
        assert!(!r.same_request("set-image", &c, &[]));
        assert!(!r.same_request("restart", &c, &["decode".into()]));
        c.env.clear();
        assert!(!r.same_request("restart", &c, &[]));
        assert_eq!(r.remaining(), vec!["prefill".to_string()]);
        assert!(r.describe().contains("leg `prefill` in progress"));
    }
}
