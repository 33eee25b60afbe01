//! The upstream lab: real kube-apiserver, kube-controller-manager,
//! kube-scheduler and kubectl v1.37.2 built from Go modules (`lab/`), with
//! the simulated GPU nodes, kubelet and infera operator attached over the
//! API by `infera sim attach`. Everything runs inside the lab's own network
//! namespace (`ip netns exec`), so no packet leaves it.
//!
//! Needs root (network namespaces) and the lab's binaries: `lab/build`
//! prints their directory; export it as `INFERA_LAB_BIN`. Without them the
//! tests say why they skip; `.ci/run` sets `INFERA_LAB_REQUIRED=1`, which
//! turns that skip into a failure.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const SCENARIO_NAMESPACE: &str = "llm";
/// The world's clock: a 140 s weight load takes 7 s. The control plane runs
/// in real time.
const SPEED: &str = "20";
const POD_CIDR: &str = "10.244.0.0/16";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Why the lab cannot run here, if it cannot.
fn unavailable() -> Option<String> {
    let bin = std::env::var_os("INFERA_LAB_BIN")?;
    if !Path::new(&bin).join("kube-apiserver").is_file() {
        return Some(format!(
            "INFERA_LAB_BIN={} has no kube-apiserver; run lab/build",
            Path::new(&bin).display()
        ));
    }
    let uid = Command::new("id").arg("-u").output().ok()?;
    (String::from_utf8_lossy(&uid.stdout).trim() != "0")
        .then(|| "the lab needs root for `ip netns add`".to_string())
}

/// `None` (after saying why) when the lab cannot run; panics instead when
/// `INFERA_LAB_REQUIRED` is set.
fn lab_or_skip(test: &str) -> Option<Lab> {
    let reason = match std::env::var_os("INFERA_LAB_BIN") {
        None => Some(
            "INFERA_LAB_BIN is unset: build the lab with `export INFERA_LAB_BIN=$(lab/build | tail -n1)` (12-30 min cold, cached after)".to_string(),
        ),
        Some(_) => unavailable(),
    };
    if let Some(reason) = reason {
        assert!(
            std::env::var_os("INFERA_LAB_REQUIRED").is_none(),
            "{test}: INFERA_LAB_REQUIRED is set but the lab cannot run: {reason}"
        );
        eprintln!("skipping {test}: {reason}");
        return None;
    }
    Some(Lab::up())
}

/// A running lab in a temporary directory; dropping it runs `lab/down`.
struct Lab {
    dir: tempfile::TempDir,
    netns: String,
}

impl Lab {
    fn up() -> Lab {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = Command::new(root().join("lab/up"))
            .arg(dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("run lab/up");
        assert!(
            out.status.success(),
            "lab/up failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let netns = std::fs::read_to_string(dir.path().join("netns"))
            .expect("lab/up leaves DIR/netns")
            .trim()
            .to_string();
        Lab { dir, netns }
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    /// `program args…` inside the lab's network namespace.
    fn command(&self, program: &Path) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.netns])
            .arg(program)
            .env("KUBECONFIG", self.kubeconfig())
            .stdin(Stdio::null());
        c
    }

    fn kubectl(&self, args: &[&str]) -> Output {
        let kubectl = self.dir.path().join("bin/kubectl");
        self.command(&kubectl)
            .args(args)
            .output()
            .expect("run the lab's kubectl")
    }

    fn infera(&self, args: &[&str]) -> Command {
        let mut c = self.command(Path::new(env!("CARGO_BIN_EXE_infera")));
        c.args(args);
        c
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = Command::new(root().join("lab/down"))
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .output();
    }
}

/// `infera sim attach` running until dropped (SIGINT: it removes what it made).
struct Attached(Child);

impl Attached {
    fn start(lab: &Lab, scenario: &str) -> Attached {
        let log = std::fs::File::create(lab.dir.path().join("attach.log")).expect("log");
        let child = lab
            .infera(&[
                "sim",
                "attach",
                "--scenario",
                scenario,
                "--speed",
                SPEED,
                "--pod-cidr",
                POD_CIDR,
            ])
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start infera sim attach");
        Attached(child)
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-INT", &self.0.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "kubectl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("kubectl -o json")
}

fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

fn registered(pod: &Value) -> bool {
    pod["metadata"]["annotations"]["infera.amd.com/worker-info"].is_string()
}

/// Every Deployment of the scenario available, every worker pod Ready and
/// registered.
fn wait_steady(lab: &Lab, ns: &str, deployments: usize) {
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut last = String::new();
    while Instant::now() < deadline {
        let deps = json(&lab.kubectl(&["get", "deploy", "-n", ns, "-o", "json"]));
        let pods = json(&lab.kubectl(&["get", "pods", "-n", ns, "-o", "json"]));
        let deps = deps["items"].as_array().cloned().unwrap_or_default();
        let pods = pods["items"].as_array().cloned().unwrap_or_default();
        let available = deps
            .iter()
            .filter(|d| d["status"]["availableReplicas"] == d["spec"]["replicas"])
            .count();
        let workers: Vec<&Value> = pods
            .iter()
            .filter(|p| p["metadata"]["labels"]["infera.amd.com/service"] != "router")
            .collect();
        if deps.len() == deployments
            && available == deployments
            && !workers.is_empty()
            && workers.iter().all(|p| is_ready(p) && registered(p))
        {
            return;
        }
        last = format!(
            "{available}/{} deployments available, {} pods",
            deps.len(),
            pods.len()
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    panic!("the scenario never reached its steady state on the lab: {last}");
}

/// Whether kubectl's `--output-watch-events` table has an `event` line for `pod`.
fn saw(events: &str, event: &str, pod: &str) -> bool {
    events.lines().any(|l| {
        let mut cols = l.split_whitespace();
        cols.next() == Some(event) && cols.next() == Some(pod)
    })
}

fn pod_names(lab: &Lab) -> Vec<String> {
    let pods = json(&lab.kubectl(&["get", "pods", "-n", SCENARIO_NAMESPACE, "-o", "json"]));
    pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn smoke_rollout_on_the_real_control_plane() {
    let Some(lab) = lab_or_skip("smoke_rollout_on_the_real_control_plane") else {
        return;
    };

    // The freshly built kubectl talks to the real API server.
    let version = json(&lab.kubectl(&["version", "-o", "json"]));
    assert_eq!(
        version["serverVersion"]["gitVersion"], "v1.37.2",
        "{version}"
    );
    assert_eq!(
        version["clientVersion"]["gitVersion"], "v1.37.2",
        "{version}"
    );

    let attached = Attached::start(&lab, "pd-1p1d");
    // router, prefill, decode.
    wait_steady(&lab, SCENARIO_NAMESPACE, 3);

    // The lab's kubectl watches the pods while infera drives the rollout.
    let before = pod_names(&lab);
    let kubectl = lab.dir.path().join("bin/kubectl");
    let watch_log = lab.dir.path().join("kubectl-watch.log");
    let mut watcher = lab
        .command(&kubectl)
        .args(["get", "pods", "-n", SCENARIO_NAMESPACE, "--watch"])
        .args(["--output-watch-events", "--no-headers"])
        .stdout(std::fs::File::create(&watch_log).expect("watch log"))
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get pods --watch");
    // kubectl lists first (an ADDED line per pod), then watches from the
    // list's resourceVersion: once every pod is listed, no event is missed.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !before.iter().all(|p| {
        saw(
            &std::fs::read_to_string(&watch_log).unwrap_or_default(),
            "ADDED",
            p,
        )
    }) {
        assert!(
            Instant::now() < deadline,
            "kubectl get pods --watch listed nothing"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let report = lab.dir.path().join("report.json");
    let out = lab
        .infera(&[
            "rollout",
            "restart",
            "idep/llama",
            "-n",
            SCENARIO_NAMESPACE,
            "--yes",
            "--report",
        ])
        .arg(&report)
        .output()
        .expect("infera rollout restart");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let attach_log = std::fs::read_to_string(lab.dir.path().join("attach.log")).unwrap_or_default();
    assert_eq!(
        out.status.code(),
        Some(0),
        "rollout on the lab failed\nstdout:\n{stdout}\nstderr:\n{stderr}\nattach log:\n{attach_log}"
    );

    let report: Value =
        serde_json::from_slice(&std::fs::read(&report).expect("report written")).expect("JSON");
    for role in ["prefill", "decode"] {
        let r = report["roles"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["role"] == role))
            .unwrap_or_else(|| panic!("no role {role} in {report}"));
        assert!(r["min_ready_exact"].as_u64() >= Some(1), "{role}: {r}");
        assert!(r["min_routable_exact"].as_u64() >= Some(1), "{role}: {r}");
    }
    // The /ready answer came through the real API server's pod proxy, for
    // each surge pod.
    let proxied: Vec<&Value> = report["steps"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter(|s| s["kind"] == "ready-via-proxy")
                .collect()
        })
        .unwrap_or_default();
    assert!(
        proxied.iter().any(|s| s["service"] == "prefill")
            && proxied.iter().any(|s| s["service"] == "decode"),
        "no ready-via-proxy step per worker service: {}",
        report["steps"]
    );

    // kubectl saw every old worker pod deleted and every replacement added
    // (the kubelet's final delete comes after the grace period).
    let deadline = Instant::now() + Duration::from_secs(90);
    while Instant::now() < deadline
        && pod_names(&lab)
            .iter()
            .any(|p| before.contains(p) && !p.contains("router"))
    {
        std::thread::sleep(Duration::from_secs(1));
    }
    let _ = watcher.kill();
    let _ = watcher.wait();
    let events = std::fs::read_to_string(&watch_log).unwrap_or_default();
    let after = pod_names(&lab);
    for old in before.iter().filter(|p| !p.contains("router")) {
        assert!(
            saw(&events, "DELETED", old),
            "kubectl's watch never saw {old} deleted:\n{events}"
        );
    }
    for new in after.iter().filter(|p| !before.contains(p)) {
        assert!(
            saw(&events, "ADDED", new),
            "kubectl's watch never saw {new} added:\n{events}"
        );
    }
    drop(attached);
}
