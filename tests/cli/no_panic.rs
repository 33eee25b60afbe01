//! The fuzz target's entry point on stable: 2 000 byte strings derived
//! from the documents of real manifests (flipped bytes, inserted YAML tokens, cut and
//! spliced files, odd scalars), each linted and printed in every format. None
//! may panic. The seed is fixed, so a failure names a case that fails again;
//! `cargo +nightly fuzz run lint` (see `fuzz/`) searches much further.

use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SEED: u64 = 0x1fe7_a5ee;
/// Mutations per test (two tests).
const CASES: usize = 1000;

/// Tokens that make YAML and the rules take other paths.
const TOKENS: &[&str] = &[
    "\n---\n",
    "\n...\n",
    "\n- ",
    ": ",
    "{",
    "}",
    "[",
    "]",
    ",",
    "&a ",
    "*a",
    "<<: *a\n",
    "!!str ",
    "!!int ",
    "|\n",
    ">-\n",
    "\"",
    "'",
    "#",
    "\t",
    "\r\n",
    "\u{feff}",
    "é",
    "\u{1F680}",
    "\0",
    "~",
    "null",
    "-1",
    "0",
    "99999999999999999999",
    "1e400",
    ".nan",
    "${X}",
    "<NODE>",
    "{{ .Values.x }}",
    "kind: List\nitems:\n",
    "skipReadinessProbe: true",
    "numberOfNodes: 2",
    "hostNetwork: true",
    "INFERA_READINESS_PORT",
    "valueFrom: {}",
    "timeoutSeconds: 1",
    "kubernetes.io/hostname",
    "amd.com/gpu",
    "--tp-size",
    "infera.engine.vllm",
    "infera.amd.com/lint-ignore: \"IR001/",
];

fn seeds() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in [root.join("tests/fixtures"), root.join("tests/golden/input")] {
        if let Ok(entries) = std::fs::read_dir(&dir) {
            files.extend(
                entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "yaml")),
            );
        }
    }
    files.sort();
    // One document a seed: small inputs keep the debug-build test fast.
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    for text in files.iter().filter_map(|p| std::fs::read_to_string(p).ok()) {
        seeds.extend(
            text.split("\n---")
                .filter(|doc| doc.contains("kind:"))
                .map(|doc| doc.as_bytes().to_vec()),
        );
    }
    assert!(!seeds.is_empty(), "no manifests to mutate");
    seeds
}

fn mutate(rng: &mut ChaCha8Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut bytes = seeds[rng.random_range(0..seeds.len())].clone();
    for _ in 0..rng.random_range(1..=2) {
        let len = bytes.len();
        let at = rng.random_range(0..=len);
        match rng.random_range(0..9) {
            // Flip a few bytes.
            0 => {
                for _ in 0..rng.random_range(1..=8) {
                    if let Some(b) = bytes.get_mut(rng.random_range(0..len.max(1))) {
                        *b ^= 1 << rng.random_range(0..8);
                    }
                }
            }
            // Insert a token.
            1 | 2 => {
                let token = TOKENS[rng.random_range(0..TOKENS.len())].as_bytes();
                bytes.splice(at..at, token.iter().copied());
            }
            // Delete a range.
            3 => {
                let end = (at + rng.random_range(0..64)).min(len);
                bytes.drain(at..end);
            }
            // Truncate.
            4 => bytes.truncate(at),
            // Splice another file in.
            5 => {
                let other = &seeds[rng.random_range(0..seeds.len())];
                let from = rng.random_range(0..=other.len());
                bytes.truncate(at);
                bytes.extend_from_slice(&other[from..]);
            }
            // Shift the indentation of one line.
            6 => {
                let start = bytes[..at]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |i| i + 1);
                if rng.random_bool(0.5) {
                    bytes.splice(start..start, *b"  ");
                } else if bytes.get(start) == Some(&b' ') {
                    bytes.remove(start);
                }
            }
            // Duplicate a line (duplicate keys, repeated list items).
            7 => {
                let start = bytes[..at]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |i| i + 1);
                let end = bytes[at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(len, |i| at + i + 1);
                let line = bytes[start..end].to_vec();
                bytes.splice(end..end, line);
            }
            // A few random bytes.
            _ => {
                let noise: Vec<u8> = (0..rng.random_range(1..16)).map(|_| rng.random()).collect();
                bytes.splice(at..at, noise);
            }
        }
    }
    bytes
}

/// Lint `CASES` mutations drawn with `seed` (and the seeds themselves).
fn run(seed: u64) {
    let seeds = seeds();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut inputs: Vec<Vec<u8>> = seeds.clone();
    inputs.extend((0..CASES).map(|_| mutate(&mut rng, &seeds)));
    let (mut with_findings, mut with_errors) = (0, 0);
    for (case, input) in inputs.iter().enumerate() {
        let outcome =
            std::panic::catch_unwind(|| infera_lint::lint_bytes_through_every_printer(input))
                .unwrap_or_else(|_| {
                    let path = std::env::temp_dir()
                        .join(format!("infera-no-panic-{seed:#x}-case-{case}.yaml"));
                    let _ = std::fs::write(&path, input);
                    panic!(
                        "case {case} (seed {seed:#x}) panicked; its input is in {}",
                        path.display()
                    )
                });
        with_findings += usize::from(!outcome.findings.is_empty());
        with_errors += usize::from(!outcome.input_errors.is_empty());
    }
    // The mutations must reach the rules, not only the parser's errors.
    assert!(
        with_findings > inputs.len() / 20,
        "{with_findings} with findings"
    );
    assert!(with_errors > inputs.len() / 20, "{with_errors} with errors");
}

// Two halves, so the test harness runs them on two threads.
#[test]
fn mutated_manifests_never_panic_first_half() {
    run(SEED);
}

#[test]
fn mutated_manifests_never_panic_second_half() {
    run(SEED + 1);
}
