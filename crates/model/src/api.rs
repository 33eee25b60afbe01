//! The API identity of the custom resources infera reads and writes: group,
//! version, kind, plural, singular and short names, one home each. The
//! `apiVersion` strings, the `kube` API resources (`infera-cluster`), the RBAC
//! rules and the simulator's discovery are derived from these.

/// How the API server serves one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiType {
    pub group: &'static str,
    pub version: &'static str,
    /// `group/version`, as objects spell `apiVersion`.
    pub api_version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    /// `plural.group`, the resource's full name (RBAC messages, kubectl).
    pub qualified_plural: &'static str,
    pub singular: &'static str,
    pub short_names: &'static [&'static str],
}

/// An [`ApiType`] whose `api_version` (`group/version`) and
/// `qualified_plural` (`plural.group`) are spelled from its parts.
macro_rules! api_type {
    ($group:literal, $version:literal, $kind:literal, $plural:literal, $singular:literal, [$($short:literal),*]) => {
        ApiType {
            group: $group,
            version: $version,
            api_version: concat!($group, "/", $version),
            kind: $kind,
            plural: $plural,
            qualified_plural: concat!($plural, ".", $group),
            singular: $singular,
            short_names: &[$($short),*],
        }
    };
}

/// The Infera operator's custom resource (its CRD: `lab/crd/`).
pub const INFERA_DEPLOYMENT: ApiType = api_type!(
    "infera.amd.com",
    "v1alpha1",
    "InferaDeployment",
    "inferadeployments",
    "inferadeployment",
    ["idep"]
);

/// What the operator renders a multi-node service into (the LeaderWorkerSet
/// project's CRD).
pub const LEADER_WORKER_SET: ApiType = api_type!(
    "leaderworkerset.x-k8s.io",
    "v1",
    "LeaderWorkerSet",
    "leaderworkersets",
    "leaderworkerset",
    ["lws"]
);

/// The pod label a LeaderWorkerSet puts on every pod of its groups: its name.
pub const LWS_NAME_LABEL: &str = "leaderworkerset.sigs.k8s.io/name";

/// The pod label of a pod's index in its LeaderWorkerSet group (`"0"`: the
/// leader, which a Service routes to).
pub const LWS_WORKER_INDEX_LABEL: &str = "leaderworkerset.sigs.k8s.io/worker-index";

impl ApiType {
    /// Whether an object's `apiVersion` and `kind` name this type (any
    /// version of the group).
    pub fn is_kind_of(&self, api_version: &str, kind: &str) -> bool {
        kind == self.kind && api_version.split('/').next() == Some(self.group)
    }

    /// Whether a command-line resource name (`idep` in `idep/NAME`) names this
    /// type: a short name or its plural, the singular or the plural, either
    /// of the last two qualified with the group. Case-insensitive.
    pub fn is_spelled(&self, spelling: &str) -> bool {
        let s = spelling.to_ascii_lowercase();
        let bare = s
            .strip_suffix(self.group)
            .and_then(|b| b.strip_suffix('.'))
            .unwrap_or(&s);
        let short = self
            .short_names
            .iter()
            .any(|n| s == *n || s.strip_suffix('s') == Some(n));
        short || bare == self.singular || bare == self.plural
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_version_is_group_slash_version() {
        assert_eq!(INFERA_DEPLOYMENT.api_version, "infera.amd.com/v1alpha1");
        assert_eq!(LEADER_WORKER_SET.api_version, "leaderworkerset.x-k8s.io/v1");
        assert_eq!(
            INFERA_DEPLOYMENT.qualified_plural,
            "inferadeployments.infera.amd.com"
        );
    }

    #[test]
    fn spellings_kubectl_users_type() {
        let cases = [
            ("idep", true),
            ("ideps", true),
            ("IDEP", true),
            ("inferadeployment", true),
            ("inferadeployments", true),
            ("inferadeployment.infera.amd.com", true),
            ("InferaDeployments.infera.amd.com", true),
            ("idep.infera.amd.com", false),
            ("inferadeployments.other.io", false),
            ("deploy", false),
            ("", false),
        ];
        for (spelling, want) in cases {
            assert_eq!(INFERA_DEPLOYMENT.is_spelled(spelling), want, "{spelling}");
        }
    }

    #[test]
    fn kind_of_matches_kind_and_group() {
        let cases = [
            ("infera.amd.com/v1alpha1", "InferaDeployment", true),
            ("infera.amd.com/v1", "InferaDeployment", true),
            ("apps/v1", "InferaDeployment", false),
            ("infera.amd.com/v1alpha1", "Deployment", false),
        ];
        for (api_version, kind, want) in cases {
            assert_eq!(
                INFERA_DEPLOYMENT.is_kind_of(api_version, kind),
                want,
                "{api_version} {kind}"
            );
        }
    }
}
