//! The engine catalogue: the one home for what infera knows about the model
//! servers LLM-serving pods run — how a container is recognized (command,
//! args, image), which flags mean parallelism (and so GPUs on the node),
//! the port it listens on, and which endpoint means "weights loaded" versus
//! "serving". Every lint rule asks here; none matches engine names itself.
//!
//! Sources (checked against each project's documentation):
//! - vLLM: `vllm serve` / `python -m vllm.entrypoints.openai.api_server`,
//!   images `vllm/vllm-openai`, `vllm/vllm-tpu`, `rocm/vllm`; engine args
//!   `--tensor-parallel-size`/`-tp`, `--pipeline-parallel-size`/`-pp`,
//!   `--data-parallel-size`/`-dp` (`--data-parallel-size-local`/`-dpl`
//!   for this node's share); port 8000 (`--port`; `VLLM_PORT` is the
//!   engine's internal distributed port, not the API's); `/health` is the
//!   serving endpoint: the API server listens only after the weights are
//!   loaded, and `/health` answers 503 once the engine core has died, which
//!   `/v1/models` does not (docs.vllm.ai, "Engine Arguments" and
//!   "OpenAI-Compatible Server"; vllm-project/vllm
//!   `vllm/entrypoints/openai/api_server.py`, `health`).
//! - SGLang: `python -m sglang.launch_server`, `sglang serve`, image
//!   `lmsysorg/sglang`; `--tp-size`/`--tp`, `--pp-size`, `--dp-size`/`--dp`
//!   (DP attention shares the TP GPUs); port 30000 (`--port`); `/health`
//!   is the serving endpoint (the HTTP server starts once the scheduler has
//!   loaded the weights); `/health_generate` runs a generation on every
//!   call, too slow for a probe's 1 s default timeout under load
//!   (docs.sglang.ai, "Server Arguments" and "Native APIs";
//!   sgl-project/sglang `python/sglang/srt/entrypoints/http_server.py`).
//! - TGI: `text-generation-launcher`, image
//!   `ghcr.io/huggingface/text-generation-inference` (and cloud builds
//!   named `…text-generation-inference…`); `--num-shard` or env `NUM_SHARD`
//!   (the launcher reads every flag from its env too); port: `--port`/`-p`,
//!   else env `PORT`, which the image sets to 80 (the launcher's own
//!   default is 3000); the Google Cloud builds
//!   (`…huggingface-text-generation-inference…`, built with the router's
//!   `google` feature) listen on `AIP_HTTP_PORT` instead when it is set
//!   (huggingface/text-generation-inference `router/src/server.rs`, `run`:
//!   "use AIP_HTTP_PORT if google feature is enabled"); `/health`
//!   (huggingface.co/docs/text-generation-inference, "Launcher arguments").
//! - NVIDIA NIM: images `nvcr.io/nim/…`; parallelism comes from the model
//!   profile it selects, not from flags; port 8000 (`NIM_SERVER_PORT`);
//!   `/v1/health/live`, `/v1/health/ready` (docs.nvidia.com/nim,
//!   "Environment Variables" and "API reference").
//! - Triton (TensorRT-LLM backend): `tritonserver`, images
//!   `nvcr.io/nvidia/tritonserver`; parallelism is built into the engine;
//!   HTTP port 8000 (`--http-port`; gRPC is 8001 and metrics 8002, which
//!   an HTTP probe must not use); `/v2/health/live`, `/v2/health/ready`
//!   (KServe v2 protocol, Triton "HTTP/REST and GRPC Protocol";
//!   `tritonserver --help`).
//! - TensorRT-LLM: `trtllm-serve` (`trtllm-serve serve MODEL`), images
//!   `nvcr.io/nvidia/tensorrt-llm/release`; port 8000 (`--port`); `/health`
//!   (NVIDIA/TensorRT-LLM `tensorrt_llm/commands/serve.py` at
//!   00209af149e7774406881a37283dce303571eb11, `serve`: `--port` default
//!   8000, `--tp_size`, `--pp_size`; `OpenAIServer`'s `/health`); no drain
//!   setting infera knows of.
//! - Rebuilt images: a container that keeps its image's entrypoint is
//!   recognized by the image's repository name too (the last path part, in
//!   words split on `-`, `_`, `.`: `acme/vllm-cuda12` is vLLM,
//!   `team/sglang-rocm` SGLang, `x/tgi-gaudi` TGI, `y/tritonserver-custom`
//!   Triton, `z/tensorrt-llm`/`trtllm-*` TensorRT-LLM, `nim-*` NIM); an
//!   entrypoint script (a command ending in `.sh`) is recognized by that
//!   name too, or by the engine's own flags in its args (vLLM
//!   `--tensor-parallel-size`, `--gpu-memory-utilization`,
//!   `--max-model-len`; SGLang `--tp-size`, `--mem-fraction-static`; TGI
//!   `--num-shard`, `--model-id`; Triton `--model-repository`,
//!   `--model-store`; TensorRT-LLM `--tp_size`,
//!   `--kv_cache_free_gpu_memory_fraction`).
//! - The infera engine: `python3 -m infera.engine.<backend>`; its readiness
//!   port (30090, `INFERA_READINESS_PORT`) serves `/ready`, which asks the
//!   backend's `/health` (`docs/operator-semantics.md`).
//! - Dynamo workers (`python3 -m dynamo.vllm` / `dynamo.sglang`) take the
//!   backend's own engine flags, so they count as that backend here.
//!
//! Drain on SIGTERM (how long the engine keeps finishing in-flight requests
//! before it exits; [`Engine::drain`]):
//! - vLLM: `--shutdown-timeout N` (seconds); 0, the default, aborts the
//!   requests in flight at once, N > 0 lets them finish for up to N s
//!   (vllm-project/vllm `tests/entrypoints/launchers/test_shutdown.py` at
//!   3be31f741f068bbe2ba42ace84b20f0dc77a2a10: `test_wait_timeout_completes_requests`,
//!   `test_abort_timeout_fails_inflight_requests`; `EngineArgs.shutdown_timeout: int = 0`).
//! - TGI: `--graceful-termination-timeout`/`-g`, env
//!   `GRACEFUL_TERMINATION_TIMEOUT`, default 90: the launcher sends SIGTERM
//!   to the webserver and waits that long before it kills it
//!   (huggingface/text-generation-inference `launcher/src/main.rs` at
//!   db931fcf42da018a3657580c64bf2720f167f9ab, `graceful_termination_timeout`
//!   and `terminate`; the flag came with PR #3126, and the 2.x launchers
//!   before it wait a fixed 90 s, e.g. `launcher/src/main.rs` at v2.1.0 and
//!   v2.3.0: `terminate("webserver", webserver, Duration::from_secs(90))`).
//! - Triton: `--exit-timeout-secs`, default 30: "Timeout (in seconds) when
//!   exiting to wait for in-flight inferences to finish"
//!   (triton-inference-server/server `src/command_line_parser.cc` and
//!   `src/command_line_parser.h`, `exit_timeout_secs_{30}`, at
//!   e1db8a603d863b1317ee859bdeea2be19959462e).
//! - The infera engine: `--drain-timeout` / `INFERA_DRAIN_TIMEOUT`, default
//!   30 (`docs/operator-semantics.md` §2, §6).
//! - SGLang and NIM: no drain setting infera knows of; their drain counts
//!   as 0 s (the budget is then the preStop hook alone).

use k8s_openapi::api::core::v1::Container;

/// A model server infera recognizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// `python3 -m infera.engine.<backend>`.
    Infera,
    Vllm,
    Sglang,
    Tgi,
    Nim,
    Triton,
    /// TensorRT-LLM's own OpenAI server, `trtllm-serve`.
    TrtLlm,
}

/// What the catalogue knows about one engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Engine {
    pub kind: EngineKind,
    /// How messages name it.
    pub name: &'static str,
    /// The HTTP port it listens on unless told otherwise.
    pub default_port: i32,
    /// Answers 200 once the weights are loaded (the engine is up).
    pub loaded_path: &'static str,
    /// Answers 200 when the server takes traffic: what a readiness probe
    /// should ask.
    pub serving_path: &'static str,
    /// How long it finishes in-flight requests after SIGTERM.
    pub drain: DrainSetting,
}

/// Where an engine takes its drain time (seconds it keeps finishing
/// in-flight requests after SIGTERM) from, and its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrainSetting {
    /// The flags that set it (any spelling; the last one given wins).
    pub flags: &'static [&'static str],
    /// The env var that sets it when no flag does.
    pub env: Option<&'static str>,
    /// Seconds when neither is set.
    pub default_seconds: i64,
}

/// An engine infera knows no drain setting of: its drain counts as 0 s.
const NO_DRAIN: DrainSetting = DrainSetting {
    flags: &[],
    env: None,
    default_seconds: 0,
};

/// The infera engine's drain flag, env and default (`docs/operator-semantics.md` §2).
pub const INFERA_DRAIN: DrainSetting = DrainSetting {
    flags: &["--drain-timeout"],
    env: Some("INFERA_DRAIN_TIMEOUT"),
    default_seconds: 30,
};

/// An engine's drain time for one container, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drain {
    pub seconds: i64,
    /// `--shutdown-timeout=120`, `env GRACEFUL_TERMINATION_TIMEOUT`, or
    /// `TGI's default` (for messages).
    pub from: String,
    /// True when the manifest sets it (a flag or env); false for the
    /// engine's default, which can differ between engine versions.
    pub explicit: bool,
}

pub const INFERA: Engine = Engine {
    kind: EngineKind::Infera,
    name: "infera engine",
    default_port: crate::worker::DEFAULT_READINESS_PORT as i32,
    loaded_path: "/health",
    serving_path: "/ready",
    drain: INFERA_DRAIN,
};
pub const VLLM: Engine = Engine {
    kind: EngineKind::Vllm,
    name: "vLLM",
    default_port: 8000,
    loaded_path: "/health",
    serving_path: "/health",
    drain: DrainSetting {
        flags: &["--shutdown-timeout"],
        env: None,
        default_seconds: 0,
    },
};
pub const SGLANG: Engine = Engine {
    kind: EngineKind::Sglang,
    name: "SGLang",
    default_port: 30000,
    loaded_path: "/health",
    serving_path: "/health",
    drain: NO_DRAIN,
};
pub const TGI: Engine = Engine {
    kind: EngineKind::Tgi,
    name: "TGI",
    default_port: 80,
    loaded_path: "/health",
    serving_path: "/health",
    drain: DrainSetting {
        flags: &["--graceful-termination-timeout", "-g"],
        env: Some("GRACEFUL_TERMINATION_TIMEOUT"),
        default_seconds: 90,
    },
};
pub const NIM: Engine = Engine {
    kind: EngineKind::Nim,
    name: "NIM",
    default_port: 8000,
    loaded_path: "/v1/health/live",
    serving_path: "/v1/health/ready",
    drain: NO_DRAIN,
};
pub const TRITON: Engine = Engine {
    kind: EngineKind::Triton,
    name: "Triton",
    default_port: 8000,
    loaded_path: "/v2/health/live",
    serving_path: "/v2/health/ready",
    drain: DrainSetting {
        flags: &["--exit-timeout-secs"],
        env: None,
        default_seconds: 30,
    },
};

pub const TRTLLM: Engine = Engine {
    kind: EngineKind::TrtLlm,
    name: "TensorRT-LLM",
    default_port: 8000,
    loaded_path: "/health",
    serving_path: "/health",
    drain: NO_DRAIN,
};

/// Command and args of a container as one token list; shell strings
/// (`sh -c "exec python3 -m ..."`) are split on whitespace and quotes
/// stripped, so flags inside them are seen too.
/// The tokens borrow from the container (no copy: the catalogue asks for
/// them several times per container of every linted object).
pub fn command_tokens(c: &Container) -> Vec<&str> {
    // One token a part in the common exec form: no regrowth for it.
    let parts = c.command.as_ref().map_or(0, Vec::len) + c.args.as_ref().map_or(0, Vec::len);
    let mut out = Vec::with_capacity(parts);
    for part in c.command.iter().flatten().chain(c.args.iter().flatten()) {
        if may_hold_whitespace(part) && part.contains(char::is_whitespace) {
            out.extend(
                part.split_whitespace()
                    .map(|t| t.trim_matches(|ch| ch == '"' || ch == '\'')),
            );
        } else {
            out.push(part.as_str());
        }
    }
    out
}

/// False when `part` holds no whitespace, found byte by byte: an ASCII
/// part without an ASCII space, tab or newline. Most parts are, and then
/// the Unicode-aware test (decoding every char) is not needed.
fn may_hold_whitespace(part: &str) -> bool {
    part.bytes()
        .any(|b| b.is_ascii_whitespace() || b == 0x0b || !b.is_ascii())
}

/// The file name of a command token (`/usr/bin/tritonserver` → `tritonserver`).
fn base(t: &str) -> &str {
    t.rsplit('/').next().unwrap_or(t)
}

/// The engine a token list launches, by its entrypoint.
fn by_command(tokens: &[&str]) -> Option<Engine> {
    for (i, &module) in tokens.iter().enumerate() {
        let next = tokens.get(i + 1).copied();
        if infera_module(module).is_some() {
            return Some(INFERA);
        }
        if module.starts_with("vllm.entrypoints")
            || module == "dynamo.vllm"
            || base(module) == "vllm" && next == Some("serve")
        {
            return Some(VLLM);
        }
        if module.starts_with("sglang.launch_server")
            || module == "dynamo.sglang"
            || base(module) == "sglang" && next == Some("serve")
        {
            return Some(SGLANG);
        }
        match base(module) {
            "text-generation-launcher" => return Some(TGI),
            "tritonserver" => return Some(TRITON),
            "trtllm-serve" => return Some(TRTLLM),
            _ => {}
        }
    }
    None
}

/// The engine an image ships, for containers that keep its entrypoint:
/// the upstream images, else a rebuild whose repository name says it.
fn by_image(image: &str) -> Option<Engine> {
    let repo = image.split('@').next().unwrap_or(image);
    let repo = match repo.rsplit_once(':') {
        Some((r, tag)) if !tag.contains('/') => r,
        _ => repo,
    };
    if repo.contains("nvcr.io/nim/") {
        Some(NIM)
    } else if repo.contains("tritonserver") {
        Some(TRITON)
    } else if repo.contains("text-generation-inference") {
        Some(TGI)
    } else if repo.ends_with("vllm/vllm-openai")
        || repo.ends_with("vllm/vllm-tpu")
        || repo.ends_with("rocm/vllm")
    {
        Some(VLLM)
    } else if repo.ends_with("lmsysorg/sglang") {
        Some(SGLANG)
    } else if repo.contains("nvidia/tensorrt-llm/") {
        Some(TRTLLM)
    } else {
        by_repository_name(repo)
    }
}

/// Words of a rebuilt image's repository name that say its engine, tried
/// in this order (the policy's CEL tries them in the same order).
pub const REPOSITORY_WORDS: [(&str, Engine); 8] = [
    ("vllm", VLLM),
    ("sglang", SGLANG),
    ("tgi", TGI),
    ("triton", TRITON),
    ("tritonserver", TRITON),
    ("tensorrt", TRTLLM),
    ("trtllm", TRTLLM),
    ("nim", NIM),
];

/// A rebuilt image's engine, from the words of its repository's last path
/// part (`registry/team/vllm-cuda12` → `vllm`, `cuda12`; any case).
fn by_repository_name(repo: &str) -> Option<Engine> {
    let name = repo.rsplit('/').next().unwrap_or(repo);
    REPOSITORY_WORDS.iter().find_map(|(word, e)| {
        name.split(['-', '_', '.'])
            .any(|w| w.eq_ignore_ascii_case(word))
            .then_some(*e)
    })
}

/// Flags only one engine takes, for a script that passes them on, tried
/// in this order (the policy's CEL tries them in the same order).
pub const ENGINE_FLAGS: [(&str, Engine); 11] = [
    ("--tensor-parallel-size", VLLM),
    ("--gpu-memory-utilization", VLLM),
    ("--max-model-len", VLLM),
    ("--tp-size", SGLANG),
    ("--mem-fraction-static", SGLANG),
    ("--num-shard", TGI),
    ("--model-id", TGI),
    ("--model-repository", TRITON),
    ("--model-store", TRITON),
    ("--tp_size", TRTLLM),
    ("--kv_cache_free_gpu_memory_fraction", TRTLLM),
];

/// The engine whose own flags a token list passes (`--tp-size 2` or
/// `--tp-size=2`).
fn by_flags(tokens: &[&str]) -> Option<Engine> {
    ENGINE_FLAGS.iter().find_map(|(flag, e)| {
        tokens
            .iter()
            .any(|t| t.split_once('=').map_or(*t, |(n, _)| n) == *flag)
            .then_some(*e)
    })
}

/// True when a command runs an entrypoint script (a word ending in `.sh`).
pub fn runs_script(command: &[String]) -> bool {
    command
        .iter()
        .any(|t| t.split_whitespace().any(|w| w.ends_with(".sh")))
}

/// The engine a container runs: by its command and args first (a
/// `vllm/vllm-openai` image can run anything); else, when it keeps the
/// image's entrypoint (no `command`) or runs an entrypoint script (a
/// command ending in `.sh`), by its image, then by the engine flags in
/// its args. Any other command (`sleep`, `python3 app.py`) is no engine.
pub fn recognize(c: &Container) -> Option<Engine> {
    let tokens = command_tokens(c);
    if let Some(e) = by_command(&tokens) {
        return Some(e);
    }
    let command = c.command.as_deref().unwrap_or_default();
    if !command.is_empty() && !runs_script(command) {
        return None;
    }
    c.image
        .as_deref()
        .and_then(by_image)
        .or_else(|| by_flags(&tokens))
}

/// The backend an infera engine token names: `infera.engine.<backend>` (a
/// module) or `…/infera/engine/<backend>[.py]` (a path).
fn infera_module(token: &str) -> Option<&str> {
    if let Some(backend) = token.strip_prefix("infera.engine.") {
        return Some(backend);
    }
    let (_, rest) = token.split_once("/infera/engine/")?;
    Some(rest.split(['/', '.']).next().unwrap_or(rest))
}

/// True when the container's entrypoint launches the infera engine.
pub fn runs_infera(c: &Container) -> bool {
    by_command(&command_tokens(c)) == Some(INFERA)
}

/// The backend (`vllm`, `sglang`, …) of a container that launches the
/// infera engine ([`runs_infera`]).
pub fn infera_backend(c: &Container) -> Option<String> {
    if !runs_infera(c) {
        return None;
    }
    command_tokens(c)
        .iter()
        .find_map(|t| infera_module(t).map(str::to_string))
}

/// One flag as written: `--port 8000` or `--port=8000` (`joined`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag<'t> {
    pub name: &'t str,
    /// None for a flag given no value (`--enforce-eager`, or `--tp $TP`
    /// split away by the shell is still a value: only a following flag
    /// leaves it empty).
    pub value: Option<&'t str>,
    pub joined: bool,
}

/// A command line's flags, read as the engines' argparse reads them: the
/// one home for every flag lookup (engines' parallelism, ports and drain,
/// the infera engine's drain timeout, the simulated kubelet's engine). A
/// value is `--flag=value` or the next token, unless that token is another
/// flag (a negative number is a value); the last one given wins.
pub struct Flags<'t>(Vec<Flag<'t>>);

impl<'t> Flags<'t> {
    pub fn parse(tokens: &[&'t str]) -> Self {
        let is_value = |v: &&&str| !v.starts_with('-') || v.parse::<f64>().is_ok();
        let mut out = Vec::new();
        for (i, &t) in tokens.iter().enumerate() {
            if !t.starts_with('-') || t.parse::<f64>().is_ok() {
                continue;
            }
            out.push(match t.split_once('=') {
                Some((name, v)) => Flag {
                    name,
                    value: Some(v),
                    joined: true,
                },
                None => Flag {
                    name: t,
                    value: tokens.get(i + 1).filter(is_value).copied(),
                    joined: false,
                },
            });
        }
        Flags(out)
    }

    /// The last of any of `names` given (argparse: later wins).
    pub fn last(&self, names: &[&str]) -> Option<Flag<'t>> {
        self.0
            .iter()
            .rev()
            .find(|f| names.contains(&f.name))
            .copied()
    }

    /// The value of the last of `names` given, when it has one.
    pub fn value(&self, names: &[&str]) -> Option<&'t str> {
        self.last(names)?.value
    }

    /// Whether `name` is given at all.
    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|f| f.name == name)
    }

    /// The last of `names` as a number: `Ok(None)` when absent, `Err` when
    /// present but not a number (a placeholder, `$TP`).
    fn number(&self, names: &[&str]) -> Result<Option<i64>, ()> {
        match self.last(names) {
            None => Ok(None),
            Some(f) => f
                .value
                .and_then(|v| v.trim().parse().ok())
                .map(Some)
                .ok_or(()),
        }
    }
}

fn vllm_gpus(f: &Flags<'_>) -> Option<i64> {
    let tp = f.number(&["--tensor-parallel-size", "-tp", "--tp"]).ok()?;
    let pp = f
        .number(&["--pipeline-parallel-size", "-pp", "--pp"])
        .ok()?;
    let dp = match f.number(&["--data-parallel-size-local", "-dpl"]).ok()? {
        Some(n) => Some(n),
        None => f.number(&["--data-parallel-size", "-dp", "--dp"]).ok()?,
    };
    tp.unwrap_or(1)
        .checked_mul(pp.unwrap_or(1))?
        .checked_mul(dp.unwrap_or(1))
}

fn sglang_gpus(f: &Flags<'_>) -> Option<i64> {
    let tp = f
        .number(&["--tp-size", "--tp", "--tensor-parallel-size", "-tp"])
        .ok()?;
    let pp = f
        .number(&["--pp-size", "--pp", "--pipeline-parallel-size", "-pp"])
        .ok()?;
    let dp = f
        .number(&["--dp-size", "--dp", "--data-parallel-size", "-dp"])
        .ok()?;
    let dp = if f.has("--enable-dp-attention") {
        1
    } else {
        dp.unwrap_or(1)
    };
    tp.unwrap_or(1)
        .checked_mul(pp.unwrap_or(1))?
        .checked_mul(dp)
}

impl Engine {
    /// True when the engine runs its workers as Ray actors, placed on the
    /// GPUs of the whole Ray cluster rather than its own pod's: vLLM with
    /// `--distributed-executor-backend ray` (vLLM's `ParallelConfig`).
    pub fn spreads_over_ray(&self, c: &Container) -> bool {
        let tokens = command_tokens(c);
        self.kind == EngineKind::Vllm
            && Flags::parse(&tokens).value(&["--distributed-executor-backend"]) == Some("ray")
    }

    /// GPUs the engine's parallelism uses across its group (divide by the
    /// nodes of a multi-node group for one node's share), from its flags
    /// (and env for TGI); None when a factor is unknown (a placeholder, an
    /// env expansion) or the engine takes parallelism from elsewhere (NIM's
    /// profile, Triton's built engine).
    pub fn gpus_needed(&self, c: &Container) -> Option<i64> {
        let tokens = command_tokens(c);
        let f = Flags::parse(&tokens);
        match self.kind {
            EngineKind::Vllm => vllm_gpus(&f),
            EngineKind::Sglang => sglang_gpus(&f),
            EngineKind::Infera => {
                if tokens.iter().any(|t| t.contains("infera.engine.vllm")) {
                    vllm_gpus(&f)
                } else {
                    sglang_gpus(&f)
                }
            }
            EngineKind::Tgi => {
                let env = c
                    .env
                    .iter()
                    .flatten()
                    .find(|e| e.name == "NUM_SHARD")
                    .and_then(|e| e.value.as_deref());
                match f.number(&["--num-shard"]).ok()? {
                    Some(n) => Some(n),
                    None => env.map_or(Some(1), |v| v.trim().parse().ok()),
                }
            }
            EngineKind::Nim | EngineKind::Triton | EngineKind::TrtLlm => None,
        }
    }
}

/// Seconds as engines and the infera engine spell them: `30`, `30s`,
/// `2.5` (rounded up); None for anything else (a placeholder, `$T`).
pub fn parse_seconds(s: &str) -> Option<i64> {
    let s = s.trim();
    let s = s.strip_suffix('s').unwrap_or(s);
    if let Ok(n) = s.parse::<i64>() {
        return Some(n);
    }
    s.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(|f| f.ceil() as i64)
}

impl Engine {
    /// How long this engine finishes in-flight requests after SIGTERM, as
    /// the container's flags and env set it (the last flag wins, then the
    /// env, then the engine's default). None when it is set to something
    /// infera cannot read (`--shutdown-timeout $T`, an env from a Secret).
    pub fn drain(&self, c: &Container) -> Option<Drain> {
        let setting = self.drain;
        let tokens = command_tokens(c);
        if let Some(flag) = Flags::parse(&tokens).last(setting.flags) {
            let value = flag.value?;
            let seconds = parse_seconds(value)?;
            let from = if flag.joined {
                format!("{}={value}", flag.name)
            } else {
                format!("{} {seconds}", flag.name)
            };
            return Some(Drain {
                seconds: seconds.max(0),
                from,
                explicit: true,
            });
        }
        if let Some(name) = setting.env
            && let Some(value) = env_value(c, name)
        {
            let seconds = parse_seconds(value?)?;
            return Some(Drain {
                seconds: seconds.max(0),
                from: format!("env {name}={seconds}"),
                explicit: true,
            });
        }
        Some(Drain {
            seconds: setting.default_seconds,
            from: format!("{}'s default", self.name),
            explicit: false,
        })
    }
}

/// Where a container's engine listens for HTTP, as far as its own flags
/// and env say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenPort {
    /// A literal port, and what set it (`--port=7080`, `env PORT`,
    /// `TGI's default`), for messages.
    Known { port: i32, from: String },
    /// Set by something infera cannot read (`--port $PORT`, a
    /// placeholder, an env from a Secret): the setting as written.
    Unknown { from: String },
}

impl ListenPort {
    pub fn known(&self) -> Option<i32> {
        match self {
            ListenPort::Known { port, .. } => Some(*port),
            ListenPort::Unknown { .. } => None,
        }
    }
}

/// One place a port can be set, in the order the engine reads them.
#[derive(Clone, Copy)]
enum PortSetting {
    /// A command-line flag (any of the spellings).
    Flag(&'static [&'static str]),
    /// An env var of the container.
    Env(&'static str),
}

/// A literal env value of the container (None when absent; `Some(None)`
/// when it comes from a ConfigMap, Secret or field reference).
pub(crate) fn env_value<'c>(c: &'c Container, name: &str) -> Option<Option<&'c str>> {
    c.env
        .iter()
        .flatten()
        .rev()
        .find(|e| e.name == name)
        .map(|e| e.value.as_deref())
}

/// `$(NAME)` in an argument, expanded from the container's literal env as
/// the kubelet does; other text as it is.
fn expand<'c>(c: &'c Container, v: &'c str) -> Option<&'c str> {
    match v.strip_prefix("$(").and_then(|r| r.strip_suffix(')')) {
        Some(name) => env_value(c, name).flatten(),
        None => Some(v),
    }
}

fn parse_port(v: &str) -> Option<i32> {
    v.trim()
        .trim_matches(|ch| ch == '"' || ch == '\'')
        .parse::<i32>()
        .ok()
        .filter(|p| (1..=65535).contains(p))
}

/// True for the Google Cloud builds of TGI (the router built with its
/// `google` feature), which listen on `AIP_HTTP_PORT` when it is set.
fn google_tgi(c: &Container) -> bool {
    c.image
        .as_deref()
        .is_some_and(|i| i.contains("huggingface-text-generation-inference"))
}

impl Engine {
    /// The settings that choose the HTTP port, first match wins.
    fn port_settings(&self, c: &Container) -> Vec<PortSetting> {
        match self.kind {
            EngineKind::Vllm | EngineKind::Sglang | EngineKind::TrtLlm => {
                vec![PortSetting::Flag(&["--port"])]
            }
            EngineKind::Tgi => {
                let mut v = Vec::new();
                if google_tgi(c) {
                    v.push(PortSetting::Env("AIP_HTTP_PORT"));
                }
                v.push(PortSetting::Flag(&["--port", "-p"]));
                v.push(PortSetting::Env("PORT"));
                v
            }
            EngineKind::Nim => vec![PortSetting::Env("NIM_SERVER_PORT")],
            EngineKind::Triton => vec![PortSetting::Flag(&["--http-port"])],
            EngineKind::Infera => vec![PortSetting::Env(crate::worker::READINESS_PORT_ENV)],
        }
    }

    /// The port the engine in `c` serves HTTP on: its flags (`--port N`,
    /// `--port=N`, the last one wins), then its env, then its default.
    pub fn listen_port(&self, c: &Container) -> ListenPort {
        let tokens = command_tokens(c);
        let f = Flags::parse(&tokens);
        for setting in self.port_settings(c) {
            let (raw, from) = match setting {
                PortSetting::Flag(names) => {
                    let Some(Flag { name, value, .. }) = f.last(names) else {
                        continue;
                    };
                    let raw = value.and_then(|v| expand(c, v));
                    (
                        raw,
                        format!("{name} {}", value.unwrap_or(""))
                            .trim_end()
                            .to_string(),
                    )
                }
                PortSetting::Env(name) => match env_value(c, name) {
                    None => continue,
                    Some(v) => (v, format!("env {name}")),
                },
            };
            return match raw.and_then(parse_port) {
                Some(port) => ListenPort::Known { port, from },
                None => ListenPort::Unknown { from },
            };
        }
        ListenPort::Known {
            port: self.default_port,
            from: format!("{}'s default", self.name),
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn drain_comes_from_the_flag_then_the_env_then_the_default() {
        let vllm = container(
            "vllm/vllm-openai",
            &["vllm", "serve", "m"],
            &["--shutdown-timeout", "120"],
        );
        let d = VLLM.drain(&vllm).unwrap();
        assert_eq!(
            (d.seconds, d.explicit, d.from.as_str()),
            (120, true, "--shutdown-timeout 120")
        );
        let bare = container("vllm/vllm-openai", &["vllm", "serve", "m"], &[]);
        assert_eq!(VLLM.drain(&bare).unwrap().seconds, 0);
        let tgi = container(
            "ghcr.io/huggingface/text-generation-inference:3",
            &[],
            &["-g=30"],
        );
        assert_eq!(TGI.drain(&tgi).unwrap().seconds, 30);
        let mut tgi_env = container("ghcr.io/huggingface/text-generation-inference:3", &[], &[]);
        let d = TGI.drain(&tgi_env).unwrap();
        assert_eq!((d.seconds, d.explicit), (90, false));
        tgi_env.env = Some(vec![k8s_openapi::api::core::v1::EnvVar {
            name: "GRACEFUL_TERMINATION_TIMEOUT".into(),
            value: Some("15".into()),
            ..Default::default()
        }]);
        assert_eq!(
            TGI.drain(&tgi_env).unwrap().from,
            "env GRACEFUL_TERMINATION_TIMEOUT=15"
        );
        let triton = container(
            "nvcr.io/nvidia/tritonserver:25.01",
            &["tritonserver"],
            &["--exit-timeout-secs=$(T)"],
        );
        assert_eq!(TRITON.drain(&triton), None, "a value infera cannot read");
        let sglang = container(
            "lmsysorg/sglang",
            &["python3", "-m", "sglang.launch_server"],
            &[],
        );
        assert_eq!(SGLANG.drain(&sglang).unwrap().seconds, 0);
    }
    use super::*;

    fn container(image: &str, command: &[&str], args: &[&str]) -> Container {
        let strings =
            |v: &[&str]| (!v.is_empty()).then(|| v.iter().map(|s| (*s).to_string()).collect());
        Container {
            name: "c".into(),
            image: Some(image.into()),
            command: strings(command),
            args: strings(args),
            ..Container::default()
        }
    }

    /// Shell strings split on any whitespace `char::is_whitespace` knows
    /// (ASCII or not), quotes stripped; a part without whitespace is one
    /// token as written.
    #[test]
    fn command_tokens_split_shell_strings_on_any_whitespace() {
        let table: [(&[&str], &[&str]); 6] = [
            (&["vllm", "serve", "m"], &["vllm", "serve", "m"]),
            (&["vllm serve  m"], &["vllm", "serve", "m"]),
            (&["a\tb\nc"], &["a", "b", "c"]),
            (&["a\u{0b}b"], &["a", "b"]),
            (&["a\u{a0}b", "c\u{3000}d"], &["a", "b", "c", "d"]),
            (
                &["--served-model-name=\"é\"", "'x y'"],
                &["--served-model-name=\"é\"", "x", "y"],
            ),
        ];
        for (args, want) in table {
            assert_eq!(command_tokens(&container("x", &[], args)), want, "{args:?}");
        }
    }

    /// (image, command, args, what the catalogue recognizes).
    type Row<'a> = (&'a str, &'a [&'a str], &'a [&'a str], Option<EngineKind>);

    #[test]
    fn recognizes_each_engine_by_command_or_image() {
        let table: [Row<'_>; 14] = [
            (
                "x",
                &["python3", "-m", "infera.engine.sglang"],
                &[],
                Some(EngineKind::Infera),
            ),
            ("x", &["vllm", "serve"], &["m"], Some(EngineKind::Vllm)),
            (
                "x",
                &["/bin/sh", "-c"],
                &["vllm serve m --port 8000"],
                Some(EngineKind::Vllm),
            ),
            (
                "x",
                &["python3", "-m", "vllm.entrypoints.openai.api_server"],
                &[],
                Some(EngineKind::Vllm),
            ),
            (
                "x",
                &["python3", "-m", "sglang.launch_server"],
                &[],
                Some(EngineKind::Sglang),
            ),
            ("x", &["sglang", "serve"], &[], Some(EngineKind::Sglang)),
            (
                "x",
                &["text-generation-launcher"],
                &[],
                Some(EngineKind::Tgi),
            ),
            (
                "x",
                &["/opt/tritonserver/bin/tritonserver"],
                &[],
                Some(EngineKind::Triton),
            ),
            (
                "vllm/vllm-openai:v0.9.0",
                &[],
                &["--model", "m"],
                Some(EngineKind::Vllm),
            ),
            (
                "ghcr.io/huggingface/text-generation-inference:3.0",
                &[],
                &[],
                Some(EngineKind::Tgi),
            ),
            (
                "nvcr.io/nim/meta/llama-3.1-8b-instruct:1.1.0",
                &[],
                &[],
                Some(EngineKind::Nim),
            ),
            (
                "nvcr.io/nvidia/tritonserver:24.05-trtllm-python-py3",
                &[],
                &[],
                Some(EngineKind::Triton),
            ),
            // An engine image running something else is not that engine.
            ("vllm/vllm-openai:latest", &["sleep", "infinity"], &[], None),
            ("nginx:1.27", &[], &[], None),
        ];
        for (image, command, args, want) in table {
            let got = recognize(&container(image, command, args)).map(|e| e.kind);
            assert_eq!(got, want, "{image} {command:?} {args:?}");
        }
    }

    /// Rebuilt images by their repository name, `trtllm-serve`, and
    /// entrypoint scripts by the image or the engine's flags in args.
    #[test]
    fn recognizes_rebuilt_images_scripts_and_engine_flags() {
        let table: [Row<'_>; 18] = [
            (
                "registry.example.com/ml/vllm-cuda12:0.9",
                &[],
                &["--model", "m"],
                Some(EngineKind::Vllm),
            ),
            (
                "ghcr.io/acme/Custom_VLLM:1",
                &[],
                &[],
                Some(EngineKind::Vllm),
            ),
            (
                "quay.io/team/sglang-rocm:v0.4",
                &[],
                &[],
                Some(EngineKind::Sglang),
            ),
            ("acme/tgi-gaudi:2.0", &[], &[], Some(EngineKind::Tgi)),
            ("acme/triton-llm:24.05", &[], &[], Some(EngineKind::Triton)),
            (
                "nvcr.io/nvidia/tensorrt-llm/release:0.20.0",
                &[],
                &[],
                Some(EngineKind::TrtLlm),
            ),
            (
                "acme/trtllm-serve-image:1",
                &[],
                &[],
                Some(EngineKind::TrtLlm),
            ),
            ("acme/nim-llama3:1", &[], &[], Some(EngineKind::Nim)),
            (
                "x",
                &["trtllm-serve"],
                &["serve", "m", "--port", "8000"],
                Some(EngineKind::TrtLlm),
            ),
            (
                "x",
                &["/usr/local/bin/trtllm-serve", "m"],
                &[],
                Some(EngineKind::TrtLlm),
            ),
            // An entrypoint script: the image names the engine, or its flags do.
            (
                "acme/vllm-rebuild:1",
                &["/entrypoint.sh"],
                &["m"],
                Some(EngineKind::Vllm),
            ),
            (
                "acme/llm:1",
                &["/bin/bash", "/opt/start.sh"],
                &["--model-repository=/models"],
                Some(EngineKind::Triton),
            ),
            (
                "acme/llm:1",
                &["/start.sh"],
                &["--tensor-parallel-size", "2"],
                Some(EngineKind::Vllm),
            ),
            (
                "acme/llm:1",
                &["/start.sh"],
                &["--tp-size", "2"],
                Some(EngineKind::Sglang),
            ),
            (
                "acme/llm:1",
                &[],
                &["--model-id", "m", "--num-shard", "2"],
                Some(EngineKind::Tgi),
            ),
            // A words-only match: `vllm` inside a longer word is not a name.
            ("acme/vllmx:1", &[], &[], None),
            // A command that is no script runs what it says, not the image.
            (
                "acme/vllm-rebuild:1",
                &["python3", "app.py"],
                &["--tensor-parallel-size", "2"],
                None,
            ),
            ("acme/llm:1", &["/start.sh"], &["--model", "m"], None),
        ];
        for (image, command, args, want) in table {
            let got = recognize(&container(image, command, args)).map(|e| e.kind);
            assert_eq!(got, want, "{image} {command:?} {args:?}");
        }
    }

    /// (image, command, args, env, the port the catalogue reads).
    type PortRow<'a> = (
        &'a str,
        &'a [&'a str],
        &'a [&'a str],
        &'a [(&'a str, &'a str)],
        Option<i32>,
    );

    #[test]
    fn listen_port_follows_flags_env_and_defaults() {
        let tgi_gcp = "us-docker.pkg.dev/deeplearning-platform-release/gcr.io/huggingface-text-generation-inference-cu124.2-3";
        let tgi = "ghcr.io/huggingface/text-generation-inference:3.0";
        let table: [PortRow<'_>; 14] = [
            ("x", &["vllm", "serve"], &["m"], &[], Some(8000)),
            (
                "x",
                &["vllm", "serve"],
                &["m", "--port", "7080"],
                &[],
                Some(7080),
            ),
            (
                "x",
                &["vllm", "serve"],
                &["m", "--port=7080"],
                &[],
                Some(7080),
            ),
            // The last flag wins (argparse).
            (
                "x",
                &["vllm", "serve"],
                &["--port=1", "m", "--port", "9"],
                &[],
                Some(9),
            ),
            // VLLM_PORT is not the API port.
            (
                "x",
                &["vllm", "serve"],
                &["m"],
                &[("VLLM_PORT", "1234")],
                Some(8000),
            ),
            (
                "x",
                &["vllm", "serve"],
                &["--port", "$(P)"],
                &[("P", "7000")],
                Some(7000),
            ),
            ("x", &["vllm", "serve"], &["--port", "${P}"], &[], None),
            (
                "x",
                &["python3", "-m", "sglang.launch_server"],
                &[],
                &[],
                Some(30000),
            ),
            (
                "x",
                &["sglang", "serve"],
                &["--port", "8000"],
                &[],
                Some(8000),
            ),
            (tgi, &[], &[], &[], Some(80)),
            (tgi, &[], &[], &[("PORT", "8080")], Some(8080)),
            (
                tgi,
                &[],
                &["--port", "3000"],
                &[("PORT", "8080")],
                Some(3000),
            ),
            (
                tgi_gcp,
                &[],
                &[],
                &[("AIP_HTTP_PORT", "8000"), ("PORT", "8080")],
                Some(8000),
            ),
            // Triton's HTTP port, not gRPC's 8001.
            (
                "x",
                &["tritonserver"],
                &["--model-repository=/m"],
                &[],
                Some(8000),
            ),
        ];
        for (image, command, args, env, want) in table {
            let mut c = container(image, command, args);
            c.env = Some(
                env.iter()
                    .map(|(k, v)| k8s_openapi::api::core::v1::EnvVar {
                        name: (*k).into(),
                        value: Some((*v).into()),
                        ..Default::default()
                    })
                    .collect(),
            );
            let engine = recognize(&c).expect("an engine");
            assert_eq!(
                engine.listen_port(&c).known(),
                want,
                "{image} {command:?} {args:?} {env:?}"
            );
        }
        // AIP_HTTP_PORT means nothing to the upstream image.
        let mut c = container(tgi, &[], &[]);
        c.env = Some(vec![k8s_openapi::api::core::v1::EnvVar {
            name: "AIP_HTTP_PORT".into(),
            value: Some("8000".into()),
            ..Default::default()
        }]);
        assert_eq!(TGI.listen_port(&c).known(), Some(80));
        let triton = container("x", &["tritonserver", "--http-port=8080"], &[]);
        assert_eq!(
            TRITON.listen_port(&triton),
            ListenPort::Known {
                port: 8080,
                from: "--http-port 8080".into()
            }
        );
    }

    #[test]
    fn parallelism_flags_per_engine() {
        let gpus = |image: &str, command: &[&str], args: &[&str]| {
            let c = container(image, command, args);
            recognize(&c).and_then(|e| e.gpus_needed(&c))
        };
        let py = ["python3", "-m"];
        let table: [(&[&str], &[&str], Option<i64>); 9] = [
            (
                &["vllm", "serve"],
                &["m", "--tensor-parallel-size", "4"],
                Some(4),
            ),
            (&["vllm", "serve"], &["m", "-tp=2", "-pp", "2"], Some(4)),
            (
                &["vllm", "serve"],
                &["m", "-tp", "2", "--data-parallel-size", "4", "-dpl", "2"],
                Some(4),
            ),
            (
                &["vllm", "serve"],
                &["m", "--tensor-parallel-size", "$(TP)"],
                None,
            ),
            (&["sglang", "serve"], &["--tp", "4", "--dp", "2"], Some(8)),
            (
                &["sglang", "serve"],
                &["--tp", "4", "--dp", "2", "--enable-dp-attention"],
                Some(4),
            ),
            (
                &["text-generation-launcher"],
                &["--num-shard", "2"],
                Some(2),
            ),
            (&["text-generation-launcher"], &[], Some(1)),
            (&["tritonserver"], &["--model-repository=/m"], None),
        ];
        for (command, args, want) in table {
            assert_eq!(gpus("x", command, args), want, "{command:?} {args:?}");
        }
        let mut tgi = container("ghcr.io/huggingface/text-generation-inference:2", &[], &[]);
        tgi.env = Some(vec![k8s_openapi::api::core::v1::EnvVar {
            name: "NUM_SHARD".into(),
            value: Some("4".into()),
            ..Default::default()
        }]);
        assert_eq!(TGI.gpus_needed(&tgi), Some(4));
        // The infera engine reads its backend's flags.
        let infera: [(&[&str], Option<i64>); 4] = [
            (&["infera.engine.sglang", "--tp-size", "8"], Some(8)),
            (&["infera.engine.sglang", "--tp-size", "<TP>"], None),
            (
                &[
                    "infera.engine.sglang",
                    "--tp",
                    "4",
                    "--dp",
                    "2",
                    "--enable-dp-attention",
                ],
                Some(4),
            ),
            (
                &[
                    "infera.engine.vllm",
                    "--tensor-parallel-size=2",
                    "-pp",
                    "2",
                    "--data-parallel-size",
                    "4",
                    "--data-parallel-size-local",
                    "2",
                ],
                Some(8),
            ),
        ];
        for (args, want) in infera {
            assert_eq!(gpus("x", &py, args), want, "{args:?}");
        }
    }

    #[test]
    fn flags_read_as_argparse_reads_them() {
        // (command line, names, the value read)
        let cases: &[(&str, &[&str], Option<&str>)] = &[
            ("--port 8000", &["--port"], Some("8000")),
            ("--port=8000", &["--port"], Some("8000")),
            ("--port 1 --port=2", &["--port"], Some("2")),
            ("-p 1 --port 2", &["--port", "-p"], Some("2")),
            ("--port --model m", &["--port"], None),
            ("--shutdown-timeout -1", &["--shutdown-timeout"], Some("-1")),
            ("--tp $TP", &["--tp"], Some("$TP")),
            ("serve --port", &["--port"], None),
            ("serve m", &["--port"], None),
        ];
        for (line, names, want) in cases {
            let tokens: Vec<&str> = line.split(' ').collect();
            let flags = Flags::parse(&tokens);
            assert_eq!(flags.value(names), *want, "{line}");
        }
        let tokens = ["--enforce-eager", "-7", "--port=80"];
        let flags = Flags::parse(&tokens);
        assert!(flags.has("--enforce-eager") && !flags.has("-7"));
        let port = flags.last(&["--port"]).unwrap();
        assert!(port.joined && port.name == "--port");
        assert_eq!(flags.number(&["--port"]), Ok(Some(80)));
        assert_eq!(Flags::parse(&["--tp", "$TP"]).number(&["--tp"]), Err(()));
    }
}
