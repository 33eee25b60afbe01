//! The process entry shared by `infera` and `kubectl-infera` (kubectl's
//! plugin discovery runs `kubectl-infera` for `kubectl infera …`): parse,
//! dispatch, map errors to exit codes — nothing else.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use crate::cli::{Cli, Command, RolloutCommand, SimCommand};
use infera_audit::exit::Exit;

/// Run the command line as `bin_name` (`infera`, or `kubectl infera` for
/// the plugin, so help and errors show what the user typed).
pub fn main(bin_name: &'static str) -> ExitCode {
    let matches = match Cli::command().bin_name(bin_name).try_get_matches() {
        Ok(matches) => matches,
        Err(e) => with_flag_hint(e, bin_name).exit(),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    // A service logs its state changes without -v.
    let service = matches!(cli.command, Command::Monitor(_));
    crate::logging::init_logging(cli.verbose, service);
    let exit = match run(cli) {
        Ok(exit) => exit,
        Err(err) => {
            // The credentials rule applies to the last line too.
            let text = infera_cluster::redact::scrub(&format!("{err:#}"));
            eprintln!("error: {text}");
            Exit::Usage
        }
    };
    ExitCode::from(exit.code())
}

fn run(cli: Cli) -> anyhow::Result<Exit> {
    match cli.command {
        Command::Lint(args) => crate::commands::lint::run(&args),
        Command::Rules(args) => crate::commands::lint::rules_command(&args),
        Command::Render(args) => crate::commands::render::render_command(&args),
        Command::Rollout(RolloutCommand::Restart(args)) => {
            runtime()?.block_on(crate::console::rollout(args, None))
        }
        Command::Rollout(RolloutCommand::SetImage(args)) => {
            runtime()?.block_on(crate::console::rollout(args.rollout, Some(args.image)))
        }
        Command::Rollout(RolloutCommand::History(args)) => {
            runtime()?.block_on(crate::console::history::history(args))
        }
        Command::Audit(args) => runtime()?.block_on(crate::console::audit(args)),
        Command::Drain(args) => runtime()?.block_on(crate::console::drain::drain(args)),
        Command::Sim(SimCommand::Serve(args)) => {
            runtime()?.block_on(crate::commands::sim::serve(args))
        }
        Command::Sim(SimCommand::Attach(args)) => {
            runtime()?.block_on(crate::commands::sim_attach::run(args))
        }
        Command::Sim(SimCommand::Scenarios) => crate::commands::sim::list_scenarios(),
        Command::Demo(args) => runtime()?.block_on(crate::console::demo(args)),
        Command::Monitor(args) => runtime()?.block_on(crate::commands::monitor::run(args)),
        Command::Rbac(args) => runtime()?.block_on(crate::commands::rbac::rbac_command(&args)),
        Command::Policy(args) => crate::commands::policy::policy_command(&args),
        Command::Completions(args) => {
            use std::io::Write;
            std::io::stdout().write_all(&crate::generate::completion(args.shell))?;
            Ok(Exit::Ok)
        }
        Command::Generate(args) => {
            crate::generate::write_all(&args.dir)?;
            Ok(Exit::Ok)
        }
    }
}

/// `infera -n llm rollout …`: a kubectl-style flag before the subcommand
/// gets a tip that it goes after it (as kubectl requires of a plugin).
fn with_flag_hint(mut e: clap::Error, bin_name: &str) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return e;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return e;
    };
    let name = arg.split('=').next().unwrap_or(arg);
    let kubectl = [
        "-n",
        "--namespace",
        "--kubeconfig",
        "--context",
        "-A",
        "--all-namespaces",
    ];
    if !kubectl.contains(&name) {
        return e;
    }
    let tip = format!(
        "kubectl-style flags go after the subcommand: `{bin_name} rollout restart idep/NAME {name} …`"
    );
    e.insert(
        ContextKind::Suggested,
        ContextValue::StyledStrs(vec![tip.into()]),
    );
    e
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(argv: &[&str]) -> String {
        match Cli::command().try_get_matches_from(argv) {
            Ok(_) => String::from("(parsed)"),
            Err(e) => with_flag_hint(e, "infera").render().to_string(),
        }
    }

    /// `rollout restart|set-image`, `audit` and `drain --help` list every
    /// exit code the README's table has, from the one list in `cli.rs`.
    #[test]
    fn help_lists_every_exit_code() {
        let readme = include_str!("../README.md");
        let mut cli = Cli::command();
        for path in [
            &["rollout", "restart"][..],
            &["rollout", "set-image"],
            &["audit"],
            &["drain"],
        ] {
            let mut sub = &mut cli;
            for name in path {
                sub = sub
                    .find_subcommand_mut(name)
                    .unwrap_or_else(|| panic!("no {name}"));
            }
            let help = sub.render_help().to_string();
            let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
            for code in ["0", "1", "2", "3", "4", "130"] {
                let lead = if code == "0" { "Exit codes: " } else { "; " };
                assert!(
                    help.contains(&format!("{lead}{code} ")),
                    "{path:?} {code}: {help}"
                );
                assert!(readme.contains(&format!("\n| {code} |")), "README: {code}");
            }
        }
    }

    /// A kubectl flag before the subcommand gets the tip; after it, it
    /// parses; another unknown flag gets no such tip.
    #[test]
    fn kubectl_flags_before_the_subcommand_get_a_tip() {
        for flag in ["-n", "--context", "--kubeconfig", "-A"] {
            let text = error_of(&["infera", flag, "x", "rollout", "restart", "idep/llama"]);
            assert!(
                text.contains(&format!(
                    "kubectl-style flags go after the subcommand: `infera rollout restart idep/NAME {flag} …`"
                )),
                "{flag}: {text}"
            );
        }
        let after = error_of(&["infera", "rollout", "restart", "idep/llama", "-n", "llm"]);
        assert_eq!(after, "(parsed)");
        let other = error_of(&["infera", "--bogus", "rollout"]);
        assert!(!other.contains("kubectl-style"), "{other}");
    }
}
