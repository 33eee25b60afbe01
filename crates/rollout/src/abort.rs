//! Undoing a leg: its previous template put back, so its old pods keep
//! serving and the replacement goes. `--abort` does it for the in-flight
//! rollout; the driver does it on a stall (`--on-stall abort`) or a revert.

use super::api::TargetApi;
use super::history;
use super::options::{RolloutError, RolloutOutcome};
use super::record::{InFlight, combine};
use super::reporter::Reporter;
use super::trigger::{deployment_undo_patch, idep_undo_patch};
use infera_audit::exit::Exit;

/// `--abort`: undo the current leg of an in-flight rollout.
pub(crate) async fn abort_in_flight(
    api: &TargetApi<'_>,
    record: Option<InFlight>,
    is_idep: bool,
    out: &mut dyn Reporter,
) -> Result<RolloutOutcome, RolloutError> {
    let Some(mut record) = record else {
        out.note(&format!(
            "No rollout is in flight on {}: nothing to abort.",
            api.target
        ));
        return Ok(RolloutOutcome::early(Exit::Ok, None));
    };
    out.note(&format!("Aborting: {}", record.describe()));
    if let Some(current) = record.current.clone() {
        undo_leg(api, &mut record, is_idep).await?;
        out.note(&format!(
            "Restored the previous template of leg `{}`: its old pods keep serving and the replacement goes.",
            current.leg
        ));
    }
    api.patch_with(|_| Ok(InFlight::removal_patch())).await?;
    let entry = history::aborted_entry(&record, api.conn);
    if let Err(e) = history::record(api, &entry).await {
        out.note(&format!("could not record the rollout history: {e}"));
    }
    if !record.done.is_empty() {
        out.note(&format!(
            "Legs already finished stay rolled: {}.",
            record.done.join(", ")
        ));
    }
    Ok(RolloutOutcome::early(Exit::Stalled, None))
}

/// Put the leg's previous template back and clear it from the record.
pub(crate) async fn undo_leg(
    api: &TargetApi<'_>,
    record: &mut InFlight,
    is_idep: bool,
) -> Result<(), RolloutError> {
    let Some(current) = record.current.clone() else {
        return Ok(());
    };
    let mut rec = record.clone();
    rec.current = None;
    api.patch_with(|live| {
        let undo = if is_idep {
            idep_undo_patch(live, &current.leg, &current.original)?
        } else {
            deployment_undo_patch(live, &current.original)?
        };
        Ok(combine(undo, &rec.annotation_patch()?))
    })
    .await?;
    record.current = None;
    Ok(())
}
