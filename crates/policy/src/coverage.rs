//! The one table that says, for every rule of lint's registry, whether the
//! policy enforces it (and what to write instead) or why it cannot. A rule
//! added to lint's registry without a row here fails
//! `every_rule_is_enforced_or_explained`.

/// What the policy does with one rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Enforced by the CEL of `kinds`; `fix` is what to write instead.
    Enforced { fix: &'static str },
    /// Not enforced, and why.
    Unenforceable { reason: &'static str },
}

/// Every rule code with its coverage, in code order.
pub const COVERAGE: &[(&str, Coverage)] = &[
    (
        "IR001",
        Coverage::Enforced {
            fix: "remove skipReadinessProbe so the operator injects the /ready probe and rolls surge-first",
        },
    ),
    (
        "IR002",
        Coverage::Unenforceable {
            reason: "needs the GPUs of the node the pod is pinned to: a node's capacity is not in the object (lint assumes --node-gpus or reads --nodes/--cluster)",
        },
    ),
    (
        "IR003",
        Coverage::Enforced {
            fix: "allow a second node (a pool label instead of one hostname) or stop binding host ports",
        },
    ),
    (
        "IR004",
        Coverage::Unenforceable {
            reason: "needs live node capacity: whether a free node can take the surge pod depends on the cluster now, and the GPU half of the rule on the node size",
        },
    ),
    (
        "IR005",
        Coverage::Enforced {
            fix: "remove the readinessProbe or probe httpGet /ready on the readiness port",
        },
    ),
    (
        "IR006",
        Coverage::Enforced {
            fix: "set INFERA_READINESS_PORT to a plain integer like \"30090\"",
        },
    ),
    (
        "IR007",
        Coverage::Enforced {
            fix: "add a readinessProbe on the model server's serving endpoint (`infera rules IR007` lists them)",
        },
    ),
    (
        "IR008",
        Coverage::Enforced {
            fix: "keep maxUnavailable below the replicas (maxSurge 1, maxUnavailable 0) with a readiness probe, or run 2 replicas",
        },
    ),
    (
        "IR009",
        Coverage::Unenforceable {
            reason: "not in this policy yet: the engines' parallelism flags (argparse: last value wins, `--flag=value`, shell strings) and GPU quantities need a parser the shared CEL function set has no cheap form of; lint checks it",
        },
    ),
    (
        "IR010",
        Coverage::Enforced {
            fix: "set the /ready probe's timeoutSeconds to 10",
        },
    ),
    (
        "IR011",
        Coverage::Unenforceable {
            reason: "a placeholder belongs to a template before rendering; at admission the value is literal (an integer field holding text is refused by the schema first), and CEL cannot walk an object of any depth",
        },
    ),
    (
        "IR012",
        Coverage::Enforced {
            fix: "run more groups than maxUnavailable, or surge a group with a readiness probe",
        },
    ),
    (
        "IR013",
        Coverage::Unenforceable {
            reason: "needs two objects: the PodDisruptionBudget and the workload whose pods it selects (their replicas); the admission of either sees only itself",
        },
    ),
    (
        "IR014",
        Coverage::Unenforceable {
            reason: "needs every PodDisruptionBudget of the namespace, and fires only when none selects the workload: the admission of one object sees no other",
        },
    ),
    (
        "IR015",
        Coverage::Unenforceable {
            reason: "needs the PersistentVolumeClaim's access mode, which is in another object (or in the bound volume's status)",
        },
    ),
    (
        "IR016",
        Coverage::Unenforceable {
            reason: "not in this policy yet: the engines' drain flags and env (argparse: last value wins, `--flag=value`, shell strings) and a preStop command's `sleep N` need a parser the shared CEL function set has no cheap form of; lint checks it",
        },
    ),
    (
        "IR017",
        Coverage::Unenforceable {
            reason: "not in this policy yet: decidable from the Deployment alone (progressDeadlineSeconds against the main container's probes), but the main container is the one the engine catalogue recognizes, which the CEL cannot; lint checks it",
        },
    ),
];

/// The coverage of `code`, when the table has it.
pub fn coverage(code: &str) -> Option<Coverage> {
    COVERAGE.iter().find(|(c, _)| *c == code).map(|(_, v)| *v)
}

/// The rules of lint's registry the policy does not enforce, with why.
pub fn unenforced() -> Vec<(&'static str, &'static str)> {
    infera_lint::rules::rules()
        .iter()
        .filter_map(|m| match coverage(m.code) {
            Some(Coverage::Unenforceable { reason }) => Some((m.code, reason)),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rule of lint's registry that the policy neither enforces nor
    /// explains fails here; so does a row for a rule lint no longer has, an
    /// enforced rule without CEL, and CEL for a rule not marked enforced.
    #[test]
    fn every_rule_is_enforced_or_explained() {
        let registry: Vec<&str> = infera_lint::rules::rules().iter().map(|m| m.code).collect();
        let mut failures = Vec::new();
        for code in &registry {
            if coverage(code).is_none() {
                failures.push(format!("{code}: in lint's registry, not in COVERAGE"));
            }
        }
        for (code, _) in COVERAGE {
            if !registry.contains(code) {
                failures.push(format!("{code}: in COVERAGE, not in lint's registry"));
            }
        }
        for generation in [
            infera_model::generation::Generation::SurgeFree,
            infera_model::generation::Generation::ProbeGatedSurge,
        ] {
            let checked: std::collections::BTreeSet<&str> = crate::kinds::targets(generation)
                .iter()
                .flat_map(|t| t.checks.iter().map(|c| c.code))
                .collect();
            for (code, cov) in COVERAGE {
                let enforced = matches!(cov, Coverage::Enforced { .. });
                if enforced != checked.contains(code) {
                    failures.push(format!(
                        "{code} ({generation}): COVERAGE says enforced={enforced}, the CEL checks it: {}",
                        checked.contains(code)
                    ));
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
