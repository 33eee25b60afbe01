//! `completions/` and `man/` are generated from `src/cli.rs`, the rules table
//! of `docs/lint.md` from the lint rule registry; this fails when any is
//! stale. Regenerate with `cargo run -- generate`.

use std::path::Path;

#[test]
fn completions_man_pages_and_rules_table_are_fresh() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = infera::generate::all_files(root).expect("generate");
    assert!(files.iter().any(|(p, _)| p == "man/infera.1"));
    assert!(files.iter().any(|(p, _)| p == "man/infera-lint.1"));
    assert!(files.iter().any(|(p, _)| p == infera::generate::RULES_DOC));
    let mut stale = Vec::new();
    for (rel, want) in &files {
        match std::fs::read(root.join(rel)) {
            Ok(have) if &have == want => {}
            _ => stale.push(rel.clone()),
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated files (run `cargo run -- generate`): {stale:?}"
    );
}
