//! `infera lint` and `infera rules`: flags → the lint crate's options, the
//! printers to stdout, exit codes; `--cluster` lists the live objects.
//!
//! Flags beat the config file, which beats the defaults. Exit codes: 0
//! nothing at or above `--fail-on`; 1 findings at or above it; 2 usage errors
//! (bad flags, bad config, unknown rule) or input errors (a file that cannot
//! be read or parsed — every other file is still linted and printed).

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Context;
use infera_lint::config::{self, CliOverrides};
use infera_lint::engine::summary::{InputError, LintSummary};
use infera_lint::engine::{self, LintOutcome, RuleMeta};
use infera_lint::options::LintOptions;
use infera_lint::report::Printer;
use infera_lint::{
    apply, describe_input_error, lint_and_print, rule_page, rules_listing, write_report,
};

use crate::cli::{FailOn, LintArgs, LintFormat, RulesArgs};
use infera_audit::exit::Exit;

/// `infera lint`.
pub fn run(args: &LintArgs) -> anyhow::Result<Exit> {
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;
    let loaded = config::load(args.config.as_deref(), &cwd)?;
    let effective = config::resolve(engine::rules(), &loaded, &overrides(args))?;
    let options = LintOptions {
        node_gpus: effective.node_gpus.unwrap_or(0),
        nodes: effective.nodes.clone(),
        enabled: effective.enabled.clone(),
        threads: args.threads,
        // Only code frames need the text; keeping it for the other formats
        // would hold the lines findings point at for nothing.
        keep_sources: args.format == LintFormat::Human,
        operator: effective.operator,
        detected: Default::default(),
        // Set by `--cluster` once it has listed them.
        every_budget: false,
        every_claim: false,
        render: infera_model::manifest::render::RenderOptions {
            helm: args.helm.clone(),
            kubectl: args.kubectl.clone(),
            values: args.values.clone(),
            set: args.set.clone(),
        },
    };

    // Input errors always go to standard error (in json/sarif/github they
    // are inside the document as well), so a human sees them even when
    // stdout is redirected to a file.
    let mut report_error = |e: &InputError| {
        let _ = writeln!(io::stderr().lock(), "error: {}", describe_input_error(e));
    };
    let stdout = io::stdout();
    let choice = anstream::AutoStream::choice(&stdout);
    let color = choice != anstream::ColorChoice::Never;
    let mut out = io::BufWriter::new(PipeTolerant::new(anstream::AutoStream::new(
        stdout.lock(),
        choice,
    )));
    let written = if args.cluster {
        let outcome = apply(lint_cluster(args, &options)?, &effective);
        outcome.input_errors.iter().for_each(&mut report_error);
        let rules = engine::rules();
        write_report(
            &mut out,
            args.format.into(),
            &outcome,
            rules,
            Some(&cwd),
            color,
        )
        .map(|()| (outcome.summary, outcome.input_errors.len()))
    } else {
        let printer = Printer::new(
            &mut out,
            args.format.into(),
            engine::rules(),
            Some(&cwd),
            color,
        );
        let paths = if args.paths.is_empty() {
            vec![PathBuf::from(".")]
        } else {
            args.paths.clone()
        };
        // Printed file by file as they are linted: memory does not grow
        // with the corpus, whatever the format.
        lint_and_print(&paths, &options, &effective, printer, &mut report_error)
    };
    let (summary, input_errors) = written
        .and_then(|totals| out.flush().map(|()| totals))
        .context("cannot write the lint report to standard output")?;
    Ok(exit_for_counts(&summary, input_errors, args.fail_on))
}

/// Standard output that goes quiet once its reader has gone
/// (`infera lint | head`): the rest of the report is dropped, the lint
/// itself runs to the end so the exit code is the same.
struct PipeTolerant<W> {
    inner: W,
    closed: bool,
}

impl<W: Write> PipeTolerant<W> {
    fn new(inner: W) -> Self {
        PipeTolerant {
            inner,
            closed: false,
        }
    }

    fn tolerate<T>(&mut self, r: io::Result<T>, quiet: T) -> io::Result<T> {
        match r {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(quiet)
            }
            other => other,
        }
    }
}

impl<W: Write> Write for PipeTolerant<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        let r = self.inner.write(buf);
        self.tolerate(r, buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let r = self.inner.flush();
        self.tolerate(r, ())
    }
}

fn overrides(args: &LintArgs) -> CliOverrides {
    CliOverrides {
        node_gpus: args.node_gpus,
        nodes: args.nodes.clone(),
        select: args.select.clone(),
        ignore: args.ignore.clone(),
        operator: args.operator.map(Into::into),
    }
}

/// 2 on input errors; else 1 when a finding is at or above `fail_on`; else 0.
pub fn exit_for(outcome: &LintOutcome, fail_on: FailOn) -> Exit {
    exit_for_counts(&outcome.summary, outcome.input_errors.len(), fail_on)
}

/// [`exit_for`] from the counts: `summary.errors` and `summary.warnings`
/// are the findings at each severity (after the configuration).
pub fn exit_for_counts(summary: &LintSummary, input_errors: usize, fail_on: FailOn) -> Exit {
    if input_errors > 0 {
        return Exit::Usage;
    }
    let at_or_above = match fail_on {
        FailOn::Never => return Exit::Ok,
        FailOn::Warning => summary.errors + summary.warnings,
        FailOn::Error => summary.errors,
    };
    if at_or_above > 0 {
        Exit::Findings
    } else {
        Exit::Ok
    }
}

/// `infera lint --cluster [-n NS | -A]`: list the analysed kinds from the
/// cluster and lint them as live objects (no spans: findings point at
/// `cluster`, line 0).
fn lint_cluster(args: &LintArgs, options: &LintOptions) -> anyhow::Result<LintOutcome> {
    let mut options = options.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime for the cluster client")?;
    runtime.block_on(async {
        let connection = infera_cluster::connect(&args.cluster_args.options()).await?;
        if !args.all_namespaces {
            connection.check_namespace().await?;
        }
        let namespace = (!args.all_namespaces).then_some(connection.namespace.as_str());
        let listed = super::live::list_live_objects(&connection, namespace).await?;
        let (objects, errors) = (listed.objects, listed.errors);
        // Only a complete list of budgets can say a worker has none (IR014).
        options.every_budget = !listed.unlisted.iter().any(|p| p == "poddisruptionbudgets");
        options.every_claim = !listed
            .unlisted
            .iter()
            .any(|p| p == "persistentvolumeclaims");
        options.detected = infera_model::generation::detect_per_deployment(&listed.rendered);
        note_generations(&objects, &options);
        let live = live_inventory(&connection).await;
        let mut outcome = engine::live::lint_live(&objects, "cluster", &options, live);
        outcome.input_errors.extend(errors);
        Ok(outcome)
    })
}

/// On stderr, per live InferaDeployment: the operator generation its
/// workers are linted as, and why (read off the rendered workers, or the
/// configured one when they do not tell).
fn note_generations(objects: &[serde_json::Value], options: &LintOptions) {
    for idep in objects
        .iter()
        .filter(|o| o["kind"] == infera_model::api::INFERA_DEPLOYMENT.kind)
    {
        let key = (
            idep.pointer("/metadata/namespace")
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string(),
            idep.pointer("/metadata/name")
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string(),
        );
        let line = match options.detected.get(&key) {
            Some(d @ infera_model::generation::Detection::Known(..)) => d.describe(),
            Some(d) => format!(
                "{}; linted as {} ({}, from --operator or the config)",
                d.describe(),
                options.operator,
                options.operator.describe()
            ),
            None => format!(
                "unknown: no rendered worker yet; linted as {} ({})",
                options.operator,
                options.operator.describe()
            ),
        };
        eprintln!(
            "note: InferaDeployment {}/{}: operator {line}",
            key.0, key.1
        );
    }
}

/// Nodes with their allocatable and free (allocatable minus the requests of
/// the pods bound there) extended resources, as the rollout preflight sees
/// them. None, with a note on stderr, when nodes or pods cannot be listed
/// (the capacity rules then judge without an inventory).
async fn live_inventory(
    connection: &infera_cluster::Connection,
) -> Option<Vec<engine::InventoryNode>> {
    let inventory = match infera_cluster::NodeInventory::fetch(connection).await {
        Ok(inv) => inv,
        Err(e) => {
            eprintln!(
                "note: cannot read nodes and pods for the live capacity ({e}); IR002/IR004 judge without an inventory (grant the `infera-capacity` ClusterRole of `infera rbac`)"
            );
            return None;
        }
    };
    let whole = |list: &infera_cluster::ResourceList| {
        list.iter()
            .filter_map(|(k, v)| Some((k.clone(), i64::try_from(v / 1000).ok()?)))
            .collect::<BTreeMap<String, i64>>()
    };
    let labels: BTreeMap<String, BTreeMap<String, String>> = inventory
        .nodes
        .iter()
        .map(|n| {
            (
                n.metadata.name.clone().unwrap_or_default(),
                n.metadata.labels.clone().unwrap_or_default(),
            )
        })
        .collect();
    Some(
        inventory
            .capacity()
            .into_iter()
            .map(|c| engine::InventoryNode {
                labels: labels.get(&c.node).cloned().unwrap_or_default(),
                gpus: whole(&c.allocatable),
                free: Some(whole(&c.free)),
                name: c.node,
            })
            .collect(),
    )
}

// ---------------------------------------------------------------------------
// infera rules
// ---------------------------------------------------------------------------

/// `infera rules [RULE] [--json]`.
pub fn rules_command(args: &RulesArgs) -> anyhow::Result<Exit> {
    rules_command_with(args, engine::rules())
}

/// `infera rules` over the given registry.
pub fn rules_command_with(args: &RulesArgs, registry: &'static [RuleMeta]) -> anyhow::Result<Exit> {
    let text = match &args.rule {
        None => rules_listing(registry, args.json),
        Some(wanted) => {
            let wanted_trimmed = wanted.trim();
            let rule = registry
                .iter()
                .find(|r| r.code.eq_ignore_ascii_case(wanted_trimmed) || r.name == wanted_trimmed)
                .ok_or_else(|| {
                    anyhow::anyhow!("unknown rule `{wanted}`; run `infera rules` to list the rules")
                })?;
            rule_page(rule, args.json)
        }
    };
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
        Err(e) => return Err(e).context("cannot write to standard output"),
    }
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use infera_lint::config::Effective;
    use infera_lint::finding::Severity;
    use infera_lint::report::tests_support::{input_error, outcome_with, sample_findings};
    use std::collections::BTreeMap;

    fn effective(enabled: &[&'static str], severity: &[(&'static str, Severity)]) -> Effective {
        Effective {
            node_gpus: Some(8),
            nodes: None,
            enabled: enabled.to_vec(),
            severity: severity.iter().copied().collect::<BTreeMap<_, _>>(),
            operator: Default::default(),
        }
    }

    #[test]
    fn exit_codes() {
        let all = effective(&["IR001", "IR005"], &[]);
        let both = apply(outcome_with(sample_findings()), &all);
        assert_eq!(exit_for(&both, FailOn::Error), Exit::Findings);
        assert_eq!(exit_for(&both, FailOn::Never), Exit::Ok);
        let warning_only = apply(outcome_with(sample_findings()), &effective(&["IR005"], &[]));
        assert_eq!(exit_for(&warning_only, FailOn::Error), Exit::Ok);
        assert_eq!(exit_for(&warning_only, FailOn::Warning), Exit::Findings);
        let mut broken = warning_only.clone();
        broken.input_errors.push(input_error());
        assert_eq!(exit_for(&broken, FailOn::Never), Exit::Usage);
        assert_eq!(exit_for(&LintOutcome::default(), FailOn::Warning), Exit::Ok);
    }

    /// A decode worker pinned to one node, requesting 4 GPUs, rolled
    /// surge-first: the replacement fits beside the old pod on 8-GPU nodes,
    /// not on 4-GPU ones (IR002).
    const PINNED: &str = "apiVersion: infera.amd.com/v1alpha1
kind: InferaDeployment
metadata: {name: pinned, namespace: prod}
spec:
  services:
    decode:
      componentType: worker
      role: decode
      extraPodSpec:
        nodeSelector: {kubernetes.io/hostname: gpu-1}
        containers:
          - name: main
            image: engine:1
            command: [python3, -m, infera.engine.sglang]
            resources: {limits: {amd.com/gpu: 4}}
";

    fn lint_args(extra: &[&str]) -> LintArgs {
        use clap::Parser;
        let mut argv = vec!["infera", "lint", "--format", "json"];
        argv.extend_from_slice(extra);
        match crate::cli::Cli::try_parse_from(argv).unwrap().command {
            crate::cli::Command::Lint(args) => args,
            _ => unreachable!("parsed a lint command"),
        }
    }

    #[test]
    fn run_maps_flags_and_outcomes_to_exit_codes() {
        let dir = tempfile::tempdir().unwrap();
        let pinned = dir.path().join("pinned.yaml");
        std::fs::write(&pinned, PINNED).unwrap();
        let bad = dir.path().join("bad.yaml");
        std::fs::write(&bad, "a: [1\n").unwrap();
        let (pinned, bad) = (pinned.to_str().unwrap(), bad.to_str().unwrap());
        let exit = |extra: &[&str]| run(&lint_args(extra)).unwrap();
        assert_eq!(
            exit(&["--node-gpus", "4", pinned]),
            Exit::Findings,
            "--node-gpus reaches the engine: 4 + 4 GPUs do not fit a 4-GPU node"
        );
        assert_eq!(exit(&["--node-gpus", "8", pinned]), Exit::Ok);
        assert_eq!(
            exit(&["--node-gpus", "4", "--fail-on", "never", pinned]),
            Exit::Ok
        );
        assert_eq!(
            exit(&["--node-gpus", "4", "--select", "IR005", pinned]),
            Exit::Ok,
            "the IR002 error is not selected"
        );
        assert_eq!(
            exit(&["--fail-on", "never", bad, pinned]),
            Exit::Usage,
            "an input error"
        );
        let err = run(&lint_args(&["--ignore", "IR404", pinned])).unwrap_err();
        assert!(
            err.to_string().contains("unknown rule `IR404` in --ignore"),
            "{err}"
        );
    }
}
