//! The rollout history: every rollout infera drives leaves a compact record
//! on the rolled object (the InferaDeployment, or the plain Deployment) in
//! the [`HISTORY_ANNOTATION`] annotation — the last [`KEEP`] rollouts as
//! one compact JSON array, oldest first, at most [`MAX_BYTES`] bytes.
//! `infera rollout history TARGET` reads it back.
//!
//! Written at the end of a drive (complete, stalled, aborted, interrupted)
//! with a JSON merge patch carrying the `resourceVersion` it was built from,
//! so a concurrent writer makes it a 409 and it is re-read and rebuilt.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::api::TargetApi;
use super::options::RolloutError;
use super::target::Target;
use infera_audit::Report;
use infera_cluster::Connection;

/// The annotation holding the history.
pub const HISTORY_ANNOTATION: &str = "infera.amd.com/rollout-history";
/// Rollouts kept.
pub const KEEP: usize = 10;
/// Bytes the annotation may take (the oldest entries go first).
pub const MAX_BYTES: usize = 16 * 1024;

/// The lowest counts of one role during a rollout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleMinimum {
    pub role: String,
    /// Lowest Ready count at any instant (`null`: never measured).
    pub ready: Option<u32>,
    /// Lowest routable count at any instant.
    pub routable: Option<u32>,
}

/// One rollout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// When it ended (RFC 3339, UTC).
    pub at: String,
    /// The kubeconfig user name (never a credential).
    #[serde(default)]
    pub user: Option<String>,
    /// The kubeconfig context name.
    #[serde(default)]
    pub context: Option<String>,
    /// What changed, as the plan says it (`restart of decode, prefill`).
    pub change: String,
    /// `complete`, `stalled`, `aborted`, `interrupted`, `timeout`, `reverted`.
    pub outcome: String,
    /// The floor the rollout held the roles to.
    #[serde(default)]
    pub min_ready: u32,
    pub minima: Vec<RoleMinimum>,
    /// Reported seconds.
    pub duration_s: f64,
    /// `sha256:` of the JSON report as `--report FILE.json` writes it
    /// (empty for `--abort`, which has no report).
    pub report_digest: String,
}

/// Errors of the history.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(
        "annotation {HISTORY_ANNOTATION} on {target} is not a rollout history ({message}); remove it with `kubectl annotate {target} {HISTORY_ANNOTATION}-`"
    )]
    Malformed { target: String, message: String },
    #[error("cannot encode the rollout history: {0}")]
    Encode(String),
}

impl HistoryEntry {
    /// The record of a driven rollout.
    pub fn new(report: &Report, change: &str, conn: &Connection) -> HistoryEntry {
        let json = report.try_to_json().map(|j| j + "\n").unwrap_or_default();
        HistoryEntry {
            at: jiff::Timestamp::now()
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string(),
            user: conn.user.clone(),
            context: conn.context.clone(),
            change: change.to_string(),
            outcome: report.outcome.as_str().to_string(),
            min_ready: report.min_ready,
            minima: report
                .roles
                .iter()
                .map(|r| RoleMinimum {
                    role: r.role.clone(),
                    ready: r.min_ready_exact,
                    routable: r.min_routable_exact,
                })
                .collect(),
            duration_s: (report.duration_s * 10.0).round() / 10.0,
            report_digest: format!("sha256:{}", sha256_hex(json.as_bytes())),
        }
    }
}

/// The history on `obj`, oldest first (empty without the annotation).
pub fn from_object(obj: &Value, target: &str) -> Result<Vec<HistoryEntry>, HistoryError> {
    let Some(text) = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(HISTORY_ANNOTATION))
        .and_then(Value::as_str)
    else {
        return Ok(Vec::new());
    };
    serde_json::from_str(text).map_err(|e| HistoryError::Malformed {
        target: target.to_string(),
        message: e.to_string(),
    })
}

/// `existing` plus `entry`, cut to the last [`KEEP`] and to [`MAX_BYTES`]
/// of JSON (the newest entry always stays), encoded.
pub fn appended(
    mut existing: Vec<HistoryEntry>,
    entry: HistoryEntry,
) -> Result<String, HistoryError> {
    existing.push(entry);
    let drop = existing.len().saturating_sub(KEEP);
    existing.drain(..drop);
    loop {
        let text =
            serde_json::to_string(&existing).map_err(|e| HistoryError::Encode(e.to_string()))?;
        if text.len() <= MAX_BYTES || existing.len() <= 1 {
            return Ok(text);
        }
        existing.remove(0);
    }
}

/// The merge patch adding `entry` to the history on `live`: conditional on
/// `live`'s resourceVersion. A history that does not parse is replaced
/// (the rollout's record matters more than a hand-edited annotation).
pub fn patch(live: &Value, entry: &HistoryEntry) -> Result<Value, HistoryError> {
    let existing = from_object(live, "").unwrap_or_default();
    let text = appended(existing, entry.clone())?;
    let mut metadata = json!({"annotations": {HISTORY_ANNOTATION: text}});
    if let Some(rv) = live.pointer("/metadata/resourceVersion") {
        metadata["resourceVersion"] = rv.clone();
    }
    Ok(json!({ "metadata": metadata }))
}

/// Add `entry` to the history on the target (re-read and retried on 409).
pub(crate) async fn record(api: &TargetApi<'_>, entry: &HistoryEntry) -> Result<(), RolloutError> {
    api.patch_with(|live| patch(live, entry).map_err(|e| RolloutError::Usage(e.to_string())))
        .await
        .map(|_| ())
}

/// Record the rollout of `plan` that ended with `report` on its target.
pub(crate) async fn record_rollout(
    api: &TargetApi<'_>,
    plan: &super::plan::Plan,
    report: &Report,
) -> Result<(), RolloutError> {
    let legs: Vec<&str> = plan.legs.iter().map(|l| l.leg.as_str()).collect();
    let change = format!("{} of {}", plan.what, legs.join(", "));
    record(api, &HistoryEntry::new(report, &change, api.conn)).await
}

/// The record of `infera rollout --abort`: no drive, so no report, no
/// minima and no digest; the duration is how long `record` was in flight.
pub fn aborted_entry(record: &super::record::InFlight, conn: &Connection) -> HistoryEntry {
    let what = match &record.change.image {
        Some(image) => format!("set-image {image}"),
        None => record.command.clone(),
    };
    let now = jiff::Timestamp::now();
    let in_flight = record
        .started_at
        .parse::<jiff::Timestamp>()
        .map(|t| (now.as_second() - t.as_second()).max(0) as f64)
        .unwrap_or(0.0);
    HistoryEntry {
        at: now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        user: conn.user.clone(),
        context: conn.context.clone(),
        change: format!("{what} of {} (--abort)", record.legs.join(", ")),
        outcome: infera_audit::Outcome::Aborted.as_str().to_string(),
        min_ready: 0,
        minima: Vec::new(),
        duration_s: in_flight,
        report_digest: String::new(),
    }
}

/// The history on `target`, oldest first.
pub async fn read(conn: &Connection, target: &Target) -> Result<Vec<HistoryEntry>, RolloutError> {
    let live = TargetApi::new(conn, target).get().await?;
    from_object(&live, &target.to_string()).map_err(|e| RolloutError::Usage(e.to_string()))
}

/// The history as a table, newest first.
pub fn table(entries: &[HistoryEntry]) -> String {
    let mut table = comfy_table::Table::new();
    table
        .load_preset(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_header(vec![
            "when",
            "user",
            "context",
            "change",
            "outcome",
            "min Ready / routable",
            "duration",
            "report",
        ]);
    infera_audit::fit_terminal(&mut table);
    for e in entries.iter().rev() {
        let minima = e
            .minima
            .iter()
            .map(|m| format!("{} {}/{}", m.role, count(m.ready), count(m.routable)))
            .collect::<Vec<_>>()
            .join("\n");
        let digest = e
            .report_digest
            .strip_prefix("sha256:")
            .unwrap_or(&e.report_digest);
        table.add_row(vec![
            e.at.clone(),
            e.user.clone().unwrap_or_else(|| "-".into()),
            e.context.clone().unwrap_or_else(|| "-".into()),
            e.change.clone(),
            e.outcome.clone(),
            minima,
            infera_audit::format_seconds(e.duration_s),
            digest.chars().take(12).collect(),
        ]);
    }
    table.to_string()
}

fn count(v: Option<u32>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// SHA-256 of `data`, lowercase hex (ring, already the TLS stack's digest).
pub fn sha256_hex(data: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, data)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u32) -> HistoryEntry {
        HistoryEntry {
            at: format!("2026-01-01T00:00:{n:02}Z"),
            user: Some("alice".into()),
            context: Some("prod".into()),
            change: "restart".into(),
            outcome: "complete".into(),
            min_ready: 1,
            minima: vec![RoleMinimum {
                role: "decode".into(),
                ready: Some(n),
                routable: Some(n),
            }],
            duration_s: 1.0,
            report_digest: format!("sha256:{}", sha256_hex(b"")),
        }
    }

    #[test]
    fn sha256_known_vectors() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            sha256_hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
    }

    #[test]
    fn keeps_the_last_ten_and_the_byte_bound() {
        let mut history = Vec::new();
        for n in 0..13 {
            let text = appended(history, entry(n)).unwrap();
            history = serde_json::from_str(&text).unwrap();
        }
        assert_eq!(history.len(), KEEP);
        assert_eq!(history[0], entry(3));
        assert_eq!(history[KEEP - 1], entry(12));
        let mut big = entry(1);
        big.change = "x".repeat(MAX_BYTES / 3);
        let text = appended(vec![big.clone(), big.clone(), big.clone()], big).unwrap();
        assert!(text.len() <= MAX_BYTES, "{}", text.len());
        let kept: Vec<HistoryEntry> = serde_json::from_str(&text).unwrap();
        assert_eq!(kept.len(), 2);
    }

    #[test]
    fn patch_is_conditional_and_replaces_a_malformed_history() {
        let live = json!({"metadata": {"resourceVersion": "42",
            "annotations": {HISTORY_ANNOTATION: "not json"}}});
        assert!(from_object(&live, "idep/x").is_err());
        let p = patch(&live, &entry(1)).unwrap();
        assert_eq!(p["metadata"]["resourceVersion"], "42");
        let text = p["metadata"]["annotations"][HISTORY_ANNOTATION]
            .as_str()
            .unwrap();
        let parsed: Vec<HistoryEntry> = serde_json::from_str(text).unwrap();
        assert_eq!(parsed, vec![entry(1)]);
        let table = table(&[entry(1), entry(2)]);
        let (first, second) = (table.find(":02Z").unwrap(), table.find(":01Z").unwrap());
        assert!(first < second, "newest first:\n{table}");
    }
}
