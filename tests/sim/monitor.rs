//! `infera monitor` (the real binary) against the embedded simulator, held
//! to the real Prometheus tools from Debian's `prometheus` package (2.42):
//! `promtool check metrics` on a live scrape, `promtool test rules` on the
//! printed alert rules, and a real Prometheus server on 127.0.0.1 scraping
//! the monitor every second while an old-pod-first rollout
//! (`pd-1p1d-skip-probe`) leaves each role without a routable pod: the
//! critical alert is read back firing through Prometheus's HTTP API.
//!
//! Without `promtool`/`prometheus` on `PATH` the tests say so and skip;
//! `INFERA_PROMETHEUS_REQUIRED` (set by `.ci/run`) turns that into a failure.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::Value;

use crate::common::process::{Killed, infera, lines, wait_exit};
use crate::common::sim::Sim;

/// `promtool`, or why the test cannot run.
fn prometheus_tool(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        let why = format!("`{name}` is not on PATH (Debian: apt-get install prometheus)");
        if std::env::var_os("INFERA_PROMETHEUS_REQUIRED").is_some() {
            panic!("INFERA_PROMETHEUS_REQUIRED is set but {why}");
        }
        eprintln!("skipping: {why}");
    }
    found
}

/// One HTTP/1.0 GET on loopback: (status, body).
fn http_get(
    addr: SocketAddr,
    path_and_query: &str,
    accept: &str,
) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        s,
        "GET {path_and_query} HTTP/1.0\r\nHost: {addr}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((status, body.to_string()))
}

/// Percent-encode a query value.
fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `infera monitor` on the simulator, on a free loopback port: the child,
/// its output lines and the address it serves.
fn spawn_monitor(sim: &Sim, extra: &[&str]) -> (Killed, Receiver<String>, SocketAddr) {
    let mut args = vec!["monitor", "--listen", "127.0.0.1:0", "-n"];
    let ns = sim.namespace();
    args.push(&ns);
    args.extend_from_slice(extra);
    let mut child = infera(&args)
        .arg("--kubeconfig")
        .arg(sim.kubeconfig())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn infera monitor");
    let rx = lines(&mut child);
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) else {
            continue;
        };
        if let Some(addr) = line
            .strip_prefix("infera monitor: serving http://")
            .and_then(|rest| rest.strip_suffix("/metrics"))
            .and_then(|a| a.parse().ok())
        {
            return (Killed(child), rx, addr);
        }
    }
    let _ = child.kill();
    panic!("infera monitor never said where it serves");
}

/// Scrape until `ok` holds for the body (the watches list first).
fn scrape_until(addr: SocketAddr, accept: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = String::new();
    while Instant::now() < deadline {
        if let Ok((200, body)) = http_get(addr, "/metrics", accept) {
            if ok(&body) {
                return body;
            }
            last = body;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("the scrape never showed what was expected:\n{last}");
}

/// SIGTERM, then the exit code (the grace period: 5 s).
fn terminate(child: &mut Child) -> i32 {
    // SAFETY: kill(2) on our own child's pid.
    let pid = i32::try_from(child.id()).expect("pid");
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    wait_exit(child, Duration::from_secs(5))
}

/// The live scrape passes `promtool check metrics`, in the classic text
/// format (what promtool reads) and as OpenMetrics for Prometheus; it has
/// each role's counts and no pod name; SIGTERM ends it with exit 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_scrape_passes_promtool_check_metrics() {
    let Some(promtool) = prometheus_tool("promtool") else {
        return;
    };
    let sim = Sim::start("pd-1p1d", 20.0).await;
    let (mut child, rx, addr) = spawn_monitor(&sim, &["-v"]);
    let body = tokio::task::spawn_blocking(move || {
        scrape_until(addr, "text/plain", |b| {
            b.contains("infera_role_routable_pods{namespace=\"llm\",workload=\"idep/llama\",role=\"decode\"} 1")
                && b.contains("infera_rollout_in_progress{")
        })
    })
    .await
    .unwrap();
    for role in ["prefill", "decode"] {
        for metric in [
            "infera_role_ready_pods",
            "infera_role_routable_pods",
            "infera_role_desired_replicas",
        ] {
            let series =
                format!("{metric}{{namespace=\"llm\",workload=\"idep/llama\",role=\"{role}\"}} 1");
            assert!(body.contains(&series), "{series} missing:\n{body}");
        }
    }
    assert!(
        body.contains("# TYPE infera_role_gaps_total counter"),
        "{body}"
    );
    assert!(
        body.contains("infera_watch_up{resource=\"pods\"} 1"),
        "{body}"
    );
    for service in ["prefill", "decode"] {
        for pod in sim.pod_names(service) {
            assert!(!body.contains(&pod), "pod name {pod} in the metrics");
        }
    }
    promtool_check_metrics(&promtool, &body);
    let (status, om) = http_get(
        addr,
        "/metrics",
        "application/openmetrics-text;version=1.0.0",
    )
    .unwrap();
    assert_eq!(status, 200);
    assert!(
        om.ends_with("# EOF\n") && om.contains("infera_role_gaps_total{"),
        "{om}"
    );
    assert_eq!(
        terminate(&mut child.0),
        0,
        "SIGTERM ends the monitor cleanly"
    );
    // The credentials rule: the kubeconfig's token is in no metric and no
    // log line.
    let kubeconfig = std::fs::read_to_string(sim.kubeconfig()).unwrap();
    let token = kubeconfig
        .lines()
        .find_map(|l| l.trim().strip_prefix("token:"))
        .map(|t| t.trim().trim_matches('"').to_string())
        .expect("a token in the simulator's kubeconfig");
    let log: Vec<String> = rx.try_iter().collect();
    assert!(!body.contains(&token) && !om.contains(&token));
    assert!(
        log.iter().all(|l| !l.contains(&token)),
        "the token was logged"
    );
    sim.shutdown().await;
}

/// `promtool check metrics` passes `body` (the classic text format).
fn promtool_check_metrics(promtool: &Path, body: &str) {
    let mut check = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn promtool");
    check
        .stdin
        .take()
        .expect("stdin")
        .write_all(body.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}\n{body}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Each alert's expected annotations, rendered for one role.
fn expected_alert(rules: &Value, alert: &str, labels: &[(&str, &str)]) -> Value {
    let rule = rules["groups"][0]["rules"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["alert"] == alert))
        .unwrap_or_else(|| panic!("no alert {alert}"));
    let render = |t: &str| {
        labels.iter().fold(t.to_string(), |acc, (k, v)| {
            acc.replace(&format!("{{{{ $labels.{k} }}}}"), v)
        })
    };
    let mut exp_labels: serde_json::Map<String, Value> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), Value::from(*v)))
        .collect();
    exp_labels.insert("severity".into(), rule["labels"]["severity"].clone());
    serde_json::json!({
        "exp_labels": exp_labels,
        "exp_annotations": {
            "summary": render(rule["annotations"]["summary"].as_str().unwrap_or("")),
            "description": render(rule["annotations"]["description"].as_str().unwrap_or("")),
        }
    })
}

/// `promtool test rules` on the printed rules (production `for:` defaults,
/// `--min-ready 2`): each alert pending, then firing at its `for:`, with
/// its labels and annotations; none where it must not fire.
#[test]
fn printed_rules_pass_promtool_test_rules() {
    let Some(promtool) = prometheus_tool("promtool") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = infera(&[
        "monitor",
        "--print-rules",
        "--format",
        "plain",
        "--min-ready",
        "2",
    ])
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    std::fs::write(dir.path().join("rules.yaml"), &text).unwrap();
    let rules: Value = serde_saphyr::from_str(&text).unwrap();
    let role = |r: &str| format!("{{namespace=\"llm\",workload=\"idep/llama\",role=\"{r}\"}}");
    let probed = |idep: &str, class: &str| {
        format!(
            "infera_requests_total{{namespace=\"llm\",inferadeployment=\"{idep}\",class=\"{class}\"}}"
        )
    };
    let labels = |r: &'static str| {
        [
            ("namespace", "llm"),
            ("workload", "idep/llama"),
            ("role", r),
        ]
    };
    // Minute by minute: decode loses its routable pods at 2m while rolling
    // (Ready 1 < 2 from 2m); prefill is Ready 2 but routable 1 from 0m;
    // mixed has a pod unschedulable for 6m while rolling; the pod watch is
    // down from 1m; idle is scaled to 0 on purpose (no alert).
    let series = serde_json::json!([
        {"series": format!("infera_role_desired_replicas{}", role("decode")), "values": "2 2 2 2 2 2 2 2"},
        {"series": format!("infera_role_routable_pods{}", role("idle")), "values": "0 0 0 0 0 0 0 0"},
        {"series": format!("infera_role_ready_pods{}", role("idle")), "values": "0 0 0 0 0 0 0 0"},
        {"series": format!("infera_role_desired_replicas{}", role("idle")), "values": "0 0 0 0 0 0 0 0"},
        {"series": format!("infera_role_routable_pods{}", role("decode")), "values": "2 2 0 0 0 0 0 0"},
        {"series": format!("infera_role_ready_pods{}", role("decode")), "values": "2 2 1 1 1 1 1 1"},
        {"series": format!("infera_rollout_in_progress{}", role("decode")), "values": "0 1 1 1 1 1 1 1"},
        {"series": format!("infera_role_routable_pods{}", role("prefill")), "values": "1 1 1 1 1 1 1 1"},
        {"series": format!("infera_role_ready_pods{}", role("prefill")), "values": "2 2 2 2 2 2 2 2"},
        {"series": format!("infera_rollout_in_progress{}", role("prefill")), "values": "0 0 0 0 0 0 0 0"},
        {"series": format!("infera_role_routable_pods{}", role("mixed")), "values": "2 2 2 2 2 2 2 2"},
        {"series": format!("infera_role_ready_pods{}", role("mixed")), "values": "2 2 2 2 2 2 2 2"},
        {"series": format!("infera_rollout_in_progress{}", role("mixed")), "values": "1 1 1 1 1 1 1 1"},
        {"series": format!("infera_role_unschedulable_pods{{namespace=\"llm\",workload=\"idep/llama\",role=\"mixed\",reason=\"insufficient_resource\"}}"), "values": "1 1 1 1 1 1 1 1"},
        {"series": "infera_watch_up{resource=\"pods\"}", "values": "1 0 0 0 0 0 0 0"},
        // The probe: llama answers 6 requests a minute and fails one a
        // minute from 3m (1 in 7 > 1 %); steady never fails; quiet sends
        // nothing (0 / 0 is no alert).
        {"series": probed("llama", "ok"), "values": "0+6x20"},
        {"series": probed("llama", "refused"), "values": "0 0 0 1+1x17"},
        {"series": probed("steady", "ok"), "values": "0+6x20"},
        {"series": probed("steady", "refused"), "values": "0x20"},
        {"series": probed("quiet", "ok"), "values": "0x20"},
        {"series": probed("quiet", "refused"), "values": "0x20"},
    ]);
    let mut stalled = expected_alert(&rules, "InferaRolloutStalled", &labels("mixed"));
    stalled["exp_labels"]["reason"] = "insufficient_resource".into();
    if let Some(s) = stalled["exp_annotations"]["summary"].as_str() {
        stalled["exp_annotations"]["summary"] = s
            .replace("{{ $labels.reason }}", "insufficient_resource")
            .into();
    }
    let watch = {
        let mut w = expected_alert(&rules, "InferaMonitorWatchDown", &[("resource", "pods")]);
        w["exp_labels"]["resource"] = "pods".into();
        w
    };
    let cases = serde_json::json!([
        // 1m of no routable pod: pending at 2m30s, firing from 3m.
        {"eval_time": "2m30s", "alertname": "InferaRoleNoRoutablePods", "exp_alerts": []},
        {"eval_time": "3m", "alertname": "InferaRoleNoRoutablePods", "exp_alerts": [expected_alert(&rules, "InferaRoleNoRoutablePods", &labels("decode"))]},
        // Below 2 while rolling from 1m (routable 2, Ready 2 at 1m: not
        // below), from 2m: firing at 3m.
        {"eval_time": "2m", "alertname": "InferaRoleBelowMinReadyDuringRollout", "exp_alerts": []},
        {"eval_time": "3m", "alertname": "InferaRoleBelowMinReadyDuringRollout", "exp_alerts": [expected_alert(&rules, "InferaRoleBelowMinReadyDuringRollout", &labels("decode"))]},
        // Unschedulable while rolling from 0m, `for: 5m`.
        {"eval_time": "4m", "alertname": "InferaRolloutStalled", "exp_alerts": []},
        {"eval_time": "5m", "alertname": "InferaRolloutStalled", "exp_alerts": [stalled]},
        // Ready 2, routable 1 from 0m, `for: 3m`; decode too from 2m (at 5m).
        {"eval_time": "2m", "alertname": "InferaRoleReadyNotRoutable", "exp_alerts": []},
        {"eval_time": "3m", "alertname": "InferaRoleReadyNotRoutable", "exp_alerts": [expected_alert(&rules, "InferaRoleReadyNotRoutable", &labels("prefill"))]},
        {"eval_time": "6m", "alertname": "InferaMonitorWatchDown", "exp_alerts": [watch]},
        // Failing from 3m, `for: 5m`: pending at 7m30s, firing at 8m; only
        // llama (steady fails nothing, quiet sends nothing).
        {"eval_time": "7m30s", "alertname": "InferaRequestFailures", "exp_alerts": []},
        {"eval_time": "8m", "alertname": "InferaRequestFailures", "exp_alerts": [expected_alert(&rules, "InferaRequestFailures", &[("namespace", "llm"), ("inferadeployment", "llama")])]},
        {"eval_time": "15m", "alertname": "InferaRequestFailures", "exp_alerts": [expected_alert(&rules, "InferaRequestFailures", &[("namespace", "llm"), ("inferadeployment", "llama")])]},
    ]);
    let test = serde_json::json!({
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "30s",
        "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": cases}],
    });
    let test_file = dir.path().join("rules_test.yaml");
    std::fs::write(&test_file, serde_json::to_string_pretty(&test).unwrap()).unwrap();
    let out = Command::new(&promtool)
        .args(["test", "rules"])
        .arg(&test_file)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool test rules:\n{}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A free loopback port (bound, then released for Prometheus to take).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Prometheus's answer to `GET path` (`data`), or `Null` while it has none.
fn prometheus_api(addr: SocketAddr, path: &str) -> Value {
    match http_get(addr, path, "application/json") {
        Ok((200, body)) => {
            serde_json::from_str::<Value>(&body).map_or(Value::Null, |v| v["data"].clone())
        }
        _ => Value::Null,
    }
}

/// A real Prometheus on 127.0.0.1 (own temp data dir, 1 s scrape and
/// evaluation) scraping `target`, with the monitor's rules at test `for:`s.
fn start_prometheus(prometheus: &Path, dir: &Path, target: SocketAddr) -> (Child, SocketAddr) {
    let out = infera(&[
        "monitor",
        "--print-rules",
        "--format",
        "plain",
        "--no-routable-for",
        "2s",
        "--below-min-for",
        "1s",
    ])
    .output()
    .unwrap();
    assert!(out.status.success());
    std::fs::write(dir.join("rules.yaml"), &out.stdout).unwrap();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [rules.yaml]\n\
         scrape_configs:\n  - job_name: infera\n    static_configs:\n      - targets: ['{target}']\n"
    );
    std::fs::write(dir.join("prometheus.yml"), config).unwrap();
    let web: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let child = Command::new(prometheus)
        .arg(format!(
            "--config.file={}",
            dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={web}"))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(
            std::fs::File::create(dir.join("prometheus.log")).unwrap(),
        ))
        .spawn()
        .expect("spawn prometheus");
    (child, web)
}

/// Poll Prometheus until `found` gives a value (or `limit` passes).
fn poll<T>(limit: Duration, mut found: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(t) = found() {
            return Some(t);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    None
}

/// Prometheus scrapes the monitor while the simulator rolls
/// `pd-1p1d-skip-probe` old-pod-first: each role is left without a
/// routable pod for the weight load, and `InferaRoleNoRoutablePods`
/// (`for: 2s` here) is read back firing through `/api/v1/alerts`, with the
/// gap counted in `infera_role_gaps_total`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_fires_the_no_routable_alert_during_a_gap() {
    let (Some(_), Some(prometheus)) = (prometheus_tool("promtool"), prometheus_tool("prometheus"))
    else {
        return;
    };
    let sim = Sim::start("pd-1p1d-skip-probe", 14.0).await;
    let (mut monitor, _rx, target) = spawn_monitor(&sim, &[]);
    let dir = tempfile::tempdir().unwrap();
    let (prom, web) = start_prometheus(&prometheus, dir.path(), target);
    let mut prom = Killed(prom);
    let kubeconfig = sim.kubeconfig().to_path_buf();
    let (firing, gaps) = tokio::task::spawn_blocking(move || {
        let up = poll(Duration::from_secs(30), || {
            let q = encode("sum(infera_role_routable_pods)");
            let v = prometheus_api(web, &format!("/api/v1/query?query={q}"));
            (v["result"][0]["value"][1] == "2").then_some(())
        });
        assert!(up.is_some(), "Prometheus never scraped both roles routable");
        let mut roll = infera(&[
            "rollout",
            "restart",
            "idep/llama",
            "--yes",
            "--force",
            "--kubeconfig",
        ])
        .arg(&kubeconfig)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn rollout");
        let firing = poll(Duration::from_secs(45), || {
            let alerts = prometheus_api(web, "/api/v1/alerts");
            alerts["alerts"].as_array().and_then(|a| {
                a.iter()
                    .find(|a| {
                        a["labels"]["alertname"] == "InferaRoleNoRoutablePods"
                            && a["state"] == "firing"
                    })
                    .cloned()
            })
        });
        let gaps = poll(Duration::from_secs(20), || {
            let q = encode("sum(infera_role_gaps_total)");
            let v = prometheus_api(web, &format!("/api/v1/query?query={q}"));
            v["result"][0]["value"][1]
                .as_str()
                .and_then(|s| s.parse::<f64>().ok())
                .filter(|g| *g >= 1.0)
        });
        let _ = roll.kill();
        let _ = roll.wait();
        (firing, gaps)
    })
    .await
    .unwrap();
    let _ = prom.0.kill();
    let _ = prom.0.wait();
    let prom_log = std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();
    let alert =
        firing.unwrap_or_else(|| panic!("InferaRoleNoRoutablePods never fired\n{prom_log}"));
    assert_eq!(alert["labels"]["severity"], "critical", "{alert}");
    assert_eq!(alert["labels"]["namespace"], "llm", "{alert}");
    assert_eq!(alert["labels"]["workload"], "idep/llama", "{alert}");
    assert!(
        ["prefill", "decode"].contains(&alert["labels"]["role"].as_str().unwrap_or("")),
        "{alert}"
    );
    assert!(gaps.is_some(), "no gap counted in infera_role_gaps_total");
    assert_eq!(terminate(&mut monitor.0), 0);
    sim.shutdown().await;
}

/// The API server restarted every 4 s (connections reset) and its history
/// compacted every 2 s (a resumed watch gets 410 Gone): while a watch is
/// down no role count is exported as current and `infera_watch_up` is 0,
/// said in a log line; each time the watches re-list, the counts come back
/// and the unobserved time is counted. (A cut of the network: the same; see
/// docs/monitor.md.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_restarts_and_410s_blind_the_counts_and_a_relist_brings_them_back() {
    let mut options = crate::common::sim::options("pd-1p1d", 20.0);
    options.faults.compact_every = Some(Duration::from_secs(2));
    options.faults.restart_api_every = Some(Duration::from_secs(4));
    let sim = Sim::with(options).await;
    let (mut child, rx, addr) = spawn_monitor(&sim, &[]);
    let all_up = |b: &str| {
        ["prefill", "decode"].iter().all(|r| {
            b.contains(&format!(
                "infera_role_routable_pods{{namespace=\"llm\",workload=\"idep/llama\",role=\"{r}\"}} 1"
            ))
        }) && b.contains("infera_watch_up{resource=\"pods\"} 1")
    };
    tokio::task::spawn_blocking(move || scrape_until(addr, "text/plain", all_up))
        .await
        .unwrap();
    let blind = tokio::task::spawn_blocking(move || {
        scrape_until(addr, "text/plain", |b| {
            b.contains("infera_watch_up{resource=\"pods\"} 0")
        })
    })
    .await
    .unwrap();
    assert!(!blind.contains("infera_role_ready_pods{"), "{blind}");
    assert!(!blind.contains("infera_role_routable_pods{"), "{blind}");
    let back = tokio::task::spawn_blocking(move || scrape_until(addr, "text/plain", all_up))
        .await
        .unwrap();
    let unobserved: f64 = back
        .lines()
        .find_map(|l| l.strip_prefix("infera_watch_unobserved_seconds_total{resource=\"pods\"} "))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    assert!(unobserved > 0.0, "unobserved {unobserved}s:\n{back}");
    assert_eq!(terminate(&mut child.0), 0);
    let log: Vec<String> = rx.try_iter().collect();
    assert!(
        log.iter()
            .any(|l| l.contains("watch pods") && l.contains("infera_watch_up is 0")),
        "{log:#?}"
    );
    sim.shutdown().await;
}

/// `-l` takes set-based selectors, as kubectl does: with the
/// InferaDeployment labelled `team=a`, `team in (a,b),!canary` keeps it and
/// `team notin (a)` leaves it out of every series.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_based_selector_scopes_the_monitor() {
    let sim = Sim::start("pd-1p1d", 20.0).await;
    let ideps: Api<DynamicObject> = Api::namespaced_with(
        sim.client().await,
        &sim.namespace(),
        &infera_cluster::inferadeployment_resource(),
    );
    let label = serde_json::json!({"metadata": {"labels": {"team": "a"}}});
    ideps
        .patch("llama", &PatchParams::default(), &Patch::Merge(label))
        .await
        .expect("label the InferaDeployment");
    let (mut kept, _rx, addr) = spawn_monitor(&sim, &["-l", "team in (a,b),!canary"]);
    tokio::task::spawn_blocking(move || {
        scrape_until(addr, "text/plain", |b| {
            b.contains("infera_role_routable_pods{namespace=\"llm\",workload=\"idep/llama\",role=\"decode\"} 1")
        })
    })
    .await
    .unwrap();
    assert_eq!(terminate(&mut kept.0), 0);
    let (mut left_out, _rx, addr) = spawn_monitor(&sim, &["-l", "team notin (a)"]);
    let listed = |b: &str| {
        ["pods", "inferadeployments", "deployments", "statefulsets"]
            .iter()
            .all(|r| b.contains(&format!("infera_watch_up{{resource=\"{r}\"}} 1")))
    };
    let body = tokio::task::spawn_blocking(move || scrape_until(addr, "text/plain", listed))
        .await
        .unwrap();
    assert!(!body.contains("workload=\"idep/llama\""), "{body}");
    assert_eq!(terminate(&mut left_out.0), 0);
    sim.shutdown().await;
}

/// Usage errors are one line and exit 2: a `-l` that does not parse (the
/// error says what was found and what was expected), and a `--listen`
/// address already taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_errors_exit_2_with_one_line() {
    let sim = Sim::start("pd-1p1d", 20.0).await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    for (args, says) in [
        (
            vec!["monitor", "-l", "tier in (a,b"],
            "cannot read -l `tier in (a,b`: found end of string, expected: ',' or ')'",
        ),
        (
            vec!["monitor", "--listen", addr.as_str()],
            "cannot listen on",
        ),
        (
            vec!["monitor", "--probe-interval", "500ms"],
            "is below the floor of 1s",
        ),
    ] {
        let out = infera(&args)
            .arg("--kubeconfig")
            .arg(sim.kubeconfig())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(
            err.lines().filter(|l| l.starts_with("error:")).count(),
            1,
            "{err}"
        );
    }
    drop(taken);
    sim.shutdown().await;
}

/// `whole-node-pinned`: a restart's surge pod cannot be placed (each node's
/// 8 GPUs are taken); the monitor exports it under the scheduler's reason,
/// a closed-set label (`insufficient_resource`), with the role rolling and
/// its leg named: what `InferaRolloutStalled` fires on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_surge_pod_is_exported_by_the_schedulers_reason() {
    let sim = Sim::start("whole-node-pinned", 20.0).await;
    let (mut child, _rx, addr) = spawn_monitor(&sim, &[]);
    let _roll = Killed(
        infera(&[
            "rollout",
            "restart",
            "idep/kimi",
            "--yes",
            "--force",
            "--on-stall",
            "wait",
            "--kubeconfig",
        ])
        .arg(sim.kubeconfig())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn rollout"),
    );
    let stalled = |b: &str| {
        b.lines()
            .find(|l| {
                l.starts_with(
                    "infera_role_unschedulable_pods{namespace=\"llm\",workload=\"idep/kimi\",",
                ) && l.ends_with(",reason=\"insufficient_resource\"} 1")
            })
            .map(str::to_string)
    };
    let body = tokio::task::spawn_blocking(move || {
        scrape_until(addr, "text/plain", |b| stalled(b).is_some())
    })
    .await
    .unwrap();
    let line = stalled(&body).unwrap_or_default();
    let role = line
        .split("role=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_default();
    let labels = format!("namespace=\"llm\",workload=\"idep/kimi\",role=\"{role}\"");
    assert!(
        body.contains(&format!("infera_rollout_in_progress{{{labels}}} 1")),
        "{body}"
    );
    assert!(
        body.contains(&format!(
            "infera_rollout_leg_info{{{labels},leg=\"{role}\"}} 1"
        )),
        "{body}"
    );
    // The old pod keeps serving.
    assert!(
        body.contains(&format!("infera_role_routable_pods{{{labels}}} 1")),
        "{body}"
    );
    assert_eq!(terminate(&mut child.0), 0);
    sim.shutdown().await;
}

/// The labels of a role of `pd-1p1d`'s `idep/llama`.
fn llama(role: &str) -> String {
    format!("namespace=\"llm\",workload=\"idep/llama\",role=\"{role}\"")
}

/// An eviction (what `kubectl drain` and `infera drain` do to a pod) is a
/// disruption in progress on the pod's role, under its closed-set reason,
/// until the pod is gone; no pod or node name is a label. A finalizer
/// holds the evicted pod in its termination, so no timing is involved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eviction_is_a_disruption_in_progress_until_the_pod_is_gone() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, DeleteParams, EvictParams};
    let sim = Sim::start("pd-1p1d", 20.0).await;
    let (mut child, _rx, addr) = spawn_monitor(&sim, &[]);
    let calm = format!("infera_disruption_in_progress{{{}}} 0", llama("decode"));
    let c = calm.clone();
    tokio::task::spawn_blocking(move || scrape_until(addr, "text/plain", |b| b.contains(&c)))
        .await
        .unwrap();
    let pod = sim.pod_names("decode").remove(0);
    let hold = |finalizers: Value| {
        sim.store()
            .mutate(infera_sim_core::kind::Kind::Pod, Some("llm"), &pod, |p| {
                p["metadata"]["finalizers"] = finalizers;
            })
            .expect("the decode pod");
    };
    hold(serde_json::json!(["test.infera.amd.com/hold"]));
    let pods: Api<Pod> = Api::namespaced(sim.client().await, "llm");
    pods.evict(&pod, &EvictParams::default())
        .await
        .expect("the eviction is allowed");
    let disrupted = [
        format!("infera_disruption_in_progress{{{}}} 1", llama("decode")),
        format!(
            "infera_role_disrupted_pods{{{},reason=\"evicted\"}} 1",
            llama("decode")
        ),
        format!("infera_disruption_in_progress{{{}}} 0", llama("prefill")),
    ];
    let want = disrupted.clone();
    let body = tokio::task::spawn_blocking(move || {
        scrape_until(addr, "text/plain", |b| want.iter().all(|w| b.contains(w)))
    })
    .await
    .unwrap();
    let node = sim
        .store()
        .get(infera_sim_core::kind::Kind::Pod, Some("llm"), &pod)
        .and_then(|p| p.pointer("/spec/nodeName").cloned())
        .and_then(|n| n.as_str().map(str::to_string))
        .expect("the evicted pod's node");
    assert!(!body.contains(&pod) && !body.contains(&node), "{body}");
    // Released and deleted: the disruption is over.
    hold(serde_json::json!([]));
    let _ = pods
        .delete(&pod, &DeleteParams::default().grace_period(0))
        .await;
    let body = tokio::task::spawn_blocking(move || {
        scrape_until(addr, "text/plain", |b| b.contains(&calm))
    })
    .await
    .unwrap();
    assert!(!body.contains("infera_role_disrupted_pods{"), "{body}");
    assert_eq!(terminate(&mut child.0), 0);
    sim.shutdown().await;
}

/// A LeaderWorkerSet running a catalogued engine is watched (its own
/// list+watch) as one role counted by its groups' leaders: Ready pods,
/// desired groups, rolling while its controller reports groups not updated.
/// The sim's LeaderWorkerSet controller makes the groups; its status is
/// written here (the sim does not simulate LWS status).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaderworkerset_is_one_role_counted_by_its_leaders() {
    use infera_sim_core::kind::Kind;
    let sim = Sim::start("pd-1p1d", 20.0).await;
    let lws = serde_json::json!({
        "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
        "metadata": {"name": "big", "namespace": "llm"},
        "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 2, "workerTemplate": {"spec": {
            "containers": [{"name": "main", "image": "vllm/vllm-openai:v0.9", "args": ["--model", "m"],
                "resources": {"requests": {"cpu": "100m"}}}]}}}}
    });
    sim.store()
        .create(Kind::LeaderWorkerSet, lws)
        .expect("created");
    let status = |updated: i64| {
        sim.store()
            .mutate(Kind::LeaderWorkerSet, Some("llm"), "big", |l| {
                l["status"] = serde_json::json!({"replicas": 2, "readyReplicas": 2, "updatedReplicas": updated});
            })
            .expect("the LeaderWorkerSet");
    };
    status(2);
    let (mut child, _rx, addr) = spawn_monitor(&sim, &[]);
    let big = "namespace=\"llm\",workload=\"lws/big\",role=\"big\"";
    let want = [
        format!("infera_role_ready_pods{{{big}}} 2"),
        format!("infera_role_desired_replicas{{{big}}} 2"),
        format!("infera_rollout_in_progress{{{big}}} 0"),
        "infera_watch_up{resource=\"leaderworkersets\"} 1".to_string(),
    ];
    tokio::task::spawn_blocking(move || {
        scrape_until(addr, "text/plain", |b| want.iter().all(|w| b.contains(w)))
    })
    .await
    .unwrap();
    // A leader goes (held by a finalizer, so it stays terminating and its
    // group cannot come back under its name meanwhile) and the controller
    // reports a group not updated.
    sim.store()
        .mutate(Kind::Pod, Some("llm"), "big-1", |p| {
            p["metadata"]["finalizers"] = serde_json::json!(["test.infera.amd.com/hold"]);
        })
        .expect("the leader of group 1");
    sim.store()
        .delete(Kind::Pod, Some("llm"), "big-1", Some(0))
        .expect("deleted");
    status(1);
    let want = [
        format!("infera_role_ready_pods{{{big}}} 1"),
        format!("infera_rollout_in_progress{{{big}}} 1"),
        format!("infera_rollout_leg_info{{{big},leg=\"big\"}} 1"),
    ];
    tokio::task::spawn_blocking(move || {
        scrape_until(addr, "text/plain", |b| want.iter().all(|w| b.contains(w)))
    })
    .await
    .unwrap();
    assert_eq!(terminate(&mut child.0), 0);
    sim.shutdown().await;
}

/// The value of the sample `series` (name and labels, as written) in a
/// scrape; 0 when absent.
fn sample(body: &str, series: &str) -> f64 {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

const PROBED: &str = "namespace=\"llm\",inferadeployment=\"llama\"";

/// `infera_requests_total` of the probed InferaDeployment, every class.
fn requests_by_class(body: &str) -> Vec<(&'static str, f64)> {
    ["ok", "refused", "status", "error-event", "cut", "hung"]
        .into_iter()
        .map(|c| {
            let series = format!("infera_requests_total{{{PROBED},class=\"{c}\"}}");
            (c, sample(body, &series))
        })
        .collect()
}

/// The probe's attributed failures, every class but `ok`.
fn attributed_failures(body: &str) -> f64 {
    requests_by_class(body)
        .iter()
        .filter(|(c, _)| *c != "ok")
        .map(|(_, n)| n)
        .sum()
}

/// `infera monitor --probe-interval 1s` on `sim`, once a probe request
/// ended `ok`: the child, the address and that scrape.
async fn probing(sim: &Sim) -> (Killed, SocketAddr, String) {
    let (child, _rx, addr) = spawn_monitor(sim, &["--probe-interval", "1s"]);
    let ok = format!("infera_requests_total{{{PROBED},class=\"ok\"}}");
    let body = tokio::task::spawn_blocking(move || {
        scrape_until(addr, "text/plain", |b| sample(b, &ok) >= 1.0)
    })
    .await
    .unwrap();
    (child, addr, body)
}

/// `vllm-short-drain` (a router and one worker serving the OpenAI API
/// through the API server's service proxy): the always-on probe's
/// requests end `ok` and their number grows, streams give a TTFT, and the
/// scrape still passes `promtool check metrics` where it is installed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_probe_counts_ok_requests_through_the_router() {
    let sim = Sim::start("vllm-short-drain", 20.0).await;
    let (mut child, _rx, addr) = spawn_monitor(&sim, &["--probe-interval", "1s"]);
    let ok = format!("infera_requests_total{{{PROBED},class=\"ok\"}}");
    let ttft = format!("infera_request_ttft_seconds_count{{{PROBED}}}");
    let first = tokio::task::spawn_blocking({
        let (ok, ttft) = (ok.clone(), ttft.clone());
        move || {
            scrape_until(addr, "text/plain", |b| {
                sample(b, &ok) >= 2.0 && sample(b, &ttft) >= 1.0
            })
        }
    })
    .await
    .unwrap();
    let before = sample(&first, &ok);
    let later = tokio::task::spawn_blocking({
        let ok = ok.clone();
        move || scrape_until(addr, "text/plain", |b| sample(b, &ok) > before)
    })
    .await
    .unwrap();
    assert!(sample(&later, &ok) > before, "{later}");
    assert!(
        later.contains("# TYPE infera_request_ttft_seconds histogram"),
        "{later}"
    );
    assert!(later.contains("infera_probe_blind_total 0"), "{later}");
    if let Some(promtool) = prometheus_tool("promtool") {
        promtool_check_metrics(&promtool, &later);
    }
    assert_eq!(terminate(&mut child.0), 0);
    sim.shutdown().await;
}

/// The router scaled to 0 through its InferaDeployment (the operator
/// renders its Deployment with no replica): the API server's proxy has no
/// endpoint to reach, the probe's requests fail while the API server
/// answers, so they are attributed and a failure class grows; `--no-probe`
/// sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_router_grows_a_failure_class() {
    let sim = Sim::start("vllm-short-drain", 20.0).await;
    let (mut child, addr, _) = probing(&sim).await;
    let ok = format!("infera_requests_total{{{PROBED},class=\"ok\"}}");
    let ideps: Api<DynamicObject> = Api::namespaced_with(
        sim.client().await,
        &sim.namespace(),
        &infera_cluster::inferadeployment_resource(),
    );
    let none = serde_json::json!({"spec": {"services": {"router": {"replicas": 0}}}});
    ideps
        .patch("llama", &PatchParams::default(), &Patch::Merge(none))
        .await
        .expect("scale the router to 0");
    let first = tokio::task::spawn_blocking(move || {
        scrape_until(addr, "text/plain", |b| attributed_failures(b) >= 1.0)
    })
    .await
    .unwrap();
    let (ok_then, failed_then) = (sample(&first, &ok), attributed_failures(&first));
    // With the router gone, the proxy has no endpoint: `refused`.
    let refused = format!("infera_requests_total{{{PROBED},class=\"refused\"}}");
    let later = tokio::task::spawn_blocking(move || {
        scrape_until(addr, "text/plain", |b| {
            attributed_failures(b) > failed_then && sample(b, &refused) >= 1.0
        })
    })
    .await
    .unwrap();
    assert!(attributed_failures(&later) > failed_then, "{later}");
    assert!(sample(&later, &ok) <= ok_then + 1.0, "{later}");
    assert!(later.contains("infera_probe_blind_total 0"), "{later}");
    assert_eq!(terminate(&mut child.0), 0);
    let (mut quiet, _rx, addr) = spawn_monitor(&sim, &["--no-probe"]);
    let body = tokio::task::spawn_blocking(move || {
        scrape_until(addr, "text/plain", |b| {
            b.contains("infera_watch_up{resource=\"inferadeployments\"} 1")
        })
    })
    .await
    .unwrap();
    assert!(!body.contains("infera_requests_total{"), "{body}");
    assert_eq!(terminate(&mut quiet.0), 0);
    sim.shutdown().await;
}

/// A cut between the monitor and the API server (issue 24's partition):
/// the probe's requests fail, and so does its control request (`GET
/// /readyz`), so the failures are unattributed and `infera_probe_blind_total`
/// grows; no failure is counted against the fleet, and `ok` grows again
/// once the cut ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_to_the_api_server_is_blind_not_a_failure() {
    let sim = Sim::start("vllm-short-drain", 20.0).await;
    let (mut child, addr, before) = probing(&sim).await;
    let ok = format!("infera_requests_total{{{PROBED},class=\"ok\"}}");
    let unattributed = |b: &str| -> f64 {
        b.lines()
            .filter(|l| l.starts_with("infera_requests_unattributed_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    sim.partition(
        infera_sim_core::partition::PartitionKind::Cut,
        Duration::from_secs(5),
    );
    let blind = tokio::task::spawn_blocking(move || {
        scrape_until(addr, "text/plain", |b| {
            unattributed(b) >= 1.0 && sample(b, "infera_probe_blind_total") >= 1.0
        })
    })
    .await
    .unwrap();
    let ok_then = sample(&blind, &ok);
    let after = tokio::task::spawn_blocking({
        let ok = ok.clone();
        move || scrape_until(addr, "text/plain", |b| sample(b, &ok) > ok_then)
    })
    .await
    .unwrap();
    assert_eq!(
        attributed_failures(&after),
        attributed_failures(&before),
        "{after}"
    );
    assert!(unattributed(&after) >= 1.0, "{after}");
    assert_eq!(terminate(&mut child.0), 0);
    sim.shutdown().await;
}
