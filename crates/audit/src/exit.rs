//! Exit codes, one table for every command (documented in the README's
//! "Exit codes"): what an outcome means to a shell or CI job. Reports carry
//! the number (`exit_code`); only the binary turns it into the process's
//! exit status.

/// What a command's outcome means to a shell or CI job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Success: nothing at or above the threshold / every role held its floor.
    Ok,
    /// Findings at or above `--fail-on`; or a rollout/audit completed but a
    /// role fell below `--min-ready`.
    Findings,
    /// Usage, input, connection or permission error.
    Usage,
    /// A rollout stalled, was aborted, or timed out.
    Stalled,
    /// Complete, but infera was blind (a partition, a blackhole) while a
    /// role may have fallen below the floor, and the server's timestamps
    /// could not settle it: the minimum cannot be established.
    Unproven,
    /// Interrupted by Ctrl-C (SIGINT).
    Interrupted,
}

impl Exit {
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Findings => 1,
            Exit::Usage => 2,
            Exit::Stalled => 3,
            Exit::Unproven => 4,
            Exit::Interrupted => 130,
        }
    }
}
