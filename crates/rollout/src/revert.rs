//! While a leg is driven: the fields its trigger set, read back from every
//! version of the target the watch delivers. Another writer changing one
//! (a GitOps tool's self-heal, a person) is a revert: named, timed, and the
//! driver stops (`leg_monitor.rs` decides, the driver undoes the leg).

use std::time::{Duration, Instant};

use serde_json::Value;

use super::gitops::{self, TriggerField};
use super::reporter::human_duration;
use super::trigger::{Change, Original};

/// The value `field` had before the trigger, from what it overwrote.
fn before_of(field: &TriggerField, original: Option<&Original>) -> Option<String> {
    let original = original?;
    let last = field.path.last();
    match last {
        Some(gitops::Seg::Key(k)) if k == "image" => original.image.clone(),
        Some(gitops::Seg::Key(k)) if k == "value" => {
            let name = match field.path.iter().rev().nth(1) {
                Some(gitops::Seg::Named(n)) => n,
                _ => return None,
            };
            let entry = original.env.get(name)?.as_ref()?;
            entry
                .get("value")
                .and_then(Value::as_str)
                .map(str::to_string)
        }
        _ => original.restarted_at.clone(),
    }
}

/// A trigger field someone else changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revert {
    pub leg: String,
    /// `services.decode.image`.
    pub field: String,
    /// The field manager that wrote it (`None`: unknown).
    pub by: Option<String>,
    /// Its value now (`None`: removed).
    pub now: Option<String>,
    /// Whether that is the value from before infera's trigger.
    pub back_to_before: bool,
    /// Wall time from infera's trigger to the revert being seen (`None`:
    /// found on resuming, so the moment is unknown).
    pub after: Option<Duration>,
}

impl Revert {
    /// `services.decode.image was reset to "v1" by kustomize-controller 21s after infera set it`.
    pub fn describe(&self, time_scale: f64) -> String {
        let what = match &self.now {
            Some(v) if self.back_to_before => format!("was reset to {v:?}"),
            Some(v) => format!("was changed to {v:?}"),
            None => "was removed".to_string(),
        };
        let when = match self.after {
            Some(d) => format!(
                "{} after infera set it",
                human_duration(d.mul_f64(time_scale.max(0.0)))
            ),
            None => "while the rollout was interrupted".to_string(),
        };
        format!(
            "{} {what} by {} {when}",
            self.field,
            self.by.as_deref().unwrap_or("another writer")
        )
    }
}

/// The trigger fields of the leg being driven.
#[derive(Debug, Default)]
pub(crate) struct RevertWatch {
    leg: String,
    fields: Vec<TriggerField>,
    /// Per field, its value before the trigger (`None`: absent or unknown).
    before: Vec<Option<String>>,
    /// Versions at or below this one predate the trigger.
    since_rv: u64,
    at: Option<Instant>,
    /// The last version seen (its managedFields name the next writer).
    last: Option<Value>,
    pub found: Option<Revert>,
}

fn rv(obj: &Value) -> u64 {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

impl RevertWatch {
    /// Watch what `change` set on `leg` of `obj` (the target as the trigger
    /// left it, or as read when resuming).
    /// `original`: what the trigger overwrote (the in-flight record's).
    pub fn arm(
        &mut self,
        leg: &str,
        obj: &Value,
        change: &Change,
        original: Option<&Original>,
        is_idep: bool,
        at: Instant,
    ) {
        let fields = gitops::trigger_fields(obj, leg, change, is_idep);
        let before = fields.iter().map(|f| before_of(f, original)).collect();
        *self = RevertWatch {
            leg: leg.to_string(),
            fields,
            before,
            since_rv: rv(obj),
            at: Some(at),
            last: Some(obj.clone()),
            found: None,
        };
    }

    /// The first watched field `obj` no longer carries as set: the field,
    /// its value now, and its value before the trigger.
    fn first_changed(
        &self,
        obj: &Value,
    ) -> Option<(&TriggerField, Option<String>, &Option<String>)> {
        self.fields
            .iter()
            .zip(&self.before)
            .find_map(|(f, b)| f.changed_on(obj).map(|v| (f, v, b)))
    }

    /// Stop watching (the leg is done, or infera itself undoes it).
    pub fn disarm(&mut self) {
        *self = RevertWatch::default();
    }

    /// A version of the target from the watch.
    pub fn observe(&mut self, obj: &Value, now: Instant) {
        let Some(at) = self.at else {
            return;
        };
        if self.found.is_some() || rv(obj) <= self.since_rv {
            return;
        }
        let changed = self.first_changed(obj);
        if let Some((field, value, before)) = changed {
            self.found = Some(Revert {
                leg: self.leg.clone(),
                field: field.display.clone(),
                by: gitops::who_wrote(self.last.as_ref(), obj, field),
                back_to_before: value.is_some() && value == *before,
                now: value,
                after: Some(now.saturating_duration_since(at)),
            });
        }
        self.last = Some(obj.clone());
    }

    /// Resuming: the target as read at the start may already have lost
    /// the trigger (reverted while nothing watched). Named by the field's
    /// owner only: which entry moved since is unknown.
    pub fn check_resumed(&mut self, obj: &Value) {
        let changed = self.first_changed(obj);
        if let Some((field, value, before)) = changed {
            let mut owners = gitops::owners(obj, &field.path);
            owners.retain(|m| m != gitops::FIELD_MANAGER);
            owners.sort_by_key(|m| gitops::tool_of_manager(m).is_none());
            self.found = Some(Revert {
                leg: self.leg.clone(),
                field: field.display.clone(),
                by: owners.into_iter().next(),
                back_to_before: value.is_some() && value == *before,
                now: value,
                after: None,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stale_versions_are_not_reverts() {
        let mut w = RevertWatch::default();
        let ours = json!({"metadata": {"resourceVersion": "10"},
            "spec": {"services": {"decode": {"podLabels": {"infera.amd.com/restarted-at": "T"}}}}});
        let change = Change {
            restart_at: Some("T".into()),
            ..Change::default()
        };
        let t0 = Instant::now();
        w.arm("decode", &ours, &change, None, true, t0);
        let before =
            json!({"metadata": {"resourceVersion": "9"}, "spec": {"services": {"decode": {}}}});
        w.observe(&before, t0);
        assert_eq!(w.found, None);
        let mut later = before.clone();
        later["metadata"]["resourceVersion"] = json!("12");
        w.observe(&later, t0 + Duration::from_secs(2));
        let found = w.found.clone().expect("revert");
        assert_eq!(
            found.describe(10.0),
            "services.decode.podLabels[\"infera.amd.com/restarted-at\"] was removed by another writer 20.0s after infera set it"
        );
        w.disarm();
        assert_eq!(w.found, None);
    }

    #[test]
    fn reset_to_the_old_value_or_changed_to_another() {
        let ours = json!({"metadata": {"resourceVersion": "5"},
            "spec": {"services": {"decode": {"image": "v2"}}}});
        let change = Change {
            image: Some("v2".into()),
            ..Change::default()
        };
        let original = Original {
            image_changed: true,
            image: Some("v1".into()),
            ..Original::default()
        };
        let t0 = Instant::now();
        for (now, says) in [
            ("v1", "was reset to \"v1\""),
            ("v3", "was changed to \"v3\""),
        ] {
            let mut w = RevertWatch::default();
            w.arm("decode", &ours, &change, Some(&original), true, t0);
            let mut next = ours.clone();
            next["metadata"]["resourceVersion"] = json!("6");
            next["spec"]["services"]["decode"]["image"] = json!(now);
            w.observe(&next, t0);
            let text = w.found.map(|f| f.describe(1.0)).unwrap_or_default();
            assert!(
                text.starts_with(&format!("services.decode.image {says} by another writer")),
                "{text}"
            );
        }
        // Resuming on an object already reverted: found at once.
        let mut w = RevertWatch::default();
        let mut back = ours.clone();
        back["spec"]["services"]["decode"]["image"] = json!("v1");
        w.arm("decode", &back, &change, Some(&original), true, t0);
        w.check_resumed(&back);
        assert_eq!(
            w.found.map(|f| f.describe(1.0)).unwrap_or_default(),
            "services.decode.image was reset to \"v1\" by another writer while the rollout was interrupted"
        );
        // Not reverted: nothing found.
        let mut w = RevertWatch::default();
        w.arm("decode", &ours, &change, Some(&original), true, t0);
        w.check_resumed(&ours);
        assert_eq!(w.found, None);
    }
}
