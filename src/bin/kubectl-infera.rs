//! `kubectl-infera`: the same command line as `infera`, found by kubectl's
//! plugin discovery on `PATH`, so `kubectl infera rollout restart idep/x -n
//! prod` works. kubectl passes every argument after `infera` unchanged.

fn main() -> std::process::ExitCode {
    infera::app::main("kubectl infera")
}
