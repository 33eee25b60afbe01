//! The commands whose work is one library call: flags → options, output to
//! stdout, outcome → exit code.

pub mod lint;
pub mod live;
pub mod monitor;
pub mod policy;
pub mod rbac;
pub mod render;
pub mod sim;
pub mod sim_attach;

/// `objects` as a JSON `v1 List`.
pub fn json_list(objects: Vec<serde_json::Value>) -> anyhow::Result<String> {
    let list = serde_json::json!({ "apiVersion": "v1", "kind": "List", "items": objects });
    Ok(serde_json::to_string_pretty(&list)? + "\n")
}

/// `objects` as YAML documents (`what` names them in the error).
pub fn yaml_documents(objects: &[serde_json::Value], what: &str) -> anyhow::Result<String> {
    serde_saphyr::to_string_multiple(objects)
        .map_err(|e| anyhow::anyhow!("cannot render {what} as YAML: {e}"))
}
