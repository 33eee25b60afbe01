//! The command line's edge of `infera rollout`, `infera audit`,
//! `infera drain` and `infera demo`: flags into library options ([`convert`]), the terminal
//! [`Reporter`](infera_rollout::Reporter) ([`progress`]), the report on
//! stdout, the output files and the exit codes. The libraries
//! (`infera_rollout`, `infera_audit`) and `crate::demo` neither print, nor
//! read a terminal, nor know clap; this module does.
//!
//! Every output-file failure (`--report`, `--timeline`, `--samples`) exits
//! 2 from every command, with one line naming the file: before any work
//! when the file cannot be created where it is named, after it when the
//! write fails.

pub mod convert;
pub mod drain;
pub mod history;
pub mod html;
pub mod json;
pub mod progress;
pub mod traffic;

use crate::cli::{AuditArgs, DemoArgs, RolloutArgs};
use infera_audit::exit::Exit;
use infera_audit::{AuditCommandError, Outputs, Report};

pub use progress::{Terminal, interactive};

/// Ctrl-C; never resolves when the signal cannot be listened for.
async fn ctrl_c() {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

fn stamp() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// This process's command line, for the report page.
fn command_line() -> String {
    let args: Vec<String> = std::env::args().collect();
    infera_cluster::redact::scrub(&args.join(" "))
}

/// `error: …` on stderr; exit 2.
fn usage(e: impl std::fmt::Display) -> Exit {
    eprintln!("error: {e}");
    Exit::Usage
}

/// Print the table and the sentence to stdout and write the output files.
/// A file that cannot be written is reported on stderr (the evidence on
/// stdout still stands) and makes the exit 2.
pub fn finish_outputs(report: Option<&Report>, outputs: &Outputs, exit: Exit) -> Exit {
    finish_outputs_with(report, outputs, exit, &html::PageContext::default())
}

/// [`finish_outputs`], with what an HTML `--report` says besides the
/// report (context, command, plan).
pub fn finish_outputs_with(
    report: Option<&Report>,
    outputs: &Outputs,
    exit: Exit,
    page: &html::PageContext,
) -> Exit {
    let Some(report) = report else {
        return exit;
    };
    println!("{}", report.table());
    println!("{}", report.sentence());
    traffic::print(report);
    if write_all(report, outputs, page) {
        Exit::Usage
    } else {
        exit
    }
}

/// Every output file; an HTML `--report` is the page, any other the JSON.
/// Each written file is said on stderr; `true` when one failed.
fn write_all(report: &Report, outputs: &Outputs, page: &html::PageContext) -> bool {
    !say_written(write_outputs(report, outputs, page))
}

/// `what written to PATH` per file, `error: …` per failure (stderr);
/// whether every file was written.
fn say_written(
    results: Vec<Result<(&'static str, std::path::PathBuf), infera_audit::ReportError>>,
) -> bool {
    let mut ok = true;
    for result in results {
        match result {
            Ok((what, path)) => eprintln!("{what} written to {}", path.display()),
            Err(e) => {
                eprintln!("error: {e}");
                ok = false;
            }
        }
    }
    ok
}

fn write_outputs(
    report: &Report,
    outputs: &Outputs,
    page: &html::PageContext,
) -> Vec<Result<(&'static str, std::path::PathBuf), infera_audit::ReportError>> {
    let Some(path) = outputs.report.as_ref().filter(|p| html::is_html(p)) else {
        return outputs.write(report);
    };
    let mut rest = outputs.clone();
    rest.report = None;
    let mut results = vec![html::write(path, report, page).map(|()| ("report", path.clone()))];
    results.extend(rest.write(report));
    results
}

/// The page context of a command: its connection and plan.
fn page_context(
    conn: Option<&infera_cluster::Connection>,
    command: String,
    plan: Option<&infera_rollout::plan::Plan>,
) -> html::PageContext {
    html::PageContext {
        context: conn.and_then(|c| c.context.clone()),
        namespace: conn.map(|c| c.namespace.clone()),
        command,
        plan: plan.map(infera_rollout::plan::Plan::render),
    }
}

/// `infera rollout restart|set-image`.
pub async fn rollout(args: RolloutArgs, image: Option<String>) -> anyhow::Result<Exit> {
    let request = match convert::request(&args, image) {
        Ok(r) => r,
        Err(e) => return Ok(usage(e)),
    };
    let outputs = Outputs::from(&args.audit);
    if let Err(e) = outputs.check() {
        return Ok(usage(e));
    }
    let options = infera_rollout::Options::from(&args);
    let conn = match infera_cluster::connect(&args.cluster_args.options()).await {
        Ok(c) => c,
        Err(e) => return Ok(usage(e)),
    };
    let json = args.output == crate::cli::RolloutFormat::Json;
    let mut terminal;
    let mut lines;
    let out: &mut dyn infera_rollout::Reporter = if json {
        lines = json::JsonLines::new(std::io::stdout());
        &mut lines
    } else {
        terminal = Terminal::new(interactive());
        &mut terminal
    };
    let sending = if options.dry_run {
        None
    } else {
        match traffic::start(&args.traffic, &conn, &args.target).await {
            Ok(t) => t,
            Err(exit) => return Ok(exit),
        }
    };
    let mut outcome =
        match infera_rollout::execute_with(&conn, request, options, out, ctrl_c()).await {
            Ok(outcome) => outcome,
            Err(e) => return Ok(usage(e)),
        };
    outcome.exit = traffic::finish(sending, outcome.report.as_mut(), outcome.exit).await;
    let page = page_context(Some(&conn), command_line(), outcome.plan.as_ref());
    let report = outcome.report.as_ref();
    if json {
        return Ok(json::finish(report, &outputs, outcome.exit, &page));
    }
    Ok(finish_outputs_with(report, &outputs, outcome.exit, &page))
}

/// `infera audit TARGET…` / `-l SELECTOR [-A]`.
pub async fn audit(args: AuditArgs) -> anyhow::Result<Exit> {
    let options = infera_audit::Options::from(&args);
    if options.duration.is_none() && !options.until_complete {
        return Err(AuditCommandError::NoMode.into());
    }
    let selection = infera_audit::Selection::from(&args);
    selection.parse()?;
    if selection.is_many() {
        return audit_many(args, options, selection).await;
    }
    let outputs = Outputs::from(&args.audit);
    outputs.check()?;
    let conn = infera_cluster::connect(&args.cluster_args.options()).await?;
    conn.check_namespace().await?;
    let status = |line: &str| eprintln!("{} {line}", stamp());
    let sending = match traffic::start(&args.traffic, &conn, &options.target).await {
        Ok(t) => t,
        Err(exit) => return Ok(exit),
    };
    let mut report =
        infera_audit::audit_target_with(&conn, &options, 1.0, &status, ctrl_c()).await?;
    let exit = report.exit();
    let exit = traffic::finish(sending, Some(&mut report), exit).await;
    print_steps(&report);
    let page = page_context(Some(&conn), command_line(), None);
    Ok(finish_outputs_with(Some(&report), &outputs, exit, &page))
}

/// What the audit saw happen (the narration: evictions, deletions, the
/// replacements, cordons, nodes NotReady), one line a step, before the table.
fn print_steps(report: &Report) {
    if report.steps.is_empty() {
        return;
    }
    println!("steps:");
    for s in &report.steps {
        println!("  {}", s.line());
    }
}

/// `infera audit` of several targets: one table, a verdict per target and
/// one overall, one report and chart; the worst target's exit code.
async fn audit_many(
    args: AuditArgs,
    options: infera_audit::Options,
    selection: infera_audit::Selection,
) -> anyhow::Result<Exit> {
    if !args.role.is_empty() {
        anyhow::bail!(
            "--role applies to one plain Deployment (deploy/NAME), not to several targets"
        );
    }
    if args.traffic.traffic {
        anyhow::bail!(
            "--traffic sends through one serving path: audit one target with it (idep/NAME, or deploy/NAME with --traffic-service or --traffic-url)"
        );
    }
    if args.samples.is_some() {
        anyhow::bail!(
            "--samples streams one target's samples; with several targets use --timeline FILE.csv \
             (every target's rows)"
        );
    }
    let outputs = Outputs::from(&args.audit);
    outputs.check()?;
    let conn = infera_cluster::connect(&args.cluster_args.options()).await?;
    if !args.all_namespaces {
        conn.check_namespace().await?;
    }
    let selected = selection.resolve(&conn).await?;
    let status = |line: &str| eprintln!("{} {line}", stamp());
    let many = infera_audit::audit_many_with(
        &conn,
        &options,
        &selected,
        selection.all_namespaces,
        1.0,
        &status,
        ctrl_c(),
    )
    .await?;
    let mut page = page_context(Some(&conn), command_line(), None);
    if selection.all_namespaces {
        page.namespace = Some("(all namespaces)".into());
    }
    Ok(finish_many(&many, &outputs, &page))
}

/// Print the one table, a verdict per target and the overall verdict, and
/// write the files (as [`finish_outputs_with`]).
pub fn finish_many(
    many: &infera_audit::ManyReport,
    outputs: &Outputs,
    page: &html::PageContext,
) -> Exit {
    println!("{}", many.table());
    for line in many.target_sentences() {
        println!("{line}");
    }
    println!("overall: {}", many.sentence());
    for report in &many.reports {
        traffic::print(report);
    }
    finish_files_many(many, outputs, page, many.exit())
}

/// Write the output files of a several-target report; `exit`, or 2 when
/// one cannot be written.
pub fn finish_files_many(
    many: &infera_audit::ManyReport,
    outputs: &Outputs,
    page: &html::PageContext,
    exit: Exit,
) -> Exit {
    let html_path = outputs.report.as_ref().filter(|p| html::is_html(p));
    let mut rest = outputs.clone();
    let mut results = Vec::new();
    if let Some(path) = html_path {
        rest.report = None;
        results.push(html::write_many(path, many, page).map(|()| ("report", path.clone())));
    }
    results.extend(rest.write_many(many));
    if say_written(results) {
        exit
    } else {
        Exit::Usage
    }
}

/// `infera demo`. The SVG timeline goes to the temp directory unless
/// `--timeline` is given.
pub async fn demo(args: DemoArgs) -> anyhow::Result<Exit> {
    let mut outputs = Outputs::from(&args.audit);
    if let Err(e) = outputs.check() {
        return Ok(usage(e));
    }
    let mut out = Terminal::new(interactive());
    let demo = match crate::demo::run(&(&args).into(), &mut out, ctrl_c()).await {
        Ok(d) => d,
        Err(e) => return Ok(usage(e)),
    };
    if outputs.timeline.is_empty() {
        outputs
            .timeline
            .push(std::env::temp_dir().join(format!("infera-demo-{}.svg", demo.scenario)));
    }
    let rollout = &demo.rollout;
    let mut page = page_context(None, command_line(), rollout.plan.as_ref());
    page.context = Some(format!("infera-sim (scenario {})", demo.scenario));
    Ok(finish_outputs_with(
        rollout.report.as_ref(),
        &outputs,
        rollout.exit,
        &page,
    ))
}
