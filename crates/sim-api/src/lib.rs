//! The simulated API server: Kubernetes' HTTP wire protocol over the `Store`.
//!
//! A request is parsed (`request.rs`: route, verb, query), passes the
//! filters (`filters.rs`: authentication, injected faults), and is
//! dispatched (`handler.rs`) to a verb family (`handlers/`: get and list,
//! create, update, patch, delete, watch) or a subresource (`scale.rs`,
//! `proxy.rs`, [`eviction`]; `status` is served by update and patch);
//! [`discovery`], [`openapi`] and [`authz`] serve the rest. The layout follows
//! k8s.io/apiserver `pkg/endpoints` and each file names what it mirrors.
//!
//! One accept loop per listener "generation": a restart (fault or
//! `ApiServer::restart`) closes the listener and every open connection, then
//! binds the same port again, keeping the store. TLS uses a CA generated at
//! start; its certificate goes into the kubeconfig.
//!
//! `kubectl` and kube-rs are driven against it in `tests/sim/sim_kubectl.rs` and
//! `tests/sim/sim_kube.rs`. What a client can still tell apart from a real
//! kube-apiserver (simplifications, by design):
//!
//! * Plain HTTP requires the bearer token too, but client-go (kubectl) sends
//!   a kubeconfig's credentials only over TLS, so kubectl needs the `tls`
//!   mode; kube-rs sends the token either way. (Upstream never serves
//!   authenticated plain HTTP.)
//! * Served kinds only: no Services, ConfigMaps, Secrets or RBAC
//!   (`kubectl cluster-info` fails); no `pods/log`, `exec`, `attach`,
//!   `portforward`.
//! * No authorization: a `SelfSubjectAccessReview` (`kubectl auth can-i`)
//!   is always `allowed` ([`authz`]); `pods/eviction` (`kubectl drain`)
//!   honours PodDisruptionBudgets as upstream ([`eviction`]).
//! * `pods/proxy` and `services/proxy` forward any method, body and headers
//!   to `podIP:port` (the world's real listener on the pod's loopback IP;
//!   for a Service, one Ready pod it selects) and stream the answer back
//!   chunk by chunk; a refused connection is a 503 as upstream's, a Service
//!   without a Ready pod `503 no endpoints available for service "NAME"`.
//!   Services have no ClusterIP and no Endpoints objects.
//! * OpenAPI v3 lists paths and operations but no schemas (`kubectl explain`
//!   fails); OpenAPI v2 is not served ([`openapi`]).
//! * Only a few validation rules ([`validation`]); unknown fields
//!   (`fieldValidation`) and type errors are detected for the built-in
//!   kinds only, not for custom resources (whose schemas are not modelled);
//!   server-side apply merges the applied configuration and never reports a
//!   conflict (always as if forced); `metadata.managedFields` records who
//!   wrote which field ([`managed`]), with atomic lists.
//! * Deletion: `Foreground` propagation deletes the owner at once and its
//!   dependents in the background; `Orphan` strips owner references
//!   synchronously. No finalizers are added by the server.
//! * Lists ignore `resourceVersion`/`resourceVersionMatch` and read the
//!   current state; continue pages are read from the current state too.

pub mod authz;
pub mod discovery;
pub mod eviction;
mod filters;
mod handler;
mod handlers;
pub mod managed;
pub mod openapi;
pub mod patch;
pub mod protobuf;
mod proxy;
mod request;
mod responses;
mod scale;
pub mod selectors;
pub mod status;
mod strategy;
pub mod tables;
pub mod validation;

#[cfg(test)]
mod layering;

pub use filters::WORLD_HEADER;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use infera_sim_core::faults::{FaultConfig, FaultInjector};
use infera_sim_store::Store;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind { port: u16, source: std::io::Error },
    #[error("cannot create the TLS certificate: {0}")]
    Certificate(String),
    #[error("invalid fault configuration: {0}")]
    Faults(String),
}

/// How to run the API server. `Debug` leaves the token out.
#[derive(Clone)]
pub struct ApiConfig {
    pub port: u16,
    pub tls: bool,
    /// The bearer token clients must present.
    pub token: String,
    pub faults: FaultConfig,
    pub seed: u64,
    /// How often watches that asked for bookmarks get one.
    pub bookmark_interval: Duration,
    /// How long the listener stays closed during a restart.
    pub restart_downtime: Duration,
}

impl std::fmt::Debug for ApiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiConfig")
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("token", &"<redacted>")
            .field("faults", &self.faults)
            .field("seed", &self.seed)
            .field("bookmark_interval", &self.bookmark_interval)
            .field("restart_downtime", &self.restart_downtime)
            .finish()
    }
}

impl ApiConfig {
    pub fn new(token: String) -> ApiConfig {
        ApiConfig {
            port: 0,
            tls: false,
            token,
            faults: FaultConfig::default(),
            seed: 0,
            bookmark_interval: Duration::from_secs(5),
            restart_downtime: Duration::from_millis(200),
        }
    }
}

/// State every request handler sees.
pub(crate) struct Shared {
    pub(crate) store: Store,
    pub(crate) token: String,
    pub(crate) injector: FaultInjector,
    /// Bumped to end every open watch stream.
    pub(crate) watch_epoch: watch::Sender<u64>,
    pub(crate) bookmark_interval: Duration,
    pub(crate) server_address: String,
}

struct Generation {
    /// Set to `true` to stop the accept loop and close its connections.
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

struct Inner {
    shared: Arc<Shared>,
    addr: SocketAddr,
    tls: Option<tokio_rustls::TlsAcceptor>,
    ca_pem: Option<String>,
    restart_downtime: Duration,
    generation: tokio::sync::Mutex<Option<Generation>>,
    fault_tasks: Mutex<Vec<JoinHandle<()>>>,
}

/// A running API server. Dropping it does not stop it; call `shutdown`.
#[derive(Clone)]
pub struct ApiServer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServer")
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

/// A CA and a server certificate for 127.0.0.1 and localhost.
fn tls_material() -> Result<(tokio_rustls::TlsAcceptor, String), ApiError> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let err = |e: rcgen::Error| ApiError::Certificate(e.to_string());
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "infera-sim-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().map_err(err)?;
    let ca_cert = ca_params.self_signed(&ca_key).map_err(err)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .map_err(err)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "infera-sim");
    params.use_authority_key_identifier_extension = true;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().map_err(err)?;
    let cert = params.signed_by(&key, &issuer).map_err(err)?;

    let key_der = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ApiError::Certificate(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone(), ca_cert.der().clone()], key_der)
        .map_err(|e| ApiError::Certificate(e.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok((
        tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        ca_cert.pem(),
    ))
}

/// `Sat, 05 Dec 2026 02:15:04 GMT` on the cluster's clock.
fn http_date() -> String {
    jiff::fmt::rfc2822::DateTimePrinter::new()
        .timestamp_to_rfc9110_string(&infera_sim_core::clock::server_now())
        .unwrap_or_default()
}

fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

impl ApiServer {
    /// Bind 127.0.0.1:`config.port` (0 picks a free port) and serve `store`.
    pub async fn start(store: Store, config: ApiConfig) -> Result<ApiServer, ApiError> {
        config.faults.validate().map_err(ApiError::Faults)?;
        let requested = SocketAddr::from(([127, 0, 0, 1], config.port));
        let listener = bind(requested).map_err(|source| ApiError::Bind {
            port: config.port,
            source,
        })?;
        let addr = listener.local_addr().map_err(|source| ApiError::Bind {
            port: config.port,
            source,
        })?;
        let (tls, ca_pem) = if config.tls {
            let (acceptor, pem) = tls_material()?;
            (Some(acceptor), Some(pem))
        } else {
            (None, None)
        };
        let (watch_epoch, _) = watch::channel(0u64);
        let shared = Arc::new(Shared {
            store,
            token: config.token.clone(),
            injector: FaultInjector::new(config.faults.clone(), config.seed),
            watch_epoch,
            bookmark_interval: config.bookmark_interval.max(Duration::from_millis(10)),
            server_address: addr.to_string(),
        });
        let server = ApiServer {
            inner: Arc::new(Inner {
                shared,
                addr,
                tls,
                ca_pem,
                restart_downtime: config.restart_downtime,
                generation: tokio::sync::Mutex::new(None),
                fault_tasks: Mutex::new(Vec::new()),
            }),
        };
        *server.inner.generation.lock().await = Some(server.spawn_generation(listener));
        server.spawn_fault_timers(&config.faults);
        Ok(server)
    }

    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    pub fn url(&self) -> String {
        let scheme = if self.inner.tls.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.inner.addr)
    }

    /// The CA certificate (PEM) clients must trust, when serving TLS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.inner.ca_pem.as_deref()
    }

    pub fn store(&self) -> &Store {
        &self.inner.shared.store
    }

    fn spawn_generation(&self, listener: TcpListener) -> Generation {
        let (stop, stop_rx) = watch::channel(false);
        let shared = Arc::clone(&self.inner.shared);
        let tls = self.inner.tls.clone();
        let task = tokio::spawn(accept_loop(listener, shared, tls, stop_rx));
        Generation { stop, task }
    }

    /// Close the listener and every connection (watches included), wait the
    /// configured downtime, and listen on the same port again. State is kept.
    pub async fn restart(&self) {
        let mut generation = self.inner.generation.lock().await;
        if let Some(old) = generation.take() {
            let _ = old.stop.send(true);
            let _ = old.task.await;
        }
        tokio::time::sleep(self.inner.restart_downtime).await;
        // The port was ours a moment ago; retry briefly in case the OS lags.
        for attempt in 0..50u32 {
            match bind(self.inner.addr) {
                Ok(listener) => {
                    *generation = Some(self.spawn_generation(listener));
                    return;
                }
                Err(_) if attempt < 49 => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(e) => {
                    eprintln!(
                        "infera sim: cannot listen on {} again after a restart: {e}",
                        self.inner.addr
                    );
                }
            }
        }
    }

    /// End every open watch stream now (clients re-watch).
    pub fn drop_watches(&self) {
        self.inner.shared.watch_epoch.send_modify(|e| *e += 1);
    }

    fn spawn_fault_timers(&self, faults: &FaultConfig) {
        let mut tasks = Vec::new();
        if let Some(every) = faults.drop_watches_every {
            let server = self.clone();
            tasks.push(tokio::spawn(async move {
                let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
                loop {
                    tick.tick().await;
                    server.drop_watches();
                }
            }));
        }
        if let Some(every) = faults.compact_every {
            let store = self.inner.shared.store.clone();
            tasks.push(tokio::spawn(async move {
                let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
                loop {
                    tick.tick().await;
                    store.compact();
                }
            }));
        }
        if let Some(every) = faults.restart_api_every {
            let server = self.clone();
            tasks.push(tokio::spawn(async move {
                let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
                loop {
                    tick.tick().await;
                    server.restart().await;
                }
            }));
        }
        self.inner
            .fault_tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(tasks);
    }

    /// Stop serving: the listener and all connections close.
    pub async fn shutdown(&self) {
        for task in self
            .inner
            .fault_tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .drain(..)
        {
            task.abort();
        }
        self.drop_watches();
        if let Some(old) = self.inner.generation.lock().await.take() {
            let _ = old.stop.send(true);
            let _ = old.task.await;
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut stop: watch::Receiver<bool>,
) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.changed() => break,
        };
        let Ok((stream, _peer)) = accepted else {
            // Out of file descriptors and the like: back off briefly.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let shared = Arc::clone(&shared);
        let tls = tls.clone();
        let mut stop_conn = stop.clone();
        connections.spawn(async move {
            let service =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let shared = Arc::clone(&shared);
                    async move {
                        let mut response = handler::handle(shared, req.map(Body::new)).await;
                        // The cluster's clock (skewed with `--clock-skew`).
                        if let Ok(date) = http::HeaderValue::from_str(&http_date()) {
                            response.headers_mut().insert(http::header::DATE, date);
                        }
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            match tls {
                Some(acceptor) => {
                    let handshake = tokio::select! {
                        h = acceptor.accept(stream) => h,
                        _ = stop_conn.changed() => return,
                    };
                    let Ok(tls_stream) = handshake else { return };
                    let conn = builder.serve_connection(TokioIo::new(tls_stream), service);
                    tokio::select! {
                        _ = conn => {}
                        _ = stop_conn.changed() => {}
                    }
                }
                None => {
                    let conn = builder.serve_connection(TokioIo::new(stream), service);
                    tokio::select! {
                        _ = conn => {}
                        _ = stop_conn.changed() => {}
                    }
                }
            }
        });
        // Reap finished connections so the set does not grow without bound.
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    // Dropping the set aborts every connection task: the sockets close.
    connections.shutdown().await;
}
