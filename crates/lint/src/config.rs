//! `.infera-lint.yaml`: project settings for `infera lint`.
//!
//! Found upward from the current directory (or given with `--config`),
//! parsed with serde-saphyr, unknown keys rejected with file:line.
//! Precedence: command-line flags > config file > defaults.
//!
//! ```yaml
//! # .infera-lint.yaml
//! node-gpus: 8                 # GPUs per node when no inventory is given
//! nodes: cluster/nodes.yaml    # node inventory, relative to this file
//! select: [IR001, IR002]       # only these rules (default: all)
//! ignore: [single-replica-gap] # never these (alias: disable)
//! operator: pre-176            # operator generation: pre-176, 176 or latest (default)
//! severity:                    # change a rule's severity
//!   IR005: error
//!   surge-needs-spare-node: warning
//! ```
//!
//! Rules are named by code (`IR005`) or name (`probe-not-registration`)
//! everywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::finding::RuleMeta;
use super::finding::Severity;

/// The file name looked for upward from the current directory.
pub const CONFIG_FILE_NAME: &str = ".infera-lint.yaml";

/// Largest config file read (a config is a few lines; this bounds memory).
const MAX_CONFIG_BYTES: u64 = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read the lint config: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: the lint config is larger than 1 MiB; is this the right file?")]
    TooLarge { path: String },
    #[error("{location}: invalid lint config: {message}")]
    Parse { location: String, message: String },
    #[error("{location}unknown rule `{rule}`{context}; run `infera rules` to list the rules")]
    UnknownRule {
        /// `file:line:column: ` or empty (command-line flags).
        location: String,
        rule: String,
        /// ` in --select`, ` in severity`...
        context: String,
    },
}

/// A severity as written in the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SeverityName {
    Error,
    Warning,
}

impl From<SeverityName> for Severity {
    fn from(s: SeverityName) -> Self {
        match s {
            SeverityName::Error => Severity::Error,
            SeverityName::Warning => Severity::Warning,
        }
    }
}

/// The file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ConfigFile {
    pub node_gpus: Option<u32>,
    pub nodes: Option<PathBuf>,
    /// The operator generation to predict (`pre-176`, `176`, `latest`).
    pub operator: Option<infera_model::generation::Generation>,
    #[serde(default)]
    pub select: Vec<Spanned<String>>,
    #[serde(default, alias = "disable")]
    pub ignore: Vec<Spanned<String>>,
    #[serde(default)]
    pub severity: std::collections::HashMap<Spanned<String>, SeverityName>,
}

/// A config file that was read, with where it came from.
#[derive(Debug, Default)]
pub struct LoadedConfig {
    /// `None` when no file was found (defaults only).
    pub path: Option<PathBuf>,
    pub file: ConfigFile,
}

/// The nearest `.infera-lint.yaml` in `start` or one of its ancestors.
pub fn discover(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join(CONFIG_FILE_NAME))
        .find(|candidate| candidate.is_file())
}

/// Parse config text; `name` is used in error locations.
pub fn parse(text: &str, name: &str) -> Result<ConfigFile, ConfigError> {
    if text.trim().is_empty() {
        return Ok(ConfigFile::default());
    }
    serde_saphyr::from_str::<ConfigFile>(text).map_err(|err| {
        let location = match err.location() {
            Some(loc) if loc.line() > 0 => format!("{name}:{}:{}", loc.line(), loc.column()),
            _ => name.to_string(),
        };
        // The rendered error carries its own snippet; keep only the first
        // line so the message stays one line with our location in front.
        let rendered = err.without_snippet().to_string();
        let first = rendered.lines().next().unwrap_or("unreadable YAML").trim();
        // Our location is in front already; drop the parser's own suffix.
        let message = match first.rfind(" at line ") {
            Some(i) => first[..i].to_string(),
            None => first.to_string(),
        };
        ConfigError::Parse { location, message }
    })
}

/// Read `explicit` (`--config FILE`) or the discovered file from `cwd`.
pub fn load(explicit: Option<&Path>, cwd: &Path) -> Result<LoadedConfig, ConfigError> {
    let Some(path) = explicit.map(Path::to_path_buf).or_else(|| discover(cwd)) else {
        return Ok(LoadedConfig::default());
    };
    let name = path.display().to_string();
    let read_err = |source| ConfigError::Read {
        path: name.clone(),
        source,
    };
    let len = std::fs::metadata(&path).map_err(read_err)?.len();
    if len > MAX_CONFIG_BYTES {
        return Err(ConfigError::TooLarge { path: name });
    }
    let text = std::fs::read_to_string(&path).map_err(read_err)?;
    let file = parse(&text, &name)?;
    Ok(LoadedConfig {
        path: Some(path),
        file,
    })
}

/// What the command line says, independent of clap.
#[derive(Debug, Default, Clone)]
pub struct CliOverrides {
    pub node_gpus: Option<u32>,
    pub nodes: Option<PathBuf>,
    pub select: Vec<String>,
    pub ignore: Vec<String>,
    pub operator: Option<infera_model::generation::Generation>,
}

/// Settings after applying flags over config over defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Effective {
    /// GPUs per node from `--node-gpus` or the config; None when neither
    /// says (the pinned node labels decide, else 8).
    pub node_gpus: Option<u32>,
    pub nodes: Option<PathBuf>,
    /// Codes of the rules to run, in registry order.
    pub enabled: Vec<&'static str>,
    /// Severities the config sets explicitly (rule code → severity). Rules
    /// not named keep the severity each finding was raised with.
    pub severity: BTreeMap<&'static str, Severity>,
    /// The operator generation to predict (flag > config > latest).
    pub operator: infera_model::generation::Generation,
}

impl Effective {
    /// The severity a finding of `code` raised at `raised` is reported at.
    pub fn severity_of(&self, code: &str, raised: Severity) -> Severity {
        self.severity.get(code).copied().unwrap_or(raised)
    }
}

/// GPUs per node when neither flag nor config says.
pub const DEFAULT_NODE_GPUS: u32 = 8;

fn lookup(rules: &'static [RuleMeta], code_or_name: &str) -> Option<&'static RuleMeta> {
    let wanted = code_or_name.trim();
    rules
        .iter()
        .find(|r| r.code.eq_ignore_ascii_case(wanted) || r.name == wanted)
}

/// Resolve one rule reference from the config, with its file position.
fn resolve_spanned(
    rules: &'static [RuleMeta],
    config_name: &str,
    rule: &Spanned<String>,
    context: &str,
) -> Result<&'static str, ConfigError> {
    lookup(rules, &rule.value).map(|r| r.code).ok_or_else(|| {
        let loc = &rule.referenced;
        let location = if loc.line() > 0 {
            format!("{config_name}:{}:{}: ", loc.line(), loc.column())
        } else {
            format!("{config_name}: ")
        };
        ConfigError::UnknownRule {
            location,
            rule: rule.value.clone(),
            context: format!(" in {context}"),
        }
    })
}

fn resolve_flag(
    rules: &'static [RuleMeta],
    rule: &str,
    flag: &str,
) -> Result<&'static str, ConfigError> {
    lookup(rules, rule)
        .map(|r| r.code)
        .ok_or_else(|| ConfigError::UnknownRule {
            location: String::new(),
            rule: rule.to_string(),
            context: format!(" in {flag}"),
        })
}

/// Apply flags over the config over defaults.
///
/// Rule selection: the run set is `--select` if given, else the config's
/// `select` if given, else every rule; minus the config's `ignore` (except
/// rules named on `--select`: the command line wins), minus `--ignore`.
pub fn resolve(
    rules: &'static [RuleMeta],
    config: &LoadedConfig,
    cli: &CliOverrides,
) -> Result<Effective, ConfigError> {
    let name = config
        .path
        .as_ref()
        .map_or_else(|| CONFIG_FILE_NAME.to_string(), |p| p.display().to_string());
    let file = &config.file;

    let config_select = file
        .select
        .iter()
        .map(|r| resolve_spanned(rules, &name, r, "select"))
        .collect::<Result<BTreeSet<_>, _>>()?;
    let config_ignore = file
        .ignore
        .iter()
        .map(|r| resolve_spanned(rules, &name, r, "ignore"))
        .collect::<Result<BTreeSet<_>, _>>()?;
    let cli_select = cli
        .select
        .iter()
        .filter(|r| !r.trim().is_empty())
        .map(|r| resolve_flag(rules, r, "--select"))
        .collect::<Result<BTreeSet<_>, _>>()?;
    let cli_ignore = cli
        .ignore
        .iter()
        .filter(|r| !r.trim().is_empty())
        .map(|r| resolve_flag(rules, r, "--ignore"))
        .collect::<Result<BTreeSet<_>, _>>()?;

    // Severity keys, in file order so the first unknown one is reported.
    let mut severity_entries: Vec<(&Spanned<String>, SeverityName)> =
        file.severity.iter().map(|(k, v)| (k, *v)).collect();
    severity_entries.sort_by_key(|(k, _)| (k.referenced.line(), k.referenced.column()));
    let mut severity = BTreeMap::new();
    for (key, value) in severity_entries {
        let code = resolve_spanned(rules, &name, key, "severity")?;
        severity.insert(code, Severity::from(value));
    }

    let enabled = rules
        .iter()
        .map(|r| r.code)
        .filter(|code| {
            let selected = if !cli_select.is_empty() {
                cli_select.contains(code)
            } else if !config_select.is_empty() {
                config_select.contains(code)
            } else {
                true
            };
            let ignored_by_config = config_ignore.contains(code) && !cli_select.contains(code);
            selected && !ignored_by_config && !cli_ignore.contains(code)
        })
        .collect();

    // A relative inventory path in the config is relative to the config file.
    let config_nodes =
        file.nodes
            .as_ref()
            .map(|p| match config.path.as_ref().and_then(|c| c.parent()) {
                Some(dir) if p.is_relative() => dir.join(p),
                _ => p.clone(),
            });

    Ok(Effective {
        node_gpus: cli.node_gpus.or(file.node_gpus),
        nodes: cli.nodes.clone().or(config_nodes),
        enabled,
        severity,
        operator: cli.operator.or(file.operator).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Severity;

    const RULES: &[RuleMeta] = &[
        RuleMeta {
            code: "IR001",
            name: "skip-probe-serving",
            default_severity: Severity::Error,
            summary: "",
            doc: "",
        },
        RuleMeta {
            code: "IR005",
            name: "probe-not-registration",
            default_severity: Severity::Warning,
            summary: "",
            doc: "",
        },
        RuleMeta {
            code: "IR008",
            name: "single-replica-gap",
            default_severity: Severity::Error,
            summary: "",
            doc: "",
        },
    ];

    fn loaded(text: &str) -> LoadedConfig {
        LoadedConfig {
            path: Some(PathBuf::from("/proj/.infera-lint.yaml")),
            file: parse(text, "/proj/.infera-lint.yaml").unwrap(),
        }
    }

    #[test]
    fn defaults_without_config() {
        let eff = resolve(RULES, &LoadedConfig::default(), &CliOverrides::default()).unwrap();
        assert_eq!(eff.node_gpus, None);
        assert_eq!(eff.nodes, None);
        assert_eq!(eff.enabled, vec!["IR001", "IR005", "IR008"]);
        assert!(eff.severity.is_empty());
        assert_eq!(
            eff.severity_of("IR005", Severity::Warning),
            Severity::Warning
        );
    }

    #[test]
    fn config_disables_and_re_severities_by_code_or_name() {
        let cfg = loaded(
            "node-gpus: 4\nnodes: inv/nodes.yaml\ndisable: [single-replica-gap]\nseverity:\n  probe-not-registration: error\n  IR001: warning\n",
        );
        let eff = resolve(RULES, &cfg, &CliOverrides::default()).unwrap();
        assert_eq!(eff.node_gpus, Some(4));
        assert_eq!(eff.nodes, Some(PathBuf::from("/proj/inv/nodes.yaml")));
        assert_eq!(eff.enabled, vec!["IR001", "IR005"]);
        assert_eq!(eff.severity_of("IR005", Severity::Warning), Severity::Error);
        assert_eq!(eff.severity_of("IR001", Severity::Error), Severity::Warning);
        assert_eq!(
            eff.severity_of("IR008", Severity::Warning),
            Severity::Warning
        );
    }

    #[test]
    fn flags_win_over_config() {
        let cfg = loaded("node-gpus: 4\nselect: [IR001]\nignore: [IR008]\n");
        let cli = CliOverrides {
            node_gpus: Some(16),
            nodes: Some(PathBuf::from("n.yaml")),
            select: vec!["IR008".into(), "probe-not-registration".into()],
            ignore: vec!["IR005".into()],
            operator: None,
        };
        let eff = resolve(RULES, &cfg, &cli).unwrap();
        assert_eq!(eff.node_gpus, Some(16));
        assert_eq!(eff.nodes, Some(PathBuf::from("n.yaml")));
        // --select replaces the config's select and overrides its ignore;
        // --ignore always wins.
        assert_eq!(eff.enabled, vec!["IR008"]);
    }

    #[test]
    fn config_select_applies_without_flags() {
        let eff = resolve(
            RULES,
            &loaded("select: [IR005]\n"),
            &CliOverrides::default(),
        )
        .unwrap();
        assert_eq!(eff.enabled, vec!["IR005"]);
    }

    #[test]
    fn operator_generation_flag_over_config_over_latest() {
        use infera_model::generation::Generation;
        let resolved = |text: &str, flag: Option<Generation>| {
            let cli = CliOverrides {
                operator: flag,
                ..CliOverrides::default()
            };
            resolve(RULES, &loaded(text), &cli).unwrap().operator
        };
        assert_eq!(resolved("", None), Generation::LATEST);
        assert_eq!(resolved("operator: pre-176\n", None), Generation::SurgeFree);
        assert_eq!(
            resolved("operator: 176\n", None),
            Generation::ProbeGatedSurge
        );
        assert_eq!(
            resolved("operator: latest\n", None),
            Generation::ProbeGatedSurge
        );
        assert_eq!(
            resolved("operator: pre-176\n", Some(Generation::ProbeGatedSurge)),
            Generation::ProbeGatedSurge
        );
        let err = parse("node-gpus: 8\noperator: v1\n", "cfg.yaml").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("cfg.yaml:2:"), "{text}");
        assert!(text.contains("pre-176, 176, latest"), "{text}");
    }

    #[test]
    fn unknown_key_is_rejected_with_line() {
        let err = parse("node-gpus: 8\nseverty:\n  IR001: error\n", "cfg.yaml").unwrap_err();
        let text = err.to_string();
        assert!(!text.contains("at line"), "location only once: {text}");
        assert!(text.starts_with("cfg.yaml:2:"), "{text}");
        assert!(text.contains("severty"), "{text}");
    }

    #[test]
    fn bad_severity_value_is_rejected_with_line() {
        let err = parse("severity:\n  IR001: fatal\n", "cfg.yaml").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("cfg.yaml:2:"), "{text}");
    }

    #[test]
    fn unknown_rule_in_config_names_it_with_position() {
        let cfg = loaded("severity:\n  IR005: error\n  IR099: warning\n");
        let err = resolve(RULES, &cfg, &CliOverrides::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "/proj/.infera-lint.yaml:3:3: unknown rule `IR099` in severity; run `infera rules` to list the rules"
        );
        let cfg = loaded("ignore:\n  - IR001\n  - no-such-rule\n");
        let err = resolve(RULES, &cfg, &CliOverrides::default()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("/proj/.infera-lint.yaml:3:5: unknown rule `no-such-rule` in ignore"),
            "{err}"
        );
    }

    #[test]
    fn unknown_rule_on_command_line_names_it() {
        let cli = CliOverrides {
            select: vec!["IR042".into()],
            ..CliOverrides::default()
        };
        let err = resolve(RULES, &LoadedConfig::default(), &cli).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown rule `IR042` in --select; run `infera rules` to list the rules"
        );
    }

    #[test]
    fn discovery_walks_upward_and_explicit_wins() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let nested = root.join("a/b/c");
        std::fs::create_dir_all(&nested).unwrap();
        assert_eq!(discover(&nested), None);
        std::fs::write(root.join("a").join(CONFIG_FILE_NAME), "node-gpus: 2\n").unwrap();
        assert_eq!(
            discover(&nested),
            Some(root.join("a").join(CONFIG_FILE_NAME))
        );
        std::fs::write(root.join("a/b").join(CONFIG_FILE_NAME), "node-gpus: 3\n").unwrap();
        let cfg = load(None, &nested).unwrap();
        assert_eq!(cfg.file.node_gpus, Some(3), "nearest file wins");
        let other = root.join("other.yaml");
        std::fs::write(&other, "node-gpus: 5\n").unwrap();
        let cfg = load(Some(&other), &nested).unwrap();
        assert_eq!(cfg.file.node_gpus, Some(5), "--config wins over discovery");
        let missing = load(Some(&root.join("missing.yaml")), &nested).unwrap_err();
        assert!(
            missing.to_string().contains("missing.yaml: cannot read"),
            "{missing}"
        );
    }

    #[test]
    fn empty_file_is_defaults() {
        let cfg = parse("# nothing yet\n", "c").unwrap();
        assert!(cfg.select.is_empty() && cfg.node_gpus.is_none());
    }
}
