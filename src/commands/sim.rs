//! `infera sim serve` and `infera sim scenarios`.

use infera_sim::{RunningSim, SimOptions};
use infera_sim_core::faults::FaultConfig;

use crate::cli::{FaultArgs, SimServeArgs};
use infera_audit::exit::Exit;

impl From<&FaultArgs> for FaultConfig {
    fn from(a: &FaultArgs) -> Self {
        FaultConfig {
            drop_watches_every: a.drop_watches_every,
            error_rate: a.error_rate,
            error_burst: None,
            retry_after_seconds: None,
            conflict_rate: a.conflict_rate,
            compact_every: a.compact_every,
            latency: a.latency,
            restart_api_every: a.restart_api_every,
            partitions: a.cut.iter().chain(&a.blackhole).cloned().collect(),
        }
    }
}

/// `infera sim serve`: run until Ctrl-C.
pub async fn serve(args: SimServeArgs) -> anyhow::Result<Exit> {
    let scenario = match infera_sim_scenario::Scenario::load(&args.scenario) {
        Ok(mut s) => {
            if let Some(g) = args.operator {
                s.operator = g.into();
            }
            s
        }
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::Usage);
        }
    };
    if let Some(skew) = args.clock_skew {
        infera_sim_core::clock::set_server_skew(skew);
    }
    let mut options = SimOptions::new(scenario, args.speed);
    options.seed = args.seed;
    options.port = args.port;
    options.tls = !args.plain_http;
    options.token = args.token.clone();
    options.faults = FaultConfig::from(&args.faults);
    options.world = !args.no_world;
    options.event_ttl = args.event_ttl;
    let sim = match RunningSim::start(options).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::Usage);
        }
    };
    let kubeconfig = match &args.kubeconfig_out {
        Some(path) => {
            if let Err(e) = sim.write_kubeconfig(path) {
                eprintln!("error: {e}");
                sim.shutdown().await;
                return Ok(Exit::Usage);
            }
            path.display().to_string()
        }
        None => {
            let path =
                std::env::temp_dir().join(format!("infera-sim-{}.kubeconfig", std::process::id()));
            if let Err(e) = sim.write_kubeconfig(&path) {
                eprintln!("error: {e}");
                sim.shutdown().await;
                return Ok(Exit::Usage);
            }
            path.display().to_string()
        }
    };
    println!(
        "infera sim: scenario {} serving on {} (speed {}x, seed {})",
        sim.scenario().name,
        sim.url(),
        sim.clock().speed(),
        sim.scenario().seed
    );
    println!("kubeconfig: {kubeconfig}");
    println!("  kubectl --kubeconfig {kubeconfig} get pods -A");
    if let Some(target) = suggested_target(&sim) {
        println!("  infera rollout restart {target} --kubeconfig {kubeconfig} --dry-run");
    }
    println!("Ctrl-C stops the simulator.");
    let _ = tokio::signal::ctrl_c().await;
    if let Some(path) = &args.truth
        && let Err(e) = std::fs::write(path, sim.truth().to_json())
    {
        eprintln!(
            "error: cannot write the ground truth to {}: {e}",
            path.display()
        );
    }
    sim.shutdown().await;
    Ok(Exit::Ok)
}

/// A target the scenario has, for the banner: its first InferaDeployment,
/// else its first Deployment (`None`: neither, e.g. `--no-world`).
fn suggested_target(sim: &RunningSim) -> Option<String> {
    use infera_sim_core::kind::Kind;
    let ns = sim.namespace();
    let first = |kind: Kind| {
        let (objects, _) = sim.store().list(kind, Some(&ns));
        let names = objects.iter().filter_map(|o| {
            o.pointer("/metadata/name")
                .and_then(serde_json::Value::as_str)
                .map(str::to_string)
        });
        names.min()
    };
    target_of(first(Kind::InferaDeployment), first(Kind::Deployment))
}

/// `idep/NAME` before `deploy/NAME`: an InferaDeployment's Deployments
/// are its operator's, rolled through it.
fn target_of(idep: Option<String>, deploy: Option<String>) -> Option<String> {
    match (idep, deploy) {
        (Some(name), _) => Some(format!("idep/{name}")),
        (None, Some(name)) => Some(format!("deploy/{name}")),
        (None, None) => None,
    }
}

/// `infera sim scenarios`.
pub fn list_scenarios() -> anyhow::Result<Exit> {
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::NOTHING);
    table.set_header(["NAME", "DESCRIPTION"]);
    table.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
    infera_audit::fit_terminal(&mut table);
    for (name, description) in infera_sim_scenario::builtins() {
        table.add_row([name, description]);
    }
    println!("{table}");
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The banner names a target of the scenario, as it spells it.
    #[tokio::test]
    async fn the_banner_suggests_a_target_the_scenario_has() {
        for (scenario, target) in [
            ("pd-1p1d", "idep/llama"),
            ("surge-no-readiness", "deploy/llama-worker"),
        ] {
            let loaded = infera_sim_scenario::Scenario::load(scenario)
                .unwrap_or_else(|e| panic!("{scenario}: {e}"));
            let sim = RunningSim::start(SimOptions::new(loaded, 70.0))
                .await
                .unwrap_or_else(|e| panic!("{scenario}: {e}"));
            assert_eq!(
                suggested_target(&sim).as_deref(),
                Some(target),
                "{scenario}"
            );
            sim.shutdown().await;
        }
        assert_eq!(target_of(None, None), None);
    }
}
