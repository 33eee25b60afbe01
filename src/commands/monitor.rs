//! `infera monitor`: flags → options; the rules or manifests printed, or
//! the service run until SIGTERM / Ctrl-C.

use crate::cli::{MonitorArgs, RulesFormat};
use infera_audit::exit::Exit;
use infera_model::selector::Selector;

/// The namespace the printed objects go in: `-n`, else the context's
/// namespace (kubectl's pick, [`infera_cluster::context_namespace`]).
async fn print_namespace(args: &MonitorArgs) -> anyhow::Result<String> {
    Ok(infera_cluster::context_namespace(&args.cluster_args.options()).await?)
}

/// `infera monitor`.
pub async fn run(args: MonitorArgs) -> anyhow::Result<Exit> {
    let selector = match args.selector.as_deref() {
        None => Selector::default(),
        Some(s) => Selector::parse(s).map_err(|e| anyhow::anyhow!("cannot read -l `{s}`: {e}"))?,
    };
    if args.print_rules {
        let rules = args.rule_options();
        let doc = match args.format {
            RulesFormat::PrometheusRule => {
                infera_monitor::prometheus_rule(&rules, &print_namespace(&args).await?)
            }
            RulesFormat::Plain => infera_monitor::rule_groups(&rules),
        };
        print!("{}", super::yaml_documents(&[doc], "the alert rules")?);
        return Ok(Exit::Ok);
    }
    if args.print_manifests {
        let namespace = print_namespace(&args).await?;
        let objects = infera_monitor::manifests::objects(&manifest_options(&args, namespace));
        print!("{}", super::yaml_documents(&objects, "the manifests")?);
        return Ok(Exit::Ok);
    }
    let conn = infera_cluster::connect(&args.cluster_args.options()).await?;
    if !args.all_namespaces {
        conn.check_namespace().await?;
    }
    let opts = infera_monitor::Options {
        namespace: (!args.all_namespaces).then(|| conn.namespace.clone()),
        selector,
        min_ready: args.min_ready,
        listen: args.listen,
        probe: (!args.no_probe).then_some(args.probe_interval),
    };
    let listening = |addr| eprintln!("infera monitor: serving http://{addr}/metrics");
    infera_monitor::run(&conn, &opts, listening, terminated()).await?;
    Ok(Exit::Ok)
}

fn manifest_options(
    args: &MonitorArgs,
    namespace: String,
) -> infera_monitor::manifests::ManifestOptions {
    infera_monitor::manifests::ManifestOptions {
        namespace,
        all_namespaces: args.all_namespaces,
        image: args.image.clone(),
        min_ready: args.min_ready,
        selector: args.selector.clone(),
    }
}

/// SIGTERM (the kubelet stopping the pod) or Ctrl-C.
async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
