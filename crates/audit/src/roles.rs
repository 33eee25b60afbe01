//! Audit targets and their roles: `idep/NAME` (roles from the CR's worker
//! services), `deploy/NAME` (the Deployment as one role, or `--role`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::auditor::RoleSpec;
use infera_model::api::INFERA_DEPLOYMENT;
use infera_model::operator::{Component, Role};
use infera_model::selector::Selector;
use infera_model::worker::LABEL_DEPLOYMENT;

/// What `infera audit` / `infera rollout` act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    InferaDeployment(String),
    Deployment(String),
}

/// Errors in a target or `--role` argument (usage errors: exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("cannot read target `{0}`: use idep/NAME, inferadeployment/NAME or deploy/NAME")]
    BadTarget(String),
    #[error(
        "cannot read --role `{flag}`: {why}; use NAME=SELECTOR with SELECTOR a label selector, e.g. decode=app=dec or 'decode=app in (dec),!canary'"
    )]
    BadRole { flag: String, why: String },
    #[error("{0}")]
    Spec(String),
}

impl Target {
    /// Parse `idep/NAME`, `inferadeployment(s)/NAME`, `deploy/NAME`,
    /// `deployment(s)/NAME` (`deployment.apps/NAME` too).
    pub fn parse(s: &str) -> Result<Target, TargetError> {
        let bad = || TargetError::BadTarget(s.to_string());
        let (kind, name) = s.split_once('/').ok_or_else(bad)?;
        if name.is_empty() || name.contains('/') {
            return Err(bad());
        }
        match kind.to_ascii_lowercase().as_str() {
            k if INFERA_DEPLOYMENT.is_spelled(k) => Ok(Target::InferaDeployment(name.to_string())),
            "deploy" | "deployment" | "deployments" | "deployment.apps" | "deployments.apps" => {
                Ok(Target::Deployment(name.to_string()))
            }
            _ => Err(bad()),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Target::InferaDeployment(n) | Target::Deployment(n) => n,
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::InferaDeployment(n) => write!(f, "idep/{n}"),
            Target::Deployment(n) => write!(f, "deploy/{n}"),
        }
    }
}

/// Parse an equality selector, `key=value[,key=value…]` (also
/// `key==value`), with the model's selector grammar; `None` when it does
/// not parse, is empty, or holds anything but equalities (drain's
/// `--pod-selector`).
pub fn parse_selector(s: &str) -> Option<BTreeMap<String, String>> {
    Selector::parse(s)
        .ok()?
        .equality_pairs()
        .filter(|pairs| !pairs.is_empty())
}

/// `--role NAME=SELECTOR`, e.g. `decode=app=dec,tier=gpu` or
/// `decode=app in (dec),!canary` (any non-empty label selector).
pub fn parse_role_flag(s: &str) -> Result<RoleSpec, TargetError> {
    let bad = |why: &str| TargetError::BadRole {
        flag: s.to_string(),
        why: why.to_string(),
    };
    let (name, selector) = s.split_once('=').ok_or_else(|| bad("no '='"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(bad("the role has no name"));
    }
    let selector = Selector::parse(selector).map_err(|e| bad(&e.to_string()))?;
    if selector.is_empty() {
        return Err(bad("the selector is empty"));
    }
    Ok(RoleSpec {
        role: name.to_string(),
        services: Vec::new(),
        selector,
    })
}

/// The requirements every role's selector shares: the narrowest single
/// watch that still sees every role's pods (`None` = watch the whole
/// namespace).
pub fn common_selector(roles: &[RoleSpec]) -> Option<String> {
    let first = roles.first()?;
    let common: Selector = first
        .selector
        .requirements()
        .iter()
        .filter(|r| roles.iter().all(|o| o.selector.requirements().contains(*r)))
        .cloned()
        .collect();
    (!common.is_empty()).then(|| common.to_string())
}

/// Whether an InferaDeployment service is a worker: the model's one rule
/// ([`Component::parse`], docs/operator-semantics.md §1).
pub fn is_worker_service(spec: &Value) -> bool {
    Component::parse(spec.get("componentType").and_then(Value::as_str)) == Component::Worker
}

/// The role an InferaDeployment service is counted and printed under: its
/// own `role` (lower case); a worker without one is `mixed` (the
/// operator's default, docs/operator-semantics.md §1); any other service
/// without one (the router, `componentType: server`) its own name.
pub fn service_role(service: &str, spec: &Value) -> String {
    match spec.get("role").and_then(Value::as_str) {
        Some(role) => role.to_ascii_lowercase(),
        None if is_worker_service(spec) => Role::Mixed.as_str().to_string(),
        None => service.to_string(),
    }
}

/// Roles of an InferaDeployment: its worker services grouped by `role`
/// (default `mixed`), in the order mixed, prefill, decode, then others.
/// Servers (the router) are not audited.
pub fn roles_from_inferadeployment(idep: &Value) -> Result<Vec<RoleSpec>, TargetError> {
    let name = idep
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .ok_or_else(|| TargetError::Spec("the InferaDeployment has no metadata.name".into()))?;
    let services = idep
        .pointer("/spec/services")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            TargetError::Spec(format!(
                "InferaDeployment {name} has no spec.services, so there is no worker to audit"
            ))
        })?;
    let mut by_role: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (service, spec) in services {
        if is_worker_service(spec) {
            let role = service_role(service, spec);
            by_role.entry(role).or_default().push(service.clone());
        }
    }
    if by_role.is_empty() {
        return Err(TargetError::Spec(format!(
            "InferaDeployment {name} has no worker service (componentType: worker) to audit"
        )));
    }
    let rank = |r: &str| match r {
        "mixed" => 0,
        "prefill" => 1,
        "decode" => 2,
        _ => 3,
    };
    let mut roles: Vec<RoleSpec> = by_role
        .into_iter()
        .map(|(role, services)| RoleSpec {
            role,
            services,
            selector: Selector::from_labels(&BTreeMap::from([(
                LABEL_DEPLOYMENT.to_string(),
                name.to_string(),
            )])),
        })
        .collect();
    roles.sort_by(|a, b| rank(&a.role).cmp(&rank(&b.role)).then(a.role.cmp(&b.role)));
    Ok(roles)
}

/// The label selector of a Deployment's pods (`matchLabels` and
/// `matchExpressions`; its Display is the watch's selector string). One
/// that is empty or does not convert (an unknown operator) is an error
/// naming the Deployment, never "every pod".
pub fn deployment_selector(
    deploy: &k8s_openapi::api::apps::v1::Deployment,
) -> Result<Selector, TargetError> {
    Selector::of_workload(deploy.spec.as_ref().map(|s| &s.selector)).map_err(|e| {
        let name = deploy.metadata.name.as_deref().unwrap_or_default();
        TargetError::Spec(format!("deploy/{name}: cannot read spec.selector: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(
            Target::parse("idep/llm"),
            Ok(Target::InferaDeployment("llm".into()))
        );
        assert_eq!(
            Target::parse("inferadeployment/llm"),
            Ok(Target::InferaDeployment("llm".into()))
        );
        assert_eq!(
            Target::parse("deploy/w"),
            Ok(Target::Deployment("w".into()))
        );
        assert!(Target::parse("pod/x").is_err());
        assert!(Target::parse("idep/").is_err());
        assert!(Target::parse("llm").is_err());
    }

    #[test]
    fn role_flags() {
        let r = parse_role_flag("decode=app=dec,tier=gpu").unwrap();
        assert_eq!(r.role, "decode");
        assert_eq!(r.selector.to_string(), "app=dec,tier=gpu");
        assert!(parse_role_flag("decode").is_err());
        assert!(parse_role_flag("decode=").is_err());
        assert!(parse_role_flag("=app=x").is_err());
        let roles = vec![
            parse_role_flag("a=app=x,team=t").unwrap(),
            parse_role_flag("b=app=y,team=t").unwrap(),
        ];
        assert_eq!(common_selector(&roles).as_deref(), Some("team=t"));
    }

    /// `--pod-selector` takes equalities only; anything else is refused.
    #[test]
    fn equality_selectors() {
        let pairs = |p: &[(&str, &str)]| {
            p.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        let cases = [
            ("app=x", Some(pairs(&[("app", "x")]))),
            (
                " app == x , team=t ",
                Some(pairs(&[("app", "x"), ("team", "t")])),
            ),
            ("", None),
            ("app!=x", None),
            ("app in (x)", None),
            ("app", None),
            ("app=x,", None),
            ("a b", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_selector(input), want, "{input:?}");
        }
    }

    /// `--role` takes any non-empty label selector, set-based too; what
    /// does not parse is refused with the grammar's reason.
    #[test]
    fn set_based_role_flags() {
        let r = parse_role_flag("web=app in (web,www),!canary").unwrap();
        assert_eq!(r.role, "web");
        assert_eq!(r.selector.to_string(), "app in (web,www),!canary");
        let err = parse_role_flag("web=app in (web").unwrap_err().to_string();
        assert!(
            err.contains("cannot read --role `web=app in (web`"),
            "{err}"
        );
        assert!(err.contains("expected"), "{err}");
        let roles = vec![
            parse_role_flag("a=app in (x),team=t").unwrap(),
            parse_role_flag("b=app in (x),team=u").unwrap(),
        ];
        assert_eq!(common_selector(&roles).as_deref(), Some("app in (x)"));
    }

    /// A Deployment's selector: matchExpressions honoured in matching and in
    /// the watch's string; an empty or unconvertible one is an error naming it.
    #[test]
    fn deployment_selectors() {
        let labels = |app: &str| BTreeMap::from([("app".to_string(), app.to_string())]);
        let cases = [
            (
                serde_json::json!({"matchLabels": {"app": "w"}}),
                "app=w",
                true,
            ),
            (
                serde_json::json!({"matchLabels": {"app": "w"}, "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["b", "a"]},
                    {"key": "canary", "operator": "DoesNotExist"}]}),
                "app=w,!canary,tier in (a,b)",
                false,
            ),
            (
                serde_json::json!({"matchExpressions": [
                    {"key": "app", "operator": "In", "values": ["w"]}]}),
                "app in (w)",
                true,
            ),
        ];
        let deploy = |selector: serde_json::Value| -> k8s_openapi::api::apps::v1::Deployment {
            serde_json::from_value(serde_json::json!({"metadata": {"name": "web"},
                "spec": {"selector": selector, "template": {}}}))
            .unwrap()
        };
        for (selector, want, matches_app_w) in cases {
            let s = deployment_selector(&deploy(selector)).unwrap();
            assert_eq!(s.to_string(), want);
            assert_eq!(s.matches(&labels("w")), matches_app_w, "{want}");
            assert!(!s.matches(&labels("x")), "{want}");
        }
        let bad = [
            serde_json::json!({}),
            serde_json::json!({"matchExpressions": [{"key": "app", "operator": "Like", "values": ["w"]}]}),
        ];
        for selector in bad {
            let err = deployment_selector(&deploy(selector))
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("deploy/web: cannot read spec.selector"),
                "{err}"
            );
        }
    }

    /// One is-a-worker rule: the model's (everything but `server` is a
    /// worker, as the operator's CRD enum admits only `server` and `worker`).
    #[test]
    fn worker_services_follow_the_model() {
        for (component, worker) in [
            (serde_json::json!({"componentType": "worker"}), true),
            (serde_json::json!({}), true),
            (serde_json::json!({"componentType": "server"}), false),
            (serde_json::json!({"componentType": " server "}), false),
            (serde_json::json!({"componentType": "Server"}), true),
        ] {
            assert_eq!(is_worker_service(&component), worker, "{component}");
        }
    }

    #[test]
    fn idep_roles_group_worker_services() {
        let idep = serde_json::json!({
            "metadata": {"name": "llm"},
            "spec": {"services": {
                "router": {"componentType": "server"},
                "prefill": {"componentType": "worker", "role": "prefill"},
                "decode-a": {"componentType": "worker", "role": "decode"},
                "decode-b": {"componentType": "worker", "role": "decode"},
                "solo": {"componentType": "worker"}
            }}
        });
        let roles = roles_from_inferadeployment(&idep).unwrap();
        let names: Vec<_> = roles.iter().map(|r| r.role.as_str()).collect();
        assert_eq!(names, ["mixed", "prefill", "decode"]);
        let services = &idep["spec"]["services"];
        let role = |s: &str| service_role(s, &services[s]);
        assert_eq!(role("router"), "router", "a server's own name, never mixed");
        assert_eq!(role("solo"), "mixed");
        assert_eq!(role("decode-a"), "decode");
        assert_eq!(roles[2].services, ["decode-a", "decode-b"]);
        assert_eq!(
            roles[0].selector.to_string(),
            format!("{LABEL_DEPLOYMENT}=llm")
        );
    }
}
