//! What a rollout acts on: `idep/NAME` or `deploy/NAME`, as kubectl spells it.

use std::fmt;
use std::str::FromStr;

use infera_model::api::INFERA_DEPLOYMENT;

/// The kind of object a rollout is started on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// An `InferaDeployment`: the change goes on the CR, the operator rolls.
    InferaDeployment,
    /// A plain apps/v1 Deployment not managed by the infera operator.
    Deployment,
}

/// `idep/NAME` | `inferadeployment/NAME` | `deploy/NAME` | `deployment/NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub kind: TargetKind,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("target `{0}` is not KIND/NAME; use `idep/NAME` or `deploy/NAME`")]
    Malformed(String),
    #[error(
        "target kind `{0}` is not supported; use `idep/NAME` (an InferaDeployment) or `deploy/NAME` (a plain Deployment)"
    )]
    UnknownKind(String),
    #[error("target name `{0}` is not a valid Kubernetes object name")]
    BadName(String),
}

impl FromStr for Target {
    type Err = TargetError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (kind, name) = s
            .split_once('/')
            .ok_or_else(|| TargetError::Malformed(s.to_string()))?;
        let kind = match kind.to_ascii_lowercase().as_str() {
            k if INFERA_DEPLOYMENT.is_spelled(k) => TargetKind::InferaDeployment,
            "deploy" | "deployment" | "deployments" | "deployment.apps" | "deployments.apps" => {
                TargetKind::Deployment
            }
            "" => return Err(TargetError::Malformed(s.to_string())),
            other => return Err(TargetError::UnknownKind(other.to_string())),
        };
        if !is_dns_subdomain(name) {
            return Err(TargetError::BadName(name.to_string()));
        }
        Ok(Target {
            kind,
            name: name.to_string(),
        })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            TargetKind::InferaDeployment => write!(f, "idep/{}", self.name),
            TargetKind::Deployment => write!(f, "deploy/{}", self.name),
        }
    }
}

/// RFC 1123 subdomain: what Kubernetes accepts as an object name.
fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_spelling() {
        for (input, kind, name) in [
            ("idep/qwen-pd", TargetKind::InferaDeployment, "qwen-pd"),
            ("inferadeployment/a", TargetKind::InferaDeployment, "a"),
            (
                "InferaDeployments.infera.amd.com/a.b",
                TargetKind::InferaDeployment,
                "a.b",
            ),
            ("deploy/web", TargetKind::Deployment, "web"),
            ("deployments.apps/web-1", TargetKind::Deployment, "web-1"),
        ] {
            let t: Target = input.parse().unwrap();
            assert_eq!(t.kind, kind, "{input}");
            assert_eq!(t.name, name, "{input}");
        }
    }

    #[test]
    fn rejects_bad_targets() {
        assert_eq!(
            "qwen".parse::<Target>(),
            Err(TargetError::Malformed("qwen".into()))
        );
        assert_eq!(
            "sts/x".parse::<Target>(),
            Err(TargetError::UnknownKind("sts".into()))
        );
        assert_eq!(
            "idep/Bad_Name".parse::<Target>(),
            Err(TargetError::BadName("Bad_Name".into()))
        );
        assert!("idep/".parse::<Target>().is_err());
        assert!("/x".parse::<Target>().is_err());
    }

    #[test]
    fn displays_short_form() {
        let t: Target = "inferadeployment/x".parse().unwrap();
        assert_eq!(t.to_string(), "idep/x");
    }
}
