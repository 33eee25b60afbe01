//! `infera sim attach`: the simulated [`world`](infera_sim_world) on any
//! Kubernetes API server, until Ctrl-C (which removes what it created), or
//! `--cleanup` alone.

use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::cli::SimAttachArgs;
use infera_audit::exit::Exit;
use infera_sim_core::clock::SimClock;
use infera_sim_scenario::Scenario;
use infera_sim_world::{Cidr, SIMULATED_NODE_LABEL, World, WorldOptions};

async fn client(args: &SimAttachArgs) -> Result<kube::Client, String> {
    let options = KubeConfigOptions {
        context: args.context.clone(),
        ..KubeConfigOptions::default()
    };
    let config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .map_err(|e| format!("cannot read the kubeconfig {}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|e| format!("kubeconfig {}: {e}", path.display()))?
        }
        None => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|e| format!("no usable kubeconfig (pass --kubeconfig): {e}"))?,
    };
    kube::Client::try_from(config).map_err(|e| format!("cannot build a client: {e}"))
}

/// Run `infera sim attach`.
pub async fn run(args: SimAttachArgs) -> anyhow::Result<Exit> {
    let scenario = match Scenario::load(&args.scenario) {
        Ok(mut s) => {
            if let Some(g) = args.operator {
                s.operator = g.into();
            }
            s
        }
        Err(e) => return usage(e),
    };
    let pod_cidr = match Cidr::parse(&args.pod_cidr) {
        Ok(c) => c,
        Err(e) => return usage(format!("--pod-cidr: {e}")),
    };
    let client = match client(&args).await {
        Ok(c) => c,
        Err(e) => return usage(e),
    };
    if args.cleanup {
        return cleanup(client, &scenario).await;
    }
    let requests = infera_sim_core::requests::RequestLog::default();
    let options = WorldOptions {
        pod_cidr,
        operator: !args.no_operator,
        taint: !args.no_taint,
        requests: requests.clone(),
    };
    let clock = SimClock::new(args.speed);
    let world = match World::start(client.clone(), &scenario, clock.clone(), options).await {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e}");
            let _ = World::cleanup(client, &scenario).await;
            return Ok(Exit::Usage);
        }
    };
    print_summary(&args, &scenario, clock.speed());
    let _ = tokio::signal::ctrl_c().await;
    world.shutdown();
    let wrote = write_truth(args.truth.as_deref(), &requests);
    println!("infera sim attach: removing what it created…");
    let cleaned = cleanup(client, &scenario).await?;
    Ok(if wrote { cleaned } else { Exit::Usage })
}

/// `--truth FILE`: the requests the routers received; false when it cannot
/// be written (said on stderr).
fn write_truth(
    path: Option<&std::path::Path>,
    requests: &infera_sim_core::requests::RequestLog,
) -> bool {
    let Some(path) = path else { return true };
    let file = serde_json::json!({
        "requests": requests.records(),
        "requestsDropped": requests.dropped(),
    });
    let text = serde_json::to_string_pretty(&file).unwrap_or_default();
    match std::fs::write(path, text) {
        Ok(()) => true,
        Err(e) => {
            eprintln!(
                "error: cannot write the ground truth to {}: {e}",
                path.display()
            );
            false
        }
    }
}

fn usage(message: impl std::fmt::Display) -> anyhow::Result<Exit> {
    eprintln!("error: {message}");
    Ok(Exit::Usage)
}

async fn cleanup(client: kube::Client, scenario: &Scenario) -> anyhow::Result<Exit> {
    match World::cleanup(client, scenario).await {
        Ok(()) => {
            println!(
                "infera sim attach: removed scenario {}'s manifests and simulated nodes",
                scenario.name
            );
            Ok(Exit::Ok)
        }
        Err(e) => {
            eprintln!("error: cleanup of scenario {}: {e}", scenario.name);
            Ok(Exit::Usage)
        }
    }
}

fn print_summary(args: &SimAttachArgs, scenario: &Scenario, speed: f64) {
    let nodes = scenario.node_objects().len();
    println!(
        "infera sim attach: scenario {} — {nodes} simulated node(s) labelled {SIMULATED_NODE_LABEL}=true{}, pod IPs from {}, world at {speed}x{}",
        scenario.name,
        if args.no_taint {
            ""
        } else {
            " (tainted NoSchedule)"
        },
        args.pod_cidr,
        if args.no_operator {
            ", no operator"
        } else {
            ", infera operator running"
        },
    );
    println!("Ctrl-C removes the nodes, Leases and applied objects.");
}
