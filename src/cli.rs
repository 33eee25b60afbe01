//! Every flag of `infera`, in one place (clap derive).
//!
//! The man pages in `man/` and the shell completions in `completions/` are
//! generated from these definitions by `cargo run -- generate` (hidden
//! subcommand); `tests/cli/generated.rs` fails when they are stale.
//!
//! Library modules never see clap types other than the `*Args` structs below.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use infera_sim_core::partition::{PartitionKind, ScheduledPartition};

/// Make rolling an LLM-serving worker on Kubernetes safe, and prove it was.
#[derive(Debug, Parser)]
#[command(name = "infera", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// Log to stderr: -v requests (verb, path, status, latency), watch
    /// restarts, retries and driver decisions; -vv debug. `RUST_LOG`
    /// overrides. Credentials are never logged.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Audit manifests for configurations where a surge rollout would stall,
    /// gap or silently retire a serving pod.
    Lint(LintArgs),
    /// List the lint rules, or print one rule's documentation.
    Rules(RulesArgs),
    /// Print the Deployments/LeaderWorkerSets the infera operator would create
    /// from an InferaDeployment, annotated with the predicted rollout strategy.
    Render(RenderArgs),
    /// Drive a worker rollout step by step: surge, wait for /ready, retire the
    /// old pod, one leg at a time.
    #[command(subcommand)]
    Rollout(RolloutCommand),
    /// Sample readiness and routability per role while someone else rolls,
    /// and report the minimum number of Ready and routable pods.
    Audit(AuditArgs),
    /// Drain node(s) as a rollout: plan every pod on them, move the serving
    /// workers surge-first, evict the rest honouring PodDisruptionBudgets.
    Drain(DrainArgs),
    /// A local simulated cluster that speaks the real Kubernetes API.
    #[command(subcommand)]
    Sim(SimCommand),
    /// Roll a worker on the built-in simulated cluster and show the evidence.
    Demo(DemoArgs),
    /// Audit continuously as a service: Prometheus metrics per role on
    /// `/metrics`, alert rules (`--print-rules`), in-cluster manifests
    /// (`--print-manifests`).
    Monitor(MonitorArgs),
    /// Print the minimal RBAC Role that `infera rollout` and `infera audit` need.
    Rbac(RbacArgs),
    /// Print lint's rules as ValidatingAdmissionPolicies and their bindings
    /// (`kubectl infera policy | kubectl apply -f -`).
    Policy(PolicyArgs),
    /// Print a shell completion script to stdout.
    Completions(CompletionsArgs),
    /// Regenerate `completions/` and `man/` from these flag definitions, and
    /// the rules table of `docs/lint.md` from the rule registry.
    #[command(hide = true)]
    Generate(GenerateArgs),
}

// ---------------------------------------------------------------------------
// Shared argument groups
// ---------------------------------------------------------------------------

/// How to reach a cluster, with kubectl's precedence: flags, then
/// `KUBECONFIG`, then `~/.kube/config`, then the in-cluster service account.
#[derive(Debug, Clone, Default, Args)]
pub struct ClusterArgs {
    /// Path to the kubeconfig file to use.
    #[arg(long, value_name = "FILE", global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// The name of the kubeconfig context to use.
    #[arg(long, value_name = "NAME", global = true)]
    pub context: Option<String>,
    /// The namespace scope for this request (default: the context's namespace).
    #[arg(short = 'n', long, value_name = "NS", global = true)]
    pub namespace: Option<String>,
}

/// Readiness sampling and the floor an audit holds every role to.
#[derive(Debug, Clone, Args)]
pub struct AuditKnobs {
    /// Seconds between two readiness samples (the field check uses 10 s).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub sample_interval: Duration,
    /// A role below this many Ready or routable pods counts as a gap.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub min_ready: u32,
    /// Write the report to FILE: `.html` writes a self-contained incident
    /// report page (plan, steps, per-role table, verdict, chart), any other
    /// name the JSON report.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Write the timeline to FILE: `.svg` draws a chart, `.csv` writes rows.
    /// Repeat for both.
    #[arg(long, value_name = "FILE")]
    pub timeline: Vec<PathBuf>,
}

/// `--traffic`: requests through the serving path, every one accounted for
/// (docs/traffic.md).
#[derive(Debug, Clone, Args)]
pub struct TrafficArgs {
    /// Send OpenAI-compatible requests (streaming chat completions and
    /// completions, alternating) through the serving path while this runs
    /// and account for every one: a request that fails makes the verdict a
    /// gap (exit 1) even when the pod counts held. The path must answer 5
    /// requests in a row first, or nothing starts (exit 3).
    #[arg(long)]
    pub traffic: bool,
    /// Requests per second (at most 50).
    #[arg(
        long,
        value_name = "PER_SECOND",
        default_value_t = 2.0,
        requires = "traffic"
    )]
    pub traffic_rate: f64,
    /// At most this many requests in flight; a tick that finds them all
    /// busy sends nothing and is counted.
    #[arg(long, value_name = "N", default_value_t = 32, requires = "traffic")]
    pub traffic_concurrency: usize,
    /// Each request's deadline: past it, it is `hung`.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration, requires = "traffic")]
    pub traffic_deadline: Duration,
    /// The Service to send to, through the API server's service proxy
    /// (default: the InferaDeployment's `componentType: server` service).
    #[arg(
        long,
        value_name = "NAME[:PORT]",
        requires = "traffic",
        conflicts_with = "traffic_url"
    )]
    pub traffic_service: Option<String>,
    /// A base URL to send to directly (an ingress, a port-forward) instead of
    /// the API server's proxy; no control probe runs beside it.
    #[arg(long, value_name = "URL", requires = "traffic")]
    pub traffic_url: Option<String>,
    /// The model to ask for (default: the first of `/v1/models`).
    #[arg(long, value_name = "MODEL", requires = "traffic")]
    pub traffic_model: Option<String>,
    /// Write one JSON line per request to FILE.
    #[arg(long, value_name = "FILE.jsonl", requires = "traffic")]
    pub traffic_log: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Yaml,
    Json,
}

// ---------------------------------------------------------------------------
// lint / rules / render
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LintFormat {
    /// Code frames and a summary table (colour on a TTY, honouring NO_COLOR).
    Human,
    /// One JSON document: `{"findings": [...], "summary": {...}}`.
    Json,
    /// SARIF 2.1.0, for GitHub code scanning.
    Sarif,
    /// GitHub Actions workflow annotation lines.
    Github,
}

/// `--operator`: the generation of the Infera operator to predict
/// (`infera_model::generation::Generation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OperatorArg {
    /// Before PR #176: surge-free, /health on the engine port.
    #[value(name = "pre-176")]
    SurgeFree,
    /// PR #176 and later: surge-first when probed /ready on the readiness port.
    #[value(name = "176")]
    ProbeGatedSurge,
    /// The newest generation infera knows (176).
    Latest,
}

impl From<OperatorArg> for infera_model::generation::Generation {
    fn from(a: OperatorArg) -> Self {
        match a {
            OperatorArg::SurgeFree => Self::SurgeFree,
            OperatorArg::ProbeGatedSurge | OperatorArg::Latest => Self::LATEST,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum FailOn {
    Warning,
    Error,
    Never,
}

#[derive(Debug, Clone, Args)]
pub struct LintArgs {
    /// Files or directories to lint (`*.yaml`, `*.yml`, `*.json`,
    /// recursively; a directory holding `Chart.yaml` is rendered with
    /// `helm template`, one holding `kustomization.yaml` with `kubectl
    /// kustomize`); `-` reads standard input.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = LintFormat::Human)]
    pub format: LintFormat,
    /// GPUs per node assumed by the capacity rules when no `--nodes` is given.
    #[arg(long, value_name = "N")]
    pub node_gpus: Option<u32>,
    /// Node inventory: the output of `kubectl get nodes -o yaml`.
    #[arg(long, value_name = "FILE")]
    pub nodes: Option<PathBuf>,
    /// Config file (default: `.infera-lint.yaml` found upward from the cwd).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Only run these rules (codes or names, comma-separated or repeated).
    #[arg(long, value_name = "RULES", value_delimiter = ',')]
    pub select: Vec<String>,
    /// Do not run these rules (codes or names, comma-separated or repeated).
    #[arg(long, value_name = "RULES", value_delimiter = ',')]
    pub ignore: Vec<String>,
    /// Exit 1 when a finding at or above this severity is reported.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
    /// Lint this many files at once. 0 (the default) picks one thread per
    /// CPU, or `RAYON_NUM_THREADS` when it is set.
    #[arg(short = 'j', long, value_name = "NUM", default_value_t = 0)]
    pub threads: usize,
    /// The operator generation to predict (default: the config's
    /// `operator`, else latest). With `--cluster` it is read off the live
    /// workers and this only applies where they do not tell.
    #[arg(long = "operator", value_name = "GENERATION", value_enum)]
    pub operator: Option<OperatorArg>,
    /// Helm charts: a values file passed to `helm template --values`
    /// (repeatable, in order).
    #[arg(long = "values", value_name = "FILE")]
    pub values: Vec<PathBuf>,
    /// Helm charts: a value passed to `helm template --set` (repeatable, in
    /// order).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// The helm that renders directories holding `Chart.yaml` (default:
    /// `helm` on `PATH`; without one, charts are skipped and named).
    #[arg(long, value_name = "PROGRAM", env = "INFERA_HELM")]
    pub helm: Option<PathBuf>,
    /// The kubectl whose `kubectl kustomize` renders directories holding
    /// `kustomization.yaml` (default: `kubectl` on `PATH`).
    #[arg(long, value_name = "PROGRAM", env = "INFERA_KUBECTL")]
    pub kubectl: Option<PathBuf>,
    /// Lint the live objects of a cluster instead of files.
    #[arg(long, conflicts_with = "paths")]
    pub cluster: bool,
    /// With `--cluster`: every namespace.
    #[arg(short = 'A', long, requires = "cluster")]
    pub all_namespaces: bool,
    #[command(flatten)]
    pub cluster_args: ClusterArgs,
}

#[derive(Debug, Clone, Args)]
pub struct RulesArgs {
    /// A rule code (`IR002`) or name (`surge-stall-gpu`) to document.
    #[arg(value_name = "RULE")]
    pub rule: Option<String>,
    /// Print as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct RenderArgs {
    /// A manifest with InferaDeployments (`-` for standard input).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = OutputFormat::Yaml)]
    pub output: OutputFormat,
    /// The operator generation to render as (default: the `operator` key of
    /// `.infera-lint.yaml` found upward from the cwd, else latest).
    #[arg(long = "operator", value_name = "GENERATION", value_enum)]
    pub operator: Option<OperatorArg>,
}

// ---------------------------------------------------------------------------
// rollout / audit / demo / rbac
// ---------------------------------------------------------------------------

/// The exit codes of `rollout`, `audit` and `drain`, one list for their
/// `--help` (the README's "Exit codes" table says the same): what "done"
/// is, what 3 means, and what is left after Ctrl-C.
macro_rules! exit_codes {
    ($done:literal, $three:literal, $interrupted:literal) => {
        exit_codes!($done, "", $three, $interrupted)
    };
    ($done:literal, $one:literal, $three:literal, $interrupted:literal) => {
        concat!(
            "Exit codes: 0 ",
            $done,
            ", every role held --min-ready; 1 ",
            $done,
            ", but a role fell below it",
            $one,
            "; 2 usage, connection or permission error, or an output \
file that cannot be written; 3 ",
            $three,
            "; 4 ",
            $done,
            ", but infera was blind while a \
role may have fallen below (the minimum cannot be established); 130 interrupted",
            $interrupted,
            "."
        )
    };
}

/// `rollout restart|set-image --help`.
const ROLLOUT_EXIT_CODES: &str = exit_codes!(
    "complete",
    ", or a request sent with --traffic failed",
    "stalled, aborted, timed out or reverted by another writer; or refused before any change \
(a predicted stall or gap, a role already below the floor, a GitOps revert) without --force, \
or --traffic's serving path did not answer",
    " (rerun the same command to resume)"
);

#[derive(Debug, Subcommand)]
pub enum RolloutCommand {
    /// Restart the worker pods of TARGET, one service at a time.
    Restart(RolloutArgs),
    /// Change the image of `--service` in TARGET and roll it.
    SetImage(SetImageArgs),
    /// Print the last rollouts infera drove on TARGET, newest first.
    History(HistoryArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HistoryFormat {
    /// A table, newest first.
    Table,
    /// A JSON array, newest first.
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// `idep/NAME` (`inferadeployment/NAME`) or `deploy/NAME`.
    #[arg(value_name = "TARGET")]
    pub target: String,
    #[arg(long, short = 'o', value_enum, default_value_t = HistoryFormat::Table)]
    pub output: HistoryFormat,
    #[command(flatten)]
    pub cluster_args: ClusterArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RolloutFormat {
    /// The plan, progress (bars on a terminal) and the report table.
    Text,
    /// One JSON object per line on stdout for every event (plan, note,
    /// start, event, step, stall, leg-done, finish), the last one
    /// `{"event":"result","exit":N,"report":{…}|null}`.
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PauseBetween {
    Legs,
    Pods,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnStall {
    Abort,
    Wait,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = ROLLOUT_EXIT_CODES)]
pub struct RolloutArgs {
    /// `idep/NAME` (`inferadeployment/NAME`) or `deploy/NAME`.
    #[arg(value_name = "TARGET")]
    pub target: String,
    /// Service of the InferaDeployment to roll (repeatable; default: every
    /// worker service).
    #[arg(long, value_name = "SERVICE")]
    pub service: Vec<String>,
    /// Also set this environment variable on the main container (repeatable).
    #[arg(long, value_name = "K=V")]
    pub set_env: Vec<String>,
    /// Plain Deployment only: set maxSurge 1 / maxUnavailable 0 first.
    #[arg(long)]
    pub surge: bool,
    /// Order of the legs (services), comma-separated.
    #[arg(long, value_name = "SERVICES", value_delimiter = ',')]
    pub order: Vec<String>,
    /// Print the plan and stop, changing nothing; exit 3 when the roll
    /// would be refused (a predicted GAP or STALL without --force), else 0.
    #[arg(long)]
    pub dry_run: bool,
    /// Proceed even when the preflight predicts a stall or a gap.
    #[arg(long)]
    pub force: bool,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Where to stop and ask before going on.
    #[arg(long, value_enum, default_value_t = PauseBetween::Never)]
    pub pause_between: PauseBetween,
    /// Give up on a single step after this long.
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = parse_duration)]
    pub step_timeout: Duration,
    /// A surge pod Unschedulable for this long is a stall.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub stall_after: Duration,
    /// What to do on a stall.
    #[arg(long, value_enum, default_value_t = OnStall::Abort)]
    pub on_stall: OnStall,
    /// Undo the current leg of an interrupted rollout (restore the previous
    /// template on the target, so the old pods keep serving) and forget it.
    #[arg(long)]
    pub abort: bool,
    /// Output format on stdout (`json`: JSON lines, for a log collector or
    /// another program; stderr keeps the file notes).
    #[arg(long, short = 'o', value_enum, default_value_t = RolloutFormat::Text)]
    pub output: RolloutFormat,
    #[command(flatten)]
    pub audit: AuditKnobs,
    #[command(flatten)]
    pub traffic: TrafficArgs,
    #[command(flatten)]
    pub cluster_args: ClusterArgs,
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = concat!(exit_codes!("drained", "refused by the plan (GAP or STALL without --force), \
a move stalled, or --timeout passed (the node stays cordoned)", " (the node stays cordoned; \
rerun the same command to resume)"), "\n\n\
Examples:\n  infera drain gpu-node-0 --ignore-daemonsets --dry-run=client\n  \
infera drain -l pool=mi355x --ignore-daemonsets --timeout 30m --report drain.html")
)]
pub struct DrainArgs {
    /// The node(s) to drain.
    #[arg(value_name = "NODE")]
    pub nodes: Vec<String>,
    /// Drain the nodes matching this label selector instead.
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Only evict pods matching this label selector (`key=value[,…]`).
    #[arg(long, value_name = "SELECTOR")]
    pub pod_selector: Option<String>,
    /// Leave DaemonSet-managed pods (otherwise the drain is refused).
    #[arg(long)]
    pub ignore_daemonsets: bool,
    /// Evict pods with emptyDir volumes (their data is lost).
    #[arg(long)]
    pub delete_emptydir_data: bool,
    /// Drain despite a predicted GAP or STALL, and evict pods that declare
    /// no controller.
    #[arg(long)]
    pub force: bool,
    /// Seconds each evicted pod gets to terminate (negative: its own
    /// terminationGracePeriodSeconds).
    #[arg(long, value_name = "SECONDS", default_value_t = -1, allow_hyphen_values = true)]
    pub grace_period: i64,
    /// Give up after this long, one deadline from the cordon over the moves,
    /// the evictions and the wait (0: wait for ever); the node stays cordoned.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// kubectl's: `none` (drain), `client` (print the plan, send nothing that
    /// changes anything) or `server` (send the cordon and the evictions with
    /// dryRun=All: the API server checks them and persists nothing). Bare
    /// `--dry-run` is `client`, with kubectl's deprecation warning.
    #[arg(
        long,
        value_name = "STRATEGY",
        num_args = 0..=1,
        require_equals = true,
        default_value = "none",
        default_missing_value = "unchanged"
    )]
    pub dry_run: String,
    /// A moved worker's surge pod Unschedulable for this long is a stall.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub stall_after: Duration,
    /// Give up on a single step of a move after this long.
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = parse_duration)]
    pub step_timeout: Duration,
    /// Output format on stdout (`json`: JSON lines, as `rollout -o json`).
    #[arg(long, short = 'o', value_enum, default_value_t = RolloutFormat::Text)]
    pub output: RolloutFormat,
    #[command(flatten)]
    pub traffic: TrafficArgs,
    #[command(flatten)]
    pub audit: AuditKnobs,
    #[command(flatten)]
    pub cluster_args: ClusterArgs,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = ROLLOUT_EXIT_CODES)]
pub struct SetImageArgs {
    #[command(flatten)]
    pub rollout: RolloutArgs,
    /// The new image.
    #[arg(value_name = "IMAGE")]
    pub image: String,
}

#[derive(Debug, Clone, Args)]
#[command(
    group = clap::ArgGroup::new("mode").required(true).multiple(true).args(["duration", "until_complete"]),
    after_help = concat!(exit_codes!("complete", ", or a request sent with --traffic failed", "stalled or timed out, \
or --traffic's serving path did not answer", " (the partial report is \
printed first). With several targets: the worst target's (0 < 4 < 1 < 3 < 130)"), "\n\n\
Examples:\n  infera audit idep/llama --until-complete\n  infera audit idep/a idep/b deploy/c --for 10m --report night.html\n  \
infera audit -l model=kimi -A --until-complete --timeline kimi.svg")
)]
pub struct AuditArgs {
    /// `idep/NAME` (`inferadeployment/NAME`) or `deploy/NAME`; several are
    /// audited in one run (one table, a verdict each, the worst exit code).
    #[arg(value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Audit every InferaDeployment and Deployment matching this label
    /// selector (`model=kimi`, `tier in (a,b)`) instead of naming TARGETs;
    /// Deployments the infera operator rendered are audited through their
    /// InferaDeployment.
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Select in every namespace (one cluster-wide pod watch) instead of the
    /// `-n` namespace. Without `-l`: every InferaDeployment and Deployment.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Audit for this long. Alone: the window is audited to its end (exit 0
    /// or 1). With `--until-complete`: the longest to wait for completion;
    /// reaching it first is a timeout (exit 3).
    #[arg(long = "for", value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Audit until every Deployment of every TARGET is complete as `kubectl
    /// rollout status` decides it (observedGeneration caught up, all
    /// replicas updated and available, no old replicas) and has stayed so
    /// for 20 s, longer than the operator's reconcile period. A Deployment
    /// past its progress deadline ends the audit as stalled (exit 3).
    #[arg(long)]
    pub until_complete: bool,
    /// For one plain Deployment: a role and the label selector of its pods
    /// (repeatable), e.g. `--role decode=app=dec`.
    #[arg(long, value_name = "NAME=SELECTOR")]
    pub role: Vec<String>,
    /// Stream every sample to FILE as CSV (one target; for several,
    /// `--timeline FILE.csv` has every target's rows).
    #[arg(long, value_name = "FILE.csv")]
    pub samples: Option<PathBuf>,
    #[command(flatten)]
    pub audit: AuditKnobs,
    #[command(flatten)]
    pub traffic: TrafficArgs,
    #[command(flatten)]
    pub cluster_args: ClusterArgs,
}

#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Built-in scenario name (see `infera sim scenarios`) or a scenario file.
    #[arg(long, value_name = "NAME|FILE", default_value = "pd-1p1d")]
    pub scenario: String,
    /// Simulated seconds per wall-clock second.
    #[arg(long, value_name = "X", default_value_t = 70.0)]
    pub speed: f64,
    /// A surge pod Unschedulable for this long (simulated time) is a stall.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub stall_after: Duration,
    /// Send no requests through the serving path (by default the demo sends
    /// them and prints their tally, as `--traffic` does).
    #[arg(long)]
    pub no_traffic: bool,
    #[command(flatten)]
    pub audit: AuditKnobs,
}

#[derive(Debug, Clone, Args)]
pub struct RbacArgs {
    /// Namespace of the Role (and of the ServiceAccount the bindings name)
    /// (default: the context's namespace).
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Grant the Role's rules in every namespace (a ClusterRole and
    /// ClusterRoleBinding instead), for `audit -A` and `lint --cluster -A`.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Print what `infera drain` needs: the same rules in every namespace
    /// (it moves and evicts wherever a pod runs) and the `infera-drain`
    /// ClusterRole (nodes, evictions, PodDisruptionBudgets, owners).
    #[arg(long)]
    pub drain: bool,
    /// Also grant what `--traffic` sends through the API server's service
    /// proxy to the router (`get` and `create` on `services/proxy`).
    #[arg(long)]
    pub traffic: bool,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = OutputFormat::Yaml)]
    pub output: OutputFormat,
}

/// `--format` of `infera monitor --print-rules`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RulesFormat {
    /// A prometheus-operator `PrometheusRule` object.
    PrometheusRule,
    /// A plain Prometheus rules file (`rule_files:`).
    Plain,
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Serves until SIGTERM or Ctrl-C (exit 0). Exit status 2: usage, \
connection or listen error. A watch that is refused (a missing permission) or cut off \
is logged once and exported as infera_watch_up 0; the process keeps serving.\n\n\
Examples:\n  infera monitor -A --listen 0.0.0.0:8491\n  \
infera monitor -n llm --min-ready 2 --print-rules --format plain > infera.rules.yaml\n  \
infera monitor -n monitoring -A --print-manifests | kubectl apply -f -"
)]
pub struct MonitorArgs {
    /// Watch every namespace (one cluster-wide list+watch per resource)
    /// instead of the `-n` namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Only the InferaDeployments, Deployments and StatefulSets whose
    /// labels match this selector (`team=a`, `tier in (a,b)`, `!canary`).
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// A role with fewer Ready or routable pods than this is below the
    /// floor (the below-floor counters and alert).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub min_ready: u32,
    /// Serve `/metrics`, `/healthz` and `/readyz` on this address
    /// (`0.0.0.0:8491` in a pod; port 0 picks a free one).
    #[arg(long, value_name = "ADDR", default_value_t = std::net::SocketAddr::from(([127, 0, 0, 1], infera_monitor::DEFAULT_PORT)))]
    pub listen: std::net::SocketAddr,
    /// Print the alert rules and exit.
    #[arg(long)]
    pub print_rules: bool,
    /// With `--print-rules`: a PrometheusRule, or a plain rules file.
    #[arg(long, value_enum, default_value_t = RulesFormat::PrometheusRule)]
    pub format: RulesFormat,
    /// Print the ServiceAccount, RBAC, Deployment, Service and
    /// ServiceMonitor that run the monitor in the `-n` namespace, and exit.
    #[arg(long, conflicts_with = "print_rules")]
    pub print_manifests: bool,
    /// Image of the monitor's Deployment (`--print-manifests`).
    #[arg(long, value_name = "IMAGE", default_value = "infera:latest")]
    pub image: String,
    /// Alert: a role with no routable pod this long (critical).
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = parse_duration)]
    pub no_routable_for: Duration,
    /// Alert: a rolling role below `--min-ready` this long.
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = parse_duration)]
    pub below_min_for: Duration,
    /// Alert: a pod of a rolling role unschedulable this long (a stalled
    /// surge; `infera rollout --stall-after` is 5m too).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub stalled_for: Duration,
    /// Alert: Ready pods not routable this long (readiness that means
    /// nothing).
    #[arg(long, value_name = "DURATION", default_value = "3m", value_parser = parse_duration)]
    pub ready_not_routable_for: Duration,
    /// Alert: a watch of the monitor not current this long.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub watch_down_for: Duration,
    /// Alert: the failure ratio of attributed probe requests over 5m above
    /// this (a fraction: 0.01 is 1 %).
    #[arg(long, value_name = "RATIO", default_value_t = 0.01, value_parser = parse_ratio)]
    pub request_failure_ratio: f64,
    /// Alert: that ratio above its threshold this long.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub request_failures_for: Duration,
    /// Send one small OpenAI request through the router of each
    /// InferaDeployment in scope this often (at least 1s), beside a control
    /// request to the API server's /readyz.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_probe_interval)]
    pub probe_interval: Duration,
    /// Send no requests (no infera_requests_total, no TTFT).
    #[arg(long)]
    pub no_probe: bool,
    #[command(flatten)]
    pub cluster_args: ClusterArgs,
}

/// `--probe-interval`: a duration of at least
/// [`infera_monitor::probe::MIN_INTERVAL`].
fn parse_probe_interval(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    let min = infera_monitor::probe::MIN_INTERVAL;
    if d < min {
        return Err(format!(
            "`{s}` is below the floor of {}s: the probe measures the path, it is not load",
            min.as_secs()
        ));
    }
    Ok(d)
}

/// A ratio in (0, 1).
fn parse_ratio(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(r) if r > 0.0 && r < 1.0 => Ok(r),
        _ => Err(format!(
            "`{s}` is not a ratio between 0 and 1 (0.01 is 1 %)"
        )),
    }
}

impl MonitorArgs {
    /// The rules' options from the flags.
    pub fn rule_options(&self) -> infera_monitor::RuleOptions {
        infera_monitor::RuleOptions {
            min_ready: self.min_ready,
            no_routable_for: self.no_routable_for,
            below_min_for: self.below_min_for,
            stalled_for: self.stalled_for,
            ready_not_routable_for: self.ready_not_routable_for,
            watch_down_for: self.watch_down_for,
            request_failure_ratio: self.request_failure_ratio,
            request_failures_for: self.request_failures_for,
        }
    }
}

/// `--action`: what the policy bindings do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PolicyAction {
    /// Deny findings at or above `--fail-on`, warn below; audit both.
    Severity,
    /// Warn and audit only, whatever the severity (a dry run in production).
    Warn,
}

#[derive(Debug, Clone, Args)]
pub struct PolicyArgs {
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = OutputFormat::Yaml)]
    pub output: OutputFormat,
    /// The operator generation whose rendering the InferaDeployment checks
    /// follow (default: the `operator` key of `.infera-lint.yaml` found
    /// upward from the cwd, else latest).
    #[arg(long = "operator", value_name = "GENERATION", value_enum)]
    pub operator: Option<OperatorArg>,
    /// Deny findings at or above this severity (below it: warn); `never`
    /// denies nothing.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
    /// What the bindings do: by severity (`--fail-on`), or warn only.
    #[arg(long, value_enum, default_value_t = PolicyAction::Severity)]
    pub action: PolicyAction,
}

// ---------------------------------------------------------------------------
// sim
// ---------------------------------------------------------------------------

#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// Serve a simulated cluster until interrupted.
    Serve(SimServeArgs),
    /// Attach the simulated world (GPU nodes, kubelet, infera operator) to
    /// any Kubernetes API server, until interrupted.
    ///
    /// Creates the scenario's nodes (labelled and tainted
    /// `infera.amd.com/simulated-node=true:NoSchedule`, so real workloads
    /// stay off them; what attach applies or renders tolerates the taint),
    /// renews their status and Leases, applies the scenario's manifests and
    /// runs the kubelet for pods bound to those nodes (a real `/ready`
    /// listener on each worker's pod IP) and the infera operator. Ctrl-C
    /// removes everything it created; `--cleanup` only removes.
    Attach(SimAttachArgs),
    /// List the built-in scenarios.
    Scenarios,
}

/// Faults the simulator can inject (also settable in a scenario file).
#[derive(Debug, Clone, Default, Args)]
pub struct FaultArgs {
    /// Drop every watch stream every this long (wall clock).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub drop_watches_every: Option<Duration>,
    /// Answer this fraction of requests (0..1) with 5xx/429 bursts
    /// carrying `Retry-After`.
    #[arg(long, value_name = "RATE")]
    pub error_rate: Option<f64>,
    /// Answer this fraction of updates with 409 Conflict.
    #[arg(long, value_name = "RATE")]
    pub conflict_rate: Option<f64>,
    /// Compact the watch history every this long, forcing 410 Gone on resume.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub compact_every: Option<Duration>,
    /// Add this latency to every request.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub latency: Option<Duration>,
    /// Restart the API server listener every this long (state is kept).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub restart_api_every: Option<Duration>,
    /// Cut the clients off the API server AT after the start FOR this long:
    /// open connections are reset, new ones refused; the cluster goes on
    /// (repeatable; e.g. `--cut 30s:55s`).
    #[arg(long, value_name = "AT:FOR", value_parser = parse_cut)]
    pub cut: Vec<ScheduledPartition>,
    /// Blackhole the clients' connections AT after the start FOR this long:
    /// held open, nothing delivered either way until it ends (repeatable).
    #[arg(long, value_name = "AT:FOR", value_parser = parse_blackhole)]
    pub blackhole: Vec<ScheduledPartition>,
}

fn parse_skew(s: &str) -> Result<jiff::SignedDuration, String> {
    let (negative, rest) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let d = parse_duration(rest)?;
    let d = jiff::SignedDuration::try_from(d).map_err(|e| e.to_string())?;
    Ok(if negative { -d } else { d })
}

fn parse_cut(s: &str) -> Result<ScheduledPartition, String> {
    ScheduledPartition::parse(PartitionKind::Cut, s)
}

fn parse_blackhole(s: &str) -> Result<ScheduledPartition, String> {
    ScheduledPartition::parse(PartitionKind::Blackhole, s)
}

#[derive(Debug, Clone, Args)]
pub struct SimServeArgs {
    /// Run the cluster's clock this far off the host's (`-300s`, `90s`):
    /// every timestamp it writes and every `Date` header, as a control
    /// plane with a skewed clock (for testing clients' skew handling).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = parse_skew)]
    pub clock_skew: Option<jiff::SignedDuration>,
    /// Write the simulator's ground truth (every InferaDeployment service's
    /// Ready and routable counts, at every change; every request the
    /// simulated routers received and how it ended) to FILE when it stops.
    #[arg(long, value_name = "FILE")]
    pub truth: Option<PathBuf>,
    /// Built-in scenario name or a scenario file.
    #[arg(long, value_name = "NAME|FILE", default_value = "pd-1p1d")]
    pub scenario: String,
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Serve plain HTTP instead of HTTPS with a generated CA. kubectl does
    /// not send a bearer token over plain HTTP, so only `kube`-based clients
    /// and curl can authenticate then.
    #[arg(long)]
    pub plain_http: bool,
    /// Bearer token clients must present (default: a random one).
    #[arg(
        long,
        value_name = "TOKEN",
        env = "INFERA_SIM_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// Write a kubeconfig for the simulator to PATH.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig_out: Option<PathBuf>,
    /// Simulated seconds per wall-clock second.
    #[arg(long, value_name = "X", default_value_t = 1.0)]
    pub speed: f64,
    /// Random seed (default: the scenario's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// The operator generation the simulated operator renders as
    /// (default: the scenario's `operator`, else latest).
    #[arg(long = "operator", value_name = "GENERATION", value_enum)]
    pub operator: Option<OperatorArg>,
    /// Serve an empty cluster (API server, Deployment/ReplicaSet
    /// controllers, scheduler, GC): no nodes, no manifests, no kubelet or
    /// operator, for `infera sim attach` to bring them.
    #[arg(long)]
    pub no_world: bool,
    /// Delete each Event this long after its last write, in simulated
    /// time (kube-apiserver's `--event-ttl`; watchers see it DELETED).
    /// `0` keeps Events.
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_duration)]
    pub event_ttl: Duration,
    #[command(flatten)]
    pub faults: FaultArgs,
}

#[derive(Debug, Clone, Args)]
pub struct SimAttachArgs {
    /// Kubeconfig of the cluster to attach to (default: KUBECONFIG, then
    /// ~/.kube/config).
    #[arg(long, value_name = "PATH", env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (default: the current one).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Built-in scenario name or a scenario file.
    #[arg(long, value_name = "NAME|FILE", default_value = "pd-1p1d")]
    pub scenario: String,
    /// Simulated seconds per wall-clock second, for the world (image pulls,
    /// weight loads, probes); the control plane runs in real time.
    #[arg(long, value_name = "X", default_value_t = 1.0)]
    pub speed: f64,
    /// Pod IPs come from this range; listeners bind there, so it must be
    /// local to this machine (e.g. `127.77.0.0/16`, or a range routed to
    /// `lo` in the lab's network namespace).
    #[arg(long, value_name = "CIDR", default_value = "10.244.0.0/16")]
    pub pod_cidr: String,
    /// Do not run the infera operator (a real one runs in the cluster; its
    /// pods need the simulated nodes' toleration, or `--no-taint`).
    #[arg(long)]
    pub no_operator: bool,
    /// Do not taint the simulated nodes.
    #[arg(long)]
    pub no_taint: bool,
    /// The operator generation the simulated operator renders as
    /// (default: the scenario's `operator`, else latest).
    #[arg(long = "operator", value_name = "GENERATION", value_enum)]
    pub operator: Option<OperatorArg>,
    /// Remove what attach creates for the scenario (nodes, Leases, applied
    /// objects), then exit.
    #[arg(long)]
    pub cleanup: bool,
    /// On exit, write every request the simulated routers received and how
    /// it ended to FILE (the ground truth's `{"requests": […]}`; the pods'
    /// truth is the API server's own).
    #[arg(long, value_name = "FILE")]
    pub truth: Option<PathBuf>,
}

// ---------------------------------------------------------------------------
// completions / generate
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to generate completions for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Clone, Args)]
pub struct GenerateArgs {
    /// Directory holding `completions/`, `man/` and `docs/lint.md`.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
}

pub use infera_model::duration::parse_duration;

impl From<LintFormat> for infera_lint::report::Format {
    fn from(f: LintFormat) -> Self {
        match f {
            LintFormat::Human => Self::Human,
            LintFormat::Json => Self::Json,
            LintFormat::Sarif => Self::Sarif,
            LintFormat::Github => Self::Github,
        }
    }
}

impl ClusterArgs {
    /// The library's connection options from `--kubeconfig`, `--context`, `-n`.
    pub fn options(&self) -> infera_cluster::ConnectOptions {
        infera_cluster::ConnectOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            namespace: self.namespace.clone(),
        }
    }
}
