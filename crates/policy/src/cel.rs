//! CEL building blocks: each function returns CEL source for one fact lint
//! reads through `infera_model` (the engine catalogue, the readiness port,
//! the main container, pins and host ports, upstream rounding), written over
//! the expression it is given (`c` a container, `p` a pod spec).
//!
//! Only functions that both Kubernetes CEL and the `cel` crate provide are
//! used: the standard library (`has`, `size`, `matches`, `contains`,
//! `startsWith`, `endsWith`, `int`, `type`, the macros) and the strings
//! extension (`join`, `split`, `trim`, `substring`, `lastIndexOf`). The
//! test `functions_are_in_both_libraries` holds the list.

use infera_model::catalogue::{self, Engine};
use infera_model::worker::{DEFAULT_READINESS_PORT, READINESS_PORT_ENV, READY_PATH};

/// A CEL string literal of `s` (single-quoted, backslashes and quotes escaped).
pub fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// `base.field`, or `default` when the field is absent.
pub fn opt(base: &str, field: &str, default: &str) -> String {
    format!("(has({base}.{field}) ? {base}.{field} : {default})")
}

/// True when every field of `path` under `base` is present (`has` chain).
pub fn has_path(base: &str, path: &[&str]) -> String {
    let mut parts = Vec::new();
    let mut at = base.to_string();
    for f in path {
        parts.push(format!("has({at}.{f})"));
        at = format!("{at}.{f}");
    }
    parts.join(" && ")
}

/// A count that may be absent (`default`), an int, or text holding an
/// integer (as `IntOrText::as_i64` reads it); anything else is `unknown`.
pub fn count(base: &str, field: &str, default: i64, unknown: i64) -> String {
    let v = format!("{base}.{field}");
    format!(
        "(has({v}) ? (type({v}) == int ? {v} : (type({v}) == string && {v}.trim().matches('^[+-]?[0-9]{{1,18}}$') ? int({v}.trim()) : {unknown})) : {default})"
    )
}

/// What a count a placeholder holds reads as: no rule's gap arithmetic
/// fires on it (`replicas − maxUnavailable ≥ 1`, `≠ 1`), as lint's
/// verdict is blocked by the placeholder.
pub const UNKNOWN_COUNT: i64 = 1_000_000_000;

// ---------------------------------------------------------------------------
// The engine catalogue (`infera_model::catalogue`), by regular expression over
// the container's command and args joined by spaces: a token is a run of
// non-space characters, quotes at its ends ignored, as `command_tokens`
// splits shell strings.
// ---------------------------------------------------------------------------

/// The container's command and args as one space-separated string.
pub fn command_line(c: &str) -> String {
    format!(
        "({} + {}).join(' ')",
        opt(c, "command", "[]"),
        opt(c, "args", "[]")
    )
}

const Q: &str = r#"['"]*"#;

/// The entrypoint patterns of each engine the catalogue recognizes by
/// command, in the order they are tried.
fn command_patterns() -> [(Engine, String); 6] {
    let start = format!(r"(^|\s){Q}");
    let end = format!(r"{Q}(\s|$)");
    let base = |name: &str| format!(r"{start}(\S*/)?{name}{end}");
    let serve = |name: &str| format!(r"{start}(\S*/)?{name}{Q}\s+{Q}serve{end}");
    [
        (
            catalogue::INFERA,
            format!(r"{start}infera\.engine\.|/infera/engine/"),
        ),
        (
            catalogue::VLLM,
            format!(
                r"{start}vllm\.entrypoints|{start}dynamo\.vllm{end}|{}",
                serve("vllm")
            ),
        ),
        (
            catalogue::SGLANG,
            format!(
                r"{start}sglang\.launch_server|{start}dynamo\.sglang{end}|{}",
                serve("sglang")
            ),
        ),
        (catalogue::TGI, base("text-generation-launcher")),
        (catalogue::TRITON, base("tritonserver")),
        (catalogue::TRTLLM, base("trtllm-serve")),
    ]
}

/// The short name the CEL gives an engine (`''`: none).
pub fn engine_id(e: &Engine) -> &'static str {
    use infera_model::catalogue::EngineKind;
    match e.kind {
        EngineKind::Infera => "infera",
        EngineKind::Vllm => "vllm",
        EngineKind::Sglang => "sglang",
        EngineKind::Tgi => "tgi",
        EngineKind::Nim => "nim",
        EngineKind::Triton => "triton",
        EngineKind::TrtLlm => "trtllm",
    }
}

/// True when the container's entrypoint launches the infera engine.
pub fn runs_infera(c: &str) -> String {
    let (_, pattern) = &command_patterns()[0];
    format!("{}.matches({})", command_line(c), lit(pattern))
}

/// The image's repository: without `@digest` and without `:tag`.
fn image_repo(image: &str) -> String {
    let b = format!("{image}.split('@')[0]");
    format!("({b}.matches(':[^/]*$') ? {b}.substring(0, {b}.lastIndexOf(':')) : {b})")
}

/// The engine an image ships (for a container that keeps its entrypoint):
/// the upstream images, else the words of a rebuild's repository name
/// (`catalogue::REPOSITORY_WORDS`, in order).
fn image_engine(image: &str) -> String {
    let r = image_repo(image);
    let rebuilt = ternaries(
        &r,
        catalogue::REPOSITORY_WORDS
            .map(|(word, e)| (format!(r"(?i)(^|/)([^/]*[-_.])?{word}([-_.][^/]*)?$"), e)),
    );
    format!(
        "({r}.contains('nvcr.io/nim/') ? 'nim' : {r}.contains('tritonserver') ? 'triton' : {r}.contains('text-generation-inference') ? 'tgi' : ({r}.endsWith('vllm/vllm-openai') || {r}.endsWith('vllm/vllm-tpu') || {r}.endsWith('rocm/vllm')) ? 'vllm' : {r}.endsWith('lmsysorg/sglang') ? 'sglang' : {r}.contains('nvidia/tensorrt-llm/') ? 'trtllm' : {rebuilt}'')"
    )
}

/// The engine whose own flags the command line passes
/// (`catalogue::ENGINE_FLAGS`, in order); `''` for none.
fn flags_engine(line: &str) -> String {
    let rows =
        catalogue::ENGINE_FLAGS.map(|(flag, e)| (format!(r"(^|\s){Q}{flag}(={Q}|{Q}(\s|$))"), e));
    format!("({}'')", ternaries(line, rows))
}

/// `S.matches(P1) ? 'e1' : S.matches(P2) ? 'e2' : ` for each (pattern,
/// engine), in order: the head of a chain the caller ends.
fn ternaries(subject: &str, rows: impl IntoIterator<Item = (String, Engine)>) -> String {
    rows.into_iter()
        .map(|(pattern, e)| {
            format!(
                "{subject}.matches({}) ? '{}' : ",
                lit(&pattern),
                engine_id(&e)
            )
        })
        .collect()
}

/// The engine a container runs (`catalogue::recognize`): by command and
/// args; else, when it keeps the image's entrypoint or runs a script (a
/// word ending in `.sh`), by image, then by the engine flags it passes;
/// `''` for none.
pub fn engine_of(c: &str) -> String {
    let line = command_line(c);
    let mut out = String::from("(");
    out.push_str(&ternaries(&line, command_patterns().map(|(e, p)| (p, e))));
    let image = image_engine(&format!("{c}.image"));
    out.push_str(&format!(
        "(has({c}.command) && size({c}.command) > 0 && !{c}.command.exists(t, t.matches({}))) ? '' : (has({c}.image) && {image} != '') ? {image} : {})",
        lit(r"\.sh(\s|$)"),
        flags_engine(&line)
    ));
    out
}

// ---------------------------------------------------------------------------
// Containers, ports and probes
// ---------------------------------------------------------------------------

/// The pod's main container: the first named `main` or `infera`, else the
/// first (`main_container_index`). The pod must have a container.
pub fn main_container(p: &str) -> String {
    let named = "x.name == 'main' || x.name == 'infera'";
    format!(
        "({p}.containers.exists(x, {named}) ? {p}.containers.filter(x, {named})[0] : {p}.containers[0])"
    )
}

/// True when the pod has at least one container.
pub fn has_containers(p: &str) -> String {
    format!("(has({p}.containers) && size({p}.containers) > 0)")
}

/// The readiness port one env entry `e` (named INFERA_READINESS_PORT) sets,
/// with the operator's parser (Go's `strconv.Atoi`, 1..65535); -1 when it
/// is unknowable (valueFrom, or a literal the operator rejects).
pub fn port_of_entry(e: &str) -> String {
    format!(
        "(has({e}.valueFrom) ? -1 : (has({e}.value) && {e}.value.matches('^[+]?0*[0-9]{{1,5}}$') && int({e}.value) >= 1 && int({e}.value) <= 65535) ? int({e}.value) : -1)"
    )
}

/// The readiness port of a container from its own env (first entry wins):
/// 30090 when absent, -1 when unknowable.
pub fn readiness_port(c: &str) -> String {
    let named = format!("e.name == {}", lit(READINESS_PORT_ENV));
    format!(
        "((has({c}.env) && {c}.env.exists(e, {named})) ? {} : {DEFAULT_READINESS_PORT})",
        port_of_entry(&format!("{c}.env.filter(e, {named})[0]"))
    )
}

/// The readiness port of an InferaDeployment service's flat container: the
/// service's `env` replaces a spec-level `envs` entry of the same name (the
/// last service entry wins), else the first spec-level entry.
pub fn flat_readiness_port(svc: &str) -> String {
    let named = format!("e.name == {}", lit(READINESS_PORT_ENV));
    let own = format!("{svc}.env.filter(e, {named})");
    let spec = format!("object.spec.envs.filter(e, {named})");
    format!(
        "((has({svc}.env) && {svc}.env.exists(e, {named})) ? {} : (has(object.spec.envs) && object.spec.envs.exists(e, {named})) ? {} : {DEFAULT_READINESS_PORT})",
        port_of_entry(&format!("{own}[size({own}) - 1]")),
        port_of_entry(&format!("{spec}[0]"))
    )
}

/// True when the container has a readiness probe.
pub fn has_probe(c: &str) -> String {
    format!("has({c}.readinessProbe)")
}

/// True when the container's readiness probe is `httpGet` on `path`.
pub fn probes_path(c: &str, path: &str) -> String {
    format!(
        "({} && {c}.readinessProbe.httpGet.path == {})",
        has_path(c, &["readinessProbe", "httpGet", "path"]),
        lit(path)
    )
}

/// The probe's integer port, or -1 (a named port, or no httpGet).
pub fn probe_port(c: &str) -> String {
    let port = format!("{c}.readinessProbe.httpGet.port");
    format!(
        "(({} && type({port}) == int) ? {port} : -1)",
        has_path(c, &["readinessProbe", "httpGet", "port"])
    )
}

/// True when the container is probed `httpGet /ready` on its own knowable
/// readiness port (`container_probed_on_readiness_port`).
pub fn ready_on_readiness_port(c: &str) -> String {
    let port = readiness_port(c);
    format!(
        "({} && {port} > 0 && {} == {port})",
        probes_path(c, READY_PATH),
        probe_port(c)
    )
}

/// The probe's timeout (the Kubernetes default 1 s when absent).
pub fn probe_timeout(c: &str) -> String {
    opt(&format!("{c}.readinessProbe"), "timeoutSeconds", "1")
}

// ---------------------------------------------------------------------------
// Placement
// ---------------------------------------------------------------------------

/// True when the pod is pinned to one host: nodeSelector
/// `kubernetes.io/hostname`, or one required node-affinity term with a
/// hostname `In` of one value.
pub fn pinned(p: &str) -> String {
    const HOST: &str = "'kubernetes.io/hostname'";
    let req = format!("{p}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution");
    let terms = format!("{req}.nodeSelectorTerms");
    format!(
        "((has({p}.nodeSelector) && type({p}.nodeSelector) == map && {HOST} in {p}.nodeSelector) || ({} && has({req}.nodeSelectorTerms) && size({terms}) == 1 && has({terms}[0].matchExpressions) && {terms}[0].matchExpressions.exists(e, e.key == {HOST} && e.operator == 'In' && has(e.values) && size(e.values) == 1)))",
        has_path(
            p,
            &[
                "affinity",
                "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution"
            ]
        )
    )
}

/// True when `hostNetwork: true`.
pub fn host_network(p: &str) -> String {
    format!("(has({p}.hostNetwork) && {p}.hostNetwork == true)")
}

/// True when a container declares a hostPort.
pub fn declares_host_port(p: &str) -> String {
    format!(
        "{p}.containers.exists(c, has(c.ports) && c.ports.exists(q, has(q.hostPort) && q.hostPort > 0))"
    )
}

/// True when the pod binds host ports as written (hostNetwork turns every
/// container port into one).
pub fn binds_host_ports(p: &str) -> String {
    format!(
        "({} ? {p}.containers.exists(c, has(c.ports) && size(c.ports) > 0) : {})",
        host_network(p),
        declares_host_port(p)
    )
}

// ---------------------------------------------------------------------------
// Upstream rounding (`infera_model::rolling::scaled_value`)
// ---------------------------------------------------------------------------

/// maxSurge (`up`) or maxUnavailable (down) of the value `v` (present) over
/// `total` pods: an int, a percentage rounded, or text read as an integer
/// (0 when it is none).
pub fn scaled(v: &str, total: &str, up: bool) -> String {
    let pct = format!("int({v}.substring(0, size({v}) - 1).trim())");
    let scaled = if up {
        format!("(({pct} * {total} + 99) / 100)")
    } else {
        format!("({pct} * {total} / 100)")
    };
    format!(
        r"(type({v}) == int ? {v} : {v}.matches('^\\s*[+-]?[0-9]{{1,9}}\\s*%$') ? {scaled} : {v}.matches('^\\s*[+-]?[0-9]{{1,18}}\\s*$') ? int({v}.trim()) : 0)"
    )
}
