//! Generated files: shell completions and man pages from `cli.rs`, and the
//! rules table of `docs/lint.md` from the lint rule registry.

use std::io;
use std::path::Path;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;

/// Shells we ship completion scripts for, and their file names.
pub const SHELLS: [(Shell, &str); 5] = [
    (Shell::Bash, "infera.bash"),
    (Shell::Zsh, "_infera"),
    (Shell::Fish, "infera.fish"),
    (Shell::Elvish, "infera.elv"),
    (Shell::PowerShell, "_infera.ps1"),
];

/// The completion script for `shell`.
pub fn completion(shell: Shell) -> Vec<u8> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "infera", &mut out);
    out
}

/// The document whose rules table is generated, relative to the checkout.
pub const RULES_DOC: &str = "docs/lint.md";
/// The generated table sits between the line starting with this marker…
pub const RULES_BEGIN: &str = "<!-- rules:begin";
/// …and this line.
pub const RULES_END: &str = "<!-- rules:end -->";

/// Every generated file under the checkout `dir`: (relative path, contents).
/// [`RULES_DOC`] is the file as it is in `dir` with its rules table
/// regenerated (the prose around the table is written by hand); a `dir`
/// without that file (say, a packaging directory) gets only completions and
/// man pages.
pub fn all_files(dir: &Path) -> io::Result<Vec<(String, Vec<u8>)>> {
    let mut files = Vec::new();
    for (shell, name) in SHELLS {
        files.push((format!("completions/{name}"), completion(shell)));
    }
    let cmd = Cli::command();
    man_pages(&cmd, "infera", &mut files)?;
    match std::fs::read_to_string(dir.join(RULES_DOC)) {
        Ok(doc) => files.push((RULES_DOC.to_string(), with_rules_table(&doc)?.into_bytes())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io::Error::new(e.kind(), format!("{RULES_DOC}: {e}"))),
    }
    Ok(files)
}

/// `doc` with the lines between the [`RULES_BEGIN`] and [`RULES_END`]
/// marker lines replaced by the registry's Markdown table (`infera rules`).
pub fn with_rules_table(doc: &str) -> io::Result<String> {
    let missing = |what: &str| {
        io::Error::other(format!(
            "{RULES_DOC}: no `{what}` line; put the rules table between a line starting \
             with `{RULES_BEGIN}` and a line `{RULES_END}`"
        ))
    };
    let begin = doc.find(RULES_BEGIN).ok_or_else(|| missing(RULES_BEGIN))?;
    let table_start = doc[begin..]
        .find('\n')
        .map(|i| begin + i + 1)
        .ok_or_else(|| missing(RULES_END))?;
    let end = doc[table_start..]
        .find(RULES_END)
        .map(|i| table_start + i)
        .ok_or_else(|| missing(RULES_END))?;
    let table = infera_lint::rules_listing(infera_lint::rules::rules(), false);
    Ok(format!("{}{table}{}", &doc[..table_start], &doc[end..]))
}

fn man_pages(
    cmd: &clap::Command,
    name: &str,
    files: &mut Vec<(String, Vec<u8>)>,
) -> io::Result<()> {
    if cmd.is_hide_set() {
        return Ok(());
    }
    let cmd = cmd
        .clone()
        .name(name.to_string())
        .bin_name(name.replace('-', " "));
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut out)?;
    files.push((format!("man/{name}.1"), out));
    for sub in cmd.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        man_pages(sub, &format!("{name}-{}", sub.get_name()), files)?;
    }
    Ok(())
}

/// Write every generated file under `dir`.
pub fn write_all(dir: &Path) -> io::Result<()> {
    for (rel, contents) in all_files(dir)? {
        let path = dir.join(&rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, contents)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const STALE: &str = "# Lint\n\n<!-- rules:begin (generated) -->\n| code | gone |\n<!-- rules:end -->\n\nAfter.\n";

    #[test]
    fn the_rules_table_is_replaced_and_the_prose_kept() {
        let doc = with_rules_table(STALE).expect("markers present");
        assert!(doc.starts_with("# Lint\n\n<!-- rules:begin (generated) -->\n| code "));
        assert!(doc.ends_with("|\n<!-- rules:end -->\n\nAfter.\n"), "{doc}");
        assert!(!doc.contains("| gone |"));
        for rule in infera_lint::rules::rules() {
            assert!(
                doc.contains(&format!("| {} ", rule.code)),
                "{} missing",
                rule.code
            );
            assert!(doc.contains(rule.summary), "{} summary missing", rule.code);
        }
        assert_eq!(with_rules_table(&doc).expect("idempotent"), doc);
    }

    #[test]
    fn a_document_without_markers_is_an_error_naming_them() {
        for doc in ["no table here\n", "<!-- rules:begin -->\n| x |\n"] {
            let err = with_rules_table(doc)
                .expect_err("markers missing")
                .to_string();
            assert!(
                err.contains("docs/lint.md") && err.contains(RULES_END),
                "{err}"
            );
        }
    }
}
