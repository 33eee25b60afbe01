//! `infera rbac`: the minimal Role `rollout` and `audit` need, printed
//! (`-A`: the same rules in every namespace).

use infera_cluster::{RbacScope, rbac_objects};

use crate::cli::{OutputFormat, RbacArgs};
use infera_audit::exit::Exit;

/// The ServiceAccount the bindings name.
const NAME: &str = infera_cluster::RBAC_NAME;

/// Render the objects as YAML (multi-document, with a header comment) or as
/// a JSON `v1 List`.
pub fn render_rbac(
    namespace: &str,
    scope: RbacScope,
    traffic: bool,
    format: OutputFormat,
) -> anyhow::Result<String> {
    let mut objects = rbac_objects(namespace, scope);
    if traffic {
        with_traffic(&mut objects);
    }
    let reach = match scope {
        RbacScope::Namespace => format!("in namespace {namespace}"),
        RbacScope::AllNamespaces => {
            "in every namespace (also `audit -A`, `lint --cluster -A`)".to_string()
        }
        RbacScope::Drain => "in every namespace, and `infera drain` (the `infera-drain` ClusterRole: \n\
             # nodes list/patch, pods get/list, pods/eviction create, poddisruptionbudgets list, owners get)"
            .to_string(),
    };
    match format {
        OutputFormat::Json => super::json_list(objects),
        OutputFormat::Yaml => {
            let body = super::yaml_documents(&objects, "the RBAC objects")?;
            Ok(format!(
                "# Minimal RBAC for `infera rollout`, `infera audit` and `infera lint --cluster`\n\
                 # {reach}. Bind both: the `{NAME}-capacity` ClusterRole grants\n\
                 # the pods list the rules rely on, and the rollout preflight's node capacity check.\n\
                 # The bindings name the ServiceAccount `{NAME}`: edit `subjects` for a user\n\
                 # or group, then `kubectl apply -f` this file.\n---\n{body}"
            ))
        }
    }
}

/// `--traffic`: the first Role (or ClusterRole) also grants what the
/// requests through the service proxy need.
fn with_traffic(objects: &mut [serde_json::Value]) {
    let role = objects
        .iter_mut()
        .find(|o| matches!(o["kind"].as_str(), Some("Role" | "ClusterRole")));
    if let Some(rules) = role.and_then(|r| r["rules"].as_array_mut()) {
        rules.extend(infera_cluster::traffic_rules());
    }
}

/// `infera rbac`: in `-n`, else the context's namespace.
pub async fn rbac_command(args: &RbacArgs) -> anyhow::Result<Exit> {
    let options = infera_cluster::ConnectOptions {
        namespace: args.namespace.clone(),
        ..Default::default()
    };
    let namespace = infera_cluster::context_namespace(&options).await?;
    let scope = match (args.drain, args.all_namespaces) {
        (true, _) => RbacScope::Drain,
        (false, true) => RbacScope::AllNamespaces,
        (false, false) => RbacScope::Namespace,
    };
    print!(
        "{}",
        render_rbac(&namespace, scope, args.traffic, args.output)?
    );
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// `--traffic` adds exactly the proxy rule, to the Role only.
    #[test]
    fn traffic_adds_the_service_proxy_rule_to_the_role() {
        let render = |traffic| {
            let json = render_rbac("ns1", RbacScope::Namespace, traffic, OutputFormat::Json)
                .unwrap_or_else(|e| panic!("{e}"));
            serde_json::from_str::<Value>(&json).unwrap_or_else(|e| panic!("{e}"))
        };
        let (without, with) = (render(false), render(true));
        let rules = |v: &Value| {
            v["items"][0]["rules"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        };
        let added: Vec<Value> = rules(&with)
            .into_iter()
            .filter(|r| !rules(&without).contains(r))
            .collect();
        assert_eq!(
            added,
            [
                serde_json::json!({"apiGroups": [""], "resources": ["services/proxy"], "verbs": ["get", "create"]})
            ]
        );
        assert_eq!(with["items"][0]["kind"], "Role");
        assert_eq!(
            with["items"].as_array().map(Vec::len),
            without["items"].as_array().map(Vec::len)
        );
    }

    #[test]
    fn yaml_and_json_render() {
        let yaml = render_rbac("ns1", RbacScope::Namespace, false, OutputFormat::Yaml).unwrap();
        assert!(yaml.contains("kind: Role\n"), "{yaml}");
        assert!(yaml.contains("kind: ClusterRoleBinding"));
        assert!(yaml.contains("# in namespace ns1."), "{yaml}");
        let json: Value = serde_json::from_str(
            &render_rbac("ns1", RbacScope::Namespace, false, OutputFormat::Json).unwrap(),
        )
        .unwrap();
        assert_eq!(json["items"].as_array().map(Vec::len), Some(4));
        let all = render_rbac("ns1", RbacScope::AllNamespaces, false, OutputFormat::Yaml).unwrap();
        assert!(!all.contains("kind: Role\n"), "{all}");
        assert!(all.contains("name: infera-ns1\n"), "{all}");
        assert!(all.contains("# in every namespace"), "{all}");
    }
}
