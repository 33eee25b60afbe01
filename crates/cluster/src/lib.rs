//! Cluster access through `kube`: client, errors, RBAC, node inventory and
//! free capacity, rollout-status arithmetic.
//!
//! [`connect`] follows kubectl's precedence: `--kubeconfig` (only that file),
//! else `KUBECONFIG` (a `:`-separated list, merged first-wins), else
//! `~/.kube/config`, else the in-cluster service account. `--context` picks
//! a context (default: `current-context`), `-n` the namespace (default: the
//! context's, else `default`). Exec plugins and bearer tokens (inline or
//! `tokenFile`) work as kube 5 implements them. Nothing here prints a token
//! or any other credential.

mod capacity;
pub mod rbac;
pub mod redact;
pub mod reflect;
pub mod sight;
mod status;
pub mod trace;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use infera_model::api::{ApiType, INFERA_DEPLOYMENT};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

pub use capacity::{
    NodeCapacity, NodeInventory, ResourceList, SurgeRoom, parse_quantity, pod_requests,
};
pub use rbac::{
    MONITOR_NAME, NAME as RBAC_NAME, Scope as RbacScope, monitor_rbac_objects, rbac_objects,
    traffic_rules,
};
pub use status::{DeploymentProgress, deployment_progress};

/// Errors reaching or using a cluster. `Display` is one line that says what
/// failed and what to do; callers exit 2.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(
        "no cluster configured: no --kubeconfig, KUBECONFIG unset, {home_config} missing, and not running in a pod ({in_cluster}); pass --kubeconfig FILE"
    )]
    NoConfig {
        home_config: String,
        in_cluster: String,
    },
    /// The file, the line and the kind of problem; never the file's content
    /// (see [`redact`]).
    #[error("cannot load kubeconfig {0}")]
    Kubeconfig(redact::KubeconfigProblem),
    #[error("context \"{context}\" not found in {source_desc}; known contexts: {}", known_list(.known))]
    UnknownContext {
        context: String,
        source_desc: String,
        known: Vec<String>,
    },
    #[error(
        "kubeconfig {source_desc} sets no current-context; pass --context NAME (known contexts: {})", known_list(.known)
    )]
    NoCurrentContext {
        source_desc: String,
        known: Vec<String>,
    },
    #[error("cannot build a client for {url}: {message}")]
    Client { url: String, message: String },
    #[error(
        "cannot reach the Kubernetes API at {url}: {reason}; check the server address and that the cluster is up"
    )]
    Unreachable { url: String, reason: String },
    #[error(
        "the API server at {url} rejected the credentials (401 Unauthorized); log in again or fix the user in the kubeconfig"
    )]
    Unauthorized { url: String },
    #[error("forbidden: cannot {verb} {resource}{}; {}", in_namespace(.namespace), rbac_hint(.namespace))]
    Forbidden {
        verb: String,
        resource: String,
        namespace: Option<String>,
    },
    #[error(
        "namespaces \"{name}\" not found; check `-n` (or the context's namespace): `kubectl get namespaces` lists them"
    )]
    NoNamespace { name: String },
    #[error("{resource} \"{name}\" not found{}", in_namespace(.namespace))]
    NotFound {
        resource: String,
        name: String,
        namespace: Option<String>,
    },
    #[error("cannot {verb} {resource}{}: {code} {message}", in_namespace(.namespace))]
    Api {
        verb: String,
        resource: String,
        namespace: Option<String>,
        code: u16,
        message: String,
    },
    #[error("cannot {verb} {resource}{}: {message}", in_namespace(.namespace))]
    Request {
        verb: String,
        resource: String,
        namespace: Option<String>,
        message: String,
    },
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        "none".to_string()
    } else {
        known.join(", ")
    }
}

fn in_namespace(ns: &Option<String>) -> String {
    match ns {
        Some(ns) => format!(" in namespace \"{ns}\""),
        None => " cluster-wide".to_string(),
    }
}

/// Which `infera rbac` grants what was forbidden.
fn rbac_hint(ns: &Option<String>) -> String {
    match ns {
        Some(ns) => format!("`infera rbac -n {ns}` prints the Role to grant"),
        None => "`infera rbac -A -n NAMESPACE` (the account's namespace) prints the ClusterRole \
                 to grant"
            .to_string(),
    }
}

/// Collapse a message to one line (server and library messages may wrap)
/// and apply the credentials rule ([`redact::scrub`]).
fn one_line(s: &str) -> String {
    redact::scrub(&s.split_whitespace().collect::<Vec<_>>().join(" "))
}

impl ClusterError {
    /// Classify a `kube` error from `verb` on `resource` (plural, e.g.
    /// `pods`, `deployments.apps`) in `namespace` (`None` = cluster-wide)
    /// against the API server at `url`.
    pub fn from_kube(
        err: &kube::Error,
        url: &str,
        verb: &str,
        resource: &str,
        namespace: Option<&str>,
    ) -> ClusterError {
        let namespace = namespace.map(str::to_string);
        match err {
            kube::Error::Api(status) => Self::from_status(status, url, verb, resource, namespace),
            kube::Error::HyperError(e) => ClusterError::Unreachable {
                url: url.to_string(),
                reason: redact::error_chain(e),
            },
            kube::Error::Service(e) => ClusterError::Unreachable {
                url: url.to_string(),
                reason: redact::error_chain(e.as_ref()),
            },
            kube::Error::Auth(e) => ClusterError::Client {
                url: url.to_string(),
                message: format!("authentication failed: {}", redact::auth_error(e)),
            },
            other => ClusterError::Request {
                verb: verb.to_string(),
                resource: resource.to_string(),
                namespace,
                message: redact::kube_error(other),
            },
        }
    }

    fn from_status(
        status: &kube::core::Status,
        url: &str,
        verb: &str,
        resource: &str,
        namespace: Option<String>,
    ) -> ClusterError {
        if status.code == 401 {
            return ClusterError::Unauthorized {
                url: url.to_string(),
            };
        }
        if status.is_forbidden() {
            return ClusterError::Forbidden {
                verb: verb.to_string(),
                resource: resource.to_string(),
                namespace,
            };
        }
        // A path the server does not serve at all (a CRD not installed)
        // answers 404 with a plain-text body, which kube reads as a Status
        // whose reason is "Failed to parse error data": the code decides.
        if status.is_not_found() || status.code == 404 {
            let name = status
                .details
                .as_ref()
                .map(|d| d.name.clone())
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "?".to_string());
            return ClusterError::NotFound {
                resource: resource.to_string(),
                name,
                namespace,
            };
        }
        ClusterError::Api {
            verb: verb.to_string(),
            resource: resource.to_string(),
            namespace,
            code: status.code,
            message: one_line(&status.message),
        }
    }

    /// Classify a watcher error (list → `list`, watch → `watch`).
    pub fn from_watcher(
        err: &kube::runtime::watcher::Error,
        url: &str,
        resource: &str,
        namespace: Option<&str>,
    ) -> ClusterError {
        use kube::runtime::watcher::Error as W;
        match err {
            W::InitialListFailed(e) => Self::from_kube(e, url, "list", resource, namespace),
            W::WatchStartFailed(e) | W::WatchFailed(e) => {
                Self::from_kube(e, url, "watch", resource, namespace)
            }
            W::WatchError(status) => Self::from_status(
                status,
                url,
                "watch",
                resource,
                namespace.map(str::to_string),
            ),
            W::NoResourceVersion => ClusterError::Request {
                verb: "watch".to_string(),
                resource: resource.to_string(),
                namespace: namespace.map(str::to_string),
                message: "the server returned no resourceVersion".to_string(),
            },
        }
    }

    /// Name the kubeconfig (or in-cluster account) a connection error came
    /// from: `… at https://k:6443 (kubeconfig ~/.kube/config) …`.
    pub fn with_source(self, source_desc: &str) -> ClusterError {
        let tag = |url: String| format!("{url} ({source_desc})");
        match self {
            ClusterError::Unreachable { url, reason } => ClusterError::Unreachable {
                url: tag(url),
                reason,
            },
            ClusterError::Unauthorized { url } => ClusterError::Unauthorized { url: tag(url) },
            ClusterError::Client { url, message } => ClusterError::Client {
                url: tag(url),
                message,
            },
            other => other,
        }
    }

    /// Errors that retrying will not fix (permissions, credentials, a
    /// missing object): a watch loop stops on these instead of backing off.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            ClusterError::Forbidden { .. }
                | ClusterError::Unauthorized { .. }
                | ClusterError::NotFound { .. }
        )
    }
}

/// A connected client and the namespace commands act in.
#[derive(Clone)]
pub struct Connection {
    pub client: Client,
    /// The same credentials without `kube`'s retry of 429/503/504: for
    /// polls such as the pod-proxy `/ready` probe, where a 503 (port not
    /// open yet) is the answer, not a fault to retry 15 times.
    pub probe_client: Client,
    /// `-n`, else the context's namespace, else `default`.
    pub namespace: String,
    /// The API server URL (no credentials), for error messages.
    pub url: String,
    /// Context name (`None` in-cluster).
    pub context: Option<String>,
    /// The kubeconfig user name of the context (never a credential; `None`
    /// in-cluster or unknown), for the rollout history.
    pub user: Option<String>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("url", &self.url)
            .field("namespace", &self.namespace)
            .field("context", &self.context)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Classify `err` from `verb` on `resource` in this connection's namespace.
    pub fn error(&self, err: &kube::Error, verb: &str, resource: &str) -> ClusterError {
        ClusterError::from_kube(err, &self.url, verb, resource, Some(&self.namespace))
    }

    /// The connection's namespace exists: a typo is an error, as kubectl
    /// makes it (`namespaces "nope" not found`), never an empty cluster.
    /// Only the API server's "not found" decides: a client not allowed to
    /// read namespaces (the minimal Role) cannot tell, and any other
    /// failure is left to the command's own requests to report.
    pub async fn check_namespace(&self) -> Result<(), ClusterError> {
        let api: kube::Api<k8s_openapi::api::core::v1::Namespace> =
            kube::Api::all(self.client.clone());
        match api.get_opt(&self.namespace).await {
            Ok(None) => Err(ClusterError::NoNamespace {
                name: self.namespace.clone(),
            }),
            Ok(Some(_)) | Err(_) => Ok(()),
        }
    }
}

/// The namespace a command that prints objects puts them in, as kubectl
/// picks it without a request: `-n`, else the context's namespace, else
/// (no kubeconfig and not in a pod) `default`.
pub async fn context_namespace(args: &ConnectOptions) -> Result<String, ClusterError> {
    if let Some(ns) = &args.namespace {
        return Ok(ns.clone());
    }
    match resolve_config(args).await {
        Ok((config, _)) => Ok(config.default_namespace),
        Err(ClusterError::NoConfig { .. }) => Ok("default".to_string()),
        Err(e) => Err(e),
    }
}

/// Where the kubeconfig comes from, by kubectl's precedence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// `--kubeconfig FILE`.
    Flag(PathBuf),
    /// `KUBECONFIG`, split on the platform's path separator, empty entries dropped.
    Env(Vec<PathBuf>),
    /// `~/.kube/config`.
    Home(PathBuf),
    /// The in-cluster service account.
    InCluster,
}

impl ConfigSource {
    /// Pick the source from the flag, `KUBECONFIG` and the home directory.
    /// `home_config_exists` decides between `~/.kube/config` and in-cluster.
    pub fn resolve(
        flag: Option<&Path>,
        env_kubeconfig: Option<OsString>,
        home: Option<PathBuf>,
        home_config_exists: impl Fn(&Path) -> bool,
    ) -> ConfigSource {
        if let Some(path) = flag {
            return ConfigSource::Flag(path.to_path_buf());
        }
        if let Some(value) = env_kubeconfig {
            let paths: Vec<PathBuf> = std::env::split_paths(&value)
                .filter(|p| !p.as_os_str().is_empty())
                .collect();
            if !paths.is_empty() {
                return ConfigSource::Env(paths);
            }
        }
        if let Some(home) = home {
            let path = home.join(".kube").join("config");
            if home_config_exists(&path) {
                return ConfigSource::Home(path);
            }
        }
        ConfigSource::InCluster
    }

    fn describe(&self) -> String {
        match self {
            ConfigSource::Flag(p) | ConfigSource::Home(p) => p.display().to_string(),
            ConfigSource::Env(paths) => format!(
                "KUBECONFIG={}",
                std::env::join_paths(paths)
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            ),
            ConfigSource::InCluster => "in-cluster service account".to_string(),
        }
    }
}

fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var_os("USERPROFILE").filter(|h| !h.is_empty()))
        .map(PathBuf::from)
}

fn load_kubeconfig(source: &ConfigSource) -> Result<Kubeconfig, ClusterError> {
    let config = match source {
        ConfigSource::Flag(p) | ConfigSource::Home(p) => read_kubeconfig(p)?,
        ConfigSource::Env(paths) => {
            let mut merged = Kubeconfig::default();
            for p in paths {
                merged = merged.merge(read_kubeconfig(p)?).map_err(|e| {
                    ClusterError::Kubeconfig(redact::KubeconfigProblem::kube(
                        &source.describe(),
                        &e,
                    ))
                })?;
            }
            merged
        }
        ConfigSource::InCluster => Kubeconfig::default(),
    };
    redact::register_kubeconfig(&config);
    Ok(config)
}

/// Read one kubeconfig file. A YAML error names the file, the line and the
/// kind of problem, never a line of the file: `kube`'s own message embeds a
/// code frame with the neighbouring lines (tokens, keys).
pub fn read_kubeconfig(path: &Path) -> Result<Kubeconfig, ClusterError> {
    Kubeconfig::read_from(path).map_err(|e| {
        let problem = match &e {
            kube::config::KubeconfigError::Parse(yaml) => {
                let source = std::fs::read_to_string(path).unwrap_or_default();
                redact::KubeconfigProblem::yaml(path, yaml, &source)
            }
            other => redact::KubeconfigProblem::kube(&path.display().to_string(), other),
        };
        ClusterError::Kubeconfig(problem)
    })
}

/// The `kube` API resource of a custom resource type.
pub fn api_resource(api: &ApiType) -> kube::api::ApiResource {
    kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk(api.group, api.version, api.kind),
        api.plural,
    )
}

/// The InferaDeployment API resource.
pub fn inferadeployment_resource() -> kube::api::ApiResource {
    api_resource(&INFERA_DEPLOYMENT)
}

/// Where the kubeconfig, context and namespace come from (the binary builds
/// this from `--kubeconfig`, `--context` and `-n`).
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    /// Path to the kubeconfig file to use.
    pub kubeconfig: Option<PathBuf>,
    /// The name of the kubeconfig context to use.
    pub context: Option<String>,
    /// The namespace scope (default: the context's namespace).
    pub namespace: Option<String>,
}

/// Build the client `Config` for `args` without touching the network.
/// Returns the config and the context name used.
pub async fn resolve_config(
    args: &ConnectOptions,
) -> Result<(Config, Option<String>), ClusterError> {
    resolve_config_from(&source_of(args), args).await
}

/// Where `args` says the kubeconfig comes from (kubectl's precedence).
fn source_of(args: &ConnectOptions) -> ConfigSource {
    ConfigSource::resolve(
        args.kubeconfig.as_deref(),
        std::env::var_os("KUBECONFIG"),
        home_dir(),
        |p| p.is_file(),
    )
}

async fn resolve_config_from(
    source: &ConfigSource,
    args: &ConnectOptions,
) -> Result<(Config, Option<String>), ClusterError> {
    let (mut config, context) = match source {
        ConfigSource::InCluster => {
            if let Some(context) = &args.context {
                return Err(ClusterError::UnknownContext {
                    context: context.clone(),
                    source_desc: "the in-cluster configuration (no kubeconfig found)".to_string(),
                    known: Vec::new(),
                });
            }
            let config = Config::incluster().map_err(|e| ClusterError::NoConfig {
                home_config: home_dir()
                    .map(|h| h.join(".kube/config").display().to_string())
                    .unwrap_or_else(|| "~/.kube/config".to_string()),
                in_cluster: one_line(&e.to_string()),
            })?;
            (config, None)
        }
        _ => {
            let kubeconfig = load_kubeconfig(source)?;
            let known: Vec<String> = kubeconfig.contexts.iter().map(|c| c.name.clone()).collect();
            let context = match args.context.clone().or(kubeconfig.current_context.clone()) {
                Some(c) => c,
                None => {
                    return Err(ClusterError::NoCurrentContext {
                        source_desc: source.describe(),
                        known,
                    });
                }
            };
            if !known.contains(&context) {
                return Err(ClusterError::UnknownContext {
                    context,
                    source_desc: source.describe(),
                    known,
                });
            }
            let options = KubeConfigOptions {
                context: Some(context.clone()),
                cluster: None,
                user: None,
            };
            let config = Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|e| {
                    ClusterError::Kubeconfig(redact::KubeconfigProblem::kube(
                        &source.describe(),
                        &e,
                    ))
                })?;
            (config, Some(context))
        }
    };
    if let Some(ns) = &args.namespace {
        config.default_namespace = ns.clone();
    }
    Ok((config, context))
}

/// The server URL without any userinfo (never print credentials).
fn display_url(uri: &hyper::Uri) -> String {
    let scheme = uri.scheme_str().unwrap_or("https");
    let authority = uri
        .authority()
        .map(|a| a.as_str().rsplit('@').next().unwrap_or("").to_string())
        .unwrap_or_default();
    format!("{scheme}://{authority}{}", uri.path().trim_end_matches('/'))
}

/// The backoff of every watch `infera` runs: 100 ms doubling to at most 5 s,
/// reset by any successful event. `kube`'s default (800 ms to 30 s) suits
/// controllers sharing an API server; a rollout under watch is blind while
/// it waits, so it retries sooner. The re-list after the wait keeps the
/// numbers exact either way.
#[derive(Debug, Clone)]
pub struct WatchBackoff {
    next: Duration,
}

const WATCH_BACKOFF_MIN: Duration = Duration::from_millis(100);
const WATCH_BACKOFF_MAX: Duration = Duration::from_secs(5);

pub fn watch_backoff() -> WatchBackoff {
    WatchBackoff {
        next: WATCH_BACKOFF_MIN,
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let now = self.next;
        self.next = (self.next * 2).min(WATCH_BACKOFF_MAX);
        Some(now)
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = WATCH_BACKOFF_MIN;
    }
}

/// How long `connect` waits for the API server to answer `/version`.
const CONNECT_PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// Connect with kubectl's precedence and check the API server answers
/// (one `GET /version`; any HTTP answer but 401 counts as reachable).
/// A connection error names the kubeconfig it came from.
pub async fn connect(args: &ConnectOptions) -> Result<Connection, ClusterError> {
    let source = source_of(args);
    let (config, context) = resolve_config_from(&source, args).await?;
    tracing::info!(
        target: crate::trace::target::CLUSTER,
        "kubeconfig {}: context {}, server {}",
        source.describe(),
        context.as_deref().unwrap_or("(in-cluster)"),
        display_url(&config.cluster_url)
    );
    let user = context.as_deref().and_then(|c| context_user(&source, c));
    connect_with(config, context)
        .await
        .map(|conn| Connection { user, ..conn })
        .map_err(|e| match source {
            ConfigSource::InCluster => e.with_source(&source.describe()),
            _ => e.with_source(&format!("kubeconfig {}", source.describe())),
        })
}

/// The user name context `context` of the kubeconfig at `source` names.
fn context_user(source: &ConfigSource, context: &str) -> Option<String> {
    let kubeconfig = load_kubeconfig(source).ok()?;
    kubeconfig
        .contexts
        .into_iter()
        .find(|c| c.name == context)
        .and_then(|c| c.context)
        .and_then(|c| c.user)
        .filter(|u| !u.is_empty())
}

/// After this long without an answer, say where infera is connecting.
const CONNECT_NOTICE_AFTER: Duration = Duration::from_secs(2);

/// `probe`, with `connecting to URL…` on stderr once it has taken
/// [`CONNECT_NOTICE_AFTER`] (a server that accepts and never answers
/// otherwise leaves the user in silence until the timeout).
async fn announced<T>(url: &str, probe: impl std::future::Future<Output = T>) -> T {
    tokio::pin!(probe);
    tokio::select! {
        out = &mut probe => return out,
        () = tokio::time::sleep(CONNECT_NOTICE_AFTER) => {}
    }
    eprintln!(
        "connecting to {url}… (no answer yet; giving up after {}s)",
        CONNECT_PROBE_TIMEOUT.as_secs()
    );
    probe.await
}

/// [`connect`] from an already-built `Config`.
pub async fn connect_with(
    config: Config,
    context: Option<String>,
) -> Result<Connection, ClusterError> {
    let url = display_url(&config.cluster_url);
    let namespace = config.default_namespace.clone();
    let mut probe_config = config.clone();
    probe_config.default_retry = false;
    let client_err = |e: kube::Error| ClusterError::Client {
        url: url.clone(),
        message: redact::kube_error(&e),
    };
    let client = trace::client(config).map_err(client_err)?;
    let probe_client = trace::client(probe_config).map_err(client_err)?;
    match tokio::time::timeout(
        CONNECT_PROBE_TIMEOUT,
        announced(&url, client.apiserver_version()),
    )
    .await
    {
        Err(_) => {
            return Err(ClusterError::Unreachable {
                url,
                reason: format!("no answer within {}s", CONNECT_PROBE_TIMEOUT.as_secs()),
            });
        }
        Ok(Ok(_)) => {}
        Ok(Err(kube::Error::Api(status))) if status.code != 401 => {}
        Ok(Err(kube::Error::SerdeError(_))) => {}
        Ok(Err(e)) => {
            return Err(ClusterError::from_kube(&e, &url, "get", "/version", None));
        }
    }
    Ok(Connection {
        client,
        probe_client,
        namespace,
        url,
        context,
        user: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_flag_then_env_then_home_then_incluster() {
        let home = Some(PathBuf::from("/home/u"));
        let flag = PathBuf::from("/tmp/flag");
        assert_eq!(
            ConfigSource::resolve(Some(&flag), Some("/a:/b".into()), home.clone(), |_| true),
            ConfigSource::Flag(flag.clone())
        );
        assert_eq!(
            ConfigSource::resolve(None, Some("/a::/b".into()), home.clone(), |_| true),
            ConfigSource::Env(vec![PathBuf::from("/a"), PathBuf::from("/b")])
        );
        assert_eq!(
            ConfigSource::resolve(None, Some("".into()), home.clone(), |_| true),
            ConfigSource::Home(PathBuf::from("/home/u/.kube/config"))
        );
        assert_eq!(
            ConfigSource::resolve(None, None, home, |_| false),
            ConfigSource::InCluster
        );
    }

    #[test]
    fn forbidden_names_verb_resource_namespace_in_one_line() {
        let status = kube::core::Status::failure(
            "pods is forbidden: User \"bob\" cannot list resource \"pods\"",
            "Forbidden",
        )
        .with_code(403);
        let err = ClusterError::from_kube(
            &kube::Error::Api(Box::new(status)),
            "https://k:6443",
            "list",
            "pods",
            Some("prod"),
        );
        let text = err.to_string();
        assert_eq!(
            text,
            "forbidden: cannot list pods in namespace \"prod\"; `infera rbac -n prod` prints the Role to grant"
        );
        assert!(err.is_fatal());
        let cluster_wide = ClusterError::from_kube(
            &kube::Error::Api(Box::new(
                kube::core::Status::failure("no", "Forbidden").with_code(403),
            )),
            "https://k:6443",
            "watch",
            "pods",
            None,
        );
        assert_eq!(
            cluster_wide.to_string(),
            "forbidden: cannot watch pods cluster-wide; `infera rbac -A -n NAMESPACE` (the \
             account's namespace) prints the ClusterRole to grant"
        );
    }

    /// kube-apiserver answers a path it does not serve (a CRD not
    /// installed) with `404 page not found` in plain text; kube makes that
    /// a Status whose reason is "Failed to parse error data".
    #[test]
    fn a_plain_text_404_is_not_found() {
        let status =
            kube::core::Status::failure("404 page not found", "Failed to parse error data")
                .with_code(404);
        let err = ClusterError::from_kube(
            &kube::Error::Api(Box::new(status)),
            "https://k:6443",
            "list",
            "leaderworkersets",
            Some("prod"),
        );
        assert!(matches!(err, ClusterError::NotFound { .. }), "{err:?}");
    }

    #[test]
    fn url_display_drops_userinfo() {
        let uri: hyper::Uri = "https://user:secret@example.com:6443/".parse().unwrap();
        assert_eq!(display_url(&uri), "https://example.com:6443");
    }

    #[tokio::test]
    async fn unknown_context_lists_the_known_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\ncurrent-context: a\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: a\n  context:\n    cluster: c\n    user: u\n    namespace: team\n- name: b\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: sekrit-token\n",
        )
        .unwrap();
        let args = ConnectOptions {
            kubeconfig: Some(path.clone()),
            context: Some("nope".into()),
            namespace: None,
        };
        let err = resolve_config(&args).await.err().unwrap().to_string();
        assert!(err.contains("context \"nope\" not found"), "{err}");
        assert!(err.contains("known contexts: a, b"), "{err}");
        assert!(!err.contains('\n'));

        let args = ConnectOptions {
            kubeconfig: Some(path),
            context: None,
            namespace: None,
        };
        let (config, context) = resolve_config(&args).await.unwrap();
        assert_eq!(context.as_deref(), Some("a"));
        assert_eq!(config.default_namespace, "team");
        // Nothing listens on port 1: one line naming the URL, no token.
        let err = connect_with(config, context)
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with("cannot reach the Kubernetes API at https://127.0.0.1:1"),
            "{err}"
        );
        assert!(!err.contains("sekrit"), "{err}");
        assert!(!err.contains('\n'));
    }
}

#[cfg(test)]
mod watch_backoff_tests {
    use super::*;
    use kube::runtime::utils::Backoff;

    #[test]
    fn doubles_to_the_cap_and_resets() {
        let mut b = watch_backoff();
        let first: Vec<u64> = b.by_ref().take(8).map(|d| d.as_millis() as u64).collect();
        assert_eq!(first, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        b.reset();
        assert_eq!(b.next(), Some(Duration::from_millis(100)));
    }
}
