//! The credentials rule end to end: a canary token, client key and
//! certificate in the kubeconfig, then every command that reads a
//! kubeconfig (`audit`, `rollout restart`, `lint --cluster`; `rbac` reads
//! none) is run as the real binary against a broken, an unreachable and a
//! rejecting cluster, and `-vv` on a whole rollout against `infera sim`. The
//! canary must appear nowhere in stdout, stderr or any file written; every
//! error exits 2 with one line naming the kubeconfig.
//!
//! The simulator allows every authenticated request (no RBAC), so the 403
//! (and a 500) come from a small loopback server here that echoes the
//! `Authorization` header back in its Status message.

use std::path::{Path, PathBuf};

use base64::Engine;
use infera_sim::RunningSim;
use infera_sim_core::faults::FaultConfig;
use rand::{Rng, SeedableRng};

use crate::common::sim::{self, Sim};

const CANARY: &str = "CANARY-TOKEN-7f3a9c";

/// A real client certificate and key (so `kube` accepts them and the
/// request reaches the server), and the strings that must never leak.
struct Creds {
    cert_b64: String,
    key_b64: String,
}

impl Creds {
    fn new() -> Creds {
        let cert = rcgen::generate_simple_self_signed(vec!["canary.invalid".to_string()])
            .unwrap_or_else(|e| panic!("{e}"));
        let b64 = |s: String| base64::engine::general_purpose::STANDARD.encode(s);
        Creds {
            cert_b64: b64(cert.cert.pem()),
            key_b64: b64(cert.signing_key.serialize_pem()),
        }
    }

    /// Everything that must not appear: the token, the `*-data` values
    /// (any 24-character window would do; we check two per value) and
    /// their decoded PEM bodies.
    fn canaries(&self) -> Vec<String> {
        let mut out = vec![CANARY.to_string()];
        for data in [&self.cert_b64, &self.key_b64] {
            let mid = data.len() / 2;
            out.push(data.chars().take(24).collect());
            out.push(data.chars().skip(mid).take(24).collect());
            let pem = base64::engine::general_purpose::STANDARD
                .decode(data)
                .unwrap_or_default();
            let pem = String::from_utf8_lossy(&pem).to_string();
            if let Some(line) = pem.lines().nth(1) {
                out.push(line.chars().take(32).collect());
            }
        }
        out
    }
}

/// A kubeconfig for `server`; the user line `extra` is inserted after
/// `token:` (the broken case puts an unclosed quote there).
fn kubeconfig_text(
    server: &str,
    ca: Option<&str>,
    token: &str,
    creds: &Creds,
    broken: bool,
) -> String {
    kubeconfig_in("default", server, ca, token, creds, broken)
}

fn kubeconfig_in(
    namespace: &str,
    server: &str,
    ca: Option<&str>,
    token: &str,
    creds: &Creds,
    broken: bool,
) -> String {
    let ca = ca
        .map(|c| format!("    certificate-authority-data: {c}\n"))
        .unwrap_or_default();
    let cert_line = if broken {
        // The typo: an unclosed quote on the line after `token:`.
        format!("    client-certificate-data: \"{}\n", creds.cert_b64)
    } else {
        format!("    client-certificate-data: {}\n", creds.cert_b64)
    };
    format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n    server: {server}\n{ca}contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n    namespace: {namespace}\nusers:\n- name: u\n  user:\n    token: {token}\n{cert_line}    client-key-data: {}\n",
        creds.key_b64
    )
}

/// The line of `needle` in `text` (1-based).
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .map(|i| i + 1)
        .unwrap_or(0)
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn infera(args: &[&str], dir: &Path) -> Run {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_infera"))
        .args(args)
        .current_dir(dir)
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env("HOME", dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

async fn infera_async(args: Vec<String>, dir: PathBuf) -> Run {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        infera(&args, &dir)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The commands that read a kubeconfig, each writing whatever files it can.
fn commands(kubeconfig: &Path, dir: &Path) -> Vec<(&'static str, Vec<String>)> {
    let k = kubeconfig.display().to_string();
    let file = |name: &str| dir.join(name).display().to_string();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        (
            "audit",
            s(&["audit", "idep/llama", "--for", "2s", "--kubeconfig", &k])
                .into_iter()
                .chain(s(&["--samples", &file("samples.csv")]))
                .collect(),
        ),
        (
            "rollout restart",
            s(&[
                "rollout",
                "restart",
                "idep/llama",
                "--yes",
                "--force",
                "--kubeconfig",
                &k,
                "--report",
                &file("report.json"),
                "--timeline",
                &file("timeline.svg"),
            ]),
        ),
        (
            "lint --cluster",
            s(&["lint", "--cluster", "-o", "json", "--kubeconfig", &k]),
        ),
    ]
}

/// Every file under `dir` except the kubeconfig itself.
fn written_files(dir: &Path, kubeconfig: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path != kubeconfig && path.is_file() {
            let bytes = std::fs::read(&path).unwrap_or_default();
            out.push((path, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    out
}

fn assert_no_canary(what: &str, run: &Run, files: &[(PathBuf, String)], canaries: &[String]) {
    for canary in canaries {
        assert!(
            !run.stdout.contains(canary.as_str()),
            "{what}: stdout leaks {canary}:\n{}",
            run.stdout
        );
        assert!(
            !run.stderr.contains(canary.as_str()),
            "{what}: stderr leaks {canary}:\n{}",
            run.stderr
        );
        for (path, text) in files {
            assert!(
                !text.contains(canary.as_str()),
                "{what}: {} leaks {canary}",
                path.display()
            );
        }
    }
}

/// One error case: each command, quiet and with `-vv`, exits 2; quiet, the
/// whole stderr is one `error:` line naming the file (and `expect`);
/// nothing leaks anywhere.
async fn error_case(case: &str, text: &str, creds: &Creds, expect: &[&str]) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, text).unwrap_or_else(|e| panic!("{e}"));
    for (name, args) in commands(&kubeconfig, dir.path()) {
        for verbose in [false, true] {
            let mut argv = args.clone();
            if verbose {
                argv.insert(0, "-vv".to_string());
            }
            let run = infera_async(argv, dir.path().to_path_buf()).await;
            let what = format!("{case} / {name}{}", if verbose { " -vv" } else { "" });
            assert_eq!(run.code, Some(2), "{what}: {}\n{}", run.stdout, run.stderr);
            let files = written_files(dir.path(), &kubeconfig);
            assert_no_canary(&what, &run, &files, &creds.canaries());
            let errors: Vec<&str> = run
                .stderr
                .lines()
                .filter(|l| l.starts_with("error:"))
                .collect();
            assert_eq!(errors.len(), 1, "{what}: {}", run.stderr);
            if !verbose {
                assert_eq!(run.stderr.trim_end(), errors[0], "{what}: one line");
            }
            let line = errors[0];
            assert!(
                line.contains(&kubeconfig.display().to_string()),
                "{what}: the error names the file: {line}"
            );
            for e in expect {
                assert!(line.contains(e), "{what}: expected {e:?} in {line}");
            }
        }
    }
}

async fn start_sim(token: Option<&str>) -> Sim {
    let mut options = sim::options("pd-1p1d", 200.0);
    options.token = token.map(str::to_string);
    options.faults = FaultConfig::default();
    Sim::with(options).await
}

/// The CA of a TLS sim, read back from the kubeconfig it writes.
fn sim_ca(sim: &RunningSim) -> Option<String> {
    let yaml = sim.kubeconfig_yaml();
    let start = yaml.find("certificate-authority-data")?;
    let rest = yaml[start..].split_once(':')?.1.trim_start();
    let value: String = rest
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '"' && *c != ',' && *c != '}')
        .collect();
    (!value.is_empty()).then_some(value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_kubeconfig_names_file_and_line_never_content() {
    let creds = Creds::new();
    let text = kubeconfig_text("https://127.0.0.1:1", None, CANARY, &creds, true);
    assert!(text.contains(CANARY));
    let quote_line = line_of(&text, "client-certificate-data: \"");
    assert_eq!(line_of(&text, "token:") + 1, quote_line);
    // The parser reports where the unclosed quote runs out (the end of
    // the file) or where it starts: either way a line number, no content.
    error_case("broken kubeconfig", &text, &creds, &[": line "]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_key_data_names_the_field_not_the_value() {
    let mut creds = Creds::new();
    creds.key_b64 = format!("{CANARY}-not-base64");
    let text = kubeconfig_text("https://127.0.0.1:1", None, CANARY, &creds, false);
    error_case("invalid client-key-data", &text, &creds, &["client-key"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_exec_plugin_output_and_args_are_not_shown() {
    let creds = Creds::new();
    let text = kubeconfig_text("http://127.0.0.1:1", None, CANARY, &creds, false).replace(
        &format!("    token: {CANARY}\n"),
        &format!(
            "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: sh\n      args: [\"-c\", \"echo {CANARY}; echo {CANARY} >&2; exit 3\"]\n      interactiveMode: Never\n"
        ),
    );
    assert!(text.contains("exec:"));
    error_case("failing exec plugin", &text, &creds, &["exec plugin `sh`"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_cluster_names_url_and_kubeconfig() {
    let creds = Creds::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("{e}"));
    let server = format!("https://127.0.0.1:{port}");
    let text = kubeconfig_text(&server, None, CANARY, &creds, false);
    error_case("unreachable", &text, &creds, &["cannot reach", &server]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_token_401_from_the_sim() {
    let creds = Creds::new();
    let sim = start_sim(None).await;
    let ca = sim_ca(&sim);
    let text = kubeconfig_text(&sim.url(), ca.as_deref(), CANARY, &creds, false);
    error_case("401 from the sim", &text, &creds, &["401 Unauthorized"]).await;
    sim.shutdown().await;
}

/// A loopback API server that answers `/version` and refuses everything
/// else with `status`, echoing the request's `Authorization` header in the
/// Status message: the worst a real server (or a proxy) could do.
fn echoing_server(status: u16) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let (mut request_line, mut auth) = (String::new(), String::new());
            let _ = reader.read_line(&mut request_line);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line.trim() != "" {
                if line.to_ascii_lowercase().starts_with("authorization:") {
                    auth = line["authorization:".len()..].trim().to_string();
                }
                line.clear();
            }
            let (code, body) = if request_line.starts_with("GET /version") {
                (200, r#"{"major":"1","minor":"33","gitVersion":"v1.33.0","gitCommit":"","gitTreeState":"","buildDate":"","goVersion":"","compiler":"","platform":""}"#.to_string())
            } else {
                let reason = if status == 403 {
                    "Forbidden"
                } else {
                    "InternalError"
                };
                (status, serde_json::json!({
                    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": format!("denied for {auth} (token {})", auth.trim_start_matches("Bearer ")),
                    "reason": reason, "code": status,
                }).to_string())
            };
            let _ = write!(
                &stream,
                "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://127.0.0.1:{port}")
}

/// Runs `case` like [`error_case`] but without requiring the file name in
/// the line (a refusal is about permissions, not about the kubeconfig).
async fn refused_case(case: &str, status: u16, expect: &str) {
    let creds = Creds::new();
    let server = echoing_server(status);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = dir.path().join("kubeconfig");
    let text = kubeconfig_text(&server, None, CANARY, &creds, false);
    std::fs::write(&kubeconfig, text).unwrap_or_else(|e| panic!("{e}"));
    for (name, args) in commands(&kubeconfig, dir.path()) {
        for verbose in [false, true] {
            let mut argv = args.clone();
            if verbose {
                argv.insert(0, "-vv".to_string());
            }
            let run = infera_async(argv, dir.path().to_path_buf()).await;
            let what = format!("{case} / {name}{}", if verbose { " -vv" } else { "" });
            let files = written_files(dir.path(), &kubeconfig);
            assert_no_canary(&what, &run, &files, &creds.canaries());
            assert_eq!(run.code, Some(2), "{what}: {}\n{}", run.stdout, run.stderr);
            let errors: Vec<&str> = run
                .stderr
                .lines()
                .filter(|l| l.starts_with("error:"))
                .collect();
            // `lint --cluster` reports each kind it could not list (and
            // lints the rest: InferaDeployments, Deployments, StatefulSets,
            // LeaderWorkerSets, the budgets and claims the disruption rules
            // judge them with) and the refused discovery of the serving
            // custom resources; the others stop at the first refusal.
            let kinds = if name.starts_with("lint") { 7 } else { 1 };
            assert_eq!(errors.len(), kinds, "{what}: {}", run.stderr);
            assert!(
                errors.iter().all(|e| e.contains(expect)),
                "{what}: {errors:?}"
            );
        }
    }
}

/// The simulator allows every authenticated request, so the 403 comes
/// from a loopback server that also echoes the token back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_403_echoing_the_token() {
    refused_case("403 echoing the token", 403, "forbidden").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_error_echoing_the_token() {
    refused_case("500 echoing the token", 500, "500").await;
}

/// `-vv` on a whole rollout against the sim, the canary being the sim's
/// real token: request lines are logged (so the test can fail), stdout has
/// no log line, and the canary is nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbose_rollout_against_the_sim_logs_requests_not_credentials() {
    let creds = Creds::new();
    let sim = start_sim(Some(CANARY)).await;
    let ca = sim_ca(&sim);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = dir.path().join("kubeconfig");
    let ns = sim.namespace();
    let text = kubeconfig_in(&ns, &sim.url(), ca.as_deref(), CANARY, &creds, false);
    std::fs::write(&kubeconfig, text).unwrap_or_else(|e| panic!("{e}"));
    let (_, argv) = commands(&kubeconfig, dir.path())
        .into_iter()
        .find(|(n, _)| *n == "rollout restart")
        .unwrap_or_else(|| panic!("rollout command"));
    let argv: Vec<String> = std::iter::once("-vv".to_string()).chain(argv).collect();
    let run = infera_async(argv, dir.path().to_path_buf()).await;
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let files = written_files(dir.path(), &kubeconfig);
    assert!(files.len() >= 2, "report and timeline written: {files:?}");
    assert_no_canary("-vv rollout", &run, &files, &creds.canaries());
    for expected in ["infera::http", "GET /api/v1/namespaces/", " 200 ", "PATCH "] {
        assert!(run.stderr.contains(expected), "{expected}:\n{}", run.stderr);
    }
    assert!(
        run.stderr.contains("DEBUG"),
        "-vv is debug:\n{}",
        run.stderr
    );
    assert!(!run.stdout.contains("infera::http"), "logs on stdout");
    assert!(!run.stdout.contains(" INFO "), "logs on stdout");
    // Without -v: no log lines at all.
    let quiet = infera(
        &["lint", "--cluster", "-o", "json", "--kubeconfig"]
            .iter()
            .map(|s| s.to_string())
            .chain([kubeconfig.display().to_string()])
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        dir.path(),
    );
    assert!(!quiet.stderr.contains("infera::http"), "{}", quiet.stderr);
    assert!(
        serde_json::from_str::<serde_json::Value>(&quiet.stdout).is_ok(),
        "{}",
        quiet.stdout
    );
    sim.shutdown().await;
}

/// Seeded mutations of a kubeconfig carrying the canary, through the
/// loading path: whatever the error, its `Display` and `Debug` carry no
/// canary, name the file and fit on one line.
#[test]
fn malformed_kubeconfigs_never_echo_the_canary() {
    let creds = Creds::new();
    let canaries = creds.canaries();
    let good = kubeconfig_text("https://127.0.0.1:1", None, CANARY, &creds, false);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("kubeconfig");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    let inputs: Vec<String> = (0..600).map(|_| mutate(&good, &mut rng)).collect();
    // First the parser alone (it registers no secret, so nothing but the
    // structural rule can keep the canary out), then the whole loading path.
    let mut errors = 0;
    for (i, text) in inputs.iter().chain(&inputs).enumerate() {
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        let result = if i < inputs.len() {
            infera_cluster::read_kubeconfig(&path).map(|_| ())
        } else {
            let args = infera_cluster::ConnectOptions {
                kubeconfig: Some(path.clone()),
                context: None,
                namespace: None,
            };
            runtime
                .block_on(infera_cluster::resolve_config(&args))
                .map(|_| ())
        };
        let Err(err) = result else {
            continue;
        };
        errors += 1;
        let shown = format!("{err} {err:?}");
        for canary in &canaries {
            assert!(
                !shown.contains(canary.as_str()),
                "mutation {i} leaks {canary}: {shown}\n--- input ---\n{text}"
            );
        }
        let display = err.to_string();
        assert!(!display.contains('\n'), "{display}");
        assert!(display.contains(&path.display().to_string()), "{display}");
    }
    assert!(errors > 200, "only {errors} of 1200 loads failed");
}

/// One to three edits that YAML parsers trip over: a stray or deleted
/// quote, colon, bracket or indentation, a duplicated, dropped or
/// truncated line, a tab.
fn mutate(text: &str, rng: &mut impl Rng) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..rng.random_range(1..=3) {
        let i = rng.random_range(0..lines.len());
        let line = lines[i].clone();
        let at = floor_char(&line, rng.random_range(0..=line.len()));
        match rng.random_range(0..9) {
            0 => lines[i].insert(at, '"'),
            1 => lines[i].insert(at, '\''),
            2 => lines[i].insert_str(at, ": "),
            3 => lines[i].insert(
                at,
                ['[', '{', ']', '}', '&', '*', '!', '|'][rng.random_range(0..8)],
            ),
            4 => lines[i] = format!(" {line}"),
            5 => lines[i] = line.trim_start().to_string(),
            6 => lines.insert(i, line),
            7 => lines[i] = line[..at].to_string(),
            _ => lines[i].insert(at, '\t'),
        }
    }
    lines.join("\n") + "\n"
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
