//! `infera rbac`: the minimal RBAC that `infera rollout`, `infera audit` and
//! `infera lint --cluster` need.

use infera_model::api::{INFERA_DEPLOYMENT, LEADER_WORKER_SET};
use infera_model::manifest::serving::ServingKind;
use serde_json::{Value, json};

/// The name of the ServiceAccount, Role and bindings.
pub const NAME: &str = "infera";

/// Where the namespaced rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A Role and RoleBinding in the namespace: `rollout`, `audit` and
    /// `lint --cluster` on that namespace.
    Namespace,
    /// The same rules as a ClusterRole with a ClusterRoleBinding: also
    /// `audit -A` and `lint --cluster -A`, which list and watch in every
    /// namespace.
    AllNamespaces,
    /// What `infera drain` needs: the [`Scope::AllNamespaces`] objects (a
    /// drain moves and audits workloads wherever their pods run) and the
    /// `infera-drain` ClusterRole ([`drain_rules`]).
    Drain,
}

fn rule(group: &str, resources: &[&str], verbs: &[&str]) -> Value {
    json!({ "apiGroups": [group], "resources": resources, "verbs": verbs })
}

/// The objects, in apply order: Role, RoleBinding (namespace `namespace`),
/// ClusterRole, ClusterRoleBinding. The bindings are templates: their subject
/// is a ServiceAccount `infera` in `namespace`; edit it for a user or group.
/// With [`Scope::AllNamespaces`] the Role and RoleBinding are a ClusterRole
/// `infera` and a ClusterRoleBinding `infera-NAMESPACE` with the same rules.
///
/// Why each rule (each verb is needed by some command: `tests/lab/rbac.rs`
/// removes them one at a time on the upstream lab and checks that a command
/// fails naming it):
/// * pods watch — the auditor and the rollout's step tracking (their list
///   comes with the ClusterRole below, which grants it in every namespace
///   anyway);
/// * pods/proxy get — `GET pods/NAME:PORT/proxy/ready`, asking a worker's
///   `/ready` directly;
/// * events list — the FailedScheduling message quoted in a stall report
///   (read once, at stall time; without it the pod's PodScheduled message is
///   quoted instead);
/// * inferadeployments get/list/watch/patch — the audit reads the CR, `lint
///   --cluster` lists it, the rollout trigger goes on the CR (the operator
///   reverts Deployment edits) and the rollout watches it for a trigger
///   reverted by another writer (a GitOps tool's self-heal);
/// * deployments get/list/watch/patch — rollout status (watched), `lint
///   --cluster`, and the trigger on plain Deployments (`--surge`, restart
///   annotation, image);
/// * statefulsets list, leaderworkersets list — `lint --cluster` reads
///   them as workers.
/// * poddisruptionbudgets list, persistentvolumeclaims list — `lint
///   --cluster` judges the workers' budgets and volume claims (IR013–IR015).
/// * resourceclaimtemplates list, resourceclaims list — `lint --cluster`
///   counts GPUs claimed through DRA (IR009).
/// * the serving custom resources list (one rule per operator's group:
///   KServe, KAITO, production-stack, KubeRay, AIBrix, NIM) — `lint
///   --cluster` lints what their operators render. Needed only where the
///   CRD is installed; where it is not, discovery skips it and the rule
///   grants nothing.
///
/// Cluster-wide (ClusterRole), because nodes are not namespaced and a node's
/// free capacity depends on pods of every namespace:
/// * nodes list, pods list — the rollout preflight's "is there room for
///   the surge pod right now" (without them the plan says the capacity is
///   unknown), and the pods of the namespace.
pub fn rbac_objects(namespace: &str, scope: Scope) -> Vec<Value> {
    if scope == Scope::Drain {
        let mut objects = rbac_objects(namespace, Scope::AllNamespaces);
        objects.extend(drain_objects(namespace));
        return objects;
    }
    let subject = json!([{ "kind": "ServiceAccount", "name": NAME, "namespace": namespace }]);
    let (idep, lws) = (INFERA_DEPLOYMENT, LEADER_WORKER_SET);
    let mut rules = vec![
        rule("", &["pods"], &["watch"]),
        rule("", &["pods/proxy"], &["get"]),
        rule("", &["events"], &["list"]),
        rule(
            idep.group,
            &[idep.plural],
            &["get", "list", "watch", "patch"],
        ),
        rule("apps", &["deployments"], &["get", "list", "watch", "patch"]),
        rule("apps", &["statefulsets"], &["list"]),
        rule(lws.group, &[lws.plural], &["list"]),
        rule("policy", &["poddisruptionbudgets"], &["list"]),
        rule("", &["persistentvolumeclaims"], &["list"]),
        rule("resource.k8s.io", &["resourceclaimtemplates"], &["list"]),
        rule("resource.k8s.io", &["resourceclaims"], &["list"]),
    ];
    rules.extend(serving_rules());
    let mut objects = role_and_binding(NAME, namespace, scope, rules);
    objects.extend([
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": { "name": format!("{NAME}-capacity") },
            "rules": [
                rule("", &["nodes"], &["list"]),
                rule("", &["pods"], &["list"]),
            ],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": { "name": format!("{NAME}-capacity-{namespace}") },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": format!("{NAME}-capacity") },
            "subjects": subject,
        }),
    ]);
    objects
}

/// `list` on every serving custom resource, one rule per API group.
pub fn serving_rules() -> Vec<Value> {
    ServingKind::groups()
        .into_iter()
        .map(|group| {
            let plurals: Vec<&str> = ServingKind::ALL
                .iter()
                .filter(|k| k.group() == group)
                .map(|k| k.plural())
                .collect();
            rule(group, &plurals, &["list"])
        })
        .collect()
}

/// A Role (or, with [`Scope::AllNamespaces`], a ClusterRole) `name` with
/// `rules`, and its binding to the ServiceAccount `name` in `namespace`
/// (cluster-wide: the ClusterRoleBinding `name-namespace`).
fn role_and_binding(name: &str, namespace: &str, scope: Scope, rules: Vec<Value>) -> Vec<Value> {
    let subject = json!([{ "kind": "ServiceAccount", "name": name, "namespace": namespace }]);
    // (Role kind, binding kind, binding name, namespace of both).
    let (role_kind, binding_kind, binding_name, ns) = match scope {
        Scope::Namespace => ("Role", "RoleBinding", name.to_string(), Some(namespace)),
        Scope::AllNamespaces | Scope::Drain => (
            "ClusterRole",
            "ClusterRoleBinding",
            format!("{name}-{namespace}"),
            None,
        ),
    };
    let metadata = |n: &str| match ns {
        Some(ns) => json!({ "name": n, "namespace": ns }),
        None => json!({ "name": n }),
    };
    vec![
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": role_kind,
            "metadata": metadata(name),
            "rules": rules,
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": binding_kind,
            "metadata": metadata(&binding_name),
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name },
            "subjects": subject,
        }),
    ]
}

/// The rules only `infera drain` uses, cluster-wide (nodes are not
/// namespaced, and a node runs pods of every namespace):
/// * nodes list, patch — the plan's one node list; the cordon and the
///   resume record (`infera.amd.com/drain-in-flight`) are one patch;
/// * pods list, get — the pods on the node (the capacity list and, before
///   evicting, a list per node), and each evicted pod until it is deleted;
/// * pods/eviction create — the Eviction API, which honours PDBs;
/// * poddisruptionbudgets list — the PDBs covering each workload;
/// * replicasets, statefulsets, leaderworkersets get — a pod's owner chain
///   (deployments and inferadeployments get come with the rollout rules).
pub fn drain_rules() -> Vec<Value> {
    let lws = LEADER_WORKER_SET;
    vec![
        rule("", &["nodes"], &["list", "patch"]),
        rule("", &["pods"], &["get", "list"]),
        rule("", &["pods/eviction"], &["create"]),
        rule("policy", &["poddisruptionbudgets"], &["list"]),
        rule("apps", &["replicasets", "statefulsets"], &["get"]),
        rule(lws.group, &[lws.plural], &["get"]),
    ]
}

/// The `infera-drain` ClusterRole and its binding to the ServiceAccount.
fn drain_objects(namespace: &str) -> Vec<Value> {
    let subject = json!([{ "kind": "ServiceAccount", "name": NAME, "namespace": namespace }]);
    let role = format!("{NAME}-drain");
    vec![
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": { "name": role },
            "rules": drain_rules(),
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": { "name": format!("{role}-{namespace}") },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role },
            "subjects": subject,
        }),
    ]
}

/// The name of `infera monitor`'s ServiceAccount, Role and bindings.
pub const MONITOR_NAME: &str = "infera-monitor";

/// What `--traffic` and the monitor's request probe send through the API
/// server's service proxy to a router: `GET .../proxy/v1/models` (`get`)
/// and `POST .../proxy/v1/{chat/,}completions` (`create`), one home.
pub fn traffic_rules() -> Vec<Value> {
    vec![rule("", &["services/proxy"], &["get", "create"])]
}

/// What `infera monitor` reads: its five list+watches (pods,
/// InferaDeployments, Deployments, StatefulSets, LeaderWorkerSets), and
/// what its request probe sends to each router ([`traffic_rules`]). Its heartbeat (`GET
/// /version`) and the probe's control request (`GET /readyz`) are open to
/// every authenticated client (`system:discovery`,
/// `system:public-info-viewer`).
pub fn monitor_rules() -> Vec<Value> {
    let idep = INFERA_DEPLOYMENT;
    let read = ["list", "watch"];
    let mut rules = vec![
        rule("", &["pods"], &read),
        rule(idep.group, &[idep.plural], &read),
        rule("apps", &["deployments", "statefulsets"], &read),
        rule(LEADER_WORKER_SET.group, &[LEADER_WORKER_SET.plural], &read),
    ];
    // The request probe (`docs/monitor.md`, "Requests").
    rules.extend(traffic_rules());
    rules
}

/// The monitor's Role and RoleBinding in `namespace` (cluster-wide for
/// `infera monitor -A`), bound to the ServiceAccount [`MONITOR_NAME`].
pub fn monitor_rbac_objects(namespace: &str, scope: Scope) -> Vec<Value> {
    role_and_binding(MONITOR_NAME, namespace, scope, monitor_rules())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has(objects: &[Value], kind: &str, resource: &str, verb: &str) -> bool {
        objects.iter().filter(|o| o["kind"] == kind).any(|o| {
            o["rules"].as_array().into_iter().flatten().any(|r| {
                r["resources"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|x| x == resource)
                    && r["verbs"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|x| x == verb)
            })
        })
    }

    #[test]
    fn role_grants_what_the_commands_use_and_no_more() {
        let objects = rbac_objects("prod", Scope::Namespace);
        for (res, verb) in [
            ("pods", "watch"),
            ("pods/proxy", "get"),
            ("events", "list"),
            ("inferadeployments", "get"),
            ("inferadeployments", "patch"),
            // The rollout watches its InferaDeployment for a reverted trigger.
            ("inferadeployments", "watch"),
            ("deployments", "patch"),
        ] {
            assert!(has(&objects, "Role", res, verb), "{res} {verb}");
        }
        assert!(has(&objects, "ClusterRole", "nodes", "list"));
        assert!(has(&objects, "ClusterRole", "pods", "list"));
        // `lint --cluster` lists every kind it lints or judges with.
        for kind in ServingKind::ALL {
            assert!(has(&objects, "Role", kind.plural(), "list"), "{kind:?}");
        }
        for res in ["statefulsets", "resourceclaimtemplates", "resourceclaims"] {
            assert!(has(&objects, "Role", res, "list"), "{res}");
        }
        // Found unused on the upstream lab (tests/lab/rbac.rs).
        assert!(!has(&objects, "Role", "events", "watch"));
        assert!(!has(&objects, "Role", "pods", "delete"));
        assert!(!has(&objects, "Role", "pods", "create"));
        assert_eq!(objects[0]["metadata"]["namespace"], "prod");
    }

    #[test]
    fn drain_grants_its_verbs_cluster_wide_on_top_of_the_rollout_rules() {
        let objects = rbac_objects("prod", Scope::Drain);
        assert_eq!(objects[..4], rbac_objects("prod", Scope::AllNamespaces)[..]);
        for (res, verb) in [
            ("nodes", "list"),
            ("nodes", "patch"),
            ("pods", "get"),
            ("pods/eviction", "create"),
            ("poddisruptionbudgets", "list"),
            ("replicasets", "get"),
            ("statefulsets", "get"),
            ("leaderworkersets", "get"),
        ] {
            assert!(has(&objects[4..], "ClusterRole", res, verb), "{res} {verb}");
        }
        // Drain deletes nothing itself: evictions only.
        assert!(!has(&objects, "ClusterRole", "pods", "delete"));
        assert_eq!(objects[5]["roleRef"]["name"], "infera-drain");
        assert_eq!(objects[5]["subjects"][0]["namespace"], "prod");
    }

    #[test]
    fn all_namespaces_grants_the_same_rules_cluster_wide() {
        let namespaced = rbac_objects("prod", Scope::Namespace);
        let cluster = rbac_objects("prod", Scope::AllNamespaces);
        assert_eq!(cluster[0]["kind"], "ClusterRole");
        assert!(cluster[0]["metadata"].get("namespace").is_none());
        assert_eq!(cluster[0]["rules"], namespaced[0]["rules"]);
        assert_eq!(cluster[1]["kind"], "ClusterRoleBinding");
        assert_eq!(cluster[1]["metadata"]["name"], "infera-prod");
        assert_eq!(cluster[1]["roleRef"]["kind"], "ClusterRole");
        assert_eq!(cluster[1]["subjects"][0]["namespace"], "prod");
        assert_eq!(cluster[2..], namespaced[2..]);
        assert_eq!(namespaced[1]["roleRef"]["kind"], "Role");
    }

    #[test]
    fn the_monitor_lists_watches_and_posts_through_the_proxy_only() {
        for scope in [Scope::Namespace, Scope::AllNamespaces] {
            let objects = monitor_rbac_objects("mon", scope);
            assert_eq!(objects.len(), 2);
            let verbs: Vec<&Value> = objects[0]["rules"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|r| r["verbs"].as_array().into_iter().flatten())
                .collect();
            let rules = objects[0]["rules"].as_array().cloned().unwrap_or_default();
            for r in &rules {
                let proxy = r["resources"] == json!(["services/proxy"]);
                let verbs = r["verbs"].as_array().cloned().unwrap_or_default();
                if proxy {
                    assert_eq!(
                        verbs,
                        vec![json!("get"), json!("create")],
                        "the probe GETs the models and POSTs requests"
                    );
                } else {
                    assert!(
                        verbs.iter().all(|v| *v == "list" || *v == "watch"),
                        "{verbs:?}"
                    );
                }
            }
            assert!(verbs.iter().any(|v| *v == "create"), "{verbs:?}");
            assert_eq!(objects[1]["subjects"][0]["name"], MONITOR_NAME);
        }
        let kinds = |s| monitor_rbac_objects("mon", s)[0]["kind"].clone();
        assert_eq!(kinds(Scope::Namespace), "Role");
        assert_eq!(kinds(Scope::AllNamespaces), "ClusterRole");
    }
}
