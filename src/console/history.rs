//! `infera rollout history TARGET`: the last rollouts infera drove on it,
//! read from its annotation ([`infera_rollout::history`]).

use crate::cli::{HistoryArgs, HistoryFormat};
use infera_audit::exit::Exit;
use infera_rollout::history::{self, HISTORY_ANNOTATION};
use infera_rollout::target::Target;

/// Print the history of `args.target`, newest first; exit 0 (also when
/// there is none), 2 on a bad target or a connection problem.
pub async fn history(args: HistoryArgs) -> anyhow::Result<Exit> {
    let target: Target = match args.target.parse() {
        Ok(t) => t,
        Err(e) => return Ok(super::usage(e)),
    };
    let conn = infera_cluster::connect(&args.cluster_args.options()).await?;
    let entries = history::read(&conn, &target).await?;
    match args.output {
        HistoryFormat::Json => {
            let newest_first: Vec<_> = entries.iter().rev().collect();
            println!("{}", serde_json::to_string_pretty(&newest_first)?);
        }
        HistoryFormat::Table if entries.is_empty() => println!(
            "no rollout history on {target} in namespace {}: infera has not rolled it yet (or its {HISTORY_ANNOTATION} annotation was removed)",
            conn.namespace
        ),
        HistoryFormat::Table => println!("{}", history::table(&entries)),
    }
    Ok(Exit::Ok)
}
