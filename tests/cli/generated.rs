//! `completions/` and `man/` are generated from `src/cli.rs`; this fails when
//! they are stale. Regenerate with `cargo run -- generate`.

use std::path::Path;

#[test]
fn completions_and_man_pages_are_fresh() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = infera::generate::all_files().expect("generate");
    assert!(files.iter().any(|(p, _)| p == "man/infera.1"));
    assert!(files.iter().any(|(p, _)| p == "man/infera-lint.1"));
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
