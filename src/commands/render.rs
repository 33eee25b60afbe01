//! `infera render FILE`: the operator's render, printed: the workloads, then
//! the discovery ServiceAccount, Role and RoleBinding.

use infera_model::generation::Generation;
use infera_model::operator::discovery::discovery_objects;
use infera_model::operator::typed;
use infera_model::operator::workload::{RenderedWorkload, render};

use crate::cli::{OutputFormat, RenderArgs};
use infera_audit::exit::Exit;

/// The generation to predict: `--operator`, else the `operator` key of
/// the `.infera-lint.yaml` found upward from the cwd, else the latest.
pub fn generation(flag: Option<crate::cli::OperatorArg>) -> anyhow::Result<Generation> {
    if let Some(flag) = flag {
        return Ok(flag.into());
    }
    let cwd = std::env::current_dir()?;
    let config = infera_lint::config::load(None, &cwd)?;
    Ok(config.file.operator.unwrap_or_default())
}

/// `infera render FILE`.
pub fn render_command(args: &RenderArgs) -> anyhow::Result<Exit> {
    use std::io::Write;
    let generation = generation(args.operator)?;
    let loaded = infera_model::manifest::load_path_values(&args.file)?;
    let mut stdout = std::io::stdout().lock();
    let mut exit = Exit::Ok;
    let mut printed = Vec::new();
    let mut extra = Vec::new();
    let mut count = 0usize;
    for item in loaded {
        match item {
            Err(e) => {
                eprintln!("error: {}", e.rendering());
                exit = Exit::Usage;
            }
            Ok((line, value)) => {
                if value.get("kind").and_then(|k| k.as_str())
                    != Some(infera_model::api::INFERA_DEPLOYMENT.kind)
                {
                    continue;
                }
                count += 1;
                match typed(value) {
                    Err(e) => {
                        eprintln!("error: {}:{line}: {e}", args.file.display());
                        exit = Exit::Usage;
                    }
                    Ok(idep) => {
                        printed.extend(render(&idep, generation));
                        extra.extend(discovery_objects(&idep));
                    }
                }
            }
        }
    }
    if count == 0 && exit == Exit::Ok {
        anyhow::bail!(
            "{}: no InferaDeployment found; render needs a manifest with kind: InferaDeployment",
            args.file.display()
        );
    }
    match args.output {
        OutputFormat::Json => {
            let mut items: Vec<_> = printed.iter().map(annotated_object).collect();
            items.extend(extra);
            let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
            writeln!(stdout, "{}", serde_json::to_string_pretty(&list)?)?;
        }
        OutputFormat::Yaml => {
            for w in &printed {
                let yaml = serde_saphyr::to_string(&annotated_object(w))?;
                writeln!(
                    stdout,
                    "---\n# {} {}: {} ({})",
                    w.kind.as_str(),
                    w.metadata.name.as_deref().unwrap_or(""),
                    w.strategy,
                    w.why
                )?;
                write!(stdout, "{yaml}")?;
            }
            for object in &extra {
                let yaml = serde_saphyr::to_string(object)?;
                writeln!(
                    stdout,
                    "---\n# {} {}: created by the operator for Kubernetes discovery",
                    object["kind"].as_str().unwrap_or_default(),
                    object
                        .pointer("/metadata/name")
                        .and_then(|n| n.as_str())
                        .unwrap_or_default()
                )?;
                write!(stdout, "{yaml}")?;
            }
        }
    }
    Ok(exit)
}

/// Annotations `infera render` adds to the printed objects (not part of what
/// the operator creates).
const PREDICTED_STRATEGY_ANNOTATION: &str = "infera.amd.com/predicted-strategy";
const PREDICTED_STRATEGY_REASON_ANNOTATION: &str = "infera.amd.com/predicted-strategy-reason";

/// The printed form of a rendered workload: the object plus the predicted
/// strategy annotations.
fn annotated_object(w: &RenderedWorkload) -> serde_json::Value {
    let mut obj = w.object();
    if let Some(meta) = obj.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        let ann = meta
            .entry("annotations")
            .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
        if let Some(ann) = ann.as_object_mut() {
            ann.insert(
                PREDICTED_STRATEGY_ANNOTATION.into(),
                w.strategy.as_str().into(),
            );
            ann.insert(
                PREDICTED_STRATEGY_REASON_ANNOTATION.into(),
                w.why.clone().into(),
            );
        }
    }
    obj
}
