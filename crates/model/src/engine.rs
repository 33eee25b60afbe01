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
//!   for this node's share); port 8000 (`--port`); `/health` answers once
//!   the engine is up (the API server listens only after the weights are
//!   loaded), `/v1/models` lists what it serves
//!   (docs.vllm.ai, "Engine Arguments" and "OpenAI-Compatible Server").
//! - SGLang: `python -m sglang.launch_server`, `sglang serve`, image
//!   `lmsysorg/sglang`; `--tp-size`/`--tp`, `--pp-size`, `--dp-size`/`--dp`
//!   (DP attention shares the TP GPUs); port 30000 (`--port`); `/health`,
//!   `/health_generate` runs one generation (docs.sglang.ai, "Server
//!   Arguments"; sglang `serve` CLI).
//! - TGI: `text-generation-launcher`, image
//!   `ghcr.io/huggingface/text-generation-inference` (and cloud builds
//!   named `…text-generation-inference…`); `--num-shard` or env `NUM_SHARD`
//!   (the launcher reads every flag from its env too); port 80 in the image
//!   (`PORT`; the launcher's own default is 3000); `/health`
//!   (huggingface.co/docs/text-generation-inference, "Launcher arguments").
//! - NVIDIA NIM: images `nvcr.io/nim/…`; parallelism comes from the model
//!   profile it selects, not from flags; port 8000 (`NIM_SERVER_PORT`);
//!   `/v1/health/live`, `/v1/health/ready` (docs.nvidia.com/nim,
//!   "Environment Variables" and "API reference").
//! - Triton (TensorRT-LLM backend): `tritonserver`, images
//!   `nvcr.io/nvidia/tritonserver`; parallelism is built into the engine;
//!   HTTP port 8000 (`--http-port`); `/v2/health/live`, `/v2/health/ready`
//!   (KServe v2 protocol, Triton "HTTP/REST and GRPC Protocol").
//! - The infera engine: `python3 -m infera.engine.<backend>`; its readiness
//!   port (30090, `INFERA_READINESS_PORT`) serves `/ready`, which asks the
//!   backend's `/health` (`docs/operator-semantics.md`).
//! - Dynamo workers (`python3 -m dynamo.vllm` / `dynamo.sglang`) take the
//!   backend's own engine flags, so they count as that backend here.

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
}

pub const INFERA: Engine = Engine {
    kind: EngineKind::Infera,
    name: "infera engine",
    default_port: crate::worker::DEFAULT_READINESS_PORT as i32,
    loaded_path: "/health",
    serving_path: "/ready",
};
pub const VLLM: Engine = Engine {
    kind: EngineKind::Vllm,
    name: "vLLM",
    default_port: 8000,
    loaded_path: "/health",
    serving_path: "/v1/models",
};
pub const SGLANG: Engine = Engine {
    kind: EngineKind::Sglang,
    name: "SGLang",
    default_port: 30000,
    loaded_path: "/health",
    serving_path: "/health_generate",
};
pub const TGI: Engine = Engine {
    kind: EngineKind::Tgi,
    name: "TGI",
    default_port: 80,
    loaded_path: "/health",
    serving_path: "/health",
};
pub const NIM: Engine = Engine {
    kind: EngineKind::Nim,
    name: "NIM",
    default_port: 8000,
    loaded_path: "/v1/health/live",
    serving_path: "/v1/health/ready",
};
pub const TRITON: Engine = Engine {
    kind: EngineKind::Triton,
    name: "Triton",
    default_port: 8000,
    loaded_path: "/v2/health/live",
    serving_path: "/v2/health/ready",
};

/// Command and args of a container as one token list; shell strings
/// (`sh -c "exec python3 -m ..."`) are split on whitespace and quotes
/// stripped, so flags inside them are seen too.
pub fn command_tokens(c: &Container) -> Vec<String> {
    let mut out = Vec::new();
    for part in c.command.iter().flatten().chain(c.args.iter().flatten()) {
        if part.contains(char::is_whitespace) {
            out.extend(
                part.split_whitespace()
                    .map(|t| t.trim_matches(|ch| ch == '"' || ch == '\'').to_string()),
            );
        } else {
            out.push(part.clone());
        }
    }
    out
}

/// The file name of a command token (`/usr/bin/tritonserver` → `tritonserver`).
fn base(t: &str) -> &str {
    t.rsplit('/').next().unwrap_or(t)
}

/// The engine a token list launches, by its entrypoint.
fn by_command(tokens: &[String]) -> Option<Engine> {
    for (i, t) in tokens.iter().enumerate() {
        let next = tokens.get(i + 1).map(String::as_str);
        let module = t.as_str();
        if module.starts_with("infera.engine.") || module.contains("/infera/engine/") {
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
            _ => {}
        }
    }
    None
}

/// The engine an image ships, for containers that keep its entrypoint.
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
    } else {
        None
    }
}

/// The engine a container runs: by its command and args first (a
/// `vllm/vllm-openai` image can run anything), else by its image when it
/// keeps the image's entrypoint (no `command`).
pub fn recognize(c: &Container) -> Option<Engine> {
    if let Some(e) = by_command(&command_tokens(c)) {
        return Some(e);
    }
    if c.command.as_ref().is_some_and(|cmd| !cmd.is_empty()) {
        return None;
    }
    c.image.as_deref().and_then(by_image)
}

/// True when the container's entrypoint launches the infera engine.
pub fn runs_infera(c: &Container) -> bool {
    by_command(&command_tokens(c)) == Some(INFERA)
}

/// Flags of a token list as (name, value); `--flag=value` and `--flag value`.
fn flags(tokens: &[String]) -> Vec<(&str, Option<&str>)> {
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if !t.starts_with('-') {
            continue;
        }
        match t.split_once('=') {
            Some((k, v)) => out.push((k, Some(v))),
            None => {
                let v = tokens
                    .get(i + 1)
                    .filter(|v| !v.starts_with('-'))
                    .map(String::as_str);
                out.push((t.as_str(), v));
            }
        }
    }
    out
}

/// The last value of any of `names` (argparse: later wins): `Ok(None)`
/// when absent, `Err` when present but not a number (a placeholder, `$TP`).
fn flag_value(flags: &[(&str, Option<&str>)], names: &[&str]) -> Result<Option<i64>, ()> {
    let found = flags
        .iter()
        .rev()
        .find(|(k, _)| names.contains(k))
        .map(|(_, v)| *v);
    match found {
        None => Ok(None),
        Some(Some(v)) => v.trim().parse::<i64>().map(Some).map_err(|_| ()),
        Some(None) => Err(()),
    }
}

fn vllm_gpus(f: &[(&str, Option<&str>)]) -> Option<i64> {
    let tp = flag_value(f, &["--tensor-parallel-size", "-tp", "--tp"]).ok()?;
    let pp = flag_value(f, &["--pipeline-parallel-size", "-pp", "--pp"]).ok()?;
    let dp = match flag_value(f, &["--data-parallel-size-local", "-dpl"]).ok()? {
        Some(n) => Some(n),
        None => flag_value(f, &["--data-parallel-size", "-dp", "--dp"]).ok()?,
    };
    tp.unwrap_or(1)
        .checked_mul(pp.unwrap_or(1))?
        .checked_mul(dp.unwrap_or(1))
}

fn sglang_gpus(f: &[(&str, Option<&str>)]) -> Option<i64> {
    let tp = flag_value(f, &["--tp-size", "--tp", "--tensor-parallel-size", "-tp"]).ok()?;
    let pp = flag_value(f, &["--pp-size", "--pp", "--pipeline-parallel-size", "-pp"]).ok()?;
    let dp = flag_value(f, &["--dp-size", "--dp", "--data-parallel-size", "-dp"]).ok()?;
    let dp = if f.iter().any(|(k, _)| *k == "--enable-dp-attention") {
        1
    } else {
        dp.unwrap_or(1)
    };
    tp.unwrap_or(1)
        .checked_mul(pp.unwrap_or(1))?
        .checked_mul(dp)
}

impl Engine {
    /// GPUs the engine's parallelism uses across its group (divide by the
    /// nodes of a multi-node group for one node's share), from its flags
    /// (and env for TGI); None when a factor is unknown (a placeholder, an
    /// env expansion) or the engine takes parallelism from elsewhere (NIM's
    /// profile, Triton's built engine).
    pub fn gpus_needed(&self, c: &Container) -> Option<i64> {
        let tokens = command_tokens(c);
        let f = flags(&tokens);
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
                match flag_value(&f, &["--num-shard"]).ok()? {
                    Some(n) => Some(n),
                    None => env.map_or(Some(1), |v| v.trim().parse().ok()),
                }
            }
            EngineKind::Nim | EngineKind::Triton => None,
        }
    }
}

#[cfg(test)]
mod tests {
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
}
