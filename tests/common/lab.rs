//! Shared helpers for the lab tests (`tests/lab/`: smoke, conformance, rbac):
//! the `Lab` guard (`lab/up` … `lab/down`), commands inside its network
//! namespace, the `Attached` guard for `infera sim attach`, and the
//! skip-with-reason logic (`INFERA_LAB_BIN`, root, `INFERA_LAB_REQUIRED`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const SCENARIO_NAMESPACE: &str = "llm";
/// The world's clock: a 140 s weight load takes 7 s. The control plane runs
/// in real time.
pub const SPEED: &str = "20";
pub const POD_CIDR: &str = "10.244.0.0/16";

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Why the lab cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
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

/// Why the lab tests skip (after saying so), or `None` when the lab can run;
/// panics instead when `INFERA_LAB_REQUIRED` is set.
pub fn skip_reason(test: &str) -> Option<String> {
    let reason = match std::env::var_os("INFERA_LAB_BIN") {
        None => Some(
            "INFERA_LAB_BIN is unset: build the lab with `export INFERA_LAB_BIN=$(lab/build | tail -n1)` (12-30 min cold, cached after)".to_string(),
        ),
        Some(_) => unavailable(),
    }?;
    assert!(
        std::env::var_os("INFERA_LAB_REQUIRED").is_none(),
        "{test}: INFERA_LAB_REQUIRED is set but the lab cannot run: {reason}"
    );
    eprintln!("skipping {test}: {reason}");
    Some(reason)
}

/// `None` (after saying why) when the lab cannot run; panics instead when
/// `INFERA_LAB_REQUIRED` is set.
pub fn lab_or_skip(test: &str) -> Option<Lab> {
    lab_or_skip_with(test, &[])
}

/// [`lab_or_skip`] with extra environment for `lab/up` (e.g.
/// `INFERA_LAB_KCM_ARGS`).
pub fn lab_or_skip_with(test: &str, env: &[(&str, &str)]) -> Option<Lab> {
    match skip_reason(test) {
        Some(_) => None,
        None => Some(Lab::up_with(env)),
    }
}

/// One lab at a time per test binary: two control planes on two busy cores
/// make every timing in the lab tests noisy, and the tests ran one binary at
/// a time before they shared one.
static ONE_LAB: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A running lab in a temporary directory; dropping it runs `lab/down`
/// (then releases the one-lab lock).
pub struct Lab {
    pub dir: tempfile::TempDir,
    pub netns: String,
    _one: std::sync::MutexGuard<'static, ()>,
}

impl Lab {
    pub fn up() -> Lab {
        Lab::up_with(&[])
    }

    /// `lab/up` with extra environment.
    pub fn up_with(env: &[(&str, &str)]) -> Lab {
        // A test that panicked while holding the lab still ran `lab/down`.
        let one = ONE_LAB.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().expect("temp dir");
        let out = Command::new(root().join("lab/up"))
            .arg(dir.path())
            .envs(env.iter().copied())
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
        Lab {
            dir,
            netns,
            _one: one,
        }
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    /// `program args…` inside the lab's network namespace.
    pub fn command(&self, program: &Path) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.netns])
            .arg(program)
            .env("KUBECONFIG", self.kubeconfig())
            .stdin(Stdio::null());
        c
    }

    pub fn kubectl(&self, args: &[&str]) -> Output {
        let kubectl = self.dir.path().join("bin/kubectl");
        self.command(&kubectl)
            .args(args)
            .output()
            .expect("run the lab's kubectl")
    }

    /// `kubectl ARGS`, which must succeed; its stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `lab/ctl DIR ACTION COMPONENT` (a fault on one component); its stdout.
    pub fn ctl(&self, action: &str, component: &str) -> String {
        let out = Command::new(root().join("lab/ctl"))
            .args([self.dir.path().as_os_str()])
            .args([action, component])
            .stdin(Stdio::null())
            .output()
            .expect("run lab/ctl");
        assert!(
            out.status.success(),
            "lab/ctl {action} {component}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    pub fn infera(&self, args: &[&str]) -> Command {
        let mut c = self.command(Path::new(env!("CARGO_BIN_EXE_infera")));
        c.args(args);
        c
    }
}

impl Lab {
    /// A kubeconfig for ServiceAccount `account` of `ns` (namespace `ns`),
    /// with a fresh token (returned too, for the credentials check).
    pub fn sa_kubeconfig(&self, ns: &str, account: &str) -> (PathBuf, String) {
        let out = self.kubectl(&["create", "token", account, "-n", ns]);
        assert!(
            out.status.success(),
            "kubectl create token: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let token = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let ca = self.dir.path().join("pki/ca.crt");
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: lab\n  cluster: {{server: \"https://127.0.0.1:6443\", certificate-authority: \"{}\"}}\nusers:\n- name: {account}\n  user: {{token: \"{token}\"}}\ncontexts:\n- name: lab\n  context: {{cluster: lab, user: {account}, namespace: {ns}}}\ncurrent-context: lab\n",
            ca.display()
        );
        let path = self.dir.path().join(format!("{account}.kubeconfig"));
        std::fs::write(&path, config).expect("write kubeconfig");
        (path, token)
    }

    /// `lab/operator start DIR`: the published Infera operator, out of
    /// cluster in the lab's namespace, until `lab/down` (the drop). Returns
    /// how long it took to be reconciling. The binary is
    /// `INFERA_OPERATOR_BIN` when set, else `lab/operator build`'s (cached).
    pub fn start_operator(&self) -> Duration {
        let t = Instant::now();
        let out = Command::new(root().join("lab/operator"))
            .arg("start")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("run lab/operator start");
        assert!(
            out.status.success(),
            "lab/operator start failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        t.elapsed()
    }

    /// The operator's log so far (`DIR/operator.log`).
    pub fn operator_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("operator.log")).unwrap_or_default()
    }
}

/// The published operator's source, read-only beside the repository. Only
/// the real-operator lab tests read it (through `lab/operator`).
pub fn operator_source() -> PathBuf {
    root().join("../shared/upstream/infera-operator")
}

/// Why the real-operator lab tests skip (after saying so), or `None`: the
/// lab's reasons first (a failure under `INFERA_LAB_REQUIRED`), then no
/// operator binary (`INFERA_OPERATOR_BIN`) and no source to build one from
/// (a failure under `INFERA_OPERATOR_REQUIRED`, which `.ci/run` sets when
/// `../shared` exists).
pub fn operator_skip_reason(test: &str) -> Option<String> {
    if let Some(reason) = skip_reason(test) {
        return Some(reason);
    }
    let bin = std::env::var_os("INFERA_OPERATOR_BIN").map(PathBuf::from);
    let reason = match bin {
        Some(b) if !b.is_file() => Some(format!(
            "INFERA_OPERATOR_BIN={} is not a file; run lab/operator build",
            b.display()
        )),
        Some(_) => None,
        None => (!operator_source().join("go.mod").is_file()).then(|| {
            format!(
                "no published operator: {} is absent (it is ../shared beside the repository) and INFERA_OPERATOR_BIN is unset",
                operator_source().display()
            )
        }),
    }?;
    assert!(
        std::env::var_os("INFERA_OPERATOR_REQUIRED").is_none(),
        "{test}: INFERA_OPERATOR_REQUIRED is set but the operator cannot run: {reason}"
    );
    eprintln!("skipping {test}: {reason}");
    Some(reason)
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
pub struct Attached(pub Child);

impl Attached {
    pub fn start(lab: &Lab, scenario: &str) -> Attached {
        Attached::start_with(lab, scenario, &[])
    }

    /// `infera sim attach` with extra flags (e.g. `--no-operator`).
    pub fn start_with(lab: &Lab, scenario: &str, extra: &[&str]) -> Attached {
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
            .args(extra)
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

pub fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "kubectl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("kubectl -o json")
}

pub fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

pub fn registered(pod: &Value) -> bool {
    pod["metadata"]["annotations"]["infera.amd.com/worker-info"].is_string()
}

/// Every Deployment of the scenario available, every worker pod Ready and
/// registered.
pub fn wait_steady(lab: &Lab, ns: &str, deployments: usize) {
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
