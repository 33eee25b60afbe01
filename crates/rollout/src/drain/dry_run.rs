//! `--dry-run=server`: the cordon and every eviction the run would send,
//! sent with `dryRun=All`, as `kubectl drain --dry-run=server` does. The
//! API server checks each (rights, PodDisruptionBudgets) and persists
//! nothing. A move's restart is not sent (its pods are not evicted either:
//! the restart would replace them).

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};

use super::DrainError;
use super::evict::evict_dry_run;
use super::plan::{DrainPath, DrainPlan, Inventory, PodAction};
use super::state::DrainState;
use crate::api::retrying;
use crate::reporter::Reporter;
use infera_audit::exit::Exit;
use infera_cluster::{ClusterError, Connection};

const SUFFIX: &str = "(server dry run)";

/// Cordon and evict with `dryRun=All`; exit 0 when the server accepted
/// everything, 3 when it refused an eviction (the run would wait on it).
pub async fn server_dry_run(
    conn: &Connection,
    grace: Option<i64>,
    inv: &Inventory,
    plan: &DrainPlan,
    out: &mut dyn Reporter,
) -> Result<Exit, DrainError> {
    let api: Api<Node> = Api::all(conn.client.clone());
    let params = PatchParams {
        dry_run: true,
        ..PatchParams::default()
    };
    let state = DrainState {
        nodes: plan.nodes.clone(),
        ..DrainState::default()
    };
    let patch = state.cordon_patch();
    let merge = Patch::Merge(&patch);
    for node in &plan.nodes {
        retrying("patch node", || api.patch(node, &params, &merge))
            .await
            .map_err(|e| ClusterError::from_kube(&e, &conn.url, "patch", "nodes", None))?;
        out.note(&format!("node/{node} cordoned {SUFFIX}"));
    }
    for u in plan.units.iter().filter(|u| u.path == DrainPath::Move) {
        out.note(&format!(
            "{} would be moved (a restart through its owner) {SUFFIX}: not sent",
            u.label
        ));
    }
    let moved = |w: Option<usize>| {
        (plan.units.iter()).any(|u| Some(u.workload) == w && u.path == DrainPath::Move)
    };
    let (mut accepted, mut refused) = (0, 0);
    for p in inv.on_nodes.iter() {
        if p.action != PodAction::Evict || moved(p.workload) {
            continue;
        }
        let pod = format!("{}/{}", p.namespace, p.name);
        match evict_dry_run(conn, &p.namespace, &p.name, grace).await? {
            None => {
                accepted += 1;
                out.note(&format!("evicting pod {pod} {SUFFIX}"));
            }
            Some(why) => {
                refused += 1;
                out.note(&format!("eviction of {pod} refused (429): {why} {SUFFIX}"));
            }
        }
    }
    out.note(&format!(
        "Dry run (server): the API server accepted the cordon and {accepted} eviction(s), refused {refused}; nothing was changed."
    ));
    Ok(if refused == 0 {
        Exit::Ok
    } else {
        Exit::Stalled
    })
}
