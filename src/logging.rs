//! `-v` / `-vv` / `RUST_LOG`: `tracing` logs on stderr, every line through
//! [`infera_cluster::redact::scrub`]. Installed once, by the process entry
//! (`app::main`); the libraries only emit events.

use std::io::Write;

/// The filter for a verbosity: off by default, `-v` info for infera and the
/// request lines, `-vv` debug for infera and `kube`'s watcher. `RUST_LOG`, when set,
/// wins over both.
pub fn filter_for(verbosity: u8) -> &'static str {
    match verbosity {
        0 => "off",
        1 => "infera=info",
        _ => "infera=debug,kube_runtime=debug",
    }
}

/// What a long-running service (`infera monitor`) logs without `-v`: its
/// own state changes (watch down or current again, serving, shutting down).
pub fn service_filter() -> String {
    format!("{}=info", infera_cluster::trace::target::MONITOR)
}

/// Install the stderr subscriber (`service`: [`service_filter`] without
/// `-v`). Never writes to stdout, so `--format json` and `-o json` stay
/// clean.
pub fn init_logging(verbosity: u8, service: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("RUST_LOG") {
        Ok(value) if !value.trim().is_empty() => EnvFilter::try_new(value.trim())
            .unwrap_or_else(|_| EnvFilter::new(filter_for(verbosity))),
        _ if service && verbosity == 0 => EnvFilter::new(service_filter()),
        _ => EnvFilter::new(filter_for(verbosity)),
    };
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| ScrubbingStderr)
        .with_ansi(ansi)
        .with_target(true)
        .try_init();
}

/// stderr, with [`infera_cluster::redact::scrub`] over each formatted event (the fmt layer
/// writes one event per `write` call).
struct ScrubbingStderr;

impl Write for ScrubbingStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().write_all(infera_cluster::redact::scrub(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
