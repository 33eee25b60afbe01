//! `--report FILE.html`: the incident report of a real rollout on the
//! embedded simulator (pd-1p1d-skip-probe, so both roles fall below
//! `--min-ready`), rendered in headless Chromium. Without a `chromium` on
//! `PATH` (or `INFERA_CHROMIUM`) the browser half skips and says why;
//! `INFERA_CHROMIUM_REQUIRED` turns that skip into a failure (CI).

use std::path::{Path, PathBuf};
use std::process::Command;

use infera::console::html::PageContext;
use infera_audit::Outputs;
use infera_audit::exit::Exit;
use infera_rollout::target::Target;
use infera_rollout::{Options, Request, execute};

use crate::common::sim::Sim;

const SPEED: f64 = 200.0;

/// The browser binary, or why there is none.
fn chromium() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("INFERA_CHROMIUM") {
        return Ok(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err("no chromium on PATH (Debian: apt-get install chromium; or set INFERA_CHROMIUM)".into())
}

fn headless(browser: &Path, profile: &Path, extra: &[&str], page: &Path) -> std::process::Output {
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", browser.display()));
    assert!(
        out.status.success(),
        "{} failed: {}",
        browser.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Roll idep/llama on pd-1p1d-skip-probe and write the page through the
/// CLI's output path; returns the page's path (kept in the temp dir).
async fn rollout_page(dir: &Path) -> PathBuf {
    let sim = Sim::start("pd-1p1d-skip-probe", SPEED).await;
    let conn = sim.connect().await;
    let target: Target = "idep/llama".parse().unwrap_or_else(|e| panic!("{e}"));
    let outcome = execute(
        &conn,
        Request::restart(target),
        Options::unattended(SPEED),
        std::future::pending(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    sim.shutdown().await;
    let page_path = dir.join("report.html");
    let outputs = Outputs {
        report: Some(page_path.clone()),
        timeline: vec![dir.join("timeline.svg")],
    };
    let page = PageContext {
        context: conn.context.clone(),
        namespace: Some(conn.namespace.clone()),
        command: "infera rollout restart idep/llama".into(),
        plan: outcome.plan.as_ref().map(|p| p.render()),
    };
    let exit = infera::console::finish_outputs_with(
        outcome.report.as_ref(),
        &outputs,
        outcome.exit,
        &page,
    );
    assert_eq!(exit, Exit::Findings, "both roles fell below --min-ready 1");
    page_path
}

fn assert_page_content(html: &str) {
    for needle in [
        "<table id=\"roles\"",
        "<td>prefill</td>",
        "<td>decode</td>",
        "<figure id=\"timeline\"><svg",
        "Ready below min",
        "role prefill",
        "role decode",
        "infera-sim",
        "Plan for idep/llama",
        "<table id=\"steps\"",
        env!("CARGO_PKG_VERSION"),
    ] {
        assert!(html.contains(needle), "no {needle:?} in the page");
    }
    // Self-contained: nothing fetched.
    for external in ["<script", "<link", "src=\"http", "href=\"http", "url(http"] {
        assert!(!html.contains(external), "the page references {external}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn html_report_renders_in_headless_chromium() {
    let dir = std::env::temp_dir().join(format!("infera-report-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let page = rollout_page(&dir).await;
    let html = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{e}"));
    assert_page_content(&html);
    let svg = std::fs::read_to_string(dir.join("timeline.svg")).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        svg.contains("Ready below min") && svg.contains("0:00"),
        "{svg}"
    );
    let browser = match chromium() {
        Ok(b) => b,
        Err(why) if std::env::var_os("INFERA_CHROMIUM_REQUIRED").is_some() => {
            panic!("INFERA_CHROMIUM_REQUIRED is set but {why}")
        }
        Err(why) => {
            eprintln!(
                "skipping the browser check: {why} (page left at {})",
                page.display()
            );
            return;
        }
    };
    let profile = dir.join("profile");
    let dom = headless(&browser, &profile, &["--dump-dom"], &page);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("<table id=\"roles\""),
        "no role table in the DOM:\n{dom}"
    );
    assert!(
        dom.contains("<figure id=\"timeline\"><svg"),
        "no chart in the DOM"
    );
    assert!(
        dom.contains("<rect"),
        "the chart has no shaded interval in the DOM"
    );
    let shot = dir.join("report.png");
    headless(
        &browser,
        &profile,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000",
        ],
        &page,
    );
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot: {e}"));
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "screenshot too small"
    );
    eprintln!("screenshot: {}", shot.display());
}
