//! `infera monitor` in the cluster's own way, on the upstream lab (one lab):
//!
//! * the ServiceMonitor and PrometheusRule it prints are dry-run
//!   server-side against the prometheus-operator CRDs' schemas
//!   (`lab/crd/`), and a broken one is refused, so the schema is applied;
//! * the in-cluster path: the printed ServiceAccount, Role and RoleBinding
//!   applied, a real token from the TokenRequest API (`kubectl create
//!   token`), and the monitor run with no kubeconfig in a private mount
//!   namespace (`unshare -m`) where the token, the CA and the namespace are
//!   bind-mounted at `/var/run/secrets/kubernetes.io/serviceaccount` and
//!   `KUBERNETES_SERVICE_HOST`/`PORT` point at the apiserver, as a kubelet
//!   would set a pod up: it serves each role's counts;
//! * the same Role without its pods rule: the monitor logs the missing
//!   permission by name, keeps serving (`infera_watch_up` 0, no role count,
//!   `/readyz` 503) instead of crash-looping, and SIGTERM ends it with 0.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::lab::{Attached, Lab, SCENARIO_NAMESPACE, lab_or_skip, root, wait_steady};
use crate::common::process::{Killed, infera, wait_exit};

const NS: &str = SCENARIO_NAMESPACE;
/// The apiserver's advertised address and port (`lab/up`).
const SERVICE_HOST: &str = "10.245.0.1";
const SERVICE_PORT: &str = "6443";
/// Where the monitor listens, on `lo` inside the lab's namespace.
const PORT: u16 = 18491;
const DECODE: &str = "{namespace=\"llm\",workload=\"idep/llama\",role=\"decode\"}";

fn kubectl_ok(lab: &Lab, args: &[&str]) -> String {
    let out = lab.kubectl(args);
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// `kubectl apply [extra] -f` the objects (written to `name` in the lab dir).
fn apply(lab: &Lab, name: &str, objects: &[Value], extra: &[&str]) -> std::process::Output {
    let file = lab.dir.path().join(name);
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects});
    std::fs::write(&file, list.to_string()).expect("write objects");
    let mut args = vec!["apply"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-f", file.to_str().unwrap_or_default()]);
    lab.kubectl(&args)
}

/// What `infera monitor ARGS` prints (YAML documents), parsed.
fn printed(args: &[&str]) -> Vec<Value> {
    let out = infera(args).output().expect("run infera");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    serde_saphyr::from_multiple(&text).expect("YAML documents")
}

/// `GET path` on the monitor inside the lab's namespace: the raw answer.
fn get(lab: &Lab, path: &str) -> String {
    let script = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{PORT} && printf 'GET {path} HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3"
    );
    let out = lab
        .command(Path::new("bash"))
        .args(["-c", &script])
        .output()
        .expect("run bash");
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Scrape until `ok` holds (or fail after 60 s, showing the log).
fn scrape_until(lab: &Lab, log: &Path, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    while Instant::now() < deadline {
        last = get(lab, "/metrics");
        if ok(&last) {
            return last;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let log = std::fs::read_to_string(log).unwrap_or_default();
    panic!("the scrape never showed what was expected:\n{last}\nlog:\n{log}");
}

/// The monitor as a pod would run it: no kubeconfig, the service account
/// mounted at the standard path in a private mount namespace.
fn in_cluster(lab: &Lab, token: &str, log: &Path) -> Child {
    let sa = lab.dir.path().join("serviceaccount");
    std::fs::create_dir_all(&sa).expect("mkdir");
    std::fs::write(sa.join("token"), token).expect("token");
    std::fs::copy(lab.dir.path().join("pki/ca.crt"), sa.join("ca.crt")).expect("ca");
    std::fs::write(sa.join("namespace"), NS).expect("namespace");
    let home = lab.dir.path().join("home");
    std::fs::create_dir_all(&home).expect("mkdir home");
    // /var/run is /run; a tmpfs on /run in the private namespace leaves the
    // host's untouched.
    let script = format!(
        "mount --make-rprivate / && mount -t tmpfs tmpfs /run && \
         mkdir -p /run/secrets/kubernetes.io/serviceaccount && \
         mount --bind {sa} /run/secrets/kubernetes.io/serviceaccount && \
         exec {bin} monitor --listen 127.0.0.1:{PORT}",
        sa = sa.display(),
        bin = env!("CARGO_BIN_EXE_infera"),
    );
    let log = std::fs::File::create(log).expect("log");
    Command::new("ip")
        .args([
            "netns", "exec", &lab.netns, "unshare", "-m", "sh", "-c", &script,
        ])
        .env_remove("KUBECONFIG")
        .env("HOME", &home)
        .env("KUBERNETES_SERVICE_HOST", SERVICE_HOST)
        .env("KUBERNETES_SERVICE_PORT", SERVICE_PORT)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("start the monitor")
}

/// SIGTERM; the exit code within the Deployment's grace period.
fn terminate(child: &mut Child) -> i32 {
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    wait_exit(child, Duration::from_secs(10))
}

fn dry_run_against_the_crds(lab: &Lab) {
    for crd in ["servicemonitors", "prometheusrules"] {
        let file = root().join(format!("lab/crd/monitoring.coreos.com_{crd}.yaml"));
        kubectl_ok(
            lab,
            &[
                "apply",
                "--server-side",
                "-f",
                file.to_str().unwrap_or_default(),
            ],
        );
    }
    kubectl_ok(
        lab,
        &[
            "wait",
            "--for",
            "condition=Established",
            "--timeout",
            "60s",
            "crd/servicemonitors.monitoring.coreos.com",
            "crd/prometheusrules.monitoring.coreos.com",
        ],
    );
    let mut objects = printed(&["monitor", "--print-manifests", "-n", NS]);
    objects.extend(printed(&["monitor", "--print-rules", "-n", NS]));
    let out = apply(lab, "monitor-all.json", &objects, &["--dry-run=server"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for kind in [
        "servicemonitor.monitoring.coreos.com",
        "prometheusrule.monitoring.coreos.com",
        "deployment.apps",
    ] {
        assert!(
            text.contains(&format!("{kind}/infera-monitor created (server dry run)")),
            "{text}"
        );
    }
    // The schema is applied: a scrape interval that is no duration is refused.
    let mut broken = objects
        .iter()
        .find(|o| o["kind"] == "ServiceMonitor")
        .cloned()
        .expect("ServiceMonitor");
    broken["spec"]["endpoints"][0]["interval"] = "thirty seconds".into();
    let out = apply(lab, "broken.json", &[broken], &["--dry-run=server"]);
    assert!(
        !out.status.success(),
        "a broken ServiceMonitor passed the schema"
    );
}

#[test]
fn monitor_runs_in_cluster_on_the_lab() {
    let Some(lab) = lab_or_skip("monitor_runs_in_cluster_on_the_lab") else {
        return;
    };
    let t = Instant::now();
    let _world = Attached::start(&lab, "pd-1p1d");
    wait_steady(&lab, NS, 3);
    dry_run_against_the_crds(&lab);
    let manifests = printed(&["monitor", "--print-manifests", "-n", NS]);
    let account: Vec<Value> = manifests
        .iter()
        .filter(|o| {
            ["ServiceAccount", "Role", "RoleBinding"].contains(&o["kind"].as_str().unwrap_or(""))
        })
        .cloned()
        .collect();
    assert_eq!(account.len(), 3);
    let out = apply(&lab, "monitor-rbac.json", &account, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = kubectl_ok(
        &lab,
        &[
            "create",
            "token",
            "infera-monitor",
            "-n",
            NS,
            "--duration",
            "10m",
        ],
    );
    let token = token.trim();

    let log = lab.dir.path().join("monitor.log");
    let mut monitor = Killed(in_cluster(&lab, token, &log));
    let body = scrape_until(&lab, &log, |b| {
        b.contains(&format!("infera_role_routable_pods{DECODE} 1"))
            && b.contains("infera_watch_up{resource=\"deployments\"} 1")
    });
    assert!(
        body.contains("infera_watch_up{resource=\"pods\"} 1"),
        "{body}"
    );
    assert!(
        body.contains(&format!("infera_role_desired_replicas{DECODE} 1")),
        "{body}"
    );
    assert_eq!(
        terminate(&mut monitor.0),
        0,
        "SIGTERM ends the monitor cleanly"
    );

    // The Role without its pods rule: named, not a crash loop.
    let mut role = account
        .iter()
        .find(|o| o["kind"] == "Role")
        .cloned()
        .expect("Role");
    if let Some(rules) = role["rules"].as_array_mut() {
        rules.retain(|r| r["resources"][0] != "pods");
    }
    let out = apply(&lab, "monitor-role.json", &[role], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log2 = lab.dir.path().join("monitor-forbidden.log");
    let mut monitor = Killed(in_cluster(&lab, token, &log2));
    let body = scrape_until(&lab, &log2, |b| {
        b.contains("infera_watch_up{resource=\"pods\"} 0")
            && b.contains("infera_watch_up{resource=\"deployments\"} 1")
    });
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        monitor.0.try_wait().expect("try_wait").is_none(),
        "the monitor exited"
    );
    let text = std::fs::read_to_string(&log2).unwrap_or_default();
    assert!(
        text.contains("forbidden: cannot list pods in namespace \"llm\""),
        "{text}"
    );
    assert_eq!(
        text.matches("forbidden").count(),
        1,
        "one line, not a loop:\n{text}"
    );
    assert!(!body.contains("infera_role_ready_pods{"), "{body}");
    let readyz = get(&lab, "/readyz");
    assert!(
        readyz.lines().next().is_some_and(|l| l.contains(" 503 "))
            && readyz.contains("pods: forbidden"),
        "{readyz}"
    );
    assert_eq!(terminate(&mut monitor.0), 0);
    for l in [&log, &log2] {
        assert!(
            !std::fs::read_to_string(l)
                .unwrap_or_default()
                .contains(token),
            "the token was logged"
        );
    }
    eprintln!("monitor lab test: {:.0}s", t.elapsed().as_secs_f64());
}
