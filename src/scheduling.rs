//! Pure pod-to-node fit predicates, shared by the simulated scheduler and the
//! rollout preflight capacity check (one source of truth).
