//! `--report FILE.html`: the incident report of a real rollout on the
//! embedded simulator (pd-1p1d-skip-probe, so both roles fall below
//! `--min-ready`) with requests sent through the serving path (the strip,
//! the per-leg table and the requests' verdict), rendered in headless
//! Chromium. Without a `chromium` on
//! `PATH` (or `INFERA_CHROMIUM`) the browser half skips and says why;
//! `INFERA_CHROMIUM_REQUIRED` turns that skip into a failure (CI).

use std::path::{Path, PathBuf};
use std::process::Command;

use infera::console::html::PageContext;
use infera_audit::Outputs;
use infera_audit::exit::Exit;
use infera_audit::traffic::TrafficReport;
use infera_rollout::target::Target;
use infera_rollout::{Options, Request, execute};

use crate::common;
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

/// Roll idep/llama on pd-1p1d-skip-probe with traffic and write the page
/// through the CLI's output path; returns the page's path (kept in the
/// temp dir) and the requests' evidence it was drawn from.
async fn rollout_page(dir: &Path) -> (PathBuf, TrafficReport) {
    let sim = Sim::start("pd-1p1d-skip-probe", SPEED).await;
    let conn = sim.connect().await;
    let traffic = common::traffic::start(&conn, "llama", 20.0).await;
    let target: Target = "idep/llama".parse().unwrap_or_else(|e| panic!("{e}"));
    let mut outcome = execute(
        &conn,
        Request::restart(target),
        Options::unattended(SPEED),
        std::future::pending(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let (_, exit, evidence) = common::traffic::attach(traffic, &mut outcome).await;
    sim.shutdown().await;
    let page_path = dir.join("report.html");
    let outputs = Outputs {
        report: Some(page_path.clone()),
        timeline: vec![dir.join("timeline.svg"), dir.join("timeline.csv")],
    };
    let page = PageContext {
        context: conn.context.clone(),
        namespace: Some(conn.namespace.clone()),
        command: "infera rollout restart idep/llama".into(),
        plan: outcome.plan.as_ref().map(|p| p.render()),
    };
    let exit = infera::console::finish_outputs_with(outcome.report.as_ref(), &outputs, exit, &page);
    assert_eq!(exit, Exit::Findings, "both roles fell below --min-ready 1");
    (page_path, evidence)
}

/// The strip's rows (`data-label`, `data-count`), in page order.
fn strip_rows(html: &str) -> Vec<(String, u64)> {
    html.split("<path class=\"requests\" data-label=\"")
        .skip(1)
        .map(|rest| {
            let (label, rest) = rest.split_once('"').unwrap_or_else(|| panic!("{rest}"));
            let count = rest
                .trim_start_matches(" data-count=\"")
                .split('"')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no count after {label}"));
            (label.to_string(), count)
        })
        .collect()
}

/// The strip sits under the pod timeline, each request is in the row of
/// its class, the rows' counts are the report's, every cause is labelled
/// at its step, and the tables and the sentence are the report's own.
fn assert_request_strip(html: &str, t: &TrafficReport) {
    assert!(t.total.sent > 0, "no request was sent: {t:?}");
    let at = |needle: &str| {
        html.find(needle)
            .unwrap_or_else(|| panic!("no {needle:?} in the page"))
    };
    assert!(at("<figure id=\"timeline\">") < at("<figure id=\"requests\"><svg"));
    assert!(at("<figure id=\"requests\">") < at("<table id=\"legs\""));
    let rows = strip_rows(html);
    let mut expected: Vec<(String, u64)> = vec![("ok".into(), t.total.succeeded)];
    expected.extend(t.total.failed.iter().map(|(k, v)| (k.clone(), *v)));
    if t.total.unattributed > 0 {
        expected.push(("unattributed".into(), t.total.unattributed));
    }
    expected.retain(|(_, n)| *n > 0);
    assert_eq!(
        rows, expected,
        "the strip's rows are not the report's tally"
    );
    assert_eq!(rows.iter().map(|(_, n)| n).sum::<u64>(), t.total.sent);
    for c in &t.causes {
        let label = match c.step_elapsed_s {
            Some(at) => format!(
                "{} {} after {} at +{}",
                c.count,
                c.label,
                c.step,
                infera_audit::format_seconds(at)
            ),
            None => format!("{} {} before any step", c.count, c.label),
        };
        assert!(html.contains(&label), "no cause label {label:?}");
    }
    assert_eq!(
        html.matches("<line class=\"cause\"").count(),
        t.causes.len()
    );
    let sentence = infera::console::html::escape(&t.sentence());
    assert!(
        html.contains(&format!("id=\"traffic-verdict\">requests: {sentence}</p>")),
        "no requests' verdict {sentence:?}"
    );
    for leg in &t.legs {
        let row = format!(
            "<td>{}</td><td class=\"num\">{}</td>",
            leg.name, leg.tally.sent
        );
        assert!(html.contains(&row), "no leg row {row:?}");
    }
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
    let (page, traffic) = rollout_page(&dir).await;
    let html = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{e}"));
    assert_page_content(&html);
    assert_request_strip(&html, &traffic);
    let svg = std::fs::read_to_string(dir.join("timeline.svg")).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        svg.contains("Ready below min") && svg.contains("0:00"),
        "{svg}"
    );
    let lane = format!("requests by start: {} sent", traffic.total.sent);
    assert!(svg.contains(&lane), "no {lane:?} in the SVG");
    let csv = std::fs::read_to_string(dir.join("timeline.csv")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        csv.lines().filter(|l| l.contains(",request:")).count() as u64,
        traffic.total.sent
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
    assert!(
        dom.contains("<figure id=\"requests\"><svg") && dom.contains("<path class=\"requests\""),
        "no request strip in the DOM"
    );
    assert_eq!(
        strip_rows(&dom),
        strip_rows(&html),
        "the browser's strip differs from the page's"
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
