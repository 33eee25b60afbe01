//! `infera policy`: lint's rules as ValidatingAdmissionPolicies and their
//! bindings, printed (YAML with a header naming what is not enforced, or a
//! JSON `v1 List`).

use infera_policy::{Action, FailOn, PolicyOptions};

use crate::cli::{self, OutputFormat, PolicyAction, PolicyArgs};
use infera_audit::exit::Exit;

fn options(args: &PolicyArgs) -> anyhow::Result<PolicyOptions> {
    Ok(PolicyOptions {
        generation: crate::commands::render::generation(args.operator)?,
        fail_on: match args.fail_on {
            cli::FailOn::Warning => FailOn::Warning,
            cli::FailOn::Error => FailOn::Error,
            cli::FailOn::Never => FailOn::Never,
        },
        action: match args.action {
            PolicyAction::Severity => Action::Severity,
            PolicyAction::Warn => Action::Warn,
        },
    })
}

/// The objects in `format`.
pub fn render_policy(opts: &PolicyOptions, format: OutputFormat) -> anyhow::Result<String> {
    let objects = infera_policy::objects(opts);
    match format {
        OutputFormat::Json => super::json_list(objects),
        OutputFormat::Yaml => {
            let body = super::yaml_documents(&objects, "the policy")?;
            let mut header = format!(
                "# infera lint's rules at admission (operator generation {}): apply with\n\
                 #   kubectl infera policy | kubectl apply -f -\n\
                 # (needs create/update/patch on validatingadmissionpolicies and\n\
                 # validatingadmissionpolicybindings, group admissionregistration.k8s.io;\n\
                 # Kubernetes v1.30 or later). Not enforced, and why:\n",
                opts.generation
            );
            for (code, reason) in infera_policy::coverage::unenforced() {
                header.push_str(&format!("#   {code}: {reason}\n"));
            }
            Ok(format!("{header}---\n{body}"))
        }
    }
}

/// `infera policy`.
pub fn policy_command(args: &PolicyArgs) -> anyhow::Result<Exit> {
    use std::io::Write;
    let text = render_policy(&options(args)?, args.output)?;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        // `infera policy | head`: the reader has what it wanted.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Exit::Ok),
        Err(e) => Err(anyhow::anyhow!("cannot write the policy to stdout: {e}")),
        Ok(()) => Ok(Exit::Ok),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn yaml_and_json_carry_the_same_objects() {
        let opts = PolicyOptions::default();
        let yaml = render_policy(&opts, OutputFormat::Yaml).unwrap();
        assert!(
            yaml.contains("kubectl infera policy | kubectl apply -f -"),
            "{yaml}"
        );
        assert!(
            yaml.contains("#   IR004: needs live node capacity"),
            "{yaml}"
        );
        let docs: Vec<Value> = serde_saphyr::from_multiple(&yaml).unwrap();
        let json: Value =
            serde_json::from_str(&render_policy(&opts, OutputFormat::Json).unwrap()).unwrap();
        assert_eq!(json["items"].as_array().unwrap(), &docs);
        let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
        assert!(kinds.contains(&"ValidatingAdmissionPolicy"));
        assert!(kinds.contains(&"ValidatingAdmissionPolicyBinding"));
    }
}
