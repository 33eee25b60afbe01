//! What the driver does with what arrives: a watch event applied to the
//! step trackers, the Auditor, the Deployment view and the revert watch; a
//! `/ready` answer; a tick (sampling, `/ready` polls). Steps go to the
//! reporter and the Auditor as they are seen; the decisions they lead to are
//! the leg monitor's.

use std::time::Instant;

use infera_audit::Timed;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher::Event;

use super::{Driver, marker};
use crate::leg_tracker::StepKind;
use crate::options::RolloutError;
use crate::watch::{Watched, watch_streams};
use infera_cluster::ClusterError;
use infera_cluster::reflect::name_key;

impl Driver<'_> {
    /// Pods a re-list showed gone without saying when: the Events date
    /// their deletion for the audit.
    pub(super) async fn date_vanished(&mut self) {
        let wanted = self.auditor.unresolved_deletions();
        if wanted.is_empty() {
            return;
        }
        for (ns, name, at) in infera_audit::date_deletions(&self.api.conn.client, &wanted).await {
            self.auditor.deleted_at(ns.as_deref(), &name, at);
        }
    }

    /// A replacement just turned Ready or registered: ask its `/ready`
    /// through the proxy now rather than at the next poll.
    pub(super) fn probe_new_ready(&mut self, index: usize, since: usize) {
        let leg = &self.legs[index];
        let Some(tracker) = self.trackers.get(index) else {
            return;
        };
        for (_, obs, at) in &self.steps[since..] {
            if matches!(obs.kind, StepKind::Ready | StepKind::Routable)
                && !tracker.has_seen(&obs.pod, StepKind::ReadyViaProxy)
            {
                self.probes.ask(leg, &obs.pod, *at);
            }
        }
    }

    /// A `/ready` answer; `true` when it made a step.
    pub(super) fn on_probe(&mut self, leg: &str, pod: &str, result: Result<(), String>) -> bool {
        let Some(t) = self.trackers.iter_mut().find(|t| t.leg == leg) else {
            return false;
        };
        let ok = result.is_ok();
        let detail = result.err().unwrap_or_else(|| "200".to_string());
        if ok {
            self.probes.answered(pod);
        }
        let Some(obs) = t.proxy_result(pod, ok, detail) else {
            return false;
        };
        let now = Instant::now();
        self.out.step(leg, &obs, now);
        self.auditor.step(marker(
            leg,
            obs.kind.as_str(),
            Some((obs.pod.clone(), obs.node.clone())),
            now,
        ));
        self.steps.push((leg.to_string(), obs, now));
        true
    }

    /// Every 100 ms: refresh the reporter, sample, poll `/ready` of
    /// replacements that have not answered yet.
    pub(super) fn on_tick(&mut self, index: usize) {
        let now = Instant::now();
        self.out.tick(now);
        if now >= self.next_sample {
            self.auditor.sample(now);
            self.next_sample += self.sample_every;
            if self.next_sample < now {
                self.next_sample = now + self.sample_every;
            }
        }
        if let Some(t) = self.trackers.get(index) {
            for pod in t.awaiting_proxy() {
                if self.probes.due(&pod, now) {
                    self.probes.ask(&self.legs[index], &pod, now);
                }
            }
        }
    }

    /// Apply one watch event everywhere; returns how many steps it produced
    /// on the current leg.
    pub(super) fn handle(
        &mut self,
        w: Watched,
        current: Option<usize>,
    ) -> Result<usize, RolloutError> {
        let now = Instant::now();
        match w {
            Watched::Pod(Ok(ev)) => {
                let blind = !self.auditor.is_current();
                self.auditor.apply(&ev, now);
                let clock = *self.auditor.server_clock();
                let mut produced = 0;
                for (i, t) in self.trackers.iter_mut().enumerate() {
                    for obs in t.apply(&ev) {
                        // Pods of a leg not yet triggered cannot be
                        // replacements; only the current leg's steps are
                        // reported and recorded.
                        if Some(i) != current {
                            continue;
                        }
                        produced += 1;
                        // A step that arrived late (blind, or a replay) is
                        // timed by the server's own timestamp.
                        let at = event_pod(&ev, &obs.pod)
                            .and_then(|p| obs.kind.server_time(p))
                            .map_or(now, |ts| match clock.when(Some(ts), now, blind) {
                                Timed::Server(at) | Timed::Window(at, _) => at,
                                Timed::Arrival(at) => at,
                                Timed::Unknown => now,
                            });
                        self.out.step(&t.leg, &obs, at);
                        let pod = Some((obs.pod.clone(), obs.node.clone()));
                        self.auditor
                            .step(marker(&t.leg, obs.kind.as_str(), pod, at));
                        self.steps.push((t.leg.clone(), obs, at));
                    }
                }
                Ok(produced)
            }
            Watched::Deployment(Ok(ev)) => {
                self.deployments.apply(&ev, name_key, |d| Some(d.clone()));
                if let Event::Apply(d) | Event::InitApply(d) = &ev
                    && !self.is_idep
                    && d.metadata.name.as_deref() == Some(self.req.target.name.as_str())
                {
                    let obj = serde_json::to_value(d).unwrap_or_default();
                    self.revert.observe(&obj, now);
                }
                Ok(0)
            }
            Watched::Target(Ok(Event::Apply(obj) | Event::InitApply(obj))) => {
                let obj = serde_json::to_value(&obj).unwrap_or_default();
                self.revert.observe(&obj, now);
                Ok(0)
            }
            Watched::Target(Ok(_)) => Ok(0),
            Watched::Beat(beat) => {
                if let Some(answer) = &beat.answered
                    && let Some(date) = answer.date
                {
                    self.skew.observe(beat.sent_wall, answer.at_wall, date);
                    self.auditor.set_skew(self.skew);
                }
                self.auditor.beat(&beat, now);
                if self.auditor.take_resync() {
                    // The old streams may stay silent after a partition
                    // while new requests succeed: watch afresh.
                    tracing::info!(target: infera_cluster::trace::target::ROLLOUT_DRIVER, "the API server answers again: watching afresh (a re-list)");
                    self.events = watch_streams(self.api.conn, self.req, &self.legs);
                }
                Ok(0)
            }
            Watched::Pod(Err(e)) => self.watch_error(&e, "pods"),
            Watched::Deployment(Err(e)) => self.watch_error(&e, "deployments.apps"),
            Watched::Target(Err(e)) => self.watch_error(&e, self.api.resource()),
        }
    }

    /// A watch error: fatal ones (403, 401, …) stop the rollout naming the
    /// resource whose watch failed; the rest re-list with backoff.
    fn watch_error(
        &mut self,
        e: &kube::runtime::watcher::Error,
        resource: &str,
    ) -> Result<usize, RolloutError> {
        let conn = self.api.conn;
        let err = ClusterError::from_watcher(e, &conn.url, resource, Some(&conn.namespace));
        if err.is_fatal() {
            return Err(err.into());
        }
        tracing::info!(target: infera_cluster::trace::target::ROLLOUT_DRIVER, "watch restart: {err}; re-listing with backoff");
        // Only the pod watch is the audit's evidence.
        if resource == "pods" {
            self.auditor.watch_error(Instant::now(), &err.to_string());
        }
        if !self.warned {
            self.warned = true;
            self.out.note(&format!(
                "note: watch interrupted ({err}); re-listing with backoff"
            ));
        }
        Ok(0)
    }
}

/// The pod named `name` in a watch event, if it carries it.
fn event_pod<'e>(ev: &'e Event<Pod>, name: &str) -> Option<&'e Pod> {
    match ev {
        Event::Apply(p) | Event::Delete(p) | Event::InitApply(p) => {
            (p.metadata.name.as_deref() == Some(name)).then_some(p)
        }
        Event::Init | Event::InitDone => None,
    }
}
