//! `infera`: see `infera::app` (shared with the `kubectl-infera` plugin).

fn main() -> std::process::ExitCode {
    infera::app::main("infera")
}
