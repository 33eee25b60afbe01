//! The decisions of one leg while it is driven: keep waiting, blind, done,
//! pause, stall, revert, the controller, the step timeout, Ctrl-C.
//!
//! Pure and synchronous: no I/O, no clock (`now` comes with every input).
//! The driver makes the requests, runs the watches and prints; after every
//! watch event, `/ready` answer and tick it shows the monitor the leg as it
//! sees it ([`Seen`]), does what the [`Decision`] says, and asks again until
//! the answer is [`Decision::Wait`]. Each decision is given once, so asking
//! again with the same view goes on to the next check. The checks, in order:
//!
//! 1. blind: while the watches are not current no step is taken (completing
//!    the leg, the next trigger, a revert or an abort), and the blind time
//!    does not count as time without progress;
//! 2. the leg is complete;
//! 3. `--pause-between pods`: hold the Deployment as soon as a replacement
//!    exists, let it go once that replacement is Ready;
//! 4. a stall: the surge pod Unschedulable for `--stall-after`, or the
//!    Deployment past its progress deadline; reported once, then abort or
//!    wait (`--on-stall`);
//! 5. a trigger field reverted by another writer;
//! 6. the Deployment controller absent or back (`controller.rs`); its return
//!    restarts the step timer;
//! 7. no step for `--step-timeout` (not while waiting out a stall).

use std::time::{Duration, Instant};

use super::controller::{ControllerCheck, Lag, Verdict};
use super::options::OnStall;
use super::revert::Revert;

/// The flags that shape a leg's decisions; durations are wall time.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Policy {
    /// `--step-timeout`.
    pub step_timeout: Duration,
    /// `--stall-after`.
    pub stall_after: Duration,
    pub on_stall: OnStall,
    /// `--pause-between pods`, with a terminal to confirm on.
    pub pause_pods: bool,
}

/// The leg as the driver sees it at `now`.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub now: Instant,
    /// Why the watches are not current (`None`: they are).
    pub blind: Option<String>,
    /// The step tracker says the leg is complete.
    pub complete: bool,
    /// The leg's desired replicas.
    pub replicas: u32,
    /// Replacements that exist and are not terminating.
    pub created: usize,
    /// Replacements Ready, at most `replicas`.
    pub replaced: usize,
    /// A replacement the scheduler cannot place: (pod, message).
    pub unschedulable: Option<(String, String)>,
    /// The Deployment's `ProgressDeadlineExceeded` message.
    pub deadline: Option<String>,
    /// A trigger field another writer changed.
    pub reverted: Option<Revert>,
    /// The controller's lag on the leg's Deployment; `None`: nothing to
    /// judge (no Deployment seen yet, or the pods are being re-listed).
    pub controller: Option<Option<Lag>>,
}

/// What the driver tells the monitor.
#[derive(Debug, Clone)]
pub(crate) enum Input<'a> {
    /// The leg as seen now.
    Look(&'a Seen),
    /// A step of the leg at this time (a pod event, a `/ready` answer), or
    /// the held Deployment let go: the step timer starts again.
    Progress(Instant),
    /// Ctrl-C.
    Interrupt,
}

/// What the driver does next.
#[derive(Debug, PartialEq)]
pub(crate) enum Decision {
    /// Nothing to do: wait for the next event, answer or tick.
    Wait,
    /// The watches just stopped being current (why); no step until they are.
    Blind(String),
    /// Current again after this long blind (wall time).
    Sighted(Duration),
    /// Every replacement in, every old pod gone.
    LegDone,
    /// Hold the Deployment (`spec.paused`) while replacement `created` of
    /// `of` comes up.
    Pause { created: usize, of: u32 },
    /// The held replacement is Ready: ask whether to go on (`ask`: more
    /// are to come), then let the Deployment go on.
    NextPod { replaced: usize, of: u32, ask: bool },
    /// Stalled (pod, why): report it; then abort the leg, or keep waiting.
    Stall {
        pod: Option<String>,
        message: String,
        abort: bool,
    },
    /// Another writer reverted the trigger: undo the leg, stop.
    Revert(Revert),
    /// The Deployment controller went quiet, or came back.
    Controller(Verdict),
    /// No step for `--step-timeout`: stop, touching nothing that serves.
    Timeout,
    /// Ctrl-C: stop, touching nothing that serves.
    Interrupted,
}

/// The state of one leg's decisions.
#[derive(Debug)]
pub(crate) struct LegMonitor {
    policy: Policy,
    /// `NS/NAME` of the leg's Deployment (the controller verdicts name it).
    deployment: String,
    last_progress: Instant,
    blind_since: Option<Instant>,
    unschedulable_since: Option<Instant>,
    stall_reported: bool,
    /// `--pause-between pods`: the Deployment is held.
    paused: bool,
    /// Replacements that existed when it was last held.
    paused_for: usize,
    controller: ControllerCheck,
}

impl LegMonitor {
    /// A leg whose watch starts at `now`.
    pub fn new(policy: Policy, deployment: String, now: Instant) -> Self {
        LegMonitor {
            policy,
            deployment,
            last_progress: now,
            blind_since: None,
            unschedulable_since: None,
            stall_reported: false,
            paused: false,
            paused_for: 0,
            controller: ControllerCheck::default(),
        }
    }

    pub fn decide(&mut self, input: Input<'_>) -> Decision {
        match input {
            Input::Look(seen) => self.look(seen),
            Input::Progress(at) => {
                self.last_progress = at;
                Decision::Wait
            }
            Input::Interrupt => Decision::Interrupted,
        }
    }

    fn look(&mut self, seen: &Seen) -> Decision {
        if let Some(decision) = self.sight(seen) {
            return decision;
        }
        if seen.complete {
            return Decision::LegDone;
        }
        if let Some(decision) = self.pause(seen).or_else(|| self.stall(seen)) {
            return decision;
        }
        if let Some(revert) = &seen.reverted {
            return Decision::Revert(revert.clone());
        }
        if let Some(decision) = self.controller(seen) {
            return decision;
        }
        let quiet = seen.now.saturating_duration_since(self.last_progress);
        let waiting_out_a_stall = self.stall_reported && self.policy.on_stall == OnStall::Wait;
        if quiet >= self.policy.step_timeout && !waiting_out_a_stall {
            return Decision::Timeout;
        }
        Decision::Wait
    }

    /// Blind: a decision (or `Wait`); `None`: the watches are current.
    fn sight(&mut self, seen: &Seen) -> Option<Decision> {
        match (&seen.blind, self.blind_since) {
            (None, None) => None,
            (Some(_), Some(_)) => Some(Decision::Wait),
            (Some(why), None) => {
                self.blind_since = Some(seen.now);
                Some(Decision::Blind(why.clone()))
            }
            (None, Some(since)) => {
                self.blind_since = None;
                let blind = seen.now.saturating_duration_since(since);
                self.last_progress += blind;
                if let Some(t) = self.unschedulable_since.as_mut() {
                    *t += blind;
                }
                Some(Decision::Sighted(blind))
            }
        }
    }

    fn pause(&mut self, seen: &Seen) -> Option<Decision> {
        if !self.policy.pause_pods {
            return None;
        }
        let (created, replaced, of) = (seen.created, seen.replaced, seen.replicas);
        if !self.paused && created > replaced && created > self.paused_for {
            self.paused = true;
            self.paused_for = created;
            return Some(Decision::Pause { created, of });
        }
        if !(self.paused && replaced >= self.paused_for) {
            return None;
        }
        self.paused = false;
        let ask = replaced < of as usize;
        Some(Decision::NextPod { replaced, of, ask })
    }

    fn stall(&mut self, seen: &Seen) -> Option<Decision> {
        match (&seen.unschedulable, self.unschedulable_since) {
            (Some(_), None) => self.unschedulable_since = Some(seen.now),
            (None, Some(_)) => self.unschedulable_since = None,
            _ => {}
        }
        if self.stall_reported {
            return None;
        }
        let stalled_for = (self.unschedulable_since).map(|t| seen.now.saturating_duration_since(t));
        let (pod, message) = match (stalled_for, &seen.unschedulable, &seen.deadline) {
            (Some(d), Some((pod, message)), _) if d >= self.policy.stall_after => {
                (Some(pod.clone()), message.clone())
            }
            (_, _, Some(message)) => (None, message.clone()),
            _ => return None,
        };
        self.stall_reported = true;
        let abort = self.policy.on_stall == OnStall::Abort;
        Some(Decision::Stall {
            pod,
            message,
            abort,
        })
    }

    fn controller(&mut self, seen: &Seen) -> Option<Decision> {
        let lag = seen.controller.clone()?;
        let verdict = self.controller.observe(&self.deployment, lag, seen.now)?;
        if let Verdict::Back(_) = verdict {
            self.last_progress = seen.now;
        }
        Some(Decision::Controller(verdict))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::QUIET;

    const TIMEOUT: Duration = Duration::from_secs(60);
    const STALL: Duration = Duration::from_secs(30);

    fn policy(on_stall: OnStall, pause_pods: bool) -> Policy {
        Policy {
            step_timeout: TIMEOUT,
            stall_after: STALL,
            on_stall,
            pause_pods,
        }
    }

    /// What a row feeds, `at` seconds after the leg's watch started.
    enum In {
        Look(Box<Seen>),
        Progress,
        Interrupt,
    }

    /// A leg of two replicas, nothing happening, the watches current.
    fn quiet() -> Seen {
        Seen {
            now: Instant::now(),
            blind: None,
            complete: false,
            replicas: 2,
            created: 0,
            replaced: 0,
            unschedulable: None,
            deadline: None,
            reverted: None,
            controller: None,
        }
    }

    fn look(f: impl FnOnce(&mut Seen)) -> In {
        let mut seen = quiet();
        f(&mut seen);
        In::Look(Box::new(seen))
    }

    fn waiting() -> In {
        In::Look(Box::new(quiet()))
    }

    fn blind() -> In {
        look(|s| s.blind = Some("no heartbeat answered".into()))
    }

    fn unschedulable() -> In {
        look(|s| s.unschedulable = Some(("p-2".into(), "0/3 nodes are available".into())))
    }

    fn replacements(created: usize, replaced: usize) -> In {
        look(|s| (s.created, s.replaced) = (created, replaced))
    }

    fn lagging(lag: Option<Lag>) -> In {
        look(|s| s.controller = Some(lag))
    }

    fn revert() -> Revert {
        Revert {
            leg: "decode".into(),
            field: "services.decode.image".into(),
            by: Some("kustomize-controller".into()),
            now: Some("v1".into()),
            back_to_before: true,
            after: Some(Duration::from_secs(21)),
        }
    }

    fn stall(pod: Option<&str>, message: &str, abort: bool) -> Decision {
        Decision::Stall {
            pod: pod.map(str::to_string),
            message: message.into(),
            abort,
        }
    }

    /// A case, the policy, then (seconds, input, the decision expected) in
    /// order.
    type Row = (&'static str, Policy, Vec<(u64, In, Decision)>);

    /// Waiting, done, the step timeout, blind.
    fn timer_rows() -> Vec<Row> {
        use Decision::*;
        let abort = policy(OnStall::Abort, false);
        vec![
            ("nothing happens: wait", abort, vec![(0, waiting(), Wait)]),
            (
                "the leg completes",
                abort,
                vec![(5, look(|s| s.complete = true), LegDone)],
            ),
            (
                "no step for --step-timeout",
                abort,
                vec![(59, waiting(), Wait), (60, waiting(), Timeout)],
            ),
            (
                "a step restarts the step timer",
                abort,
                vec![
                    (50, In::Progress, Wait),
                    (109, waiting(), Wait),
                    (110, waiting(), Timeout),
                ],
            ),
            (
                "blind: said once, no step, no timeout; the blind time does not count",
                abort,
                vec![
                    (10, blind(), Blind("no heartbeat answered".into())),
                    (20, blind(), Wait),
                    (
                        90,
                        look(|s| (s.blind, s.complete) = (Some("x".into()), true)),
                        Wait,
                    ),
                    (100, waiting(), Sighted(Duration::from_secs(90))),
                    (100, waiting(), Wait),
                    (149, waiting(), Wait),
                    (150, waiting(), Timeout),
                ],
            ),
        ]
    }

    /// A stall: Unschedulable for --stall-after, or past the deadline.
    fn stall_rows() -> Vec<Row> {
        use Decision::*;
        let wait = policy(OnStall::Wait, false);
        let abort = policy(OnStall::Abort, false);
        vec![
            (
                "Unschedulable for --stall-after: stall, then abort",
                abort,
                vec![
                    (0, unschedulable(), Wait),
                    (29, unschedulable(), Wait),
                    (
                        30,
                        unschedulable(),
                        stall(Some("p-2"), "0/3 nodes are available", true),
                    ),
                    (31, unschedulable(), Wait),
                ],
            ),
            (
                "--on-stall wait: reported once, and no timeout while waiting it out",
                wait,
                vec![
                    (0, unschedulable(), Wait),
                    (
                        30,
                        unschedulable(),
                        stall(Some("p-2"), "0/3 nodes are available", false),
                    ),
                    (31, unschedulable(), Wait),
                    (600, unschedulable(), Wait),
                ],
            ),
            (
                "a pod scheduled meanwhile starts the stall clock again",
                abort,
                vec![
                    (0, unschedulable(), Wait),
                    (20, waiting(), Wait),
                    (25, unschedulable(), Wait),
                    (54, unschedulable(), Wait),
                    (
                        55,
                        unschedulable(),
                        stall(Some("p-2"), "0/3 nodes are available", true),
                    ),
                ],
            ),
            (
                "the Deployment past its progress deadline is a stall at once",
                abort,
                vec![(
                    1,
                    look(|s| s.deadline = Some("ReplicaSet has timed out progressing".into())),
                    stall(None, "ReplicaSet has timed out progressing", true),
                )],
            ),
            (
                "blind time does not count toward --stall-after",
                abort,
                vec![
                    (0, unschedulable(), Wait),
                    (10, blind(), Blind("no heartbeat answered".into())),
                    (100, unschedulable(), Sighted(Duration::from_secs(90))),
                    (100, unschedulable(), Wait),
                    (
                        120,
                        unschedulable(),
                        stall(Some("p-2"), "0/3 nodes are available", true),
                    ),
                ],
            ),
        ]
    }

    /// Revert, Ctrl-C, the pause between pods, the controller.
    fn other_rows() -> Vec<Row> {
        use Decision::*;
        let wait = policy(OnStall::Wait, false);
        let abort = policy(OnStall::Abort, false);
        let pods = policy(OnStall::Abort, true);
        let generation = Some(Lag::Generation {
            generation: 3,
            observed: 2,
        });
        vec![
            (
                "a revert stops the leg",
                abort,
                vec![(3, look(|s| s.reverted = Some(revert())), Revert(revert()))],
            ),
            (
                "a stall is said before the revert, each once",
                wait,
                vec![
                    (0, unschedulable(), Wait),
                    (
                        30,
                        look(|s| {
                            s.unschedulable = Some(("p-2".into(), "full".into()));
                            s.reverted = Some(revert());
                        }),
                        stall(Some("p-2"), "full", false),
                    ),
                    (30, look(|s| s.reverted = Some(revert())), Revert(revert())),
                ],
            ),
            ("Ctrl-C", abort, vec![(7, In::Interrupt, Interrupted)]),
            (
                "--pause-between pods: hold each replacement, ask until the last",
                pods,
                vec![
                    (1, replacements(1, 0), Pause { created: 1, of: 2 }),
                    (2, replacements(1, 0), Wait),
                    (
                        3,
                        replacements(1, 1),
                        NextPod {
                            replaced: 1,
                            of: 2,
                            ask: true,
                        },
                    ),
                    (4, replacements(2, 1), Pause { created: 2, of: 2 }),
                    (
                        5,
                        replacements(2, 2),
                        NextPod {
                            replaced: 2,
                            of: 2,
                            ask: false,
                        },
                    ),
                    (6, replacements(2, 2), Wait),
                ],
            ),
            (
                "without --pause-between pods nothing is held",
                abort,
                vec![(1, replacements(1, 0), Wait)],
            ),
            (
                "the controller absent for QUIET, then back: the step timer starts again",
                abort,
                vec![
                    (0, lagging(generation.clone()), Wait),
                    (QUIET.as_secs(), lagging(generation.clone()), Controller(Verdict::Absent(
                        "Deployment llm/x: generation 3 not observed by the controller for 10.0s \
                         (status.observedGeneration 2) — is kube-controller-manager running? \
                         Nothing rolls without it; waiting (not a stall)".into(),
                    ))),
                    (20, lagging(generation), Wait),
                    (50, lagging(None), Controller(Verdict::Back(
                        "Deployment llm/x: the controller caught up after 50.0s; going on".into(),
                    ))),
                    (109, lagging(None), Wait),
                    (110, lagging(None), Timeout),
                ],
            ),
        ]
    }

    #[test]
    fn decisions_from_inputs() {
        let t0 = Instant::now();
        let rows = [timer_rows(), stall_rows(), other_rows()];
        for (case, policy, script) in rows.into_iter().flatten() {
            let mut monitor = LegMonitor::new(policy, "llm/x".into(), t0);
            for (i, (at, input, expected)) in script.into_iter().enumerate() {
                let now = t0 + Duration::from_secs(at);
                let decision = match input {
                    In::Look(mut seen) => {
                        seen.now = now;
                        monitor.decide(Input::Look(&seen))
                    }
                    In::Progress => monitor.decide(Input::Progress(now)),
                    In::Interrupt => monitor.decide(Input::Interrupt),
                };
                assert_eq!(decision, expected, "{case}: input {i} at {at}s");
            }
        }
    }
}
