//! Helm charts and Kustomize directories: rendered by their own tools
//! (`helm template`, `kubectl kustomize`), never read as raw YAML, and each
//! rendered object traced back to the file and line it came from.
//!
//! A directory holding `Chart.yaml` is a chart, one holding
//! `kustomization.yaml` (`.yml`, `Kustomization`) an overlay; the walk in
//! [`super::expand_inputs`] does not descend into either. Helm names the
//! template of every rendered document in a `# Source: CHART/PATH` comment
//! (kube-linter reads the same comment); the line inside the template is
//! found by aligning the rendered lines with the template's literal text
//! ([`align`]). Kustomize names nothing, unless the kustomization asks for
//! `buildMetadata: [originAnnotations]`: then `config.kubernetes.io/origin`
//! gives the file, else findings point at the `kustomization.yaml`.

use std::path::{Path as FsPath, PathBuf};
use std::process::Command;

/// What renders a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Renderer {
    /// `helm template DIR` (a directory with `Chart.yaml`).
    Helm,
    /// `kubectl kustomize DIR` (a directory with `kustomization.yaml`).
    Kustomize,
}

impl Renderer {
    /// The renderer of a directory, from the names of its entries.
    pub fn of_dir<'n>(names: impl IntoIterator<Item = &'n str>) -> Option<Renderer> {
        let mut found = None;
        for n in names {
            match n {
                "Chart.yaml" => return Some(Renderer::Helm),
                "kustomization.yaml" | "kustomization.yml" | "Kustomization" => {
                    found = Some(Renderer::Kustomize);
                }
                _ => {}
            }
        }
        found
    }

    /// What the directory is, for messages.
    pub fn what(self) -> &'static str {
        match self {
            Renderer::Helm => "a Helm chart",
            Renderer::Kustomize => "a Kustomize directory",
        }
    }

    /// The program run when none is configured (looked up on `PATH`).
    pub fn program(self) -> &'static str {
        match self {
            Renderer::Helm => "helm",
            Renderer::Kustomize => "kubectl",
        }
    }
}

/// How charts and overlays are rendered: the programs (`--helm`,
/// `--kubectl`, or found on `PATH`) and what passes through to helm
/// (`--values`, `--set`).
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    /// helm to run; None: `helm` on `PATH`.
    pub helm: Option<PathBuf>,
    /// kubectl to run for `kubectl kustomize`; None: `kubectl` on `PATH`.
    pub kubectl: Option<PathBuf>,
    /// `helm template --values FILE`, in order.
    pub values: Vec<PathBuf>,
    /// `helm template --set KEY=VALUE`, in order.
    pub set: Vec<String>,
}

impl RenderOptions {
    /// The arguments after the program for `dir`.
    fn args(&self, renderer: Renderer, dir: &FsPath) -> Vec<String> {
        let dir = super::display_path(dir);
        match renderer {
            Renderer::Helm => {
                let mut args = vec!["template".to_string(), dir];
                for v in &self.values {
                    args.push("--values".into());
                    args.push(super::display_path(v));
                }
                for s in &self.set {
                    args.push("--set".into());
                    args.push(s.clone());
                }
                args
            }
            Renderer::Kustomize => vec!["kustomize".to_string(), dir],
        }
    }

    /// The command a user runs by hand: `helm template DIR --set a=b | infera lint -`.
    pub fn command_line(&self, renderer: Renderer, dir: &FsPath) -> String {
        let mut words = vec![renderer.program().to_string()];
        words.extend(self.args(renderer, dir).iter().map(|a| shell_word(a)));
        format!("{} | infera lint -", words.join(" "))
    }

    /// The program that renders with `renderer`, if there is one.
    pub fn program(&self, renderer: Renderer) -> Option<PathBuf> {
        let configured = match renderer {
            Renderer::Helm => &self.helm,
            Renderer::Kustomize => &self.kubectl,
        };
        match configured {
            Some(p) => Some(p.clone()),
            None => on_path(renderer.program()),
        }
    }

    /// Render `dir`: Ok(bytes) is the tool's standard output; Err says why
    /// it could not run or what it reported.
    pub fn render(&self, renderer: Renderer, dir: &FsPath) -> Result<Vec<u8>, Unrendered> {
        let Some(program) = self.program(renderer) else {
            return Err(Unrendered::NoTool);
        };
        let out = Command::new(&program)
            .args(self.args(renderer, dir))
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| Unrendered::Failed(format!("cannot run {}: {e}", program.display())))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let said: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
            let said = said[said.len().saturating_sub(3)..].join(" / ");
            return Err(Unrendered::Failed(format!(
                "{} failed ({}): {said}",
                renderer.program(),
                out.status
            )));
        }
        Ok(out.stdout)
    }
}

/// Why a directory was not rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unrendered {
    /// The tool is not there: the directory is skipped, not an error.
    NoTool,
    /// The tool ran and failed (a bad chart or values): an input error.
    Failed(String),
}

/// A word as a POSIX shell reads it back.
fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The first executable `name` on `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && executable(&m)))
}

#[cfg(unix)]
fn executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_: &std::fs::Metadata) -> bool {
    true
}

/// Where one rendered document came from: the file findings name, and the
/// line in that file of each line of the document (0: not known).
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// The file as reports name it (`DIR/templates/x.yaml`).
    pub file: String,
    /// The file's lines whose text findings may show (1-based line → text).
    pub text: Option<String>,
    /// Per line of the rendered document (0-based): the file's line.
    pub lines: Vec<usize>,
}

impl Origin {
    /// The file's line for line `rendered` (1-based, of the document).
    pub fn line(&self, rendered: usize) -> usize {
        rendered
            .checked_sub(1)
            .and_then(|i| self.lines.get(i))
            .copied()
            .unwrap_or(0)
    }
}

/// The file a rendered document came from: Helm's `# Source: CHART/PATH`
/// (relative to the chart's directory once the chart's name is dropped),
/// or Kustomize's `config.kubernetes.io/origin` annotation's `path:`.
pub fn source_of(renderer: Renderer, document: &str) -> Option<String> {
    match renderer {
        Renderer::Helm => helm_source(document).map(|(_, rest)| rest.to_string()),
        Renderer::Kustomize => {
            let at = document.find("config.kubernetes.io/origin:")?;
            let rest = &document[at..];
            let path = rest.split_once("path: ")?.1.lines().next()?;
            Some(path.trim().trim_matches(['"', '\'']).to_string())
        }
    }
}

/// Helm's `# Source: CHART/PATH` comment at the head of a rendered
/// document, as (chart name, path inside the chart).
fn helm_source(document: &str) -> Option<(&str, &str)> {
    document
        .lines()
        .take_while(|l| l.starts_with('#') || l.starts_with("---") || l.trim().is_empty())
        .find_map(|l| l.strip_prefix("# Source: "))?
        .trim()
        .split_once('/')
}

/// The origin of one rendered document of `dir`.
pub fn origin(renderer: Renderer, dir: &FsPath, document: &str) -> Origin {
    let fallback = match renderer {
        Renderer::Helm => dir.join("Chart.yaml"),
        Renderer::Kustomize => dir.join("kustomization.yaml"),
    };
    let Some(rel) = source_of(renderer, document) else {
        return Origin {
            file: super::display_path(&fallback),
            text: None,
            lines: Vec::new(),
        };
    };
    let path = lexical_join(dir, &rel);
    let text = std::fs::read(&path)
        .ok()
        .filter(|b| b.len() <= super::MAX_DOCUMENT_BYTES)
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    let lines = text
        .as_deref()
        .map(|t| align(t, &document.lines().collect::<Vec<_>>()))
        .unwrap_or_default();
    Origin {
        file: super::display_path(&path),
        text,
        lines,
    }
}

/// Where the charts of a `helm template` stream read from stdin live, so
/// that its findings point at the templates as a chart directory's do.
/// Helm's `# Source: CHART/PATH` names a chart by its `Chart.yaml` `name`,
/// not by its directory; the directory is found under the working
/// directory: itself (`helm template .`), or a directory at most
/// [`CHART_SEARCH_DEPTH`] levels down whose `Chart.yaml` has that name
/// (`helm template charts/w`). A chart not found leaves its documents on
/// stdin's own lines.
#[derive(Debug, Default)]
pub struct StdinCharts {
    dirs: std::collections::BTreeMap<String, PathBuf>,
}

/// How deep under the working directory a chart named on stdin is looked for.
pub const CHART_SEARCH_DEPTH: usize = 4;

impl StdinCharts {
    /// The charts `stream` names, found from `cwd` (no walk when it names none).
    pub fn find(stream: &[u8], cwd: &FsPath) -> StdinCharts {
        let text = String::from_utf8_lossy(stream);
        let named: std::collections::BTreeSet<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# Source: ")?.trim().split_once('/'))
            .map(|(chart, _)| chart)
            .collect();
        let mut dirs = std::collections::BTreeMap::new();
        if named.is_empty() {
            return StdinCharts { dirs };
        }
        let mut found = Vec::new();
        charts_under(cwd, CHART_SEARCH_DEPTH, &mut found);
        for (name, dir) in found {
            if named.contains(name.as_str()) {
                dirs.entry(name).or_insert(dir);
            }
        }
        StdinCharts { dirs }
    }

    /// The template of one document, when its chart was found.
    pub fn origin(&self, document: &str) -> Option<Origin> {
        let (chart, rel) = helm_source(document)?;
        let dir = self.dirs.get(chart)?;
        lexical_join(dir, rel)
            .is_file()
            .then(|| origin(Renderer::Helm, dir, document))
    }
}

/// Every chart at most `depth` levels under `dir` (itself included), as
/// (its `Chart.yaml` name, its directory), shallowest first. Hidden
/// directories and build output are not entered.
fn charts_under(dir: &FsPath, depth: usize, out: &mut Vec<(String, PathBuf)>) {
    if let Some(name) = chart_name(&dir.join("Chart.yaml")) {
        out.push((name, dir.to_path_buf()));
    }
    let Some(depth) = depth.checked_sub(1) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut subdirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            !(n.starts_with('.') || n == "target" || n == "node_modules")
        })
        .map(|e| e.path())
        .collect();
    subdirs.sort();
    for sub in subdirs {
        charts_under(&sub, depth, out);
    }
}

/// The `name:` of a `Chart.yaml` (its top-level line), if the file is one.
fn chart_name(path: &FsPath) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("name:"))
        .map(|n| n.trim().trim_matches(['"', '\'']).to_string())
        .filter(|n| !n.is_empty())
}

/// `dir/rel` with `.` and `..` folded away where `dir` allows
/// (`overlay/../base/d.yaml` is `base/d.yaml`), as reports should name it.
fn lexical_join(dir: &FsPath, rel: &str) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in dir.join(rel).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Largest template × rendered line count aligned (beyond it lines are
/// not traced, so the work stays bounded).
const MAX_ALIGN_CELLS: usize = 4_000_000;

/// For each rendered line, the template line (1-based) it came from, or 0.
///
/// The template's lines are matched to the rendered ones by their literal
/// text (the part before the first `{{`, indentation ignored) with a
/// weighted longest common subsequence, so conditionals that drop lines
/// and values that change them keep the rest in step. A rendered line that
/// matches nothing (the output of `include`, `toYaml`, `tpl`) is traced to
/// the first action line that outputs something between its matched
/// neighbours, else to the line matched before it.
pub fn align(template: &str, rendered: &[&str]) -> Vec<usize> {
    let t: Vec<&str> = template.lines().collect();
    let (n, m) = (rendered.len(), t.len());
    if n == 0 || m == 0 || n.saturating_mul(m) > MAX_ALIGN_CELLS {
        return vec![0; n];
    }
    let weight = |i: usize, j: usize| literal_match(t[j], rendered[i]);
    // dp[(i, j)]: best weight aligning rendered[i..] with t[j..].
    let w = m + 1;
    let mut dp = vec![0u32; (n + 1) * w];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            let skip = dp[(i + 1) * w + j].max(dp[i * w + j + 1]);
            let take = weight(i, j).map_or(0, |k| dp[(i + 1) * w + j + 1] + k);
            dp[i * w + j] = skip.max(take);
        }
    }
    let mut matched = vec![None; n];
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        match weight(i, j) {
            Some(k) if dp[i * w + j] == dp[(i + 1) * w + j + 1] + k => {
                matched[i] = Some(j);
                i += 1;
                j += 1;
            }
            _ if dp[i * w + j] == dp[(i + 1) * w + j] => i += 1,
            _ => j += 1,
        }
    }
    fill_unmatched(&t, &matched)
}

/// Lines no literal text matched: the first outputting action line between
/// the matched neighbours, else the line before.
fn fill_unmatched(t: &[&str], matched: &[Option<usize>]) -> Vec<usize> {
    let mut out = Vec::with_capacity(matched.len());
    let mut before: Option<usize> = None;
    for (i, m) in matched.iter().enumerate() {
        if let Some(j) = m {
            before = Some(*j);
            out.push(j + 1);
            continue;
        }
        let from = before.map_or(0, |b| b + 1);
        let to = matched[i..]
            .iter()
            .flatten()
            .next()
            .copied()
            .unwrap_or(t.len());
        let action = (from..to).find(|&j| outputs(t[j]));
        out.push(action.or(before).map_or(0, |j| j + 1));
    }
    out
}

/// The weight of matching template line `t` to rendered line `r` (longer
/// literal text weighs more), or None when they cannot be the same line.
fn literal_match(t: &str, r: &str) -> Option<u32> {
    let (t, r) = (t.trim(), r.trim());
    if t.is_empty() || r.is_empty() || t.starts_with('#') {
        return None;
    }
    let weight = |s: &str| Some(1 + s.len().min(200) as u32);
    match t.find("{{") {
        None => (t == r).then(|| weight(t)).flatten(),
        Some(0) => None,
        Some(k) => r.starts_with(&t[..k]).then(|| weight(&t[..k])).flatten(),
    }
}

/// True for a template line that is only an action which writes text
/// (`{{ include … }}`, `{{ toYaml … }}`), not control flow or a comment.
fn outputs(line: &str) -> bool {
    let Some(inner) = line.trim().strip_prefix("{{") else {
        return false;
    };
    let inner = inner.trim_start_matches('-').trim_start();
    let control = [
        "if ", "else", "end", "range ", "with ", "define ", "/*", "block ",
    ];
    !control.iter().any(|c| inner.starts_with(c)) && !inner.contains(":=")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "w.fullname" . }}
  labels:
    {{- include "w.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  {{- if .Values.strategy }}
  strategy:
    {{- toYaml .Values.strategy | nindent 4 }}
  {{- end }}
  template:
    spec:
      containers:
        - name: vllm
          args: ["--port", "{{ .Values.port }}"]
"#;

    const RENDERED: &str = r#"# Source: w/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: rel-w
  labels:
    app.kubernetes.io/name: w
    app.kubernetes.io/instance: rel
spec:
  replicas: 1
  strategy:
    rollingUpdate:
      maxSurge: 0
  template:
    spec:
      containers:
        - name: vllm
          args: ["--port", "7080"]
"#;

    #[test]
    fn rendered_lines_trace_to_the_template() {
        let lines: Vec<&str> = RENDERED.lines().collect();
        let got = align(TEMPLATE, &lines);
        let want = [
            0, // the Source comment
            1, 2, 3, 4, 5, // literal and prefix lines
            6, 6,  // the labels include
            7,  // spec:
            8,  // replicas: {{ … }}
            10, // strategy:
            11, 11, // toYaml
            13, 14, 15, 16, 17,
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn a_dropped_conditional_keeps_the_rest_in_step() {
        let rendered = RENDERED.replace("  strategy:\n    rollingUpdate:\n      maxSurge: 0\n", "");
        let lines: Vec<&str> = rendered.lines().collect();
        let got = align(TEMPLATE, &lines);
        assert_eq!(got[9], 8, "replicas");
        assert_eq!(got[10], 13, "template: after the dropped block");
        assert_eq!(got[14], 17, "args");
    }

    #[test]
    fn sources_and_commands() {
        assert_eq!(
            source_of(
                Renderer::Helm,
                "---\n# Source: w/templates/d.yaml\nkind: X\n"
            ),
            Some("templates/d.yaml".into())
        );
        assert_eq!(
            source_of(
                Renderer::Kustomize,
                "metadata:\n  annotations:\n    config.kubernetes.io/origin: |\n      path: base/d.yaml\n"
            ),
            Some("base/d.yaml".into())
        );
        assert_eq!(source_of(Renderer::Kustomize, "kind: X\n"), None);
        assert_eq!(
            lexical_join(FsPath::new("k/overlay"), "../base/./d.yaml"),
            PathBuf::from("k/base/d.yaml")
        );
        assert_eq!(
            lexical_join(FsPath::new(".."), "../d.yaml"),
            PathBuf::from("../../d.yaml")
        );
        let opts = RenderOptions {
            values: vec!["my values.yaml".into()],
            set: vec!["replicas=2".into()],
            ..Default::default()
        };
        assert_eq!(
            opts.command_line(Renderer::Helm, FsPath::new("charts/w")),
            "helm template charts/w --values 'my values.yaml' --set replicas=2 | infera lint -"
        );
        assert_eq!(
            opts.command_line(Renderer::Kustomize, FsPath::new("overlays/prod")),
            "kubectl kustomize overlays/prod | infera lint -"
        );
        assert_eq!(
            Renderer::of_dir(["values.yaml", "Chart.yaml", "kustomization.yaml"]),
            Some(Renderer::Helm)
        );
        assert_eq!(
            Renderer::of_dir(["kustomization.yml"]),
            Some(Renderer::Kustomize)
        );
        assert_eq!(Renderer::of_dir(["a.yaml"]), None);
    }

    #[test]
    fn stdin_documents_find_their_chart_by_its_name() {
        let root = tempfile::tempdir().expect("tempdir");
        let chart = root.path().join("charts/worker");
        std::fs::create_dir_all(chart.join("templates")).expect("mkdir");
        std::fs::write(chart.join("Chart.yaml"), "apiVersion: v2\nname: w\n").expect("write");
        std::fs::write(chart.join("templates/deployment.yaml"), TEMPLATE).expect("write");
        let charts = StdinCharts::find(RENDERED.as_bytes(), root.path());
        let origin = charts
            .origin(RENDERED)
            .expect("the chart is found by its name");
        assert!(
            origin
                .file
                .ends_with("charts/worker/templates/deployment.yaml"),
            "{}",
            origin.file
        );
        assert_eq!(origin.line(10), 8, "replicas: {{ .Values.replicas }}");
        // Inside the chart (`helm template .`), the chart is the directory.
        assert!(
            StdinCharts::find(RENDERED.as_bytes(), &chart)
                .origin(RENDERED)
                .is_some()
        );
        // Another chart's name, or a template the chart does not have: stdin's lines.
        let other = RENDERED.replace("# Source: w/", "# Source: x/");
        assert!(
            StdinCharts::find(other.as_bytes(), root.path())
                .origin(&other)
                .is_none()
        );
        let missing = RENDERED.replace("deployment.yaml", "gone.yaml");
        assert!(charts.origin(&missing).is_none());
        assert!(StdinCharts::find(b"kind: X\n", root.path()).dirs.is_empty());
    }
}
