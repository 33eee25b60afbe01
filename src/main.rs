//! `infera`: parse, dispatch, map errors to exit codes — nothing else.

use std::process::ExitCode;

use clap::Parser;
use infera::cli::{Cli, Command, RolloutCommand, SimCommand};
use infera::exit::Exit;

fn main() -> ExitCode {
    let cli = Cli::parse();
    infera::cluster::trace::init_logging(cli.verbose);
    match run(cli) {
        Ok(exit) => exit.into(),
        Err(err) => {
            // The credentials rule applies to the last line too.
            let text = infera::cluster::redact::scrub(&format!("{err:#}"));
            eprintln!("error: {text}");
            Exit::Usage.into()
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<Exit> {
    match cli.command {
        Command::Lint(args) => infera::commands::lint::run(&args),
        Command::Rules(args) => infera::commands::lint::rules_command(&args),
        Command::Render(args) => infera::commands::render::render_command(&args),
        Command::Rollout(RolloutCommand::Restart(args)) => {
            runtime()?.block_on(infera::console::rollout(args, None))
        }
        Command::Rollout(RolloutCommand::SetImage(args)) => {
            runtime()?.block_on(infera::console::rollout(args.rollout, Some(args.image)))
        }
        Command::Rollout(RolloutCommand::History(args)) => {
            runtime()?.block_on(infera::console::history::history(args))
        }
        Command::Audit(args) => runtime()?.block_on(infera::console::audit(args)),
        Command::Sim(SimCommand::Serve(args)) => {
            runtime()?.block_on(infera::commands::sim::serve(args))
        }
        Command::Sim(SimCommand::Attach(args)) => {
            runtime()?.block_on(infera::commands::sim_attach::run(args))
        }
        Command::Sim(SimCommand::Scenarios) => infera::commands::sim::list_scenarios(),
        Command::Demo(args) => runtime()?.block_on(infera::console::demo(args)),
        Command::Rbac(args) => infera::commands::rbac::rbac_command(&args),
        Command::Completions(args) => {
            use std::io::Write;
            std::io::stdout().write_all(&infera::generate::completion(args.shell))?;
            Ok(Exit::Ok)
        }
        Command::Generate(args) => {
            infera::generate::write_all(&args.dir)?;
            Ok(Exit::Ok)
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}
