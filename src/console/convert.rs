//! Command-line flags (`crate::cli`) into library options: the one place
//! the rollout, audit and demo libraries meet clap's types.

use crate::cli::{self, AuditArgs, AuditKnobs, DemoArgs, RolloutArgs};
use infera_rollout::target::{Target, TargetError, TargetKind};
use infera_rollout::{OnStall, PauseBetween, Request, RolloutError, trigger};

impl From<cli::PauseBetween> for PauseBetween {
    fn from(p: cli::PauseBetween) -> Self {
        match p {
            cli::PauseBetween::Legs => PauseBetween::Legs,
            cli::PauseBetween::Pods => PauseBetween::Pods,
            cli::PauseBetween::Never => PauseBetween::Never,
        }
    }
}

impl From<cli::OnStall> for OnStall {
    fn from(o: cli::OnStall) -> Self {
        match o {
            cli::OnStall::Abort => OnStall::Abort,
            cli::OnStall::Wait => OnStall::Wait,
        }
    }
}

impl From<&RolloutArgs> for infera_rollout::Options {
    fn from(args: &RolloutArgs) -> Self {
        infera_rollout::Options {
            dry_run: args.dry_run,
            force: args.force,
            yes: args.yes,
            abort: args.abort,
            pause_between: args.pause_between.into(),
            step_timeout: args.step_timeout,
            stall_after: args.stall_after,
            on_stall: args.on_stall.into(),
            sample_interval: args.audit.sample_interval,
            min_ready: args.audit.min_ready,
            time_scale: 1.0,
            simulated: false,
            command_line: command_line(),
        }
    }
}

impl From<&AuditKnobs> for infera_audit::Outputs {
    fn from(knobs: &AuditKnobs) -> Self {
        infera_audit::Outputs {
            report: knobs.report.clone(),
            timeline: knobs.timeline.clone(),
        }
    }
}

impl From<&AuditArgs> for infera_audit::Options {
    fn from(args: &AuditArgs) -> Self {
        infera_audit::Options {
            target: args.targets.first().cloned().unwrap_or_default(),
            duration: args.duration,
            until_complete: args.until_complete,
            roles: args.role.clone(),
            samples: args.samples.clone(),
            sample_interval: args.audit.sample_interval,
            min_ready: args.audit.min_ready,
        }
    }
}

impl From<&AuditArgs> for infera_audit::Selection {
    fn from(args: &AuditArgs) -> Self {
        infera_audit::Selection {
            targets: args.targets.clone(),
            selector: args.selector.clone(),
            all_namespaces: args.all_namespaces,
        }
    }
}

impl From<&DemoArgs> for crate::demo::Options {
    fn from(args: &DemoArgs) -> Self {
        crate::demo::Options {
            scenario: args.scenario.clone(),
            speed: args.speed,
            stall_after: args.stall_after,
            sample_interval: args.audit.sample_interval,
            min_ready: args.audit.min_ready,
            traffic: !args.no_traffic,
        }
    }
}

/// The library request of `infera rollout restart|set-image` (`image`:
/// set-image's image).
pub fn request(args: &RolloutArgs, image: Option<String>) -> Result<Request, RolloutError> {
    let target: Target = args
        .target
        .parse()
        .map_err(|e: TargetError| RolloutError::Usage(e.to_string()))?;
    let env = args
        .set_env
        .iter()
        .map(|e| trigger::parse_env(e))
        .collect::<Result<Vec<_>, _>>()?;
    if args.surge && target.kind == TargetKind::InferaDeployment {
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
    Ok(Request {
        target,
        services: args.service.clone(),
        order: args.order.clone(),
        command,
        image,
        env,
        surge: args.surge,
    })
}

/// The invocation, quoted for a shell, without `--abort`.
pub(crate) fn command_line() -> String {
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
