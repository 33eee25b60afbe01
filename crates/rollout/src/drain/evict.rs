//! Evict the pods left on the draining nodes through the Eviction API, as
//! `kubectl drain` does: a 429 (a PodDisruptionBudget refusing, or the API
//! server's rate limit) is retried every 5 s; a pod already gone is done;
//! then wait until each evicted pod is deleted (gone, or replaced by a pod
//! of the same name with another UID).

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, EvictParams};

use super::DrainError;
use crate::api::retrying;
use crate::reporter::Reporter;
use infera_cluster::{ClusterError, Connection};

/// kubectl drain's wait before retrying an eviction answered 429.
pub const RETRY_429: Duration = Duration::from_secs(5);
/// Between two checks of whether an evicted pod is deleted yet.
const POLL: Duration = Duration::from_millis(250);

/// One pod to evict.
#[derive(Debug, Clone)]
pub struct Victim {
    pub namespace: String,
    pub name: String,
    pub uid: Option<String>,
    /// Already being deleted: only waited for.
    pub terminating: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Not evicted yet; try again at this instant.
    Pending {
        next: Instant,
        refused: bool,
    },
    /// Eviction accepted; waiting for the deletion.
    Evicted,
    Gone,
}

/// How the evictions ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvictEnd {
    /// Every pod evicted and deleted.
    Done,
    /// `--timeout` passed first, in this phase (`evicting`, or `waiting
    /// for the evicted pods to be deleted`).
    Timeout(&'static str),
    Interrupted,
}

/// Evict `victims` and wait for them, until `deadline` (wall).
pub async fn evict_all(
    conn: &Connection,
    victims: &[Victim],
    grace: Option<i64>,
    deadline: Option<Instant>,
    out: &mut dyn Reporter,
    interrupt: &mut (dyn std::future::Future<Output = ()> + Unpin),
) -> Result<EvictEnd, DrainError> {
    let mut states: Vec<State> = victims
        .iter()
        .map(|v| match v.terminating {
            true => State::Evicted,
            false => State::Pending {
                next: Instant::now(),
                refused: false,
            },
        })
        .collect();
    loop {
        let now = Instant::now();
        for (victim, state) in victims.iter().zip(states.iter_mut()) {
            step(conn, victim, state, grace, now, out).await?;
        }
        if states.iter().all(|s| *s == State::Gone) {
            return Ok(EvictEnd::Done);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            let evicting = (states.iter()).any(|s| matches!(s, State::Pending { .. }));
            return Ok(EvictEnd::Timeout(match evicting {
                true => "evicting",
                false => "waiting for the evicted pods to be deleted",
            }));
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            () = &mut *interrupt => return Ok(EvictEnd::Interrupted),
        }
    }
}

/// The Eviction's options; `dry_run`: `dryRun=All` (server dry run).
fn params(grace: Option<i64>, dry_run: bool) -> EvictParams {
    let mut params = EvictParams {
        delete_options: grace.map(|g| DeleteParams {
            grace_period_seconds: u32::try_from(g).ok(),
            dry_run,
            ..DeleteParams::default()
        }),
        ..EvictParams::default()
    };
    params.post_options.dry_run = dry_run;
    params
}

/// One eviction with `dryRun=All`: `Ok(None)` accepted (or the pod is
/// gone), `Ok(Some(message))` refused with 429.
pub async fn evict_dry_run(
    conn: &Connection,
    namespace: &str,
    name: &str,
    grace: Option<i64>,
) -> Result<Option<String>, DrainError> {
    let api: Api<Pod> = Api::namespaced(conn.probe_client.clone(), namespace);
    match api.evict(name, &params(grace, true)).await {
        Ok(_) => Ok(None),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
        Err(kube::Error::Api(s)) if s.code == 429 => Ok(Some(s.message)),
        Err(e) => Err(DrainError::from(ClusterError::from_kube(
            &e,
            &conn.url,
            "create",
            "pods/eviction",
            Some(namespace),
        ))),
    }
}

/// Advance one pod: evict it when due, or check whether it is deleted.
async fn step(
    conn: &Connection,
    v: &Victim,
    state: &mut State,
    grace: Option<i64>,
    now: Instant,
    out: &mut dyn Reporter,
) -> Result<(), DrainError> {
    // Without `kube`'s own 429 retry (15 times with backoff): a budget's
    // 429 is an answer, retried here every 5 s as kubectl does.
    let api: Api<Pod> = Api::namespaced(conn.probe_client.clone(), &v.namespace);
    let label = format!("{}/{}", v.namespace, v.name);
    let failed = |e: &kube::Error, verb: &str, resource: &str| {
        DrainError::from(ClusterError::from_kube(
            e,
            &conn.url,
            verb,
            resource,
            Some(&v.namespace),
        ))
    };
    match state.clone() {
        State::Pending { next, refused } if now >= next => {
            match api.evict(&v.name, &params(grace, false)).await {
                Ok(_) => {
                    out.event("drain", &format!("evicted {label}"), Instant::now());
                    *state = State::Evicted;
                }
                Err(kube::Error::Api(s)) if s.code == 404 => *state = State::Gone,
                Err(kube::Error::Api(s)) if s.code == 429 => {
                    if !refused {
                        let text = format!(
                            "eviction of {label} refused (429): {}; retrying every {} s, as kubectl drain does",
                            s.message,
                            RETRY_429.as_secs()
                        );
                        out.event("drain", &text, Instant::now());
                    }
                    *state = State::Pending {
                        next: now + RETRY_429,
                        refused: true,
                    };
                }
                Err(e) => return Err(failed(&e, "create", "pods/eviction")),
            }
        }
        State::Evicted => {
            let got = retrying("get pod", || api.get_opt(&v.name))
                .await
                .map_err(|e| failed(&e, "get", "pods"))?;
            let same = got.is_some_and(|p| p.metadata.uid == v.uid || v.uid.is_none());
            if !same {
                out.event("drain", &format!("deleted {label}"), Instant::now());
                *state = State::Gone;
            }
        }
        _ => {}
    }
    Ok(())
}
