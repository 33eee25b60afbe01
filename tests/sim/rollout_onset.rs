//! Issue 41: a roll is not blamed for an outage it did not cause, and the
//! plan agrees with its own findings. Started while the workers still load
//! their weights, the plan shows each role's serving count and refuses
//! without `--force`; forced, the report keeps "already below when the
//! roll began" apart from "fell during it".

use std::time::{Duration, Instant};

use infera_audit::exit::Exit;
use infera_rollout::target::Target;
use infera_rollout::{Options, Request, RolloutOutcome, execute};
use infera_sim_core::kind::Kind;
use serde_json::Value;

use crate::common::sim::{self, Sim, pods_of};

/// Slow enough that the first weight load (140 s) takes 7 s of wall time.
const SPEED: f64 = 20.0;

/// `pd-1p1d` with every worker pod created and none Ready yet.
async fn loading() -> Sim {
    let sim = Sim::unsteady(sim::options("pd-1p1d", SPEED)).await;
    let ns = sim.namespace();
    let deadline = Instant::now() + Duration::from_secs(30);
    while ["prefill", "decode"]
        .iter()
        .any(|s| pods_of(sim.store(), &ns, s).is_empty())
    {
        assert!(Instant::now() < deadline, "the worker pods never appeared");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for s in ["prefill", "decode"] {
        assert!(sim.ready_pods(s).is_empty(), "{s} is Ready already");
    }
    sim
}

async fn restart_decode(sim: &Sim, force: bool) -> RolloutOutcome {
    let target: Target = "idep/llama".parse().unwrap_or_else(|e| panic!("{e}"));
    let mut req = Request::restart(target);
    req.services = vec!["decode".into()];
    let mut opts = Options::unattended(SPEED);
    opts.force = force;
    let conn = sim.connect().await;
    execute(&conn, req, opts, std::future::pending())
        .await
        .unwrap_or_else(|e| panic!("rollout: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_roll_started_below_the_floor_is_refused_and_not_blamed() {
    let sim = loading().await;
    let refused = restart_decode(&sim, false).await;
    assert_eq!(refused.exit, Exit::Stalled);
    assert!(refused.report.is_none());
    let plan = refused.plan.as_ref().expect("a plan");
    let text = plan.render();
    for role in ["prefill", "decode"] {
        assert!(
            text.contains(&format!("{role} 0/0 (below the floor)")),
            "{text}"
        );
    }
    assert!(
        text.contains("Serving now (Ready/routable, floor 1): "),
        "{text}"
    );
    let refusal = plan.refusal();
    assert!(
        refusal.contains("prefill, decode are already below the floor")
            || refusal.contains("decode, prefill are already below the floor"),
        "{refusal}"
    );
    let live = (sim.store())
        .get(Kind::InferaDeployment, Some(&sim.namespace()), "llama")
        .unwrap_or_default();
    assert!(
        !live.to_string().contains("restarted-at"),
        "nothing changed"
    );

    let forced = restart_decode(&sim, true).await;
    let report = forced.report.as_ref().expect("a report");
    let json = report.to_json();
    assert_eq!(forced.exit, Exit::Ok, "{json}");
    let doc: Value = serde_json::from_str(&json).unwrap_or_default();
    for role in doc["roles"].as_array().into_iter().flatten() {
        let already = &role["already_below"];
        assert_eq!(already["ready"], 0, "{json}");
        assert_eq!(already["to_end"], false, "{json}");
        assert!(
            already["seconds"].as_f64().is_some_and(|s| s > 0.0),
            "{json}"
        );
        assert_eq!(role["seconds_below_min_ready"], 0.0, "{json}");
    }
    let sentence = report.sentence();
    assert!(
        sentence.contains("the roll took no role below the floor")
            && sentence.contains(
                "prefill was already below the floor when the roll began (0 Ready, 0 routable, for "
            ),
        "{sentence}"
    );
    assert!(!sentence.contains("fell to"), "{sentence}");
    assert!(
        report.table().ends_with("min sampled does not)"),
        "{}",
        report.table()
    );
    let ctx = infera::console::html::PageContext {
        context: None,
        namespace: None,
        command: "infera rollout restart idep/llama --service decode --force".into(),
        plan: None,
    };
    let page = infera::console::html::render(report, &ctx).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        page.contains(
            "<p class=\"already\">prefill was already below the floor when the roll began"
        ),
        "{page}"
    );
    sim.shutdown().await;
}

/// `rollout restart deploy/llama-worker --dry-run` on `surge-no-readiness`:
/// the leg's lint column names the finding behind its GAP, and each finding
/// is printed once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_shows_its_findings_on_the_leg_once() {
    let sim = Sim::start("surge-no-readiness", 200.0).await;
    let target: Target = "deploy/llama-worker"
        .parse()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut opts = Options::unattended(200.0);
    opts.dry_run = true;
    opts.force = false;
    let conn = sim.connect().await;
    let outcome = execute(
        &conn,
        Request::restart(target),
        opts,
        std::future::pending(),
    )
    .await
    .unwrap_or_else(|e| panic!("rollout: {e}"));
    let plan = outcome.plan.as_ref().expect("a plan");
    let leg = &plan.legs[0];
    assert_eq!(plan.verdict_label(leg), "GAP");
    let codes: Vec<&str> = leg.findings.iter().map(|f| f.code.as_str()).collect();
    assert!(codes.contains(&"IR007"), "{codes:?}");
    let text = plan.render();
    assert!(!text.contains("clean"), "{text}");
    for f in leg.findings.iter().chain(&plan.other_findings) {
        let line = format!("[{}]: {}", f.code, f.message);
        assert_eq!(text.matches(&line).count(), 1, "{line} in {text}");
    }
    assert!(text.contains("llama-worker 1/1"), "{text}");
    // A dry run exits as the roll would begin: refused, 3.
    assert_eq!(outcome.exit, Exit::Stalled);
    sim.shutdown().await;
}

/// A resumed roll's first run may have taken a role below the floor: the
/// rerun's report counts every fall (no `already_below`), so an
/// old-pod-first roll interrupted while decode is dark still exits 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_roll_owns_the_gap_its_first_run_left() {
    let speed = 50.0;
    let sim = Sim::start("pd-1p1d-skip-probe", speed).await;
    let target: Target = "idep/llama".parse().unwrap_or_else(|e| panic!("{e}"));
    let conn = sim.connect().await;
    let (store, ns) = (sim.store().clone(), sim.namespace());
    let decode_dark = async move {
        while !crate::common::sim::ready_pods(&store, &ns, "decode").is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let first = execute(
        &conn,
        Request::restart(target.clone()),
        Options::unattended(speed),
        decode_dark,
    )
    .await
    .unwrap_or_else(|e| panic!("rollout: {e}"));
    assert_eq!(first.exit, Exit::Interrupted);
    assert!(sim.ready_pods("decode").is_empty(), "decode is still dark");
    let resumed = execute(
        &conn,
        Request::restart(target),
        Options::unattended(speed),
        std::future::pending(),
    )
    .await
    .unwrap_or_else(|e| panic!("rollout: {e}"));
    let report = resumed.report.as_ref().expect("a report");
    let json = report.to_json();
    assert_eq!(resumed.exit, Exit::Findings, "{json}");
    assert!(!json.contains("already_below"), "{json}");
    assert!(
        report.sentence().contains("decode fell to 0"),
        "{}",
        report.sentence()
    );
    sim.shutdown().await;
}

/// `kubectl rollout restart deploy/llama-decode` (its template annotation,
/// as kubectl patches it) on an operator-rendered Deployment: the operator
/// reverts it, the replacement goes before it is Ready, and `infera audit`
/// says the restart was undone instead of a bare "never fewer…"; its steps
/// are said live on stderr as they happen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_says_when_the_operator_undid_a_restart() {
    let sim = Sim::start("pd-1p1d", 20.0).await;
    let kubeconfig = sim.kubeconfig().display().to_string();
    let audit = tokio::task::spawn_blocking(move || {
        crate::common::process::infera(&[
            "audit",
            "idep/llama",
            "--for",
            "20s",
            "-n",
            "llm",
            "--kubeconfig",
            &kubeconfig,
        ])
        .output()
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    let at = "2026-12-08T00:00:00Z";
    sim.store()
        .mutate(Kind::Deployment, Some("llm"), "llama-decode", |d| {
            d["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] =
                at.into();
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let out = audit
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("infera: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let undone = "; a restart was undone before it served: llama-decode-";
    assert!(stdout.contains(undone), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "(kubectl.kubernetes.io/restartedAt {at}) was deleted before it was Ready"
        )),
        "{stdout}"
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    // The audit said each step as it came, on stderr, before its end.
    let stderr = String::from_utf8_lossy(&out.stderr);
    for kind in ["created", "deleted"] {
        let live = format!("decode   {kind:<17} llama-decode-");
        assert!(stderr.contains(&live), "{live:?} in\n{stderr}");
    }
    sim.shutdown().await;
}
