//! Before a rollout is driven: refuse a Deployment the operator owns, work
//! out the legs and the change (or resume the in-flight rollout of the same
//! request), and after the plan decide whether to drive at all.

use serde_json::Value;

use super::legs::{Leg, legs_of};
use super::options::{Options, PauseBetween, Request, RolloutError};
use super::plan::Plan;
use super::record::InFlight;
use super::reporter::{Question, Reporter};
use super::target::TargetKind;
use super::trigger::{self, Change};
use infera_audit::RoleSpec;
use infera_audit::exit::Exit;
use infera_cluster::Connection;
use infera_model::worker::{LABEL_DEPLOYMENT, LABEL_MANAGED_BY, LABEL_SERVICE, MANAGED_BY_VALUE};

/// A plain Deployment the operator owns cannot be rolled directly.
pub(crate) fn refuse_operator_managed(req: &Request, live: &Value) -> Result<(), RolloutError> {
    let label = |k: &str| {
        live.pointer("/metadata/labels")
            .and_then(|l| l.get(k))
            .and_then(Value::as_str)
    };
    if label(LABEL_MANAGED_BY) != Some(MANAGED_BY_VALUE) {
        return Ok(());
    }
    let idep = label(LABEL_DEPLOYMENT).unwrap_or("NAME");
    let svc = label(LABEL_SERVICE).unwrap_or("SERVICE");
    Err(RolloutError::Usage(format!(
        "{} is managed by the infera operator, which reverts any change to it within seconds; \
         roll it through its InferaDeployment: `infera rollout restart idep/{idep} --service {svc}`",
        req.target
    )))
}

/// Legs, roles, the change and the in-flight record of this drive.
pub(crate) struct Prepared {
    pub roles: Vec<RoleSpec>,
    pub legs: Vec<Leg>,
    pub change: Change,
    pub record: InFlight,
    /// Resuming an interrupted rollout of the same request.
    pub resumed: bool,
}

/// Work out the legs and the change; resume the in-flight rollout when it
/// is the same request, refuse when it is another.
pub(crate) async fn prepare(
    conn: &Connection,
    req: &Request,
    live: &Value,
    record: Option<InFlight>,
    out: &mut dyn Reporter,
) -> Result<Prepared, RolloutError> {
    let is_idep = req.target.kind == TargetKind::InferaDeployment;
    let (roles, mut legs) = legs_of(conn, req, live).await?;
    let now_ts = jiff::Timestamp::now();
    let change = Change {
        restart_at: (req.command == "restart").then(|| {
            if is_idep {
                trigger::label_timestamp(now_ts)
            } else {
                trigger::annotation_timestamp(now_ts)
            }
        }),
        image: req.image.clone(),
        env: req.env.clone(),
    };
    let Some(rec) = record else {
        let record = InFlight {
            command: req.command.to_string(),
            change: change.clone(),
            legs: legs.iter().map(|l| l.name.clone()).collect(),
            done: Vec::new(),
            current: None,
            started_at: trigger::annotation_timestamp(now_ts),
        };
        return Ok(Prepared {
            roles,
            legs,
            change,
            record,
            resumed: false,
        });
    };
    let explicit: Vec<String> = if req.services.is_empty() {
        Vec::new()
    } else {
        legs.iter().map(|l| l.name.clone()).collect()
    };
    if !rec.same_request(req.command, &change, &explicit) {
        return Err(RolloutError::Usage(format!(
            "another rollout is in flight on {}: {}. Rerun that command to resume it, or add `--abort` to undo its current leg",
            req.target,
            rec.describe()
        )));
    }
    out.note(&format!(
        "Resuming the interrupted rollout: {}",
        rec.describe()
    ));
    legs.retain(|l| rec.legs.contains(&l.name));
    legs.sort_by_key(|l| rec.legs.iter().position(|o| o == &l.name));
    Ok(Prepared {
        roles,
        legs,
        change: rec.change.clone(),
        record: rec,
        resumed: true,
    })
}

/// A dry run exits as the real run would begin: 3 when the plan would
/// refuse it without `--force` (a CI gate on `--dry-run` sees the GAP), 0
/// otherwise; nothing is changed either way.
fn dry_run_exit(plan: &Plan, opts: &Options, resumed: bool, out: &mut dyn Reporter) -> Exit {
    if plan.refuses() && !opts.force && !resumed {
        out.note(&plan.refusal());
        out.note("Dry run: nothing was changed; the roll itself would stop here (exit 3) without --force.");
        return Exit::Stalled;
    }
    out.note("Dry run: nothing was changed.");
    Exit::Ok
}

/// After the plan: drive, or stop here with this exit code.
pub(crate) enum Gate {
    Drive { pause_pods: bool },
    Stop(Exit),
}

pub(crate) fn gate(
    plan: &Plan,
    opts: &Options,
    is_idep: bool,
    resumed: bool,
    out: &mut dyn Reporter,
) -> Result<Gate, RolloutError> {
    if opts.pause_between == PauseBetween::Pods && is_idep {
        return Err(RolloutError::Usage(
            "`--pause-between pods` works through `spec.paused`, which the infera operator reverts on its Deployments; \
             use `--pause-between legs` to stop between services"
                .into(),
        ));
    }
    if opts.dry_run {
        return Ok(Gate::Stop(dry_run_exit(plan, opts, resumed, out)));
    }
    let mut pause_pods = opts.pause_between == PauseBetween::Pods && !opts.yes;
    if pause_pods && !out.interactive() {
        out.note(
            "--pause-between pods: no terminal to confirm on; rolling without pausing (use --yes to silence this)",
        );
        pause_pods = false;
    }
    let blocking = plan.refuses();
    if blocking && !opts.force && !resumed {
        out.note(&plan.refusal());
        return Ok(Gate::Stop(Exit::Stalled));
    }
    if blocking {
        out.note("Proceeding despite the preflight (--force).");
    }
    if !opts.yes && out.ask(&Question::Start) == Some(false) {
        out.note("Nothing was changed.");
        return Ok(Gate::Stop(Exit::Ok));
    }
    Ok(Gate::Drive { pause_pods })
}
