//! Whether a Deployment's rollout is complete, decided the way
//! `kubectl rollout status` decides it (kubectl's
//! `DeploymentStatusViewer.Status`).

use k8s_openapi::api::apps::v1::Deployment;

/// Where a Deployment's rollout stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeploymentProgress {
    /// observedGeneration ≥ generation, updated = replicas = available, no
    /// old replicas left.
    Complete,
    /// Still rolling; the text says what it waits for (kubectl's wording).
    Waiting(String),
    /// The `Progressing` condition says `ProgressDeadlineExceeded`.
    DeadlineExceeded(String),
}

/// kubectl's rule, step by step.
pub fn deployment_progress(d: &Deployment) -> DeploymentProgress {
    let name = d.metadata.name.as_deref().unwrap_or("?");
    let generation = d.metadata.generation.unwrap_or(0);
    let Some(status) = d.status.as_ref() else {
        return DeploymentProgress::Waiting(format!(
            "Waiting for deployment \"{name}\" spec update to be observed..."
        ));
    };
    if status.observed_generation.unwrap_or(0) < generation {
        return DeploymentProgress::Waiting(format!(
            "Waiting for deployment \"{name}\" spec update to be observed..."
        ));
    }
    if let Some(cond) = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Progressing")
        && cond.reason.as_deref() == Some("ProgressDeadlineExceeded")
    {
        return DeploymentProgress::DeadlineExceeded(format!(
            "deployment \"{name}\" exceeded its progress deadline"
        ));
    }
    let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let updated = status.updated_replicas.unwrap_or(0);
    let replicas = status.replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    if updated < want {
        return DeploymentProgress::Waiting(format!(
            "Waiting for deployment \"{name}\" rollout to finish: {updated} out of {want} new replicas have been updated..."
        ));
    }
    if replicas > updated {
        return DeploymentProgress::Waiting(format!(
            "Waiting for deployment \"{name}\" rollout to finish: {} old replicas are pending termination...",
            replicas - updated
        ));
    }
    if available < updated {
        return DeploymentProgress::Waiting(format!(
            "Waiting for deployment \"{name}\" rollout to finish: {available} of {updated} updated replicas are available..."
        ));
    }
    DeploymentProgress::Complete
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dep(v: serde_json::Value) -> Deployment {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn kubectl_rollout_status_rules() {
        let base = |gen_: i64, obs: i64, upd: i32, rep: i32, avail: i32| {
            dep(serde_json::json!({
                "metadata": {"name": "w", "generation": gen_},
                "spec": {"replicas": 1, "selector": {}, "template": {}},
                "status": {"observedGeneration": obs, "updatedReplicas": upd,
                           "replicas": rep, "availableReplicas": avail}
            }))
        };
        assert_eq!(
            deployment_progress(&base(2, 2, 1, 1, 1)),
            DeploymentProgress::Complete
        );
        assert!(matches!(
            deployment_progress(&base(3, 2, 1, 1, 1)),
            DeploymentProgress::Waiting(_)
        ));
        // Surge pod up, old pod still there.
        assert!(
            matches!(deployment_progress(&base(2, 2, 1, 2, 2)), DeploymentProgress::Waiting(m) if m.contains("old replicas"))
        );
        assert!(matches!(
            deployment_progress(&base(2, 2, 1, 1, 0)),
            DeploymentProgress::Waiting(_)
        ));
        assert!(matches!(
            deployment_progress(&base(2, 2, 0, 1, 1)),
            DeploymentProgress::Waiting(_)
        ));
        let stuck = dep(serde_json::json!({
            "metadata": {"name": "w", "generation": 1},
            "spec": {"replicas": 1, "selector": {}, "template": {}},
            "status": {"observedGeneration": 1, "updatedReplicas": 1, "replicas": 2,
                       "conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]}
        }));
        assert!(matches!(
            deployment_progress(&stuck),
            DeploymentProgress::DeadlineExceeded(_)
        ));
    }
}
