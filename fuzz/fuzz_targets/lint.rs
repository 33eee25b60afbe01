//! Arbitrary bytes as one manifest file, through the loader (split, UTF-8,
//! serde-saphyr with budgets, typed views), every rule and every printer.
//! Any panic, overflow or abort is a bug: bad input must come back as an
//! input error. `tests/cli/no_panic.rs` runs the same entry point on stable.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = infera_lint::lint_bytes_through_every_printer(data);
});
