//! No function longer than 120 lines, counted as a reader sees it: from the
//! line with `fn` to its closing brace, blank and comment lines included,
//! in every Rust file of the workspace (crates, the binary, tests, benches,
//! examples, the fuzz target). Clippy's `too_many_lines` (120 in the
//! workspace lints) skips blank and comment lines and does not look at
//! tests, so a function can pass it and still not be readable at once.

use std::path::{Path, PathBuf};

use crate::common::case::root;

const MAX_LINES: usize = 120;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') || name == "target" {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The indentation of a line that starts a function with a body (`fn`
/// after optional `pub(..)`, `const`, `async`, `unsafe`), or `None`.
fn fn_start(line: &str) -> Option<&str> {
    let body = line.trim_start();
    let indent = &line[..line.len() - body.len()];
    let mut rest = body;
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    rest.strip_prefix("fn ")?;
    Some(indent)
}

/// (first line, length) of every function of `text` longer than `max`.
fn long_functions(text: &str, max: usize) -> Vec<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(indent) = fn_start(line) else {
            continue;
        };
        // A declaration without a body (a trait's) ends in `;` before any `{`.
        let mut end = None;
        for (j, l) in lines.iter().enumerate().skip(i) {
            if j == i && l.trim_end().ends_with(';') {
                break;
            }
            if j > i && l.trim_end() == format!("{indent}}}") {
                end = Some(j);
                break;
            }
        }
        if let Some(j) = end.filter(|j| j - i + 1 > max) {
            out.push((i + 1, j - i + 1));
        }
    }
    out
}

#[test]
fn the_counter_finds_a_long_function_and_skips_declarations() {
    let body = "    let x = 1;\n".repeat(5);
    let text = format!("trait T {{\n    fn f();\n}}\n\npub async fn g() {{\n{body}}}\n");
    assert_eq!(long_functions(&text, 6), vec![(5, 7)]);
    assert!(long_functions(&text, 7).is_empty());
}

#[test]
fn no_function_is_longer_than_120_lines() {
    let mut files = Vec::new();
    for dir in ["crates", "src", "tests", "benches", "examples", "fuzz"] {
        rust_files(&root().join(dir), &mut files);
    }
    assert!(files.len() > 100, "found {} Rust files", files.len());
    let mut long = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (line, n) in long_functions(&text, MAX_LINES) {
            let rel = file.strip_prefix(root()).unwrap_or(&file).display();
            long.push(format!("{rel}:{line}: {n} lines"));
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_LINES} lines from `fn` to the closing brace (split them):\n{}",
        long.join("\n")
    );
}
