//! `--report FILE.html`: the incident report as one self-contained page —
//! inline CSS and the timeline chart as inline SVG; nothing is fetched.

use std::fmt::Write as _;
use std::path::Path;

use infera_audit::minutes_seconds as mss;
use infera_audit::{ManyReport, Report, ReportError, format_seconds};

mod strip;

/// What the page says besides the [`Report`]: where it ran and what was
/// planned.
#[derive(Debug, Clone, Default)]
pub struct PageContext {
    /// The kubeconfig context name (`None`: in-cluster or unknown).
    pub context: Option<String>,
    /// The namespace the command acted in.
    pub namespace: Option<String>,
    /// The command (`infera rollout restart idep/x`, `infera audit …`).
    pub command: String,
    /// The plan as text ([`Plan::render`](infera_rollout::plan::Plan::render)),
    /// when there was one.
    pub plan: Option<String>,
}

/// Whether `path` names an HTML report (`.html` / `.htm`).
pub fn is_html(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"))
}

/// Write the page to `path`.
pub fn write(path: &Path, report: &Report, ctx: &PageContext) -> Result<(), ReportError> {
    write_page(path, render(report, ctx))
}

/// Write a rendered page to `path`, or say which step failed for it.
fn write_page(path: &Path, page: Result<String, String>) -> Result<(), ReportError> {
    let page = page.map_err(|message| ReportError::Draw {
        path: path.display().to_string(),
        message,
    })?;
    std::fs::write(path, page).map_err(|source| ReportError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// HTML-escape text for element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1140px;color:#222}\
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}\
dl.meta{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dl.meta dt{font-weight:600}\
dl.meta dd{margin:0}table{border-collapse:collapse;font-size:.92em}\
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}th{background:#f3f3f3}\
td.num{text-align:right;font-variant-numeric:tabular-nums}tr.below td{background:#fde8e8}\
p.verdict{font-size:1.1em;padding:.6em .9em;border-left:5px solid #2a7}\
p.verdict.bad{border-color:#d62728;background:#fff4f4}\
pre{white-space:pre-wrap;background:#f7f7f7;padding:.8em;overflow-x:auto;font-size:.82em}\
figure{margin:0}figure svg{max-width:100%;height:auto}";

/// Added to [`STYLE`] on a several-target page: the per-target verdicts.
const MANY_STYLE: &str = "ul#verdicts{list-style:none;padding:0}\
li.verdict{padding:.3em .9em;margin:.3em 0;border-left:5px solid #2a7}\
li.verdict.bad{border-color:#d62728;background:#fff4f4}";

/// The page.
pub fn render(report: &Report, ctx: &PageContext) -> Result<String, String> {
    let held = report.all_held()
        && report.outcome == infera_audit::Outcome::Complete
        && !report.traffic_failed();
    page(
        report,
        ctx,
        &Verdicts::one(report.verdict(), held),
        &[report],
    )
}

/// The page of a several-target audit: the overall verdict, one per
/// target, one table (a row per target and role) and one chart (a panel
/// per target and role).
pub fn render_many(many: &ManyReport, ctx: &PageContext) -> Result<String, String> {
    let verdicts = Verdicts {
        overall: many.sentence(),
        held: many.exit() == infera_audit::exit::Exit::Ok,
        targets: many
            .target_sentences()
            .into_iter()
            .zip(&many.reports)
            .map(|(line, r)| (line, r.exit() == infera_audit::exit::Exit::Ok))
            .collect(),
    };
    let sending: Vec<&Report> = many
        .reports
        .iter()
        .filter(|r| r.traffic.is_some())
        .collect();
    page(&many.combined(), ctx, &verdicts, &sending)
}

/// Write the page of a several-target audit to `path`.
pub fn write_many(path: &Path, many: &ManyReport, ctx: &PageContext) -> Result<(), ReportError> {
    write_page(path, render_many(many, ctx))
}

/// The verdict section: one sentence, and one per target when several.
struct Verdicts {
    overall: String,
    held: bool,
    /// (sentence, held) per target; empty for a single-target page.
    targets: Vec<(String, bool)>,
}

impl Verdicts {
    fn one(sentence: String, held: bool) -> Self {
        Verdicts {
            overall: sentence,
            held,
            targets: Vec::new(),
        }
    }

    fn write(&self, h: &mut String) {
        let class = |held: bool| if held { "verdict" } else { "verdict bad" };
        let _ = writeln!(
            h,
            "<h2>Verdict</h2><p class=\"{}\" id=\"verdict\">{}</p>",
            class(self.held),
            escape(&self.overall)
        );
        if self.targets.is_empty() {
            return;
        }
        h.push_str("<ul id=\"verdicts\">");
        for (line, held) in &self.targets {
            let _ = write!(h, "<li class=\"{}\">{}</li>", class(*held), escape(line));
        }
        h.push_str("</ul>\n");
    }
}

/// `sending`: the reports whose requests the page shows (each a verdict
/// line and a strip: a drain sends through each fleet's router).
fn page(
    report: &Report,
    ctx: &PageContext,
    verdicts: &Verdicts,
    sending: &[&Report],
) -> Result<String, String> {
    let svg = report.timeline.svg(
        &report.target,
        report.min_ready,
        &report.role_services(),
        &[],
    )?;
    let svg = strip_xml_declaration(&svg);
    let title = format!("infera {}: {}", report.outcome.as_str(), report.target);
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{}</title><style>{STYLE}{}</style></head><body>\n",
        escape(&title),
        if verdicts.targets.is_empty() {
            ""
        } else {
            MANY_STYLE
        }
    );
    let _ = writeln!(h, "<h1>{}</h1>", escape(&title));
    meta(&mut h, report, ctx);
    verdicts.write(&mut h);
    for traffic in sending.iter().filter_map(|r| r.traffic.as_ref()) {
        strip::verdict(&mut h, traffic);
    }
    roles(&mut h, report);
    let _ = writeln!(h, "<h2>Timeline</h2><figure id=\"timeline\">{svg}</figure>");
    for r in sending {
        if let Some(traffic) = &r.traffic {
            strip::section(&mut h, r, traffic);
        }
    }
    if let Some(plan) = &ctx.plan {
        let _ = writeln!(h, "<h2>Plan</h2><pre id=\"plan\">{}</pre>", escape(plan));
    }
    steps(&mut h, report);
    h.push_str("</body></html>\n");
    Ok(h)
}

fn strip_xml_declaration(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

fn meta(h: &mut String, report: &Report, ctx: &PageContext) {
    let rows = [
        ("target", report.target.clone()),
        ("namespace", ctx.namespace.clone().unwrap_or_default()),
        (
            "kube context",
            ctx.context.clone().unwrap_or_else(|| "(in-cluster)".into()),
        ),
        ("command", ctx.command.clone()),
        ("infera version", env!("CARGO_PKG_VERSION").to_string()),
        ("outcome", report.outcome.as_str().to_string()),
        ("duration", format_seconds(report.duration_s)),
        (
            "samples",
            format!(
                "{} (every {})",
                report.samples,
                format_seconds(report.sample_interval_s)
            ),
        ),
        ("min-ready", report.min_ready.to_string()),
        ("started", report.started_at.clone().unwrap_or_default()),
    ];
    h.push_str("<dl class=\"meta\" id=\"meta\">");
    for (k, v) in rows.iter().filter(|(_, v)| !v.is_empty()) {
        let _ = write!(h, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(v));
    }
    h.push_str("</dl>\n");
}

fn opt(v: Option<u32>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn roles(h: &mut String, report: &Report) {
    h.push_str(
        "<h2>Per role</h2><table id=\"roles\"><thead><tr><th>role</th><th>services</th>\
         <th>min Ready exact</th><th>min Ready sampled</th><th>min routable exact</th>\
         <th>min routable sampled</th><th>time below min Ready</th>\
         <th>time below min routable</th><th>longest gap</th></tr></thead><tbody>\n",
    );
    for r in &report.roles {
        let class = if r.held(report.min_ready) {
            ""
        } else {
            " class=\"below\""
        };
        let cells = [
            opt(r.min_ready_exact),
            opt(r.min_ready_sampled),
            opt(r.min_routable_exact),
            opt(r.min_routable_sampled),
            format_seconds(r.seconds_below_min_ready),
            format_seconds(r.seconds_below_min_routable),
            format_seconds(r.longest_gap_s),
        ];
        let _ = write!(
            h,
            "<tr{class}><td>{}</td><td>{}</td>",
            escape(&r.role),
            escape(&r.services.join(", "))
        );
        for c in cells {
            let _ = write!(h, "<td class=\"num\">{}</td>", escape(&c));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table>\n");
    if let Some(note) = report.already_note() {
        let _ = writeln!(h, "<p class=\"already\">{}</p>", escape(note));
    }
    for text in (report.roles.iter()).filter_map(|r| r.already_text(report.activity)) {
        let _ = writeln!(
            h,
            "<p class=\"already\">{}: not counted as a gap.</p>",
            escape(&text)
        );
    }
}

fn steps(h: &mut String, report: &Report) {
    h.push_str(
        "<h2>Steps</h2><table id=\"steps\"><thead><tr><th>elapsed</th><th>time (UTC)</th>\
         <th>service</th><th>step</th><th>pod</th><th>node</th></tr></thead><tbody>\n",
    );
    for s in &report.steps {
        let _ = writeln!(
            h,
            "<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            mss(s.elapsed_s),
            escape(&s.at),
            escape(&s.service),
            escape(&s.kind),
            escape(s.pod.as_deref().unwrap_or("")),
            escape(s.node.as_deref().unwrap_or(""))
        );
    }
    h.push_str("</tbody></table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert!(is_html(Path::new("r.HTML")));
        assert!(!is_html(Path::new("r.json")));
    }
}
