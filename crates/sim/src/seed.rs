//! Seeding the store from a scenario: the one place that names both (the
//! scenario crate knows no store, the store no scenario).

use serde_json::{Value, json};

use infera_sim_core::kind::Kind;
use infera_sim_scenario::{Scenario, ScenarioError};
use infera_sim_store::{Store, StoreError};

/// Create the scenario's nodes and manifests in the store (namespaces named
/// by a manifest are created when missing).
pub(crate) fn seed(scenario: &Scenario, store: &Store) -> Result<(), ScenarioError> {
    let file = scenario.name.clone();
    for node in scenario.node_objects() {
        match store.create(Kind::Node, node) {
            Ok(_) | Err(StoreError::AlreadyExists) => {}
            Err(e) => {
                return Err(ScenarioError::Manifest {
                    file,
                    index: 0,
                    what: "node".into(),
                    message: e.to_string(),
                });
            }
        }
    }
    for (index, manifest) in scenario.manifests.iter().enumerate() {
        let api_version = manifest
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind_name = manifest.get("kind").and_then(Value::as_str).unwrap_or("");
        let what = format!("{api_version} {kind_name}");
        let Some(kind) = Kind::from_api_version_kind(api_version, kind_name) else {
            return Err(ScenarioError::Manifest {
                file,
                index,
                what,
                message: "the simulator does not serve this kind".into(),
            });
        };
        if kind.namespaced()
            && let Some(ns) = manifest
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
            && store.get(Kind::Namespace, None, ns).is_none()
        {
            let _ = store.create(
                Kind::Namespace,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            );
        }
        match store.create(kind, manifest.clone()) {
            Ok(_) | Err(StoreError::AlreadyExists) => {}
            Err(e) => {
                return Err(ScenarioError::Manifest {
                    file,
                    index,
                    what,
                    message: e.to_string(),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_applies() {
        for (name, _) in infera_sim_scenario::builtins() {
            let scenario = Scenario::load(name).unwrap_or_else(|e| panic!("{e}"));
            let store = Store::new();
            seed(&scenario, &store).unwrap_or_else(|e| panic!("{e}"));
            assert!(!store.list(Kind::Node, None).0.is_empty());
        }
    }
}
