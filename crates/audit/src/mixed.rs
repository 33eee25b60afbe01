//! The mixed window (docs/rollout.md, "KV coherence"): the spans in which a
//! serving prefill and a serving decode had different KV identities
//! ([`infera_model::kv`]), so a request the router paired across them
//! failed or was prefilled again on the decode. Read from the pods' own
//! serving tracks: only what is known to have served counts (an unknown
//! stretch while infera was blind does not), so a window is a lower bound
//! where the evidence has gaps.

use std::collections::BTreeSet;
use std::time::Instant;

use serde::Serialize;

use crate::evidence::{Known, Track};
use crate::pods::Histories;

/// One span, in reported seconds since the audit started.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MixedWindow {
    pub from_s: f64,
    pub to_s: f64,
}

impl MixedWindow {
    pub fn seconds(&self) -> f64 {
        self.to_s - self.from_s
    }
}

/// A serving pod of one side: its identity and its serving track.
struct Side<'a> {
    decode: bool,
    kv: &'a str,
    serving: &'a Track,
}

/// Whether `track` is known to serve at `t`.
fn serving_at(track: &Track, t: Instant) -> bool {
    let value = track
        .points()
        .iter()
        .take_while(|(at, _)| *at <= t)
        .last()
        .map(|(_, k)| *k);
    value == Some(Known::Yes)
}

/// The windows of `histories` between `origin` and `now`; `prefill` and
/// `decode` are the role indices of each side. `scale` turns wall time
/// into reported time.
pub fn windows(
    histories: &Histories,
    prefill: &[usize],
    decode: &[usize],
    origin: Instant,
    now: Instant,
    scale: f64,
) -> Vec<MixedWindow> {
    let sides: Vec<Side<'_>> = (histories.pods.values())
        .filter_map(|h| {
            let decode = decode.contains(&h.facts.role);
            let kv = h.facts.kv.as_deref()?;
            (decode || prefill.contains(&h.facts.role)).then_some(Side {
                decode,
                kv,
                serving: &h.serving,
            })
        })
        .collect();
    let mut instants: Vec<Instant> = (sides.iter())
        .flat_map(|s| s.serving.points().iter().map(|(at, _)| (*at).max(origin)))
        .filter(|at| *at < now)
        .chain([origin])
        .collect();
    instants.sort();
    instants.dedup();
    let mixed_at = |t: Instant| {
        let serving = |decode: bool| -> BTreeSet<&str> {
            (sides.iter())
                .filter(|s| s.decode == decode && serving_at(s.serving, t))
                .map(|s| s.kv)
                .collect()
        };
        let (p, d) = (serving(false), serving(true));
        p.iter().any(|a| d.iter().any(|b| a != b))
    };
    let reported = |t: Instant| {
        (t.saturating_duration_since(origin).as_secs_f64() * scale * 1000.0).round() / 1000.0
    };
    let mut out: Vec<MixedWindow> = Vec::new();
    for (i, t) in instants.iter().enumerate() {
        if !mixed_at(*t) {
            continue;
        }
        let end = instants.get(i + 1).copied().unwrap_or(now);
        match out.last_mut() {
            Some(w) if w.to_s == reported(*t) => w.to_s = reported(end),
            _ => out.push(MixedWindow {
                from_s: reported(*t),
                to_s: reported(end),
            }),
        }
    }
    out
}

/// `12s (+1:02 to +1:14)`: the total and each span.
pub fn describe(windows: &[MixedWindow]) -> String {
    let total: f64 = windows.iter().map(MixedWindow::seconds).sum();
    let spans: Vec<String> = windows
        .iter()
        .map(|w| {
            format!(
                "+{} to +{}",
                crate::format_seconds(w.from_s),
                crate::format_seconds(w.to_s)
            )
        })
        .collect();
    format!("{} ({})", crate::format_seconds(total), spans.join(", "))
}
