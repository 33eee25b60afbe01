//! The command-line case builder: what to run, what must come out.
//! `infera(&["lint", "x.yaml"]).status(1).stdout("IR002").run()`.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------
// The case builder
// ---------------------------------------------------------------------------

/// One command-line case: what to run and what must come out.
#[derive(Default)]
pub struct Case {
    args: Vec<String>,
    stdin: Option<String>,
    cwd: Option<PathBuf>,
    env: Vec<(String, String)>,
    env_remove: Vec<String>,
    status: i32,
    stdout_has: Vec<String>,
    stdout_lacks: Vec<String>,
    stderr_has: Vec<String>,
    stderr_lacks: Vec<String>,
    stderr_prefix: Option<String>,
    stderr_one_line: bool,
    stderr_empty: bool,
    golden: Option<String>,
}

pub fn infera(args: &[&str]) -> Case {
    Case {
        args: args.iter().map(|s| s.to_string()).collect(),
        ..Case::default()
    }
}

impl Case {
    /// One more argument (a path, usually).
    pub fn arg(mut self, arg: impl AsRef<std::ffi::OsStr>) -> Self {
        self.args.push(arg.as_ref().to_string_lossy().into_owned());
        self
    }
    pub fn stdin(mut self, text: &str) -> Self {
        self.stdin = Some(text.to_string());
        self
    }
    pub fn cwd(mut self, dir: &Path) -> Self {
        self.cwd = Some(dir.to_path_buf());
        self
    }
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }
    pub fn env_remove(mut self, key: &str) -> Self {
        self.env_remove.push(key.to_string());
        self
    }
    pub fn status(mut self, code: i32) -> Self {
        self.status = code;
        self
    }
    pub fn stdout(mut self, needle: &str) -> Self {
        self.stdout_has.push(needle.to_string());
        self
    }
    pub fn stdout_lacks(mut self, needle: &str) -> Self {
        self.stdout_lacks.push(needle.to_string());
        self
    }
    pub fn stderr(mut self, needle: &str) -> Self {
        self.stderr_has.push(needle.to_string());
        self
    }
    pub fn stderr_lacks(mut self, needle: &str) -> Self {
        self.stderr_lacks.push(needle.to_string());
        self
    }
    pub fn stderr_starts(mut self, prefix: &str) -> Self {
        self.stderr_prefix = Some(prefix.to_string());
        self
    }
    /// The error is exactly one line (what an on-call engineer reads).
    pub fn stderr_one_line(mut self) -> Self {
        self.stderr_one_line = true;
        self
    }
    pub fn stderr_empty(mut self) -> Self {
        self.stderr_empty = true;
        self
    }
    /// Compare stdout with `tests/golden/<name>` (rewritten with UPDATE_GOLDEN=1).
    pub fn golden(mut self, name: &str) -> Self {
        self.golden = Some(name.to_string());
        self
    }

    /// Run and check everything; returns stdout for further checks.
    pub fn run(self) -> String {
        let mut cmd = Command::cargo_bin("infera").expect("binary");
        cmd.args(&self.args)
            .current_dir(self.cwd.as_deref().unwrap_or(root()))
            .env("NO_COLOR", "1")
            .env_remove("CLICOLOR_FORCE")
            .env_remove("KUBECONFIG")
            .timeout(std::time::Duration::from_secs(60));
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        for k in &self.env_remove {
            cmd.env_remove(k);
        }
        if let Some(stdin) = &self.stdin {
            cmd.write_stdin(stdin.clone());
        }
        let out = cmd.output().expect("run infera");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let show = || {
            format!(
                "infera {:?}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
                self.args
            )
        };
        assert_eq!(
            out.status.code(),
            Some(self.status),
            "exit status of {}",
            show()
        );
        for needle in &self.stdout_has {
            assert!(
                stdout.contains(needle),
                "stdout lacks {needle:?}: {}",
                show()
            );
        }
        for needle in &self.stdout_lacks {
            assert!(
                !stdout.contains(needle),
                "stdout has {needle:?}: {}",
                show()
            );
        }
        for needle in &self.stderr_has {
            assert!(
                stderr.contains(needle),
                "stderr lacks {needle:?}: {}",
                show()
            );
        }
        for needle in &self.stderr_lacks {
            assert!(
                !stderr.contains(needle),
                "stderr has {needle:?}: {}",
                show()
            );
        }
        if let Some(prefix) = &self.stderr_prefix {
            assert!(
                stderr.starts_with(prefix),
                "stderr does not start with {prefix:?}: {}",
                show()
            );
        }
        if self.stderr_one_line {
            assert_eq!(
                stderr.trim_end().lines().count(),
                1,
                "stderr not one line: {}",
                show()
            );
        }
        if self.stderr_empty {
            assert!(stderr.is_empty(), "stderr not empty: {}", show());
        }
        if let Some(name) = &self.golden {
            check_golden(name, &stdout);
        }
        stdout
    }
}

pub fn check_golden(name: &str, actual: &str) {
    let path = root().join("tests/golden").join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing golden file {}; run with UPDATE_GOLDEN=1",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "output differs from {} (rerun with UPDATE_GOLDEN=1 if intended)\n--- expected\n{expected}\n--- actual\n{actual}",
        path.display()
    );
}
