//! Is the Deployment controller acting on the leg's Deployment?
//!
//! With kube-controller-manager down nothing rolls: no replacement is
//! created, no old pod is retired, and no condition is written — so neither
//! the stall check (an Unschedulable pod, `ProgressDeadlineExceeded`) nor the
//! step timeout says what is wrong. Two facts the controller keeps current
//! within moments on a healthy cluster tell instead:
//!
//! * `status.observedGeneration` catches up with `metadata.generation` as
//!   soon as the controller syncs the Deployment (upstream
//!   `pkg/controller/deployment/sync.go`, `syncDeploymentStatus` and
//!   `calculateStatus`, k8s.io/kubernetes v1.37.2);
//! * `status.readyReplicas` is the sum of its ReplicaSets' Ready,
//!   not-terminating pods (`pkg/controller/replicaset/replica_set_utils.go`,
//!   `calculateStatus` over `controller.FilterActivePods`), which is what the
//!   tracker counts as `ready_total`.
//!
//! Either one lagging for [`QUIET`] is reported once, as an absent
//! controller (not a stall, not a timeout); its return is reported too.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;

use crate::reporter::human_duration;

/// How long a lag must last (wall clock: the controller is a real process
/// even when the pods' world runs on a scaled clock) before it is reported.
pub(crate) const QUIET: Duration = Duration::from_secs(10);

/// What the controller has not caught up with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Lag {
    Generation { generation: i64, observed: i64 },
    Ready { ready: usize, status: i64 },
}

/// The lag of `d`, given how many of its pods are Ready and not terminating.
pub(crate) fn lag(d: &Deployment, ready_pods: usize) -> Option<Lag> {
    let generation = d.metadata.generation.unwrap_or(0);
    let status = d.status.as_ref();
    let observed = status.and_then(|s| s.observed_generation).unwrap_or(0);
    if observed < generation {
        return Some(Lag::Generation {
            generation,
            observed,
        });
    }
    let counted = i64::from(status.and_then(|s| s.ready_replicas).unwrap_or(0));
    (i64::try_from(ready_pods).unwrap_or(i64::MAX) != counted).then_some(Lag::Ready {
        ready: ready_pods,
        status: counted,
    })
}

/// What to say about the controller, at most once per absence.
#[derive(Debug, PartialEq)]
pub(crate) enum Verdict {
    Absent(String),
    Back(String),
}

/// The lag seen on one leg's Deployment over time.
#[derive(Debug, Default)]
pub(crate) struct ControllerCheck {
    /// Since when some lag has lasted (reset when there is none).
    since: Option<Instant>,
    /// The absence was reported (and its end not yet).
    reported: bool,
}

impl ControllerCheck {
    /// Feed the current lag of `deployment` (`NS/NAME`); a verdict when the
    /// lag has just lasted [`QUIET`] or has just ended after being reported.
    pub(crate) fn observe(
        &mut self,
        deployment: &str,
        lag: Option<Lag>,
        now: Instant,
    ) -> Option<Verdict> {
        let Some(lag) = lag else {
            let since = self.since.take();
            if !std::mem::take(&mut self.reported) {
                return None;
            }
            let down = since.map_or(Duration::ZERO, |s| now.saturating_duration_since(s));
            return Some(Verdict::Back(format!(
                "Deployment {deployment}: the controller caught up after {}; going on",
                human_duration(down)
            )));
        };
        let since = *self.since.get_or_insert(now);
        let quiet = now.saturating_duration_since(since);
        if self.reported || quiet < QUIET {
            return None;
        }
        self.reported = true;
        let what = match lag {
            Lag::Generation {
                generation,
                observed,
            } => format!(
                "generation {generation} not observed by the controller for {} (status.observedGeneration {observed})",
                human_duration(quiet)
            ),
            Lag::Ready { ready, status } => format!(
                "the controller has not counted its Ready pods for {} ({ready} Ready, status.readyReplicas {status})",
                human_duration(quiet)
            ),
        };
        Some(Verdict::Absent(format!(
            "Deployment {deployment}: {what} — is kube-controller-manager running? Nothing rolls without it; waiting (not a stall)"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(generation: i64, observed: i64, ready: Option<i64>) -> Deployment {
        let mut status = json!({"observedGeneration": observed});
        if let Some(r) = ready {
            status["readyReplicas"] = json!(r);
        }
        serde_json::from_value(json!({
            "metadata": {"name": "llama-prefill", "generation": generation},
            "status": status,
        }))
        .unwrap_or_default()
    }

    #[test]
    fn lag_names_the_unobserved_generation_first() {
        let d = deployment(5, 4, Some(1));
        assert_eq!(
            lag(&d, 2),
            Some(Lag::Generation {
                generation: 5,
                observed: 4
            })
        );
        assert_eq!(
            lag(&deployment(5, 5, Some(1)), 2),
            Some(Lag::Ready {
                ready: 2,
                status: 1
            })
        );
        assert_eq!(lag(&deployment(5, 5, Some(2)), 2), None);
        // readyReplicas is omitted when 0.
        assert_eq!(lag(&deployment(5, 5, None), 0), None);
    }

    #[test]
    fn an_absence_is_reported_once_after_quiet_then_its_end() {
        let mut c = ControllerCheck::default();
        let t0 = Instant::now();
        let l = Some(Lag::Generation {
            generation: 3,
            observed: 2,
        });
        assert_eq!(c.observe("llm/x", l.clone(), t0), None);
        assert_eq!(
            c.observe("llm/x", l.clone(), t0 + QUIET / 2),
            None,
            "a short lag is normal"
        );
        let Some(Verdict::Absent(text)) = c.observe("llm/x", l.clone(), t0 + QUIET) else {
            panic!("no verdict after QUIET");
        };
        assert!(
            text.contains(
                "Deployment llm/x: generation 3 not observed by the controller for 10.0s"
            ) && text.contains("is kube-controller-manager running?"),
            "{text}"
        );
        assert_eq!(c.observe("llm/x", l, t0 + QUIET * 3), None, "once");
        let back = c.observe("llm/x", None, t0 + QUIET * 4);
        assert_eq!(
            back,
            Some(Verdict::Back(
                "Deployment llm/x: the controller caught up after 40.0s; going on".into()
            ))
        );
        assert_eq!(c.observe("llm/x", None, t0 + QUIET * 5), None);
    }

    #[test]
    fn a_lag_that_ends_before_quiet_says_nothing() {
        let mut c = ControllerCheck::default();
        let t0 = Instant::now();
        let l = Some(Lag::Ready {
            ready: 2,
            status: 1,
        });
        assert_eq!(c.observe("llm/x", l.clone(), t0), None);
        assert_eq!(c.observe("llm/x", None, t0 + QUIET / 2), None);
        // A new lag starts its own clock.
        assert_eq!(c.observe("llm/x", l.clone(), t0 + QUIET), None);
        assert!(matches!(
            c.observe("llm/x", l, t0 + QUIET * 2),
            Some(Verdict::Absent(t)) if t.contains("has not counted its Ready pods for 10.0s (2 Ready, status.readyReplicas 1)")
        ));
    }
}
