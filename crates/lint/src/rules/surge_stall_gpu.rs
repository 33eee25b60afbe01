use super::{Hit, InventoryNode, RollKind, Slot, Workload, declare_rule, is_placeholder};
use crate::finding::Severity;
use infera_model::manifest::node::Path;

declare_rule! {
    /// ## What it does
    /// Flags a worker that rolls surge-first although no node it may land on
    /// can hold the old pod and the replacement at once: pinned to one host
    /// (`nodeSelector` `kubernetes.io/hostname`, or required node affinity to
    /// one host) with a GPU request larger than the node's GPUs minus that
    /// request. The hostname may be a placeholder (`<NODE>`, `${NODE}`,
    /// `{{ .Values.node }}`): it is one node whatever it names. With
    /// `--nodes`, any selector is checked against the inventory; a
    /// placeholder hostname cannot be matched to a node, so the verdict is
    /// taken on the worst and the best eligible node: an error when neither
    /// can hold both pods, a **warning** (below the declared error) when only
    /// some can, because then it depends on the value filled in.
    ///
    /// ## Why is this bad?
    /// Surge-first creates the replacement before retiring the old pod. If
    /// the replacement cannot fit, it stays Pending forever
    /// (`FailedScheduling: Insufficient amd.com/gpu`) and the rollout never
    /// finishes on its own.
    ///
    /// ## Severity
    /// Declared an error. **Lowered to a warning** only for a placeholder
    /// hostname checked against `--nodes`, when some eligible nodes can hold
    /// both pods and others cannot: the outcome depends on the value filled in.
    ///
    /// ## Example
    /// ```yaml
    /// extraPodSpec:
    ///   nodeSelector: {kubernetes.io/hostname: gpu-7}
    ///   containers:
    ///     - name: main
    ///       resources: {limits: {amd.com/gpu: 8}}
    /// ```
    ///
    /// ## Use instead
    /// Let the worker land on any of several GPU nodes (a pool label instead
    /// of a hostname), keep a spare node in the pool, or request at most half
    /// the node's GPUs.
    RULE, "IR002", "surge-stall-gpu", Error,
    "surge-first, but no eligible node can hold the old pod and the replacement at once"
}

pub fn check(w: &Workload<'_>, out: &mut Vec<Hit>) {
    if w.roll != RollKind::SurgeFirst {
        return;
    }
    let pinned = w.pinned_host();
    let inventory = w.capacity.inventory.as_ref();
    // Unpinned and no inventory: any node may take the surge pod (IR004
    // covers the whole-node request).
    if pinned.is_none() && inventory.is_none() {
        return;
    }
    // A hostname placeholder pins to one node whatever it names; any other
    // placeholder in the node selection decides where an unpinned pod lands.
    if (pinned.is_none() && w.unknown(Slot::Selector, RULE.code)) || w.unknown(Slot::Gpu, RULE.code)
    {
        return;
    }
    let Some((resource, gpus)) = w.gpu_request() else {
        return;
    };
    if gpus <= 0 {
        return;
    }
    let request = Request {
        resource: &resource,
        gpus,
    };
    match inventory {
        Some(nodes) => on_inventory(w, nodes, pinned, &request, out),
        None => {
            if let Some((host, path)) = pinned {
                on_default_node(w, &host, path, &request, out);
            }
        }
    }
}

struct Request<'a> {
    resource: &'a str,
    gpus: i64,
}

fn on_default_node(w: &Workload<'_>, host: &str, path: Path, r: &Request<'_>, out: &mut Vec<Hit>) {
    let node = i64::from(w.node_gpus().0);
    if r.gpus <= node - r.gpus {
        return;
    }
    out.push(Hit::new(
        &RULE,
        Severity::Error,
        path,
        format!(
            "{} rolls surge-first but the replacement will stay Pending forever: it is pinned to {}, which has {node} GPUs while the old pod holds {}; pin to a pool label instead of one hostname, or request at most {} GPUs",
            w.who(),
            Workload::pin_phrase(host),
            r.gpus,
            node / 2
        ),
    ));
}

fn on_inventory(
    w: &Workload<'_>,
    inventory: &[InventoryNode],
    pinned: Option<(String, Path)>,
    r: &Request<'_>,
    out: &mut Vec<Hit>,
) {
    const HOST: &str = "kubernetes.io/hostname";
    // Selector labels other than the hostname, placeholders left out (they
    // cannot be matched; IR011 reports them).
    let selector: Vec<(&String, &String)> = w
        .pod
        .node_selector
        .iter()
        .flatten()
        .filter(|(k, v)| k.as_str() != HOST && !is_placeholder(v))
        .collect();
    let matching = inventory
        .iter()
        .filter(|n| selector.iter().all(|(k, v)| n.labels.get(*k) == Some(*v)));
    let cap = |n: &InventoryNode| n.gpus.get(r.resource).copied().unwrap_or(0);
    let (severity, why) = match &pinned {
        Some((host, _)) if is_placeholder(host) => {
            let eligible: Vec<_> = matching.collect();
            match placeholder_verdict(&eligible, host, r, &cap) {
                Some(v) => v,
                None => return,
            }
        }
        _ => {
            let eligible: Vec<_> = matching
                .filter(|n| pinned.as_ref().is_none_or(|(h, _)| &n.name == h))
                .collect();
            let roomy = eligible.iter().filter(|n| cap(n) >= r.gpus).count();
            if eligible.iter().any(|n| cap(n) >= 2 * r.gpus) || roomy >= 2 {
                return;
            }
            let names: Vec<_> = eligible.iter().map(|n| describe(n, r, &cap)).collect();
            (
                Severity::Error,
                format!("the eligible nodes are [{}]", names.join(", ")),
            )
        }
    };
    let path = pinned
        .map(|(_, p)| p)
        .unwrap_or_else(|| w.main_field(&["resources"]));
    out.push(Hit::new(
        &RULE,
        severity,
        path,
        format!(
            "{} rolls surge-first and the replacement needs {} {} beside the old pod's {}: {why}; widen the node selection or keep a spare node",
            w.who(),
            r.gpus,
            r.resource,
            r.gpus
        ),
    ));
}

fn describe(n: &InventoryNode, r: &Request<'_>, cap: &dyn Fn(&InventoryNode) -> i64) -> String {
    format!("{} ({} {})", n.name, cap(n), r.resource)
}

/// A placeholder hostname cannot be matched to a node: decide on the worst
/// and the best eligible node. None when even the worst one fits both pods.
fn placeholder_verdict(
    eligible: &[&InventoryNode],
    host: &str,
    r: &Request<'_>,
    cap: &dyn Fn(&InventoryNode) -> i64,
) -> Option<(Severity, String)> {
    let pin = Workload::pin_phrase(host);
    let (Some(worst), Some(best)) = (
        eligible.iter().min_by_key(|n| cap(n)),
        eligible.iter().max_by_key(|n| cap(n)),
    ) else {
        return Some((
            Severity::Error,
            format!(
                "it is pinned to {pin}, and no node of the inventory matches its node selector"
            ),
        ));
    };
    let need = 2 * r.gpus;
    if cap(worst) >= need {
        return None;
    }
    let both = format!(
        "it is pinned to {pin}; the placeholder cannot be matched to the inventory, so decided on the worst and the best eligible node: worst {}, best {}",
        describe(worst, r, cap),
        describe(best, r, cap)
    );
    Some(if cap(best) < need {
        (
            Severity::Error,
            format!(
                "{both}, and neither holds {need}, so the replacement stays Pending forever whichever node it names"
            ),
        )
    } else {
        (
            Severity::Warning,
            format!(
                "{both}: it stays Pending forever on the worst, fits on the best; make sure the placeholder names a node with {need}"
            ),
        )
    })
}
