//! Prefill/decode KV coherence through a roll (the preflight's prediction).
//!
//! A P/D fleet rolls one role at a time, so for a while the role rolled
//! first is new and the other old, both registered. Whether a request
//! paired across them works depends on their KV compatibility identities
//! (`infera_model::kv`): equal, nothing happens; different, under an
//! operator with the KV barrier (PR #176) the first role's new pods fail
//! their check, crash-loop and the leg stalls with the old pair serving;
//! without it (before #176) they register, and every request paired
//! across the change fails (`kv_load_failure_policy: fail`) or is
//! prefilled again on the decode (`recompute`) for the mixed window. A
//! role the roll leaves alone (`--service`) keeps its identity: a change
//! to the other one then mismatches them for good.
//!
//! The window is estimated from the plan: the first role's new pod may
//! count Ready (and its leg end) up to its readiness probe's period after
//! it registered; the other role's old pods stay registered through their
//! preStop hook, and, when that role rolls
//! surge-first, until their replacements are Ready (their start-up, read
//! from the live pods: Ready since minus started at); when the first role
//! has more than one pod, its first new pod registers earlier, by its
//! start-up for each further pod.

use infera_model::generation::Generation;
use infera_model::kv::{KvIdentity, LoadFailurePolicy, load_failure_policy};
use infera_model::rolling::Roll;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use serde_json::Value;

/// One leg as the prediction reads it.
#[derive(Debug, Clone)]
pub struct Side {
    pub leg: String,
    pub role: String,
    pub replicas: u32,
    pub strategy: Roll,
    /// The engine container of its live pod template.
    pub main: Option<Container>,
    /// Seconds its live pods took from start to Ready (the longest).
    pub startup: Option<f64>,
    /// Whether this roll rolls it (false: a service `--service` leaves
    /// alone, which keeps its identity).
    pub rolled: bool,
}

impl Side {
    /// The engine container of a pod template (`spec.template` of its
    /// Deployment).
    pub fn main_of(template: &Value) -> Option<Container> {
        let spec: PodSpec = serde_json::from_value(template.get("spec")?.clone()).ok()?;
        let i = infera_model::pod::engine_container_index(&spec);
        spec.containers.get(i).cloned()
    }

    fn before(&self) -> Option<KvIdentity> {
        KvIdentity::of(self.main.as_ref()?)
    }

    /// Its identity once rolled to `image` (unchanged by a restart, or
    /// when it is not rolled).
    fn after(&self, image: Option<&str>) -> Option<KvIdentity> {
        let mut c = self.main.clone()?;
        if let Some(image) = image.filter(|_| self.rolled) {
            c.image = Some(image.to_string());
        }
        KvIdentity::of(&c)
    }

    /// Its readiness probe's period: how long after registering a new pod
    /// may wait to count Ready (and its leg to go on).
    fn probe_period(&self) -> f64 {
        let probe = self.main.as_ref().and_then(|c| c.readiness_probe.as_ref());
        probe.map_or(0.0, |p| f64::from(p.period_seconds.unwrap_or(10)))
    }

    fn prestop(&self) -> f64 {
        let sleep = self
            .main
            .as_ref()
            .and_then(infera_model::worker::prestop_sleep);
        #[allow(clippy::cast_precision_loss)]
        sleep.map_or(0.0, |(s, _)| s as f64)
    }
}

/// What the roll does to prefill/decode pairs.
#[derive(Debug, Clone, PartialEq)]
pub enum Coherence {
    /// Old and new keep one identity: one role at a time is safe.
    Compatible,
    /// The fleet's prefill and decode already differ before the roll.
    AlreadyIncompatible { change: String },
    /// The first role's new pods differ from the other role's old ones.
    Incompatible(Mixed),
}

/// An incompatible mixed window: which leg goes first, what differs, and
/// what the operator generation makes of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Mixed {
    /// The leg rolled first (its new pods meet the other role's old ones).
    pub first: String,
    pub first_role: String,
    pub other: String,
    pub other_role: String,
    /// `engine version 0.9.1 → 0.9.2`.
    pub change: String,
    /// The operator generation (`None`: unknown).
    pub generation: Option<Generation>,
    /// The decode's `kv_load_failure_policy`.
    pub policy: LoadFailurePolicy,
    /// Estimated seconds both stay registered (`None`: not estimable).
    pub window: Option<f64>,
    /// The other role is not rolled: the mismatch outlasts the roll.
    pub lasting: bool,
}

impl Coherence {
    /// Whether it stops the roll without `--force`: a predicted stall, or
    /// failed requests (policy `fail`), or an unknown operator generation.
    pub fn blocks(&self) -> bool {
        match self {
            Coherence::Incompatible(m) => {
                m.generation != Some(Generation::SurgeFree) || m.policy == LoadFailurePolicy::Fail
            }
            _ => false,
        }
    }

    /// `compatible`, `already-incompatible`, `stall` (the barrier),
    /// `failed-requests` or `recompute` (no barrier), `unknown-operator`.
    pub fn case(&self) -> &'static str {
        match self {
            Coherence::Compatible => "compatible",
            Coherence::AlreadyIncompatible { .. } => "already-incompatible",
            Coherence::Incompatible(m) => match (m.generation, m.policy) {
                (Some(Generation::ProbeGatedSurge), _) => "stall",
                (Some(Generation::SurgeFree), LoadFailurePolicy::Fail) => "failed-requests",
                (Some(Generation::SurgeFree), LoadFailurePolicy::Recompute) => "recompute",
                (None, _) => "unknown-operator",
            },
        }
    }

    /// The plan event's `kv_coherence` (`-o json`).
    pub fn to_json(&self) -> Value {
        let mut v = serde_json::json!({"case": self.case(), "blocks": self.blocks()});
        if let Coherence::Incompatible(m) = self {
            v["first_leg"] = Value::from(m.first.clone());
            v["change"] = Value::from(m.change.clone());
            v["policy"] = Value::from(m.policy.as_str());
            v["window_seconds"] = m.window.map_or(Value::Null, Value::from);
            v["lasting"] = Value::from(m.lasting);
        }
        if let Coherence::AlreadyIncompatible { change } = self {
            v["change"] = Value::from(change.clone());
        }
        v
    }

    /// The plan's line(s).
    pub fn render(&self) -> String {
        match self {
            Coherence::Compatible => "KV coherence: compatible: prefill and decode keep one KV \
                 identity through the roll, so one role at a time pairs no request across \
                 incompatible workers."
                .to_string(),
            Coherence::AlreadyIncompatible { change } => format!(
                "KV coherence: prefill and decode already differ ({change}): every request \
                 paired between them fails or is prefilled again, before and after the roll."
            ),
            Coherence::Incompatible(m) => m.render(),
        }
    }
}

impl Mixed {
    fn render(&self) -> String {
        let head = format!(
            "KV coherence: INCOMPATIBLE: the new {} pods ({}) differ from the old {} pods ({})",
            self.first_role, self.first, self.other_role, self.change
        );
        match self.generation {
            Some(Generation::ProbeGatedSurge) => format!(
                "{head}. Under operator 176 the KV barrier runs: each new {} fails its check \
                 against the registered {}, exits and restarts (CrashLoopBackOff), so leg {} \
                 never finishes: predicted STALL, the old pair keeps serving.",
                self.first_role, self.other_role, self.first
            ),
            Some(Generation::SurgeFree) => format!(
                "{head}. Before operator 176 nothing checks them: from when the first new {} \
                 registers until the last old {} is gone ({}), every request paired across \
                 them {}.",
                self.first_role,
                self.other_role,
                self.window_text(),
                match self.policy {
                    LoadFailurePolicy::Fail => "fails (kv_load_failure_policy fail)",
                    LoadFailurePolicy::Recompute =>
                        "is prefilled again on the decode (kv_load_failure_policy recompute): it \
                         succeeds with a local prefill's time to first token",
                }
            ),
            None => format!(
                "{head}. The operator generation is unknown: under 176 leg {} stalls, before \
                 it requests paired across them fail or are prefilled again.",
                self.first
            ),
        }
    }

    fn window_text(&self) -> String {
        if self.lasting {
            return format!("for good: this roll leaves {} alone", self.other);
        }
        match self.window {
            Some(w) => format!("about {w:.0} s, estimated from the plan"),
            None => "a window the plan cannot estimate".to_string(),
        }
    }
}

/// The prediction for legs in roll order rolled to `image` (`None`: a
/// restart) under `generation`; `None` when the legs are not one prefill
/// role and one decode role of engines infera recognizes.
pub fn assess(
    sides: &[Side],
    image: Option<&str>,
    generation: Option<Generation>,
) -> Option<Coherence> {
    let pd = |s: &&Side| s.role == "prefill" || s.role == "decode";
    let first = sides.iter().filter(|s| s.rolled).find(pd)?;
    let other = sides.iter().filter(pd).find(|s| s.role != first.role)?;
    let (first_before, other_before) = (first.before()?, other.before()?);
    if first_before != other_before {
        return Some(Coherence::AlreadyIncompatible {
            change: first_before.describe_change(&other_before),
        });
    }
    let first_after = first.after(image)?;
    if first_after == other_before {
        return Some(Coherence::Compatible);
    }
    let decode = if first.role == "decode" { first } else { other };
    Some(Coherence::Incompatible(Mixed {
        first: first.leg.clone(),
        first_role: first.role.clone(),
        other: other.leg.clone(),
        other_role: other.role.clone(),
        change: other_before.describe_change(&first_after),
        generation,
        policy: decode
            .main
            .as_ref()
            .map(load_failure_policy)
            .unwrap_or_default(),
        window: window(first, other),
        lasting: !other.rolled,
    }))
}

/// Seconds the first role's new pods and the other role's old ones are
/// both registered (see the module docs).
fn window(first: &Side, other: &Side) -> Option<f64> {
    let surge_wait = if other.strategy.surges() && other.strategy.unavailable(other.replicas) == 0 {
        other.startup?
    } else {
        0.0
    };
    let earlier = match first.replicas {
        0 | 1 => 0.0,
        n => f64::from(n - 1) * first.startup?,
    };
    Some(first.probe_period() + other.prestop() + surge_wait + earlier)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn side(leg: &str, image: &str, args: &[&str], strategy: Roll) -> Side {
        let mut command = vec!["python3", "-m", "infera.engine.sglang", "--model-path", "m"];
        command.extend_from_slice(args);
        let template = json!({"spec": {"containers": [{"name": "main", "image": image, "command": command,
            "lifecycle": {"preStop": {"exec": {"command": ["/bin/sh", "-c", "sleep 15"]}}}}]}});
        Side {
            leg: leg.into(),
            role: leg.into(),
            replicas: 1,
            strategy,
            main: Side::main_of(&template),
            startup: Some(170.0),
            rolled: true,
        }
    }

    #[test]
    fn three_cases() {
        let surge_free = Roll::rolling(0, 1);
        let legs = [
            side("decode", "rocm/infera:0.9.1", &[], surge_free),
            side("prefill", "rocm/infera:0.9.1", &[], surge_free),
        ];
        let pre = Some(Generation::SurgeFree);
        assert_eq!(assess(&legs, None, pre), Some(Coherence::Compatible));
        assert_eq!(
            assess(&legs, Some("rocm/infera:0.9.1"), pre),
            Some(Coherence::Compatible)
        );
        let Some(Coherence::Incompatible(m)) = assess(&legs, Some("rocm/infera:0.9.2"), pre) else {
            panic!("incompatible");
        };
        assert_eq!((m.first.as_str(), m.other.as_str()), ("decode", "prefill"));
        assert_eq!(m.change, "engine version 0.9.1 → 0.9.2");
        assert_eq!(m.window, Some(15.0));
        let c = Coherence::Incompatible(m.clone());
        assert!(c.blocks());
        assert!(c.render().contains("about 15 s"), "{}", c.render());
        let recompute = Coherence::Incompatible(Mixed {
            policy: LoadFailurePolicy::Recompute,
            ..m.clone()
        });
        assert!(!recompute.blocks());
        let barrier = Coherence::Incompatible(Mixed {
            generation: Some(Generation::ProbeGatedSurge),
            ..m
        });
        assert!(barrier.blocks() && barrier.render().contains("STALL"));
    }

    #[test]
    fn surge_first_other_role_waits_for_its_start_up() {
        let surge = Roll::rolling(1, 0);
        let legs = [
            side("prefill", "i:1", &[], surge),
            side("decode", "i:1", &[], surge),
        ];
        let Some(Coherence::Incompatible(m)) = assess(&legs, Some("i:2"), None) else {
            panic!("incompatible");
        };
        assert_eq!(m.window, Some(15.0 + 170.0));
        let fp8 = [
            side(
                "prefill",
                "i:1",
                &["--kv-cache-dtype", "fp8_e4m3"],
                Roll::rolling(1, 0),
            ),
            side("decode", "i:1", &[], Roll::rolling(1, 0)),
        ];
        assert!(matches!(
            assess(&fp8, None, None),
            Some(Coherence::AlreadyIncompatible { .. })
        ));
    }

    /// `--service decode`: the prefill keeps its image, so the decode's
    /// new one mismatches it for good; a prefill alone is no P/D roll.
    #[test]
    fn a_role_left_alone_keeps_its_identity() {
        let surge_free = Roll::rolling(0, 1);
        let mut prefill = side("prefill", "i:1", &[], surge_free);
        prefill.rolled = false;
        let legs = [side("decode", "i:1", &[], surge_free), prefill.clone()];
        let pre = Some(Generation::SurgeFree);
        let Some(Coherence::Incompatible(m)) = assess(&legs, Some("i:2"), pre) else {
            panic!("incompatible");
        };
        assert!(m.lasting && m.first == "decode");
        let text = Coherence::Incompatible(m).render();
        assert!(
            text.contains("for good: this roll leaves prefill alone"),
            "{text}"
        );
        assert_eq!(assess(&[prefill], Some("i:2"), pre), None);
    }
}
