//! A source's peers: the DRA claims, PodDisruptionBudgets,
//! PersistentVolumeClaims and OME runtimes its workloads refer to, read
//! before its workloads are linted.

use super::Stage;
use super::document::{Place, each_object};
use crate::options::LintOptions;
use crate::peers::{self, PeerBudget, Peers};
use infera_model::dra::Claims;
use infera_model::manifest::{self, Node, Seg};

/// What a source's workloads refer to in other objects of the same source
/// (a file, stdin, a rendered chart): the DRA claims and claim templates
/// their pods' GPUs come from, their PodDisruptionBudgets and their
/// PersistentVolumeClaims. Only a source that mentions one of these kinds
/// is parsed twice. `origin_of` places a rendered document in its template.
fn source_context(file: &str, bytes: &[u8], origin_of: &OriginOf<'_>) -> (Claims, Peers) {
    const KINDS: [&[u8]; 4] = [
        b"ResourceClaim",
        b"PodDisruptionBudget",
        b"PersistentVolumeClaim",
        b"ServingRuntime",
    ];
    let mut claims = Claims::new();
    let mut peers = Peers::default();
    if !peers::mentions_any(bytes, &KINDS) {
        return (claims, peers);
    }
    let none = Claims::new();
    // Only the documents that name a peer kind are parsed a second time,
    // and only peer objects are turned into JSON.
    for raw in manifest::split_documents(bytes) {
        if !peers::mentions_any(raw.bytes, &KINDS) {
            continue;
        }
        let origin = origin_of(&raw);
        each_object(file, &raw, (&none, origin.as_ref()), &mut |item| {
            if let Ok((node, place)) = item {
                let kind = node.get("kind").and_then(Node::as_str).unwrap_or_default();
                let peer = KINDS.iter().any(|k| kind.as_bytes().starts_with(k))
                    || crate::peers::OME_RUNTIMES.contains(&kind);
                if peer {
                    add_peer(&node.to_json(), place, &mut claims, &mut peers);
                }
            }
        });
    }
    (claims, peers)
}

/// Where a rendered document came from (`None` for a file's own).
type OriginOf<'a> = dyn Fn(&manifest::RawDocument<'_>) -> Option<manifest::render::Origin> + 'a;

/// Record `v` when it is a DRA claim, a budget or a volume claim.
pub(super) fn add_peer(
    v: &serde_json::Value,
    place: &Place<'_>,
    claims: &mut Claims,
    peers: &mut Peers,
) {
    if let Some((key, gpus)) = infera_model::dra::read_claim(v) {
        claims.insert(key, gpus);
    } else if let Some(budget) = infera_model::pdb::read_budget(v) {
        peers.budgets.push(peer_budget(budget, place));
    } else if let Some(claim) = infera_model::volume::read_claim(v) {
        peers.claims.push(claim);
    } else if let Some(runtime) = crate::peers::read_runtime(v) {
        peers.runtimes.push(runtime);
    }
}

/// A budget with where findings about it point: the field that sets it,
/// and the fix (one disruption at a time) as the document's edits.
fn peer_budget(budget: infera_model::pdb::Budget, place: &Place<'_>) -> PeerBudget {
    let spec = |k: &str| vec![Seg::Key("spec".into()), Seg::Key(k.into())];
    let field = if budget.spec.min_available.is_some() {
        spec("minAvailable")
    } else {
        spec("maxUnavailable")
    };
    let (line, column) = place.locate(&field);
    let fix = place.fix(crate::rules::HitFix {
        description: "allow one disruption at a time (maxUnavailable: 1)".into(),
        changes: vec![(vec![Seg::Key("spec".into())], peers::one_at_a_time())],
    });
    PeerBudget {
        line,
        column,
        object: crate::finding::ObjectRef {
            kind: "PodDisruptionBudget".into(),
            name: budget.name.clone(),
            namespace: (!budget.namespace.is_empty()).then(|| budget.namespace.clone()),
            service: None,
        },
        fix,
        budget,
    }
}

/// The claims and peers of a source, as the stage needs them.
pub(super) fn context(
    file: &str,
    bytes: &[u8],
    opts: &LintOptions,
    stage: Stage<'_>,
    origin_of: &OriginOf<'_>,
) -> (Claims, Peers) {
    let (claims, mut peers) = match stage {
        Stage::Lint(_) => source_context(file, bytes, origin_of),
        Stage::Load => Default::default(),
    };
    peers.every_budget = opts.every_budget;
    peers.every_claim = opts.every_claim;
    (claims, peers)
}
