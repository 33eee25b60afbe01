//! The driver's writes to the target, and what it reports with them: the
//! trigger (or picking up a leg already triggered), the pause between pods,
//! a stall or a revert answered with the undo, and a finished leg recorded.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::Value;

use super::{Driver, Next, marker, wall};
use crate::abort::undo_leg;
use crate::api::failed_scheduling_event;
use crate::leg_monitor::{Input, LegMonitor};
use crate::leg_tracker::LegTracker;
use crate::options::{PauseBetween, RolloutError};
use crate::record::{LegRecord, combine};
use crate::reporter::{Question, Stall};
use crate::revert::Revert;
use crate::trigger::{Original, deployment_patch, idep_patch};
use infera_audit::Outcome;

impl Driver<'_> {
    /// Apply the change to leg `index` (or pick up where an interrupted run
    /// left it).
    pub(super) async fn trigger(&mut self, index: usize) -> Result<(), RolloutError> {
        let now = Instant::now();
        let leg = self.legs[index].name.clone();
        let in_flight_here = self.record.current.as_ref().is_some_and(|c| c.leg == leg);
        if in_flight_here {
            self.resume_leg(&leg, now).await?;
            let live = self.live.clone();
            let original = self.record.current.as_ref().map(|c| c.original.clone());
            self.revert.arm(
                &leg,
                &live,
                &self.change,
                original.as_ref(),
                self.is_idep,
                now,
            );
            self.revert.check_resumed(&live);
        } else {
            let mut leg_original = Original::default();
            let (is_idep, surge) = (self.is_idep, self.req.surge);
            let (rec_base, change) = (&self.record, &self.change);
            let patched = self
                .api
                .patch_with(|live| {
                    let (patch, original) = if is_idep {
                        idep_patch(live, &leg, change)?
                    } else {
                        deployment_patch(live, change, surge)?
                    };
                    leg_original = original.clone();
                    let mut rec = rec_base.clone();
                    rec.current = Some(LegRecord {
                        leg: leg.clone(),
                        original,
                    });
                    Ok(combine(patch, &rec.annotation_patch()?))
                })
                .await?;
            self.revert
                .arm(&leg, &patched, change, Some(&leg_original), is_idep, now);
            self.record.current = Some(LegRecord {
                leg: leg.clone(),
                original: leg_original,
            });
            let text = format!(
                "trigger applied: {}",
                self.change.describe(self.is_idep, &leg)
            );
            self.out.event(&leg, &text, now);
        }
        self.auditor.step(marker(&leg, "trigger", None, now));
        self.out
            .activity(&leg, "waiting for the replacement pod", now);
        Ok(())
    }

    /// The trigger of this leg is already on the target: go on watching;
    /// let a Deployment held between pods go on.
    async fn resume_leg(&mut self, leg: &str, now: Instant) -> Result<(), RolloutError> {
        self.out
            .event(leg, "resuming: trigger already applied", now);
        let paused = self.live.pointer("/spec/paused").and_then(Value::as_bool) == Some(true);
        if !self.is_idep && paused {
            // Stopped between pods (`--pause-between pods`): go on.
            self.api
                .patch_with(|_| Ok(serde_json::json!({"spec": {"paused": false}})))
                .await?;
            self.out
                .event(leg, "unpaused (it was stopped between pods)", now);
        }
        Ok(())
    }

    /// `--pause-between pods` (plain Deployment): the held replacement is
    /// Ready; ask (when more are to come), then let the Deployment go on.
    pub(super) async fn next_pod(
        &mut self,
        leg: &str,
        question: Question,
        ask: bool,
        monitor: &mut LegMonitor,
    ) -> Result<Next, RolloutError> {
        if ask && self.out.ask(&question) == Some(false) {
            self.out.event(
                leg,
                "stopped between pods: the Deployment stays paused and its Ready pods keep serving; rerun the same command to go on, or add --abort to roll back",
                Instant::now(),
            );
            return Ok(Next::Stop(Outcome::Interrupted));
        }
        self.set_paused(false).await?;
        self.out
            .event(leg, "unpaused (spec.paused=false)", Instant::now());
        monitor.decide(Input::Progress(Instant::now()));
        Ok(Next::Go)
    }

    pub(super) async fn set_paused(&self, paused: bool) -> Result<(), RolloutError> {
        self.api
            .patch_with(|_| Ok(serde_json::json!({"spec": {"paused": paused}})))
            .await?;
        Ok(())
    }

    /// A stall (the surge pod Unschedulable for `--stall-after`, or the
    /// Deployment past its progress deadline): report it, quoting the
    /// scheduler's Event; then abort (`--on-stall abort`) or keep waiting.
    pub(super) async fn stalled(
        &mut self,
        index: usize,
        pod: Option<String>,
        message: String,
        abort: bool,
        now: Instant,
    ) -> Result<Next, RolloutError> {
        let leg = self.legs[index].name.clone();
        let quoted = match &pod {
            Some(p) => {
                let conn = self.api.conn;
                failed_scheduling_event(&conn.client, &conn.namespace, p)
                    .await
                    .unwrap_or(message)
            }
            None => message,
        };
        let stall = Stall {
            pod: pod.clone(),
            message: quoted,
            after: self.opts.stall_after,
        };
        self.out.stall(&leg, &stall, now);
        self.auditor
            .step(marker(&leg, "stalled", pod.map(|p| (p, None)), now));
        if abort {
            self.abort_leg(index, now).await?;
            return Ok(Next::Stop(Outcome::Aborted));
        }
        self.out.event(
            &leg,
            "waiting (--on-stall wait): the old pods keep serving; Ctrl-C to stop",
            now,
        );
        Ok(Next::Go)
    }

    /// A trigger field put back by another writer: say who and when, undo
    /// the rest of the leg's change as an abort does (the old pods keep
    /// serving), and stop before any further leg.
    pub(super) async fn reverted(
        &mut self,
        index: usize,
        revert: &Revert,
        now: Instant,
    ) -> Result<Next, RolloutError> {
        let leg = self.legs[index].name.clone();
        let text = format!(
            "REVERTED: {}; stopping: no further leg",
            revert.describe(self.opts.time_scale)
        );
        self.out.event(&leg, &text, now);
        self.auditor.step(marker(&leg, "reverted", None, now));
        self.abort_leg(index, now).await?;
        self.out.note(
            "The change was reverted by another writer: commit it to Git (or suspend the GitOps sync), then rerun.",
        );
        Ok(Next::Stop(Outcome::Reverted))
    }

    /// Undo the leg's change, retrying through a partition (a transient
    /// error: the API server does not answer) until it is done; the cluster's
    /// state is unknown meanwhile and the output says so. Ctrl-C stops
    /// retrying (the rerun with `--abort` finishes the undo).
    async fn undo_until_answered(&mut self, leg: &str) -> Result<(), RolloutError> {
        let mut backoff = infera_cluster::watch_backoff();
        loop {
            match undo_leg(&self.api, &mut self.record, self.is_idep).await {
                Err(RolloutError::Cluster(e)) if !e.is_fatal() => {
                    let text = format!(
                        "abort: the API server does not answer ({e}); the cluster's state is unknown; retrying"
                    );
                    self.out.event(leg, &text, Instant::now());
                    let wait = backoff.next().unwrap_or(Duration::from_secs(5));
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = self.interrupt.as_mut() => {
                            self.out.event(leg, "INTERRUPTED while aborting: the undo was not applied; rerun with --abort", Instant::now());
                            return Err(RolloutError::Cluster(e));
                        }
                    }
                }
                other => return other,
            }
        }
    }

    /// Put the leg's previous template back so its old pods keep serving,
    /// then wait (bounded) until its replacement pods are gone.
    pub(super) async fn abort_leg(
        &mut self,
        index: usize,
        now: Instant,
    ) -> Result<(), RolloutError> {
        let leg = self.legs[index].name.clone();
        self.out.event(
            &leg,
            "aborting: restoring the previous pod template on the target so the old pods keep serving",
            now,
        );
        self.revert.disarm();
        self.undo_until_answered(&leg).await?;
        self.auditor
            .step(marker(&leg, "aborted", None, Instant::now()));
        let bound = wall(self.opts, self.opts.step_timeout);
        let deadline = Instant::now() + bound.min(Duration::from_secs(60));
        loop {
            let surge_left = self
                .trackers
                .get(index)
                .is_some_and(|t| t.pods().any(|p| p.new));
            if !surge_left {
                return Ok(());
            }
            tokio::select! {
                ev = self.events.next() => match ev {
                    Some(w) => { self.handle(w, Some(index))?; }
                    None => return Ok(()),
                },
                _ = tokio::time::sleep_until(deadline.into()) => return Ok(()),
            }
        }
    }

    /// The leg is complete: record it, and between legs ask to go on
    /// (`--pause-between legs`). `false`: stopped between legs.
    pub(super) async fn finish_leg(&mut self, index: usize) -> Result<bool, RolloutError> {
        let now = Instant::now();
        let leg = self.legs[index].name.clone();
        self.revert.disarm();
        self.record.done.push(leg.clone());
        self.record.current = None;
        let rec = self.record.clone();
        self.api.patch_with(|_| Ok(rec.annotation_patch()?)).await?;
        self.auditor.step(marker(&leg, "leg-complete", None, now));
        let registers = self.trackers.get(index).is_some_and(LegTracker::registers);
        self.out.event(
            &leg,
            if registers {
                "leg complete: every replacement Ready and routable, every old pod gone"
            } else {
                "leg complete: every replacement Ready, every old pod gone"
            },
            now,
        );
        self.out.leg_done(&leg, "done");
        let more = self
            .legs
            .iter()
            .skip(index + 1)
            .any(|l| !self.record.done.contains(&l.name));
        if !(more && self.opts.pause_between == PauseBetween::Legs && !self.opts.yes) {
            return Ok(true);
        }
        match self.out.ask(&Question::NextLeg) {
            Some(true) => Ok(true),
            Some(false) => {
                self.out
                    .note("Stopped between legs. Rerun the same command to go on.");
                Ok(false)
            }
            None => {
                self.out.event(
                    &leg,
                    "--pause-between legs: no terminal to confirm on; going on (use --yes to silence this)",
                    now,
                );
                Ok(true)
            }
        }
    }
}
