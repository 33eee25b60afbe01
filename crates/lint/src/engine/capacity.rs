//! The GPU capacity rules check against: `--node-gpus`, and the node
//! inventory (`--nodes`, or the live one of `lint --cluster`).

use super::summary::InputError;
use crate::options::LintOptions;
use crate::rules::{Capacity, InventoryNode};
use infera_model::manifest;
use infera_model::worker;

pub(super) fn load_capacity(
    opts: &LintOptions,
    live: Option<Vec<InventoryNode>>,
    errors: &mut Vec<InputError>,
) -> Capacity {
    let node_gpus = if opts.node_gpus == 0 {
        crate::config::DEFAULT_NODE_GPUS
    } else {
        opts.node_gpus
    };
    let mut cap = Capacity {
        node_gpus,
        node_gpus_given: opts.node_gpus != 0,
        inventory: None,
    };
    if live.is_some() {
        cap.inventory = live;
        return cap;
    }
    let Some(path) = &opts.nodes else { return cap };
    match manifest::load_path_values(path) {
        Ok(items) => {
            let mut nodes = Vec::new();
            for item in items {
                match item {
                    Ok((_, v)) => collect_nodes(&v, &mut nodes),
                    Err(e) => errors.push(InputError::from(e)),
                }
            }
            cap.inventory = Some(nodes);
        }
        Err(e) => errors.push(InputError {
            file: manifest::display_path(path),
            line: None,
            column: None,
            message: format!("cannot read the node inventory: {e:#}; pass the output of `kubectl get nodes -o yaml`"),
        }),
    }
    cap
}

fn collect_nodes(v: &serde_json::Value, out: &mut Vec<InventoryNode>) {
    if let Some(items) = v.get("items").and_then(|i| i.as_array()) {
        for item in items {
            collect_nodes(item, out);
        }
        return;
    }
    if v.get("kind").and_then(|k| k.as_str()) != Some("Node") {
        return;
    }
    let str_map = |v: Option<&serde_json::Value>| -> std::collections::BTreeMap<String, String> {
        v.and_then(|m| m.as_object())
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    };
    let labels = str_map(v.pointer("/metadata/labels"));
    let gpus = str_map(v.pointer("/status/allocatable"))
        .into_iter()
        .filter_map(|(k, q)| Some((k, worker::whole_quantity(&q)?)))
        .collect();
    let name = v
        .pointer("/metadata/name")
        .and_then(|n| n.as_str())
        .unwrap_or_default()
        .to_string();
    out.push(InventoryNode {
        name,
        labels,
        gpus,
        free: None,
    });
}
