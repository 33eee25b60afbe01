//! `infera rollout`: plan, drive, step events.
//!
//! * [`target`] — `idep/NAME` | `deploy/NAME`.
//! * [`trigger`] — the change as merge patches on the CR (or Deployment), and its undo.
//! * [`record`] — the in-flight record (annotation) that makes resume and `--abort` work.
//! * [`plan`] — the preflight table: strategy, surge capacity, lint, verdict; leg order.
//! * [`tracker`] — the per-leg step state machine over pod watch events.
//! * [`progress`] — bars on a TTY, timestamped lines otherwise.
//! * [`drive`] — the watch loop tying them together with the Auditor.
//!
//! Exit codes: 0 complete and every role held `--min-ready`; 1 complete but
//! a role fell below; 3 stalled, aborted, timed out, or stopped by the
//! preflight (a predicted stall/gap without `--force`); 2 usage, connection
//! or permission; 130 interrupted.

pub mod drive;
mod lint_bridge;
pub mod plan;
pub mod progress;
pub mod record;
pub mod target;
pub mod tracker;
pub mod trigger;

pub use drive::{Options, Request, RolloutError, RolloutOutcome, execute};

use crate::cli::RolloutArgs;
use crate::exit::Exit;

/// Build the library request and options from the command line.
pub fn request_from_args(
    args: &RolloutArgs,
    image: Option<String>,
) -> Result<(Request, Options), RolloutError> {
    let target: target::Target = args
        .target
        .parse()
        .map_err(|e: target::TargetError| RolloutError::Usage(e.to_string()))?;
    let env = args
        .set_env
        .iter()
        .map(|e| trigger::parse_env(e))
        .collect::<Result<Vec<_>, _>>()?;
    if args.surge && target.kind == target::TargetKind::InferaDeployment {
        return Err(RolloutError::Usage(
            "`--surge` applies to plain Deployments; the infera operator sets the strategy of its own \
             (surge-first when the worker has its /ready probe)"
                .into(),
        ));
    }
    let command = if image.is_some() {
        "set-image"
    } else {
        "restart"
    };
    let request = Request {
        target,
        services: args.service.clone(),
        order: args.order.clone(),
        command,
        image,
        env,
        surge: args.surge,
    };
    let options = Options {
        dry_run: args.dry_run,
        force: args.force,
        yes: args.yes,
        abort: args.abort,
        pause_between: args.pause_between,
        step_timeout: args.step_timeout,
        stall_after: args.stall_after,
        on_stall: args.on_stall,
        sample_interval: args.audit.sample_interval,
        min_ready: args.audit.min_ready,
        time_scale: 1.0,
        simulated: false,
        bars: progress::interactive(),
        command_line: command_line(),
    };
    Ok((request, options))
}

/// The invocation, quoted for a shell, without `--abort`.
fn command_line() -> String {
    std::env::args()
        .filter(|a| a != "--abort")
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@".contains(c))
            {
                a
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Print the report and write `--report` / `--timeline`.
pub fn finish_outputs(outcome: &RolloutOutcome, knobs: &crate::cli::AuditKnobs) {
    if let Some(report) = &outcome.report {
        crate::audit::write_outputs(report, knobs);
    }
}

/// `infera rollout restart|set-image`.
pub async fn run(args: RolloutArgs, image: Option<String>) -> anyhow::Result<Exit> {
    let (request, options) = match request_from_args(&args, image) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::Usage);
        }
    };
    let conn = match crate::cluster::connect(&args.cluster_args).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::Usage);
        }
    };
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    match execute(&conn, request, options, interrupt).await {
        Ok(outcome) => {
            finish_outputs(&outcome, &args.audit);
            Ok(outcome.exit)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(Exit::Usage)
        }
    }
}
