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
    format: OutputFormat,
) -> anyhow::Result<String> {
    let objects = rbac_objects(namespace, scope);
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
    print!("{}", render_rbac(&namespace, scope, args.output)?);
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn yaml_and_json_render() {
        let yaml = render_rbac("ns1", RbacScope::Namespace, OutputFormat::Yaml).unwrap();
        assert!(yaml.contains("kind: Role\n"), "{yaml}");
        assert!(yaml.contains("kind: ClusterRoleBinding"));
        assert!(yaml.contains("# in namespace ns1."), "{yaml}");
        let json: Value = serde_json::from_str(
            &render_rbac("ns1", RbacScope::Namespace, OutputFormat::Json).unwrap(),
        )
        .unwrap();
        assert_eq!(json["items"].as_array().map(Vec::len), Some(4));
        let all = render_rbac("ns1", RbacScope::AllNamespaces, OutputFormat::Yaml).unwrap();
        assert!(!all.contains("kind: Role\n"), "{all}");
        assert!(all.contains("name: infera-ns1\n"), "{all}");
        assert!(all.contains("# in every namespace"), "{all}");
    }
}
