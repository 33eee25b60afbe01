//! Shell completions and man pages, generated from `cli.rs`.

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

/// Every generated file: (relative path, contents).
pub fn all_files() -> io::Result<Vec<(String, Vec<u8>)>> {
    let mut files = Vec::new();
    for (shell, name) in SHELLS {
        files.push((format!("completions/{name}"), completion(shell)));
    }
    let cmd = Cli::command();
    man_pages(&cmd, "infera", &mut files)?;
    Ok(files)
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
    for (rel, contents) in all_files()? {
        let path = dir.join(&rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, contents)?;
    }
    Ok(())
}
