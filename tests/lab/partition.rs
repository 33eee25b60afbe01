//! A real partition on the lab: inside the lab's network namespace, every
//! packet between `infera audit` and the real kube-apiserver v1.37.2 is
//! dropped (a `tc` queue that holds nothing, on the traffic to the
//! apiserver's advertised address, which only the partitioned audit uses) while the real
//! kube-controller-manager rolls both workers of `pd-1p1d-skip-probe`
//! (old pod first: each role dark for the weight load).
//!
//! * **410**: etcd compacted and kube-apiserver restarted during the
//!   partition, as when a client comes back to another API server replica:
//!   the audit's resume is refused as too old and it re-lists.
//! * **replay**: no restart: the apiserver's watch cache replays the held
//!   events when the partition ends, late.
//!
//! The truth is a second audit of the same target that is never
//! partitioned (it reaches the apiserver on 127.0.0.1; the apiserver
//! restart happens before the roll starts, so it sees the roll whole). The
//! partitioned audit must contain it: its minimum, or bound, contains the
//! truth's; its time below the floor is bracketed by what it reports as
//! certain and as possible (to the second of the server's timestamps); and
//! a roll the truth saw go dark is never called "never fewer than 1".

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::lab::{Attached, Lab, SCENARIO_NAMESPACE, lab_or_skip_with, wait_steady};

const SCENARIO: &str = "pd-1p1d-skip-probe";
const TARGET: &str = "idep/llama";
/// The apiserver's advertised address (`lab/up`), on `lo` in the namespace.
const ADVERTISE: &str = "10.245.0.1";
const ROLES: [&str; 2] = ["prefill", "decode"];

/// `tc …` inside the lab's namespace.
fn tc(lab: &Lab, args: &[&str]) {
    let out = lab
        .command(Path::new("tc"))
        .args(args)
        .output()
        .expect("run tc");
    assert!(
        out.status.success(),
        "tc {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Drop every packet to or from the advertised address (both directions
/// go through `lo`, whose source and destination it then is): an HTB root
/// whose default class passes everything else, and a class for the
/// advertised address whose queue holds nothing (`pfifo limit 0`: 100 %
/// loss; this kernel has no `netem` and no `gact` action, and the lab has no
/// nftables).
fn partition(lab: &Lab) {
    let dst = format!("{ADVERTISE}/32");
    let steps: [&[&str]; 5] = [
        &[
            "qdisc", "add", "dev", "lo", "root", "handle", "1:", "htb", "default", "1", "r2q",
            "1000",
        ],
        &[
            "class", "add", "dev", "lo", "parent", "1:", "classid", "1:1", "htb", "rate", "10gbit",
        ],
        &[
            "class", "add", "dev", "lo", "parent", "1:", "classid", "1:3", "htb", "rate", "10gbit",
        ],
        &[
            "qdisc", "add", "dev", "lo", "parent", "1:3", "handle", "30:", "pfifo", "limit", "0",
        ],
        &[
            "filter", "add", "dev", "lo", "parent", "1:", "protocol", "ip", "prio", "1", "u32",
            "match", "ip", "dst", &dst, "flowid", "1:3",
        ],
    ];
    for args in steps {
        tc(lab, args);
    }
}

fn heal(lab: &Lab) {
    tc(lab, &["qdisc", "del", "dev", "lo", "root"]);
}

/// A kubeconfig that reaches the apiserver on its advertised address.
fn advertised_kubeconfig(lab: &Lab) -> PathBuf {
    let text = std::fs::read_to_string(lab.kubeconfig()).expect("the lab's kubeconfig");
    let path = lab.dir.path().join("advertised.kubeconfig");
    std::fs::write(
        &path,
        text.replace(
            "https://127.0.0.1:6443",
            &format!("https://{ADVERTISE}:6443"),
        ),
    )
    .expect("write the kubeconfig");
    path
}

fn audit(lab: &Lab, report: &Path, kubeconfig: Option<&Path>, seconds: u64) -> Child {
    let duration = format!("{seconds}s");
    let report = report.display().to_string();
    let timeline = format!("{report}.csv");
    let mut args = vec![
        "-v",
        "audit",
        TARGET,
        "-n",
        SCENARIO_NAMESPACE,
        "--for",
        &duration,
        "--report",
        &report,
        "--timeline",
        &timeline,
    ];
    let kc = kubeconfig.map(|p| p.display().to_string());
    if let Some(kc) = kc.as_deref() {
        args.extend(["--kubeconfig", kc]);
    }
    let log = std::fs::File::create(format!("{report}.log")).expect("log");
    lab.infera(&args)
        .env("RUST_LOG", "infera=debug")
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .stdin(Stdio::null())
        .spawn()
        .expect("start infera audit")
}

fn restart_both(lab: &Lab) {
    let stamp = format!(
        "{}",
        Instant::now().elapsed().as_nanos() ^ std::process::id() as u128
    );
    let patch = format!(
        r#"{{"spec":{{"services":{{"prefill":{{"podLabels":{{"infera.amd.com/restarted-at":"p{stamp}"}}}},"decode":{{"podLabels":{{"infera.amd.com/restarted-at":"d{stamp}"}}}}}}}}}}"#
    );
    let out = lab.kubectl(&[
        "patch",
        "inferadeployment",
        "llama",
        "-n",
        SCENARIO_NAMESPACE,
        "--type",
        "merge",
        "-p",
        &patch,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The audit's report and exit code.
fn report(path: &Path, child: &mut Child) -> (Value, i32) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let code = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break status.code().unwrap_or(-1);
        }
        assert!(Instant::now() < deadline, "the audit did not end");
        std::thread::sleep(Duration::from_millis(200));
    };
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        let log = std::fs::read_to_string(format!("{}.log", path.display())).unwrap_or_default();
        panic!("{}: {e}\n{log}", path.display())
    });
    (serde_json::from_str(&text).expect("a JSON report"), code)
}

/// (low, high) of a role's minimum from a report.
fn range(role: &Value, what: &str) -> (u64, u64) {
    match role[format!("min_{what}_exact")].as_u64() {
        Some(v) => (v, v),
        None => {
            let b = &role["bounds"][format!("min_{what}")];
            (
                b[0].as_u64().unwrap_or(0),
                b[1].as_u64().unwrap_or(u64::MAX),
            )
        }
    }
}

fn role<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["roles"]
        .as_array()
        .and_then(|rs| rs.iter().find(|r| r["role"] == name))
        .unwrap_or_else(|| panic!("no role {name}: {report}"))
}

fn check(case: &str, (blind, code): &(Value, i32), truth: &Value) {
    assert!(
        blind["unobserved"]
            .as_array()
            .is_some_and(|u| !u.is_empty()),
        "{case}: the partitioned audit saw no unobserved interval: {blind}"
    );
    let mut dark = false;
    for name in ROLES {
        let (b, t) = (role(blind, name), role(truth, name));
        for what in ["ready", "routable"] {
            let truth_min = t[format!("min_{what}_exact")]
                .as_u64()
                .unwrap_or_else(|| panic!("{case}: the reference is not exact: {truth}"));
            dark |= truth_min == 0;
            let (lo, hi) = range(b, what);
            assert!(
                lo <= truth_min && truth_min <= hi,
                "{case} {name}: {what} truth {truth_min} outside {lo}–{hi}\n{blind}\n{truth}"
            );
            let key = format!("seconds_below_min_{what}");
            let truth_below = t[&key].as_f64().unwrap_or(0.0);
            let certain = b[&key].as_f64().unwrap_or(0.0);
            let possible = b["bounds"][format!("seconds_possibly_below_min_{what}")]
                .as_f64()
                .unwrap_or(certain);
            eprintln!(
                "lab partition {case} {name} {what}: truth min {truth_min} below {truth_below}s; \
                 reported {lo}–{hi}, below {certain}s (possibly {possible}s)"
            );
            assert!(
                certain <= truth_below + 1.5 && truth_below <= possible + 1.5,
                "{case} {name}: {what} truly below {truth_below}s, reported {certain}s (possibly {possible}s)\n{blind}"
            );
        }
    }
    if dark {
        assert!(
            *code == 1 || *code == 4,
            "{case}: the roll went dark, yet the partitioned audit exited {code}\n{blind}"
        );
    }
}

/// One partition: `restart` compacts etcd and restarts the apiserver
/// inside it (410 on resume); without, the held events are replayed.
fn case(lab: &Lab, name: &str, cut: Duration, restart: bool) {
    let t = Instant::now();
    let kc = advertised_kubeconfig(lab);
    let seconds = cut.as_secs() + 30;
    let blind_path = lab.dir.path().join(format!("{name}-partitioned.json"));
    let truth_path = lab.dir.path().join(format!("{name}-reference.json"));
    let mut blind = audit(lab, &blind_path, Some(&kc), seconds);
    std::thread::sleep(Duration::from_secs(4));
    partition(lab);
    let on = Instant::now();
    if restart {
        lab.ctl("compact", "etcd");
        lab.ctl("restart", "kube-apiserver");
    }
    // The reference starts now, after any restart: it sees the roll whole.
    let mut truth = audit(lab, &truth_path, None, seconds - on.elapsed().as_secs() - 4);
    std::thread::sleep(Duration::from_secs(4));
    restart_both(lab);
    std::thread::sleep(cut.saturating_sub(on.elapsed()));
    heal(lab);
    let b = report(&blind_path, &mut blind);
    let (r, _) = report(&truth_path, &mut truth);
    if std::env::var_os("INFERA_LAB_PARTITION_DEBUG").is_some() {
        let pods = lab.kubectl(&["get", "pods", "-n", SCENARIO_NAMESPACE, "-o", "json"]);
        let events = lab.kubectl(&["get", "events", "-n", SCENARIO_NAMESPACE, "-o", "json"]);
        let _ = std::fs::write(format!("/tmp/lab-{name}-pods.json"), &pods.stdout);
        let _ = std::fs::write(format!("/tmp/lab-{name}-events.json"), &events.stdout);
        let _ = std::fs::write(format!("/tmp/lab-{name}-partitioned.json"), b.0.to_string());
        let _ = std::fs::write(format!("/tmp/lab-{name}-reference.json"), r.to_string());
        let _ = std::fs::copy(
            format!("{}.csv", blind_path.display()),
            format!("/tmp/lab-{name}-partitioned.csv"),
        );
        let _ = std::fs::copy(
            format!("{}.csv", truth_path.display()),
            format!("/tmp/lab-{name}-reference.csv"),
        );
        let _ = std::fs::copy(
            format!("{}.log", blind_path.display()),
            format!("/tmp/lab-{name}-partitioned.log"),
        );
    }
    check(name, &b, &r);
    eprintln!("lab partition {name}: {:.0?}", t.elapsed());
    wait_steady(lab, SCENARIO_NAMESPACE, 3);
}

#[test]
fn an_audit_partitioned_from_the_real_apiserver_reports_what_it_did_not_see() {
    let Some(lab) = lab_or_skip_with("lab_partition", &[]) else {
        return;
    };
    let _world = Attached::start(&lab, SCENARIO);
    wait_steady(&lab, SCENARIO_NAMESPACE, 3);
    case(&lab, "410", Duration::from_secs(60), true);
    case(&lab, "replay", Duration::from_secs(30), false);
}
