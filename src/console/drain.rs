//! `infera drain`: flags in, the plan and the drive on stdout (or JSON
//! lines), the closing audit of every fleet that had a pod on the node(s),
//! the output files, the exit code.

use std::io::Write;

use crate::cli::{DrainArgs, RolloutFormat};
use infera_audit::Outputs;
use infera_audit::exit::Exit;
use infera_model::selector::Selector;
use infera_rollout::Reporter;
use infera_rollout::drain::{self, DrainOptions, DryRun, Selection};

use super::{Terminal, command_line, ctrl_c, finish_many, interactive, page_context, usage};

/// The library options of `infera drain`'s flags.
pub fn options(args: &DrainArgs) -> Result<DrainOptions, String> {
    let pod_selector = match &args.pod_selector {
        Some(s) => Some(
            infera_audit::parse_selector(s)
                .ok_or_else(|| format!("--pod-selector `{s}`: use key=value[,key=value…]"))?,
        ),
        None => None,
    };
    if let Some(s) = &args.selector {
        Selector::parse(s).map_err(|e| format!("cannot read -l `{s}`: {e}"))?;
    }
    if args.nodes.is_empty() == args.selector.is_none() {
        return Err(
            "give NODE names or -l SELECTOR, not both and not neither (as kubectl drain)".into(),
        );
    }
    let mut rollout = infera_rollout::Options::unattended(1.0);
    rollout.simulated = false;
    rollout.force = args.force;
    rollout.step_timeout = args.step_timeout;
    rollout.stall_after = args.stall_after;
    rollout.sample_interval = args.audit.sample_interval;
    rollout.min_ready = args.audit.min_ready;
    rollout.command_line = super::convert::command_line();
    Ok(DrainOptions {
        selection: Selection {
            nodes: args.nodes.clone(),
            selector: args.selector.clone(),
            pod_selector,
            ignore_daemonsets: args.ignore_daemonsets,
            delete_emptydir_data: args.delete_emptydir_data,
            force: args.force,
        },
        grace_period: (args.grace_period >= 0).then_some(args.grace_period),
        timeout: (!args.timeout.is_zero()).then_some(args.timeout),
        dry_run: dry_run(&args.dry_run)?,
        force: args.force,
        rollout,
        traffic: None,
    })
}

/// A resumed drain's report covers this run only: say so, and that an
/// existing `--report` file (the earlier run's, if it wrote one there) is
/// replaced.
fn say_resumed(started: &str, outputs: &infera_audit::Outputs) {
    eprintln!(
        "note: this run resumed the drain started at {started}; its report covers this run only, from the resume"
    );
    if let Some(path) = outputs.report.as_ref().filter(|p| p.exists()) {
        eprintln!(
            "note: {} already exists and is replaced (the earlier run's report, if it wrote one there)",
            path.display()
        );
    }
}

/// `--traffic` (not on a dry run: nothing is rolled to send through).
fn with_traffic(
    mut options: DrainOptions,
    args: &DrainArgs,
    conn: &infera_cluster::Connection,
) -> Result<DrainOptions, String> {
    let flags = &args.traffic;
    if !flags.traffic || options.dry_run != DryRun::None {
        return Ok(options);
    }
    let settings = super::traffic::settings(flags);
    settings.check().map_err(|e| e.to_string())?;
    options.traffic = Some(drain::DrainTraffic {
        named: super::traffic::named_route(flags, conn).transpose()?,
        settings,
    });
    Ok(options)
}

/// `--dry-run[=STRATEGY]` as kubectl reads it (`GetDryRunStrategy`): bare
/// (clap's missing value `unchanged`, kubectl's NoOptDefVal) and the old
/// booleans still work, with kubectl's deprecation warning on stderr.
fn dry_run(flag: &str) -> Result<DryRun, String> {
    let (strategy, instead) = match flag {
        "none" => return Ok(DryRun::None),
        "client" => return Ok(DryRun::Client),
        "server" => return Ok(DryRun::Server),
        "unchanged" => {
            eprintln!(
                "warning: --dry-run is deprecated and can be replaced with --dry-run=client."
            );
            return Ok(DryRun::Client);
        }
        "true" | "1" | "t" | "T" | "TRUE" | "True" => (DryRun::Client, "client"),
        "false" | "0" | "f" | "F" | "FALSE" | "False" => (DryRun::None, "none"),
        _ => {
            return Err(format!(
                "Invalid dry-run value ({flag}). Must be \"none\", \"server\", or \"client\"."
            ));
        }
    };
    eprintln!(
        "warning: --dry-run={flag} is deprecated (boolean value) and can be replaced with --dry-run={instead}."
    );
    Ok(strategy)
}

/// `infera drain NODE… | -l SELECTOR`.
pub async fn drain(args: DrainArgs) -> anyhow::Result<Exit> {
    let options = match options(&args) {
        Ok(o) => o,
        Err(e) => return Ok(usage(e)),
    };
    let outputs = Outputs::from(&args.audit);
    if let Err(e) = outputs.check() {
        return Ok(usage(e));
    }
    let conn = match infera_cluster::connect(&args.cluster_args.options()).await {
        Ok(c) => c,
        Err(e) => return Ok(usage(e)),
    };
    let options = match with_traffic(options, &args, &conn) {
        Ok(o) => o,
        Err(e) => return Ok(usage(e)),
    };
    let json = args.output == RolloutFormat::Json;
    let mut terminal;
    let mut lines;
    let out: &mut dyn Reporter = if json {
        lines = super::json::JsonLines::new(std::io::stdout());
        &mut lines
    } else {
        terminal = Terminal::new(interactive());
        &mut terminal
    };
    let outcome = match drain::drain(&conn, &options, out, ctrl_c()).await {
        Ok(outcome) => outcome,
        Err(e) => return Ok(usage(e)),
    };
    let Some(report) = outcome.report else {
        if json {
            let line =
                serde_json::json!({"event": "result", "exit": outcome.exit.code(), "report": null});
            let _ = writeln!(std::io::stdout(), "{line}");
        }
        return Ok(outcome.exit);
    };
    if let Some(started) = &outcome.resumed_from {
        say_resumed(started, &outputs);
    }
    let mut page = page_context(Some(&conn), command_line(), None);
    page.plan = outcome.plan.as_ref().map(drain::DrainPlan::render);
    if json {
        let body = report
            .try_to_json()
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .unwrap_or(serde_json::Value::Null);
        let exit = super::finish_files_many(&report, &outputs, &page, outcome.exit);
        let line = serde_json::json!({"event": "result", "exit": exit.code(), "report": body});
        let _ = writeln!(std::io::stdout(), "{line}");
        return Ok(exit);
    }
    Ok(finish_many(&report, &outputs, &page))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn dry_run_reads_as_kubectl_does() {
        let cases = [
            ("none", Some(DryRun::None)),
            ("client", Some(DryRun::Client)),
            ("server", Some(DryRun::Server)),
            ("unchanged", Some(DryRun::Client)),
            ("true", Some(DryRun::Client)),
            ("false", Some(DryRun::None)),
            ("maybe", None),
        ];
        for (flag, want) in cases {
            assert_eq!(dry_run(flag).ok(), want, "{flag}");
        }
        let e = dry_run("maybe").unwrap_err();
        assert_eq!(
            e,
            "Invalid dry-run value (maybe). Must be \"none\", \"server\", or \"client\"."
        );
        // Bare `--dry-run` takes no value from the next word (kubectl's
        // NoOptDefVal): the node stays a node.
        let args = drain_args(&["--dry-run", "gpu-node-0"]);
        assert_eq!(args.nodes, ["gpu-node-0"]);
        assert_eq!(dry_run(&args.dry_run), Ok(DryRun::Client));
        let args = drain_args(&["gpu-node-0"]);
        assert_eq!(dry_run(&args.dry_run), Ok(DryRun::None));
    }

    fn drain_args(extra: &[&str]) -> DrainArgs {
        let mut argv = vec!["infera", "drain"];
        argv.extend_from_slice(extra);
        match crate::cli::Cli::try_parse_from(argv).map(|c| c.command) {
            Ok(crate::cli::Command::Drain(args)) => args,
            other => panic!("not a drain command: {other:?}"),
        }
    }
}
