//! `infera render FILE`: the operator's render, printed.

use infera_model::operator;

use crate::cli::{OutputFormat, RenderArgs};
use crate::exit::Exit;

/// `infera render FILE`.
pub fn render_command(args: &RenderArgs) -> anyhow::Result<Exit> {
    use std::io::Write;
    let loaded = infera_model::manifest::load_path_values(&args.file)?;
    let mut stdout = std::io::stdout().lock();
    let mut exit = Exit::Ok;
    let mut printed = Vec::new();
    let mut count = 0usize;
    for item in loaded {
        match item {
            Err(e) => {
                eprintln!("error: {e}");
                exit = Exit::Usage;
            }
            Ok((line, value)) => {
                if value.get("kind").and_then(|k| k.as_str())
                    != Some(infera_model::api::INFERA_DEPLOYMENT.kind)
                {
                    continue;
                }
                count += 1;
                match operator::render(&value) {
                    Err(e) => {
                        eprintln!("error: {}:{line}: {e}", args.file.display());
                        exit = Exit::Usage;
                    }
                    Ok(ws) => printed.extend(ws),
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
            let items: Vec<_> = printed.iter().map(operator::annotated_object).collect();
            let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
            writeln!(stdout, "{}", serde_json::to_string_pretty(&list)?)?;
        }
        OutputFormat::Yaml => {
            for w in &printed {
                let yaml = serde_saphyr::to_string(&operator::annotated_object(w))?;
                writeln!(
                    stdout,
                    "---\n# {} {}: {} ({})",
                    w.kind.as_str(),
                    w.object
                        .pointer("/metadata/name")
                        .and_then(|n| n.as_str())
                        .unwrap_or(""),
                    w.strategy,
                    w.why
                )?;
                write!(stdout, "{yaml}")?;
            }
        }
    }
    Ok(exit)
}
