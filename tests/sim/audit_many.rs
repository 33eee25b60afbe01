//! `infera audit` of several targets in one run, against `infera sim`
//! (in-process, real HTTP): named targets, `-l SELECTOR`, `-A`; a verdict
//! per target, the worst exit code overall, and one pod watch for all.

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use infera_audit::exit::Exit;
use infera_audit::{Outcome, Report, Selected, Target};
use infera_cluster::connect_with;
use infera_sim::{RunningSim, SimOptions};
use infera_sim_core::kind::Kind;
use infera_sim_scenario::Scenario;
use serde_json::Value;

/// Two InferaDeployments (one rolls old-pod-first: a gap per role) and a
/// plain Deployment in `llm`, all labelled `model=kimi`; one more `kimi`
/// Deployment in `side`; one unlabelled InferaDeployment in `llm`.
const SCENARIO: &str = include_str!("../data/audit-many.yaml");

/// Every Deployment the scenario should have once the operator rendered
/// the three InferaDeployments' workers, all available.
fn settled(sim: &RunningSim) -> bool {
    let store = sim.store();
    let rendered = |idep: &str| {
        store
            .list(Kind::Deployment, Some("llm"))
            .0
            .iter()
            .filter(|d| {
                d.pointer("/metadata/labels/infera.amd.com~1deployment")
                    .and_then(Value::as_str)
                    == Some(idep)
            })
            .count()
    };
    rendered("good") == 2
        && rendered("gap") == 2
        && rendered("other") == 1
        && infera::demo::steady(store, "llm")
        && infera::demo::steady(store, "side")
}

async fn start(speed: f64) -> RunningSim {
    let scenario = Scenario::from_yaml("many", SCENARIO).unwrap_or_else(|e| panic!("{e}"));
    let sim = RunningSim::start(SimOptions::new(scenario, speed))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let started = std::time::Instant::now();
    while !settled(&sim) {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the scenario never settled"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    sim
}

/// [`start`], and the simulator's kubeconfig in a temporary directory.
async fn start_with_kubeconfig(speed: f64) -> (RunningSim, tempfile::TempDir, PathBuf) {
    let sim = start(speed).await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig)
        .unwrap_or_else(|e| panic!("{e}"));
    (sim, dir, kubeconfig)
}

/// Restart every worker of the InferaDeployment `name` (as `kubectl apply`).
fn restart_idep(sim: &RunningSim, name: &str) {
    sim.store()
        .mutate(Kind::InferaDeployment, Some("llm"), name, |v| {
            for s in ["prefill", "decode"] {
                v["spec"]["services"][s]["podLabels"]["infera.amd.com/restarted-at"] =
                    "20261203T000000Z".into();
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

fn restart_deployment(sim: &RunningSim, ns: &str, name: &str) {
    sim.store()
        .mutate(Kind::Deployment, Some(ns), name, |v| {
            v["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] =
                "2026-12-03T00:00:00Z".into();
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

fn role<'a>(report: &'a Report, role: &str) -> &'a infera_audit::RoleReport {
    report
        .roles
        .iter()
        .find(|r| r.role == role)
        .unwrap_or_else(|| panic!("no role {role} in {}", report.to_json()))
}

/// Three targets rolled at once, audited `--until-complete` in one run:
/// each gets its own verdict and outcome; the run's exit is the worst.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_targets_one_run_a_verdict_each_worst_exit() {
    const SPEED: f64 = 200.0;
    let sim = start(SPEED).await;
    let config = sim.client_config().await.unwrap_or_else(|e| panic!("{e}"));
    let conn = connect_with(config, Some("infera-sim".into()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let conn = infera_cluster::Connection {
        namespace: "llm".into(),
        ..conn
    };
    let watches_before = sim.store().request_counts();
    restart_idep(&sim, "good");
    restart_idep(&sim, "gap");
    restart_deployment(&sim, "llm", "web");
    let selected: Vec<Selected> = ["idep/good", "idep/gap", "deploy/web"]
        .iter()
        .map(|t| Selected {
            namespace: "llm".into(),
            target: Target::parse(t).unwrap_or_else(|e| panic!("{e}")),
        })
        .collect();
    let mut opts = infera_audit::Options::for_duration("", Duration::from_secs(3600));
    opts.until_complete = true;
    let many = infera_audit::audit_many_with(
        &conn,
        &opts,
        &selected,
        false,
        SPEED,
        &|line| eprintln!("{line}"),
        std::future::pending(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let json = many.try_to_json().unwrap_or_else(|e| panic!("{e}"));
    let [good, gap, web] = &many.reports[..] else {
        panic!("three reports: {json}")
    };
    for r in [good, gap, web] {
        assert_eq!(r.outcome, Outcome::Complete, "{json}");
        assert!(r.samples >= 5, "{json}");
        // Each target saw its own rollout begin and end.
        assert!(
            r.steps.iter().any(|s| s.kind == "rollout-complete"),
            "{json}"
        );
    }
    for name in ["prefill", "decode"] {
        let (g, b) = (role(good, name), role(gap, name));
        assert_eq!(
            (g.min_ready_exact, g.min_routable_exact),
            (Some(1), Some(1)),
            "{json}"
        );
        assert_eq!(
            (b.min_ready_exact, b.min_routable_exact),
            (Some(0), Some(0)),
            "{json}"
        );
        assert!(
            b.longest_gap_s > 100.0,
            "old-pod-first: dark for the weight load: {json}"
        );
    }
    // 2 replicas, maxUnavailable 25% rounds down to 0: never below 2.
    assert_eq!(role(web, "web").min_ready_exact, Some(2), "{json}");
    assert_eq!(
        (good.exit(), gap.exit(), web.exit()),
        (Exit::Ok, Exit::Findings, Exit::Ok)
    );
    assert_eq!(many.exit(), Exit::Findings);
    assert_eq!(
        many.sentence(),
        "3 targets, 2 held the floor of 1 Ready and routable per role; idep/gap fell below"
    );
    // The steps stay with their target: gap's Deployments are not good's.
    assert!(
        good.steps
            .iter()
            .all(|s| s.service == "prefill" || s.service == "decode"),
        "{json}"
    );
    assert!(web.steps.iter().all(|s| s.service == "web"), "{json}");
    // One chart: a panel per target and role, in selection order.
    let combined = many.combined();
    let panels: Vec<&str> = combined.roles.iter().map(|r| r.role.as_str()).collect();
    assert_eq!(
        panels,
        [
            "idep/good prefill",
            "idep/good decode",
            "idep/gap prefill",
            "idep/gap decode",
            "deploy/web web"
        ]
    );
    // One pod watch, one Deployment watch, one InferaDeployment watch for
    // the three (the simulated world's own watches run on: count ours as
    // the difference, which their steady streams do not move).
    let after = sim.store().request_counts();
    let delta =
        |k: &str| after.get(k).copied().unwrap_or(0) - watches_before.get(k).copied().unwrap_or(0);
    assert_eq!(delta("watch pods"), 1, "{after:?}");
    assert_eq!(delta("watch deployments"), 1, "{after:?}");
    assert_eq!(delta("watch inferadeployments"), 1, "{after:?}");
    sim.shutdown().await;
}

fn infera(kubeconfig: &Path, args: &[&str]) -> std::process::Output {
    Command::cargo_bin("infera")
        .unwrap_or_else(|e| panic!("{e}"))
        .arg("-v")
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The `infera::http` request lines of `-v` that start a pod watch.
fn pod_watches(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            l.contains("infera::http: GET /api/v1/")
                && l.contains("pods?")
                && l.contains("watch=true")
        })
        .collect()
}

/// Exit 0 and exactly one pod watch, the one at `path` (the `-v` request
/// line); the run's stdout.
fn exit_0_with_one_pod_watch(out: &std::process::Output, path: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let watches = pod_watches(&stderr);
    assert_eq!(watches.len(), 1, "{stderr}");
    assert!(watches[0].contains(path), "{stderr}");
    stdout
}

/// The real binary: named targets in one namespace (one namespaced pod
/// watch), and `-l model=kimi -A` (one cluster-wide watch) selecting the
/// labelled targets of both namespaces and not the unlabelled one nor the
/// operator's own Deployments; one table, a verdict each, JSON `targets`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_named_targets_and_selector_across_namespaces() {
    let (sim, dir, kubeconfig) = start_with_kubeconfig(50.0).await;
    let (k, d) = (kubeconfig.clone(), dir.path().to_path_buf());
    let (out, json) = tokio::task::spawn_blocking(move || {
        let report = d.join("named.json");
        let timeline = d.join("named.svg");
        let out = infera(
            &k,
            &[
                "audit",
                "idep/good",
                "idep/gap",
                "deploy/web",
                "-n",
                "llm",
                "--for",
                "2s",
                "--report",
                report.to_str().unwrap_or_default(),
                "--timeline",
                timeline.to_str().unwrap_or_default(),
            ],
        );
        assert!(timeline.is_file());
        (out, std::fs::read_to_string(report).unwrap_or_default())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let stdout = exit_0_with_one_pod_watch(&out, "GET /api/v1/namespaces/llm/pods?");
    for line in [
        "idep/good: ",
        "idep/gap: ",
        "deploy/web: ",
        "overall: 3 targets, 3 held",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(line)),
            "{line}: {stdout}"
        );
    }
    let doc: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(doc["exit_code"], 0);
    let targets: Vec<&str> = doc["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["target"].as_str())
        .collect();
    assert_eq!(targets, ["idep/good", "idep/gap", "deploy/web"]);
    assert_eq!(doc["targets"][0]["roles"][0]["role"], "prefill");

    let k = kubeconfig.clone();
    let out = tokio::task::spawn_blocking(move || {
        infera(&k, &["audit", "-l", "model=kimi", "-A", "--for", "1s"])
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let stdout = exit_0_with_one_pod_watch(&out, "GET /api/v1/pods?");
    let verdicts: Vec<&str> = stdout
        .lines()
        .filter(|l| !l.starts_with(['│', '┌', '├', '╞', '└']))
        .filter_map(|l| l.split_once(": ").map(|(t, _)| t))
        .filter(|t| t.contains('/'))
        .collect();
    assert_eq!(
        verdicts,
        [
            "idep/gap (llm)",
            "idep/good (llm)",
            "deploy/web (llm)",
            "deploy/side (side)"
        ],
        "{stdout}"
    );
    sim.shutdown().await;
}

/// A gap in one target and none in another: the run exits 1, the worst.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_exit_code_is_the_worst_target() {
    let (sim, dir, kubeconfig) = start_with_kubeconfig(50.0).await;
    let page = dir.path().join("night.html");
    let err_log = dir.path().join("audit.err");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_infera"))
        .args([
            "-v",
            "audit",
            "idep/good",
            "idep/gap",
            "-n",
            "llm",
            "--for",
            "12s",
        ])
        .arg("--report")
        .arg(&page)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&err_log).unwrap_or_else(|e| panic!("{e}")))
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    // Roll both once the audit watches (its pod list is in: the watch
    // request that follows it is logged).
    let started = std::time::Instant::now();
    while pod_watches(&std::fs::read_to_string(&err_log).unwrap_or_default()).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the audit never watched"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    restart_idep(&sim, "good");
    restart_idep(&sim, "gap");
    let audit = tokio::task::spawn_blocking(move || child.wait_with_output());
    let out = audit
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = std::fs::read_to_string(&err_log).unwrap_or_default();
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("overall: 2 targets, 1 held the floor of 1 Ready and routable per role; idep/gap fell below"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("idep/good: ") && l.contains("never fewer than 1 Ready")),
        "{stdout}"
    );
    let html = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{e}"));
    assert!(html.contains("<ul id=\"verdicts\">"), "{html}");
    assert!(
        html.contains("role idep/gap decode"),
        "a panel per target and role"
    );
    sim.shutdown().await;
}

/// Bad target syntax, an unknown target, TARGETs mixed with `-l`, a
/// selector that selects nothing: one `error:` line each, exit 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_and_unknown_targets_are_one_line_exit_2() {
    let (sim, _dir, kubeconfig) = start_with_kubeconfig(200.0).await;
    let cases: [(&[&str], &str); 5] = [
        (
            &["audit", "idep/good", "pod/x", "-n", "llm", "--for", "1s"],
            "error: cannot read target `pod/x`: use idep/NAME, inferadeployment/NAME or deploy/NAME",
        ),
        (
            &[
                "audit",
                "idep/good",
                "idep/nope",
                "-n",
                "llm",
                "--for",
                "1s",
            ],
            "error: inferadeployments \"nope\" not found in namespace \"llm\"",
        ),
        (
            &["audit", "idep/good", "-l", "model=kimi", "--for", "1s"],
            "error: give TARGETs or -l SELECTOR / -A, not both",
        ),
        (
            &["audit", "-l", "model=none", "-n", "llm", "--for", "1s"],
            "error: no InferaDeployment or Deployment matches -l model=none in namespace \"llm\"",
        ),
        (
            &[
                "audit",
                "idep/good",
                "deploy/web",
                "--role",
                "a=app=x",
                "-n",
                "llm",
                "--for",
                "1s",
            ],
            "error: --role applies to one plain Deployment",
        ),
    ];
    for (args, want) in cases {
        let k = kubeconfig.clone();
        let argv: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let out = tokio::task::spawn_blocking(move || {
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            infera(&k, &argv)
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{args:?}: {stderr}");
        assert!(errors[0].starts_with(want), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    sim.shutdown().await;
}
