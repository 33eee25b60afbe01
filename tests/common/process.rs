//! Child processes of the tests: the `infera` binary, line by line.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The `infera` binary Cargo built for these tests.
pub fn infera_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_infera"))
}

/// `infera ARGS` with colour off and no inherited kubeconfig.
pub fn infera(args: &[&str]) -> Command {
    let mut cmd = Command::new(infera_bin());
    cmd.args(args)
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("KUBECONFIG");
    cmd
}

/// Forward the child's stdout and stderr lines into one channel.
pub fn lines(child: &mut Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let out = child
        .stdout
        .take()
        .map(|o| Box::new(o) as Box<dyn Read + Send>);
    let err = child
        .stderr
        .take()
        .map(|e| Box::new(e) as Box<dyn Read + Send>);
    for stream in [out, err].into_iter().flatten() {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
    }
    rx
}

/// The child's exit code, killing it (and failing) after `limit`.
pub fn wait_exit(child: &mut Child, limit: Duration) -> i32 {
    let start = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return status.code().unwrap_or(-1);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("infera did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A child killed (and reaped) when dropped: a failing assertion must not
/// leave a long-running child behind (in a lab test it would also hold the
/// machine's lab lock that the parent's `flock` passed down).
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The lines of `rx` up to and including the first that `hit` accepts;
/// none within 60 s panics naming `what` with what was seen.
pub fn read_until(
    rx: &mpsc::Receiver<String>,
    what: &str,
    hit: impl Fn(&str) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("no {what} line; saw:\n{}", seen.join("\n")));
        let done = hit(&line);
        seen.push(line);
        if done {
            return seen;
        }
    }
}
