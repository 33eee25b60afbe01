//! The infera operator: InferaDeployment → Deployments through
//! `infera_model::operator::render` (the function lint uses), replacing the whole
//! spec on every reconcile (so hand edits revert), and `status.services` /
//! `status.state`. LeaderWorkerSets are not simulated.

use serde_json::{Value, json};

use super::Manager;
use super::cache::{Key, i64_at, key_of, str_at};
use crate::store::Kind;

impl Manager {
    pub(super) fn sync_idep(&mut self, key: &Key) {
        let Some(idep) = self.cache.ideps.get(key).cloned() else {
            return;
        };
        if idep.pointer("/metadata/deletionTimestamp").is_some() {
            return;
        }
        let Ok(workloads) = infera_model::operator::render(&idep) else {
            return;
        };
        let (ns, _) = key.clone();
        let mut services = serde_json::Map::new();
        let mut all_ready = true;
        let mut any_ready = false;
        for w in workloads {
            if w.kind != infera_model::operator::WorkloadKind::Deployment {
                continue;
            }
            let mut obj = w.object.clone();
            crate::api::defaults::apply(Kind::Deployment, &mut obj);
            obj["metadata"]["namespace"] = Value::from(ns.clone());
            obj["metadata"]["ownerReferences"] = json!([{"apiVersion": "infera.amd.com/v1alpha1", "kind": "InferaDeployment",
                "name": str_at(&idep, "/metadata/name"), "uid": str_at(&idep, "/metadata/uid"),
                "controller": true, "blockOwnerDeletion": true}]);
            let name = str_at(&obj, "/metadata/name").to_string();
            let existing = self
                .cache
                .deployments
                .get(&(ns.clone(), name.clone()))
                .cloned();
            let current = match existing {
                None => match self.store.create_shared(Kind::Deployment, obj) {
                    Ok(created) => Some(self.absorb(Kind::Deployment, created)),
                    Err(_) => None,
                },
                Some(d) => {
                    let spec = obj.get("spec").cloned();
                    let labels = obj.pointer("/metadata/labels").cloned();
                    let owners = obj.pointer("/metadata/ownerReferences").cloned();
                    if d.get("spec") != spec.as_ref()
                        || d.pointer("/metadata/labels") != labels.as_ref()
                    {
                        match self
                            .store
                            .mutate_shared(Kind::Deployment, Some(&ns), &name, |v| {
                                if let Some(s) = spec.clone() {
                                    v["spec"] = s;
                                }
                                if let Some(l) = labels.clone() {
                                    v["metadata"]["labels"] = l;
                                }
                                if let Some(o) = owners.clone() {
                                    v["metadata"]["ownerReferences"] = o;
                                }
                            }) {
                            Ok(updated) => Some(self.absorb(Kind::Deployment, updated)),
                            Err(_) => Some(d),
                        }
                    } else {
                        Some(d)
                    }
                }
            };
            let d = current.unwrap_or_default();
            let want = i64_at(&d, "/spec/replicas").unwrap_or(1);
            let ready = i64_at(&d, "/status/readyReplicas").unwrap_or(0);
            let updated = i64_at(&d, "/status/updatedReplicas").unwrap_or(0);
            let available = i64_at(&d, "/status/availableReplicas").unwrap_or(0);
            let observed = i64_at(&d, "/status/observedGeneration").unwrap_or(0)
                >= i64_at(&d, "/metadata/generation").unwrap_or(1);
            if !(observed
                && updated == want
                && available == want
                && i64_at(&d, "/status/replicas").unwrap_or(0) == want)
            {
                all_ready = false;
            }
            if ready > 0 {
                any_ready = true;
            }
            services.insert(
                w.service.clone(),
                json!({"replicas": want, "readyReplicas": ready, "updatedReplicas": updated}),
            );
        }
        let state = if all_ready {
            "Ready"
        } else if any_ready {
            "Progressing"
        } else {
            "Pending"
        };
        let mut status = idep.get("status").cloned().unwrap_or_else(|| json!({}));
        if !status.is_object() {
            status = json!({});
        }
        status["services"] = Value::from(services);
        status["state"] = Value::from(state);
        status["observedGeneration"] =
            Value::from(i64_at(&idep, "/metadata/generation").unwrap_or(1));
        let idep_now = self
            .cache
            .ideps
            .get(&key_of(&idep))
            .cloned()
            .unwrap_or(idep);
        self.write_status(Kind::InferaDeployment, &idep_now, status);
    }
}
