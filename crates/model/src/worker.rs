//! The worker facts, one home each (operator-semantics §1, §2, §5): the
//! label and annotation keys, the readiness port and its two parsers (the
//! operator's strict one and the worker's loose one, side by side), the
//! main-container rule, GPU resource names and quantity parsing. Everything
//! else (operator, lint, rollout, audit, the simulator) imports these.

use k8s_openapi::api::core::v1::EnvVar;
use serde::Serialize;

/// The pod annotation a worker writes when it registers (§5).
pub const WORKER_INFO_ANNOTATION: &str = "infera.amd.com/worker-info";
/// Label keys the operator puts on every object and pod it renders (§1).
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// The value of [`LABEL_MANAGED_BY`] on what the operator renders.
pub const MANAGED_BY_VALUE: &str = "infera-operator";
/// The InferaDeployment a pod belongs to.
pub const LABEL_DEPLOYMENT: &str = "infera.amd.com/deployment";
/// The service (role) of the InferaDeployment a pod belongs to.
pub const LABEL_SERVICE: &str = "infera.amd.com/service";

/// The env variable naming the worker's readiness port.
pub const READINESS_PORT_ENV: &str = "INFERA_READINESS_PORT";
/// The readiness port when [`READINESS_PORT_ENV`] is unset.
pub const DEFAULT_READINESS_PORT: u16 = 30090;

/// The GPU resource the operator requests by default.
pub const DEFAULT_GPU_TYPE: &str = "amd.com/gpu";
/// The worker's readiness endpoint: 200 once it is registered (§2).
pub const READY_PATH: &str = "/ready";
/// The extended resources counted as GPUs.
pub const GPU_RESOURCES: [&str; 2] = [DEFAULT_GPU_TYPE, NVIDIA_GPU];
/// NVIDIA's device plugin's resource (and the one the Dynamo operator requests).
pub const NVIDIA_GPU: &str = "nvidia.com/gpu";

/// Whether a resource name is a GPU (`amd.com/gpu`, `nvidia.com/gpu`, any
/// `<vendor>/gpu`).
pub fn is_gpu_resource(name: &str) -> bool {
    name.ends_with("/gpu")
}

/// Parse a Kubernetes quantity into thousandths of its unit ("milli-units"),
/// rounding up as upstream's `MilliValue` does. `None` for malformed input.
pub fn parse_quantity_milli(quantity: &str) -> Option<i128> {
    let s = quantity.trim();
    if s.is_empty() {
        return None;
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    // Decimal exponent form: 1e3, 5E-1.
    let (mut numerator, mut denominator) = parse_decimal(number)?;
    let (mult_num, mult_den): (i128, i128) = match suffix {
        "" => (1, 1),
        "n" => (1, 1_000_000_000),
        "u" => (1, 1_000_000),
        "m" => (1, 1_000),
        "k" => (1_000, 1),
        "M" => (1_000_000, 1),
        "G" => (1_000_000_000, 1),
        "T" => (1_000_000_000_000, 1),
        "P" => (1_000_000_000_000_000, 1),
        "E" => (1_000_000_000_000_000_000, 1),
        "Ki" => (1 << 10, 1),
        "Mi" => (1 << 20, 1),
        "Gi" => (1 << 30, 1),
        "Ti" => (1 << 40, 1),
        "Pi" => (1 << 50, 1),
        "Ei" => (1 << 60, 1),
        other if other.starts_with(['e', 'E']) => {
            let exp: i32 = other.get(1..)?.parse().ok()?;
            if exp.unsigned_abs() > 30 {
                return None;
            }
            if exp >= 0 {
                (10i128.pow(exp.unsigned_abs()), 1)
            } else {
                (1, 10i128.pow(exp.unsigned_abs()))
            }
        }
        _ => return None,
    };
    numerator = numerator.checked_mul(mult_num)?.checked_mul(1000)?;
    denominator = denominator.checked_mul(mult_den)?;
    // Ceiling division, sign-aware.
    let quotient = numerator.div_euclid(denominator);
    let remainder = numerator.rem_euclid(denominator);
    Some(if remainder > 0 {
        quotient + 1
    } else {
        quotient
    })
}

/// "12.5" → (125, 10).
fn parse_decimal(number: &str) -> Option<(i128, i128)> {
    let (negative, digits) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number.strip_prefix('+').unwrap_or(number)),
    };
    let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    if !int_part.chars().all(|c| c.is_ascii_digit())
        || !frac_part.chars().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    if int_part.len() + frac_part.len() > 30 {
        return None;
    }
    let joined = format!("{int_part}{frac_part}");
    let value: i128 = joined.parse().ok()?;
    let denominator = 10i128.pow(u32::try_from(frac_part.len()).ok()?);
    Some((if negative { -value } else { value }, denominator))
}

/// A whole-unit resource count (`8`, `8.0`, `1k`) from a quantity; `None`
/// when malformed, fractional or out of range.
pub fn whole_quantity(quantity: &str) -> Option<i64> {
    parse_quantity_milli(quantity)
        .filter(|m| m % 1000 == 0)
        .and_then(|m| i64::try_from(m / 1000).ok())
}

/// The names that make a container the main one.
pub const MAIN_CONTAINER_NAMES: [&str; 2] = ["main", "infera"];

/// The main container among `names` (in pod order): the first named `main`
/// or `infera`, else the first; `None` when there is no container.
pub fn main_container_position<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<usize> {
    let mut any = false;
    for (i, name) in names.into_iter().enumerate() {
        if MAIN_CONTAINER_NAMES.contains(&name) {
            return Some(i);
        }
        any = true;
    }
    any.then_some(0)
}

/// The readiness port of a container, as the operator resolves it (§2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ReadinessPort {
    /// `INFERA_READINESS_PORT` absent: the default 30090 (the operator adds it).
    Default { port: u16 },
    /// A literal the operator accepts.
    Literal { port: u16, raw: String },
    /// Set from `valueFrom`: the operator cannot know it.
    ValueFrom,
    /// A literal the operator rejects (whitespace, `_`, out of range, not a number).
    Rejected { raw: String },
}

impl ReadinessPort {
    /// The port number, when the operator can know it.
    pub fn known(&self) -> Option<u16> {
        match self {
            ReadinessPort::Default { port } | ReadinessPort::Literal { port, .. } => Some(*port),
            ReadinessPort::ValueFrom | ReadinessPort::Rejected { .. } => None,
        }
    }
    pub fn is_knowable(&self) -> bool {
        self.known().is_some()
    }
    /// A short human description (`30090 (default)`, `valueFrom (unknowable)`).
    pub fn describe(&self) -> String {
        match self {
            ReadinessPort::Default { port } => format!("{port} (default)"),
            ReadinessPort::Literal { port, .. } => port.to_string(),
            ReadinessPort::ValueFrom => "set from valueFrom (unknowable)".to_string(),
            ReadinessPort::Rejected { raw } => format!("{raw:?} (rejected, unknowable)"),
        }
    }
}

/// Resolve `INFERA_READINESS_PORT` from a container's env, with the
/// operator's exact rule: absent → 30090; `valueFrom` → unknowable; a literal
/// is knowable only when Go's `strconv.Atoi` accepts it (optional leading `+`
/// or `-`, then ASCII digits only: no whitespace, no `_`) and it is in
/// 1..=65535. The first entry with the name is the one the operator reads.
pub fn readiness_port(env: &[EnvVar]) -> ReadinessPort {
    let Some(var) = env.iter().find(|e| e.name == READINESS_PORT_ENV) else {
        return ReadinessPort::Default {
            port: DEFAULT_READINESS_PORT,
        };
    };
    if var.value_from.is_some() {
        return ReadinessPort::ValueFrom;
    }
    let raw = var.value.clone().unwrap_or_default();
    match go_atoi(&raw) {
        Some(n) if (1..=65535).contains(&n) => ReadinessPort::Literal {
            port: n as u16,
            raw,
        },
        _ => ReadinessPort::Rejected { raw },
    }
}

/// Go's `strconv.Atoi` (base 10, no underscores, no whitespace). `None` on
/// any syntax error or overflow of i64.
pub fn go_atoi(s: &str) -> Option<i64> {
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut n: i64 = 0;
    for b in digits.bytes() {
        n = n.checked_mul(10)?.checked_add(i64::from(b - b'0'))?;
    }
    Some(if negative { -n } else { n })
}

/// The worker's own reading of a literal `INFERA_READINESS_PORT` (Python
/// `int()`: surrounding whitespace, `_` and a leading `+` are accepted), or
/// [`DEFAULT_READINESS_PORT`] when unset. A value that is not a port in
/// 1..=65535 falls back to the default too.
pub fn worker_readiness_port(value: Option<&str>) -> u16 {
    value
        .and_then(|v| v.trim().replace('_', "").parse::<u16>().ok())
        .filter(|p| *p > 0)
        .unwrap_or(DEFAULT_READINESS_PORT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str, value: &str) -> EnvVar {
        EnvVar {
            name: name.to_string(),
            value: Some(value.to_string()),
            ..EnvVar::default()
        }
    }

    #[test]
    fn readiness_port_edge_cases() {
        let knowable = |v: &str| readiness_port(&[env(READINESS_PORT_ENV, v)]).known();
        assert_eq!(knowable("+30091"), Some(30091));
        assert_eq!(knowable("30091"), Some(30091));
        assert_eq!(knowable("030090"), Some(30090));
        assert_eq!(knowable("1"), Some(1));
        assert_eq!(knowable("65535"), Some(65535));
        assert_eq!(knowable(" 30090"), None);
        assert_eq!(knowable("30090 "), None);
        assert_eq!(knowable("30_090"), None);
        assert_eq!(knowable("0"), None);
        assert_eq!(knowable("-30090"), None);
        assert_eq!(knowable("70000"), None);
        assert_eq!(knowable("65536"), None);
        assert_eq!(knowable("abc"), None);
        assert_eq!(knowable(""), None);
        assert_eq!(knowable("+"), None);
        assert_eq!(knowable("99999999999999999999999"), None);
        assert_eq!(readiness_port(&[]), ReadinessPort::Default { port: 30090 });
        let from = EnvVar {
            name: READINESS_PORT_ENV.to_string(),
            value_from: Some(Default::default()),
            ..EnvVar::default()
        };
        assert_eq!(readiness_port(&[from]), ReadinessPort::ValueFrom);
    }

    #[test]
    fn quantities_parse_like_upstream() {
        let cases = [
            ("1", Some(1000)),
            ("100m", Some(100)),
            ("1.5", Some(1500)),
            ("2Gi", Some(2 * (1i128 << 30) * 1000)),
            ("1k", Some(1_000_000)),
            ("1e3", Some(1_000_000)),
            ("1n", Some(1)), // rounds up
            ("0.0001", Some(1)),
            ("8", Some(8000)),
            ("abc", None),
            ("", None),
            ("1Qi", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_quantity_milli(input), want, "{input}");
        }
    }

    fn strict(raw: &str) -> Option<u16> {
        readiness_port(&[EnvVar {
            name: READINESS_PORT_ENV.into(),
            value: Some(raw.into()),
            value_from: None,
        }])
        .known()
    }

    /// operator-semantics §2: the operator knows the port only for an
    /// Atoi-clean literal in range; the worker still opens one for the
    /// loose spellings.
    #[test]
    fn the_two_parsers_side_by_side() {
        let cases: [(&str, Option<u16>, u16); 8] = [
            ("30090", Some(30090), 30090),
            ("+30091", Some(30091), 30091),
            (" 30090", None, 30090),
            ("30_090", None, 30090),
            ("0", None, DEFAULT_READINESS_PORT),
            ("70000", None, DEFAULT_READINESS_PORT),
            ("abc", None, DEFAULT_READINESS_PORT),
            (" 31_000 ", None, 31000),
        ];
        for (raw, operator, worker) in cases {
            assert_eq!(strict(raw), operator, "operator {raw:?}");
            assert_eq!(worker_readiness_port(Some(raw)), worker, "worker {raw:?}");
        }
        assert_eq!(readiness_port(&[]).known(), Some(DEFAULT_READINESS_PORT));
        assert_eq!(worker_readiness_port(None), DEFAULT_READINESS_PORT);
    }

    #[test]
    fn whole_quantities() {
        assert_eq!(whole_quantity("8"), Some(8));
        assert_eq!(whole_quantity(" 8 "), Some(8));
        assert_eq!(whole_quantity("1k"), Some(1000));
        assert_eq!(whole_quantity("500m"), None);
        assert_eq!(whole_quantity("eight"), None);
        assert!(is_gpu_resource("amd.com/gpu") && !is_gpu_resource("cpu"));
    }

    #[test]
    fn main_container_rule() {
        assert_eq!(main_container_position(["a", "infera"]), Some(1));
        assert_eq!(main_container_position(["a", "main", "infera"]), Some(1));
        assert_eq!(main_container_position(["a", "b"]), Some(0));
        assert_eq!(main_container_position([]), None);
    }
}

/// `terminationGracePeriodSeconds` when the pod does not set it.
pub const DEFAULT_GRACE_SECONDS: i64 = 30;

/// How long a container's preStop hook sleeps, and how the manifest says
/// it (`exec sleep 15`, `sleep action 15`): an `exec` whose command runs
/// `sleep N` (also inside `sh -c "…"`), or the `sleep` action. None when
/// there is no hook, or its length is not written in it (an HTTP hook, a
/// script, `sleep $T`).
pub fn prestop_sleep(c: &k8s_openapi::api::core::v1::Container) -> Option<(i64, String)> {
    let hook = c.lifecycle.as_ref()?.pre_stop.as_ref()?;
    if let Some(sleep) = &hook.sleep {
        return Some((sleep.seconds, format!("sleep action {}", sleep.seconds)));
    }
    let words: Vec<&str> = hook
        .exec
        .as_ref()?
        .command
        .iter()
        .flatten()
        .flat_map(|part| part.split(|ch: char| ch.is_whitespace() || ch == ';'))
        .collect();
    let at = words
        .iter()
        .position(|w| w.rsplit('/').next() == Some("sleep"))?;
    let seconds = crate::catalogue::parse_seconds(words.get(at + 1)?)?;
    Some((seconds, format!("exec sleep {seconds}")))
}

#[cfg(test)]
mod prestop_tests {
    use super::*;

    fn container(lifecycle: serde_json::Value) -> k8s_openapi::api::core::v1::Container {
        serde_json::from_value(serde_json::json!({"name": "m", "lifecycle": lifecycle})).unwrap()
    }

    #[test]
    fn prestop_sleeps_are_read_from_exec_and_the_sleep_action() {
        let cases = [
            (
                serde_json::json!({"preStop": {"exec": {"command": ["sleep", "20"]}}}),
                Some(20),
            ),
            (
                serde_json::json!({"preStop": {"exec": {"command": ["/bin/sh", "-c", "sleep 15; kill 1"]}}}),
                Some(15),
            ),
            (
                serde_json::json!({"preStop": {"sleep": {"seconds": 7}}}),
                Some(7),
            ),
            (
                serde_json::json!({"preStop": {"exec": {"command": ["sleep", "$T"]}}}),
                None,
            ),
            (
                serde_json::json!({"preStop": {"httpGet": {"path": "/drain", "port": 80}}}),
                None,
            ),
            (serde_json::json!({}), None),
        ];
        for (lifecycle, want) in cases {
            let got = prestop_sleep(&container(lifecycle.clone())).map(|(s, _)| s);
            assert_eq!(got, want, "{lifecycle}");
        }
    }
}
