//! The scenario's `selfHeal`: a GitOps controller's drift correction, as
//! Flux's kustomize-controller (or Argo CD with self-heal and server-side
//! apply) does it. It server-side applies every manifest of the scenario
//! (but Namespaces) with its field manager (forced), remembers what the
//! server made of the applied fields, and checks them every `every`
//! scenario seconds; once they have differed from that for `after`
//! scenario seconds, it applies the manifest again. Like the real ones it
//! only puts back fields the manifest sets: a field another manager added
//! (a restart label the manifest does not carry) stays.
//!
//! Over the API, with the manager's name in `metadata.managedFields`, so it
//! behaves the same on the embedded simulator and on a real control plane
//! (`infera sim attach`).

use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::Value;

use super::manifests::{api_for, prepared, target};
use super::{Shared, retry};

/// One managed manifest and what the server made of its fields.
struct Managed {
    api: Api<DynamicObject>,
    name: String,
    manifest: Value,
    /// The applied fields as the server stored them (`None` until applied).
    baseline: Option<Value>,
    /// Scenario time the drift was first seen.
    drift_since: Option<Duration>,
}

/// Run the drift correction until the world stops.
pub(super) async fn run(shared: Arc<Shared>) {
    let Some(cfg) = shared.scenario.self_heal.clone() else {
        return;
    };
    let mut managed = Vec::new();
    for (index, manifest) in shared.scenario.manifests.iter().enumerate() {
        if manifest.get("kind").and_then(Value::as_str) == Some("Namespace") {
            continue;
        }
        let Ok(t) = target(&shared.client, &shared.scenario, index, manifest).await else {
            continue;
        };
        managed.push(Managed {
            api: api_for(&shared.client, &t),
            name: t.name,
            manifest: prepared(&shared, manifest),
            baseline: None,
            drift_since: None,
        });
    }
    let params = PatchParams::apply(&cfg.manager).force();
    let every = Duration::from_secs_f64(cfg.every.max(0.1));
    let after = Duration::from_secs_f64(cfg.after.max(0.0));
    loop {
        for m in &mut managed {
            let now = shared.clock.elapsed();
            if m.baseline.is_none() || m.drift_since.is_some_and(|t| now >= t + after) {
                apply(m, &params).await;
                continue;
            }
            let Ok(live) = retry(|| m.api.get(&m.name)).await else {
                continue;
            };
            let live = serde_json::to_value(&live).unwrap_or_default();
            let drifted = m.baseline.as_ref().is_some_and(|b| !contains(&live, b));
            m.drift_since = match (drifted, m.drift_since) {
                (true, None) => Some(now),
                (true, since) => since,
                (false, _) => None,
            };
        }
        shared.clock.sleep(every).await;
    }
}

async fn apply(m: &mut Managed, params: &PatchParams) {
    let patch = Patch::Apply(&m.manifest);
    if let Ok(obj) = retry(|| m.api.patch(&m.name, params, &patch)).await {
        let stored = serde_json::to_value(&obj).unwrap_or_default();
        m.baseline = Some(project(&stored, &m.manifest));
        m.drift_since = None;
    }
}

/// The fields of `stored` that `manifest` sets: maps walked by the
/// manifest's keys, anything else (lists included) taken whole.
fn project(stored: &Value, manifest: &Value) -> Value {
    match (stored.as_object(), manifest.as_object()) {
        (Some(s), Some(m)) => Value::Object(
            m.iter()
                .filter_map(|(k, mv)| s.get(k).map(|sv| (k.clone(), project(sv, mv))))
                .collect(),
        ),
        _ => stored.clone(),
    }
}

/// Whether `live` has every field of `baseline` with its value.
fn contains(live: &Value, baseline: &Value) -> bool {
    match (live.as_object(), baseline.as_object()) {
        (Some(l), Some(b)) => b
            .iter()
            .all(|(k, bv)| l.get(k).is_some_and(|lv| contains(lv, bv))),
        _ => live == baseline,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drift_is_a_changed_applied_field_not_an_added_one() {
        let manifest = json!({"spec": {"services": {"decode": {"image": "v1"}}}});
        let stored = json!({"metadata": {"resourceVersion": "7"},
            "spec": {"services": {"decode": {"image": "v1", "replicas": 1}}}});
        let baseline = project(&stored, &manifest);
        assert_eq!(baseline, manifest);
        let mut live = stored.clone();
        live["spec"]["services"]["decode"]["podLabels"] = json!({"x": "1"});
        assert!(contains(&live, &baseline), "an added field is no drift");
        live["spec"]["services"]["decode"]["image"] = json!("v2");
        assert!(!contains(&live, &baseline));
    }
}
