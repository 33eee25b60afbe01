//! A worker's KV compatibility identity: what a prefill and a decode must
//! share for the decode to load the prefill's KV cache. The one home of
//! this derivation: the simulator's engines, its kubelet's barrier, and
//! infera's rollout plan (and lint) all read it here.
//!
//! vLLM's NIXL connector compares, at the handshake, a SHA-256 of the vLLM
//! version, the connector version, the model, dtype, KV heads, head size,
//! layers, attention backend, cache dtype and the speculative (EAGLE/MTP)
//! config; a mismatch raises, and the request fails
//! (`kv_load_failure_policy: fail`) or is prefilled again on the decode
//! (`recompute`). Heads, head size and layers follow from the model, and
//! the connector version from the engine version, so from a manifest the
//! identity is: the engine (the catalogue's name; the infera engine with its
//! backend), its version (the image tag or digest), the model, `--dtype`,
//! `--kv-cache-dtype`, the attention backend (`--attention-backend`, or
//! vLLM's `VLLM_ATTENTION_BACKEND`) and the speculative algorithm
//! (`--speculative-algorithm`, `--speculative-config`). A flag not given
//! is its engine's default (`auto`, `none`).
//!
//! The digest is FNV-1a 64 of the fields, not vLLM's SHA-256: it only has
//! to be equal exactly when the fields are.

use k8s_openapi::api::core::v1::Container;
use serde::{Deserialize, Serialize};

use crate::catalogue;

/// One field of the identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    Engine,
    Version,
    Model,
    Dtype,
    KvCacheDtype,
    AttentionBackend,
    Speculative,
}

impl Field {
    /// Every field, in the order the digest reads them.
    pub const ALL: [Field; 7] = [
        Field::Engine,
        Field::Version,
        Field::Model,
        Field::Dtype,
        Field::KvCacheDtype,
        Field::AttentionBackend,
        Field::Speculative,
    ];

    /// How messages name it.
    pub fn name(self) -> &'static str {
        match self {
            Field::Engine => "engine",
            Field::Version => "engine version",
            Field::Model => "model",
            Field::Dtype => "dtype",
            Field::KvCacheDtype => "KV cache dtype",
            Field::AttentionBackend => "attention backend",
            Field::Speculative => "speculative decoding",
        }
    }
}

/// What a decode does when it cannot load a prefill's KV cache (vLLM's
/// `kv_load_failure_policy`, in `--kv-transfer-config`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadFailurePolicy {
    /// The request ends in an error (the default).
    #[default]
    Fail,
    /// The decode prefills the prompt itself: the request succeeds, its
    /// time to first token that of a local prefill.
    Recompute,
}

impl LoadFailurePolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            LoadFailurePolicy::Fail => "fail",
            LoadFailurePolicy::Recompute => "recompute",
        }
    }
}

/// A worker's KV compatibility identity: one value per [`Field`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvIdentity {
    values: [String; 7],
}

impl KvIdentity {
    /// The identity of the engine a container runs; `None` when the
    /// catalogue recognizes no engine in it.
    pub fn of(c: &Container) -> Option<KvIdentity> {
        let engine = catalogue::recognize(c)?;
        let engine = match catalogue::infera_backend(c) {
            Some(backend) => format!("{} ({backend})", engine.name),
            None => engine.name.to_string(),
        };
        let tokens = catalogue::command_tokens(c);
        let flags = catalogue::Flags::parse(&tokens);
        let flag =
            |names: &[&str], default: &str| flags.value(names).unwrap_or(default).to_string();
        let backend_env = catalogue::env_value(c, "VLLM_ATTENTION_BACKEND")
            .flatten()
            .unwrap_or("auto");
        let speculative = flags
            .value(&["--speculative-algorithm", "--speculative-config"])
            .unwrap_or("none");
        Some(KvIdentity {
            values: [
                engine,
                version(c.image.as_deref().unwrap_or_default()),
                flag(&["--model-path", "--model", "--model-id"], "unknown"),
                flag(&["--dtype"], "auto"),
                flag(&["--kv-cache-dtype"], "auto"),
                flag(&["--attention-backend"], backend_env),
                speculative.to_string(),
            ],
        })
    }

    /// One field's value.
    pub fn get(&self, f: Field) -> &str {
        &self.values[f as usize]
    }

    /// The fields whose values differ, in [`Field::ALL`]'s order.
    pub fn differing(&self, other: &KvIdentity) -> Vec<Field> {
        Field::ALL
            .into_iter()
            .filter(|f| self.get(*f) != other.get(*f))
            .collect()
    }

    /// 16 hex digits, equal exactly when every field is.
    pub fn digest(&self) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for v in &self.values {
            for b in v.bytes().chain([0]) {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        format!("{h:016x}")
    }

    /// `engine version 0.9.1 → 0.9.2, KV cache dtype auto → fp8_e4m3`: how
    /// `self` (before) and `other` (after) differ.
    pub fn describe_change(&self, other: &KvIdentity) -> String {
        self.differing(other)
            .into_iter()
            .map(|f| format!("{} {} → {}", f.name(), self.get(f), other.get(f)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// An image's version: its digest, else its tag, else `latest`.
fn version(image: &str) -> String {
    if let Some((_, digest)) = image.split_once('@') {
        return digest.to_string();
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    last.split_once(':')
        .map_or("latest", |(_, tag)| tag)
        .to_string()
}

/// The decode's `kv_load_failure_policy`, read from the JSON of its
/// `--kv-transfer-config` flag ([`LoadFailurePolicy::Fail`] when absent).
pub fn load_failure_policy(c: &Container) -> LoadFailurePolicy {
    let tokens = catalogue::command_tokens(c);
    let flags = catalogue::Flags::parse(&tokens);
    flags
        .value(&["--kv-transfer-config"])
        .and_then(|v| serde_json::from_str::<serde_json::Value>(v).ok())
        .and_then(|v| {
            let policy = v
                .get("kv_load_failure_policy")
                .or_else(|| v.pointer("/kv_connector_extra_config/kv_load_failure_policy"))?;
            serde_json::from_value(policy.clone()).ok()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(image: &str, args: &[&str]) -> Container {
        let mut command = vec!["python3", "-m", "infera.engine.sglang"];
        command.extend_from_slice(args);
        Container {
            name: "main".into(),
            image: Some(image.into()),
            command: Some(command.into_iter().map(String::from).collect()),
            ..Container::default()
        }
    }

    #[test]
    fn identity_reads_image_and_flags() {
        let a = KvIdentity::of(&container("rocm/infera:0.9.1", &["--model-path", "m"]));
        let a = a.unwrap_or_else(|| panic!("an engine"));
        assert_eq!(a.get(Field::Engine), "infera engine (sglang)");
        assert_eq!(a.get(Field::Version), "0.9.1");
        assert_eq!(a.get(Field::Model), "m");
        assert_eq!(a.get(Field::KvCacheDtype), "auto");
        let same = KvIdentity::of(&container("rocm/infera:0.9.1", &["--model-path", "m"]));
        assert_eq!(same.as_ref().map(KvIdentity::digest), Some(a.digest()));
        let fp8 = container(
            "rocm/infera:0.9.1",
            &["--model-path", "m", "--kv-cache-dtype", "fp8_e4m3"],
        );
        let b = KvIdentity::of(&fp8).unwrap_or_else(|| panic!("an engine"));
        assert_eq!(a.differing(&b), [Field::KvCacheDtype]);
        assert_ne!(a.digest(), b.digest());
        assert_eq!(a.describe_change(&b), "KV cache dtype auto → fp8_e4m3");
        let newer = KvIdentity::of(&container(
            "reg:5000/rocm/infera:0.9.2",
            &["--model-path", "m"],
        ));
        let newer = newer.unwrap_or_else(|| panic!("an engine"));
        assert_eq!(a.differing(&newer), [Field::Version]);
        let sleeping = Container {
            command: Some(vec!["sleep".into(), "inf".into()]),
            ..Container::default()
        };
        assert!(KvIdentity::of(&sleeping).is_none());
    }

    #[test]
    fn versions_and_policies() {
        assert_eq!(version("reg:5000/a/b"), "latest");
        assert_eq!(version("a/b@sha256:ab"), "sha256:ab");
        let policy =
            |cfg: &str| load_failure_policy(&container("i", &["--kv-transfer-config", cfg]));
        assert_eq!(
            policy(r#"{"kv_load_failure_policy":"recompute"}"#),
            LoadFailurePolicy::Recompute
        );
        assert_eq!(
            policy(r#"{"kv_connector_extra_config":{"kv_load_failure_policy":"recompute"}}"#),
            LoadFailurePolicy::Recompute
        );
        assert_eq!(policy("not json"), LoadFailurePolicy::Fail);
        assert_eq!(
            load_failure_policy(&container("i", &[])),
            LoadFailurePolicy::Fail
        );
    }
}
